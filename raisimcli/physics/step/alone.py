"""Steps 7-12 of one robot that touches nothing but the static world (the common case: a robot
alone, or one of several robots apart): its impulse problem, the integration and the torque
table in one compiled call (`_impulse_step`): the joint rows then the contacts' rows
(contact_rows), the response M~^-1 J^T, the Delassus matrix and the block Gauss-Seidel (solver),
the contacts' reports, the generalized impulses by source, the position integration of spec
step 6 (Conventions.integrate) and the torque table of step 5 (decomposition.torque_table).
Under RUNGE_KUTTA_4 the impulses come from the same call and finish.finish_step runs
the four stages. A robot with loop or mimic constraints takes the same call with their
elimination (constraints.Elimination, made with its stage): the solve then takes the constrained
response M_c^-1 J^T with u* the elimination's u_0, and the constraints' impulses are recovered
after it (constraints' _response and _recovered). A robot in contact with another robot, or
with its own bodies, takes world_step.integrate2_systems.
"""

from __future__ import annotations

import threading

import numpy as np

from raisimcli.jit import carve, kernel, present, span
from raisimcli.linalg import _cho_solve_rows
from raisimcli.physics.constraints import _recovered, _response
from raisimcli.physics.conventions import _integrate
from raisimcli.physics.step.contact_rows import _add_rows, _report, _start_rows, _targets, \
    contact_keys
from raisimcli.physics.step.decomposition import SOURCES, _row_names, _table
from raisimcli.physics.step.finish import constraint_report, finish_step
from raisimcli.physics.step.solver import _impulses_by_source, _solve, warm_start_impulses

# the schemes _impulse_step integrates (spec step 6): the velocity that moves q
_U_BAR = {"SEMI_IMPLICIT": 0, "TRAPEZOID": 1, "EULER": 2, "RUNGE_KUTTA_4": 0}
_TABLE_ROWS = len(SOURCES) + 1  # the torque table's rows and its total

_WORKSPACES = threading.local()  # per thread: sizes -> the arrays of _workspace


def _g_at(m: int, nv: int, nb: int, nc: int) -> int:
    """Where g starts in _workspace's float buffer (the layout _impulse_step carves)."""
    return 2 * nc + 12 * nv + m * nv + 3 * m + nb + nc + nv * m + 2 * m * m + m + 15


def _workspace(m: int, nv: int, nb: int, nc: int, ns: int, k: int) -> tuple:
    """The memory integrate2_alone's loops write and read (their scratch and the rows), for m
    rows over nv columns, nb joint-row blocks, nc contacts, ns sources and k constraint rows:
    (a float buffer, an integer buffer, which _impulse_step carves into its arrays, and the views
    g (ns, nv) and nonzero (ns,) of the impulses by source in them), made once per size and
    thread, and reused (each array is written before it is read in a step; none outlives it)."""
    cache = getattr(_WORKSPACES, "by_size", None)
    if cache is None:
        cache = _WORKSPACES.by_size = {}
    key = (m, nv, nb, nc, ns, k)
    ws = cache.get(key)
    if ws is None:
        if len(cache) >= 256:
            cache.clear()
        g_at = _g_at(m, nv, nb, nc)
        c_at = g_at + 2 * ns * nv + 2 * nv  # the constraints' part (_impulse_step's order)
        F = np.empty(c_at + (_constrained_size(m, nv, ns, k) if k else 0))
        I = np.empty(nc + 2 * (nb + nc) + ns, dtype=np.int64)  # noqa: E741
        ws = cache[key] = (F, I, F[g_at:g_at + ns * nv].reshape(ns, nv), I[nc + 2 * (nb + nc):])
    return ws


def _constrained_size(m: int, nv: int, ns: int, k: int) -> int:
    """The floats _impulse_step carves after its other arrays for k constraint rows (with m
    rows, nv columns and ns sources)."""
    return nv + k * m + k + 2 * k * m + 2 * nv * m + (ns + 1) * nv


