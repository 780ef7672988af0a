"""Per-call cost of get_mass_matrix and get_nonlinearities, as a ratio to the raw Pinocchio call
(crba, nonLinearEffects) timed in the same run. Each of our calls starts from a fresh state (the
cache invalidated), so it pays the conversions to our conventions.

    python benchmarks/dynamics.py
"""

import numpy as np
import pinocchio as pin

from common import ROBOTS, per_call_us
from raisimcli.physics import World


def main():
    print(f"{'robot':<12} {'quantity':<22} {'ours us':>9} {'pinocchio us':>13} {'ratio':>7}")
    for name in ("quadruped", "arm7"):
        w = World()
        s = w.add_articulated_system(f"{ROBOTS}/{name}.urdf")
        rng = np.random.default_rng(0)
        q = s.get_generalized_coordinate()
        q[s.conv.one_dof_q] = rng.uniform(-0.5, 0.5, len(s.conv.one_dof_q))
        u = rng.normal(size=s.nv)
        s.set_state(q, u)
        pm = s.pinocchio.model
        pd = pm.createData()
        q_pin, u_pin, _ = s.pinocchio_inputs()

        def ours_M():
            s.invalidate()
            s.get_mass_matrix()

        def ours_h():
            s.invalidate()
            s.get_nonlinearities()

        rows = [
            ("get_mass_matrix", ours_M, lambda: pin.crba(pm, pd, q_pin)),
            ("get_nonlinearities", ours_h, lambda: pin.nonLinearEffects(pm, pd, q_pin, u_pin)),
        ]
        for label, ours, ref in rows:
            t_ours, t_ref = per_call_us(ours), per_call_us(ref)
            print(f"{name:<12} {label:<22} {t_ours:9.2f} {t_ref:13.2f} {t_ours / t_ref:7.2f}")


if __name__ == "__main__":
    main()
