"""Spec step 4, second part: the impulse solver.

It takes rows of any kind as a boxed linear complementarity problem: row i has the velocity
v_i = J_i u_{t+1}, the impulse lambda_i in [lo_i, hi_i] and a target velocity t_i, with

    lambda_i strictly inside its box  ->  v_i = t_i
    lambda_i = lo_i                   ->  v_i >= t_i
    lambda_i = hi_i                   ->  v_i <= t_i

A position limit (restitution 0) is t = 0 with a one-sided box, a velocity limit t = +-v_max with a
one-sided box, Coulomb joint friction with stiction t = 0 with the box +-(tau_c,joint + tau_c,out) dt.
Contacts are blocks of three rows with a friction cone (see contact_solver.py). Each block is solved
exactly given the others, and the blocks are iterated (block Gauss-Seidel) until no impulse changes
a row's velocity by more than `tolerance`.

The response of the system to the impulses, `response` = A^-1 J^T, is the caller's: M~^-1 J^T for
a tree, M_c^-1 J^T when loop and mimic constraints are eliminated before the solver.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from raisimcli.linalg import matmul
from raisimcli.physics.step.contact_solver import SCALAR, block_gauss_seidel

DEFAULT_MAX_ITERATIONS = 200
DEFAULT_TOLERANCE = 1e-12  # m/s or rad/s of row velocity


@dataclass
class Rows:
    """m stacked rows of J_c. `J`: (m, nv); `target`, `lo`, `hi`: (m,); `source`: (m,) labels of
    the torque-table row each belongs to ("joint_limits", "joint_friction", "contacts"); `key`:
    (m,) identities used to warm-start from the previous step. Rows come in blocks:
    `block_start`, `block_kind` (SCALAR: one box row; CONTACT: three rows t1, t2, n of a contact,
    whose `lo`/`hi` are unused) and `block_mu` (the contact's friction coefficient); None: every
    row is a scalar block."""

    J: np.ndarray
    target: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    source: list = field(default_factory=list)
    key: list = field(default_factory=list)
    block_start: np.ndarray | None = None
    block_kind: np.ndarray | None = None
    block_mu: np.ndarray | None = None

    @property
    def m(self) -> int:
        return self.J.shape[0]

    def blocks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(block_start, block_kind, block_mu); rows without blocks get one scalar block each,
        made on the first call and kept (the rows of a joint state are reused from step to
        step)."""
        if self.block_start is None:
            m = self.m
            self.block_start = np.arange(m, dtype=np.int64)
            self.block_kind = np.full(m, SCALAR, dtype=np.int64)
            self.block_mu = np.zeros(m)
        return self.block_start, self.block_kind, self.block_mu

    @classmethod
    def stack(cls, parts: list["Rows"]) -> "Rows":
        """Rows of several groups (same number of columns) one after the other."""
        parts = [p for p in parts if p.m]
        if not parts:
            return cls.empty(0)
        if len(parts) == 1:
            return parts[0]
        starts, kinds, mus = [], [], []
        r = 0
        for p in parts:
            bs, bk, bm = p.blocks()
            starts.append(bs + r)
            kinds.append(bk)
            mus.append(bm)
            r += p.m
        return cls(np.vstack([p.J for p in parts]), np.concatenate([p.target for p in parts]),
                   np.concatenate([p.lo for p in parts]), np.concatenate([p.hi for p in parts]),
                   sum((p.source for p in parts), []), sum((p.key for p in parts), []),
                   np.concatenate(starts).astype(np.int64), np.concatenate(kinds).astype(np.int64),
                   np.concatenate(mus))

    def generalized_impulse_by_source(self, impulse: np.ndarray) -> dict:
        """J^T lambda (nv,) split by the rows' sources."""
        out = {}
        for source in dict.fromkeys(self.source):
            sel = [i for i, s in enumerate(self.source) if s == source]
            out[source] = matmul(self.J[sel].T, impulse[sel])
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
    G = matmul(rows.J, response)  # Delassus matrix of the rows, (m, m)
    lam = np.zeros(m) if impulse0 is None else np.array(impulse0, dtype=np.float64)
    v = matmul(rows.J, u_star) + matmul(G, lam)
    start, kind, mu = rows.blocks()
    iterations, residual = block_gauss_seidel(
        G, v, lam, np.ascontiguousarray(rows.target, dtype=np.float64),
        np.ascontiguousarray(rows.lo, dtype=np.float64),
        np.ascontiguousarray(rows.hi, dtype=np.float64), start, kind,
        np.ascontiguousarray(mu, dtype=np.float64), max_iterations, tolerance,
        np.empty((5, 3)))
    return SolverResult(lam, u_star + matmul(response, lam), iterations, residual)