@kernel
def _impulse_step(RF, RI, J_world, origins, supports, bu, R,
                  bodies, points, frames, distance, params,
                  impulse, impulse_contact, velocity_contact, target_c,
                  L, q, u, u_star, lam, max_iterations, tolerance, dt, u_bar_rule,
                  tau_cmd, kp, kd, b, tau_act, k_s, spring_err, tau_ext,
                  F, I, u_next, q_next, table, EF, EI):  # noqa: E741
    """Spec steps 4-6 and 5's table of a robot alone: the rows b... of its joints then the
    contacts' (`bodies`, `points`, `frames`, `distance`, `params` of the ContactSet; their
    results into `impulse`... `target_c`), M~^-1 J^T from M~'s lower factor L, the solve from
    the impulses `lam` (warm start; the solved ones on return) and u* into u_next, the
    generalized impulses by source g (the rows of source s: order[starts[s]:starts[s + 1]];
    nonzero[s] says whether any entry is not 0), q_next = q integrated with the velocity of
    `u_bar_rule` (0 u_next, 1 the trapezoid's (u + u_next) / 2, 2 u; `integ`, `integ_at`:
    Conventions.integration_packed), and the torque table (torque_table's rows: the five
    applied ones, the nonzero sources in order, zeros, the total). The joint rows, the groups
    by source and the integration's indices come packed (_packed_rows: RF their floats, RI
    their integers, made once per row structure). The scratch, the rows and g, nonzero are
    carved from F and I (_workspace). With loop or mimic constraints, EF and EI hold their
    elimination (constraints.Elimination's; else both are None): the solve then takes the
    constrained response (constraints' _response, with u* the elimination's u_0), the
    constraints' impulses are recovered after it (_recovered, into EF's last slot) and their
    generalized impulse is the table's "constraints" row after the sources', as
    finish.finish_step makes them. Returns the sweeps."""
    # (frames None: a robot that cannot touch anything, whose contact arrays are empty; numba
    # then leaves out the blocks under `frames is not None` and compiles this function without
    # the contacts' rows, reports and solve)
    nc, nv = 0, u.shape[0]
    if frames is not None:
        nc = distance.shape[0]
    m0, nb, ns = RI[0], RI[1], RI[2]
    m = m0 + 3 * nc
    # the packed arrays (_packed_rows' layout)
    a = 3
    bstart, bkind = span(RI, a, a + nb), span(RI, a + nb, a + 2 * nb)
    a += 2 * nb
    order = span(RI, a, a + m)
    starts = span(RI, a + m, a + m + ns + 1)
    a += m + ns + 1
    integ_at = span(RI, a, a + 7)
    integ = span(RI, a + 7, RI.shape[0])
    bJ = carve(RF, 0, (m0, nv))
    a = m0 * nv
    btarget, blo = span(RF, a, a + m0), span(RF, a + m0, a + 2 * m0)
    bhi = span(RF, a + 2 * m0, a + 3 * m0)
    bmu = span(RF, a + 3 * m0, a + 3 * m0 + nb)
    # the arrays of the step, carved from F and I in _workspace's layout (_g_at)
    a = 0
    signs = span(F, a, a + nc)
    a += nc
    jac_scratch = carve(F, a, (12, nv))
    a += 12 * nv
    vn = span(F, a, a + nc)
    a += nc
    J = carve(F, a, (m, nv))
    a += m * nv
    target = span(F, a, a + m)
    lo = span(F, a + m, a + 2 * m)
    hi = span(F, a + 2 * m, a + 3 * m)
    a += 3 * m
    mu = span(F, a, a + nb + nc)
    a += nb + nc
    response = carve(F, a, (nv, m))
    a += nv * m
    G = carve(F, a, (2 * m, m))  # G and its transpose (_solve's G2)
    a += 2 * m * m
    v = span(F, a, a + m)
    a += m
    scratch = carve(F, a, (5, 3))
    a += 15
    g = carve(F, a, (ns, nv))
    a += ns * nv
    impulses = carve(F, a, (ns, nv))
    a += ns * nv
    u_bar = span(F, a, a + nv)
    du = span(F, a + nv, a + 2 * nv)
    a += 2 * nv
    first_rows = span(I, 0, nc)
    start = span(I, nc, nc + nb + nc)
    kind = span(I, nc + nb + nc, nc + 2 * (nb + nc))
    nonzero = span(I, nc + 2 * (nb + nc), nc + 2 * (nb + nc) + ns)
    for i in range(nc):
        signs[i] = 1.0
    # the rows: the joints', then a contact block per contact
    _start_rows(bJ, btarget, blo, bhi, bstart, bkind, bmu, params[:, 0], J, target, lo, hi,
                first_rows, start, kind, mu)
    if frames is not None and nc:
        _add_rows(J_world, origins, supports, bodies, points, frames, signs, first_rows, 0, bu, R,
                  jac_scratch, J)
        _targets(J, m0, u, distance, params, dt, vn, target)
    # the response M~^-1 J^T, the impulses, u_{t+1} and what they say about each contact.
    # Joint rows alone (np.zeros' +0.0 and one 1.0 each; a contact's may hold -0.0): the
    # forward pass starts at their first DoF (_cho_solve_rows' `first`), past a floating base
    first = 0
    if nc == 0:
        first = nv
        for r in range(m0):
            f = 0
            while f < first and J[r, f] == 0.0:
                f += 1
            first = f
    _cho_solve_rows(L, J, 0, response, 0, first)
    # (a robot without constraints passes EF = EI = None: numba then leaves out the two blocks
    # under `EI is not None` before it types the function, and never compiles _response and
    # _recovered for it, nor carries their code)
    if EI is not None:  # (constraints.packed_size's slots, each carved with r kept rows)
        k_c, r = EI[0], EI[1]
        kept = span(EI, 2, 2 + r)
        EJ = carve(EF, 0, (r, nv))
        L_D = carve(EF, k_c * nv, (r, r))
        MinvJT = carve(EF, k_c * nv + k_c * k_c, (nv, r))
        e0 = 2 * k_c * nv + k_c * k_c
        lambda0 = span(EF, e0, e0 + k_c)
        J_all = carve(EF, e0 + k_c, (k_c, nv))
        e0 += k_c + 2 * k_c * nv
        lam_c = span(EF, e0, e0 + k_c)
        # the constraints' part of F (_workspace's order)
        generalized = span(F, a, a + nv)
        a += nv
        DinvJY = carve(F, a, (r, m))
        a += k_c * m
        v_c = span(F, a, a + r)
        a += k_c
        JY, JYT = carve(F, a, (r, m)), carve(F, a + r * m, (m, r))
        a += 2 * k_c * m
        prod, constrained_response = carve(F, a, (nv, m)), carve(F, a + nv * m, (nv, m))
        a += 2 * nv * m
        impulses_c = carve(F, a, (ns + 1, nv))
        if r and m:  # (Elimination.response: M_c^-1 J^T, and D^-1 J Y)
            _response(EJ, response, L_D, MinvJT, JY, JYT, DinvJY, prod, constrained_response)
            response = constrained_response
    sweeps, _ = _solve(J, response, u_star, lam, target, lo, hi, start, kind, present(frames, mu),
                       max_iterations, tolerance, G, v, scratch, u_next)
    if frames is not None and nc:
        _report(frames, J, m0, lam, u_next, target, impulse, impulse_contact, velocity_contact,
                target_c)
    _impulses_by_source(J, lam, order, starts, 0, g, nonzero)
    k = 0  # the sources that have impulses, in their order
    for s in range(g.shape[0]):
        if nonzero[s]:
            for i in range(nv):
                impulses[k, i] = g[s, i]
            k += 1
    if EI is not None:  # the constraints' impulses (Elimination.impulses) and their
        # generalized impulse, the table's row after the sources'
        _recovered(lambda0, kept, DinvJY, lam, m if r else 0, J_all, v_c, lam_c, generalized)
        for s in range(k):
            for i in range(nv):
                impulses_c[s, i] = impulses[s, i]
        for i in range(nv):
            impulses_c[k, i] = generalized[i]
        _advance(q, u, u_next, dt, u_bar_rule, integ_at, integ, tau_cmd, kp, kd, b, tau_act,
                 k_s, spring_err, tau_ext, impulses_c[:k + 1], u_bar, du, q_next, table)
        return sweeps
    _advance(q, u, u_next, dt, u_bar_rule, integ_at, integ, tau_cmd, kp, kd, b, tau_act, k_s,
             spring_err, tau_ext, impulses[:k], u_bar, du, q_next, table)
    return sweeps


