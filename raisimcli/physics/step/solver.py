"""Spec step 4, second part: the impulse solver.

It takes rows of any kind as a boxed linear complementarity problem: row i has the velocity
v_i = J_i u_{t+1}, the impulse lambda_i in [lo_i, hi_i] and a target velocity t_i, with

    lambda_i strictly inside its box  ->  v_i = t_i
    lambda_i = lo_i                   ->  v_i >= t_i
    lambda_i = hi_i                   ->  v_i <= t_i

A position limit (restitution 0) is t = 0 with a one-sided box, a velocity limit t = +-v_max with a
one-sided box, Coulomb joint friction with stiction t = 0 with the box +-(tau_c,joint + tau_c,out) dt.
Each row is solved exactly given the others, and the rows are iterated (projected Gauss-Seidel)
until no impulse changes a row's velocity by more than `tolerance`.

The response of the system to the impulses, `response` = A^-1 J^T, is the caller's: M~^-1 J^T for
a tree, M_c^-1 J^T once loop and mimic constraints are eliminated before the solver.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

DEFAULT_MAX_ITERATIONS = 200
DEFAULT_TOLERANCE = 1e-12  # m/s or rad/s of row velocity


@dataclass
class Rows:
    """m stacked rows of J_c. `J`: (m, nv); `target`, `lo`, `hi`: (m,); `source`: (m,) labels of
    the torque-table row each belongs to ("joint_limits", "joint_friction", ...); `key`: (m,)
    identities used to warm-start from the previous step."""

    J: np.ndarray
    target: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    source: list = field(default_factory=list)
    key: list = field(default_factory=list)

    @property
    def m(self) -> int:
        return self.J.shape[0]

    def generalized_impulse_by_source(self, impulse: np.ndarray) -> dict:
        """J^T lambda (nv,) split by the rows' sources."""
        out = {}
        for source in dict.fromkeys(self.source):
            sel = [i for i, s in enumerate(self.source) if s == source]
            out[source] = self.J[sel].T @ impulse[sel]
        return out

    @classmethod
    def empty(cls, nv: int) -> "Rows":
        z = np.zeros(0)
        return cls(np.zeros((0, nv)), z, z, z, [], [])


@dataclass
class SolverResult:
    impulse: np.ndarray      # lambda_c, (m,)
    u_next: np.ndarray       # u_{t+1} = u* + response lambda_c, (nv,)
    iterations: int
    residual: float          # the largest velocity change of the last sweep


def solve_impulses(rows: Rows, u_star: np.ndarray, response: np.ndarray,
                   impulse0: np.ndarray | None = None,
                   max_iterations: int = DEFAULT_MAX_ITERATIONS,
                   tolerance: float = DEFAULT_TOLERANCE) -> SolverResult:
    """Solve the rows for their impulses; `response` is (nv, m), A^-1 J^T."""
    m = rows.m
    if m == 0:
        return SolverResult(np.zeros(0), u_star.copy(), 0, 0.0)
    G = np.ascontiguousarray(rows.J @ response)  # Delassus matrix of the rows, (m, m)
    lam = np.zeros(m) if impulse0 is None else np.clip(impulse0, rows.lo, rows.hi)
    v = rows.J @ u_star + G @ lam
    iterations, residual = _projected_gauss_seidel(
        G, v, lam, np.ascontiguousarray(rows.target, dtype=np.float64),
        np.ascontiguousarray(rows.lo, dtype=np.float64),
        np.ascontiguousarray(rows.hi, dtype=np.float64), max_iterations, tolerance)
    return SolverResult(lam, u_star + response @ lam, iterations, residual)


@njit(cache=True)
def _projected_gauss_seidel(G, v, lam, target, lo, hi, max_iterations, tolerance):
    """Sweep the rows, solving each exactly given the others: lambda_i <- clip(lambda_i +
    (t_i - v_i) / G_ii, lo_i, hi_i), then update every row's velocity v += G[:, i] d lambda_i.
    `v` and `lam` are updated in place. Returns (sweeps, largest velocity change of the last)."""
    m = lam.shape[0]
    residual = 0.0
    sweeps = 0
    for sweep in range(1, max_iterations + 1):
        sweeps = sweep
        residual = 0.0
        for i in range(m):
            g = G[i, i]
            new = lam[i] + (target[i] - v[i]) / g
            if new < lo[i]:
                new = lo[i]
            elif new > hi[i]:
                new = hi[i]
            d = new - lam[i]
            if d != 0.0:
                for k in range(m):
                    v[k] += G[k, i] * d
                lam[i] = new
                change = abs(d) * g
                if change > residual:
                    residual = change
        if residual <= tolerance:
            break
    return sweeps, residual
