"""The quadruped standing on the ground under PD, four foot contacts, dt = 1 ms: raisimcli's
World.integrate() against MuJoCo's mj_step on the same model (benchmarks/quadruped_mujoco.xml:
the same bodies, masses and inertias, four sphere feet, PD servos, and the joints' rotor inertia,
damping, dry friction, position limits and effort limits), timed in the same run. A second line
times MuJoCo without the joints' damping, friction and limits (bodies_only(): the reference of the
sessions before 2026-12-05, which solved 16 constraint rows against our 26).
Prints the ratio and where raisimcli's time goes (common.breakdown: a timer around each compiled
and Pinocchio call, and what passing each compiled call's arguments costs); then the drop of
scenarios/quadruped_drop.toml (feet 0.5 m above the ground, legs held by the same PD): the first
second, fall, impacts and settling, from the same start in both, best of three.

    python benchmarks/contacts_vs_mujoco.py
"""

import os
import re
import time

import mujoco
import numpy as np

from common import ROBOTS, breakdown, per_call_us
from raisimcli.physics import World

HERE = os.path.dirname(os.path.abspath(__file__))
LEGS = [0.0, 0.6, -1.2, 0.0, 0.6, -1.2, 0.0, -0.6, 1.2, 0.0, -0.6, 1.2]


STAND, DROP = 0.44267, 0.94267  # base heights: feet on the ground; feet 0.5 m above it


def ours(height: float = STAND, settle: int = 500):
    w = World(0.001)
    w.add_ground(0.0)
    r = w.add_articulated_system(f"{ROBOTS}/quadruped.urdf")
    q = r.get_generalized_coordinate()
    q[2], q[7:] = height, LEGS
    r.set_state(q, np.zeros(18))
    r.set_pd_gains(np.full(18, 300.0), np.full(18, 10.0))
    r.set_pd_target(q, np.zeros(18))
    for _ in range(settle):  # settle into steady contact
        w.integrate()
    return w, r


def bodies_only(xml: str) -> str:
    """The MJCF `xml` without the joints' damping, dry friction and limits and the servos'
    effort limits: the bodies, the rotor inertia, the feet and the PD servos only."""
    for term in ("damping", "frictionloss", "limited", "range", "forcelimited", "forcerange"):
        xml = re.sub(rf' {term}="[^"]*"', "", xml)
    return xml


def theirs(height: float = STAND, settle: int = 500, same: bool = True):
    """MuJoCo's model and data, settled like ours(); `same`: False for bodies_only()."""
    with open(os.path.join(HERE, "quadruped_mujoco.xml")) as f:
        xml = f.read()
    m = mujoco.MjModel.from_xml_string(xml if same else bodies_only(xml))
    d = mujoco.MjData(m)
    d.qpos[:] = 0
    d.qpos[2], d.qpos[3] = height, 1.0
    d.qpos[7:] = LEGS
    d.ctrl[:] = LEGS
    for _ in range(settle):
        mujoco.mj_step(m, d)
    return m, d


def drop_seconds(steps: int = 1000) -> tuple[float, float]:
    """(raisimcli, MuJoCo) seconds for the first `steps` steps of the drop, best of three."""
    def ours_drop():
        return ours(DROP, settle=0)[0].integrate

    def theirs_drop():
        m, d = theirs(DROP, settle=0)
        return lambda: mujoco.mj_step(m, d)

    best = [float("inf"), float("inf")]
    for _ in range(3):
        for k, make in enumerate((ours_drop, theirs_drop)):
            step = make()
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best[0], best[1]


def main():
    t_drop, t_drop_mj = drop_seconds()
    print(f"drop from 0.5 m (feet), the first 1000 steps: raisimcli {t_drop * 1e3:.0f} us/step   "
          f"MuJoCo {t_drop_mj * 1e3:.1f} us/step   ratio {t_drop / t_drop_mj:.1f}x")
    w, r = ours()
    m, d = theirs()
    m0, d0 = theirs(same=False)
    n_contacts = len(w.contacts)
    t_ours = per_call_us(w.integrate, repeat=5, number=300)
    t_mj = per_call_us(lambda: mujoco.mj_step(m, d), repeat=5, number=2000)
    t_mj0 = per_call_us(lambda: mujoco.mj_step(m0, d0), repeat=5, number=2000)
    print(f"standing quadruped, {n_contacts} contacts (MuJoCo: {d.ncon}), dt = 1 ms")
    print(f"  raisimcli {t_ours:8.1f} us/step   MuJoCo {t_mj:6.1f} us/step   "
          f"ratio {t_ours / t_mj:.2f}x (goal: 2x; MuJoCo's constraint rows: {d.nefc})")
    print(f"  MuJoCo without the joints' damping, friction and limits {t_mj0:6.1f} us/step   "
          f"ratio {t_ours / t_mj0:.2f}x ({d0.nefc} rows)")
    normal = sum(c.impulse[2] for c in w.contacts) / w.dt
    print(f"  foot normal forces {normal:.4f} N, weight {r.model.total_mass * 9.81:.4f} N")
    total, rows = breakdown(w.integrate)
    print(f"  where raisimcli's time goes ({total:.1f} us a step with a timer around each call):")
    for what, us in rows:
        print(f"    {us:6.2f} us  {what}")


if __name__ == "__main__":
    main()
