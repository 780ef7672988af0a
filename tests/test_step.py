"""The simulation step (spec steps 1-6) against independent references: the spec's equations
worked by hand, analytic solutions, the scalar pendulum recurrence, conservation and convergence."""

import math

import numpy as np
import pytest

from cases import arm, quadruped
from conftest import assert_close, robot
from models import slider_urdf, wheel_urdf, world_with
from raisimcli.errors import RaisimcliError
from raisimcli.model import load_urdf
from raisimcli.physics import World
from raisimcli.physics.step import pipeline


def quadruped_world(dt=0.001):
    w = World(dt)
    return w, w.add_articulated_system(load_urdf(robot("quadruped.urdf")))


# ------------------------------------------------------------------------------------------------
# the equation of motion of the step balances term by term (spec step 5)
# ------------------------------------------------------------------------------------------------
def test_step_balances_term_by_term_with_everything_active():
    # the quadruped, with more friction on LH_HAA so that friction can hold it against the
    # reactions of the other legs
    text = open(robot("quadruped.urdf")).read()
    head, tail = text.split('<joint name="LH_HAA"', 1)
    tail = tail.replace('friction="0.2"', 'friction="60.0"', 1)
    from raisimcli.model import load_urdf_string
    w = World(0.002)
    r = w.add_articulated_system(load_urdf_string(head + '<joint name="LH_HAA"' + tail,
                                                  path=robot("quadruped.urdf")))
    names = list(r.dof_names)
    q = r.get_generalized_coordinate()
    q[2] = 1.0
    i_lim = names.index("RF_KFE")
    q[r.model.joint("RF_KFE").q_slice] = 0.35           # beyond its upper limit 0.3
    u = np.zeros(r.nv)
    u[i_lim] = 2.0                                       # moving further into it
    u[names.index("LF_HFE")] = 1.5                       # the hip turns the coupled knee motor
    u[names.index("LF_KFE")] = -3.0
    r.set_state(q, u)
    kp = np.full(r.nv, 400.0)
    kd = np.full(r.nv, 8.0)
    r.set_pd_gains(kp, kd)
    q_ref = q.copy()
    q_ref[7:] += 0.5
    r.set_pd_target(q_ref, np.zeros(r.nv))
    tau_ff = np.zeros(r.nv)
    tau_ff[6:] = 30.0                                    # with the PD: beyond the 40 N m effort
    # a joint whose friction holds it: at rest, at its target, no command, a small load
    i_hold = names.index("LH_HAA")
    q_ref[r.model.joint("LH_HAA").q_slice] = q[r.model.joint("LH_HAA").q_slice]
    r.set_pd_target(q_ref, np.zeros(r.nv))
    tau_ff[i_hold] = 0.0
    r.set_generalized_force(tau_ff)
    tau_a = np.zeros(len(r.model.actuators))
    tau_a[:] = 5.0
    tau_a[r.transmission.names.index("LF_KFE_belt_drive")] = 1000.0   # far beyond the region
    tau_a[r.transmission.names.index("LH_HAA_actuator")] = 0.0       # the held joint
    r.set_actuator_torques(tau_a)
    r.add_spring("LH_HFE", 50.0, [0.2])
    r.set_external_force("base", [10.0, -5.0, 30.0], point=[0.2, 0.1, 0.05])
    r.set_external_torque("RF_thigh", [0.0, 2.0, 0.0])
    r.integrate1(w.dt)
    M = r.get_mass_matrix().copy()
    h = r.get_nonlinearities().copy()
    u0 = r.get_generalized_velocity()
    r.integrate2(w.dt)
    du = r.u - u0
    table = r.torque
    lhs = M @ du / w.dt + h
    assert_close(table["total"], lhs, rtol=1e-9, atol=1e-9 * np.abs(lhs).max(), what="balance")
    total = sum(table[s] for s in ("feedforward_pd", "damping", "actuators", "springs",
                                   "external", "joint_friction", "joint_limits"))
    assert_close(table["total"], total, rtol=1e-14, atol=1e-12)

    # and everything was really active:
    cmd_explicit = table["feedforward_pd"] + (0.5 * kd + 0.25 * w.dt * kp) * du
    assert np.any(np.isclose(np.abs(cmd_explicit[6:]), 40.0, rtol=1e-12))    # effort clamp
    st = r.get_actuator_states()
    k = r.transmission.names.index("LF_KFE_belt_drive")
    assert st.applied[k] == st.tau_max[k] < st.commanded[k]                   # region bound
    assert st.motor_speed[k] == pytest.approx(9 * u0[names.index("LF_KFE")]
                                              + 9 * u0[names.index("LF_HFE")])
    assert table["actuators"][names.index("LF_HFE")] != 0                     # coupling
    assert table["joint_limits"][i_lim] < 0 and r.u[i_lim] == pytest.approx(0, abs=1e-12)
    bound = (60.0 + 0.1) * w.dt                          # joint + output friction, times dt
    held = table["joint_friction"][i_hold] * w.dt
    assert 0 < abs(held) < bound and abs(r.u[i_hold]) < 1e-12   # friction holds it
    assert table["springs"][names.index("LH_HFE")] != 0
    assert np.abs(table["external"][:6]).max() > 1


