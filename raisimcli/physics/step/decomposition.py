"""Spec step 5: the applied joint torque over the step, term by term.

With du = u_{t+1} - u_t, moving the implicit part to the right-hand side gives the equation of
motion of the step, M du/dt + h = sum of the rows below (for the one-stage schemes).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from raisimcli.jit import kernel

SOURCES = ("feedforward_pd", "damping", "actuators", "springs", "external", "joint_friction",
           "joint_limits", "contacts", "constraints")


_APPLIED = ("feedforward_pd", "damping", "actuators", "springs", "external")


@kernel
def _table(dt, du, u, u_next, tau_cmd, kp, kd, b, tau_act, k_s, spring_error, tau_ext, impulses,
           out):
    """The rows of torque_table into out (5 + len(impulses) + zero rows + total, nv): the five
    applied rows, the impulses / dt, rows of zeros, and their sum in row order last, each entry
    with numpy's operations of the expressions in torque_table's docstring, in their order."""
    n = u.shape[0]
    rows = out.shape[0] - 1
    for i in range(n):
        out[0, i] = tau_cmd[i] - (0.5 * kd[i] + 0.25 * dt * kp[i]) * du[i]
        out[1, i] = -0.5 * b[i] * (u[i] + u_next[i])
        out[2, i] = tau_act[i]
        out[3, i] = k_s[i] * spring_error[i] - 0.25 * dt * k_s[i] * du[i]
        out[4, i] = tau_ext[i]
    for k in range(impulses.shape[0]):
        for i in range(n):
            out[5 + k, i] = impulses[k, i] / dt
    for k in range(5 + impulses.shape[0], rows):
        for i in range(n):
            out[k, i] = 0.0
    for i in range(n):
        acc = 0.0
        for k in range(rows):
            acc = acc + out[k, i]
        out[rows, i] = acc


class TorqueTable(Mapping):
    """A step's torque table read as {source: (nv,) row, ..., "total": (nv,) row}, without a dict
    of row views made every step: each row is a view of `array` made when it is read. `at` maps
    each name, in the table's row order, to its row's (start, stop) in `array` (made once per
    row order; read it, never write it)."""

    __slots__ = ("_array", "_at")

    def __init__(self, array: np.ndarray, at: dict):
        self._array, self._at = array, at

    def __getitem__(self, name: str) -> np.ndarray:
        a, b = self._at[name]
        return self._array[a:b]

    def __iter__(self):
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)


@functools.lru_cache(maxsize=64)
def _row_names(impulse_sources: tuple) -> tuple:
    """The table's row names: the applied rows, the impulse sources in their order, then the
    sources without impulses in the order of SOURCES."""
    names = _APPLIED + impulse_sources
    return names + tuple(source for source in SOURCES if source not in names)


def torque_table(dt: float, du: np.ndarray, u: np.ndarray, u_next: np.ndarray,
                 tau_cmd: np.ndarray, kp: np.ndarray, kd: np.ndarray, b: np.ndarray,
                 tau_act: np.ndarray, k_s: np.ndarray, spring_error: np.ndarray,
                 tau_ext: np.ndarray, impulse_by_source: dict[str, np.ndarray]) -> dict:
    """One (nv,) vector per source, and their "total" (the sum in the order below):

    feedforward_pd  tau_cmd - (kd/2 + dt/4 kp) du
    damping         -1/2 (b_joint + b_out) (u_t + u_{t+1})       (trapezoidal rule)
    actuators       tau_act
    springs         k_s (q_s - q_t) - dt/4 k_s du
    external        J^T F_ext
    joint_friction  lambda_f / dt
    joint_limits    the limits' share of J_c^T lambda_c / dt
    contacts        the contacts' share of J_c^T lambda_c / dt
    constraints     J^T lambda / dt of the loop and mimic constraints (their term of the step's
                    equation of motion, see "Equations of motion of a step")

    The impulse rows come in the order of `impulse_by_source`, then the sources without
    impulses (zeros), in the order above. One compiled pass writes every row.
    """
    names = _row_names(tuple(impulse_by_source))
    n = u.shape[0]
    impulses = np.empty((len(impulse_by_source), n))
    for k, g in enumerate(impulse_by_source.values()):
        impulses[k] = g
    out = np.empty((len(names) + 1, n))
    _table(float(dt), du, u, u_next, tau_cmd, kp, kd, b, tau_act, k_s, spring_error, tau_ext,
           impulses, out)  # (nv,) float64 arrays, as the step makes them
    table = dict(zip(names, out))
    table["total"] = out[-1]
    return table
