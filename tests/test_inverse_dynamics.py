"""Inverse dynamics: joint wrenches against the step's generalized forces, statics by hand,
Newton-Euler on every body from finite differences, free flight, fixed joints."""

import numpy as np
import pytest

from conftest import assert_close, robot
from newton_euler import body_momenta, check_newton_euler
from raisimcli.model import load_urdf, load_urdf_string
from raisimcli.physics import World
from raisimcli.physics.contact_set import ContactLoads

G = np.array([0.0, 0.0, -9.81])


def quadruped(rotor=True, dt=0.001):
    text = open(robot("quadruped.urdf")).read()
    if not rotor:
        text = text.replace(' rotor_inertia="0.01"', "")
    w = World(dt)
    r = w.add_articulated_system(load_urdf_string(text, path=robot("quadruped.urdf")))
    r.set_compute_inverse_dynamics(True)
    return w, r


def _stir(r, rng):
    q = r.get_generalized_coordinate()
    q[2] = 1.0
    q[7:] = rng.uniform(-0.5, 0.5, 12)
    q[r.model.joint("LF_KFE").q_slice] = -1.0
    r.set_state(q, rng.normal(size=r.nv))
    r.set_pd_gains(np.full(r.nv, 50.0), np.full(r.nv, 1.0))
    r.set_actuator_torques(rng.uniform(-5, 5, 12))


def test_axis_torque_equals_the_applied_generalized_force_free_fall():
    w, r = quadruped(rotor=False)
    rng = np.random.default_rng(0)
    _stir(r, rng)
    r.set_external_force("base", [5.0, 0.0, 20.0], point=[0.1, 0.1, 0.0])
    for _ in range(3):
        w.integrate()
        limited = r.torque["joint_limits"] != 0
        for j in r.model.moving_joints:
            if j.nv == 1 and not limited[j.u_slice].any():
                assert r.get_joint_actuation(j.name) == pytest.approx(
                    r.torque["total"][j.u_slice.start], rel=1e-8, abs=1e-8), j.name


def test_axis_torque_equals_the_applied_generalized_force_arm_under_pd():
    text = open(robot("arm7.urdf")).read().replace(' rotor_inertia="0.05"', "").replace(
        ' rotor_inertia="0.01"', "")
    w = World(0.001)
    r = w.add_articulated_system(load_urdf_string(text, path=robot("arm7.urdf")))
    r.set_compute_inverse_dynamics(True)
    r.set_state(np.array([0.3, 0.5, -0.2, -1.0, 0.4, 0.5, 0.1]), np.zeros(7))
    r.set_pd_gains(np.full(7, 300.0), np.full(7, 20.0))
    r.set_pd_target(np.zeros(7), np.zeros(7))
    for _ in range(50):
        w.integrate()
        for j in r.model.moving_joints:
            assert r.get_joint_actuation(j.name) == pytest.approx(
                r.torque["total"][j.u_slice.start], rel=1e-8, abs=1e-8)


def test_rotor_inertia_sits_on_the_parent_side():
    w, r = quadruped(rotor=True)
    _stir(r, np.random.default_rng(1))
    u0 = r.get_generalized_velocity()
    w.integrate()
    a = (r.u - u0) / w.dt
    for j in r.model.moving_joints:
        if j.nv != 1 or r.torque["joint_limits"][j.u_slice.start] != 0:
            continue
        i = j.u_slice.start
        assert abs(a[i]) > 1.0  # the joint accelerates: the difference is visible
        assert r.get_joint_actuation(j.name) == pytest.approx(
            r.torque["total"][i] - 0.01 * a[i], rel=1e-8, abs=1e-8)