def test_one_joint_step_worked_by_hand():
    """Spec steps 1-5 for a 1-DoF wheel, computed here from the spec's formulas with scalars."""
    I, b, kp, kd, ks, qs, eff = 0.5, 0.3, 200.0, 4.0, 30.0, 0.1, 5.0
    dt = 0.01
    w, r = world_with(wheel_urdf(I, limit=f'<limit effort="{eff}" velocity="100"/>',
                                 dynamics=f'<dynamics damping="{b}" stiffness="{ks}" '
                                          f'spring_mount="{qs}"/>'), dt=dt)
    q0, u0, qref, uref, ff = 0.4, -1.2, 1.0, 0.5, 2.0
    r.set_state([q0], [u0])
    r.set_pd_gains([kp], [kd])
    r.set_pd_target([qref], [uref])
    r.set_generalized_force([ff])
    w.integrate()
    # by hand
    tau_cmd = min(max(ff + kp * (qref - q0) + kd * (uref - u0), -eff), eff)
    tau_exp = tau_cmd - b * u0 + ks * (qs - q0)
    w_diag = dt / 2 * (b + kd) + dt ** 2 / 4 * (kp + ks)
    u1 = u0 + dt * tau_exp / (I + w_diag)
    q1 = q0 + dt * u1
    assert r.u[0] == pytest.approx(u1, rel=1e-14)
    assert r.q[0] == pytest.approx(q1, rel=1e-14)
    du = u1 - u0
    assert r.torque["feedforward_pd"][0] == pytest.approx(tau_cmd - (kd / 2 + dt / 4 * kp) * du)
    assert r.torque["damping"][0] == pytest.approx(-0.5 * b * (u0 + u1))
    assert r.torque["springs"][0] == pytest.approx(ks * (qs - q0) - dt / 4 * ks * du)
    # the applied PD torque exceeds the clamp by the implicit part, as the spec says
    assert abs(r.torque["feedforward_pd"][0]) == pytest.approx(
        eff + (kd / 2 + dt / 4 * kp) * abs(du) if tau_cmd * du < 0 else
        abs(eff - (kd / 2 + dt / 4 * kp) * abs(du)))


# ------------------------------------------------------------------------------------------------
# the spec's pendulum example, integration schemes
# ------------------------------------------------------------------------------------------------
def _scalar_pendulum(scheme, g=9.81, length=1.0, dt=1e-3, n=20000, theta0=math.pi / 4):
    """The spec's update rule for a scalar undamped pendulum (independent of the simulator)."""
    th, om = theta0, 0.0
    out = np.empty((n, 2))
    for k in range(n):
        om1 = om + dt * (-g / length * math.sin(th))
        ub = {"SEMI_IMPLICIT": om1, "TRAPEZOID": 0.5 * (om + om1), "EULER": om}[scheme]
        th, om = th + dt * ub, om1
        out[k] = th, om
    return out


@pytest.mark.parametrize("scheme", ["SEMI_IMPLICIT", "TRAPEZOID", "EULER"])
def test_pendulum_energy_by_scheme(scheme):
    w = World(1e-3)
    r = w.add_articulated_system(load_urdf(robot("pendulum.urdf")))
    r.set_integration_scheme(scheme)
    r.set_state([math.pi / 4], [0.0])
    n = 20000
    traj = np.empty((n, 2))
    energy = []                                   # every 10th step and the last
    E0 = r.get_kinetic_energy() + r.get_potential_energy()
    for k in range(n):
        w.integrate()
        traj[k] = r.q[0], r.u[0]
        if k % 10 == 9:
            energy.append(r.get_kinetic_energy() + r.get_potential_energy())
    ref = _scalar_pendulum(scheme)
    assert_close(traj, ref, rtol=1e-8, atol=1e-9, what="trajectory vs scalar recurrence")
    rel = (np.array(energy) - E0) / (9.81 * (1 - math.cos(math.pi / 4)))
    amp = np.abs(traj[-2500:, 0]).max() / (math.pi / 4) - 1
    if scheme == "SEMI_IMPLICIT":
        assert abs(amp) < 1e-3
        assert np.abs(rel).max() < 0.0016            # about +-0.15 %, oscillating
        assert abs(rel[-1]) < 0.0016                  # no growth
    elif scheme == "TRAPEZOID":
        assert 0.08 < rel[-1] < 0.10                  # about 9 %
        assert 0.04 < amp < 0.06                      # about 5 %
    else:
        assert 0.17 < rel[-1] < 0.21                  # about twice the trapezoid's growth
        assert 0.08 < amp < 0.11


