"""Accuracy and cost of the impulse solver's tolerance (docs/contacts.md, "Solver tolerance").

The quadruped dropped from 0.5 m (scenarios/quadruped_drop.toml: impacts, then standing) and the
standing quadruped, 1500 steps each, for a range of `world.contact_solver.tolerance`: the time
per step, the mean and largest number of Gauss-Seidel sweeps, how many steps hit the 200-sweep
cap, and how far the trajectory moves from the one at the tightest tolerance (the largest
|q - q_ref| over the run: metres and radians mixed, and the largest |root z| difference, m).

    .venv/bin/python benchmarks/solver_tolerance.py

With `--max-iterations`: the drop for a range of `world.contact_solver.max_iterations` at the
default tolerance (its steps from the landing until the robot stands still take hundreds of
sweeps, some of them any number: their impulses drift along a null direction of the Delassus
matrix, docs/contacts.md), through
`World.integrate` (the quick step a run takes): the time per step, the mean sweeps, and how far
the trajectory moves from the one at 3000 sweeps.
"""

import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
TOLERANCES = (1e-14, 1e-12, 1e-10, 1e-8, 1e-6, 1e-4)
STEPS = 1500


CAPS = (10, 25, 50, 100, 200, 400, 1000)
REFERENCE_CAP = 3000


def trajectory(name: str, tol: float, cap: int | None = None):
    """(q at every step, sweeps at every step, seconds a step, the cap) of STEPS steps of the
    scenario at tolerance `tol`; with `cap`, at that max_iterations, stepped by World.integrate
    (else by integrate1 and integrate2)."""
    from raisimcli.scenario import load_scenario
    from raisimcli.scenario.runner import build_world
    sets = (f"world.contact_solver.tolerance={tol!r}",)
    if cap is not None:
        sets += (f"world.contact_solver.max_iterations={cap}",)
    with tempfile.TemporaryDirectory() as d:
        scn = load_scenario(os.path.join(ROOT, "scenarios", f"{name}.toml"), sets,
                            log_path=os.path.join(d, "x.h5"))
    w, drivers = build_world(scn)
    s = w.systems[0]
    qs, its = [], []
    t0 = time.perf_counter()
    for k in range(STEPS):
        for dr in drivers:
            dr.apply(k * w.dt)
        if cap is None:
            w.integrate1()
            w.integrate2()
        else:
            w.integrate()
        qs.append(s.q.copy())
        its.append(s.solver_iterations)
    wall = (time.perf_counter() - t0) / STEPS
    return np.array(qs), np.array(its), wall, s.solver_max_iterations


def caps() -> None:
    """The drop for each max_iterations of CAPS, against REFERENCE_CAP."""
    trajectory("quadruped_drop", 1e-12, 200)  # compile and warm
    ref = trajectory("quadruped_drop", 1e-12, REFERENCE_CAP)[0]
    print(f"quadruped_drop, {STEPS} steps, tolerance 1e-12, against max_iterations "
          f"{REFERENCE_CAP}")
    print(f"{'max_iterations':>14} {'us/step':>8} {'mean sweeps':>12} {'at the cap':>11} "
          f"{'max |dq|':>10} {'max |dz| m':>11}")
    for cap in CAPS:
        best = None
        for _ in range(3):  # (the best time of three runs; the trajectories are the same)
            q, its, wall, _ = trajectory("quadruped_drop", 1e-12, cap)
            best = wall if best is None else min(best, wall)
        dq = float(np.max(np.abs(q - ref)))
        dz = float(np.max(np.abs(q[:, 2] - ref[:, 2])))
        print(f"{cap:14d} {best * 1e6:8.1f} {its.mean():12.1f} {int(np.sum(its >= cap)):11d} "
              f"{dq:10.2e} {dz:11.2e}")


def main() -> None:
    if "--max-iterations" in sys.argv[1:]:
        caps()
        return
    for name in ("quadruped_drop", "quadruped_stand"):
        trajectory(name, 1e-12)  # compile and warm
        ref = None
        print(f"{name}, {STEPS} steps")
        print(f"{'tolerance':>10} {'us/step':>8} {'mean sweeps':>12} {'max':>5} "
              f"{'at the cap':>11} {'max |dq|':>10} {'max |dz| m':>11}")
        for tol in TOLERANCES:
            q, its, wall, cap = trajectory(name, tol)
            if ref is None:
                ref = q
            dq = float(np.max(np.abs(q - ref)))
            dz = float(np.max(np.abs(q[:, 2] - ref[:, 2])))
            print(f"{tol:10.0e} {wall * 1e6:8.0f} {its.mean():12.1f} {its.max():5d} "
                  f"{int(np.sum(its >= cap)):11d} {dq:10.2e} {dz:11.2e}")


if __name__ == "__main__":
    main()