@kernel
def _advance(q, u, u_next, dt, u_bar_rule, integ_at, integ, tau_cmd, kp, kd, b, tau_act, k_s,
             spring_err, tau_ext, impulses, u_bar, du, q_next, table):
    """Spec step 6, q_next = q integrated with the velocity of `u_bar_rule` (0 u_next, 1 the
    trapezoid's (u + u_next) / 2, 2 u; `integ`, `integ_at`: Conventions.integration_packed),
    then step 5's table with these generalized impulses (decomposition._table); `u_bar`, `du`
    (nv,): scratch. finish.finish_step's operations, in its order."""
    nv = u.shape[0]
    for i in range(nv):
        if u_bar_rule == 0:
            u_bar[i] = u_next[i]
        elif u_bar_rule == 1:
            u_bar[i] = 0.5 * (u[i] + u_next[i])
        else:
            u_bar[i] = u[i]
    _integrate(q, u_bar, dt, span(integ, integ_at[0], integ_at[1]),
               span(integ, integ_at[1], integ_at[2]),
               span(integ, integ_at[2], integ_at[3]), span(integ, integ_at[3], integ_at[4]),
               span(integ, integ_at[4], integ_at[5]), span(integ, integ_at[5], integ_at[6]), q_next)
    for i in range(nv):
        du[i] = u_next[i] - u[i]
    _table(dt, du, u, u_next, tau_cmd, kp, kd, b, tau_act, k_s, spring_err, tau_ext, impulses,
           table)


