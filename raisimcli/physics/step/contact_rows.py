"""The contacts' rows of the impulse problem (spec step 4) and what the solved impulses say about
each contact, as compiled loops over Pinocchio's joint Jacobians.

Contact c has the rows [t1, t2, n]^T (J_A(p) - J_B(p)) (docs/contacts.md), with J_X(p) the
Jacobian of the world velocity of the point p fixed to body X, in our velocity coordinates:

    J_X(p) = (J_v - [p - o]x J_w) T^T

where (J_v, J_w) are body X's joint Jacobian in the world-aligned frame at its origin o
(Pinocchio's getJointJacobian with LOCAL_WORLD_ALIGNED: data.J's columns of the joints that
support X, moved from the world origin to o) and T the velocity transform of
raisimcli.physics.conventions. The loops repeat the operations of the element path they replace
(Pinocchio's translation of data.J, the skew product, the block rotation, linalg.matmul) in their
order, so the rows have the same bits.
"""

from __future__ import annotations

import numpy as np

from raisimcli.jit import kernel
from raisimcli.physics.conventions import _rotate_columns
from raisimcli.physics.step.contact_solver import CONTACT
from raisimcli.physics.step.solver import Rows


@kernel
def _point_jacobian(J_world, origin, support, point, bu, R, jj, lin, J_lin):
    """J_lin (3, nv) = the Jacobian of the world velocity of `point` (fixed to the body whose
    joint origin is `origin` and whose support columns are `support`), in our coordinates.
    `jj` (6, nv) and `lin` (3, nv): scratch (no array is made inside: each would cost numba
    compile time)."""
    nv = J_world.shape[1]
    o0, o1, o2 = origin[0], origin[1], origin[2]
    for c in range(nv):  # getJointJacobian(LOCAL_WORLD_ALIGNED): v -= o x w, support only
        if support[c]:
            w0, w1, w2 = J_world[3, c], J_world[4, c], J_world[5, c]
            jj[0, c] = J_world[0, c] - (o1 * w2 - o2 * w1)
            jj[1, c] = J_world[1, c] - (o2 * w0 - o0 * w2)
            jj[2, c] = J_world[2, c] - (o0 * w1 - o1 * w0)
            jj[3, c], jj[4, c], jj[5, c] = w0, w1, w2
        else:
            for i in range(6):
                jj[i, c] = 0.0
    r0, r1, r2 = point[0] - o0, point[1] - o1, point[2] - o2
    for c in range(nv):  # v_point = v_origin + w x r, as Jj[:3] - matmul(skew(r), Jj[3:])
        w0, w1, w2 = jj[3, c], jj[4, c], jj[5, c]
        lin[0, c] = jj[0, c] - (0.0 + 0.0 * w0 + -r2 * w1 + r1 * w2)
        lin[1, c] = jj[1, c] - (0.0 + r2 * w0 + 0.0 * w1 + -r0 * w2)
        lin[2, c] = jj[2, c] - (0.0 + -r1 * w0 + r0 * w1 + 0.0 * w2)
    _rotate_columns(lin, bu, R, J_lin)


@kernel
def _add_rows(J_world, origins, supports, bodies, points, frames, signs, first_rows, col0, bu, R,
              scratch, J):
    """For each contact side n: J[first_rows[n] + i, col0 + c] += signs[n] (frame^T J_lin)[i, c]
    with J_lin the point Jacobian of body bodies[n] at points[n]; `scratch` (12, nv)."""
    nv = J_world.shape[1]
    jj, lin, J_lin = scratch[0:6], scratch[6:9], scratch[9:12]
    for n in range(bodies.shape[0]):
        b = bodies[n]
        _point_jacobian(J_world, origins[b], supports[b], points[n], bu, R, jj, lin, J_lin)
        r = first_rows[n]
        for i in range(3):
            for c in range(nv):
                s = 0.0
                for p in range(3):
                    s += frames[n, p, i] * J_lin[p, c]
                J[r + i, col0 + c] = J[r + i, col0 + c] + signs[n] * s


@kernel
def _normal_velocities(J, u, out):
    """out[c] = J[3 c + 2] . u, summed in index order."""
    for c in range(out.shape[0]):
        s = 0.0
        for k in range(u.shape[0]):
            s += J[3 * c + 2, k] * u[k]
        out[c] = s


@kernel
def _normal_targets(distance, params, vn, dt, target, first):
    """target[first + 3c + 2] = the normal velocity target of contact c (Contact.
    target_normal_velocity, the rules of docs/contacts.md) at its normal velocity vn[c]; params
    rows: mu, restitution, threshold, erp, slop."""
    for c in range(distance.shape[0]):
        d, e, threshold, erp, slop = distance[c], params[c, 1], params[c, 2], params[c, 3], \
            params[c, 4]
        if d > 0:
            t = -d / dt
        else:
            t = erp * max(0.0, -d - slop) / dt
        if e > 0 and vn[c] < -threshold and d <= -vn[c] * dt:
            t = max(t, -e * vn[c])
        target[first + 3 * c + 2] = t


@kernel
def _start_rows(bJ, btarget, blo, bhi, bstart, bkind, bmu, mu_c, J, target, lo, hi, first_rows,
                start, kind, mu):
    """The stacked rows' arrays before the contacts' Jacobian rows are added: the rows `b...`
    first (their J, target, lo, hi and blocks), then one CONTACT block of three rows per contact
    (first_rows[c] = m0 + 3c, friction mu_c[c]) with J, target, lo and hi 0."""
    m0, N = bJ.shape
    for i in range(m0):
        for k in range(N):
            J[i, k] = bJ[i, k]
        target[i], lo[i], hi[i] = btarget[i], blo[i], bhi[i]
    for i in range(m0, J.shape[0]):
        for k in range(N):
            J[i, k] = 0.0
        target[i], lo[i], hi[i] = 0.0, 0.0, 0.0
    nb = bstart.shape[0]
    for b in range(nb):
        start[b], kind[b], mu[b] = bstart[b], bkind[b], bmu[b]
    for c in range(mu_c.shape[0]):
        first_rows[c] = m0 + 3 * c
        start[nb + c], kind[nb + c], mu[nb + c] = m0 + 3 * c, CONTACT, mu_c[c]


