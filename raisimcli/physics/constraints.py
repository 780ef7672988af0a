"""Loop and mimic constraints, eliminated exactly before the impulse solver (spec: "Kinematic
loops", "The constraint and its rate", "Eliminating the constraints").

Rows (J, |lambda| x nv) and errors e, measured at the step's start:

- pin: three world axes a_i, e_i = a_i . (p1 - p2), row a_i^T (J1(p1) - J2(p2));
- equality: one or two axes fixed in body1, e_i = a_i . (p1 - p2), and the exact row
  a_i^T (J1(p2) - J2(p2)), body1's material point at body2's anchor;
- mimic: e = q_f - m q_l - c, row e_f - m e_l.

The elimination (spec, steps 1-4 of "Eliminating the constraints"): D = J M~^-1 J^T,
lambda_0 = D^-1 (-beta e - J u*), u_0 = u* + M~^-1 J^T lambda_0, and every other impulse acts
through M_c^-1 = M~^-1 - M~^-1 J^T D^-1 J M~^-1; after the solver,
lambda = lambda_0 - D^-1 J M~^-1 J_c^T lambda_c (equation 2). Dependent rows (redundant
constraints, singular poses) are dropped: a pivoted Cholesky of D keeps an independent subset (a
row whose pivot is below 1e-10 of D's largest diagonal entry is dependent); the motion is the same
and the load goes to the kept rows.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from raisimcli.jit import carve, kernel, span
from raisimcli.linalg import Cholesky, _cho_solve_rows, _cholesky, _mm, _mv, _pivoted_rank, \
    _skipping_mm, matmul
from raisimcli.physics.step.contact_rows import _point_jacobian

RANK_TOLERANCE = 1e-10
_WORLD_AXES = np.eye(3)  # a pin's axes (read only: the step's spans keep it)
_WORLD_AXES.setflags(write=False)
_NO_AXES = np.zeros((0, 3))  # the local axes _loop_rows is given for a pin (unused)


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


@dataclass(frozen=True)  # (a system keeps arrays of its mimics: mimic_plan)
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


@kernel
def _loop_rows(Rf, Tf, f1, f2, anchor1, anchor2, b1, b2, pin, axes_local, J_world, origins,
               supports, bu, R, scratch, axes, p1, p2, rows, errors, r0):
    """A pin's or equality's rows rows[r0 + a] and errors errors[r0 + a], its world axes `axes`
    and points p1, p2 (constraint_rows' Python path, with the operations of its linalg calls
    and array expressions in their order). Rf, Tf: the frames' world placements; f1, f2, b1, b2:
    the links' frames and bodies; `scratch` (15, nv)."""
    nv = J_world.shape[1]
    for i in range(3):  # p = T_f + R_f anchor
        s1 = 0.0
        s2 = 0.0
        for p in range(3):
            s1 += Rf[f1, i, p] * anchor1[p]
            s2 += Rf[f2, i, p] * anchor2[p]
        p1[i] = Tf[f1, i] + s1
        p2[i] = Tf[f2, i] + s2
    k = axes.shape[0]
    for a in range(k):  # a pin: the world axes; an equality: R1 axes_local^T, transposed
        for i in range(3):
            if pin:
                axes[a, i] = 1.0 if a == i else 0.0
            else:
                s = 0.0
                for p in range(3):
                    s += Rf[f1, i, p] * axes_local[a, p]
                axes[a, i] = s
    jj, lin, J1, J2 = scratch[0:6], scratch[6:9], scratch[9:12], scratch[12:15]
    point = p1 if pin else p2  # an equality: body1's material point at p2
    for b, at, out in ((b1, point, J1), (b2, p2, J2)):
        if b > 0:
            _point_jacobian(J_world, origins[b], supports[b], at, bu, R, jj, lin, out)
        else:
            for i in range(3):
                for c in range(nv):
                    out[i, c] = 0.0
    for i in range(3):
        for c in range(nv):
            J1[i, c] = J1[i, c] - J2[i, c]
    for a in range(k):  # axes (J1 - J2) and axes (p1 - p2), each sum in index order
        for c in range(nv):
            s = 0.0
            for p in range(3):
                s += axes[a, p] * J1[p, c]
            rows[r0 + a, c] = s
        s = 0.0
        for p in range(3):
            s += axes[a, p] * (p1[p] - p2[p])
        errors[r0 + a] = s


