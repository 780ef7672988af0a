"""How the step's cost grows: with the number of DoF, of contacts and of robots in one world; and
the command's start-up.

- DoF: the shipped robots and larger ones of example-robot-data (Panda, ANYmal, Talos), fixed or
  floating in zero gravity with no contact, PD on every joint: time per step, next to the
  Pinocchio floor (forwardKinematics + crba + nonLinearEffects) timed in the same run.
- Contacts: the standing quadruped (4 sphere feet), the quadruped dropped on its back (capsule
  legs and feet on the ground), a box resting on the ground (4 patch points), a cylinder lying
  on its side (2 points along it), arm7 fallen onto a ground at its first link's height (its
  capsule links resting on it), Talos of example-robot-data (talos_full_v2_box.urdf, 50 DoF)
  standing on its two box soles under PD (8 corners), and Solo12 of example-robot-data
  standing on its mesh feet (16 contacts: four corners of each sole's patch),
  0.5 s after its start (still settling: the solve at its cap of sweeps) and 2 s after (settled),
  each with the solver's sweeps a step.
- Robots: 1, 2, 4, 8 standing quadrupeds in one world, 2 m apart (no contact between them).
- `raisimcli --help` in a fresh process (best of 5).

    .venv/bin/python benchmarks/scaling.py
"""

import os
import subprocess
import sys
import time

import numpy as np

from common import ROBOTS, per_call_us, pinocchio_floor_us
from raisimcli.model import load_urdf_string
from raisimcli.physics import World

ERD = os.path.join(sys.prefix, "lib", f"python{sys.version_info.major}.{sys.version_info.minor}",
                   "site-packages", "cmeel.prefix", "share", "example-robot-data", "robots")
# a 1 kg cylinder of radius 5 cm and length 20 cm on a floating base
CAN = """<robot name="can"><link name="body"><inertial><mass value="1.0"/>
  <inertia ixx="0.004" iyy="0.004" izz="0.00125" ixy="0" ixz="0" iyz="0"/></inertial>
  <collision><geometry><cylinder radius="0.05" length="0.2"/></geometry></collision></link>
</robot>"""
STAND = {"root.z": 0.44267, "LF_HFE": 0.6, "RF_HFE": 0.6, "LH_HFE": -0.6, "RH_HFE": -0.6,
         "LF_KFE": -1.2, "RF_KFE": -1.2, "LH_KFE": 1.2, "RH_KFE": 1.2}


def step_us(w: World, number: int = 300) -> float:
    for _ in range(20):
        w.integrate()
    return per_call_us(w.integrate, repeat=3, number=number)


def dof_table() -> None:
    robots = [("arm7", os.path.join(ROBOTS, "arm7.urdf")),
              ("quadruped", os.path.join(ROBOTS, "quadruped.urdf")),
              ("panda", os.path.join(ERD, "panda_description", "urdf", "panda.urdf")),
              ("anymal_c", os.path.join(ERD, "anymal_c_simple_description", "urdf",
                                        "anymal.urdf")),
              ("talos_full_v2", os.path.join(ERD, "talos_data", "robots", "talos_full_v2.urdf"))]
    print(f"{'robot':<15} {'nv':>4} {'step us':>9} {'floor us':>9} {'ratio':>7}")
    for name, path in robots:
        if not os.path.isfile(path):
            print(f"{name:<15} (not installed: pip install example-robot-data)")
            continue
        w = World(gravity=(0.0, 0.0, 0.0))
        s = w.add_articulated_system(path)
        s.set_pd_gains(np.full(s.nv, 50.0), np.full(s.nv, 2.0))
        s.set_pd_target(s.q, np.zeros(s.nv))
        s.set_control_mode("PD_PLUS_FEEDFORWARD_TORQUE")
        t, f = step_us(w), pinocchio_floor_us(s, repeat=3)
        print(f"{name:<15} {s.nv:>4} {t:9.1f} {f:9.2f} {t / f:7.1f}")


def quadruped(w: World, x: float = 0.0, back: bool = False):
    s = w.add_articulated_system(os.path.join(ROBOTS, "quadruped.urdf"),
                                 name=f"q{len(w.systems)}")
    q = s.get_generalized_coordinate()
    for k, v in STAND.items():
        q[s.coordinate_names.index(k)] = v
    q[0] = x
    if back:  # upside down, on its back
        q[2] = 0.25
        q[3:7] = [0.0, 1.0, 0.0, 0.0]
    s.set_state(q, np.zeros(s.nv))
    s.set_control_mode("PD_PLUS_FEEDFORWARD_TORQUE")
    s.set_pd_gains(np.r_[np.zeros(6), np.full(12, 300.0)], np.r_[np.zeros(6), np.full(12, 10.0)])
    s.set_pd_target(q, np.zeros(s.nv))
    return s


