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