def test_runge_kutta_4_converges_at_fourth_order():
    def final(dt, T=1.0):
        w = World(dt)
        r = w.add_articulated_system(load_urdf(robot("double_pendulum.urdf")))
        r.set_integration_scheme("RUNGE_KUTTA_4")
        r.set_state([1.0, -0.5], [0.3, 0.0])
        for _ in range(int(round(T / dt))):
            w.integrate()
        return np.r_[r.q, r.u]

    ref = final(1e-4)
    e1 = np.abs(final(0.02) - ref).max()
    e2 = np.abs(final(0.01) - ref).max()
    assert 13 < e1 / e2 < 19, e1 / e2


def test_integrate1_then_integrate2_equals_integrate():
    w1, r1 = quadruped_world()
    w2, r2 = quadruped_world()
    for r in (r1, r2):
        q = r.get_generalized_coordinate()
        q[7:] = 0.2
        r.set_state(q, np.random.default_rng(1).normal(size=r.nv))
        r.set_pd_gains(np.full(r.nv, 50.0), np.full(r.nv, 1.0))
    for _ in range(5):
        w1.integrate()
        q_start = r2.get_generalized_coordinate()
        w2.integrate1()
        # quantities read between the two are those of the step's start
        assert np.array_equal(r2.get_generalized_coordinate(), q_start)
        M_start = r2.get_mass_matrix().copy()
        w2.integrate2()
        assert np.array_equal(r1.q, r2.q) and np.array_equal(r1.u, r2.u)
        r_ref = World(0.001).add_articulated_system(r2.model)
        r_ref.set_state(q_start, np.zeros(r2.nv))
        assert_close(M_start, r_ref.get_mass_matrix(), rtol=1e-14, atol=1e-14)


def test_controller_between_integrate1_and_integrate2_acts_on_this_step():
    w, r = world_with(wheel_urdf(0.5), dt=0.01)
    w.integrate1()
    r.set_generalized_force([1.0])
    w.integrate2()
    assert r.u[0] == pytest.approx(0.01 * 1.0 / 0.5, rel=1e-14)


def test_determinism_bit_identical():
    def run():
        w, r = quadruped_world()
        q = r.get_generalized_coordinate()
        q[7:] = np.linspace(-0.3, 0.3, 12)
        r.set_state(q, np.linspace(-1, 1, 18))
        r.set_pd_gains(np.full(18, 80.0), np.full(18, 2.0))
        r.set_actuator_torques(np.linspace(-3, 3, 12))
        for _ in range(200):
            w.integrate()
        return r.q.copy(), r.u.copy(), {k: v.copy() for k, v in r.torque.items()}

    a, b = run(), run()
    assert a[0].tobytes() == b[0].tobytes() and a[1].tobytes() == b[1].tobytes()
    assert all(a[2][k].tobytes() == b[2][k].tobytes() for k in a[2])


# ------------------------------------------------------------------------------------------------
# implicit PD, damping
# ------------------------------------------------------------------------------------------------
def test_implicit_pd_stays_stable_where_explicit_diverges():
    kp, dt, m = 1e6, 0.01, 1.0
    kd = 2 * math.sqrt(kp * m)
    w, r = world_with(slider_urdf(m), dt=dt)
    r.set_pd_gains([kp], [kd])
    r.set_pd_target([0.1], [0.0])
    for _ in range(300):
        w.integrate()
        assert abs(r.q[0]) < 1.0
    assert r.q[0] == pytest.approx(0.1, abs=1e-6) and abs(r.u[0]) < 1e-5

    # the same gains explicitly (w = 0): a hand-written PD through the feedforward force
    w2, r2 = world_with(slider_urdf(m), dt=dt)
    diverged_at = None
    for k in range(20):
        r2.set_generalized_force([kp * (0.1 - r2.q[0]) - kd * r2.u[0]])
        w2.integrate()
        if abs(r2.q[0]) > 1e3:
            diverged_at = k
            break
    assert diverged_at is not None and diverged_at < 10


def test_damping_follows_trapezoidal_recurrence_and_terminal_velocity():
    I, b, tau, dt = 0.5, 2.0, 3.0, 0.01
    w, r = world_with(wheel_urdf(I, dynamics=f'<dynamics damping="{b}"/>'), dt=dt)
    r.set_generalized_force([tau])
    u0 = 0.0
    for _ in range(2000):
        w.integrate()
        u1 = r.u[0]
        # I (u1 - u0)/dt = tau - b (u0 + u1)/2
        assert I * (u1 - u0) / dt == pytest.approx(tau - b * (u0 + u1) / 2, rel=1e-12, abs=1e-12)
        u0 = u1
    assert r.u[0] == pytest.approx(tau / b, rel=1e-10)


