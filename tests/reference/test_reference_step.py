"""The package's step against the plain reference of tests/reference/step.py, written from the
spec: every shipped scenario as it runs (its robots, commands, controllers, contacts and scheme),
every shipped robot under every scheme with random states, commands and gains, and the joint rows
on states outside the limits. Each step starts from the package's own state, so that a difference
shows at the step where it arises."""

import os
import zlib

import numpy as np
import pytest

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
