"""Dynamics quantities in our conventions, against independent references: MuJoCo, finite
differences of body poses, the textbook double pendulum, and rigid-motion invariance."""

import os

import numpy as np
import pytest

from conftest import SHIPPED, assert_close, robot
from mjcf import MujocoOracle
from raisimcli.model import load_urdf
from raisimcli.physics import World
from raisimcli.physics.conventions import quat_log
from states import random_state

ROBOT_FILES = [p for p in SHIPPED]


def make(path, base=None, gravity=(0, 0, -9.81)):
    w = World(0.001, gravity)
    return w, w.add_articulated_system(load_urdf(path, base=base))


@pytest.mark.parametrize("path", ROBOT_FILES, ids=os.path.basename)
def test_mass_matrix_and_bias_match_mujoco(path):
    pytest.importorskip("mujoco")
    _, sys = make(path)
    oracle = MujocoOracle(sys.model)
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, u = random_state(sys.model, rng, speed=2.0)
        sys.set_state(q, u)
        M_ref, h_ref = oracle.mass_and_bias(sys.q, u)
        M, h = sys.get_mass_matrix(), sys.get_nonlinearities()
        assert_close(M, M_ref, rtol=1e-9, atol=1e-9 * np.abs(M_ref).max(), what="M")
        assert_close(h, h_ref, rtol=1e-9, atol=1e-9 * np.abs(h_ref).max(), what="h")


def test_floating_quadruped_fixed_and_floating_against_mujoco():
    pytest.importorskip("mujoco")
    for base in ("floating", "fixed"):
        _, sys = make(robot("quadruped.urdf"), base=base)
        oracle = MujocoOracle(sys.model)
        rng = np.random.default_rng(11)
        q, u = random_state(sys.model, rng, speed=3.0)
        sys.set_state(q, u)
        M_ref, h_ref = oracle.mass_and_bias(sys.q, u)
        assert_close(sys.get_mass_matrix(), M_ref, rtol=1e-9, atol=1e-9)
        assert_close(sys.get_nonlinearities(), h_ref, rtol=1e-9, atol=1e-8)


def _body_velocities_by_fd(sys, eps=1e-6):
    """World COM velocity and angular velocity of every link with mass, by central differences of
    link poses at q -+ eps u (positions integrated with the spec's rule)."""
    q, u = sys.get_state()
    poses = {}
    for sign in (-1, 1):
        sys.set_state(sys.conv.integrate(q, u, sign * eps), u)
        for link in sys.model.links:
            if link.inertial is None or link.name == "world":
                continue
            R = sys.get_frame_orientation(link.name)
            c = sys.get_frame_position(link.name) + R @ link.inertial.com
            poses.setdefault(link.name, {})[sign] = (c, R)
    sys.set_state(q, u)
    out = {}
    for name, p in poses.items():
        (c0, R0), (c1, R1) = p[-1], p[1]
        v = (c1 - c0) / (2 * eps)
        import pinocchio as pin
        w = pin.log3(R1 @ R0.T) / (2 * eps)
        out[name] = (v, w, 0.5 * (R0 + R1))
    return out


@pytest.mark.parametrize("path", ROBOT_FILES, ids=os.path.basename)
@pytest.mark.parametrize("base", [None, "other"])
def test_kinetic_energy_from_body_velocities(path, base):
    m = load_urdf(path)
    if base == "other":
        below = [j for j in m.joints if j.parent == "world"]
        if m.root_link == "world" and (len(below) != 1 or below[0].type != "fixed"):
            pytest.skip("a world-rooted robot whose base cannot float")
        base = "fixed" if m.base == "floating" else "floating"
    _, sys = make(path, base=base)
    rng = np.random.default_rng(5)
    q, u = random_state(sys.model, rng)
    sys.set_state(q, u)
    vel = _body_velocities_by_fd(sys)
    ke = 0.0
    for link in sys.model.links:
        if link.name not in vel or sys.model.link(link.name).body == 0:
            continue
        v, w, R = vel[link.name]
        ine = link.inertial
        ke += 0.5 * ine.mass * v @ v + 0.5 * w @ (R @ ine.inertia @ R.T) @ w
    for j in sys.model.moving_joints:
        ke += 0.5 * j.rotor_inertia * float(u[j.u_slice] @ u[j.u_slice])
    assert sys.get_kinetic_energy() == pytest.approx(ke, rel=1e-7)