def _arm_held_still():
    w = World(0.001)
    r = w.add_articulated_system(load_urdf(robot("arm7.urdf")))
    r.set_compute_inverse_dynamics(True)
    q = np.array([0.4, 0.6, -0.3, -1.2, 0.5, 0.8, 0.2])
    r.set_state(q, np.zeros(7))
    r.set_generalized_force(r.get_nonlinearities())  # gravity compensation: no acceleration
    w.integrate()
    assert np.abs(r.u).max() < 1e-12
    return r, q


def test_statics_by_hand_on_the_arm():
    r, q = _arm_held_still()
    r_ref = World(0.001).add_articulated_system(r.model)
    r_ref.set_state(q, np.zeros(7))
    m = r.model
    children = {}
    for j in m.joints:
        children.setdefault(j.parent, []).append(j.child)

    def beyond(link):
        out, stack = [], [link]
        while stack:
            name = stack.pop()
            out.append(name)
            stack += children.get(name, [])
        return out

    for j in m.joints:
        if j.parent == "world":
            continue
        p = r_ref.get_frame_position(j.child)  # the joint's position (child frame origin)
        F = np.zeros(3)
        tau = np.zeros(3)
        for name in beyond(j.child):
            link = m.link(name)
            if link.inertial is None:
                continue
            c = r_ref.get_frame_position(name) + r_ref.get_frame_orientation(name) @ link.inertial.com
            weight = link.inertial.mass * G
            F -= weight
            tau -= np.cross(c - p, weight)
        assert_close(r.get_force_at_joint_in_world_frame(j.name), F, rtol=1e-9, atol=1e-9,
                     what=j.name)
        assert_close(r.get_torque_at_joint_in_world_frame(j.name), tau, rtol=1e-9, atol=1e-9,
                     what=j.name)


def test_fixed_joint_carries_what_its_merged_links_need():
    r, q = _arm_held_still()
    tool = r.model.link("tool")
    ref = World(0.001).add_articulated_system(r.model)
    ref.set_state(q, np.zeros(7))
    c = ref.get_frame_position("tool") + ref.get_frame_orientation("tool") @ tool.inertial.com
    p = ref.get_frame_position("tool")
    weight = tool.inertial.mass * G
    assert_close(r.get_force_at_joint_in_world_frame("flange"), -weight, rtol=1e-12, atol=1e-12)
    assert_close(r.get_torque_at_joint_in_world_frame("flange"), -np.cross(c - p, weight),
                 rtol=1e-9, atol=1e-12)
    # and the base's fixed mount to the world carries the whole arm
    total = sum(link.inertial.mass for link in r.model.links if link.inertial is not None)
    assert_close(r.get_force_at_joint_in_world_frame("base_mount"), -total * G, rtol=1e-9)


def test_free_floating_root_carries_no_wrench():
    w, r = quadruped()
    _stir(r, np.random.default_rng(2))
    for _ in range(5):
        w.integrate()
        assert np.abs(r.get_force_at_joint_in_world_frame("root")).max() < 1e-9
        assert np.abs(r.get_torque_at_joint_in_world_frame("root")).max() < 1e-9


def test_newton_euler_on_every_body_from_finite_differences():
    """Each body: parent-joint wrench - child-joint wrenches + gravity + external loads = rate of
    change of its momentum (linear, and angular about its COM), the rates taken by finite
    differences of the body's velocity over the step (dt = 1e-7 keeps their error below 1e-6)."""
    dt = 1e-7
    w, r = quadruped(dt=dt)
    rng = np.random.default_rng(3)
    _stir(r, rng)
    F_ext = np.array([3.0, -2.0, 15.0])
    r.set_external_force("LF_thigh", F_ext, point=[0.0, 0.02, -0.1])
    m = r.model
    before = body_momenta(r)
    point_world = r.get_frame_position("LF_thigh") + r.get_frame_orientation("LF_thigh") @ \
        np.array([0.0, 0.02, -0.1])
    joint_pos = {j.name: r.get_frame_position(j.child) for j in m.joints}
    w.integrate()

    def loads(b, com):
        if "LF_thigh" in m.bodies[b]:
            return F_ext, np.cross(point_world - com, F_ext)
        return np.zeros(3), np.zeros(3)

    check_newton_euler(r, before, body_momenta(r), dt, joint_pos, G, loads)


