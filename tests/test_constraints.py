"""Loop and mimic constraints by exact elimination, against independent references: an SVD
null-space formulation, the spec's worked example, closure and error decay, the coupled
acceleration of a mimic pair, momentum, redundancy, and statics by hand."""

import math

import numpy as np
import pytest

from conftest import assert_close, robot
from raisimcli.model import load_urdf, load_urdf_string
from raisimcli.physics import World
from raisimcli.physics.constraints import Elimination, beta, constraint_rows
from raisimcli.physics.step.implicit import Factorized


def fourbar(dt=0.001, gravity=(0, 0, -9.81)):
    w = World(dt, gravity)
    return w, w.add_articulated_system(load_urdf(robot("fourbar.urdf")))


def _elimination(r, dt=0.001):
    J, e, _ = constraint_rows(r)
    M = r.get_mass_matrix()
    factor = Factorized(M)
    return J, e, M, Elimination(J, e, factor, r.u, beta(1.5, dt))


@pytest.mark.parametrize("name", ["fourbar.urdf", "fivebar_leg.urdf", "parallelogram.urdf"])
def test_constrained_inverse_mass_is_exact(name):
    w = World(0.001)
    r = w.add_articulated_system(load_urdf(robot(name)))
    r.set_generalized_velocity(np.random.default_rng(0).normal(size=r.nv))
    J, e, M, elim = _elimination(r)
    Mc_inv = elim.inverse_mass(np.linalg.inv(M))
    assert np.abs(J @ Mc_inv).max() < 1e-12                 # no impulse can open a constraint
    assert_close(Mc_inv, Mc_inv.T, rtol=1e-13, atol=1e-14)
    assert np.linalg.eigvalsh(Mc_inv).min() > -1e-12        # positive semi-definite
    # the independent formulation: N (N^T M N)^-1 N^T with N an SVD basis of the null space of J
    _, sv, Vt = np.linalg.svd(J)
    rank = int((sv > 1e-10 * sv.max()).sum())
    N = Vt[rank:].T
    reference = N @ np.linalg.solve(N.T @ M @ N, N.T)
    assert_close(Mc_inv, reference, rtol=0, atol=1e-10)


@pytest.mark.parametrize("iterations", [1, 200])
def test_constraints_hold_after_every_step_whatever_the_solver_does(iterations):
    """J u_{t+1} = -beta e, with joint friction and limits in the solver, even with one sweep."""
    text = open(robot("fourbar.urdf")).read().replace(
        '<dynamics damping="0"/>', '<dynamics damping="0" friction="0.5"/>')
    w = World(0.001)
    r = w.add_articulated_system(load_urdf_string(text, path=robot("fourbar.urdf")))
    r.solver_max_iterations = iterations
    r.set_generalized_force([3.0, 0.0, 0.0])
    for _ in range(300):
        J, e, _ = constraint_rows(r)
        w.integrate()
        kept = np.abs(J).sum(axis=1) > 1e-12   # the out-of-plane row of the planar pin is zero
        assert_close((J @ r.u)[kept], -beta(1.5, w.dt) * e[kept], rtol=1e-9, atol=1e-12)
    assert np.any(r.torque["joint_friction"] != 0)