@pytest.mark.parametrize("path", ROBOT_FILES, ids=os.path.basename)
def test_jacobians_against_finite_differences(path):
    _, sys = make(path)
    rng = np.random.default_rng(9)
    q, u = random_state(sys.model, rng)
    sys.set_state(q, u)
    eps = 1e-6
    for link in sys.model.links:
        if link.body == 0:
            continue
        r_local = rng.uniform(-0.2, 0.2, 3)
        p = sys.get_frame_position(link.name) + sys.get_frame_orientation(link.name) @ r_local
        J = sys.get_dense_jacobian(link.name, p)
        Jr = sys.get_dense_rotational_jacobian(link.name)
        pts, rots = [], []
        for sign in (-1, 1):
            sys.set_state(sys.conv.integrate(q, u, sign * eps), u)
            R = sys.get_frame_orientation(link.name)
            pts.append(sys.get_frame_position(link.name) + R @ r_local)
            rots.append(R)
        sys.set_state(q, u)
        import pinocchio as pin
        assert_close(J @ u, (pts[1] - pts[0]) / (2 * eps), rtol=1e-6, atol=1e-7, what=link.name)
        assert_close(Jr @ u, pin.log3(rots[1] @ rots[0].T) / (2 * eps), rtol=1e-6, atol=1e-7,
                     what=link.name)
        v, w = sys.get_frame_velocity(link.name)
        assert_close(v, J @ u if np.allclose(r_local, 0) else
                     sys.get_dense_jacobian(link.name) @ u, rtol=1e-9, atol=1e-12)
        assert_close(w, Jr @ u, rtol=1e-9, atol=1e-12)


def test_double_pendulum_textbook_M_C_G():
    """Two uniform rods hinged about y, hanging along -z; theta2 relative to link 1."""
    _, sys = make(robot("double_pendulum.urdf"))
    m1 = m2 = 1.0
    l1, c1, c2 = 1.0, 0.5, 0.5
    # about the COM, about y: a rod of radius 0.02, m (3 r^2 + l^2) / 12, as the file rounds it
    I1 = I2 = float(sys.model.link("upper").inertial.inertia[1, 1])
    assert I1 == pytest.approx(m1 * (3 * 0.02 ** 2 + 1.0) / 12, rel=1e-6)
    g = 9.81
    rng = np.random.default_rng(2)
    for _ in range(10):
        th = rng.uniform(-np.pi, np.pi, 2)
        dth = rng.normal(size=2) * 2
        sys.set_state(th, dth)
        c = np.cos(th[1])
        s = np.sin(th[1])
        M = np.array([[I1 + I2 + m1 * c1 ** 2 + m2 * (l1 ** 2 + c2 ** 2 + 2 * l1 * c2 * c),
                       I2 + m2 * (c2 ** 2 + l1 * c2 * c)],
                      [I2 + m2 * (c2 ** 2 + l1 * c2 * c), I2 + m2 * c2 ** 2]])
        C = np.array([-m2 * l1 * c2 * s * (2 * dth[0] * dth[1] + dth[1] ** 2),
                      m2 * l1 * c2 * s * dth[0] ** 2])
        G = g * np.array([(m1 * c1 + m2 * l1) * np.sin(th[0]) + m2 * c2 * np.sin(th.sum()),
                          m2 * c2 * np.sin(th.sum())])
        assert_close(sys.get_mass_matrix(), M, rtol=1e-12, atol=1e-14, what="M")
        assert_close(sys.get_nonlinearities(), C + G, rtol=1e-12, atol=1e-12, what="h")
        assert_close(sys.get_nonlinearities(gravity=(0, 0, 0)), C, rtol=1e-12, atol=1e-12)