def contacts_table() -> None:
    print(f"\n{'contacts':<34} {'n':>4} {'step us':>9} {'sweeps':>7}")
    cases = []
    w = World()
    w.add_ground()
    quadruped(w)
    cases.append(("quadruped standing", w))
    w = World()
    w.add_ground()
    quadruped(w, back=True)
    cases.append(("quadruped on its back", w))
    w = World()
    w.add_ground()
    box = w.add_articulated_system(os.path.join(ROBOTS, "box.urdf"))
    q = box.get_generalized_coordinate()
    q[2] = 0.1
    box.set_state(q, np.zeros(box.nv))
    cases.append(("box resting on the ground", w))
    w = World()  # a cylinder (a wheel, a can) lying on its side: a line of two contacts
    w.add_ground()
    can = w.add_articulated_system(load_urdf_string(CAN, path="can.urdf"))
    q = can.get_generalized_coordinate()
    q[2], q[3:7] = 0.0505, [np.sqrt(0.5), np.sqrt(0.5), 0.0, 0.0]  # (about x: its axis level)
    can.set_state(q, np.zeros(can.nv))
    cases.append(("cylinder lying on its side", w))
    w = World()  # a limp arm7 on a ground at its first link's height: capsules, no coal
    w.add_ground(0.049)
    arm = w.add_articulated_system(os.path.join(ROBOTS, "arm7.urdf"))
    q = arm.get_generalized_coordinate()
    q[1], q[3] = 1.45, 0.3
    arm.set_state(q, np.zeros(arm.nv))
    arm.set_pd_gains(np.zeros(arm.nv), np.full(arm.nv, 0.5))
    arm.set_pd_target(q, np.zeros(arm.nv))
    cases.append(("arm7 on the ground (capsules)", w))
    talos = os.path.join(ERD, "talos_data", "robots", "talos_full_v2_box.urdf")
    if os.path.isfile(talos):  # a humanoid on its two box soles (8 corners), PD on its joints
        w = World()
        w.add_ground()
        s = w.add_articulated_system(talos)
        rs = w.contact_world.robots[0]
        rs.update()
        q = s.get_generalized_coordinate()
        q[2] -= rs.lowest.min() - 0.001  # (its soles 1 mm above the ground)
        s.set_state(q, np.zeros(s.nv))
        s.set_pd_gains(np.r_[np.zeros(6), np.full(s.nv - 6, 2000.0)],
                       np.r_[np.zeros(6), np.full(s.nv - 6, 50.0)])
        s.set_pd_target(q, np.zeros(s.nv))
        cases.append(("Talos on its box soles", w))
    solo = os.path.join(ERD, "solo_description", "robots", "solo12.urdf")
    if os.path.isfile(solo):  # mesh collisions (convex hulls), about 40 contacts
        w = World()
        w.add_ground()
        s = w.add_articulated_system(solo)
        q = s.get_generalized_coordinate()
        for k, name in enumerate(s.coordinate_names):
            front = name.startswith("F")
            if name.endswith("HFE"):
                q[k] = 0.8 if front else -0.8
            elif name.endswith("KFE"):
                q[k] = -1.6 if front else 1.6
        q[2] = 0.24
        s.set_state(q, np.zeros(s.nv))
        s.set_pd_gains(np.r_[np.zeros(6), np.full(12, 5.0)], np.r_[np.zeros(6), np.full(12, 0.2)])
        s.set_pd_target(q, np.zeros(s.nv))
        cases.append(("Solo12 standing (meshes), 0.5 s", w))
        cases.append(("  the same, 2 s (settled)", w))
    for label, w in cases:
        for _ in range(500 if w.time < 0.5 else 1500):  # settle
            w.integrate()
        t = step_us(w, number=300 if len(w.contacts) < 10 else 30)
        print(f"{label:<34} {len(w.contacts):>4} {t:9.1f} {sweeps(w):7.1f}")


def sweeps(w: World, steps: int = 20) -> float:
    """The contact solver's mean sweeps a step over the next `steps` steps (a robot's
    solver_iterations; the most of the world's robots)."""
    total = 0
    for _ in range(steps):
        w.integrate()
        total += max(s.solver_iterations for s in w.systems)
    return total / steps


def robots_table() -> None:
    print(f"\n{'robots in one world':<20} {'step us':>9} {'per robot us':>13} {'vs 1 robot':>11}")
    one = None
    for n in (1, 2, 4, 8):
        w = World()
        w.add_ground()
        for k in range(n):
            quadruped(w, x=2.0 * k)
        t = step_us(w, number=100)
        one = one or t
        print(f"{n:<20} {t:9.1f} {t / n:13.1f} {t / one:11.2f}")


def startup_table() -> None:
    best = min(_time([sys.executable, "-m", "raisimcli", "--help"]) for _ in range(5))
    base = min(_time([sys.executable, "-c", "pass"]) for _ in range(5))
    print(f"\nraisimcli --help: {best:.3f} s in a fresh process (the interpreter alone: "
          f"{base:.3f} s)")


def _time(cmd) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


if __name__ == "__main__":
    dof_table()
    contacts_table()
    robots_table()
    startup_table()
