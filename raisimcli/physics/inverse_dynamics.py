"""Inverse dynamics (spec: "Inverse Dynamics"): the force and torque at every joint, in the world
frame, after a step.

Pinocchio's RNEA runs at the step's start (q_t, u_t) with the step's actual acceleration
a = (u_{t+1} - u_t) / dt and the step's external loads; its joint forces f_i are the wrenches the
parent body transmits to body i through joint i, so they carry every load of the step: gravity,
external forces, and (through the acceleration) the actuation, damping, springs, friction, limit,
contact and constraint impulses. Rotor inertia sits on the parent side: S^T f_i is the generalized
force on the joint minus rotor_inertia * a_i.

A fixed joint's wrench is what the links welded beyond it need: their inertial wrench, less their
external loads, plus the wrenches of the moving joints below them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from sys import getrefcount

import numpy as np
import pinocchio as pin
from numba import types

from raisimcli.jit import ArrayTable, carve, kernel, span, table_view
from raisimcli.linalg import dot, matmul
from raisimcli.physics.contact_set import ContactLoads
from raisimcli.physics.conventions import _step_pin_acceleration
from raisimcli.physics.pinocchio_views import checked_views


@kernel
def _rotate(R, b, i, v0, v1, v2):
    """Row i of R[b] (v0, v1, v2) in the order Pinocchio's compiled Eigen sums it: rows 0 and 1
    as one SSE2 packet, left to right; row 2 as r0 v0 + (r1 v1 + r2 v2).
    tests/test_inverse_dynamics.py checks the bits against Pinocchio's SE3.act. (The vector
    comes as three numbers: an array and a row would be compiled once per kind of array.)"""
    if i < 2:
        return (R[b, i, 0] * v0 + R[b, i, 1] * v1) + R[b, i, 2] * v2
    return R[b, i, 0] * v0 + (R[b, i, 1] * v1 + R[b, i, 2] * v2)


@kernel
def _loads_in_body_frames(R, T, bodies, points, vectors, torques, cleared, f_lin, f_ang, lin,
                          ang):
    """Load n (world vector vectors[n] at the world point points[n], or a pure torque where
    torques[n]) as a spatial force in its body's frame about the body's origin, into lin[n],
    ang[n], with the operations of ArticulatedSystem._load_as_local_force: F = R^T v and
    r = R^T (p - t) summed in index order, the moment r x F as linalg.cross. Then the external
    forces fext (views f_lin, f_ang): the bodies of the last call (`cleared`) set to zero, and
    each load added to its body's entry in load order, as pin.Force's sum does."""
    for k in range(cleared.shape[0]):
        b = cleared[k]
        for i in range(3):
            f_lin[b, i] = 0.0
            f_ang[b, i] = 0.0
    for n in range(bodies.shape[0]):
        b = bodies[n]
        if torques[n]:
            for i in range(3):
                acc = 0.0
                for p in range(3):
                    acc += R[b, p, i] * vectors[n, p]
                lin[n, i] = 0.0
                ang[n, i] = acc
        else:
            d0, d1, d2 = points[n, 0] - T[b, 0], points[n, 1] - T[b, 1], points[n, 2] - T[b, 2]
            r0 = 0.0 + R[b, 0, 0] * d0 + R[b, 1, 0] * d1 + R[b, 2, 0] * d2
            r1 = 0.0 + R[b, 0, 1] * d0 + R[b, 1, 1] * d1 + R[b, 2, 1] * d2
            r2 = 0.0 + R[b, 0, 2] * d0 + R[b, 1, 2] * d1 + R[b, 2, 2] * d2
            v0, v1, v2 = vectors[n, 0], vectors[n, 1], vectors[n, 2]
            F0 = 0.0 + R[b, 0, 0] * v0 + R[b, 1, 0] * v1 + R[b, 2, 0] * v2
            F1 = 0.0 + R[b, 0, 1] * v0 + R[b, 1, 1] * v1 + R[b, 2, 1] * v2
            F2 = 0.0 + R[b, 0, 2] * v0 + R[b, 1, 2] * v1 + R[b, 2, 2] * v2
            lin[n, 0], lin[n, 1], lin[n, 2] = F0, F1, F2
            ang[n, 0] = r1 * F2 - r2 * F1
            ang[n, 1] = r2 * F0 - r0 * F2
            ang[n, 2] = r0 * F1 - r1 * F0
        for i in range(3):
            f_lin[b, i] = f_lin[b, i] + lin[n, i]
            f_ang[b, i] = f_ang[b, i] + ang[n, i]


@kernel
def _inertia_times(mass, c, S, lin, ang, f_lin, f_ang):
    """Pinocchio's Inertia * Motion in its order: f_lin = m (v - c x w), f_ang = S w + c x f_lin."""
    x0 = lin[0] - (c[1] * ang[2] - c[2] * ang[1])
    x1 = lin[1] - (c[2] * ang[0] - c[0] * ang[2])
    x2 = lin[2] - (c[0] * ang[1] - c[1] * ang[0])
    f_lin[0], f_lin[1], f_lin[2] = mass * x0, mass * x1, mass * x2
    for i in range(3):
        f_ang[i] = ((S[i, 0] * ang[0] + S[i, 1] * ang[1]) + S[i, 2] * ang[2]) + \
            (c[(i + 1) % 3] * f_lin[(i + 2) % 3] - c[(i + 2) % 3] * f_lin[(i + 1) % 3])


