"""The one place where Pinocchio's conventions meet ours (docs/conventions.md).

Ours: a floating joint's u is [linear velocity of its frame origin in the world, angular velocity
in the world]; a spherical joint's u is the child's angular velocity relative to the parent,
expressed in the joint frame fixed to the parent. Pinocchio expresses both in the child (local)
frame. With the block-diagonal rotation T (nv x nv): R on both 3-blocks of a floating joint (R the
joint's world orientation), R_j on a spherical joint (R_j its rotation relative to the parent),
identity elsewhere,

    u = T u_pin,      tau = T tau_pin,      M = T M_pin T^T,
    h = T (h_pin + M_pin c),   c = (d/dt T^T) u = [-omega_local x v_local, 0] on a floating joint,
                                                  0 on a spherical joint (omega x omega = 0).

Jacobians: J = J_pin T^T. Coordinates differ only in the quaternion order (ours w, x, y, z;
Pinocchio's x, y, z, w): see :class:`raisimcli.model.PinocchioModel`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import types

from raisimcli.jit import ArrayTable, carve, kernel, span, table_view
from raisimcli.model.types import RobotModel
from raisimcli.linalg import cross, matmul, norm
from raisimcli.physics.arctan import atan2


# --- T as 3x3 blocks: the transforms in compiled loops ------------------------------------------
# T is the identity but for 3x3 rotation blocks on the diagonal. Its products are computed block
# by block: the same nonzero terms, summed in the same (index) order, as the dense products
# linalg.matmul(T, ...) would sum them (the dense loops only add exact zeros besides), so the
# results are the same bits, for O(nv) work instead of O(nv^3). `bu[k]`: the first u index of
# block k; `bq[k]`: the q index of the quaternion (w, x, y, z) that gives its rotation.
@kernel
def _rotations(q, bq, R):
    """R[k] = the rotation of the quaternion at q[bq[k]:bq[k] + 4] (quat_to_matrix's formula)."""
    for k in range(bq.shape[0]):
        w, x, y, z = q[bq[k]], q[bq[k] + 1], q[bq[k] + 2], q[bq[k] + 3]
        R[k, 0, 0] = 1 - 2 * (y * y + z * z)
        R[k, 0, 1] = 2 * (x * y - w * z)
        R[k, 0, 2] = 2 * (x * z + w * y)
        R[k, 1, 0] = 2 * (x * y + w * z)
        R[k, 1, 1] = 1 - 2 * (x * x + z * z)
        R[k, 1, 2] = 2 * (y * z - w * x)
        R[k, 2, 0] = 2 * (x * z - w * y)
        R[k, 2, 1] = 2 * (y * z + w * x)
        R[k, 2, 2] = 1 - 2 * (x * x + y * y)


@kernel
def _rotate_columns(A, bu, R, out):
    """out = A T^T for A (m, nv)."""
    for i in range(A.shape[0]):  # element loops, not slice assignments: those compile numba's
        for j in range(A.shape[1]):  # broadcasting checks and their messages (seconds on first use)
            out[i, j] = A[i, j]
    for k in range(bu.shape[0]):
        b = bu[k]
        for i in range(A.shape[0]):
            for r in range(3):
                out[i, b + r] = A[i, b] * R[k, r, 0] + A[i, b + 1] * R[k, r, 1] + \
                    A[i, b + 2] * R[k, r, 2]


@kernel
def _rotate_rows(A, bu, R, transpose, out):
    """out = T A (or T^T A with `transpose`) for A (nv, m)."""
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            out[i, j] = A[i, j]
    for k in range(bu.shape[0]):
        b = bu[k]
        for r in range(3):
            for j in range(A.shape[1]):
                if transpose:
                    out[b + r, j] = R[k, 0, r] * A[b, j] + R[k, 1, r] * A[b + 1, j] + \
                        R[k, 2, r] * A[b + 2, j]
                else:
                    out[b + r, j] = R[k, r, 0] * A[b, j] + R[k, r, 1] * A[b + 1, j] + \
                        R[k, r, 2] * A[b + 2, j]


@kernel
def _rotate_in_place(v, bu, R):
    """v = T v for a vector v (nv,), in place: _rotate_rows' sums, each block's three entries
    read before they are written."""
    for k in range(bu.shape[0]):
        b = bu[k]
        x, y, z = v[b], v[b + 1], v[b + 2]
        for r in range(3):
            v[b + r] = R[k, r, 0] * x + R[k, r, 1] * y + R[k, r, 2] * z


@kernel
def _congruence(M_pin, bu, R, out):
    """out = T M_pin T^T, in place in `out`, which holds M_pin on entry: the blocks' rows of
    T M_pin with _rotate_rows' sums, then the blocks' columns of its product with T^T with
    _rotate_columns' (each block's three columns read before they are written; the blocks'
    columns are apart). The entries outside the blocks' rows and columns are M_pin's, as the
    two products copy them."""
    n = M_pin.shape[0]
    for k in range(bu.shape[0]):
        b = bu[k]
        for r in range(3):
            for j in range(n):
                out[b + r, j] = R[k, r, 0] * M_pin[b, j] + R[k, r, 1] * M_pin[b + 1, j] + \
                    R[k, r, 2] * M_pin[b + 2, j]
    for k in range(bu.shape[0]):
        b = bu[k]
        for i in range(n):
            x, y, z = out[i, b], out[i, b + 1], out[i, b + 2]
            for r in range(3):
                out[i, b + r] = x * R[k, r, 0] + y * R[k, r, 1] + z * R[k, r, 2]


@kernel
def _mass_matrix(M_upper, bu, R, M_pin, out):
    """M_pin = the symmetric matrix of Pinocchio's upper triangle; out = T M_pin T^T
    (_congruence)."""
    n = M_upper.shape[0]
    for i in range(n):
        for j in range(n):
            v = M_upper[i, j] if i <= j else M_upper[j, i]
            M_pin[i, j] = v
            out[i, j] = v
    _congruence(M_pin, bu, R, out)


@kernel
def _pin_inputs(q, u, q_to_pin, bq, bu, q_pin, R, u_pin):
    """Pinocchio's coordinates q_pin = q[q_to_pin], the rotation blocks R of T at q, and
    Pinocchio's velocity u_pin = T^T u (u_pin: (nv, 1))."""
    for i in range(q_to_pin.shape[0]):
        q_pin[i] = q[q_to_pin[i]]
    _rotations(q, bq, R)
    _rotate_rows(u, bu, R, True, u_pin)


@kernel
def _bias(u_pin, floating_u, c):
    """c = bias_correction(u_pin): linalg.cross(v, omega) of Pinocchio's velocity on each floating
    joint, 0 elsewhere."""
    for i in range(c.shape[0]):
        c[i] = 0.0
    for k in range(floating_u.shape[0]):
        us = floating_u[k]
        a0, a1, a2 = u_pin[us], u_pin[us + 1], u_pin[us + 2]
        b0, b1, b2 = u_pin[us + 3], u_pin[us + 4], u_pin[us + 5]
        c[us], c[us + 1], c[us + 2] = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@kernel
def _nonlinearities(h_pin, M_pin, u_pin, floating_u, bu, R, c, out):
    """out = T (h_pin + M_pin c), c the bias correction of u_pin (see bias_correction), with the
    sums of the dense products (M_pin c in p order, then _rotate_rows'); `c` (nv,): scratch.
    c is 0 but on the floating joints' linear velocities, in increasing order (floating_u):
    M_pin c sums those terms alone, the bits of the whole sum, since the others are +-0.0 and
    a sum that starts at +0.0 is never -0.0 (x + (+-0.0) is x for any x but -0.0)."""
    n = h_pin.shape[0]
    _bias(u_pin, floating_u, c)
    for i in range(n):
        s = 0.0
        for k in range(floating_u.shape[0]):
            us = floating_u[k]
            for p in range(us, us + 3):
                s += M_pin[i, p] * c[p]
        out[i] = h_pin[i] + s
    _rotate_in_place(out, bu, R)


@kernel
def _pin_acceleration(a, bu, R, u_pin, floating_u, rotated, out):
    """out = T^T a + c(u_pin), c the bias correction (see bias_correction), each entry with the
    operations of to_pin_velocity(R, a) + bias_correction(u_pin); `rotated` (nv, 1): scratch."""
    _rotate_rows(a, bu, R, True, rotated)
    _bias(u_pin, floating_u, out)
    for i in range(out.shape[0]):
        out[i] = rotated[i, 0] + out[i]


@kernel
def _step_pin_acceleration(u_next, u, dt, identity, bu, R, u_pin, floating_u, a, rotated, out):
    """out = _pin_acceleration(a, ...) of the step's acceleration a = (u_next - u) / dt, which
    it writes into `a` (nv, 1) (out = a when T = I); `rotated` (nv, 1): scratch. (Its lines
    rather than a call: numba would compile _pin_acceleration once more for this caller.)"""
    n = u.shape[0]
    for i in range(n):
        a[i, 0] = (u_next[i] - u[i]) / dt
    if identity:
        for i in range(n):
            out[i] = a[i, 0]
        return
    _rotate_rows(a, bu, R, True, rotated)
    _bias(u_pin, floating_u, out)
    for i in range(n):
        out[i] = rotated[i, 0] + out[i]


# --- the getters' M and h (ArticulatedSystem.get_mass_matrix, get_nonlinearities) ------------
# Their arrays lie in two arrays made once (GetterScratch), handed over as one ArrayTable
# (`arrays`; numba charges for each array argument of a call): I = [len(q_to_pin), the
# blocks k, nv, the floating joints f, q_to_pin, block_q, block_u, floating_u], F = [q_pin,
# R (k, 3, 3), u_pin, c, M_pin (nv, nv)].
_GETTER_INTS, _GETTER_FLOATS = (types.int64, 1, "C"), (types.float64, 1, "C")
_getter_ints, _getter_floats = table_view(_GETTER_INTS), table_view(_GETTER_FLOATS)


@kernel
def _getter_inputs(q, u, arrays):
    """Pinocchio's inputs at (q, u) into F: q_pin = q[q_to_pin], the rotation blocks R of T,
    u_pin = T^T u (_pin_inputs) and its bias correction c (_bias)."""
    I, F = _getter_ints(arrays, 0), _getter_floats(arrays, 1)  # noqa: E741
    nq, k, n, f = I[0], I[1], I[2], I[3]
    q_to_pin, bq = span(I, 4, 4 + nq), span(I, 4 + nq, 4 + nq + k)
    bu = span(I, 4 + nq + k, 4 + nq + 2 * k)
    floating_u = span(I, 4 + nq + 2 * k, 4 + nq + 2 * k + f)
    q_pin, R = span(F, 0, nq), carve(F, nq, (k, 3, 3))
    a = nq + 9 * k
    for i in range(nq):  # (_pin_inputs' lines, without the cost of a call)
        q_pin[i] = q[q_to_pin[i]]
    _rotations(q, bq, R)
    _rotate_rows(carve(u, 0, (n, 1)), bu, R, True, carve(F, a, (n, 1)))
    _bias(span(F, a, a + n), floating_u, span(F, a + n, a + 2 * n))


@kernel
def _getter_coordinates(q, arrays):
    """Pinocchio's coordinates q_pin = q[q_to_pin] and the rotation blocks R of T at q, into F:
    what crba needs and _getter_mass then reads (get_mass_matrix at a new state; _getter_inputs'
    first lines, without Pinocchio's velocity, which crba does not take)."""
    I, F = _getter_ints(arrays, 0), _getter_floats(arrays, 1)  # noqa: E741
    nq, k = I[0], I[1]
    q_to_pin, bq = span(I, 4, 4 + nq), span(I, 4 + nq, 4 + nq + k)
    q_pin, R = span(F, 0, nq), carve(F, nq, (k, 3, 3))
    for i in range(nq):
        q_pin[i] = q[q_to_pin[i]]
    _rotations(q, bq, R)


@kernel
def _getter_mass(M, arrays):
    """M (in: Pinocchio's upper triangle, as crba returns it) becomes T M_pin T^T with the
    rotation blocks R in F (_getter_coordinates' or _getter_inputs'), M_pin (into F) the
    symmetric matrix of that triangle: _mass_matrix's operations, in place. (The lower triangle
    filled in M, then M copied row by row: half the time of writing both matrices' lower
    triangles column by column; copies only, so the same bits.)"""
    I, F = _getter_ints(arrays, 0), _getter_floats(arrays, 1)  # noqa: E741
    nq, k, n = I[0], I[1], I[2]
    bu = span(I, 4 + nq + k, 4 + nq + 2 * k)
    R = carve(F, nq, (k, 3, 3))
    M_pin = carve(F, nq + 9 * k + 2 * n, (n, n))
    for i in range(1, n):
        for j in range(i):
            M[i, j] = M[j, i]
    for i in range(n):
        for j in range(n):
            M_pin[i, j] = M[i, j]
    _congruence(M_pin, bu, R, M)


@kernel
def _getter_rotated(h, arrays):
    """h = T h in place (_rotate_in_place), with the rotation blocks _getter_inputs wrote into
    F."""
    I, F = _getter_ints(arrays, 0), _getter_floats(arrays, 1)  # noqa: E741
    nq, k = I[0], I[1]
    bu = span(I, 4 + nq + k, 4 + nq + 2 * k)
    _rotate_in_place(h, bu, carve(F, nq, (k, 3, 3)))


class GetterScratch:
    """The arrays of the getters' compiled calls (_getter_inputs, _getter_coordinates,
    _getter_mass, _getter_rotated) for one robot, made once, and views of them: q_pin, u_pin, c
    and M_pin hold what the last call wrote, for its state only (the getters keep M_pin in the
    system's cache of that state, which a new state clears)."""

    def __init__(self, conv: "Conventions", q_to_pin: np.ndarray):
        nq, k, n = q_to_pin.size, conv.block_u.size, conv.nv
        self.I = np.concatenate([np.array([nq, k, n, conv.floating_u.size], dtype=np.int64),
                                 q_to_pin, conv.block_q, conv.block_u,
                                 conv.floating_u]).astype(np.int64)
        self.F = np.zeros(nq + 9 * k + 2 * n + n * n)
        a = nq + 9 * k
        self.q_pin, self.u_pin, self.c = self.F[0:nq], self.F[a:a + n], self.F[a + n:a + 2 * n]
        self.M_pin = self.F[a + 2 * n:a + 2 * n + n * n].reshape(n, n)
        self.arrays = ArrayTable([(self.I, _GETTER_INTS), (self.F, _GETTER_FLOATS)])
        self.table = self.arrays.table  # (the compiled calls' `arrays`)


@kernel
def _turn(q, qs, x, y, z, out):
    """out[qs:qs + 4] = quat_exp((x, y, z)) * q[qs:qs + 4], normalised: the operations of
    quat_exp, quat_multiply and linalg.norm in their order."""
    angle = math.sqrt(x * x + y * y + z * z)
    if angle < 1e-8:
        s = 0.5 - angle * angle / 48.0
        aw = 1.0 - angle * angle / 8.0
    else:
        s = math.sin(0.5 * angle) / angle
        aw = math.cos(0.5 * angle)
    ax, ay, az = s * x, s * y, s * z
    bw, bx, by, bz = q[qs], q[qs + 1], q[qs + 2], q[qs + 3]
    w = aw * bw - ax * bx - ay * by - az * bz
    i = aw * bx + ax * bw + ay * bz - az * by
    j = aw * by - ax * bz + ay * bw + az * bx
    k = aw * bz + ax * by - ay * bx + az * bw
    n = math.sqrt(0.0 + w * w + i * i + j * j + k * k)
    out[qs], out[qs + 1], out[qs + 2], out[qs + 3] = w / n, i / n, j / n, k / n


@kernel
def _one_dof_difference(q0, q1, one_q, one_u, out):
    """out = 0, then out[one_u[k]] = q1[one_q[k]] - q0[one_q[k]]: Conventions.difference
    without quaternions."""
    for i in range(out.shape[0]):
        out[i] = 0.0
    for k in range(one_q.shape[0]):
        out[one_u[k]] = q1[one_q[k]] - q0[one_q[k]]


@kernel
def _integrate(q, u_bar, dt, one_q, one_u, floating_u, floating_q, spherical_u, spherical_q,
               out):
    """Conventions.integrate into out (nq,)."""
    for i in range(q.shape[0]):
        out[i] = q[i]
    for k in range(one_q.shape[0]):
        out[one_q[k]] = q[one_q[k]] + dt * u_bar[one_u[k]]
    for k in range(floating_u.shape[0]):
        us, qs = floating_u[k], floating_q[k]
        for i in range(3):
            out[qs + i] = q[qs + i] + dt * u_bar[us + i]
        _turn(q, qs + 3, dt * u_bar[us + 3], dt * u_bar[us + 4], dt * u_bar[us + 5], out)
    for k in range(spherical_u.shape[0]):
        us, qs = spherical_u[k], spherical_q[k]
        _turn(q, qs, dt * u_bar[us], dt * u_bar[us + 1], dt * u_bar[us + 2], out)


def quat_to_matrix(q) -> np.ndarray:
    """(3, 3) rotation of a unit quaternion (w, x, y, z)."""
    w, x, y, z = q.tolist() if isinstance(q, np.ndarray) else q  # Python floats: 10x faster
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def quat_multiply(a, b) -> np.ndarray:
    """Hamilton product a * b of quaternions (w, x, y, z)."""
    aw, ax, ay, az = a.tolist() if isinstance(a, np.ndarray) else a
    bw, bx, by, bz = b.tolist() if isinstance(b, np.ndarray) else b
    return np.array([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw])


def quat_exp(rotvec) -> np.ndarray:
    """Quaternion (w, x, y, z) of the rotation vector `rotvec` (axis * angle)."""
    x, y, z = rotvec.tolist() if isinstance(rotvec, np.ndarray) else rotvec
    angle = math.sqrt(x * x + y * y + z * z)
    if angle < 1e-8:  # Taylor: cos(a/2) = 1 - a^2/8, sin(a/2)/a = 1/2 - a^2/48
        s = 0.5 - angle * angle / 48.0
        return np.array([1.0 - angle * angle / 8.0, s * x, s * y, s * z])
    s = math.sin(0.5 * angle) / angle
    return np.array([math.cos(0.5 * angle), s * x, s * y, s * z])


def quat_log(q) -> np.ndarray:
    """Rotation vector of the quaternion q (w, x, y, z), taking the shorter rotation (angle <= pi:
    q and -q are the same orientation)."""
    w, v = q[0], np.asarray(q[1:4], dtype=float)
    if w < 0:
        w, v = -w, -v
    n = norm(v)
    if n < 1e-12:
        return 2.0 * v / max(w, 1e-300)
    return 2.0 * atan2(n, w) / n * v  # (raisimcli.physics.arctan: the same bits with any libm)


class Conventions:
    """Precomputed index sets of one robot for the conversions above.

    `floating`: list of (u_start, q_start) of floating joints; `spherical`: likewise for spherical
    joints; `one_dof_q`, `one_dof_u`: index arrays of the 1-DoF coordinates and their velocities.
    `identity`: True when T = I always (no floating or spherical joint)."""

    def __init__(self, model: RobotModel):
        self.nv = model.nv
        self.floating = [(j.u_slice.start, j.q_slice.start) for j in model.moving_joints
                         if j.type == "floating"]
        self.spherical = [(j.u_slice.start, j.q_slice.start) for j in model.moving_joints
                          if j.type == "spherical"]
        one = [j for j in model.moving_joints if j.nv == 1]
        self.one_dof_q = np.array([j.q_slice.start for j in one], dtype=np.int64)
        self.one_dof_u = np.array([j.u_slice.start for j in one], dtype=np.int64)
        self.floating_u = np.array([us for us, _ in self.floating], dtype=np.int64)  # u starts
        self._floating_q = np.array([qs for _, qs in self.floating], dtype=np.int64)
        self._spherical_u = np.array([us for us, _ in self.spherical], dtype=np.int64)
        self._spherical_q = np.array([qs for _, qs in self.spherical], dtype=np.int64)
        # the index arrays the compiled position integration (_integrate) reads, in its order
        self.integration_indices = (self.one_dof_q, self.one_dof_u, self.floating_u,
                                    self._floating_q, self._spherical_u, self._spherical_q)
        # the same six, end to end, and where each starts (and the last ends): for a compiled
        # call that takes them packed (step/alone.py's _packed_rows)
        self.integration_packed = (
            np.concatenate(self.integration_indices).astype(np.int64),
            np.cumsum([0] + [a.size for a in self.integration_indices]).astype(np.int64))
        self.identity = not self.floating and not self.spherical
        self.no_blocks = np.empty((0, 3, 3))  # the rotation blocks when T = I (never written)
        blocks = [(us, qs + 3) for us, qs in self.floating] + \
            [(us + 3, qs + 3) for us, qs in self.floating] + list(self.spherical)
        blocks.sort()
        self.block_u = np.array([b[0] for b in blocks], dtype=np.int64)
        self.block_q = np.array([b[1] for b in blocks], dtype=np.int64)
        n = self.nv  # scratch of the compiled transforms (never returned)
        self._c = np.empty(n)

    # --- T as rotation blocks (compiled; the same bits as the dense products with T) -----------
    def rotations(self, q: np.ndarray) -> np.ndarray:
        """The rotation blocks of T at q, (k, 3, 3), in the order of `block_u`."""
        R = np.empty((self.block_u.size, 3, 3))
        _rotations(q, self.block_q, R)
        return R

    def to_pin_velocity(self, R: np.ndarray, u: np.ndarray) -> np.ndarray:
        """T^T u."""
        out = np.empty((self.nv, 1))
        _rotate_rows(u.reshape(-1, 1), self.block_u, R, True, out)
        return out[:, 0]

    def from_pin_columns(self, R: np.ndarray, J: np.ndarray) -> np.ndarray:
        """J T^T for J (m, nv): a Jacobian of Pinocchio's velocity as one of ours."""
        out = np.empty_like(J)
        _rotate_columns(np.ascontiguousarray(J), self.block_u, R, out)
        return out

    def pin_inputs(self, q: np.ndarray, u: np.ndarray, q_to_pin: np.ndarray):
        """(q_pin, u_pin, R): Pinocchio's coordinates and velocity at (q, u), and the rotation
        blocks of T (see rotations)."""
        q_pin, R = np.empty(q_to_pin.shape[0]), np.empty((self.block_u.size, 3, 3))
        u_pin = np.empty((self.nv, 1))
        _pin_inputs(q, u.reshape(-1, 1), q_to_pin, self.block_q, self.block_u, q_pin, R, u_pin)
        return q_pin, u_pin[:, 0], R

    def nonlinearities(self, R: np.ndarray, h_pin: np.ndarray, M_pin: np.ndarray,
                       u_pin: np.ndarray) -> np.ndarray:
        """h = T (h_pin + M_pin c), c the bias correction of u_pin."""
        out = np.empty(self.nv)
        _nonlinearities(h_pin, M_pin, u_pin, self.floating_u, self.block_u, R, self._c, out)
        return out

    # --- velocity transform ----------------------------------------------------------------------
    def velocity_transform(self, q: np.ndarray) -> np.ndarray:
        """T (nv, nv) at the coordinates q (ours): the dense definition. The step applies T as
        rotation blocks (rotations, mass_matrix, ...); the tests compare those with this."""
        T = np.eye(self.nv)
        for us, qs in self.floating:
            R = quat_to_matrix(q[qs + 3:qs + 7])
            T[us:us + 3, us:us + 3] = R
            T[us + 3:us + 6, us + 3:us + 6] = R
        for us, qs in self.spherical:
            T[us:us + 3, us:us + 3] = quat_to_matrix(q[qs:qs + 4])
        return T

    def bias_correction(self, u_pin: np.ndarray) -> np.ndarray:
        """c = (d/dt T^T) u, (nv,): -omega_local x v_local on each floating joint, from
        Pinocchio's (local) velocity u_pin = T^T u."""
        c = np.zeros(self.nv)
        for us, _ in self.floating:
            c[us:us + 3] = cross(u_pin[us:us + 3], u_pin[us + 3:us + 6])  # -omega x v
        return c

    def pin_acceleration(self, R: np.ndarray, a: np.ndarray, u_pin: np.ndarray) -> np.ndarray:
        """d/dt (T^T u) = T^T a + c(u_pin): Pinocchio's acceleration of our acceleration a at
        Pinocchio's velocity u_pin, in one compiled loop."""
        out = np.empty(self.nv)
        _pin_acceleration(np.ascontiguousarray(a, dtype=np.float64).reshape(-1, 1), self.block_u,
                          R, u_pin, self.floating_u, np.empty((self.nv, 1)), out)
        return out

    # --- positions -------------------------------------------------------------------------------
    def integrate(self, q: np.ndarray, u_bar: np.ndarray, dt: float) -> np.ndarray:
        """Spec step 6: q_{t+1} = q_t + dt u_bar, a quaternion turned by the same angular velocity
        (world frame for a floating joint, the parent's joint frame for a spherical joint; both
        multiply on the left). Quaternions are renormalised."""
        q_next = np.empty(q.shape[0])
        _integrate(np.ascontiguousarray(q, dtype=np.float64),
                   np.ascontiguousarray(u_bar, dtype=np.float64), float(dt),
                   *self.integration_indices, q_next)
        return q_next

    # --- the body-frame form used by RUNGE_KUTTA_4 ------------------------------------------
    def _rotation_blocks(self):
        """(u start of the angular velocity, q start of the quaternion) of every floating and
        spherical joint."""
        return [(us + 3, qs + 3) for us, qs in self.floating] + list(self.spherical)

    def local_velocity(self, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        """u with the angular velocity of each quaternion's body expressed in that body's own
        frame, R(q)^T omega (nv,); everything else as it is. Of the same vector of rates
        (an acceleration) it gives R^T omega-dot: d/dt (R^T omega) = R^T omega-dot, since
        R-dot^T omega = -R^T (omega x omega) = 0."""
        out = np.array(u, dtype=float)
        for us, qs in self._rotation_blocks():
            out[us:us + 3] = matmul(quat_to_matrix(q[qs:qs + 4]).T, u[us:us + 3])
        return out

    def world_velocity(self, q: np.ndarray, u_local: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`local_velocity`."""
        out = np.array(u_local, dtype=float)
        for us, qs in self._rotation_blocks():
            out[us:us + 3] = matmul(quat_to_matrix(q[qs:qs + 4]), u_local[us:us + 3])
        return out

    def local_rate(self, theta: np.ndarray, u_local: np.ndarray) -> np.ndarray:
        """d theta/dt of a configuration written q = q_0 exp(theta) (each quaternion turned on
        the right, in its body's frame; flat coordinates added), (nv,).

        With the body-frame angular velocity omega, d theta/dt = dexp^-1_-theta(omega) =
        omega + 1/2 theta x omega + 1/12 theta x (theta x omega) + O(|theta|^4 |omega|) (the
        Bernoulli series; the cubic term's coefficient is zero). Other entries are u itself."""
        k = np.array(u_local, dtype=float)
        for us, _ in self._rotation_blocks():
            th, w = theta[us:us + 3], u_local[us:us + 3]
            tw = cross(th, w)
            k[us:us + 3] = w + 0.5 * tw + cross(th, tw) / 12.0
        return k

    def integrate_local(self, q: np.ndarray, rate: np.ndarray, h: float) -> np.ndarray:
        """q_0 exp(h rate): flat coordinates q + h rate, each quaternion multiplied on the right
        by the quaternion of the body-frame rotation vector h rate."""
        q_next = q.copy()
        q_next[self.one_dof_q] += h * rate[self.one_dof_u]
        for us, qs in self.floating:
            q_next[qs:qs + 3] += h * rate[us:us + 3]
        for us, qs in self._rotation_blocks():
            quat = quat_multiply(q[qs:qs + 4], quat_exp(h * rate[us:us + 3]))
            q_next[qs:qs + 4] = quat / norm(quat)
        return q_next

    def difference(self, q0: np.ndarray, q1: np.ndarray, floating: bool = True) -> np.ndarray:
        """The velocity-space difference q1 - q0, (nv,): 1-DoF coordinates subtract; a quaternion
        gives the rotation vector of q0^-1 q1 expressed like u (shorter rotation). Used for the PD
        and spring errors (spec step 1). `floating=False` leaves floating joints' entries at 0."""
        d = np.empty(self.nv)
        if not self.spherical and not (floating and self.floating):  # no quaternion to take
            _one_dof_difference(q0, q1, self.one_dof_q, self.one_dof_u, d)
            return d
        d[:] = 0.0
        d[self.one_dof_u] = q1[self.one_dof_q] - q0[self.one_dof_q]
        for us, qs in (self.floating if floating else ()):
            d[us:us + 3] = q1[qs:qs + 3] - q0[qs:qs + 3]
            # world-frame rotation vector of q1 q0^-1
            d[us + 3:us + 6] = quat_log(quat_multiply(q1[qs + 3:qs + 7], _conj(q0[qs + 3:qs + 7])))
        for us, qs in self.spherical:
            # the error of q_t^-1 q_ref lives in the child frame; rotate it into the parent's
            # joint frame, where u lives (docs/conventions.md)
            local = quat_log(quat_multiply(_conj(q0[qs:qs + 4]), q1[qs:qs + 4]))
            d[us:us + 3] = matmul(quat_to_matrix(q0[qs:qs + 4]), local)
        return d

    def normalize(self, q: np.ndarray) -> np.ndarray:
        """q with every quaternion normalised; a zero quaternion is no orientation: StateError."""
        q = np.array(q, dtype=float)
        for _, qs in self.floating:
            q[qs + 3:qs + 7] = _unit(q[qs + 3:qs + 7], qs + 3)
        for _, qs in self.spherical:
            q[qs:qs + 4] = _unit(q[qs:qs + 4], qs)
        return q


def _conj(q) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]])


def _unit(q, start: int) -> list:
    """q (4,) / its norm, in Python floats: the bits of q / linalg.norm(q) (the squares summed
    in index order, one correctly rounded square root, four divisions), without numpy's calls."""
    w, x, y, z = q.tolist()
    s = 0.0
    s += w * w
    s += x * x
    s += y * y
    s += z * z
    n = math.sqrt(s)
    if n == 0:
        from raisimcli.errors import StateError
        raise StateError(f"the quaternion q[{start}:{start + 4}] is zero: no orientation")
    return [w / n, x / n, y / n, z / n]