def test_spec_worked_example_exact_equality_row():
    """Body1 turning at 2 rad/s with the anchors slid 5 cm apart along a free direction: the
    exact row gives the true rate of the error; the row at body1's own anchor is off by 0.1 m/s."""
    text = """<robot name="slider_on_wheel"><link name="world"/>
      <link name="wheel"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"
        ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="turn" type="continuous"><parent link="world"/><child link="wheel"/>
        <axis xyz="0 0 1"/></joint>
      <link name="bead"><inertial><mass value="0.5"/><inertia ixx="0.01" iyy="0.01" izz="0.01"
        ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="bx" type="prismatic"><parent link="world"/><child link="bx_link"/>
        <axis xyz="1 0 0"/></joint>
      <link name="bx_link"><inertial><mass value="0.5"/><inertia ixx="0.01" iyy="0.01"
        izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="by" type="prismatic"><parent link="bx_link"/><child link="bead"/>
        <axis xyz="0 1 0"/></joint></robot>"""
    w = World(0.001, gravity=(0, 0, 0))
    r = w.add_articulated_system(load_urdf_string(text))
    # body1 = the wheel, axis y (in its frame): body2's anchor stays on the wheel's xz plane
    r.add_equality_constraint("wheel", "bead", [0.0, 0.0, 0.0], [[0.0, 1.0, 0.0]])
    q = np.array([0.0, 0.05, 0.0])     # the bead slid 5 cm along the free direction x
    u = np.array([2.0, 0.0, 0.0])      # the wheel turns at 2 rad/s, the bead is still
    r.set_state(q, u)
    J, e, _ = constraint_rows(r)
    # the true rate of e = a . (p1 - p2) by finite differences of the configuration
    eps = 1e-7
    rates = []
    for sign in (-1, 1):
        r.set_state(q + sign * eps * u, u)
        rates.append(constraint_rows(r)[1][0])
    true_rate = (rates[1] - rates[0]) / (2 * eps)
    r.set_state(q, u)
    assert (J @ u)[0] == pytest.approx(true_rate, abs=1e-8)
    assert abs(true_rate) == pytest.approx(0.1, rel=1e-6)   # omega x a . (p1 - p2) = 2 * 0.05
    # the row at body1's own anchor misses the turning of the axis
    a = r.get_frame_orientation("wheel") @ np.array([0.0, 1.0, 0.0])
    wrong = a @ (r.get_dense_jacobian("wheel", r.get_frame_position("wheel"))
                 - r.get_dense_jacobian("bead", r.get_frame_position("bead")))
    assert abs(wrong @ u - true_rate) == pytest.approx(0.1, rel=1e-6)


def test_fourbar_swings_closed_and_errors_decay_by_0_7():
    w, r = fourbar()
    worst = 0.0
    for _ in range(10_000):  # 10 s
        w.integrate()
        worst = max(worst, np.abs(r.constraint_errors).max())
    assert worst < 1e-5
    # an initial error shrinks by the factor 1 - 0.3 = 0.7 per step (at rest, no gravity)
    w, r = fourbar(gravity=(0, 0, 0))
    q = r.get_generalized_coordinate()
    q[2] += 1e-3
    r.set_state(q, np.zeros(3))
    errs = []
    for _ in range(6):
        w.integrate()
        errs.append(np.linalg.norm(r.constraint_errors))
    ratios = np.array(errs[1:]) / np.array(errs[:-1])
    assert_close(ratios, np.full(5, 0.7), rtol=2e-3)


def test_mimic_holds_and_couples_accelerations():
    """Two wheels coupled by q_f = m q_l + c: they accelerate with (tau_l + m tau_f) /
    (I_l + m^2 I_f), the follower tracks to 1e-12 once converged, and the coupling does no work."""
    I_l, I_f, m, c = 0.5, 0.2, -2.0, 0.3
    text = f"""<robot name="pair"><link name="world"/>
      <link name="l"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="{I_l}" ixy="0"
        ixz="0" iyz="0"/></inertial></link>
      <link name="f"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="{I_f}" ixy="0"
        ixz="0" iyz="0"/></inertial></link>
      <joint name="lead" type="continuous"><parent link="world"/><child link="l"/>
        <axis xyz="0 0 1"/></joint>
      <joint name="follow" type="continuous"><parent link="world"/><child link="f"/>
        <origin xyz="1 0 0"/><axis xyz="0 0 1"/>
        <mimic joint="lead" multiplier="{m}" offset="{c}"/></joint></robot>"""
    w = World(0.001)
    r = w.add_articulated_system(load_urdf_string(text))
    r.set_state([0.2, 0.0], [0.0, 0.0])   # off the relation: converges
    tau_l, tau_f = 1.5, -0.4
    r.set_generalized_force([tau_l, tau_f])
    for _ in range(200):
        w.integrate()
    assert abs(r.q[1] - (m * r.q[0] + c)) < 1e-12
    u0 = r.u.copy()
    w.integrate()
    a_l = (r.u[0] - u0[0]) / w.dt
    assert a_l == pytest.approx((tau_l + m * tau_f) / (I_l + m * m * I_f), rel=1e-9)
    power = r.u @ r.torque["constraints"]
    assert abs(power) < 1e-9 * (abs(tau_l) + abs(tau_f)) * np.abs(r.u).max()