# the arrays _wrenches reads at every call, in InverseDynamics' ArrayTable (one argument instead of
# fifteen): the views of the RNEA data (R, T of oMi, L, A of f, lR, lT of liMi, vL, vA of v,
# aL, aA of a_gf), the packed indices and constants, the scratch (the pass's vectors, moment,
# point), then the system's placements (R, T; the RNEA's again when it has none)
_ROTATIONS, _VECTORS = (types.float64, 3, "A"), (types.float64, 2, "A")
_INTS, _FLOATS, _MATRIX = (types.int64, 1, "C"), (types.float64, 1, "C"), (types.float64, 2, "C")
_rotations_of, _vectors_of = table_view(_ROTATIONS), table_view(_VECTORS)
_ints_of, _floats_of, _matrix_of = table_view(_INTS), table_view(_FLOATS), table_view(_MATRIX)
_POOL = 4  # the JointWrenches kept for reuse (InverseDynamics._results)


@kernel
def _wrenches(arrays, step_placements, load_lin, load_ang, mask, force, torque, actuation):
    """Every joint's wrench in the world frame from the RNEA's data (views R, T of oMi, L, A of
    f, lR, lT of liMi, vL, vA of v, aL, aA of a_gf), in three passes, each operation in the
    order of Pinocchio's compiled code (its SE3::act, Inertia * Motion, cross products):

    1. each moving joint: its force f_i moved to the world frame about the world origin,
       oMi.act(f) = (R f_lin, R f_ang + p x R f_lin), and the joint's position p;
    2. each fixed joint: what the links welded beyond it need, their inertial wrenches
       I a + v x* (I v), less their loads (load_lin, load_ang: local spatial forces; `mask`
       (n_fixed, n_loads): whether each load's link is welded beyond it), plus the wrenches
       of the moving joints hanging from them (liMi.act(f)), moved to the world frame, and
       the joint's frame origin in the world;
    3. torque = moment - point x force (about each joint's position), and for each 1-DoF joint
       axis . torque (axis . force for a prismatic one), the axis in the world frame.

    The arrays come in `arrays` (the table above); `step_placements` (1): R, T are the
    system's placements (the step's), else the RNEA data's. `ints` starts with the bounds of its
    ten sections (moving rows, moving bodies, fixed rows, fixed bodies, in_off, hang_off, hang
    bodies, 1-DoF rows, 1-DoF bodies, 1-DoF prismatic);
    `floats` holds the fixed joints' frames (n_fixed, 3), the welded inertias' masses, levers
    (n_in, 3) and rotational inertias (n_in, 3, 3), and the 1-DoF axes (n_one, 3), in that
    order (InverseDynamics._packed). One kernel rather than one per pass: numba compiles each
    callee on its own and again inside its caller. `scratch` (8, 3): the 3-vectors of pass 2
    (no array is made inside: each would cost numba compile time); `moment`, `point`
    (n_joints, 3): scratch."""
    R, T = _rotations_of(arrays, 0), _vectors_of(arrays, 1)
    if step_placements:
        R, T = _rotations_of(arrays, 15), _vectors_of(arrays, 16)
    L, A = _vectors_of(arrays, 2), _vectors_of(arrays, 3)
    lR, lT = _rotations_of(arrays, 4), _vectors_of(arrays, 5)
    vL, vA, aL, aA = _vectors_of(arrays, 6), _vectors_of(arrays, 7), _vectors_of(arrays, 8), \
        _vectors_of(arrays, 9)
    ints, floats = _ints_of(arrays, 10), _floats_of(arrays, 11)
    scratch, moment, point = _matrix_of(arrays, 12), _matrix_of(arrays, 13), _matrix_of(arrays, 14)
    moving_rows, moving_bodies = span(ints, ints[0], ints[1]), span(ints, ints[1], ints[2])
    rows, bodies = span(ints, ints[2], ints[3]), span(ints, ints[3], ints[4])
    in_off, hang_off, hang_bodies = span(ints, ints[4], ints[5]), span(ints, ints[5], ints[6]), \
        span(ints, ints[6], ints[7])
    one_rows, one_bodies, prismatic = span(ints, ints[7], ints[8]), span(ints, ints[8], ints[9]), \
        span(ints, ints[9], ints[10])
    nf, n_in, n_one = rows.shape[0], in_off[in_off.shape[0] - 1], one_rows.shape[0]
    a = 3 * nf
    frames = carve(floats, 0, (nf, 3))
    in_mass = span(floats, a, a + n_in)
    a += n_in
    in_lever = carve(floats, a, (n_in, 3))
    a += 3 * n_in
    in_S = carve(floats, a, (n_in, 3, 3))
    a += 9 * n_in
    axes = carve(floats, a, (n_one, 3))
    # 1. the moving joints
    for n in range(moving_bodies.shape[0]):
        b, k = moving_bodies[n], moving_rows[n]
        for i in range(3):
            force[k, i] = _rotate(R, b, i, L[b, 0], L[b, 1], L[b, 2])
        p0, p1, p2 = T[b, 0], T[b, 1], T[b, 2]
        f0, f1, f2 = force[k, 0], force[k, 1], force[k, 2]
        px = (p1 * f2 - p2 * f1, p2 * f0 - p0 * f2, p0 * f1 - p1 * f0)
        for i in range(3):
            moment[k, i] = _rotate(R, b, i, A[b, 0], A[b, 1], A[b, 2]) + px[i]
            point[k, i] = T[b, i]
    # 2. the fixed joints
    w_lin, w_ang = scratch[0], scratch[1]
    ia_lin, ia_ang, iv_lin, iv_ang = scratch[2], scratch[3], scratch[4], scratch[5]
    x_lin, x_ang = scratch[6], scratch[7]
    for n in range(rows.shape[0]):
        k, b = rows[n], bodies[n]
        for i in range(3):
            w_lin[i] = 0.0
            w_ang[i] = 0.0
        for q in range(in_off[n], in_off[n + 1]):
            _inertia_times(in_mass[q], in_lever[q], in_S[q], aL[b], aA[b], ia_lin, ia_ang)
            _inertia_times(in_mass[q], in_lever[q], in_S[q], vL[b], vA[b], iv_lin, iv_ang)
            # v x* (I v): (w x f_lin, w x f_ang + v x f_lin)
            om, vl = vA[b], vL[b]
            x_lin[0] = om[1] * iv_lin[2] - om[2] * iv_lin[1]
            x_lin[1] = om[2] * iv_lin[0] - om[0] * iv_lin[2]
            x_lin[2] = om[0] * iv_lin[1] - om[1] * iv_lin[0]
            x_ang[0] = (om[1] * iv_ang[2] - om[2] * iv_ang[1]) + \
                (vl[1] * iv_lin[2] - vl[2] * iv_lin[1])
            x_ang[1] = (om[2] * iv_ang[0] - om[0] * iv_ang[2]) + \
                (vl[2] * iv_lin[0] - vl[0] * iv_lin[2])
            x_ang[2] = (om[0] * iv_ang[1] - om[1] * iv_ang[0]) + \
                (vl[0] * iv_lin[1] - vl[1] * iv_lin[0])
            for i in range(3):
                w_lin[i] = (w_lin[i] + ia_lin[i]) + x_lin[i]
                w_ang[i] = (w_ang[i] + ia_ang[i]) + x_ang[i]
        for j in range(load_lin.shape[0]):
            if mask[n, j]:
                for i in range(3):
                    w_lin[i] = w_lin[i] - load_lin[j, i]
                    w_ang[i] = w_ang[i] - load_ang[j, i]
        for h in range(hang_off[n], hang_off[n + 1]):
            c = hang_bodies[h]
            for i in range(3):
                x_lin[i] = _rotate(lR, c, i, L[c, 0], L[c, 1], L[c, 2])
            for i in range(3):
                x_ang[i] = _rotate(lR, c, i, A[c, 0], A[c, 1], A[c, 2]) + \
                    (lT[c, (i + 1) % 3] * x_lin[(i + 2) % 3] -
                     lT[c, (i + 2) % 3] * x_lin[(i + 1) % 3])
            for i in range(3):
                w_lin[i] = w_lin[i] + x_lin[i]
                w_ang[i] = w_ang[i] + x_ang[i]
        for i in range(3):
            force[k, i] = _rotate(R, b, i, w_lin[0], w_lin[1], w_lin[2])
        for i in range(3):
            moment[k, i] = _rotate(R, b, i, w_ang[0], w_ang[1], w_ang[2]) + \
                (T[b, (i + 1) % 3] * force[k, (i + 2) % 3] -
                 T[b, (i + 2) % 3] * force[k, (i + 1) % 3])
        for i in range(3):
            point[k, i] = _rotate(R, b, i, frames[n, 0], frames[n, 1], frames[n, 2]) + T[b, i]
    # 3. the torques about the joints' positions, the actuation along 1-DoF axes
    for k in range(force.shape[0]):
        a0, a1, a2 = point[k, 0], point[k, 1], point[k, 2]
        b0, b1, b2 = force[k, 0], force[k, 1], force[k, 2]
        torque[k, 0] = moment[k, 0] - (a1 * b2 - a2 * b1)
        torque[k, 1] = moment[k, 1] - (a2 * b0 - a0 * b2)
        torque[k, 2] = moment[k, 2] - (a0 * b1 - a1 * b0)
    for n in range(one_rows.shape[0]):
        k, b = one_rows[n], one_bodies[n]
        s = 0.0
        for i in range(3):
            w = 0.0
            for p in range(3):
                w += R[b, i, p] * axes[n, p]
            s += w * (force[k, i] if prismatic[n] else torque[k, i])
        actuation[k] = s