@kernel
def _mimic_rows(q, follower_u, leader_u, follower_q, leader_q, multiplier, offset, J, e):
    """The rows of mimic constraints, one each in order, into J (k, nv) and e (k,) with
    constraint_rows' operations: J[r] zero but for +1 at the follower and -m at the leader,
    e[r] = q_follower - m q_leader - c."""
    for r in range(follower_u.shape[0]):
        for c in range(J.shape[1]):
            J[r, c] = 0.0
        J[r, follower_u[r]] += 1.0
        J[r, leader_u[r]] -= multiplier[r]
        e[r] = q[follower_q[r]] - multiplier[r] * q[leader_q[r]] - offset[r]


def mimic_plan(constraints: list) -> tuple | None:
    """When there are constraints and every one is a mimic: (their spans as constraint_rows
    gives them, and _mimic_rows' follower_u, leader_u, follower_q, leader_q, multiplier and
    offset); else None. ArticulatedSystem.mimics_only keeps it until a constraint is added."""
    if not constraints or not all(isinstance(c, MimicConstraintState) for c in constraints):
        return None
    ints = [np.array([getattr(c, name) for c in constraints], dtype=np.int64)
            for name in ("follower_u", "leader_u", "follower_q", "leader_q")]
    floats = [np.array([getattr(c, name) for c in constraints], dtype=np.float64)
              for name in ("multiplier", "offset")]
    return ([(r, r + 1, None, None) for r in range(len(constraints))], *ints, *floats)


def eliminate(system, stage, dt: float) -> None:
    """The elimination of `system`'s loop and mimic constraints for the step whose `stage`
    (its factor and u*) is made: stage.elimination, constraint_spans, and u_free = u_0 (what
    step/explicit.py's make_stage does). Mimics alone: their rows and
    the elimination in one compiled call (Elimination.of_mimics)."""
    beta_ = beta(system.constraint_erp, dt)
    mimics = system.mimics_only()
    if mimics is not None:
        elim = Elimination.of_mimics(system.q, mimics, stage.factor, stage.u_star, beta_)
        spans = list(mimics[0])
    else:
        J, e, spans, stage.constraint_axes = constraint_rows_and_axes(system)
        elim = Elimination(J, e, stage.factor, stage.u_star, beta_)
    stage.elimination, stage.constraint_spans, stage.u_free = elim, spans, elim.u0


def constraint_rows(system):
    """(J (k, nv), e (k,), per constraint (first row, end row, world axes (k_i, 3) or None for a
    mimic, the world points where its force acts on body1 and body2)) at the current state. The
    rows of a system whose constraints are all mimics are one compiled call (_mimic_rows); the
    rows of pins and equalities one compiled call each (_loop_rows) when the system has views
    of its frame placements; else constraint_rows_in_python."""
    mimics = system.mimics_only()
    if mimics is not None:
        spans, fu, lu, fq, lq, multiplier, offset = mimics
        k = fu.shape[0]
        J, e = np.empty((k, system.nv)), np.empty(k)
        _mimic_rows(system.q, fu, lu, fq, lq, multiplier, offset, J, e)
        return J, e, list(spans)
    return constraint_rows_and_axes(system)[:3]


def row_plan(constraints: list) -> np.ndarray:
    """Per constraint (its first row, its end row, 1 for a pin or equality, 0 for a mimic), as
    (n, 3) int64: the rows of constraint_rows, in order."""
    plan, r0 = np.zeros((len(constraints), 3), dtype=np.int64), 0
    for i, c in enumerate(constraints):
        n = 1 if isinstance(c, MimicConstraintState) else 3 if c.kind == "pin" else len(c.axes)
        plan[i] = r0, r0 + n, not isinstance(c, MimicConstraintState)
        r0 += n
    return plan


