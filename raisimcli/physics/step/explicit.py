"""Spec steps 1-3 and the first part of step 4 of one system: the clamped command (step 1), the
actuators (step 2), the explicit torque (step 3), M~ = M + diag(w), its Cholesky factor and the
free velocity u* (step 4), after Pinocchio's crba and nonLinearEffects at the system's state; and
the joints' states that decide their rows.

The command is command.pd_command's (the PD law's one place), w is implicit.implicit_weight's;
the explicit torque is tau_exp = tau_cmd - (b_joint + b_out) u_t + tau_act + k_s (q_s - q_t) +
J^T F_ext, and u* = u_t + dt M~^-1 (tau_exp - h). `make_stage` makes a system's Stage with it,
the joint rows that act and, with loop or mimic constraints, their elimination; the step's
pipeline (step/pipeline.py) and the quick step (step/quick.py, which calls _stage inside its own
compiled call) both use it. tests/reference/ compares the step with a plain reference.
"""

from __future__ import annotations

import numpy as np

from raisimcli.jit import carve, kernel, span
from raisimcli.linalg import Cholesky, _cho_solve, _cholesky
from raisimcli.physics.commands import COMMANDS
from raisimcli.physics.constraints import eliminate
from raisimcli.physics.conventions import _mass_matrix, _nonlinearities, _one_dof_difference
from raisimcli.physics.step.actuators import ActuatorState, _actuators
from raisimcli.physics.step.command import pd_command
from raisimcli.physics.step.implicit import Factorized, implicit_weight
from raisimcli.physics.step.joint_rows import _states
from raisimcli.physics.step.stage import Stage

PD_PLUS_FEEDFORWARD_TORQUE = "PD_PLUS_FEEDFORWARD_TORQUE"


@kernel
def _explicit_pass(dt, kp, kd, q_err, u_ref, u, tau_ff, lower, upper, b_joint, b_out, tau_act,
                   k_s, spring_err, tau_ext, w, M, h, tau_cmd, b, rhs, M_tilde, L, x, u_star):
    n = u.shape[0]
    for i in range(n):
        c = pd_command(kp[i], kd[i], q_err[i], u_ref[i], u[i], tau_ff[i], lower[i], upper[i])
        tau_cmd[i] = c
        b[i] = b_joint[i] + b_out[i]
        tau_exp = c - (b_joint[i] + b_out[i]) * u[i] + tau_act[i] + k_s[i] * spring_err[i] + \
            tau_ext[i]
        rhs[i, 0] = tau_exp - h[i]
    for i in range(n):  # M + np.diag(w): the off-diagonal entries plus 0.0
        for j in range(n):
            M_tilde[i, j] = M[i, j] + (w[i] if i == j else 0.0)
    info = _cholesky(M_tilde, L)
    if info == 0:
        _cho_solve(L, rhs, x)
        for i in range(n):
            u_star[i] = u[i] + dt * x[i, 0]
    return info