def test_bias_against_mujoco_free_flight_integration():
    """Zero applied force: the acceleration -M^-1 h equals finite differences of an accurate
    MuJoCo integration (RK4, 1e-5 s steps), so a wrong conversion term of h cannot hide."""
    pytest.importorskip("mujoco")
    import mujoco
    _, sys = make(robot("quadruped.urdf"))
    oracle = MujocoOracle(sys.model, timestep=1e-5)
    rng = np.random.default_rng(4)
    q, u = random_state(sys.model, rng, speed=3.0)
    sys.set_state(q, u)
    acc = -np.linalg.solve(sys.get_mass_matrix(), sys.get_nonlinearities())
    oracle.set_state(sys.q, u)
    us = [oracle.our_velocity()]
    for _ in range(2):
        mujoco.mj_step(oracle.m, oracle.d)
        us.append(oracle.our_velocity())
    fd = (-3 * us[0] + 4 * us[1] - us[2]) / (2 * 1e-5)
    assert_close(acc, fd, rtol=1e-5, atol=1e-5 * np.abs(fd).max())
    # the naive conversion T h_pin (without M_pin c) is wrong by far more than that tolerance
    T = sys.conv.velocity_transform(sys.q)
    c = sys.conv.bias_correction(T.T @ u)
    assert np.abs(T @ sys._cache["M_pin"] @ c).max() > 1.0


@pytest.mark.parametrize("name", ["quadruped.urdf", "box.urdf", "spherical_chain.urdf"])
def test_nonlinearities_by_inverse_dynamics_equal_the_sum_of_the_step(name):
    """get_nonlinearities of a robot with a floating or spherical joint is one pass of
    Pinocchio's inverse dynamics, T rnea(q_pin, u_pin, c); the step forms T (h_pin + M_pin c)
    from nonLinearEffects and crba. Here the second is built in numpy from the dense T and
    Pinocchio's own calls: the two agree to rounding, at the world's gravity and at another,
    and the step's own h (step/explicit.py's stage) is that sum."""
    import pinocchio as pin
    _, sys = make(robot(name))
    pm = pin.Model(sys.pinocchio.model)  # (a copy: its gravity is set here)
    data = pm.createData()
    rng = np.random.default_rng(23)
    for gravity in [(0.0, 0.0, -9.81), (1.5, -2.0, -3.0), (0.0, 0.0, 0.0)]:
        for _ in range(4):
            q, u = random_state(sys.model, rng, speed=3.0)
            sys.set_state(q, u)
            T = sys.conv.velocity_transform(sys.q)
            q_pin, u_pin = sys.q[sys.pinocchio.q_to_pin], T.T @ u
            upper = pin.crba(pm, data, q_pin)
            M_pin = np.triu(upper) + np.triu(upper, 1).T
            pm.gravity = pin.Motion(np.array(gravity), np.zeros(3))
            h_pin = pin.nonLinearEffects(pm, data, q_pin, u_pin)
            c = np.zeros(sys.nv)  # -omega_local x v_local on the floating joint's linear part
            for us, _ in sys.conv.floating:
                c[us:us + 3] = -np.cross(u_pin[us + 3:us + 6], u_pin[us:us + 3])
            ref = T @ (h_pin + M_pin @ c)
            h = sys.get_nonlinearities(gravity=gravity)
            # (the size of the terms summed: gravity's, and |M| |u|^2 of the velocity terms)
            scale = np.abs(M_pin).max() * (np.linalg.norm(gravity) + np.abs(u_pin).max() ** 2)
            assert_close(h, ref, rtol=1e-13, atol=1e-14 * scale, what=f"h at g={gravity}")
            if gravity == (0.0, 0.0, -9.81):  # (the world's: the step's h, the stage kernel's)
                from raisimcli.physics.step.explicit import make_stage
                st = make_stage(sys, 0.001, *sys.pinocchio_dynamics())
                assert_close(st.h, ref, rtol=1e-13, atol=1e-14 * scale, what="the step's h")
            if name != "spherical_chain.urdf":  # c != 0 on a moving floating base
                assert np.abs(T @ M_pin @ c).max() > 1e-3


@pytest.mark.parametrize("name", ["quadruped.urdf", "arm7.urdf", "spherical_chain.urdf"])
def test_the_getters_without_pinocchio_s_new_arrays(name):
    """The getters turn the new arrays that crba and rnea return into M and h in place; were
    they views of Pinocchio's data (another binding), the system copies them first: the same
    bits either way."""
    _, a = make(robot(name))
    _, b = make(robot(name))
    assert a._new_results  # (this Pinocchio's bindings: copies)
    b._new_results = False
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, u = random_state(a.model, rng, speed=2.0)
        for s in (a, b):
            s.set_state(q, u)
        assert a.get_mass_matrix().tobytes() == b.get_mass_matrix().tobytes()
        assert a.get_nonlinearities().tobytes() == b.get_nonlinearities().tobytes()


