"""Spec steps 1, 3 and the first part of step 4 of one system in one compiled pass: the clamped
command, the explicit torque, M~ = M + diag(w), its Cholesky factor and the free velocity u*.

The pass is the composition of command.pd_torque, command.clamped_command,
explicit.explicit_torque, implicit.Factorized and implicit.free_velocity (which state the spec's
equations one by one), with each entry computed by the same operations in the same order, so
the results have the same bits (tests/test_step.py compares them); fused, they cost one call
instead of about twenty small array operations. numpy's maximum and minimum are taken with
numpy's rule for one element: a NaN propagates, and of two equal values the first is kept.
"""

from __future__ import annotations

import numpy as np

from raisimcli.jit import kernel
from raisimcli.linalg import Cholesky, _cho_solve, _cholesky, _quadratic
from raisimcli.physics.conventions import _mass_matrix
from raisimcli.physics.step.actuators import _actuators
from raisimcli.physics.step.implicit import Factorized


@kernel
def _explicit_pass(dt, kp, kd, q_err, u_ref, u, tau_ff, lower, upper, b_joint, b_out, tau_act,
                   k_s, spring_err, tau_ext, w, M, h, tau_cmd, b, rhs, M_tilde, L, x, u_star):
    n = u.shape[0]
    for i in range(n):
        tau_pd = kp[i] * q_err[i] + kd[i] * (u_ref[i] - u[i])
        c = tau_ff[i] + tau_pd
        if not (c >= lower[i] or c != c):  # np.maximum(c, lower)
            c = lower[i]
        if not (c <= upper[i] or c != c):  # np.minimum(c, upper)
            c = upper[i]
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
def _command_plus(kp, kd, q_err, u_ref, u, tau_ff, lower, upper, tau_act, out):
    """clamped_command(tau_ff, pd_torque(kp, kd, q_err, u_ref, u), lower, upper) + tau_act,
    entry by entry with _explicit_pass's operations for tau_cmd."""
    for i in range(u.shape[0]):
        c = tau_ff[i] + (kp[i] * q_err[i] + kd[i] * (u_ref[i] - u[i]))
        if not (c >= lower[i] or c != c):
            c = lower[i]
        if not (c <= upper[i] or c != c):
            c = upper[i]
        out[i] = c + tau_act[i]


@kernel
def _generalized_force(T, u, stall, back_emf, peak, tau_a, gear, enforce, kp, kd, q_err, u_ref,
                       tau_ff, lower, upper, scratch, out):
    """actuator_torques' tau_act (the loops of _actuators; 0 without actuators) into scratch's
    end, then _command_plus into out; scratch: (5 n_act + nv,)."""
    n_act, n = T.shape[0], u.shape[0]
    tau_act = scratch[5 * n_act:5 * n_act + n]
    if n_act:
        _actuators(T, u, stall, back_emf, peak, tau_a, gear, enforce, scratch[0:n_act],
                   scratch[n_act:2 * n_act], scratch[2 * n_act:3 * n_act],
                   scratch[3 * n_act:4 * n_act], scratch[4 * n_act:5 * n_act], tau_act)
    else:
        for i in range(n):
            tau_act[i] = 0.0
    _command_plus(kp, kd, q_err, u_ref, u, tau_ff, lower, upper, tau_act, out)


def generalized_force(tr, tau_a, enforce: bool, kp, kd, q_err, u_ref, u, tau_ff, lower,
                      upper) -> np.ndarray:
    """command_plus(kp, kd, q_err, u_ref, u, tau_ff, lower, upper, actuator_torques(tr, tau_a,
    u, enforce)[0]) in one compiled call, with its bits (tr: the robot's Transmission)."""
    out = np.empty(u.shape[0])
    _generalized_force(tr.T, u, tr.stall, tr.back_emf, tr.peak, tau_a, tr.gear, bool(enforce),
                       kp, kd, q_err, u_ref, tau_ff, lower, upper,
                       np.empty(5 * tr.T.shape[0] + u.shape[0]), out)
    return out


@kernel
def _energies_and_force(M_upper, bu, R, M_pin, TM, M, u, scratch_n, com, g, mass, T, stall,
                        back_emf, peak, tau_a, gear, enforce, kp, kd, q_err, u_ref, tau_ff, lower,
                        upper, scratch, out):
    """What three getters give at a state, with their operations in their order (a log's row,
    ArticulatedSystem.log_energies_and_force): M_pin and M = T M_pin T^T from Pinocchio's upper
    triangle (conventions' _mass_matrix, get_mass_matrix), out[0] = 1/2 u^T M u (_quadratic,
    get_kinetic_energy), out[1] = -(mass (g . com)), the products summed in index order from 0
    (get_potential_energy), out[2:] the generalized force (_generalized_force,
    get_generalized_force)."""
    _mass_matrix(M_upper, bu, R, M_pin, TM, M)
    out[0] = 0.5 * _quadratic(M, u, scratch_n)
    gc = 0.0
    gc += g[0] * com[0]
    gc += g[1] * com[1]
    gc += g[2] * com[2]
    out[1] = -(mass * gc)
    _generalized_force(T, u, stall, back_emf, peak, tau_a, gear, enforce, kp, kd, q_err, u_ref,
                       tau_ff, lower, upper, scratch, out[2:])


def explicit_pass(dt: float, kp, kd, q_err, u_ref, u, tau_ff, lower, upper, b_joint, b_out,
                  tau_act, k_s, spring_err, tau_ext, w, M, h, dof_names=None):
    """(tau_cmd, b_joint + b_out, Factorized(M + diag(w)), u*) of the step, for (nv,) float64
    arrays; a non-positive-definite M~ raises as Factorized does."""
    n = u.shape[0]
    tau_cmd, b, u_star = np.empty(n), np.empty(n), np.empty(n)
    M_tilde, L = np.empty((n, n)), np.zeros((n, n))
    info = _explicit_pass(float(dt), kp, kd, q_err, u_ref, u, tau_ff, lower, upper, b_joint,
                          b_out, tau_act, k_s, spring_err, tau_ext, w, M, h, tau_cmd, b,
                          np.empty((n, 1)), M_tilde, L, np.empty((n, 1)), u_star)
    factor = Factorized(M_tilde, dof_names, Cholesky.of_factor(L, info))
    return tau_cmd, b, factor, u_star