def test_inverse_dynamics_requires_the_switch():
    from raisimcli.errors import StateError
    w = World(0.001)
    r = w.add_articulated_system(load_urdf(robot("pendulum.urdf")))
    w.integrate()
    with pytest.raises(StateError, match="set_compute_inverse_dynamics"):
        r.get_force_at_joint_in_world_frame("hinge")


def test_logged_with_the_scenario_switch(tmp_path):
    import h5py
    from click.testing import CliRunner
    from conftest import SCENARIOS
    from raisimcli.cli.main import cli
    out = tmp_path / "o.h5"
    r = CliRunner().invoke(cli, ["run", f"{SCENARIOS}/quadruped_pd.toml", "-q", "-o", str(out),
                                 "--duration", "0.2"])
    assert r.exit_code == 0, r.output
    with h5py.File(out) as f:
        g = f["robots/quadruped"]
        names = [n.decode() for n in g["joint_names"][()]]
        assert names[0] == "root" and "LF_foot_joint" in names and len(names) == 17
        F = g["inverse_dynamics/force_world"][()]
        T = g["inverse_dynamics/torque_world"][()]
        A = g["inverse_dynamics/actuation"][()]
        assert F.shape == (200, 17, 3) and T.shape == (200, 17, 3) and A.shape == (200, 17)
        assert np.abs(F[:, 0]).max() < 1e-9 and np.abs(T[:, 0]).max() < 1e-9  # zero gravity
        assert np.isnan(A[:, 0]).all() and np.isnan(A[:, names.index("LF_foot_joint")]).all()
        assert g["inverse_dynamics/force_world"].dims[0][0] == f["time"]


def test_a_view_of_a_view_or_the_packed_array_alone_keeps_its_step():
    """The joint wrenches are views of one packed array: a view of one of them that a user
    keeps has that array as its base (numpy's), and so does the packed array read alone; either
    keeps its step's values while the steps reuse the wrenches nobody holds."""
    w, r = quadruped()
    _stir(r, np.random.default_rng(4))
    for _ in range(5):
        w.integrate()
    rows = r.joint_wrenches.actuation[1:4]
    assert rows.base is r.joint_wrenches.packed
    rows_value = rows.copy()
    w.integrate()
    packed = r.joint_wrenches.packed
    packed_value = packed.copy()
    pool = r._idyn._pool
    for _ in range(40):
        w.integrate()
        assert any(r.joint_wrenches is jw for jw in pool)
    assert rows.tobytes() == rows_value.tobytes() and packed.tobytes() == packed_value.tobytes()


@pytest.mark.parametrize("packed", [True, False])
def test_a_log_holds_each_steps_joint_wrenches_bit_for_bit(tmp_path, monkeypatch, packed):
    """The log's inverse-dynamics datasets hold, bit for bit, the JointWrenches the system gave
    after each step of the same scenario stepped here through the library: copied from their
    packed array, or (`packed` False: wrenches made as three arrays, as the passes in Python
    make them) from the three."""
    import h5py
    from conftest import SCENARIOS
    from raisimcli.physics import inverse_dynamics
    from raisimcli.scenario import load_scenario, run as run_scenario
    from raisimcli.scenario.runner import build_world
    if not packed:
        after_step = inverse_dynamics.InverseDynamics.after_step

        def apart(self, *args):
            jw = after_step(self, *args)
            return inverse_dynamics.JointWrenches(jw.force.copy(), jw.torque.copy(),
                                                  jw.actuation.copy())
        monkeypatch.setattr(inverse_dynamics.InverseDynamics, "after_step", apart)
    out = tmp_path / "log.h5"
    scn = load_scenario(f"{SCENARIOS}/quadruped_pd.toml", (), duration=0.05, log_path=str(out))
    run_scenario(scn)
    w, drivers = build_world(scn)
    s = drivers[0].system
    s.set_compute_inverse_dynamics(True)
    expected = []
    for k in range(scn.steps):
        drivers[0].apply(k * scn.dt)
        w.integrate()
        jw = s.joint_wrenches
        assert (jw.packed is not None) == packed
        expected.append((jw.force.copy(), jw.torque.copy(), jw.actuation.copy()))
    with h5py.File(out) as f:
        g = f["robots/quadruped/inverse_dynamics"]
        for name, k in (("force_world", 0), ("torque_world", 1), ("actuation", 2)):
            assert g[name][()].tobytes() == np.stack([e[k] for e in expected]).tobytes(), name


