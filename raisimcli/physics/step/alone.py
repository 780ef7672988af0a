"""Steps 7-12 of one robot that touches nothing but the static world (the common case: a robot
alone, or one of several robots apart), its impulse problem without Python objects between the
compiled loops.

It calls the compiled loops of the general path (raisimcli.physics.step.world_step) in their
order, on the same inputs: the joint rows then the contacts' rows (contact_rows), the response
M~^-1 J^T, the Delassus matrix and the block Gauss-Seidel (solver), the contacts' reports and the
generalized impulses by source. So its results have the same bits (a test compares the two
paths); it saves the Rows records, the lists and most of the arrays that the general path makes
between those loops. (One compiled function calling them all was a few microseconds faster
still, but numba's first compile of it took about 3 s more, as LLVM optimised the loops again
inlined into it.) A robot with loop or mimic constraints, or in contact with another robot,
takes the general path.
"""

from __future__ import annotations

import threading

import numpy as np

from raisimcli.linalg import _cho_solve_rows
from raisimcli.physics.step.contact_rows import _add_rows, _report, _start_rows, _targets, \
    contact_keys, groups_with_contacts
from raisimcli.physics.step.solver import WarmStart, _impulses_by_source, _solve


def _impulse_problem(bJ, btarget, blo, bhi, bstart, bkind, bmu, mu_c, J_world, origins,
                     supports, bodies, points, frames, signs, bu, R, jac_scratch, u, distance,
                     params, dt, vn, L, u_star, lam, max_iterations, tolerance, order, starts,
                     J, target, lo, hi, first_rows, start, kind, mu, response, G, v, scratch,
                     u_next, impulse, impulse_contact, velocity, normal_target, g, nonzero):
    """The rows (joint rows b..., then a contact block per contact), the response, the solve,
    the contacts' reports and the impulses by source, into the output arrays (J ... nonzero),
    each a compiled loop. Returns (sweeps, residual)."""
    m0 = bJ.shape[0]
    _start_rows(bJ, btarget, blo, bhi, bstart, bkind, bmu, mu_c, J, target, lo, hi, first_rows,
                start, kind, mu)
    if mu_c.shape[0]:
        _add_rows(J_world, origins, supports, bodies, points, frames, signs, first_rows, 0, bu,
                  R, jac_scratch, J)
        _targets(J, m0, u, distance, params, dt, vn, target)
    _cho_solve_rows(L, J, 0, response, 0)
    sweeps, residual = _solve(J, response, u_star, lam, target, lo, hi, start, kind, mu,
                              max_iterations, tolerance, G, v, scratch, u_next)
    if mu_c.shape[0]:
        _report(frames, J, m0, lam, u_next, target, impulse, impulse_contact, velocity,
                normal_target)
    _impulses_by_source(J, lam, order, starts, 0, g, nonzero)
    return sweeps, residual


_NO_CONTACTS: dict[int, tuple] = {}


def _no_contacts(nv: int) -> tuple:
    """The contact arguments of _impulse_problem for no contact (empty arrays of the types of
    the contact case, made once per nv; the kernel reads none of them)."""
    if nv not in _NO_CONTACTS:
        z2, z = np.zeros((0, 3)), np.zeros(0)
        _NO_CONTACTS[nv] = (np.zeros((6, nv)), z2, np.zeros((0, nv), dtype=np.bool_),
                            np.zeros(0, dtype=np.int64), np.zeros((0, 3, 3)),
                            np.zeros(0, dtype=np.int64), z2, np.zeros((0, 3, 3)), z,
                            np.zeros((0, 5)), z2, z2, z2, z)
    return _NO_CONTACTS[nv]


_WORKSPACES = threading.local()  # per thread: sizes -> the arrays of _workspace


