"""RUNGE_KUTTA_4 is of fourth order wherever the state holds a quaternion (floating bases,
spherical joints), checked with conservation laws, and no less accurate than MuJoCo's RK4 on the
same body."""

import numpy as np
import pytest

from conftest import robot
from raisimcli.model import load_urdf, load_urdf_string
from raisimcli.physics import World

# a free brick with distinct principal moments, tumbling about its unstable intermediate axis.
# At 3 rad/s both RK4s (ours and MuJoCo's) are at the rounding floor (1e-15) by dt = 1 ms, where no
# order can be observed; at 10 rad/s the brick flips within the 2 s and truncation dominates.
BRICK = """<robot name="brick">
  <link name="brick">
    <inertial><mass value="1"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.3"/></inertial>
  </link>
</robot>"""
W0 = np.array([0.01, 10.0, 0.01])
I_BODY = np.diag([0.1, 0.2, 0.3])
DTS = (0.004, 0.002, 0.001)


def quat_matrix(w, x, y, z):
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def brick_momentum_error(dt, T=2.0, scheme="RUNGE_KUTTA_4"):
    """Worst relative error of the world-frame angular momentum R I R^T omega over T, computed
    from the state alone (not from the library's momentum), and the worst |1 - |quat||."""
    world = World(dt, gravity=(0.0, 0.0, 0.0))
    body = world.add_articulated_system(load_urdf_string(BRICK, "brick.urdf"))
    body.set_integration_scheme(scheme)
    body.set_state([0, 0, 0, 1, 0, 0, 0], np.r_[0.0, 0.0, 0.0, W0])

    def momentum():
        R = quat_matrix(*body.q[3:7])
        return R @ I_BODY @ R.T @ body.u[3:6]

    L0 = momentum()
    worst = unit = 0.0
    for _ in range(int(round(T / dt))):
        world.integrate()
        worst = max(worst, np.linalg.norm(momentum() - L0) / np.linalg.norm(L0))
        unit = max(unit, abs(1.0 - np.linalg.norm(body.q[3:7])))
    return worst, unit


def test_tumbling_brick_is_fourth_order():
    errors = [brick_momentum_error(dt)[0] for dt in DTS]
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    assert min(ratios) >= 11, (errors, ratios)   # observed order >= 3.5


def test_quaternion_stays_unit_without_renormalising_a_drift(monkeypatch):
    """Each step's quaternion q_0 exp(theta) is unit to rounding before it is normalised: the
    normalisation removes rounding, never a drift."""
    from raisimcli.physics import conventions
    seen = []

    def recording_norm(v):
        n = np.linalg.norm(v)
        seen.append(n)
        return n

    monkeypatch.setattr(conventions, "norm", recording_norm)
    worst, unit = brick_momentum_error(0.001, T=2.0)
    assert len(seen) >= 4 * 2000  # every stage and every step's update went through it
    assert max(abs(n - 1.0) for n in seen) < 1e-15
    assert unit < 1e-15


def _mujoco_brick_error(dt, T=2.0):
    mujoco = pytest.importorskip("mujoco")
    xml = f"""<mujoco><option timestep="{dt}" integrator="RK4" gravity="0 0 0"/>
      <worldbody><body><freejoint/><inertial pos="0 0 0" mass="1" diaginertia="0.1 0.2 0.3"/>
      </body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qvel[3:6] = W0  # MuJoCo's free-joint angular velocity is in the body frame (identity here)

    def momentum():
        R = quat_matrix(*d.qpos[3:7])
        return R @ I_BODY @ d.qvel[3:6]

    L0 = momentum()
    worst = 0.0
    for _ in range(int(round(T / dt))):
        mujoco.mj_step(m, d)
        worst = max(worst, np.linalg.norm(momentum() - L0) / np.linalg.norm(L0))
    return worst


def test_brick_no_less_accurate_than_mujoco_rk4():
    ours = brick_momentum_error(0.001)[0]
    theirs = _mujoco_brick_error(0.001)
    assert ours <= theirs, (ours, theirs)


def chain_energy_error(dt, T=2.0):
    """Worst relative change of the total energy of the spherical chain with its damping and
    springs removed (a conservative system)."""
    text = open(robot("spherical_chain.urdf")).read()
    spring = '<dynamics damping="0.02" stiffness="5" spring_mount="1 0 0 0"/>'
    assert spring in text
    model = load_urdf_string(text.replace(spring, ""), robot("spherical_chain.urdf"))
    world = World(dt)
    chain = world.add_articulated_system(model)
    chain.set_integration_scheme("RUNGE_KUTTA_4")
    chain.set_generalized_velocity([1.0, -0.7, 0.4, 0.8])  # the elbow stays inside its limits

    def energy():
        return chain.get_kinetic_energy() + chain.get_potential_energy()

    E0 = energy()
    scale = chain.get_kinetic_energy() + abs(E0)
    worst = 0.0
    for _ in range(int(round(T / dt))):
        world.integrate()
        worst = max(worst, abs(energy() - E0) / scale)
    return worst


def test_spherical_chain_is_fourth_order():
    model = load_urdf(robot("spherical_chain.urdf"))
    assert any(j.type == "spherical" for j in model.joints)
    errors = [chain_energy_error(dt) for dt in DTS]
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    assert min(ratios) >= 11, (errors, ratios)


def test_fixed_base_double_pendulum_stays_fourth_order():
    def energy_error(dt, T=2.0):
        world = World(dt)
        p = world.add_articulated_system(load_urdf(robot("double_pendulum.urdf")))
        p.set_integration_scheme("RUNGE_KUTTA_4")
        p.set_joint_damping(np.zeros(p.nv))
        p.set_state([1.0, -0.5], [0.3, 0.0])
        E0 = p.get_kinetic_energy() + p.get_potential_energy()
        worst = 0.0
        for _ in range(int(round(T / dt))):
            world.integrate()
            worst = max(worst, abs(p.get_kinetic_energy() + p.get_potential_energy() - E0))
        return worst

    errors = [energy_error(dt) for dt in DTS]
    assert min(errors[0] / errors[1], errors[1] / errors[2]) >= 11, errors


def test_inverse_dynamics_of_a_runge_kutta_step_is_at_the_steps_start():
    """RK4 evaluates M, h and the loads at four stages; inverse dynamics must still see the
    step's start: a load at a link point acts where that point is at the start. Against a second
    system left at the start state, whose inverse dynamics takes the same acceleration and load."""
    from raisimcli.physics.loads import PointLoad
    rng = np.random.default_rng(3)
    systems = []
    for _ in range(2):
        w = World(0.01)
        s = w.add_articulated_system(load_urdf(robot("arm7.urdf")))
        s.set_integration_scheme("RUNGE_KUTTA_4")
        s.set_compute_inverse_dynamics(True)
        systems.append((w, s))
    (w, s), (_, ref) = systems
    q0 = s.conv.normalize(s.q + 0.4 * rng.standard_normal(s.nq))
    u0 = 2.0 * rng.standard_normal(s.nv)
    link = s.model.links[-1].name
    force, point = np.array([3.0, -2.0, 5.0]), np.array([0.05, 0.02, -0.03])
    for system in (s, ref):
        system.set_state(q0, u0)
    s.set_external_force(link, force, point)
    w.integrate()
    assert s.effective_scheme() == "RUNGE_KUTTA_4"
    expected = ref._idyn.compute(q0, u0, (s.u - u0) / w.dt, [PointLoad(link, force, point)])
    for name in ("force", "torque", "actuation"):
        assert np.array_equal(getattr(s.joint_wrenches, name), getattr(expected, name),
                              equal_nan=True), name