@pytest.mark.parametrize("urdf", ["quadruped.urdf", "arm7.urdf", "spherical_chain.urdf",
                                  "acme_description/urdf/acme_s400.urdf", "gripper.urdf"])
def test_the_compiled_wrench_pass_gives_the_bits_of_pinocchios_accessors(rng, urdf):
    """The world-frame wrenches from strided views of Pinocchio's buffers in a compiled loop
    (raisimcli.physics.pinocchio_views) against the element-by-element path through Pinocchio's
    own SE3.act: the same bits, on random states, accelerations and loads (a force at a link
    point, a torque, and two contact forces at world points, all in one compiled pass)."""
    from raisimcli.physics.loads import PointLoad
    w = World(0.001)
    s = w.add_articulated_system(load_urdf(robot(urdf)))
    s.set_compute_inverse_dynamics(True)
    idyn = s._idyn
    assert idyn._views is not None  # the views were made and passed their check
    links = [link.name for link in s.model.links if link.inertial is not None]
    for _ in range(5):
        q = s.conv.normalize(s.q + 0.3 * rng.standard_normal(s.nq))
        s.set_state(q, rng.standard_normal(s.nv))
        a = rng.standard_normal(s.nv)
        s.set_external_force(links[-1], rng.standard_normal(3), rng.standard_normal(3) * 0.1)
        s.set_external_torque(links[0], rng.standard_normal(3))
        loads = list(s.pending_loads) + [  # contact forces: world points near the links
            PointLoad(link, rng.standard_normal(3) * 20, None, False,
                      world_point=s.get_frame_position(link) + rng.standard_normal(3) * 0.05)
            for link in (links[-1], links[len(links) // 2])]
        # and a step's contact forces alone, as the step hands them over (one ContactLoads)
        contact = ContactLoads(tuple(ld.link for ld in loads[-2:]),
                               np.array([s.body_of(ld.link) for ld in loads[-2:]]),
                               np.array([ld.world_point for ld in loads[-2:]]),
                               np.array([ld.vector for ld in loads[-2:]]))
        for step_loads in (loads, [contact]):
            fast = idyn.compute(s.q, s.u, a, step_loads)
            idyn._views, views = None, idyn._views
            slow = idyn.compute(s.q, s.u, a, step_loads)
            idyn._views = views
            for name in ("force", "torque", "actuation"):
                x, y = getattr(fast, name), getattr(slow, name)
                assert np.array_equal(x, y, equal_nan=True), (name, np.max(np.abs(x - y)))
        s.pending_loads.clear()


@pytest.mark.parametrize("urdf", ["quadruped.urdf", "arm7.urdf", "spherical_chain.urdf"])
def test_the_steps_call_gives_the_bits_of_compute(rng, urdf):
    """The step's call (after_step: the acceleration (u_next - u) / dt and Pinocchio's, in one
    compiled loop) against compute with the acceleration taken by numpy and turned by
    Conventions.pin_acceleration: the same bits, with and without loads (floating base, fixed
    base, spherical joints)."""
    from raisimcli.physics.loads import PointLoad
    w = World(0.001)
    s = w.add_articulated_system(load_urdf(robot(urdf)))
    s.set_compute_inverse_dynamics(True)
    links = [link.name for link in s.model.links if link.inertial is not None]
    for k in range(4):
        q = s.conv.normalize(s.q + 0.3 * rng.standard_normal(s.nq))
        s.set_state(q, rng.standard_normal(s.nv))
        u_next = s.u + 0.01 * rng.standard_normal(s.nv)
        loads = [PointLoad(links[-1], rng.standard_normal(3) * 20, None, False,
                           world_point=s.get_frame_position(links[-1]))] if k % 2 else []
        by_step = s._idyn.after_step(u_next, w.dt, loads, s.pinocchio_inputs())
        by_compute = s._idyn.compute(s.q, s.u, (u_next - s.u) / w.dt, loads)
        for name in ("force", "torque", "actuation"):
            x, y = getattr(by_step, name), getattr(by_compute, name)
            assert np.array_equal(x, y, equal_nan=True), (name, np.max(np.abs(x - y)))
        assert np.isfinite(by_step.force).all() and np.abs(by_step.force).max() > 0


@pytest.mark.parametrize("way", ["computeJointJacobians", "rnea, updateGlobalPlacements"])
def test_placements_inverse_dynamics_reads_are_forward_kinematics_bit_for_bit(rng, way):
    """Inverse dynamics reads body placements it did not get from forwardKinematics: with loads,
    those the step computed (computeJointJacobians, ArticulatedSystem.body_placements); without,
    those Pinocchio's updateGlobalPlacements composes from rnea's joint placements. Both give
    forwardKinematics' bits for every shipped robot."""
    import pinocchio as pin
    from conftest import SHIPPED
    from states import random_state
    for path in SHIPPED:
        s = World().add_articulated_system(path)
        m = s.pinocchio.model
        for _ in range(10):
            s.set_state(*random_state(s.model, rng))
            q_pin, u_pin, _ = s.pinocchio_inputs()
            a, b = m.createData(), m.createData()
            pin.forwardKinematics(m, a, q_pin)
            if way == "computeJointJacobians":
                pin.computeJointJacobians(m, b, q_pin)
            else:
                pin.rnea(m, b, q_pin, u_pin, rng.normal(size=m.nv))
                pin.updateGlobalPlacements(m, b)
            for k in range(m.njoints):
                assert a.oMi[k].homogeneous.tobytes() == b.oMi[k].homogeneous.tobytes(), path


def test_held_joint_wrenches_keep_their_step_while_unheld_ones_are_reused():
    """The joint wrenches' arrays are reused once nothing holds them (InverseDynamics._results):
    a step's JointWrenches that a user keeps (or a view of its rows) keep their values through
    the next steps, while the wrenches nobody keeps are at most _POOL objects, reused."""
    from raisimcli.physics import inverse_dynamics
    w, r = quadruped()
    _stir(r, np.random.default_rng(3))
    for _ in range(5):
        w.integrate()
    held = r.joint_wrenches
    view = held.torque[2:5]
    values = [a.copy() for a in (held.force, held.torque, held.actuation, view)]
    w.integrate()
    force = r.joint_wrenches.force  # (an array of the next step's, without its object)
    force_value = force.copy()
    pool = r._idyn._pool
    for _ in range(40):
        w.integrate()
        assert any(r.joint_wrenches is jw for jw in pool)  # (not a new one: the pool's)
    for a, b in zip((held.force, held.torque, held.actuation, view), values):
        assert a.tobytes() == b.tobytes()
    assert force.tobytes() == force_value.tobytes()
    assert len(pool) <= inverse_dynamics._POOL
    assert np.isnan(held.actuation).any() and np.isnan(r.joint_wrenches.actuation).sum() == \
        np.isnan(held.actuation).sum()  # (the fixed and floating joints' stay NaN)