def test_loops_of_a_floating_mechanism_keep_its_momentum():
    text = open(robot("fourbar.urdf")).read()
    w = World(0.001, gravity=(0, 0, 0))
    m = load_urdf_string(text.replace('<link name="world"/>', "").replace(
        '<parent link="world"/>', '<parent link="base"/>').replace(
        '<robot name="fourbar">', '<robot name="fourbar"><link name="base"><inertial>'
        '<mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>'
        '</inertial></link>').replace('nominal_config="', 'nominal_config="0 0 0 1 0 0 0 '),
        path=robot("fourbar.urdf"))
    r = w.add_articulated_system(m)
    r.set_generalized_velocity(np.random.default_rng(1).normal(size=r.nv))
    for _ in range(500):
        w.integrate()
        # the constraints' generalized impulse on the floating base: the net force and the net
        # torque about the base origin of equal and opposite point impulses; zero force, and a
        # torque only from the anchors' separation (the position error), (p1 - p2) x F
        tau = r.torque["constraints"]
        F = np.linalg.norm(r.constraint_impulses[0]) / w.dt
        assert np.abs(tau[:3]).max() < 1e-9 * max(1.0, F)
        assert np.linalg.norm(tau[3:6]) <= np.linalg.norm(r.constraint_errors) * F * (1 + 1e-6) \
            + 1e-9 * max(1.0, F)


def test_pin_and_two_axis_equality_move_alike_and_duplicates_change_nothing():
    def run(kind):
        w, r = fourbar(dt=1e-4)  # small position errors: the two rows differ by O(error)
        r.constraints.clear()
        if kind in ("pin", "twice"):
            r.add_pin_constraint("coupler", "rocker", [1.2, 0, 0])
        if kind == "twice":
            r.add_pin_constraint("coupler", "rocker", [1.2, 0, 0])
        if kind == "equality":
            r.add_equality_constraint("coupler", "rocker", [1.2, 0, 0], [[1, 0, 0], [0, 0, 1]])
        for _ in range(5000):
            w.integrate()
        return r.q.copy()

    pin = run("pin")
    assert_close(run("equality"), pin, rtol=1e-9, atol=1e-9)
    assert_close(run("twice"), pin, rtol=1e-9, atol=1e-9)


def test_redundant_parallelogram_and_toggle_pose_stay_finite():
    w = World(0.001)
    r = w.add_articulated_system(load_urdf(robot("parallelogram.urdf")))
    for _ in range(3000):
        w.integrate()
    assert np.all(np.isfinite(r.q)) and np.abs(r.constraint_errors).max() < 1e-9
    # the four-bar driven through its toggle pose (coupler and rocker aligned)
    w, r = fourbar(gravity=(0, 0, 0))
    r.set_generalized_velocity([0, 0, 0])
    r.set_generalized_force([5.0, 0.0, 0.0])
    q0 = r.q[0]
    for _ in range(3000):
        w.integrate()
        assert np.all(np.isfinite(r.u)) and np.abs(r.u).max() < 1e3
    # a crank-rocker (0.4 + 1.2 <= 1.0 + 0.8): each turn of the crank takes the rocker through
    # its two toggle poses, where coupler and rocker align and the loop's rows turn singular
    assert abs(r.q[0] - q0) > 4 * np.pi
    assert np.abs(r.constraint_errors).max() < 1e-3  # closed, at a few rad/s of crank speed