# ------------------------------------------------------------------------------------------------
# joint friction, limits
# ------------------------------------------------------------------------------------------------
def test_friction_holds_below_and_slides_above():
    I, tc, dt = 0.5, 2.0, 0.001
    w, r = world_with(wheel_urdf(I, dynamics=f'<dynamics friction="{tc}"/>'), dt=dt)
    r.set_generalized_force([1.9])
    for _ in range(1000):
        w.integrate()
    assert abs(r.u[0]) <= 1e-15 and abs(r.q[0]) <= 1e-15
    assert r.torque["joint_friction"][0] == pytest.approx(-1.9, rel=1e-12)

    r.set_generalized_force([5.0])
    w.integrate()
    u_prev = r.u[0]
    for _ in range(100):
        w.integrate()
        assert (r.u[0] - u_prev) / dt == pytest.approx((5.0 - tc) / I, rel=1e-9)
        u_prev = r.u[0]


def test_sliding_joint_stops_without_chattering():
    I, tc, dt = 0.5, 2.0, 0.001
    w, r = world_with(wheel_urdf(I, dynamics=f'<dynamics friction="{tc}"/>'), dt=dt)
    r.set_state([0.0], [3.0])
    us = []
    for _ in range(1500):
        w.integrate()
        us.append(r.u[0])
    us = np.array(us)
    stop = np.argmax(us <= 0)
    assert stop * dt == pytest.approx(3.0 * I / tc, abs=2 * dt)   # t = u0 I / tau_c
    assert np.all(us >= -1e-15)                                   # never reverses
    assert np.all(np.abs(us[stop:]) <= 1e-15)                     # and stays stopped


def test_output_friction_of_an_actuator_adds_to_the_bound():
    act = ('<actuator joint="spin" gear_ratio="1" output_friction="1.5"><motor resistance="1" '
           'torque_constant="1" velocity_constant="1" bus_voltage="10"/></actuator>')
    w, r = world_with(wheel_urdf(0.5, dynamics='<dynamics friction="1.0"/>', actuator=act))
    r.set_generalized_force([2.4])
    for _ in range(100):
        w.integrate()
    assert r.u[0] == 0.0 or abs(r.u[0]) < 1e-15                  # 2.4 < 1.0 + 1.5
    r.set_generalized_force([2.6])
    w.integrate()
    w.integrate()
    assert r.u[0] > 0


def test_position_limit_is_a_hard_stop():
    dt = 0.001
    w, r = world_with(slider_urdf(1.0, limit='<limit lower="-0.1" upper="0.2" effort="100" '
                                              'velocity="50"/>'), dt=dt)
    r.set_generalized_force([20.0])
    qs, us = [], []
    for _ in range(1000):
        w.integrate()
        qs.append(r.q[0])
        us.append(r.u[0])
    qs, us = np.array(qs), np.array(us)
    v_max = np.abs(us).max()
    assert qs.max() <= 0.2 + dt * v_max + 1e-12            # no tunnelling beyond one step
    hit = np.argmax(qs > 0.2)
    assert np.all(us[hit:] >= -1e-12)                       # no bounce
    assert np.all(np.abs(us[hit + 1:]) < 1e-12)             # stopped there
    assert r.torque["joint_limits"][0] == pytest.approx(-20.0, rel=1e-9)


def test_joint_rows_follow_each_joints_state_step_after_step():
    # the rows of spec step 4 from the rules worked per joint, for states that come and go (the
    # table keeps the rows of each combination of joint states it has seen, so a stale set of
    # rows would show here): outside the range a one-sided position limit, else beyond the
    # velocity limit a one-sided velocity limit, and a friction row on every joint
    w, r = quadruped_world()
    table = r.joint_rows
    rng = np.random.default_rng(3)
    # six patterns of (position region, velocity region) per joint, each seen many times with
    # other values inside the regions
    patterns = rng.integers(0, 3, size=(6, 2, len(table.names)))
    for step in range(300):
        dt = (0.001, 0.002)[step % 2]
        q = r.get_generalized_coordinate()
        u = rng.standard_normal(r.nv) * 10.0
        where, speed = patterns[rng.integers(0, 6)]
        for k, name in enumerate(table.names):
            j = r.model.joint(name)
            q[j.q_slice] = (j.lower - rng.uniform(0.01, 1), j.upper + rng.uniform(0.01, 1),
                            rng.uniform(j.lower, j.upper))[where[k]]
            fast = j.velocity + rng.uniform(0.01, 5)
            u[j.u_slice] = (-fast, fast, rng.uniform(-0.99, 0.99) * j.velocity)[speed[k]]
        expected = []  # (key, target, lo, hi, column)
        for name in table.names:
            j = r.model.joint(name)
            qj, uj = q[j.q_slice][0], u[j.u_slice][0]
            if qj < j.lower:
                expected.append(((r.name, "position_limit", name), 0.0, 0.0, np.inf, j.u_slice.start))
            elif qj > j.upper:
                expected.append(((r.name, "position_limit", name), 0.0, -np.inf, 0.0, j.u_slice.start))
        for name in table.names:
            j = r.model.joint(name)
            qj, uj = q[j.q_slice][0], u[j.u_slice][0]
            if j.lower <= qj <= j.upper and abs(uj) > j.velocity:
                up = uj > 0
                expected.append(((r.name, "velocity_limit", name), j.velocity if up else -j.velocity,
                                 -np.inf if up else 0.0, 0.0 if up else np.inf, j.u_slice.start))
        for name in table.names:
            j = r.model.joint(name)
            # the URDF's joint friction and its actuator's output friction
            bound = (j.friction + r.transmission.output_friction[j.u_slice.start]) * dt
            expected.append(((r.name, "friction", name), 0.0, -bound, bound, j.u_slice.start))
        rows = table.rows(q, u, dt)
        assert rows.key == [e[0] for e in expected]
        assert np.array_equal(rows.target, [e[1] for e in expected])
        assert np.array_equal(rows.lo, [e[2] for e in expected])
        assert np.array_equal(rows.hi, [e[3] for e in expected])
        J = np.zeros((len(expected), r.nv))
        J[np.arange(len(expected)), [e[4] for e in expected]] = 1.0
        assert np.array_equal(rows.J, J)
    assert len(table._built) == 12  # six patterns at two time steps, each built once


