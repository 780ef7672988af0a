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
from raisimcli.physics.step.solver import _impulses_by_source, _solve, warm_start_impulses


_WORKSPACES = threading.local()  # per thread: sizes -> the arrays of _workspace


def _workspace(m: int, nv: int, nb: int, nc: int, ns: int) -> tuple:
    """The arrays integrate2_alone's loops write and read (their scratch and the rows), for m
    rows over nv columns, nb joint-row blocks, nc contacts and ns sources: made once per size
    and thread, and reused (each is written before it is read in a step; none outlives it)."""
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
    lam = warm_start_impulses(warm_start, keys)
    if lam is None:
        lam = np.zeros(m)
    bs, bk, bm = joint.blocks()
    signs, jac_scratch, vn, J, target, lo, hi, first_rows, start, kind, mu, response, G, v, \
        scratch, nonzero = _workspace(m, nv, bs.shape[0], nc, len(sources))
    u_next, g = np.empty(nv), np.empty((len(sources), nv))  # these two leave the step
    # the general path's loops, in its order: the rows (the joint rows, then a contact block
    # per contact), the response, the solve, the contacts' reports, the impulses by source
    _start_rows(joint.J, joint.target, joint.lo, joint.hi, bs, bk, bm, contacts.params[:, 0], J,
                target, lo, hi, first_rows, start, kind, mu)
    if nc:
        J_world, origins, supports, bu, R = s.point_jacobian_views()
        _add_rows(J_world, origins, supports, contacts.bodies_a, contacts.points,
                  contacts.frames, signs, first_rows, 0, bu, R, jac_scratch, J)
        _targets(J, m0, np.ascontiguousarray(s.u), contacts.distance, contacts.params,
                 float(dt), vn, target)
    _cho_solve_rows(st.factor.lower, J, 0, response, 0)
    sweeps, _ = _solve(J, response, np.ascontiguousarray(st.u_free), lam, target, lo, hi, start,
                       kind, mu, int(s.solver_max_iterations), float(s.solver_tolerance), G, v,
                       scratch, u_next)
    if nc:
        _report(contacts.frames, J, m0, lam, u_next, target, contacts.impulse,
                contacts.impulse_contact, contacts.velocity_contact, contacts.target)
    _impulses_by_source(J, lam, order, starts, 0, g, nonzero)
    by_source = {source: g[n] for n, source in enumerate(sources) if nonzero[n]}
    loads = contacts.loads_on(s, dt) if s.compute_inverse_dynamics and nc else None
    st.solver_impulses = lam
    s.finish_step(dt, st, u_next, by_source, [loads] if loads is not None else [], int(sweeps),
                  bool(nc))
    return keys, lam
