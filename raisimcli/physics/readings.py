"""What the getters and the log read between steps, compiled: get_generalized_force (the clamped
command of spec step 1, command.pd_command's, plus the actuators' torque of step 2 at the current
state), and the log's energies and force in one pass with the mass matrix."""

from __future__ import annotations

import numpy as np
from numba import types

from raisimcli.jit import ArrayTable, kernel, span, table_view
from raisimcli.linalg import _quadratic
from raisimcli.physics.conventions import _mass_matrix
from raisimcli.physics.step.actuators import _actuators
from raisimcli.physics.step.command import pd_command


@kernel
def _command_plus(kp, kd, q_err, u_ref, u, tau_ff, lower, upper, tau_act, out):
    """pd_command + tau_act, entry by entry."""
    for i in range(u.shape[0]):
        out[i] = pd_command(kp[i], kd[i], q_err[i], u_ref[i], u[i], tau_ff[i], lower[i],
                            upper[i]) + tau_act[i]


@kernel
def _generalized_force(T, u, stall, back_emf, peak, tau_a, gear, enforce, kp, kd, q_err, u_ref,
                       tau_ff, lower, upper, scratch, out):
    """actuator_torques' tau_act (the loops of _actuators; 0 without actuators) into scratch's
    end, then _command_plus into out; scratch: (5 n_act + nv,)."""
    n_act, n = T.shape[0], u.shape[0]
    tau_act = span(scratch, 5 * n_act, 5 * n_act + n)
    if n_act:
        _actuators(T, u, stall, back_emf, peak, tau_a, gear, enforce, span(scratch, 0, n_act),
                   span(scratch, n_act, 2 * n_act), span(scratch, 2 * n_act, 3 * n_act),
                   span(scratch, 3 * n_act, 4 * n_act), span(scratch, 4 * n_act, 5 * n_act),
                   tau_act)
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


# the arrays of a robot that _energies_and_force reads at every call, in one ArrayTable
# (energies_table): numba unboxes each array argument of a call
_INTS, _FLOATS, _MATRIX = (types.int64, 1, "C"), (types.float64, 1, "C"), (types.float64, 2, "C")
_ints_of, _floats_of, _matrix_of = table_view(_INTS), table_view(_FLOATS), table_view(_MATRIX)


def energies_table(block_u, T, back_emf, peak, gear, commands, layout, scratch_n,
                   scratch) -> ArrayTable:
    """_energies_and_force's table of a robot: the conventions' block_u, the transmission's T,
    back_emf, peak and gear, the system's `commands` with where its views start and end
    (`layout`, raisimcli.physics.commands: kp, kd, u_ref, tau_ff, tau_lower, tau_upper, tau_a,
    zero_gains), the quadratic form's scratch (nv) and the actuators' (5 n_act + nv). Every one
    of them is written in place, never rebound."""
    views = np.array([layout[name][k] for name in ("kp", "kd", "u_ref", "tau_ff", "tau_lower",
                                                   "tau_upper", "tau_a", "zero_gains")
                      for k in (0, 1)], dtype=np.int64)
    return ArrayTable([(block_u, _INTS), (T, _MATRIX), (back_emf, _FLOATS), (peak, _FLOATS),
                       (gear, _FLOATS), (commands, _FLOATS), (views, _INTS),
                       (scratch_n, _FLOATS), (scratch, _FLOATS)])


@kernel
def _energies_and_force(M_upper, R, M_pin, M, u, com, g, q_err, stall, mass, flags, arrays, out):
    """What three getters give at a state, with their operations in their order (a log's row,
    ArticulatedSystem.log_energies_and_force): M_pin and M = T M_pin T^T from Pinocchio's upper
    triangle (conventions' _mass_matrix, get_mass_matrix), out[0] = 1/2 u^T M u (_quadratic,
    get_kinetic_energy), out[1] = -(mass (g . com)), the products summed in index order from 0
    (get_potential_energy), out[2:] the generalized force (_generalized_force,
    get_generalized_force). `arrays`: the robot's energies_table; `flags`: bit 0 PD mode (else
    the zero gains, as ArticulatedSystem.gains gives them), bit 1 the motor regions enforced."""
    bu, T = _ints_of(arrays, 0), _matrix_of(arrays, 1)
    back_emf, peak, gear = _floats_of(arrays, 2), _floats_of(arrays, 3), _floats_of(arrays, 4)
    commands, c = _floats_of(arrays, 5), _ints_of(arrays, 6)
    scratch_n, scratch = _floats_of(arrays, 7), _floats_of(arrays, 8)
    if R.shape[0] == 0:  # (no rotation blocks: T = I)
        bu = span(bu, 0, 0)
    kp, kd = span(commands, c[0], c[1]), span(commands, c[2], c[3])
    if not flags & 1:
        kp, kd = span(commands, c[14], c[15]), span(commands, c[14], c[15])
    _mass_matrix(M_upper, bu, R, M_pin, M)
    out[0] = 0.5 * _quadratic(M, u, scratch_n)
    gc = 0.0
    gc += g[0] * com[0]
    gc += g[1] * com[1]
    gc += g[2] * com[2]
    out[1] = -(mass * gc)
    _generalized_force(T, u, stall, back_emf, peak, span(commands, c[12], c[13]), gear,
                       (flags & 2) != 0, kp, kd, q_err, span(commands, c[4], c[5]),
                       span(commands, c[6], c[7]), span(commands, c[8], c[9]),
                       span(commands, c[10], c[11]),
                       scratch, span(out, 2, out.shape[0]))