@kernel
def _advance_constrained(EF, EI, q, u, u_next, dt, u_bar_rule, integ_at, integ, tau_cmd, kp, kd,
                         b, tau_act, k_s, spring_err, tau_ext, W, q_next, table):
    """The end of a step whose only rows are its constraints' (nothing to solve: u_next is
    u_0), as finish.finish_step makes it: their impulses lambda_0 into EF's last slot
    and their generalized impulse J^T lambda_0 (Elimination.impulses of no row: _recovered),
    then _advance with it as the one source of impulses. EF, EI: the step's Elimination; W:
    scratch (4 nv + k)."""
    nv = u.shape[0]
    k_c, r = EI[0], EI[1]
    e0 = 2 * k_c * nv + k_c * k_c  # (constraints.packed_size's slots)
    generalized = carve(W, 2 * nv, (1, nv))
    _recovered(span(EF, e0, e0 + k_c), span(EI, 2, 2 + r), carve(W, 0, (r, 0)), span(W, 0, 0), 0,
               carve(EF, e0 + k_c, (k_c, nv)), span(W, 3 * nv, 3 * nv + r),
               span(EF, e0 + k_c + 2 * k_c * nv, e0 + 2 * k_c + 2 * k_c * nv), generalized[0])
    _advance(q, u, u_next, dt, u_bar_rule, integ_at, integ, tau_cmd, kp, kd, b, tau_act, k_s,
             spring_err, tau_ext, generalized, span(W, 0, nv), span(W, nv, 2 * nv), q_next, table)


def _plan(s, joint, contacts, nc: int) -> tuple:
    """What integrate2_alone derives from the rows' structure alone: (joint rows, contact keys,
    the rows' keys, sources, _packed_rows' RF and RI, the number of blocks of the joint rows,
    the torque table's row names by which sources act), kept for the system for as long as its
    joint rows are the same object and its contacts' keys the same (a robot standing: from step
    to step)."""
    ckeys = contacts.keys if nc else None
    plan = s.step_scratch.get("plan")
    if plan is not None and plan[0] is joint and (plan[1] is ckeys or plan[1] == ckeys):
        return plan  # (equal keys: an island's part of the world's contacts, a new list a step)
    keys = joint.key + contact_keys(contacts) if nc else joint.key
    sources, order, starts = joint.source_groups_with_contacts(nc)
    bs, bk, bm = joint.blocks()
    plan = s.step_scratch["plan"] = (joint, ckeys, keys, sources,
                                     *_packed_rows(joint, bs, bk, bm, order, starts,
                                                   s.conv.integration_packed),
                                     bs.shape[0], {})
    return plan


