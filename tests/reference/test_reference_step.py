"""The package's step against the plain reference of tests/reference/step.py, written from the
spec: every shipped scenario as it runs (its robots, commands, controllers, contacts and scheme),
every shipped robot under every scheme with random states, commands and gains, and the joint rows
on states outside the limits. Each step starts from the package's own state, so that a difference
shows at the step where it arises."""

import os
import zlib

import numpy as np
import pytest

from cases import CASES, before_step, setup
from conftest import SCENARIOS, SHIPPED, robot
from raisimcli.model import load_urdf
from raisimcli.physics import SCHEMES, World
from raisimcli.scenario import load_scenario
from raisimcli.scenario.runner import build_world
from reference.compare import SideBySide
from states import random_state

SCENARIO_NAMES = sorted(f[:-5] for f in os.listdir(SCENARIOS) if f.endswith(".toml"))


def _step_scenario(world, drivers, k: int) -> list:
    """One step of a scenario as its run loop takes it; returns the inputs the step read."""
    t = k * world.dt
    for d in drivers:
        d.apply(t)
    controllers = [(d, d.spec.controller) for d in drivers if d.spec.controller is not None]
    if not controllers:
        inputs = SIDE.inputs()
        world.integrate()
        return inputs
    world.integrate1()
    for d, fn in controllers:
        fn(t, d.system)
    inputs = SIDE.inputs()
    world.integrate2()
    return inputs


SIDE = None


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_every_shipped_scenario_steps_as_the_reference(name):
    """The first 15 steps and 10 steps from t = 0.25 s of each shipped scenario (its contacts
    settled or sliding by then); steps whose solver stopped at its sweep cap are not compared
    (at most a third of them)."""
    global SIDE
    scn = load_scenario(os.path.join(SCENARIOS, name + ".toml"))
    world, drivers = build_world(scn)
    SIDE = SideBySide(world)
    later = int(round(0.25 / world.dt))
    compared = total = 0
    for k in range(later + 10):
        inputs = _step_scenario(world, drivers, k)
        if k < 15 or k >= later:
            total += 1
            compared += SIDE.check(inputs, f"{name} step {k}")
    assert compared >= 2 * total // 3, f"{name}: only {compared} of {total} steps compared"


def _randomised(path: str, scheme: str, rng) -> World:
    """A robot in the air (no ground) at a random state with random gains, targets,
    feedforward, actuator torques, damping, springs and loads."""
    w = World(0.002)
    s = w.add_articulated_system(load_urdf(path))
    q, u = random_state(s.model, rng)
    for j in s.model.moving_joints:  # inside the limits (a limit row has its own test)
        if j.has_position_limits:
            q[j.q_slice] = np.clip(q[j.q_slice], j.lower, j.upper)
    if s.constraints:  # a closed loop starts at its nominal configuration (it is held there)
        q, u = s.q.copy(), 0.1 * u
    s.set_state(q, u)
    nv = s.nv
    s.set_pd_gains(rng.uniform(0, 80, nv), rng.uniform(0, 4, nv))
    q_ref, _ = random_state(s.model, rng)
    if s.constraints:
        q_ref = q + 0.0
    s.set_pd_target(q_ref, rng.normal(size=nv))
    s.set_generalized_force(rng.normal(scale=3.0, size=nv))
    s.set_joint_damping(rng.uniform(0, 0.5, nv))
    if s.model.actuators:
        s.set_actuator_torques(rng.normal(scale=5.0, size=len(s.model.actuators)))
    for j in s.model.moving_joints:
        if j.nv == 1 and rng.uniform() < 0.5:
            s.add_spring(j.name, float(rng.uniform(0, 20)), float(rng.uniform(-1, 1)))
    link = s.model.links[-1].name
    s.set_external_force(link, rng.normal(size=3), rng.normal(scale=0.1, size=3))
    s.set_external_torque(link, rng.normal(size=3))
    s.set_integration_scheme(scheme)
    return w


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("path", SHIPPED, ids=os.path.basename)
def test_every_robot_and_scheme_from_random_states_steps_as_the_reference(path, scheme):
    rng = np.random.default_rng(zlib.crc32(f"{os.path.basename(path)} {scheme}".encode()))
    for trial in range(3):
        w = _randomised(path, scheme, rng)
        side = SideBySide(w)
        inputs = side.inputs()
        w.integrate()
        assert side.check(inputs, f"{os.path.basename(path)} trial {trial}")


@pytest.mark.parametrize("path", [p for p in SHIPPED if any(
    j.has_position_limits for j in load_urdf(p).moving_joints)], ids=os.path.basename)
def test_joints_outside_their_limits_and_too_fast_step_as_the_reference(path):
    """Every limited joint of the robot put beyond its range or given a speed beyond its limit,
    with friction on the joints: the position-limit, velocity-limit and friction rows."""
    rng = np.random.default_rng(zlib.crc32(os.path.basename(path).encode()))
    for trial in range(4):
        w = _randomised(path, "SEMI_IMPLICIT", rng)
        s = w.systems[0]
        q, u = s.q.copy(), s.u.copy()
        for j in s.model.moving_joints:
            if not j.has_position_limits:
                continue
            k, i = j.q_slice.start, j.u_slice.start
            side = rng.integers(3)
            if side == 0:
                q[k] = j.lower - rng.uniform(0, 0.1)
            elif side == 1:
                q[k] = j.upper + rng.uniform(0, 0.1)
            if np.isfinite(j.velocity):
                u[i] = rng.choice([-1, 1]) * j.velocity * rng.uniform(0.5, 2.0)
        s.set_state(q, u)
        side = SideBySide(w)
        inputs = side.inputs()
        w.integrate()
        assert side.check(inputs, f"{os.path.basename(path)} trial {trial}")