def test_velocity_limit_caps_speed():
    w, r = world_with(slider_urdf(1.0, limit='<limit effort="100" velocity="0.5"/>'))
    r.set_generalized_force([10.0])
    for _ in range(500):
        w.integrate()
        assert abs(r.u[0]) <= 0.5 + 1e-12
    assert r.u[0] == pytest.approx(0.5, rel=1e-12)


# ------------------------------------------------------------------------------------------------
# clamps: effort limit vs motor operating region (spec steps 1-2, "Actuators")
# ------------------------------------------------------------------------------------------------
MOTOR = '<motor resistance="0.5" torque_constant="0.1" velocity_constant="20" bus_voltage="24" {peak}/>'


def _actuated_wheel(peak="", gear=10.0, effort=1.0):
    act = f'<actuator joint="spin" gear_ratio="{gear}">{MOTOR.format(peak=peak)}</actuator>'
    return world_with(wheel_urdf(0.5, limit=f'<limit effort="{effort}" velocity="1000"/>',
                                 actuator=act), dt=0.001)


def test_effort_limit_bounds_only_feedforward_and_pd():
    w, r = _actuated_wheel()
    r.set_generalized_force([50.0])          # clamped to the 1 N m effort
    r.set_actuator_torques([30.0])           # not clipped by the effort: 3 N m at the motor
    w.integrate()
    assert r.torque["feedforward_pd"][0] == pytest.approx(1.0, rel=1e-14)
    assert r.torque["actuators"][0] == pytest.approx(30.0, rel=1e-14)
    assert r.get_generalized_force()[0] == pytest.approx(31.0, rel=1e-14)


def test_motor_region_by_hand_stall_backemf_peak_overspeed():
    R, Kt, Kv, V, G = 0.5, 0.1, 20.0, 24.0, 10.0
    stall = Kt * V / R                       # 4.8 N m
    b = Kt / (R * Kv)                        # 0.01 N m s
    for omega_joint, peak, tau_cmd in [(0.0, None, 100.0), (10.0, None, 100.0),
                                       (10.0, None, -100.0), (0.0, 2.0, 100.0),
                                       (60.0, None, 100.0), (60.0, None, -100.0),
                                       (5.0, None, 12.0)]:
        w, r = _actuated_wheel(peak=f'peak_torque="{peak}"' if peak else "")
        r.set_state([0.0], [omega_joint])
        r.set_actuator_torques([tau_cmd])
        w.integrate()
        wm = G * omega_joint
        lo, hi = -stall - b * wm, stall - b * wm
        if peak:
            lo, hi = max(min(lo, peak), -peak), max(min(hi, peak), -peak)
        tau_m = min(max(tau_cmd / G, lo), hi)
        st = r.get_actuator_states()
        assert st.motor_speed[0] == pytest.approx(wm)
        assert (st.tau_min[0], st.tau_max[0]) == pytest.approx((lo, hi))
        assert st.applied[0] == pytest.approx(tau_m)
        assert r.torque["actuators"][0] == pytest.approx(G * tau_m)
    # beyond the no-load speed K_v V = 480 rad/s of the motor, even full forward command brakes
    w, r = _actuated_wheel()
    r.set_state([0.0], [60.0])               # 600 rad/s at the motor
    r.set_actuator_torques([100.0])
    w.integrate()
    assert r.torque["actuators"][0] < 0
    # with the region switched off, tau_m = tau_a / G
    w, r = _actuated_wheel()
    r.set_motor_operating_region_enforced(False)
    r.set_actuator_torques([100.0])
    w.integrate()
    assert r.torque["actuators"][0] == pytest.approx(100.0)


def test_motor_region_does_not_clip_pd():
    w, r = _actuated_wheel(effort=1000.0)
    r.set_pd_gains([1000.0], [0.0])
    r.set_pd_target([1.0], [0.0])
    w.integrate()
    # tau_cmd = 1000 N m, far beyond the motor's 48 N m at the joint
    assert r.torque["feedforward_pd"][0] + (0.25 * 0.001 * 1000.0) * r.u[0] == \
        pytest.approx(1000.0, rel=1e-12)