def test_fourbar_statics_by_hand():
    """Held at rest by a torque on the crank: the pin force follows from the rocker's and the
    coupler's moment balances (two-force members are not assumed: every link has weight)."""
    w, r = fourbar()
    # gravity compensation through the crank alone: find the crank torque that holds the loop
    J, e, _ = constraint_rows(r)
    h = r.get_nonlinearities()
    # tau = h - J^T lambda with tau = (tau_c, 0, 0): solve for tau_c and lambda (planar rows)
    rows = np.abs(J).sum(axis=1) > 1e-12
    A = np.column_stack([np.array([1.0, 0, 0]), J[rows].T])
    sol = np.linalg.lstsq(A, h, rcond=None)[0]
    tau_c = sol[0]
    r.set_generalized_force([tau_c, 0.0, 0.0])
    w.integrate()
    assert np.abs(r.u).max() < 1e-9
    F = r.constraint_impulses[0] / w.dt   # on the coupler at the anchor, world frame
    # the rocker: pivot at (1, 0, 0), its tip at the anchor; moments about its pivot balance
    m_r, L_r = 1.6, 0.8
    th_r = r.q[2]
    tip = np.array([1 + L_r * math.cos(th_r), 0, -L_r * math.sin(th_r)])
    com = np.array([1 + L_r / 2 * math.cos(th_r), 0, -L_r / 2 * math.sin(th_r)])
    pivot = np.array([1.0, 0, 0])
    moment = np.cross(tip - pivot, -F) + np.cross(com - pivot, [0, 0, -9.81 * m_r])
    assert abs(moment[1]) < 1e-9
    # the coupler: moments about its joint with the crank
    m_c, L_c = 2.4, 1.2
    th_c = r.q[0] + r.q[1]
    elbow = np.array([0.4 * math.cos(r.q[0]), 0, -0.4 * math.sin(r.q[0])])
    com_c = elbow + np.array([L_c / 2 * math.cos(th_c), 0, -L_c / 2 * math.sin(th_c)])
    moment_c = np.cross(tip - elbow, F) + np.cross(com_c - elbow, [0, 0, -9.81 * m_c])
    assert abs(moment_c[1]) < 1e-9
    assert np.linalg.norm(F) > 1.0


def test_runge_kutta_4_replaced_while_constrained():
    w, r = fourbar()
    r.set_integration_scheme("RUNGE_KUTTA_4")
    assert r.effective_scheme() == "SEMI_IMPLICIT"


def test_inverse_dynamics_takes_the_constraint_loads():
    """The loop's force enters the joint wrenches as a load on the two bodies: what a joint
    transmits along its axis is the step's generalized force less the constraints' share."""
    w, r = fourbar()
    r.set_compute_inverse_dynamics(True)
    r.set_generalized_force([2.0, 0.0, 0.0])
    for _ in range(50):
        w.integrate()
        for j in r.model.moving_joints:
            i = j.u_slice.start
            assert r.get_joint_actuation(j.name) == pytest.approx(
                r.torque["total"][i] - r.torque["constraints"][i], rel=1e-8, abs=1e-8)
    assert np.abs(r.torque["constraints"]).max() > 1.0


def test_gripper_follower_tracks_and_the_log_shows_the_coupling(tmp_path):
    import h5py
    from click.testing import CliRunner
    from conftest import SCENARIOS
    from raisimcli.cli.main import cli
    out = tmp_path / "g.h5"
    res = CliRunner().invoke(cli, ["run", f"{SCENARIOS}/gripper.toml", "-q", "-o", str(out)])
    assert res.exit_code == 0, res.output
    with h5py.File(out) as f:
        g = f["robots/gripper"]
        q = g["q"][()]
        assert np.abs(q[:, 1] - q[:, 0]).max() < 1e-9          # multiplier 1, offset 0
        assert np.ptp(q[:, 0]) > 0.01                           # and it moved
        assert [n.decode() for n in g["constraint_names"][()]] == ["mimic_right_finger_joint"]
        imp = g["constraints/impulse"][()]
        assert imp.shape == (2000, 1, 3) and np.abs(imp[:, 0, 0]).max() > 0


def test_constraint_api_errors():
    from raisimcli.errors import StateError
    w = World(0.001)
    r = w.add_articulated_system(load_urdf(robot("arm7.urdf")))
    with pytest.raises(StateError, match="cannot mimic itself"):
        r.add_mimic_constraint("a2", "a2")
    with pytest.raises(StateError, match="parallel"):
        r.add_equality_constraint("link1", "link3", [0, 0, 0], [[1, 0, 0], [2, 0, 0]])
    with pytest.raises(StateError, match="one or two axes"):
        r.add_equality_constraint("link1", "link3", [0, 0, 0], np.eye(3))
    with pytest.raises(StateError, match="no link or joint named"):
        r.add_pin_constraint("link1", "nowhere", [0, 0, 0])
    with pytest.raises(StateError, match="one rigid body"):
        r.add_pin_constraint("link7", "tool", [0, 0, 0])
    q = World(0.001).add_articulated_system(load_urdf(robot("spherical_chain.urdf")))
    with pytest.raises(StateError, match="revolute, continuous or prismatic"):
        q.add_mimic_constraint("elbow", "ball")


@pytest.mark.parametrize("dependent,sparse", [(0, False), (1, False), (2, False), (0, True),
                                              (1, True)])
