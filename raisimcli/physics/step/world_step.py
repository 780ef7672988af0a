"""integrate2 of several systems at once: their joint rows and the contacts between them (and
with the static world) form one impulse problem (spec step 4), because a contact between two robots
couples their velocities. Robots that touch no other robot are independent problems (islands):
integrate2_world solves each island on its own, so a world's cost grows linearly with its number
of robots.

The unknown velocity is every system's u one after the other; J stacks the rows of all, and the
response to the impulses is block diagonal, blockdiag(M~_s^-1) J^T (one Cholesky per system).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from raisimcli.physics.contact_set import EMPTY_CONTACTS, ContactSet
from raisimcli.physics.step.alone import can_go_alone, integrate2_alone
from raisimcli.physics.step.contact_rows import contact_rows, report_contact_impulses
from raisimcli.physics.step.finish import finish_step
from raisimcli.physics.step.solver import Rows, WarmStart, _impulses_by_source, \
    solve_impulses, warm_start_impulses


def islands(systems, contacts) -> list[tuple[list, list | None]]:
    """The systems grouped by the contacts between them (a ContactSet): (systems, the indices of
    their contacts) per group, in the order of their first system; a contact with the ground or
    a static box belongs to its robot's group. One group: the indices are None (all)."""
    if len(systems) == 1:
        return [(list(systems), None)]
    parent = list(range(len(systems)))
    index = {id(s): k for k, s in enumerate(systems)}

    def root(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    meta = contacts.meta
    for system_a, _, _, system_b, _, _ in meta:
        if system_b is not None and id(system_b) in index:
            a, b = root(index[id(system_a)]), root(index[id(system_b)])
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[int, tuple[list, list]] = {}
    for k, s in enumerate(systems):
        groups.setdefault(root(k), ([], []))[0].append(s)
    for i, m in enumerate(meta):
        groups[root(index[id(m[0])])][1].append(i)
    if len(groups) == 1:
        return [(next(iter(groups.values()))[0], None)]
    return list(groups.values())


def integrate2_world(systems, dt: float, contacts: ContactSet, warm_start: Mapping | None,
                     island) -> WarmStart:
    """Steps 7-12 for a world: every island solved on its own (see islands), its contacts'
    results written into `contacts`. Returns the impulses by row key of all of them, for the
    next step's warm start. `island(systems, dt, contacts, warm_start)` solves one island
    (step/pipeline.py's)."""
    groups = islands(systems, contacts)
    if len(groups) == 1:
        return island(groups[0][0], dt, contacts, warm_start)
    parts = []  # every island's rows (their keys name their systems) and impulses
    for group, indices in groups:
        copied = False
        if not indices:
            part = EMPTY_CONTACTS
        elif indices[-1] - indices[0] + 1 == len(indices):  # a run: views, results included
            part = contacts.span(indices[0], indices[-1] + 1)
        else:
            part, copied = contacts.take(indices), True
        parts.append(island(group, dt, part, warm_start))
        if copied:
            contacts.put_results(indices, part)
    return WarmStart.of_parts(parts)


def integrate2_systems(systems, dt: float, contacts: ContactSet, warm_start: Mapping | None,
                       stages: list) -> WarmStart:
    """Steps 7-12 for `systems` with `contacts` (a ContactSet, see raisimcli.physics.contact_set),
    whose results it fills, from their stages (step/explicit.py's make_stage). Returns the impulses
    by row key, for the next step's warm start."""
    if can_go_alone(systems, stages, contacts):  # the common case (step/alone.py)
        return WarmStart(*integrate2_alone(systems[0], stages[0], dt, contacts, warm_start))
    offsets = [0]
    for s in systems:
        offsets.append(offsets[-1] + s.nv)
    N = offsets[-1]
    index = {id(s): k for k, s in enumerate(systems)}
    parts = []
    for k, (s, st) in enumerate(zip(systems, stages)):
        r = st.joint_rows
        if r.m and len(systems) == 1:
            parts.append(r)  # one system: its columns are all the columns
        elif r.m:  # (the keys name the system)
            J = np.zeros((r.m, N))
            J[:, offsets[k]:offsets[k + 1]] = r.J
            parts.append(Rows(J, r.target, r.lo, r.hi, r.source, r.key, r.block_start,
                              r.block_kind, r.block_mu))
    joint = Rows.stack(parts) if parts else None
    alone = len(systems) == 1  # then u and u* are the system's own (the solver reads them)
    if contacts:  # after the joint rows
        u_now = systems[0].u if alone else np.concatenate([s.u for s in systems])
        rows = contact_rows(contacts, systems, index, offsets, N, dt, u_now, before=joint)
    else:
        rows = joint if joint is not None else Rows.empty(N)
    if alone:
        u_star = stages[0].u_free
    else:
        u_star = np.concatenate([st.u_free for st in stages]) if systems else np.zeros(0)
    response = np.zeros((N, rows.m))
    J_rows = np.ascontiguousarray(rows.J)
    for k, st in enumerate(stages):
        if st.elimination is None:  # M~^-1 J^T, from J's rows
            st.factor.solve_rows_into(J_rows, offsets[k], response, offsets[k])
            continue
        cols = slice(offsets[k], offsets[k + 1])
        Y = np.empty((systems[k].nv, rows.m))  # M~^-1 J^T, from J's rows (solve's bits)
        if rows.m:
            st.factor.solve_rows_into(J_rows, offsets[k], Y, 0)
        # the constrained mechanism's response, M_c^-1 J_c^T
        Y, st.constraint_recover = st.elimination.response(Y)
        response[cols] = Y
    impulse0 = warm_start_impulses(warm_start, rows.key)
    limits = [s.solver_max_iterations for s in systems]
    tolerances = [s.solver_tolerance for s in systems]
    result = solve_impulses(rows, u_star, response, impulse0=impulse0,
                            max_iterations=max(limits) if limits else 1,
                            tolerance=min(tolerances) if tolerances else 0.0)
    lam = result.impulse
    if contacts:
        report_contact_impulses(contacts, rows, lam, result.u_next)
    sources, order, starts = rows.source_groups()  # the rows of each source, in row order
    for k, (s, st) in enumerate(zip(systems, stages)):
        cols = slice(offsets[k], offsets[k + 1])
        g, nonzero = np.empty((len(sources), s.nv)), np.empty(len(sources), dtype=np.int64)
        _impulses_by_source(J_rows, lam, order, starts, int(offsets[k]), g, nonzero)
        by_source = {source: g[n] for n, source in enumerate(sources) if nonzero[n]}
        # the contact forces as point loads: only inverse dynamics reads them
        loads = contacts.loads_on(s, dt) if s.compute_inverse_dynamics and contacts else None
        point_loads = [loads] if loads is not None else []
        st.solver_impulses = lam
        finish_step(s, dt, st, result.u_next[cols], by_source, point_loads, result.iterations,
                      bool(contacts) and contacts.touches(s))
    return WarmStart(rows.key, lam)