def test_knee_motor_turned_by_hip_through_coupling():
    w, r = quadruped_world()
    names = list(r.dof_names)
    hip, knee = names.index("LF_HFE"), names.index("LF_KFE")
    u = np.zeros(r.nv)
    u[hip], u[knee] = 4.0, 1.0
    q = r.get_generalized_coordinate()
    q[2] = 1
    r.set_state(q, u)
    tau_a = np.zeros(12)
    k = r.transmission.names.index("LF_KFE_belt_drive")
    tau_a[k] = 18.0
    r.set_actuator_torques(tau_a)
    w.integrate()
    st = r.get_actuator_states()
    wm = 9 * 1.0 + 9 * 4.0                    # G u_knee + r u_hip
    assert st.motor_speed[k] == pytest.approx(wm)
    stall, b = 0.08 * 48 / 0.2, 0.08 / (0.2 * 12.5)
    tau_m = min(max(18.0 / 9, max(-stall - b * wm, -4.0)), min(stall - b * wm, 4.0))
    assert st.applied[k] == pytest.approx(tau_m)
    assert r.torque["actuators"][knee] == pytest.approx(9 * tau_m)
    assert r.torque["actuators"][hip] == pytest.approx(9 * tau_m)   # r_c tau_m on the hip


def test_floating_base_gains_forced_to_zero_and_quaternion_target():
    w, r = quadruped_world()
    r.set_pd_gains(np.full(18, 7.0), np.full(18, 3.0))
    assert np.all(r.kp[:6] == 0) and np.all(r.kd[:6] == 0) and np.all(r.kp[6:] == 7)
    from raisimcli.errors import StateError
    with pytest.raises(StateError, match="19 entries"):
        r.set_pd_target(np.zeros(18), np.zeros(18))


def test_spherical_pd_error_is_rotation_vector_in_parent_joint_frame():
    """For the ball joint, tau_PD = kp * (rotation vector of q^-1 q_ref, expressed in the parent's
    joint frame). Check with a target 0.3 rad about the parent's x from identity."""
    w = World(0.001, (0, 0, 0))
    r = w.add_articulated_system(load_urdf(robot("spherical_chain.urdf")))
    r.springs.clear()
    r._spring_vectors()
    r.set_joint_damping(np.zeros(4))
    q = r.get_generalized_coordinate()
    q[0:4] = [math.cos(0.25), 0, 0, math.sin(0.25)]   # 0.5 rad about z
    r.set_state(q, np.zeros(4))
    target = q.copy()
    # q_ref = q * exp(0.3 x_child): in the parent's frame the error is Rz(0.5) (0.3, 0, 0)
    target[0:4] = [math.cos(0.25) * math.cos(0.15), math.cos(0.25) * math.sin(0.15),
                   math.sin(0.25) * math.sin(0.15), math.sin(0.25) * math.cos(0.15)]
    r.set_pd_gains(np.array([10.0, 10, 10, 0]), np.zeros(4))
    r.set_pd_target(target, np.zeros(4))
    w.integrate()
    expected = 10 * 0.3 * np.array([math.cos(0.5), math.sin(0.5), 0.0])
    explicit = r.torque["feedforward_pd"][:3] + 0.25 * 0.001 * 10 * (r.u[:3])
    assert_close(explicit, expected, rtol=1e-12, atol=1e-12)


def test_runge_kutta_4_reports_the_last_stage_actuator_state():
    """Spec step 6: with RUNGE_KUTTA_4 the actuator states describe the last stage, whose velocity
    for a constant torque on a free wheel is u_0 + dt tau / I."""
    w, r = _actuated_wheel()
    r.set_integration_scheme("RUNGE_KUTTA_4")
    r.set_state([0.0], [2.0])
    r.set_actuator_torques([1.0])            # well inside the region: tau_m = 0.1 N m
    w.integrate()
    st = r.get_actuator_states()
    assert st.motor_speed[0] == pytest.approx(10.0 * (2.0 + 0.001 * 1.0 / 0.5), rel=1e-12)