@dataclass
class JointWrenches:
    """Per joint of the model (our joint order, fixed joints included): `force`, `torque`
    (n_joints, 3) in the world frame, the torque about the joint's position at the step's start;
    `actuation` (n_joints,): axis . torque (revolute, continuous) or axis . force (prismatic),
    NaN for other joint types. `packed`, when the three are views of one array end to end
    (force, torque, actuation: 7 n_joints entries, as the step's compiled pass writes them),
    is that array, else None; a log copies it in one operation. Read it, never write it."""

    force: np.ndarray
    torque: np.ndarray
    actuation: np.ndarray
    packed: np.ndarray | None = field(default=None, repr=False, compare=False)

    @classmethod
    def packed_of(cls, n: int) -> "JointWrenches":
        """New wrenches of n joints as views of one array (`packed`), actuation NaN."""
        block = np.empty(7 * n)
        block[6 * n:] = np.nan
        return cls(block[:3 * n].reshape(n, 3), block[3 * n:6 * n].reshape(n, 3),
                   block[6 * n:], block)


class InverseDynamics:
    """Precomputed structure of one robot for :meth:`compute`."""

    def __init__(self, system):
        model = system.model
        self.system = system
        links = {link.name: link for link in model.links}
        children: dict[str, list] = {}
        for j in model.joints:
            children.setdefault(j.parent, []).append(j)
        self.joints = model.joints
        self.n = len(model.joints)
        # per fixed joint: its body, its frame, the links welded beyond it, the moving joints
        # hanging from those links
        self.fixed = []
        for k, j in enumerate(model.joints):
            if j.type != "fixed":
                continue
            body = links[j.child].body
            welded, hanging, stack = [], [], [j.child]
            while stack:
                name = stack.pop()
                welded.append(name)
                for c in children.get(name, []):
                    (stack.append(c.child) if c.type == "fixed" else hanging.append(c))
            inertias = []
            for name in welded:
                ine = links[name].inertial
                if ine is not None and ine.mass > 0:
                    placement = pin.SE3(links[name].body_T_link[:3, :3].copy(),
                                        links[name].body_T_link[:3, 3].copy())
                    inertias.append(placement.act(pin.Inertia(ine.mass, np.array(ine.com),
                                                              np.array(ine.inertia))))
            origin = links[j.child].body_T_link[:3, 3].copy()  # the joint's position in the body
            self.fixed.append((k, j, body, origin, set(welded), inertias,
                               [links[c.child].body for c in hanging]))
        self.moving = [(k, links[j.child].body, j) for k, j in enumerate(model.joints)
                       if j.type != "fixed"]
        # the compiled path: index arrays, and views of the RNEA data's placements and forces
        self.data = system.pinocchio.model.createData()  # RNEA's, apart from the step's
        self._views = checked_views(system.pinocchio.model, self.data)
        self._moving_rows = np.array([k for k, _, _ in self.moving], dtype=np.int64)
        self._moving_bodies = np.array([b for _, b, _ in self.moving], dtype=np.int64)
        one = [(k, b, j) for k, b, j in self.moving if j.nv == 1]
        self._one_rows = np.array([k for k, _, _ in one], dtype=np.int64)
        self._one_bodies = np.array([b for _, b, _ in one], dtype=np.int64)
        self._one_axes = np.array([j.axis for _, _, j in one], dtype=np.float64).reshape(-1, 3)
        self._one_prismatic = np.array([j.type == "prismatic" for _, _, j in one])
        if self._views is not None:
            from raisimcli.physics.pinocchio_views import extra_views
            self._extra = extra_views(self.data, system.pinocchio.model.njoints)
            f = self.fixed
            self._fixed_rows = np.array([x[0] for x in f], dtype=np.int64)
            self._fixed_bodies = np.array([x[2] for x in f], dtype=np.int64)
            self._fixed_frames = np.array([x[3] for x in f], dtype=np.float64).reshape(-1, 3)
            inertias = [I for x in f for I in x[5]]
            self._in_off = np.cumsum([0] + [len(x[5]) for x in f]).astype(np.int64)
            self._in_mass = np.array([I.mass for I in inertias], dtype=np.float64)
            self._in_lever = np.array([I.lever for I in inertias], dtype=np.float64).reshape(-1, 3)
            self._in_S = np.array([I.inertia for I in inertias],
                                  dtype=np.float64).reshape(-1, 3, 3)
            self._hang_off = np.cumsum([0] + [len(x[6]) for x in f]).astype(np.int64)
            self._hang_bodies = np.array([c for x in f for c in x[6]], dtype=np.int64)
            self._ints, self._floats = self._packed()
        self._fext = pin.StdVec_Force()
        for _ in range(system.pinocchio.model.njoints):
            self._fext.append(pin.Force.Zero())
        self._loaded = np.zeros(0, dtype=np.int64)  # bodies whose entry of _fext is not zero
        # the compiled loads: views of _fext and of the step's placements, the body of each
        # link, the fixed joints' masks of welded links per tuple of loaded links
        from raisimcli.physics.pinocchio_views import checked_force_vector
        self._fext_views = checked_force_vector(self._fext) \
            if self._views is not None and system.placement_views is not None else None
        self._link_body: dict[str, int] = {}
        self._masks: dict[tuple, np.ndarray] = {}
        self._scratch_of: dict[int, tuple] = {}  # _scratch's arrays by number of loads
        # scratch of the compiled passes, made once: the moments about the world origin and the
        # joints' points (every row the passes write is written at every call, the others stay
        # 0), the fixed pass's 11 vectors, its inputs when the step has no point loads, and the
        # actuation's NaN row that each call copies
        self._moment, self._point = np.zeros((self.n, 3)), np.zeros((self.n, 3))
        self._fixed_scratch = np.empty((8, 3))
        self._no_loads = (np.zeros((0, 3)), np.zeros((0, 3)),
                          np.zeros((len(self.fixed), 0), dtype=np.bool_))
        self._nan = np.full(self.n, np.nan)
        self._pool: list[JointWrenches] = []  # (_results)
        self._table = None  # _wrenches' ArrayTable
        if self._views is not None:
            steps = system.placement_views or self._views[:2]
            try:
                self._table = ArrayTable(
                    [(a, kind) for a, kind in zip(
                        (*self._views, *self._extra[0], *self._extra[1], *self._extra[2],
                         self._ints, self._floats, self._fixed_scratch, self._moment,
                         self._point, *steps),
                        (_ROTATIONS,) + (_VECTORS,) * 3 + (_ROTATIONS,) + (_VECTORS,) * 5 +
                        (_INTS, _FLOATS) + (_MATRIX,) * 3 + (_ROTATIONS, _VECTORS))])
            except TypeError:  # (views of other kinds: the passes in Python below)
                self._views = None
        nv = system.nv  # after_step's acceleration, its rotation and Pinocchio's (scratch)
        self._acc, self._rotated, self._a_pin = np.empty((nv, 1)), np.empty((nv, 1)), \
            np.empty(nv)

    def _results(self) -> "JointWrenches":
        """A JointWrenches for _wrenches to write: one of the pool that nothing else holds any
        more, nor any of its arrays (a step's, kept by the system until the next step, or
        what a user kept of it: sys.getrefcount counts the pool's reference alone), else a
        new one (kept while the pool has fewer than _POOL). _wrenches writes every row of
        force and torque and the 1-DoF joints' entries of actuation, whose others stay NaN."""
        for jw in self._pool:  # (jw: the pool's reference, the loop's and the argument's; the
            # packed array's: jw's, the three views' and the argument's. A view of a view that
            # a user kept has the packed array as its base, and counts there)
            if getrefcount(jw) == 3 and getrefcount(jw.force) == 2 and \
                    getrefcount(jw.torque) == 2 and getrefcount(jw.actuation) == 2 and \
                    getrefcount(jw.packed) == 5:
                return jw
        jw = JointWrenches.packed_of(self.n)
        if len(self._pool) < _POOL:
            self._pool.append(jw)
        return jw

    def _packed(self) -> tuple[np.ndarray, np.ndarray]:
        """The index and constant arrays of the compiled passes as _wrenches takes them."""
        sections = [self._moving_rows, self._moving_bodies, self._fixed_rows,
                    self._fixed_bodies, self._in_off, self._hang_off, self._hang_bodies,
                    self._one_rows, self._one_bodies, self._one_prismatic.astype(np.int64)]
        bounds = np.cumsum([len(sections) + 1] + [len(x) for x in sections])
        ints = np.concatenate([bounds] + sections).astype(np.int64)
        floats = np.concatenate([x.ravel() for x in (
            self._fixed_frames, self._in_mass, self._in_lever, self._in_S, self._one_axes)])
        return ints, floats.astype(np.float64)

    def _scratch(self, n: int) -> tuple:
        """For n loads: (lin, ang) (n, 3), which _loads_of writes and _at's compiled pass reads in
        the same call (nothing keeps them), and n False flags (no pure torque; never written)."""
        arrays = self._scratch_of.get(n)
        if arrays is None:
            if len(self._scratch_of) >= 64:
                self._scratch_of.clear()
            arrays = self._scratch_of[n] = (np.empty((n, 3)), np.empty((n, 3)),
                                            np.zeros(n, dtype=np.bool_))
        return arrays

    def _mask(self, links: tuple) -> np.ndarray:
        """(n_fixed, n_loads): whether load k's link is welded beyond fixed joint i."""
        mask = self._masks.get(links)
        if mask is None:
            mask = np.array([[link in x[4] for link in links] for x in self.fixed],
                            dtype=np.bool_).reshape(len(self.fixed), len(links))
            self._masks[links] = mask
        return mask

    def _local_loads(self, loads) -> tuple:
        """The step's loads as local spatial forces in one compiled pass
        (_loads_in_body_frames), written into fext; returns (links, linear (n, 3), angular
        (n, 3))."""
        s = self.system
        if len(loads) == 1 and isinstance(loads[0], ContactLoads):  # the step's contacts only
            links, bodies, points, vectors = loads[0]
            return self._loads_of(links, bodies, points, vectors, self._scratch(len(links))[2])
        n = sum(len(ld.links) if isinstance(ld, ContactLoads) else 1 for ld in loads)
        links: list = []
        bodies, points = np.empty(n, dtype=np.int64), np.zeros((n, 3))
        vectors = np.empty((n, 3))
        torques = np.empty(n, dtype=np.bool_)
        if loads:
            s.kinematics()
        k = 0
        for ld in loads:
            if isinstance(ld, ContactLoads):  # forces at world points, as arrays
                m = len(ld.links)
                bodies[k:k + m], points[k:k + m], vectors[k:k + m] = ld.bodies, ld.points, \
                    ld.vectors
                torques[k:k + m] = False
                links += ld.links
                k += m
                continue
            body = self._link_body.get(ld.link)
            if body is None:
                body = self._link_body[ld.link] = s.body_of(ld.link)
            bodies[k], vectors[k], torques[k] = body, ld.vector, ld.is_torque
            if not ld.is_torque:
                points[k] = ld.world_point if ld.world_point is not None else \
                    s.load_point_world(ld)[1]
            links.append(ld.link)
            k += 1
        return self._loads_of(tuple(links), bodies, points, vectors, torques)

    def _loads_of(self, links: tuple, bodies, points, vectors, torques) -> tuple:
        """_local_loads of the loads as arrays: `bodies` (n,), world `points` and `vectors` (n,
        3), `torques` (n,) whether each is a pure torque (the step's kinematics are read)."""
        n = len(links)
        if n:  # the bodies' placements (computeJointJacobians' oMi are forwardKinematics')
            self.system.body_placements()
        lin, ang, _ = self._scratch(n)
        R, T = self.system.placement_views
        f_lin, f_ang = self._fext_views
        _loads_in_body_frames(R, T, bodies, points, vectors, torques, self._loaded, f_lin,
                              f_ang, lin, ang)
        self._loaded = bodies.copy()
        return links, lin, ang

    def compute(self, q, u, a, loads, pin_state=None) -> JointWrenches:
        """Wrenches of a step that started at (q, u) (ours) with acceleration a (nv,); `loads`:
        the step's point loads (see ArticulatedSystem); `pin_state`: (q_pin, u_pin, R) at (q, u)
        when the caller has them (the step's start), else they are computed here."""
        s = self.system
        conv = s.conv
        if conv.identity:
            q_pin = q[s.pinocchio.q_to_pin]
            u_pin, a_pin = u, a
        else:
            if pin_state is None:
                pin_state = conv.pin_inputs(q, u, s.pinocchio.q_to_pin)
            q_pin, u_pin, R = pin_state
            a_pin = conv.pin_acceleration(R, a, u_pin)  # d/dt (T^T u)
        return self._at(q_pin, u_pin, a_pin, loads)

    def after_step(self, u_next, dt: float, loads, pin_state, a_pin=None) -> JointWrenches:
        """compute(q, u, (u_next - u) / dt, loads, pin_state) of the step that starts at the
        system's state (q, u), with Pinocchio's inputs there `pin_state` (q_pin, u_pin, R): the
        acceleration and Pinocchio's (Conventions.pin_acceleration) in one compiled call, into
        scratch (rnea copies it), the same operations in the same order; `a_pin`: that
        acceleration when the step's compiled call made it (step/quick.py)."""
        s = self.system
        q_pin, u_pin, R = pin_state
        if a_pin is None:
            conv = s.conv
            a_pin = self._a_pin
            _step_pin_acceleration(u_next, s.u, float(dt), conv.identity, conv.block_u,
                                   conv.no_blocks if R is None else R, u_pin, conv.floating_u,
                                   self._acc, self._rotated, a_pin)
        return self._at(q_pin, u_pin, a_pin, loads, True)

    def _at(self, q_pin, u_pin, a_pin, loads, at_state: bool = False) -> JointWrenches:
        """The wrenches of Pinocchio's RNEA at (q_pin, u_pin, a_pin) with the step's `loads`;
        `at_state`: (q_pin, u_pin) are the system's current state's (a step's start), whose
        body placements the compiled pass may then read instead of computing its own."""
        s = self.system
        pm, data = s.pinocchio.model, self.data
        s.sync_gravity(s.gravity)
        # external loads as spatial forces in each body's local frame (the step's kinematics)
        fext = self._fext
        per_link = []
        load_arrays = None  # (links, local linear, local angular) of the compiled path
        if not (loads or self._loaded.size):
            pass  # no load now, none left in fext from the last call
        elif self._views is not None and self._fext_views is not None:
            load_arrays = self._local_loads(loads)
        else:
            loads = [x for ld in loads for x in
                     (ld.as_point_loads() if isinstance(ld, ContactLoads) else (ld,))]
            for body in self._loaded.tolist():
                fext[body] = pin.Force.Zero()
            loaded = []
            if loads:
                s.kinematics()
                for ld in loads:
                    body, f_local = s.load_as_local_force(ld)
                    fext[body] = fext[body] + f_local
                    per_link.append((ld.link, body, f_local))
                    loaded.append(body)
            self._loaded = np.array(loaded, dtype=np.int64)
        R_T = None  # the placements _wrenches reads (R, T): the step's when the loads read them
        if at_state and load_arrays is not None and load_arrays[0]:
            R_T = s.placement_views  # (_loads_of made them current: computeJointJacobians' oMi,
            # which are forwardKinematics' bit for bit, tests/test_inverse_dynamics.py)
        pin.rnea(pm, data, q_pin, u_pin, a_pin, fext)
        if R_T is None:  # data.oMi from the joints' placements rnea computed (it works in local
            # frames): forwardKinematics' bit for bit, at a third of its cost
            pin.updateGlobalPlacements(pm, data)

        # every wrench about the world origin first, then moved to its joint's position at once
        if self._views is not None:  # one compiled pass (_wrenches)
            if load_arrays is not None and load_arrays[0]:
                links, load_lin, load_ang = load_arrays
                mask = self._mask(links)
            elif per_link:  # (no views of fext: the loads went through Pinocchio's objects)
                load_lin, load_ang = np.zeros((len(per_link), 3)), np.zeros((len(per_link), 3))
                for i, (_, _, f_local) in enumerate(per_link):
                    load_lin[i], load_ang[i] = f_local.linear, f_local.angular
                mask = self._mask(tuple(link for link, _, _ in per_link))
            else:
                load_lin, load_ang, mask = self._no_loads
            out = self._results()
            _wrenches(self._table.table, 0 if R_T is None else 1, load_lin, load_ang, mask,
                      out.force, out.torque, out.actuation)
            return out
        force = np.zeros((self.n, 3))
        actuation = self._nan.copy()
        moment, point = np.zeros((self.n, 3)), np.zeros((self.n, 3))
        for k, body, j in self.moving:
            oMb = data.oMi[body]
            f_world = oMb.act(data.f[body])
            force[k], moment[k], point[k] = f_world.linear, f_world.angular, oMb.translation
        for k, j, body, frame, welded, inertias, hanging in self.fixed:
            v, acc = data.v[body], data.a_gf[body]  # a_gf[0] = -gravity: the world's own
            w = pin.Force.Zero()
            for I in inertias:
                w = w + I * acc + v.cross(I * v)
            for link, b, f_local in per_link:
                if link in welded:
                    w = w - f_local
            for c in hanging:
                w = w + data.liMi[c].act(data.f[c])
            oMb = data.oMi[body]
            f_world = oMb.act(w)
            force[k], moment[k], point[k] = f_world.linear, f_world.angular, oMb.act(frame)
        torque = moment - _cross_rows(point, force)
        for k, body, j in self.moving:
            if j.nv == 1:
                axis = matmul(data.oMi[body].rotation, j.axis)
                actuation[k] = dot(axis, force[k] if j.type == "prismatic" else torque[k])
        return JointWrenches(force, torque, actuation)


def _cross_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise a x b of (n, 3) arrays (np.cross is slow on small arrays)."""
    return np.stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1],
                     a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                     a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], axis=1)