def constraint_rows_and_axes(system):
    """constraint_rows of a system with a pin or an equality, and the world axes of every row
    as one array (k, 3) (a mimic's row: zeros), whose rows r0..r1 are a pin's or equality's
    axes in its span."""
    plan = system.constraint_plan()
    k, nv = int(plan[-1, 1]), system.nv
    J, e, A, spans = np.empty((k, nv)), np.empty(k), np.zeros((k, 3)), []
    frames = views = scratch = None  # (at the first pin or equality: mimics need none)
    for c, (r0, r1, _) in zip(system.constraints, plan.tolist()):
        n = r1 - r0
        if isinstance(c, MimicConstraintState):
            J[r0] = 0.0
            J[r0, c.follower_u] += 1.0
            J[r0, c.leader_u] -= c.multiplier
            e[r0] = system.q[c.follower_q] - c.multiplier * system.q[c.leader_q] - c.offset
            spans.append((r0, r0 + 1, None, None))
        else:
            if scratch is None:
                frames = system.frame_placements()
                if frames is None:
                    J, e, spans = constraint_rows_in_python(system)
                    for r0_, r1_, axes, _ in spans:
                        if axes is not None:
                            A[r0_:r1_] = axes
                    return J, e, spans, A
                views, scratch = system.point_jacobian_views(), np.empty((15, nv))
            axes, p1, p2 = A[r0:r1], np.empty(3), np.empty(3)
            pin = c.kind == "pin"
            _loop_rows(frames[0], frames[1], system.frame_of(c.link1), system.frame_of(c.link2),
                       c.anchor1, c.anchor2, system.body_of(c.link1), system.body_of(c.link2),
                       pin, c.axes if not pin else _NO_AXES, views.J_world, views.origins,
                       views.supports, views.block_u, views.R, scratch, axes, p1, p2, J, e, r0)
            # where the force acts on body1 and on body2 (the spec's "Where the force acts")
            spans.append((r0, r0 + n, axes, (p1, p2) if pin else (p2, p2)))
    return J, e, spans, A


@kernel
def _report(A, lam, e, plan, out):
    """finish.constraint_report's vectors of constraints that include a pin or an
    equality (`plan`: row_plan's; A: constraint_rows_and_axes' axes): out[0, c] = A[r0:r1]^T
    lam[r0:r1] for a pin or equality (linalg.matmul's _mv), (lam[r0], 0, 0) for a mimic; out[1,
    c] = e[r0:r1] then zeros."""
    for c in range(plan.shape[0]):
        r0, r1 = plan[c, 0], plan[c, 1]
        if plan[c, 2]:
            _mv(A[r0:r1].T, span(lam, r0, r1), out[0, c])
        else:
            out[0, c, 0], out[0, c, 1], out[0, c, 2] = lam[r0], 0.0, 0.0
        for i in range(3):
            out[1, c, i] = e[r0 + i] if i < r1 - r0 else 0.0


def constraint_rows_in_python(system):
    """constraint_rows with the system's frame getters and point Jacobians, one array
    expression after the other (a system without frame views; and the tests' reference)."""
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


@kernel
def _first_nonzero(J):
    """The first column where a row of J is not 0, or 0 when an entry of J is -0.0
    (_cho_solve_rows' `first`)."""
    k, nv = J.shape
    first = nv
    for r in range(k):
        for c in range(nv):
            x = J[r, c]
            if x == 0.0 and math.copysign(1.0, x) < 0.0:
                return 0
        f = 0
        while f < first and J[r, f] == 0.0:
            f += 1
        first = f
    return first


@kernel
def _eliminate(L, J, e, u_star, beta_, tolerance, MinvJT, D, work, perm, J_kept, MinvJT_kept,
               D_kept, L_D, rhs, lam0, lambda0, u0):
    """Elimination.__init__'s algebra in one call, with the operations of its linalg calls in
    their order: MinvJT = M~^-1 J^T (Cholesky.solve), D = J MinvJT, the independent rows (scale
    = the largest diagonal entry of D, numpy's max; linalg.independent_rows), their J, MinvJT
    and D gathered into J_kept, MinvJT_kept, D_kept, D's factor L_D, lambda_0 of
    the kept rows (lam0) and of every row (lambda0, 0 for a dropped one), and u_0; perm[:rank]
    holds the kept rows, sorted. Returns (rank, the factor's info).

    Two sums skip what changes no bit: the forward pass of M~^-1 J^T starts at the first column
    where a row is not 0 (_cho_solve_rows' `first`; mimic rows and a leg's loop leave the
    columns before them +0.0), unless an entry of J is -0.0; and D = J M~^-1 J^T skips the
    terms whose J[i, p] is 0 (_skipping_mm: its sums start at +0.0, M~^-1 J^T is finite)."""
    k, nv = J.shape
    _cho_solve_rows(L, J, 0, MinvJT, 0, _first_nonzero(J))
    _skipping_mm(J, MinvJT, D)
    rank = 0
    if k:
        scale = D[0, 0]
        for i in range(1, k):
            if D[i, i] > scale or D[i, i] != D[i, i]:  # np.max: a NaN wins
                scale = D[i, i]
        if not scale <= 0.0:
            for i in range(k):
                for j in range(k):
                    work[i, j] = D[i, j]
            rank = _pivoted_rank(work, tolerance * scale, perm)
    kept = span(perm, 0, rank)
    for a in range(1, rank):  # kept sorted in place (insertion sort): the kept rows in row order
        r, b = kept[a], a
        while b > 0 and kept[b - 1] > r:
            kept[b] = kept[b - 1]
            b -= 1
        kept[b] = r
    for a in range(rank):
        r = kept[a]
        for c in range(nv):
            J_kept[a, c] = J[r, c]
            MinvJT_kept[c, a] = MinvJT[c, r]
        for b in range(rank):
            D_kept[a, b] = D[r, kept[b]]
    Jk, Mk = J_kept[:rank], MinvJT_kept[:, :rank]  # (the gathered copies: the same values)
    info = _cholesky(D_kept[:rank, :rank], L_D[:rank, :rank])
    for a in range(rank):  # -beta e[kept] - J_kept u*
        s = 0.0
        for c in range(nv):
            s += Jk[a, c] * u_star[c]
        rhs[0, a] = -beta_ * e[kept[a]] - s
    if rank:
        _cho_solve_rows(L_D[:rank, :rank], rhs[:, :rank], 0, lam0[:rank], 0, 0)
    for i in range(k):
        lambda0[i] = 0.0
    for a in range(rank):
        lambda0[kept[a]] = lam0[a, 0]
    for c in range(nv):  # u* + MinvJT_kept lam0
        s = 0.0
        for a in range(rank):
            s += Mk[c, a] * lam0[a, 0]
        u0[c] = u_star[c] + s
    return rank, info