@kernel
def _stage(dt, I, C, M_upper, h_pin, u_pin, R, q, u, commands, stall, back_emf, F, q_err, act,
           states):
    """Spec steps 1-3 and u* of step 4 after Pinocchio's crba (M_upper) and nonLinearEffects
    (h_pin), in the spec's order. The robot's constant arrays come packed (StageScratch's
    layout; fewer arguments cost less to pass): `I` holds the
    flags, then where each index array starts in I (block_u, floating_u, one_dof_q, one_dof_u of
    the conventions, the joint rows' qidx and idx, the starts of the views of `commands`, and the
    end), then those arrays; `commands` is the system's (raisimcli.physics.commands, its views in
    the order of COMMANDS, the gains outside PD mode its last); `C` holds the output damping
    b_out (nv), the transmission T (n_act, nv), peak and gear (n_act each), the joint rows'
    lower, upper and vmax. The flags: T is the identity, PD mode, springs, the motor
    regions enforced, loads (their J^T F already in F's tau_ext; else it is zeroed), errors given
    (q_err and spring_err already written: a robot with spherical joints, whose quaternion errors
    Conventions.difference takes). Writes into F (scratch, then the results M, h, spring_err,
    tau_cmd, b, L, u_star at its end): M (the convention transform of Conventions.mass_matrix),
    h (Conventions.nonlinearities; h_pin as it is when T = I), q_err and spring_err
    (Conventions.difference without quaternions; 0 outside PD mode and without springs), the
    actuators' w_m, lo, hi, commanded, applied, tau_act end to end in `act` (actuator_torques;
    tau_act 0 without actuators), w (implicit_weight), then _explicit_pass and each
    joint's state (joint_rows._states). Returns the Cholesky factor's info (0: M~ positive
    definite)."""
    n = u.shape[0]
    n_act = stall.shape[0]
    flags = span(I, 0, 6)
    bu, floating_u = span(I, I[6], I[7]), span(I, I[7], I[8])
    one_q, one_u = span(I, I[8], I[9]), span(I, I[9], I[10])
    qidx, idx = span(I, I[10], I[11]), span(I, I[11], I[12])
    nj = idx.shape[0]
    # COMMANDS' views: kp, kd, q_ref, u_ref, tau_ff, the limits, b_joint, k_s, spring_rest,
    # tau_a, the zero gains, and the end
    c = span(I, I[12], I[13])
    kp, kd = span(commands, c[0], c[1]), span(commands, c[1], c[2])
    if not flags[1]:  # (ArticulatedSystem.gains outside PD mode)
        kp, kd = span(commands, c[11], c[12]), span(commands, c[11], c[12])
    q_ref, u_ref = span(commands, c[2], c[3]), span(commands, c[3], c[4])
    tau_ff = span(commands, c[4], c[5])
    lower, upper = span(commands, c[5], c[6]), span(commands, c[6], c[7])
    b_joint = span(commands, c[7], c[8])
    k_s, spring_rest, tau_a = span(commands, c[8], c[9]), span(commands, c[9], c[10]), \
        span(commands, c[10], c[11])
    b_out = span(C, 0, n)
    a = n + n_act * n
    T = carve(C, n, (n_act, n))
    peak, gear = span(C, a, a + n_act), span(C, a + n_act, a + 2 * n_act)
    a += 2 * n_act
    j_lower, j_upper = span(C, a, a + nj), span(C, a + nj, a + 2 * nj)
    vmax = span(C, a + 2 * nj, a + 3 * nj)
    M_pin = carve(F, 0, (n, n))
    a = 2 * n * n  # (F[n n:2 n n] is read by no call since _mass_matrix works in place: the
    # offsets here, in StageScratch and in step/quick.py keep the slot)
    c = span(F, a, a + n)
    rhs = carve(F, a + 3 * n, (n, 1))  # (F[a + n:a + 3 n]: another slot no call reads)
    x = carve(F, a + 4 * n, (n, 1))
    w = span(F, a + 5 * n, a + 6 * n)
    tau_ext = span(F, a + 6 * n, a + 7 * n)
    M_tilde = carve(F, a + 7 * n, (n, n))
    a = 3 * n * n + 7 * n  # the results
    M = carve(F, a, (n, n))
    a += n * n
    h, spring_err = span(F, a, a + n), span(F, a + n, a + 2 * n)
    tau_cmd, b = span(F, a + 2 * n, a + 3 * n), span(F, a + 3 * n, a + 4 * n)
    a += 4 * n
    L = carve(F, a, (n, n))
    u_star = span(F, a + n * n, a + n * n + n)
    _mass_matrix(M_upper, bu, R, M_pin, M)
    if flags[0]:
        for i in range(n):
            h[i] = h_pin[i]
    else:
        _nonlinearities(h_pin, M_pin, u_pin, floating_u, bu, R, c, h)
    if not flags[5]:  # (spherical joints: the caller has written both errors)
        if flags[1]:
            _one_dof_difference(q, q_ref, one_q, one_u, q_err)
        else:
            q_err[:] = 0.0
        if flags[2]:
            _one_dof_difference(q, spring_rest, one_q, one_u, spring_err)
        else:
            spring_err[:] = 0.0
    tau_act = span(act, 5 * n_act, 5 * n_act + n)
    if n_act:
        _actuators(T, u, stall, back_emf, peak, tau_a, gear, flags[3] != 0, span(act, 0, n_act),
                   span(act, n_act, 2 * n_act), span(act, 2 * n_act, 3 * n_act),
                   span(act, 3 * n_act, 4 * n_act), span(act, 4 * n_act, 5 * n_act), tau_act)
    else:
        for i in range(n):
            tau_act[i] = 0.0
    for i in range(n):
        w[i] = implicit_weight(dt, b_joint[i] + b_out[i], kd[i], kp[i], k_s[i])
        if not flags[4]:  # (with loads, the caller has written J^T F into tau_ext)
            tau_ext[i] = 0.0
        for j in range(n):
            L[i, j] = 0.0
    info = _explicit_pass(dt, kp, kd, q_err, u_ref, u, tau_ff, lower, upper, b_joint, b_out,
                          tau_act, k_s, spring_err, tau_ext, w, M, h, tau_cmd, b, rhs, M_tilde,
                          L, x, u_star)
    _states(q, u_star, qidx, idx, j_lower, j_upper, vmax, states)
    return info