@pytest.mark.parametrize("scheme", ["SEMI_IMPLICIT", "RUNGE_KUTTA_4"])
def test_the_getters_leave_the_steps_as_they_are(scheme):
    """M and h read at every state (at the world's gravity and at another) change nothing of
    the steps that follow, on the compiled path (the quadruped under PD on the ground) and on
    the general one (RUNGE_KUTTA_4): the getters' arrays, made once, are not the step's."""
    runs = []
    for read in (False, True):
        w = World(0.001)
        w.add_ground()
        r = w.add_articulated_system(load_urdf(robot("quadruped.urdf")))
        q = r.get_generalized_coordinate()  # (quadruped_stand.toml's pose, 2 cm higher)
        q[2] = 0.4685
        for joint, angle in [("LF_HFE", 0.6), ("RF_HFE", 0.6), ("LH_HFE", -0.6),
                             ("RH_HFE", -0.6), ("LF_KFE", -1.2), ("RF_KFE", -1.2),
                             ("LH_KFE", 1.2), ("RH_KFE", 1.2)]:
            q[r.model.joint(joint).q_slice] = angle
        r.set_state(q, np.zeros(r.nv))
        r.set_pd_gains(np.full(r.nv, 300.0), np.full(r.nv, 10.0))
        r.set_pd_target(q, np.zeros(r.nv))
        r.set_integration_scheme(scheme)
        states = []
        for k in range(300):
            if read:
                r.get_nonlinearities(gravity=(0.0, 0.0, -1.0))
                r.get_mass_matrix()
                r.get_nonlinearities()
            w.integrate()
            states.append(np.concatenate([r.q, r.u]).tobytes())
        runs.append(states)
        assert len(w.get_contacts()) >= 1  # (landed)
    assert runs[0] == runs[1]


def test_rigid_motion_of_floating_base():
    _, sys = make(robot("quadruped.urdf"))
    rng = np.random.default_rng(8)
    q, u = random_state(sys.model, rng)
    sys.set_state(q, u)
    M0 = sys.get_mass_matrix().copy()
    import pinocchio as pin
    Q = pin.exp3(rng.normal(size=3))
    shift = rng.normal(size=3)
    q1 = q.copy()
    q1[0:3] = Q @ q[0:3] + shift
    xyzw = pin.Quaternion(Q @ pin.Quaternion(q[3], q[4], q[5], q[6]).toRotationMatrix()).coeffs()
    q1[3:7] = [xyzw[3], xyzw[0], xyzw[1], xyzw[2]]
    sys.set_state(q1, u)
    M1 = sys.get_mass_matrix()
    B = np.kron(np.eye(2), Q)
    assert_close(M1[6:, 6:], M0[6:, 6:], rtol=1e-12, atol=1e-13)
    assert_close(M1[:6, :6], B @ M0[:6, :6] @ B.T, rtol=1e-12, atol=1e-12)
    assert_close(M1[:6, 6:], B @ M0[:6, 6:], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["quadruped.urdf", "arm7.urdf", "spherical_chain.urdf"])
def test_potential_energy_momentum_by_hand(name):
    _, sys = make(robot(name))
    rng = np.random.default_rng(1)
    q, u = random_state(sys.model, rng)
    sys.set_state(q, u)
    vel = _body_velocities_by_fd(sys)
    V = 0.0
    P = np.zeros(3)
    mass = 0.0
    for link in sys.model.links:
        if link.inertial is None or link.body == 0:
            continue
        R = sys.get_frame_orientation(link.name)
        c = sys.get_frame_position(link.name) + R @ link.inertial.com
        V += link.inertial.mass * 9.81 * c[2]
        P += link.inertial.mass * vel[link.name][0]
        mass += link.inertial.mass
    assert sys.get_potential_energy() == pytest.approx(V, rel=1e-12, abs=1e-12)
    assert_close(sys.get_linear_momentum(), P, rtol=1e-7, atol=1e-8)
    assert_close(sys.get_generalized_momentum(), sys.get_mass_matrix() @ u, rtol=1e-15)