def _workspace(m: int, nv: int, nb: int, nc: int, ns: int) -> tuple:
    """The arrays _impulse_problem writes and reads within the call (its scratch and its rows),
    for m rows over nv columns, nb joint-row blocks, nc contacts and ns sources: made once per
    size and thread, and reused (the call writes each before it reads it; only `nonzero` is
    read after it, before the thread's next step)."""
    cache = getattr(_WORKSPACES, "by_size", None)
    if cache is None:
        cache = _WORKSPACES.by_size = {}
    key = (m, nv, nb, nc, ns)
    ws = cache.get(key)
    if ws is None:
        if len(cache) >= 256:
            cache.clear()
        ws = cache[key] = (
            np.ones(nc), np.empty((12, nv)), np.empty(nc), np.empty((m, nv)), np.empty(m),
            np.empty(m), np.empty(m), np.empty(nc, dtype=np.int64),
            np.empty(nb + nc, dtype=np.int64), np.empty(nb + nc, dtype=np.int64),
            np.empty(nb + nc), np.empty((nv, m)), np.empty((m, m)), np.empty(m),
            np.empty((5, 3)), np.empty(ns, dtype=np.int64))
    return ws


def can_go_alone(systems, stages, contacts) -> bool:
    """Whether integrate2_alone applies: one system, without constraints, whose contacts (if
    any) are all with the static world, and with at least one row."""
    if len(systems) != 1 or stages[0].elimination is not None:
        return False
    if contacts:
        return contacts.alone is systems[0]
    return stages[0].joint_rows.m > 0


def integrate2_alone(s, st, dt: float, contacts, warm_start):
    """integrate2_systems([s], ...) when can_go_alone: returns (row keys, impulses) for the next
    step's warm start."""
    joint, nc, nv = st.joint_rows, len(contacts), s.nv
    m0 = joint.m
    m = m0 + 3 * nc
    keys = joint.key + contact_keys(contacts) if nc else joint.key
    sources, order, starts = groups_with_contacts(joint, nc)
    if not warm_start:
        lam = np.zeros(m)
    elif isinstance(warm_start, WarmStart):
        lam = warm_start.start(keys)
    else:  # a dict of impulses by key (World.set_state)
        lam = np.array([warm_start.get(key, 0.0) for key in keys], dtype=np.float64)
    bs, bk, bm = joint.blocks()
    nb = bs.shape[0]
    if nc:
        views = s.point_jacobian_views()
        J_world, origins, supports, bu, R = views
        bodies, points, frames = contacts.bodies_a, contacts.points, contacts.frames
        distance, params = contacts.distance, contacts.params
        impulse, impulse_contact = contacts.impulse, contacts.impulse_contact
        velocity, normal_target = contacts.velocity_contact, contacts.target
    else:
        J_world, origins, supports, bu, R, bodies, points, frames, distance, params, impulse, \
            impulse_contact, velocity, normal_target = _no_contacts(nv)
    signs, jac_scratch, vn, J, target, lo, hi, first_rows, start, kind, mu, response, G, v, \
        scratch, nonzero = _workspace(m, nv, nb, nc, len(sources))
    u_next, g = np.empty(nv), np.empty((len(sources), nv))  # these two leave the step
    sweeps, _ = _impulse_problem(
        joint.J, joint.target, joint.lo, joint.hi, bs, bk, bm, params[:, 0], J_world, origins,
        supports, bodies, points, frames, signs, bu, R, jac_scratch, np.ascontiguousarray(s.u),
        distance, params, float(dt), vn, st.factor.lower, np.ascontiguousarray(st.u_free), lam,
        int(s.solver_max_iterations), float(s.solver_tolerance), order, starts, J, target, lo,
        hi, first_rows, start, kind, mu, response, G, v, scratch, u_next, impulse,
        impulse_contact, velocity, normal_target, g, nonzero)
    by_source = {source: g[n] for n, source in enumerate(sources) if nonzero[n]}
    loads = contacts.loads_on(s, dt) if s.compute_inverse_dynamics and nc else None
    st.solver_impulses = lam
    s.finish_step(dt, st, u_next, by_source, [loads] if loads is not None else [], int(sweeps),
                  bool(nc))
    return keys, lam