def test_actuator_loop_gives_the_array_expressions_of_step_2():
    # spec step 2 written as array expressions (w_m = T u, the two clamps of the region,
    # tau_a / G, T^T tau_m) against the compiled loop: the same bits, with regions that bind,
    # peaks below the stall torque, couplings, zero actuators and NaN inputs
    from raisimcli.physics.step.actuators import Transmission, actuator_torques
    rng = np.random.default_rng(12)
    for trial in range(300):
        n_act, nv = (0, 5) if trial == 0 else (int(rng.integers(1, 5)), int(rng.integers(3, 9)))
        T = np.zeros((n_act, nv))
        for a in range(n_act):
            T[a, rng.integers(0, nv)] = rng.uniform(1, 50)
            if rng.random() < 0.5:
                T[a, rng.integers(0, nv)] += rng.uniform(-2, 2)  # a coupled joint
        tr = Transmission(names=tuple(f"m{a}" for a in range(n_act)), T=T,
                          gear=rng.uniform(1, 50, n_act),
                          torque_constant=rng.uniform(0.01, 0.2, n_act),
                          resistance=rng.uniform(0.1, 2, n_act),
                          velocity_constant=rng.uniform(0.5, 20, n_act),
                          bus_voltage=rng.uniform(10, 48, n_act),
                          peak=rng.uniform(0.05, 5, n_act),
                          output_damping=np.zeros(nv), output_friction=np.zeros(nv))
        tau_a, u = rng.standard_normal(n_act) * 40, rng.standard_normal(nv) * 20
        if trial % 7 == 3 and n_act:
            tau_a[0] = np.nan
        if trial % 11 == 5:
            u[0] = np.nan
        for enforce in (True, False):
            # the products summed in index order, as linalg.matmul sums them (T @ u is BLAS's)
            w_m = np.array([sum(float(T[a, k]) * float(u[k]) for k in range(nv))
                            for a in range(n_act)])
            emf = tr.back_emf * w_m
            lo = np.minimum(np.maximum(-tr.stall - emf, -tr.peak), tr.peak)
            hi = np.minimum(np.maximum(tr.stall - emf, -tr.peak), tr.peak)
            commanded = tau_a / tr.gear
            applied = np.minimum(np.maximum(commanded, lo), hi) if enforce else commanded
            tau_act, st = actuator_torques(tr, tau_a, u, enforce)
            expected = (np.array([sum(float(T[a, j]) * float(applied[a]) for a in range(n_act))
                                  for j in range(nv)]), w_m, lo, hi, commanded, applied)
            got = (tau_act, st.motor_speed, st.tau_min, st.tau_max, st.commanded, st.applied)
            for e, g in zip(expected, got):
                np.testing.assert_array_equal(g, e)


def test_get_generalized_force_is_the_clamped_pd_command_worked_by_hand():
    # spec step 1 on arm7 (no actuators: tau_act = 0), with numbers exact in binary: kp 8, kd
    # 0.5, q_ref - q 0.25, u_ref 3, u 1, tau_ff -1 give -1 + (8 0.25 + 0.5 (3 - 1)) = 2; then
    # per joint: no limit, an upper limit, a lower limit, a NaN feedforward, no velocity error,
    # a negative error against a lower limit
    inf, nan = np.inf, np.nan
    w = World()
    s = w.add_articulated_system(robot("arm7.urdf"))
    s.set_pd_gains(np.full(7, 8.0), np.full(7, 0.5))
    u_ref = np.array([3.0, 3.0, 3.0, 3.0, 3.0, 1.0, 3.0])
    s.set_pd_target(s.q, u_ref)
    s.set_generalized_velocity(np.ones(7))
    s.set_generalized_force(np.full(7, -1.0))
    s.tau_ff[3] = nan  # (the setter refuses it: the command must still propagate it)
    s.pd_error = np.array([0.25, 0.25, 0.25, 0.25, 0.25, 0.25, -0.5])  # (as a step leaves it)
    s.tau_lower = np.array([-inf, -inf, 2.5, -inf, -inf, -inf, -3.0])
    s.tau_upper = np.array([inf, 1.5, 4.0, inf, inf, inf, inf])
    expected = [2.0, 1.5, 2.5, nan, 2.0, 1.0, -3.0]
    np.testing.assert_array_equal(s.get_generalized_force(), expected)
    # outside PD mode the gains are zero: the clamped feedforward
    s.set_control_mode("FORCE_AND_TORQUE")
    np.testing.assert_array_equal(s.get_generalized_force(),
                                  [-1.0, -1.0, 2.5, nan, -1.0, -1.0, -1.0])


def test_the_impulse_problem_s_sums_skip_zeros_with_the_bits_of_the_full_sums(rng):
    # _solve skips the terms of G = J response, J u* and response lam whose factor J[i, p] or
    # lam[p] is exactly 0 (a joint row has a single 1): its G, starting velocities and u_{t+1}
    # must have the bits of linalg.matmul's full sums in the same order (no sweep here: lam
    # stays as given, with zeros among its entries)
    from raisimcli.linalg import Cholesky, matmul
    from raisimcli.physics.step.solver import _solve
    nv = 18
    for trial in range(50):
        A = rng.standard_normal((nv, nv))
        L = Cholesky(A @ A.T + nv * np.eye(nv))
        joint = np.zeros((6, nv))
        joint[np.arange(6), rng.choice(nv, 6, replace=False)] = 1.0  # one entry a row
        contact = rng.standard_normal((9, nv)) * (rng.random((9, nv)) < 0.5)  # sparse, dense
        J = np.vstack([joint, contact, -joint[:2]])
        m = J.shape[0]
        response = L.solve(J.T)
        u_star = rng.standard_normal(nv)
        lam = rng.standard_normal(m) * (rng.random(m) < 0.6)
        target, lo, hi = np.zeros(m), np.full(m, -np.inf), np.full(m, np.inf)
        start, kind = np.arange(m, dtype=np.int64), np.zeros(m, dtype=np.int64)
        G2, v, u_next = np.empty((2 * m, m)), np.empty(m), np.empty(nv)
        _solve(J, response, u_star, lam.copy(), target, lo, hi, start, kind, np.zeros(m), 0,
               0.0, G2, v, np.empty((5, 3)), u_next)
        G_full = matmul(J, response)
        assert G2[:m].tobytes() == G_full.tobytes()
        assert G2[m:].tobytes() == np.ascontiguousarray(G_full.T).tobytes()  # the sweeps' copy
        assert v.tobytes() == (matmul(J, u_star) + matmul(G_full, lam)).tobytes()
        assert u_next.tobytes() == (u_star + matmul(response, lam)).tobytes()