@kernel
def _response(J, Y, L_D, MinvJT, JY, JYT, DinvJY, prod, out):
    """Elimination.response's algebra with the operations of its linalg calls in their order:
    JY = J Y (matmul; _skipping_mm, for Y finite), DinvJY = D^-1 JY (Cholesky.solve: JY's columns
    solved side by side from its transpose), out = Y - MinvJT DinvJY (matmul, then numpy's
    subtraction). JY, JYT, prod: scratch."""
    _skipping_mm(J, Y, JY)
    for i in range(JY.shape[0]):
        for c in range(JY.shape[1]):
            JYT[c, i] = JY[i, c]
    _cho_solve_rows(L_D, JYT, 0, DinvJY, 0, 0)
    _mm(MinvJT, DinvJY, prod)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = Y[i, j] - prod[i, j]


@kernel
def _recovered(lambda0, kept, DinvJY, lambda_c, m, J, v, lam, generalized):
    """lam = lambda0, less DinvJY lambda_c on the kept rows (when m, lambda_c's length, is not
    0), and generalized = J^T lam, with the operations of Elimination.impulses' former numpy
    and linalg calls: matmul's sums in index order, then numpy's subtraction. v: scratch."""
    for i in range(lam.shape[0]):
        lam[i] = lambda0[i]
    if m:
        _mv(DinvJY, lambda_c, v)
        for a in range(kept.shape[0]):
            lam[kept[a]] = lam[kept[a]] - v[a]
    for c in range(J.shape[1]):
        s = 0.0
        for p in range(J.shape[0]):
            s += J[p, c] * lam[p]
        generalized[c] = s


def packed_size(k: int, nv: int) -> int:
    """The length of an Elimination's EF for k rows over nv columns: slots for its kept rows J
    (k nv), D's factor (k k), M~^-1 J^T of the kept rows (nv k), each carved with the kept
    number r <= k, lambda_0 (k), every row (k nv), M~^-1 J^T of every row (nv k), and the
    constraints' impulses that step/alone.py's _impulse_step recovers after its solve (k)."""
    return 4 * k * nv + k * k + 2 * k


def scratch_size(k: int, nv: int) -> int:
    """The length of _eliminate_packed's scratch W for k rows over nv columns."""
    return 4 * k * k + 2 * k * nv + 2 * k


_SCRATCH = threading.local()  # per thread: (k, nv) -> _eliminate_packed's scratch


def _scratch(k: int, nv: int) -> np.ndarray:
    """_eliminate_packed's scratch for k rows over nv columns, made once per size and thread
    (each of its arrays is written before it is read in a call)."""
    cache = getattr(_SCRATCH, "by_size", None)
    if cache is None:
        cache = _SCRATCH.by_size = {}
    W = cache.get((k, nv))
    if W is None:
        if len(cache) >= 64:
            cache.clear()
        W = cache[(k, nv)] = np.empty(scratch_size(k, nv))
    return W