def _packed_rows(joint, bs, bk, bm, order, starts, integration) -> tuple:
    """(RF, RI) of _impulse_step: RF the joint rows' J (m0, nv), target, lo, hi and their blocks'
    mu; RI m0, the number of blocks nb, of sources ns, then the blocks' starts and kinds, order,
    starts (the rows by source), the integration's integ_at (7) and integ
    (Conventions.integration_packed)."""
    integ, integ_at = integration
    RF = np.concatenate([joint.J.reshape(-1), joint.target, joint.lo, joint.hi, bm]) \
        .astype(np.float64)
    RI = np.concatenate([[joint.m, bs.shape[0], starts.shape[0] - 1], bs, bk, order, starts,
                         integ_at, integ]).astype(np.int64)
    return RF, RI


def can_go_alone(systems, stages, contacts) -> bool:
    """Whether integrate2_alone applies: one system whose contacts (if any) are all with the
    static world, with at least one row besides its constraints' (if any)."""
    if len(systems) != 1:
        return False
    if contacts:
        return contacts.alone is systems[0]
    return stages[0].joint_rows.m > 0


def integrate2_alone(s, st, dt: float, contacts, warm_start):
    """integrate2_systems([s], ...) when can_go_alone: returns (row keys, impulses) for the next
    step's warm start."""
    joint, nc, nv = st.joint_rows, len(contacts), s.nv
    m = joint.m + 3 * nc
    plan = _plan(s, joint, contacts, nc)
    _, _, keys, sources, RF, RI, nb, names_of = plan
    lam = warm_start_impulses(warm_start, keys)
    if lam is None:
        lam = np.zeros(m)
    elim = st.elimination
    F, I, g, nonzero = _workspace(  # noqa: E741
        m, nv, nb, nc, len(sources), 0 if elim is None else elim.k)
    # these leave the step: the next state and the torque table
    u_next, q_next, table = np.empty(nv), np.empty(s.nq), np.empty((_TABLE_ROWS, nv))
    # the joint Jacobians are computed only when contacts need them
    views = s.point_jacobian_views() if nc else s.jacobian_views_unread()
    scheme = s.effective_scheme()
    EF, EI = (None, None) if elim is None else (elim.EF, elim.EI)
    sweeps = _impulse_step(
        RF, RI, *views,
        contacts.bodies_a, contacts.points, contacts.frames, contacts.distance, contacts.params,
        contacts.impulse, contacts.impulse_contact, contacts.velocity_contact, contacts.target,
        st.factor.lower, s.q, s.u, st.u_free, lam, int(s.solver_max_iterations),
        float(s.solver_tolerance), float(dt), _U_BAR[scheme], st.tau_cmd, st.kp, st.kd, st.b,
        st.tau_act, s.k_s, st.spring_err, st.tau_ext, F, I, u_next, q_next, table, EF, EI)
    loads = contacts.loads_on(s, dt) if s.compute_inverse_dynamics and nc else None
    point_loads = [loads] if loads is not None else []
    st.solver_impulses = lam
    if elim is not None:  # the constraints' impulses (never under RUNGE_KUTTA_4: spec step 6)
        lam_constraints = elim.impulses_solved
    if scheme == "RUNGE_KUTTA_4":  # the four stages (finish_step) from the solved impulses
        by_source = {source: g[n].copy() for n, source in enumerate(sources) if nonzero[n]}
        finish_step(s, dt, st, u_next, by_source, point_loads, int(sweeps), bool(nc))
    else:
        which = nonzero.tobytes() + (b"" if elim is None else b"constraints")
        names = names_of.get(which)
        if names is None:
            names = names_of[which] = _row_names(
                tuple(source for source, acts in zip(sources, nonzero.tolist()) if acts) +
                (() if elim is None else ("constraints",)))
        if elim is not None:  # (finish.finish_step's report, then its loads)
            point_loads = point_loads + constraint_report(s, st, dt, lam_constraints)
        torque = dict(zip(names, table))
        torque["total"] = table[-1]
        s.end_step(dt, st.q_err, q_next, u_next, torque, st.act_state, point_loads, int(sweeps),
                   bool(nc), s.pinocchio_inputs() if s.compute_inverse_dynamics else None)
    return keys, lam
