"""Accuracy and cost of the impulse solver's tolerance (docs/contacts.md, "Solver tolerance").

The quadruped dropped from 0.5 m (scenarios/quadruped_drop.toml: impacts, then standing) and the
standing quadruped, 1500 steps each, for a range of `world.contact_solver.tolerance`: the time
per step, the mean and largest number of Gauss-Seidel sweeps, how many steps hit the 200-sweep
cap, and how far the trajectory moves from the one at the tightest tolerance (the largest
|q - q_ref| over the run: metres and radians mixed, and the largest |root z| difference, m).

    .venv/bin/python benchmarks/solver_tolerance.py
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


def trajectory(name: str, tol: float):
    from raisimcli.scenario import load_scenario
    from raisimcli.scenario.runner import build_world
    with tempfile.TemporaryDirectory() as d:
        scn = load_scenario(os.path.join(ROOT, "scenarios", f"{name}.toml"),
                            (f"world.contact_solver.tolerance={tol!r}",),
                            log_path=os.path.join(d, "x.h5"))
    w, drivers = build_world(scn)
    s = w.systems[0]
    qs, its = [], []
    t0 = time.perf_counter()
    for k in range(STEPS):
        for dr in drivers:
            dr.apply(k * w.dt)
        w.integrate1()
        w.integrate2()
        qs.append(s.q.copy())
        its.append(s.solver_iterations)
    wall = (time.perf_counter() - t0) / STEPS
    return np.array(qs), np.array(its), wall, s.solver_max_iterations


def main() -> None:
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