@kernel
def _eliminate_packed(L, J, e, u_star, beta_, tolerance, W, EF, EI, u0):
    """_eliminate with its scratch carved from W (_scratch) and its results packed into EF
    (packed_size's slots: the kept rows' J, D's factor and M~^-1 J^T, each C-contiguous with r
    rows or columns, then lambda_0, every row J and M~^-1 J^T) and EI = [k, r, kept (r), the
    pivots' other rows]; u0 (nv,) is u_0. The kept rows are gathered from J_kept and
    MinvJT_kept (equal to J and M~^-1 J^T's columns when every row is kept). Returns (r, the
    factor's info)."""
    k, nv = J.shape
    a = 0
    D = carve(W, a, (k, k))
    a += k * k
    work = carve(W, a, (k, k))
    a += k * k
    D_kept = carve(W, a, (k, k))
    a += k * k
    L_D = carve(W, a, (k, k))
    a += k * k
    J_kept = carve(W, a, (k, nv))
    a += k * nv
    MinvJT_kept = carve(W, a, (nv, k))
    a += nv * k
    rhs = carve(W, a, (1, k))
    a += k
    lam0 = carve(W, a, (k, 1))
    b = 2 * k * nv + k * k  # lambda_0, then every row's J and M~^-1 J^T
    lambda0 = span(EF, b, b + k)
    J_all = carve(EF, b + k, (k, nv))
    MinvJT = carve(EF, b + k + k * nv, (nv, k))
    for i in range(k):
        for c in range(nv):
            J_all[i, c] = J[i, c]
        for j in range(k):
            L_D[i, j] = 0.0
    rank, info = _eliminate(L, J_all, e, u_star, beta_, tolerance, MinvJT, D, work,
                            span(EI, 2, EI.shape[0]),
                            J_kept, MinvJT_kept, D_kept, L_D, rhs, lam0, lambda0, u0)
    EI[0], EI[1] = k, rank
    EJ = carve(EF, 0, (rank, nv))
    LDk = carve(EF, k * nv, (rank, rank))
    MK = carve(EF, k * nv + k * k, (nv, rank))
    for i in range(rank):
        for c in range(nv):
            EJ[i, c] = J_kept[i, c]
        for j in range(rank):
            LDk[i, j] = L_D[i, j]
    for c in range(nv):
        for j in range(rank):
            MK[c, j] = MinvJT_kept[c, j]
    return rank, info


@kernel
def _eliminate_mimics(q, follower_u, leader_u, follower_q, leader_q, multiplier, offset, L, e,
                      u_star, beta_, tolerance, W, EF, EI, u0):
    """The rows of mimic constraints (_mimic_rows, J into EF's slot of every row, e into e),
    then _eliminate_packed of them."""
    k, nv = follower_u.shape[0], u_star.shape[0]
    J = carve(EF, 2 * k * nv + k * k + k, (k, nv))
    _mimic_rows(q, follower_u, leader_u, follower_q, leader_q, multiplier, offset, J, e)
    return _eliminate_packed(L, J, e, u_star, beta_, tolerance, W, EF, EI, u0)