SPHERE = """<robot name="ball"><link name="body"><inertial><mass value="0.5"/>
  <inertia ixx="0.002" iyy="0.002" izz="0.002" ixy="0" ixz="0" iyz="0"/></inertial>
  <collision><geometry><sphere radius="0.1"/></geometry></collision></link></robot>"""


def test_robots_touching_each_other_and_bouncing_step_as_the_reference(tmp_path):
    """Two balls, one falling onto the other resting on the ground, with restitution 0.5 (an
    impact above the threshold) and friction: contacts between two robots in one problem."""
    urdf = tmp_path / "ball.urdf"
    urdf.write_text(SPHERE)
    w = World(0.001)
    w.add_ground()
    w.set_default_material(0.6, restitution=0.5, restitution_threshold=0.01)
    low = w.add_articulated_system(str(urdf), name="low")
    high = w.add_articulated_system(str(urdf), name="high")
    low.set_state([0, 0, 0.1, 1, 0, 0, 0], np.zeros(6))
    high.set_state([0.02, 0.01, 0.302, 1, 0, 0, 0], [0.1, 0, -1.5, 0, 0.3, 0])
    side = SideBySide(w)
    touching = 0
    for k in range(60):
        inputs = side.inputs()
        w.integrate()
        side.check(inputs, f"step {k}")
        touching += any(m[3] is not None for m in w.contacts.meta)
    assert touching, "the balls never touched"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_quadruped_landing_under_each_scheme_steps_as_the_reference(scheme):
    """The quadruped dropped onto the ground under torques (no PD: RUNGE_KUTTA_4 and EULER are
    not replaced after the first contact), with its joint actuators commanded."""
    w = World(0.002)
    w.add_ground()
    s = w.add_articulated_system(load_urdf(robot("quadruped.urdf")))
    q = s.q.copy()
    q[2], q[7:] = 0.47, [0.0, 0.6, -1.2] * 2 + [0.0, -0.6, 0.6] * 2
    s.set_state(q, np.zeros(s.nv))
    s.set_integration_scheme(scheme)
    s.set_actuator_torques(np.full(len(s.model.actuators), 0.5))
    side = SideBySide(w)
    compared = 0
    for k in range(80):
        inputs = side.inputs()
        w.integrate()
        compared += side.check(inputs, f"step {k}")
    assert len(w.contacts) and compared >= 60


# what each case of tests/cases.py must have shown by its last step or at some step (so that the
# comparison covered it): how many contacts at once, and what they touched
_SHOWN = {"drop": lambda w, most: len(w.contacts) == 4,
          "box_tilted": lambda w, most: most >= 2, "can_tilted": lambda w, most: most >= 2,
          "can_upright": lambda w, most: most == 4, "plate": lambda w, most: most == 4,
          "three_apart": lambda w, most: len(w.contacts) == 8,
          "hand_on_ground": lambda w, most: most >= 3,
          "quadruped_onto_a_step": lambda w, most: {c.name_b for c in w.get_contacts()} >=
          {"step", "ground"},
          "self_collision": lambda w, most: len(w.contacts) > 0,
          "arm_on_ground": lambda w, most: most >= 2}


@pytest.mark.parametrize("case", CASES)
def test_every_kind_of_world_steps_as_the_reference(case):
    """400 steps of each world of tests/cases.py (falls, impacts, standing, sliding, islands
    that form, loads set for some steps, a state saved and restored at step 200), the first
    three steps and every 40th compared with the reference; steps whose solver stopped at its
    cap are not compared (at most a third)."""
    w = World(0.001)
    setup(case, w)
    side = SideBySide(w)
    compared = checked = most = 0
    for k in range(400):
        before_step(case, k, w)
        inputs = side.inputs() if k < 3 or k % 40 == 0 else None
        w.integrate()
        if inputs is not None:
            checked += 1
            compared += side.check(inputs, f"{case} step {k}")
        most = max(most, len(w.contacts))
        if k == 200:
            w.set_state(w.get_state())
    assert compared >= 2 * checked // 3, f"{case}: only {compared} of {checked} steps compared"
    assert _SHOWN.get(case, lambda w, most: True)(w, most), case


def _controller(w, k):
    """A controller between integrate1 and integrate2: it reads the step's M, h and contacts
    and sets torques, now and then gains and loads."""
    for r in w.systems:
        M, h = r.get_mass_matrix(), r.get_nonlinearities()
        r.set_generalized_force(0.01 * h + 0.001 * M.sum(axis=1))
        if k % 40 == 20:
            r.set_pd_gains(np.full(r.nv, 100.0 + k), np.full(r.nv, 5.0))
        if k % 30 < 5:
            r.set_external_force(r.model.links[-1].name, [0.0, 2.0, 1.0])
    if k % 2:
        w.get_contacts()


@pytest.mark.parametrize("case", ["drop", "arm_torque_mode", "three_apart", "fourbar",
                                  "box_on_incline", "self_collision", "arm_rk4", "spherical",
                                  "gripper"])
def test_a_controller_between_integrate1_and_integrate2_steps_as_the_reference(case):
    """World.integrate1, a controller that reads M, h and the contacts and sets commands, then
    World.integrate2: the step takes the controller's commands (every 15th step compared)."""
    w = World(0.001)
    setup(case, w)
    side = SideBySide(w)
    compared = checked = 0
    for k in range(150):
        before_step(case, k, w)
        w.integrate1()
        _controller(w, k)
        inputs = side.inputs() if k % 15 == 0 else None
        w.integrate2()
        if inputs is not None:
            checked += 1
            compared += side.check(inputs, f"{case} step {k}")
    assert compared >= 2 * checked // 3, f"{case}: only {compared} of {checked} steps compared"
