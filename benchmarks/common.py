"""Timing helpers: best-of-N mean per call, in microseconds."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROBOTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "robots")


def per_call_us(fn, repeat: int = 7, number: int = 2000) -> float:
    """Best over `repeat` runs of the mean time of `number` calls, in microseconds."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best * 1e6


def pinocchio_floor_us(system, repeat: int = 7, number: int = 2000) -> float:
    """The Pinocchio floor of a step, forwardKinematics + crba + nonLinearEffects at the system's
    state on a data object of its own, in microseconds (per_call_us)."""
    import pinocchio as pin
    pm = system.pinocchio.model
    pd = pm.createData()
    q_pin, u_pin, _ = system.pinocchio_inputs()

    def floor():
        pin.forwardKinematics(pm, pd, q_pin, u_pin)
        pin.crba(pm, pd, q_pin)
        pin.nonLinearEffects(pm, pd, q_pin, u_pin)
    return per_call_us(floor, repeat=repeat, number=number)


# the compiled calls of a step (module, function name) and the Pinocchio calls that breakdown()
# times one by one
STEP_KERNELS = (("raisimcli.physics.conventions", "_pin_inputs"),
                ("raisimcli.physics.ground", "_near_ground"),
                ("raisimcli.physics.step.explicit", "_stage"),
                ("raisimcli.physics.step.alone", "_impulse_step"),
                ("raisimcli.physics.step.quick", "_quick"))
PINOCCHIO_CALLS = ("crba", "nonLinearEffects", "computeJointJacobians", "forwardKinematics",
                   "rnea")


def breakdown(step, steps: int = 3000) -> tuple[float, list]:
    """Where the time of `step()` goes, with a timer around each of the step's compiled calls
    (STEP_KERNELS) and Pinocchio calls: (us a step with the timers, [(what, us a step), ...]),
    each compiled call's row followed by the part of it spent passing its arguments (an empty
    compiled function called with the same ones), and last the rest (the Python between them,
    the timers' own cost included). The timers are removed on return."""
    import importlib

    import numpy as np
    import pinocchio as pin
    from numba import njit

    spent, captured, undo = {}, {}, []

    def timed(fn, key):
        def call(*args):
            t0 = time.perf_counter()
            out = fn(*args)
            spent[key] = spent.get(key, 0.0) + time.perf_counter() - t0
            captured.setdefault(key, args)
            return out
        return call

    for module, name in STEP_KERNELS:
        mod = importlib.import_module(module)
        undo.append((mod, name, getattr(mod, name)))
        setattr(mod, name, timed(getattr(mod, name), f"compiled {name}"))
    for name in PINOCCHIO_CALLS:
        undo.append((pin, name, getattr(pin, name)))
        setattr(pin, name, timed(getattr(pin, name), f"pinocchio {name}"))
    try:
        for _ in range(20):  # (every call compiled and captured)
            step()
        spent.clear()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        total = (time.perf_counter() - t0) / steps * 1e6
    finally:
        for owner, name, fn in undo:
            setattr(owner, name, fn)

    @njit(_nrt=False)  # (as raisimcli.jit.kernel compiles the step's loops)
    def nothing(*args):
        return 0

    rows = []
    for key in sorted(spent, key=spent.get, reverse=True):
        rows.append((key, spent[key] / steps * 1e6))
        if key.startswith("compiled"):
            args = captured[key]
            nothing(*args)
            n = sum(isinstance(a, np.ndarray) for a in args)
            rows.append((f"  of which passing its {len(args)} arguments ({n} arrays)",
                         per_call_us(lambda: nothing(*args), repeat=5, number=3000)))
    timed_total = sum(us for key, us in rows if not key.startswith("  "))
    rows.append(("the rest: Python between them (and the timers)", total - timed_total))
    return total, rows