class Elimination:
    """The elimination of one step: built from J, e, the factorised M~ and u*, in one compiled
    call (_eliminate_packed) whose results are packed in EF and EI (the layout that
    raisimcli.physics.step.alone's _impulse_step reads); J, MinvJT, D_chol, kept, lambda0,
    J_all and MinvJT_all are views of them, made when first read."""

    def __init__(self, J: np.ndarray, e: np.ndarray, factor, u_star: np.ndarray, beta_: float):
        k, nv = J.shape
        self._arrays(k, nv, e)
        self.rank, self.info = _eliminate_packed(
            factor.lower, np.ascontiguousarray(J, dtype=np.float64),
            np.ascontiguousarray(e, dtype=np.float64), u_star, float(beta_), RANK_TOLERANCE,
            _scratch(k, nv), self.EF, self.EI, self.u0)

    @classmethod
    def of_mimics(cls, q: np.ndarray, plan: tuple, factor, u_star: np.ndarray,
                  beta_: float) -> "Elimination":
        """The elimination of mimic constraints alone at configuration q (`plan`: mimic_plan's),
        their rows made in the same compiled call (_eliminate_mimics): what Elimination gives
        from constraint_rows' J and e."""
        _, fu, lu, fq, lq, multiplier, offset = plan
        self = cls.__new__(cls)
        k, nv = fu.shape[0], u_star.shape[0]
        self._arrays(k, nv, np.empty(k))
        self.rank, self.info = _eliminate_mimics(
            q, fu, lu, fq, lq, multiplier, offset, factor.lower, self.e_all, u_star, float(beta_),
            RANK_TOLERANCE, _scratch(k, nv), self.EF, self.EI, self.u0)
        return self

    def _arrays(self, k: int, nv: int, e: np.ndarray) -> None:
        """The sizes, the errors e and the arrays the compiled call writes."""
        self.k, self.nv, self.e_all = k, nv, e
        self.EF, self.EI = np.empty(packed_size(k, nv)), np.empty(2 + k, np.int64)
        self.u0 = np.empty(nv)

    @cached_property
    def kept(self) -> np.ndarray:
        """The kept (independent) rows, sorted."""
        return self.EI[2:2 + self.rank]

    @cached_property
    def J(self) -> np.ndarray:
        """The kept rows (r, nv)."""
        return self.EF[:self.rank * self.nv].reshape(self.rank, self.nv)

    @cached_property
    def D_chol(self) -> Cholesky:
        """D's factor over the kept rows."""
        a, r = self.k * self.nv, self.rank
        return Cholesky.of_factor(self.EF[a:a + r * r].reshape(r, r), self.info)

    @cached_property
    def MinvJT(self) -> np.ndarray:
        """M~^-1 J^T of the kept rows, (nv, r)."""
        a = self.k * self.nv + self.k * self.k
        return self.EF[a:a + self.nv * self.rank].reshape(self.nv, self.rank)

    @cached_property
    def lambda0(self) -> np.ndarray:
        """lambda_0 of every row (k,): 0 for a dropped one."""
        a = 2 * self.k * self.nv + self.k * self.k
        return self.EF[a:a + self.k]

    @cached_property
    def J_all(self) -> np.ndarray:
        """Every row (k, nv)."""
        a = 2 * self.k * self.nv + self.k * self.k + self.k
        return self.EF[a:a + self.k * self.nv].reshape(self.k, self.nv)

    @cached_property
    def impulses_solved(self) -> np.ndarray:
        """The constraints' impulses (k,) that step/alone.py's _impulse_step recovered after
        its solve (equation 2; written there, not here)."""
        a = 4 * self.k * self.nv + self.k * self.k + self.k
        return self.EF[a:a + self.k]

    @cached_property
    def MinvJT_all(self) -> np.ndarray:
        """M~^-1 J^T of every row, (nv, k)."""
        a = 3 * self.k * self.nv + self.k * self.k + self.k
        return self.EF[a:a + self.nv * self.k].reshape(self.nv, self.k)

    def _solve_D(self, rhs):
        if rhs.size == 0:
            return rhs
        return self.D_chol.solve(rhs)

    def response(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For Y = M~^-1 J_c^T (nv, m): (M_c^-1 J_c^T, D^-1 J Y) - the constrained response and
        what recovers lambda from lambda_c - in one compiled call (_response)."""
        r, (nv, m) = len(self.kept), Y.shape
        if not r or m == 0:
            return Y, np.zeros((r, m))
        out, DinvJY = np.empty((nv, m)), np.empty((r, m))
        _response(self.J, np.ascontiguousarray(Y, dtype=np.float64), self.D_chol.L,
                  self.MinvJT, np.empty((r, m)), np.empty((m, r)), DinvJY, np.empty((nv, m)),
                  out)
        return out, DinvJY

    def impulses(self, DinvJY: np.ndarray, lambda_c: np.ndarray) -> tuple[np.ndarray,
                                                                          np.ndarray]:
        """(lambda of every row (dropped rows: 0), equation (2); J^T lambda, the constraints'
        generalized impulse), in one compiled call (_recovered)."""
        k, nv = self.J_all.shape
        lam, generalized = np.empty(k), np.empty(nv)
        m = lambda_c.shape[0] if len(self.kept) else 0
        _recovered(self.lambda0, self.kept, np.ascontiguousarray(DinvJY, dtype=np.float64),
                   np.ascontiguousarray(lambda_c, dtype=np.float64), m, self.J_all,
                   np.empty(len(self.kept)), lam, generalized)
        return lam, generalized

    def inverse_mass(self, Minv: np.ndarray) -> np.ndarray:
        """M_c^-1 (nv, nv) from M~^-1."""
        return Minv - matmul(self.MinvJT, self._solve_D(self.MinvJT.T))