@kernel
def _targets(J, m0, u, distance, params, dt, vn, target):
    """The contacts' normal velocities at u (_normal_velocities of the rows from m0 on) and
    their normal targets (_normal_targets)."""
    _normal_velocities(J[m0:], u, vn)
    _normal_targets(distance, params, vn, dt, target, m0)


_NO_ROWS = (np.zeros(0), np.zeros(0, dtype=np.int64))


def contact_rows(contacts, systems, index, offsets, N: int, dt: float, u_now,
                 before: Rows | None = None) -> Rows:
    """The rows of `contacts` (a ContactSet) over the columns of `systems` (system k's at
    offsets[k]; `index`: id(system) -> k), with the normal targets at the velocity u_now, after
    the rows `before` (over the same N columns; the joint rows), as Rows.stack([before, contact
    rows]) would give them without stacking copies."""
    nc = len(contacts)
    m0 = before.m if before is not None else 0
    m = m0 + 3 * nc
    if m0:
        bJ, btarget, blo, bhi = before.J, before.target, before.lo, before.hi
        bs, bk, bm = before.blocks()
    else:
        z, zi = _NO_ROWS
        bJ, btarget, blo, bhi, bs, bk, bm = np.zeros((0, N)), z, z, z, zi, zi, z
    nb = bs.shape[0]
    J, target, lo, hi = np.empty((m, N)), np.empty(m), np.empty(m), np.empty(m)
    first_rows = np.empty(nc, dtype=np.int64)
    start, kind, mu = np.empty(nb + nc, dtype=np.int64), np.empty(nb + nc, dtype=np.int64), \
        np.empty(nb + nc)
    _start_rows(bJ, btarget, blo, bhi, bs, bk, bm, contacts.params[:, 0], J, target, lo, hi,
                first_rows, start, kind, mu)
    frames, points = contacts.frames, contacts.points
    if contacts.alone is not None and id(contacts.alone) in index:
        # one side of every contact, in order: a robot alone against the static world
        sides = {index[id(contacts.alone)]: (None, contacts.bodies_a, np.ones(nc))}
    else:
        found: dict[int, list] = {}  # system index -> [(contact index, body, sign)]
        for c_i, (sa, ba, _, sb, bb, _) in enumerate(contacts.meta):
            for system, body, sign in ((sa, ba, 1.0), (sb, bb, -1.0)):
                if system is not None and id(system) in index:
                    found.setdefault(index[id(system)], []).append((c_i, body, sign))
        sides = {}
        for k, side in found.items():
            ci, bodies, signs = zip(*side)
            sides[k] = (list(ci), np.array(bodies, dtype=np.int64),
                        np.array(signs, dtype=np.float64))
    for k in sorted(sides):  # a system's sides in contact order, A before B (self-contact)
        system = systems[k]
        views = system.point_jacobian_views()
        ci, bodies, signs = sides[k]
        if ci is None:
            at_points, in_frames, rows_of = points, frames, first_rows
        else:
            at_points, in_frames, rows_of = points[ci], frames[ci], first_rows[ci]
        _add_rows(views.J_world, views.origins, views.supports, bodies, at_points, in_frames,
                  signs, rows_of, int(offsets[k]), views.block_u, views.R,
                  np.empty((12, system.nv)), J)
    _targets(J, m0, np.ascontiguousarray(u_now, dtype=np.float64), contacts.distance,
             contacts.params, dt, np.empty(nc), target)
    keys = contact_keys(contacts)
    source = ["contacts"] * (3 * nc)
    groups = None
    if m0:
        source, keys = before.source + source, before.key + keys
        groups = before.source_groups_with_contacts(nc)
    return Rows(J, target, lo, hi, source, keys, start, kind, mu, groups)


def contact_keys(contacts) -> list:
    """The keys of the contacts' rows (three a contact: t1, t2, n), for the warm start."""
    return [(key, i) for key in contacts.keys for i in (0, 1, 2)]


@kernel
def _report(frames, J, first, lam, u_next, row_target, impulse, impulse_contact, velocity,
            target):
    """impulse[c] = frames[c] lam[first + 3c : + 3] (world), velocity[c] = J[first + 3c : + 3]
    u_next, each summed in index order; impulse_contact[c] = lam[first + 3c : + 3] and
    target[c] = row_target[first + 3c + 2] as they are."""
    for c in range(frames.shape[0]):
        r = first + 3 * c
        for i in range(3):
            s = 0.0
            for p in range(3):
                s += frames[c, i, p] * lam[r + p]
            impulse[c, i] = s
            s = 0.0
            for k in range(u_next.shape[0]):
                s += J[r + i, k] * u_next[k]
            velocity[c, i] = s
            impulse_contact[c, i] = lam[r + i]
        target[c] = row_target[r + 2]


def report_contact_impulses(contacts, rows: Rows, lam, u_next) -> None:
    """Each contact's impulse (world and contact frame), its velocity at the step's end and its
    normal target, from the solved rows (the contacts' rows are the last), into the
    ContactSet's result arrays."""
    _report(contacts.frames, rows.J, rows.m - 3 * len(contacts), lam,
            np.ascontiguousarray(u_next), rows.target, contacts.impulse,
            contacts.impulse_contact, contacts.velocity_contact, contacts.target)
