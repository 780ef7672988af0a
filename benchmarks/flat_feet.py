"""The impulse solver on flat feet: Go2 of example-robot-data standing on its foot meshes (four
contact points a foot, 16 contacts), for several `max_iterations`, against the same run with
`--reference` sweeps at most (which converges to the tolerance on most steps): the mean sweeps
a step, the time a step, and the largest difference of q over the run (docs/contacts.md, "Flat
feet").

    python benchmarks/flat_feet.py [--seconds 1.5] [--reference 2000]
"""

import argparse
import os
import time

import numpy as np

from scaling import ERD
from raisimcli.physics import World

GO2 = os.path.join(ERD, "go2_description", "urdf", "go2.urdf")


def run(max_iterations: int, steps: int):
    """(q at every step, sweeps at every step, us a step, contacts at the end) of Go2 dropped from
    0.45 m above its zero pose onto the ground and held there by PD."""
    w = World(0.001)
    w.add_ground()
    s = w.add_articulated_system(GO2)
    q = s.get_generalized_coordinate()
    q[2] += 0.45
    s.set_state(q, np.zeros(s.nv))
    s.set_pd_gains(np.full(s.nv, 40.0), np.full(s.nv, 1.0))
    s.set_pd_target(q, np.zeros(s.nv))
    s.solver_max_iterations = max_iterations
    qs, sweeps = np.empty((steps, s.nq)), np.empty(steps)
    w.integrate()  # (compiled loops loaded before the clock starts)
    t0 = time.perf_counter()
    for k in range(steps):
        w.integrate()
        qs[k], sweeps[k] = s.q, s.solver_iterations
    return qs, sweeps, (time.perf_counter() - t0) / steps * 1e6, len(w.contacts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--reference", type=int, default=2000, help="the reference's max_iterations")
    args = ap.parse_args()
    if not os.path.isfile(GO2):
        raise SystemExit(f"needs example-robot-data's Go2 ({GO2}): pip install example-robot-data")
    steps = int(round(args.seconds / 0.001))
    ref, sweeps, t, nc = run(args.reference, steps)
    print(f"Go2 standing on its foot meshes, {steps} steps of 1 ms, {nc} contacts at the end")
    print(f"{'max_iterations':>15} {'mean sweeps':>12} {'us/step':>9} {'max |q - q_ref|':>16}")
    print(f"{args.reference:>15} {sweeps.mean():12.1f} {t:9.0f} {'(reference)':>16}")
    for it in (200, 50, 25, 10):
        q, sweeps, t, _ = run(it, steps)
        print(f"{it:>15} {sweeps.mean():12.1f} {t:9.0f} {np.abs(q - ref).max():16.2e}")


if __name__ == "__main__":
    main()