def test_state_dimension_errors_name_the_size():
    from raisimcli.errors import StateError
    _, sys = make(robot("quadruped.urdf"))
    with pytest.raises(StateError, match="must have 19 entries, got 18"):
        sys.set_generalized_coordinate(np.zeros(18))
    with pytest.raises(StateError, match="must have 18 entries"):
        sys.set_generalized_velocity(np.zeros(19))
    q = sys.get_generalized_coordinate()
    q[3:7] = [2, 0, 0, 0]
    sys.set_generalized_coordinate(q)
    assert_close(sys.q[3:7], [1, 0, 0, 0])


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_setters_refuse_entries_that_are_not_finite(bad):
    from raisimcli.errors import StateError
    _, sys = make(robot("quadruped.urdf"))
    q, u = sys.get_generalized_coordinate(), np.zeros(18)
    q[9], u[4] = bad, bad
    for call, what in ((lambda: sys.set_generalized_coordinate(q), "generalized coordinate"),
                       (lambda: sys.set_generalized_velocity(u), "generalized velocity"),
                       (lambda: sys.set_pd_target(q, np.zeros(18)), "position target"),
                       (lambda: sys.set_pd_target(sys.q, u), "velocity target"),
                       (lambda: sys.set_generalized_force(u), "generalized force")):
        with pytest.raises(StateError, match=f"{what} must be finite"):
            call()


def test_spherical_velocity_convention():
    """u of a spherical joint is the child's angular velocity relative to the parent, in the joint
    frame fixed to the parent: for the ball joint below the world (origin yaw 0.3), the child's
    world angular velocity is Rz(0.3) u."""
    _, sys = make(robot("spherical_chain.urdf"))
    rng = np.random.default_rng(3)
    q, u = random_state(sys.model, rng)
    sys.set_state(q, u)
    _, w = sys.get_frame_velocity("upper")
    c, s = np.cos(0.3), np.sin(0.3)
    Rz = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    assert_close(w, Rz @ u[0:3], rtol=1e-12, atol=1e-14)
    assert quat_log(np.array([1.0, 0, 0, 0])).tolist() == [0, 0, 0]


@pytest.mark.parametrize("urdf", ["quadruped.urdf", "arm7.urdf", "spherical_chain.urdf"])
def test_point_jacobians_are_pinocchio_s_joint_jacobian_moved_to_the_point(urdf):
    # point_jacobians runs the contact rows' compiled loop; a second formulation from
    # Pinocchio's getJointJacobian (LOCAL_WORLD_ALIGNED), moved to the point with the skew
    # matrix and turned into our velocity coordinates, must give the same bits
    import pinocchio as pin
    from raisimcli.linalg import matmul
    _, sys = make(robot(urdf))
    rng = np.random.default_rng(5)
    for _ in range(20):
        q, u = random_state(sys.model, rng)
        sys.set_state(q, u)
        for body in range(1, sys.pinocchio.model.njoints):
            p = rng.standard_normal(3)
            J_lin, J_rot = sys.point_jacobians(body, p)
            pin.computeJointJacobians(sys.pinocchio.model, sys.pinocchio_data,
                                      sys.pinocchio_inputs()[0])
            Jj = pin.getJointJacobian(sys.pinocchio.model, sys.pinocchio_data, body,
                                      pin.LOCAL_WORLD_ALIGNED).reshape(6, sys.nv)
            x, y, z = (p - sys.pinocchio_data.oMi[body].translation).tolist()
            skew = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
            lin, rot = Jj[:3] - matmul(skew, Jj[3:]), Jj[3:]
            R = sys.pinocchio_inputs()[2]
            if R is not None:
                lin, rot = sys.conv.from_pin_columns(R, lin), sys.conv.from_pin_columns(R, rot)
            assert J_lin.tobytes() == lin.tobytes() and J_rot.tobytes() == rot.tobytes()


def test_frame_getters_read_pinocchio_s_frame_placements():
    # the frame getters read views of data.oMf (checked when made): after steps, every link's
    # position and orientation are the accessors' values
    w, sys = make(robot("quadruped.urdf"))
    sys.set_pd_gains(np.full(18, 50.0), np.full(18, 1.0))
    for _ in range(20):
        w.integrate()
    assert sys._frame_placements is not None
    data = sys.pinocchio_data
    for link in sys.model.links:
        fid = sys.pinocchio.link_frame[link.name]
        p, R = sys.get_frame_position(link.name), sys.get_frame_orientation(link.name)
        assert p.tobytes() == data.oMf[fid].translation.tobytes()
        assert np.array_equal(R, data.oMf[fid].rotation) and R.flags["C_CONTIGUOUS"]