def stage_constants(s) -> tuple[np.ndarray, np.ndarray]:
    """_stage's I and C of system s (its docstring gives their layout): I the flags (the first
    one, T = I, set; the others are the step's), where each index array starts in I, then the
    conventions' and the joint rows' index arrays and the starts of the views of the system's
    commands; C the robot's constant floats (the transmission's and the joint rows' are never
    written after loading)."""
    conv, tr, jr = s.conv, s.transmission, s.joint_rows
    layout = s.command_layout
    parts = [conv.block_u, conv.floating_u, conv.one_dof_q, conv.one_dof_u, jr.qidx, jr.idx,
             np.array([layout[name][0] for name, _ in COMMANDS] + [layout["size"][1]])]
    starts = np.cumsum([14] + [p.size for p in parts])
    I = np.concatenate([np.zeros(6, dtype=np.int64), starts] + parts).astype(np.int64)  # noqa: E741
    I[0] = conv.identity
    C = np.concatenate([tr.output_damping, tr.T.reshape(-1), tr.peak, tr.gear, jr.lower, jr.upper,
                        jr.vmax]).astype(np.float64)
    return I, C


class StageScratch:
    """One system's arrays that no step result outlives (each is written before it is read in a
    step), and its Stage and factor, refilled at each step."""

    def __init__(self, s):
        nv, tr = s.nv, s.transmission
        # _stage's scratch, then its results M, h, spring_err, tau_cmd, b, L, u* (views below)
        self.F = F = np.empty(5 * nv * nv + 12 * nv)
        self.I, self.C = stage_constants(s)
        self.flags = self.I[0:6]
        a = 3 * nv * nv + 7 * nv
        self.M = F[a:a + nv * nv].reshape(nv, nv)
        a += nv * nv
        self.h, self.spring_err = F[a:a + nv], F[a + nv:a + 2 * nv]
        self.tau_cmd, self.b = F[a + 2 * nv:a + 3 * nv], F[a + 3 * nv:a + 4 * nv]
        a += 4 * nv
        self.L = F[a:a + nv * nv].reshape(nv, nv)
        self.u_star = F[a + nv * nv:a + nv * nv + nv]
        self.n_act = n_act = tr.T.shape[0]
        self.act = np.empty(5 * n_act + nv)  # _stage's actuator block, without actuators
        self.none_acting = tr.none_acting
        a = 2 * nv * nv + 7 * nv  # M~ in F (_stage's layout)
        self.M_tilde = F[a:a + nv * nv].reshape(nv, nv)
        self.factor = Factorized(self.M_tilde, None, Cholesky.of_factor(self.L, 0))
        tau_ext = F[2 * nv * nv + 6 * nv:2 * nv * nv + 7 * nv]  # (J^T F of the loads)
        self.stage = Stage(M=self.M, h=self.h, q_err=None, tau_cmd=self.tau_cmd, tau_act=None,
                           act_state=None, spring_err=self.spring_err, tau_ext=tau_ext,
                           b=self.b, factor=self.factor, u_star=self.u_star, kp=None, kd=None,
                           u_free=self.u_star)