def test_the_compiled_elimination_is_the_linalg_calls_composed(dependent, sparse):
    # Elimination's algebra in one compiled call: the bits of its equations written with
    # linalg's calls one by one (M~^-1 J^T, D, the independent rows of a pivoted Cholesky at
    # 1e-10 of D's largest diagonal entry, D's factor, lambda_0 and u_0), with rows that are
    # all independent, one and two dependent rows; and rows of mimics' kind (e_f - m e_l,
    # zeros before column 3: the compiled call's solve starts there and its products skip
    # the zeros, for the same bits as the full sums), with a dependent one
    from raisimcli.linalg import Cholesky, independent_rows, matmul
    from raisimcli.physics.constraints import RANK_TOLERANCE, Elimination
    from raisimcli.physics.step.implicit import Factorized
    rng = np.random.default_rng(17 + dependent)
    nv = 9
    for _ in range(30):
        A = rng.standard_normal((nv, nv))
        factor = Factorized(A @ A.T + nv * np.eye(nv))
        J = rng.standard_normal((5 - dependent, nv))
        if sparse:  # followers 3, 4, ... of one leader (8): +1 and -m a row
            J = np.zeros((5 - dependent, nv))
            for r in range(len(J)):
                J[r, 3 + r], J[r, 8] = 1.0, -rng.uniform(0.5, 2.0)
        for d in range(dependent):  # a row that is a combination of two others
            J = np.vstack([J[:2], J[0] + 0.5 * J[1 + d], J[2:]])
        e, u_star, beta_ = rng.standard_normal(len(J)), rng.standard_normal(nv), 300.0
        got = Elimination(J, e, factor, u_star, beta_)
        MinvJT = factor.solve(J.T)
        D = matmul(J, MinvJT)
        kept = independent_rows(D, RANK_TOLERANCE * float(np.max(np.diag(D))))
        assert len(kept) == len(J) - dependent
        D_chol = Cholesky(D[np.ix_(kept, kept)])
        lam0 = D_chol.solve(-beta_ * e[kept] - matmul(J[kept], u_star))
        lambda0 = np.zeros(len(J))
        lambda0[kept] = lam0
        u0 = u_star + matmul(MinvJT[:, kept], lam0)
        assert got.MinvJT_all.tobytes() == MinvJT.tobytes()
        assert got.kept.tolist() == kept.tolist()
        assert got.J.tobytes() == J[kept].tobytes()
        assert np.ascontiguousarray(got.MinvJT).tobytes() == MinvJT[:, kept].tobytes()
        assert got.D_chol.L.tobytes() == D_chol.L.tobytes() and got.D_chol.info == D_chol.info
        assert got.lambda0.tobytes() == lambda0.tobytes() and got.u0.tobytes() == u0.tobytes()


@pytest.mark.parametrize("urdf", ["fourbar.urdf", "fivebar_leg.urdf", "parallelogram.urdf",
                                  "gripper.urdf", "fourbar_equality"])
def test_the_compiled_loop_rows_are_the_python_path_s(urdf):
    # the rows, errors, axes and points of pins and equalities in one compiled call each
    # (_loop_rows): the bits of constraint_rows_in_python (frame getters, point Jacobians and
    # linalg's products one after the other), mimics among them, at random states
    from raisimcli.physics.constraints import constraint_rows, constraint_rows_in_python
    from states import random_state
    w = World(0.001)
    r = w.add_articulated_system(load_urdf(robot("fourbar.urdf" if urdf == "fourbar_equality"
                                                 else urdf)))
    if urdf == "fourbar_equality":  # one and two axes, and a pin with the world
        r.add_equality_constraint("coupler", "rocker", [1.2, 0, 0], [[1, 0, 0], [0, 0.6, 0.8]])
        r.add_equality_constraint("crank", "rocker", [0.3, 0.1, 0], [[0, 1, 0]])
        r.add_pin_constraint("rocker", "world", [0.2, 0, 0])
    assert r.constraints
    rng = np.random.default_rng(4)
    for _ in range(25):
        q, u = random_state(r.model, rng)
        r.set_state(q, u)
        J, e, spans = constraint_rows(r)
        J_py, e_py, spans_py = constraint_rows_in_python(r)
        assert J.tobytes() == J_py.tobytes() and e.tobytes() == e_py.tobytes()
        for (a0, a1, axes, points), (b0, b1, axes_py, points_py) in zip(spans, spans_py):
            assert (a0, a1) == (b0, b1)
            if axes_py is None:
                assert axes is None and points is None
                continue
            assert axes.tobytes() == np.ascontiguousarray(axes_py).tobytes()
            assert all(p.tobytes() == p_py.tobytes() for p, p_py in zip(points, points_py))


