"""Loop and mimic constraints, eliminated exactly before the impulse solver (spec: "Kinematic
loops", "The constraint and its rate", "Eliminating the constraints").

Rows (J, |lambda| x nv) and errors e, measured at the step's start:

- pin: three world axes a_i, e_i = a_i . (p1 - p2), row a_i^T (J1(p1) - J2(p2));
- equality: one or two axes fixed in body1, e_i = a_i . (p1 - p2), and the exact row
  a_i^T (J1(p2) - J2(p2)), body1's material point at body2's anchor;
- mimic: e = q_f - m q_l - c, row e_f - m e_l.

The elimination (spec, steps 1-4 of "Eliminating the constraints"): D = J M~^-1 J^T,
lambda_0 = D^-1 (-beta e - J u*), u_0 = u* + M~^-1 J^T lambda_0, and every other impulse acts through
M_c^-1 = M~^-1 - M~^-1 J^T D^-1 J M~^-1; after the solver, lambda = lambda_0 - D^-1 J M~^-1 J_c^T
lambda_c (equation 2). Dependent rows (redundant constraints, singular poses) are dropped: a
pivoted Cholesky of D keeps an independent subset (a row whose pivot is below 1e-10 of D's largest
diagonal entry is dependent); the motion is the same and the load goes to the kept rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from raisimcli.linalg import Cholesky, independent_rows, matmul

RANK_TOLERANCE = 1e-10
_WORLD_AXES = np.eye(3)  # a pin's axes (read only: the step's spans keep it)
_WORLD_AXES.setflags(write=False)


def beta(erp: float, dt: float) -> float:
    """The error-correction rate beta = clamp(0.2 erp, 0, 0.3) / dt."""
    return min(max(0.2 * erp, 0.0), 0.3) / dt


@dataclass
class LoopConstraintState:
    """A pin or equality constraint of a system. `anchor1`, `anchor2`: (3,) in the link frames of
    `link1` and `link2`; `axes`: (k, 3) in link1's frame (pin: the world axes, unused)."""

    name: str
    kind: str
    link1: str
    link2: str
    anchor1: np.ndarray
    anchor2: np.ndarray
    axes: np.ndarray


@dataclass
class MimicConstraintState:
    name: str
    follower: str
    leader: str
    multiplier: float
    offset: float
    follower_u: int
    leader_u: int
    follower_q: int
    leader_q: int


def constraint_rows(system):
    """(J (k, nv), e (k,), per constraint (first row, end row, world axes (k_i, 3) or None for a
    mimic, the world points where its force acts on body1 and body2)) at the current state."""
    rows, errors, spans = [], [], []
    for c in system.constraints:
        r0 = len(rows)
        if isinstance(c, MimicConstraintState):
            row = np.zeros(system.nv)
            row[c.follower_u] += 1.0
            row[c.leader_u] -= c.multiplier
            rows.append(row)
            errors.append(system.q[c.follower_q] - c.multiplier * system.q[c.leader_q] - c.offset)
            spans.append((r0, len(rows), None, None))
        else:
            R1 = system.get_frame_orientation(c.link1)
            p1 = system.get_frame_position(c.link1) + matmul(R1, c.anchor1)
            p2 = system.get_frame_position(c.link2) + matmul(system.get_frame_orientation(c.link2),
                                                              c.anchor2)
            b1, b2 = system.body_of(c.link1), system.body_of(c.link2)
            if c.kind == "pin":
                J1 = system.point_jacobians(b1, p1)[0] if b1 > 0 else np.zeros((3, system.nv))
                J2 = system.point_jacobians(b2, p2)[0] if b2 > 0 else np.zeros((3, system.nv))
                axes = _WORLD_AXES
            else:
                J1 = system.point_jacobians(b1, p2)[0] if b1 > 0 else np.zeros((3, system.nv))
                J2 = system.point_jacobians(b2, p2)[0] if b2 > 0 else np.zeros((3, system.nv))
                axes = matmul(R1, c.axes.T).T
            # a_i^T (J1 - J2) and a_i . (p1 - p2) for every axis at once: linalg's loops sum
            # each row's terms in the same order as one product per axis would
            rows.extend(matmul(axes, J1 - J2))
            errors.extend(matmul(axes, p1 - p2).tolist())
            # where the force acts on body1 and on body2 (the spec's "Where the force acts")
            spans.append((r0, len(rows), axes, (p1, p2) if c.kind == "pin" else (p2, p2)))
    return np.array(rows).reshape(-1, system.nv), np.array(errors), spans


class Elimination:
    """The elimination of one step: built from J, e, the factorised M~ and u*."""

    def __init__(self, J: np.ndarray, e: np.ndarray, factor, u_star: np.ndarray, beta_: float):
        self.J_all = J
        self.e_all = e
        self.MinvJT_all = factor.solve(J.T)           # M~^-1 J^T, (nv, k)
        D = matmul(J, self.MinvJT_all)
        self.kept = _independent_rows(D)
        k = self.kept
        if len(k) == len(e):  # every row independent (a loop in space; a planar one has a
            # dependent row): no copies
            self.J, self.MinvJT, D_kept = J, self.MinvJT_all, D
        else:
            self.J, self.MinvJT, D_kept = J[k], self.MinvJT_all[:, k], D[k][:, k]
        self.D_chol = Cholesky(D_kept)
        self.lambda0 = np.zeros(len(e))
        rhs = -beta_ * e[k] - matmul(self.J, u_star)
        lam0 = self._solve_D(rhs)
        self.lambda0[k] = lam0
        self.u0 = u_star + matmul(self.MinvJT, lam0)

    def _solve_D(self, rhs):
        if rhs.size == 0:
            return rhs
        return self.D_chol.solve(rhs)

    def response(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For Y = M~^-1 J_c^T (nv, m): (M_c^-1 J_c^T, D^-1 J Y) - the constrained response and
        what recovers lambda from lambda_c."""
        if not len(self.kept) or Y.shape[1] == 0:
            return Y, np.zeros((len(self.kept), Y.shape[1]))
        DinvJY = self._solve_D(matmul(self.J, Y))
        return Y - matmul(self.MinvJT, DinvJY), DinvJY

    def impulses(self, DinvJY: np.ndarray, lambda_c: np.ndarray) -> np.ndarray:
        """lambda of every row (dropped rows: 0), equation (2)."""
        lam = self.lambda0.copy()
        if lambda_c.size and len(self.kept):
            lam[self.kept] -= matmul(DinvJY, lambda_c)
        return lam

    def inverse_mass(self, Minv: np.ndarray) -> np.ndarray:
        """M_c^-1 (nv, nv) from M~^-1."""
        return Minv - matmul(self.MinvJT, self._solve_D(self.MinvJT.T))


def _independent_rows(D: np.ndarray) -> np.ndarray:
    """Indices of an independent subset of rows (pivoted Cholesky of D)."""
    n = D.shape[0]
    if n == 0:
        return np.zeros(0, dtype=int)
    scale = float(D.diagonal().max())
    if scale <= 0:
        return np.zeros(0, dtype=int)
    return independent_rows(D, RANK_TOLERANCE * scale)