def explicit_stage(s, dt) -> Stage:
    """Spec steps 1-3 and u* at the system's current state, in a scratch of their own (a
    RUNGE_KUTTA_4 stage): the step's Stage stays as it is. The arrays the caller keeps are
    copies."""
    st = make_stage(s, dt, *s.pinocchio_dynamics(), scratch="explicit")
    return Stage(M=None, h=None, q_err=None, tau_cmd=st.tau_cmd.copy(), tau_act=st.tau_act,
                 act_state=st.act_state, spring_err=st.spring_err.copy(),
                 tau_ext=st.tau_ext.copy(), b=st.b.copy(), factor=None, u_star=st.u_star.copy(),
                 kp=st.kp, kd=st.kd)


def make_stage(s, dt, upper, h_pin, u_pin, R, scratch="stage") -> Stage:
    """Steps 1-3 and u* of system s (_stage) from Pinocchio's M (`upper`) and h at its state,
    with the joint rows that act and, with loop or mimic constraints, their elimination. The
    Stage and its arrays are s's scratch (StageScratch, by the name `scratch`), but for those that
    outlive the step (q_err, the actuators' state), made anew."""
    ws = s.step_scratch.get(scratch)
    if ws is None:
        ws = s.step_scratch[scratch] = StageScratch(s)
    conv, nv, q, u = s.conv, s.nv, s.q, s.u
    # steps 1-3 and u*, and the joint rows' states
    flags, tr, st = ws.flags, s.transmission, ws.stage
    pd = s.control_mode == PD_PLUS_FEEDFORWARD_TORQUE
    flags[1], flags[2], flags[3] = pd, bool(s.springs), bool(s.motor_region_enforced)
    kp, kd = s.gains()
    q_err = np.empty(nv)
    act = np.empty(5 * ws.n_act + nv) if ws.n_act else ws.act
    jr = s.joint_rows
    if s.pending_loads:  # J^T F of the loads set for this step (_stage keeps it)
        st.tau_ext[:] = s.external_generalized_force()
    flags[4] = bool(s.pending_loads)
    flags[5] = bool(conv.spherical)
    if conv.spherical:  # quaternion errors: Conventions.difference's
        q_err[:] = conv.difference(q, s.q_ref, floating=False) if pd else 0.0
        ws.spring_err[:] = conv.difference(q, s.spring_rest, floating=False) if s.springs \
            else 0.0
    info = _stage(float(dt), ws.I, ws.C, upper, h_pin, u_pin, conv.no_blocks if R is None else R,
                  q, u, s.commands, tr.stall, tr.back_emf, ws.F, q_err, act, jr.states)
    if info != 0:  # raises the error that names the DoF
        Factorized(ws.M_tilde, s.model.dof_names, Cholesky.of_factor(ws.L, info))
    if ws.n_act:
        n = ws.n_act
        st.tau_act = act[5 * n:]
        st.act_state = ActuatorState(act[:n], act[n:2 * n], act[2 * n:3 * n], act[3 * n:4 * n],
                                     act[4 * n:5 * n])
    else:
        st.tau_act, st.act_state = ws.none_acting
    st.q_err, st.kp, st.kd = q_err, kp, kd
    st.joint_rows = jr.rows_of_states(dt)
    if s.constraints:  # loops and mimics: eliminated before the solver
        eliminate(s, st, dt)
    return st