def test_integrate2_takes_the_whole_step_unless_more_than_commands_changed(monkeypatch):
    """Commands set between integrate1 and integrate2 keep the whole step (its detection finds
    integrate1's contacts again); after a state set, a time step, gravity or a contact set-up
    changed since integrate1, integrate2 steps from the current state with integrate1's
    contacts."""
    taken, given = [], []
    real, real_with = pipeline.step, pipeline.step_with
    monkeypatch.setattr(pipeline, "step", lambda *a: taken.append(1) or real(*a))
    monkeypatch.setattr(pipeline, "step_with", lambda *a: given.append(1) or real_with(*a))
    w = World(0.001)
    r = arm(w)
    w.integrate()
    assert len(taken) == 1
    w.integrate1()
    r.set_generalized_force(np.full(r.nv, 0.1))
    r.set_pd_target(r.get_generalized_coordinate(), np.zeros(r.nv))
    w.integrate2()
    assert len(taken) == 2
    changes = [lambda: r.set_state(r.get_generalized_coordinate(), r.get_generalized_velocity()),
               lambda: w.set_time_step(0.002),
               lambda: w.set_gravity([0.0, 0.0, -9.0]),
               lambda: w.add_ground(-1.0),
               lambda: w.add_box("b", [0.1, 0.1, 0.1], position=[3.0, 0.0, 0.0]),
               lambda: w.set_material_pair("default", "steel", 0.5),
               lambda: w.set_default_material(0.7),
               lambda: w.configure_contacts(r, materials={"*": "steel"})]
    for change in changes:
        w.integrate1()
        change()
        w.integrate2()
        assert len(taken) == 2
        assert not r.integrate1_pending
    assert len(given) == len(changes)
    w.integrate1()
    w.integrate2()
    assert len(taken) == 3


def _contact_arrays(contacts):
    names = ("points", "frames", "distance", "params", "bodies_a")
    return [getattr(contacts, name).tobytes() for name in names] + [list(contacts.keys)]


def test_integrate1_s_contacts_are_those_of_its_state_when_read_later():
    """World.integrate1's collision query runs when its contacts are first read: a state set
    before that, or a change of the contact set-up, still gives the contacts of integrate1's
    state and set-up (its query run at once, directly, is the reference)."""
    w = World(0.001)
    r = quadruped(w, 0.45)
    for _ in range(300):  # standing on its four feet
        w.integrate()
    lifted = r.get_generalized_coordinate()
    lifted[2] += 0.3  # nothing near the ground there
    for change in (lambda: r.set_state(lifted, r.get_generalized_velocity()),
                   lambda: r.set_generalized_coordinate(lifted),
                   lambda: w.add_box("far", [0.1, 0.1, 0.1], position=[5.0, 0.0, 0.0]),
                   lambda: w.set_default_material(0.3),
                   lambda: w.configure_contacts(r, materials={"*": "rubber"})):
        q, u = r.get_generalized_coordinate(), r.get_generalized_velocity()
        w.integrate1()
        reference = _contact_arrays(w.contact_world.detect())
        assert len(reference[-1]) == 4
        change()
        assert _contact_arrays(w.contacts) == reference
        w.integrate2()  # (from those contacts)
        r.set_state(q, u)


def test_a_mass_matrix_that_is_not_positive_definite_is_an_error_naming_the_dof(tmp_path):
    # a massless bob: its hinge moves no mass, and nothing implicit adds to M~'s diagonal; the
    # same error whether integrate or integrate1 and integrate2 take the step
    urdf = tmp_path / "massless.urdf"
    with open(robot("pendulum.urdf")) as f:
        urdf.write_text(f.read().replace('<mass value="1"/>', '<mass value="0"/>'))
    for split in (False, True):
        w = World(0.001)
        w.add_articulated_system(str(urdf))
        with pytest.raises(RaisimcliError, match="not positive definite at DoF 'hinge'"):
            if split:
                w.integrate1()
                w.integrate2()
            else:
                w.integrate()