@pytest.mark.parametrize("urdf", ["gripper.urdf", "panda", "talos"])
def test_mimics_rows_and_elimination_in_one_call_are_the_two_calls(urdf):
    # Elimination.of_mimics (the rows of mimic constraints and their elimination in one
    # compiled call) against the rows of constraint_rows_in_python (one numpy row each) given
    # to Elimination: every result with the same bits, at random states, M~ of the state and
    # a random u*; Talos has twelve mimics, Panda one
    import os
    from raisimcli.physics.constraints import Elimination, beta, constraint_rows_in_python
    from raisimcli.physics.step.implicit import Factorized
    from states import random_state
    from test_real_urdfs import ERD
    path = {"panda": os.path.join(ERD, "panda_description", "urdf", "panda.urdf"),
            "talos": os.path.join(ERD, "talos_data", "robots", "talos_full_v2.urdf")}
    r = World(0.001).add_articulated_system(load_urdf(path.get(urdf) or robot(urdf)))
    plan = r.mimics_only()
    assert plan is not None and len(plan[0]) == len(r.constraints) >= 1
    rng = np.random.default_rng(8)
    for _ in range(10):
        q, u = random_state(r.model, rng)
        r.set_state(q, u)
        factor = Factorized(r.get_mass_matrix() + np.diag(rng.uniform(0.0, 0.1, r.nv)))
        u_star, beta_ = rng.standard_normal(r.nv), beta(rng.uniform(0.0, 2.0), 0.001)
        got = Elimination.of_mimics(r.q, plan, factor, u_star, beta_)
        J, e, _ = constraint_rows_in_python(r)
        want = Elimination(J, e, factor, u_star, beta_)
        assert got.e_all.tobytes() == e.tobytes()
        for name in ("J_all", "MinvJT_all", "kept", "J", "MinvJT", "lambda0", "u0"):
            assert getattr(got, name).tobytes() == getattr(want, name).tobytes(), name
        assert got.D_chol.L.tobytes() == want.D_chol.L.tobytes()
        assert got.J_all.tobytes() == J.tobytes()  # (the rows themselves too)


def test_the_constraint_report_is_each_constraint_s_axes_times_its_impulses():
    # constraint_impulses: per pin or equality, its world axes^T times its rows' impulses (the
    # sum over the axes in their order, from 0.0, written out here), and (lambda, 0, 0) for a
    # mimic; constraint_errors: its rows' errors then zeros. The four-bar's pin and two
    # equalities (two axes and one), under PD through the pipeline (the compiled report),
    # compared at every step
    w = World(0.001)
    r = w.add_articulated_system(load_urdf(robot("fourbar.urdf")))
    r.add_equality_constraint("coupler", "rocker", [1.2, 0, 0], [[1, 0, 0], [0, 0.6, 0.8]])
    r.add_equality_constraint("crank", "rocker", [0.3, 0.1, 0], [[0, 1, 0]])
    q_ref = r.get_generalized_coordinate() + 0.2
    r.set_pd_gains(np.full(r.nv, 30.0), np.full(r.nv, 1.0))
    r.set_pd_target(q_ref, np.zeros(r.nv))
    for _ in range(50):
        w.integrate()
        st = r.step_scratch["stage"].stage
        lam, e = st.elimination.impulses_solved, st.elimination.e_all
        assert len(st.constraint_spans) == len(r.constraints) == 3
        for c, (r0, r1, axes, _) in enumerate(st.constraint_spans):
            want = [0.0, 0.0, 0.0]
            for i in range(3):
                s = 0.0
                for a in range(r1 - r0):
                    s += axes[a, i] * lam[r0 + a]
                want[i] = s
            assert r.constraint_impulses[c].tolist() == want
            assert r.constraint_errors[c].tolist() == list(e[r0:r1]) + [0.0] * (3 - (r1 - r0))
    assert np.abs(r.constraint_impulses).max() > 0.0
