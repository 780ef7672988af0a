"""The whole step of a robot alone, on the ground or in the air, in one compiled call after
Pinocchio's (spec Integration Steps 1-12): World.integrate's most common case, without the
records the other paths hand from stage to stage.

Its stages are those of step/pipeline.py: the ground query, the stage (explicit._stage), the
joint rows of the joints' states, the warm start, and the impulse step (alone._impulse_step),
called in one compiled function; what it saves is the Python between them and most of their
arguments. tests/reference/ compares its steps with the plain reference:

- the joint rows are made in the compiled call from the joints' states, as JointRowTable._build
  makes them (position limits, velocity limits, then friction, each in joint order);
- a row is named by an integer code instead of its key: kind * nj + joint for a joint's row
  (kinds: position limit, velocity limit, friction), 3 nj + 3 slot + direction for a contact's
  (the contact's slot of the robot's shapes, RobotShapes).
  The warm start is the last step's codes and impulses; a row takes the impulse of the row with
  its code, 0 if none, as warm_start_impulses takes the one with its key. `CodedWarmStart` is the
  World's warm start between steps and gives the keys when someone reads them;
- the step's results are written into one array a step (`OF`, and `OI` for integers): the
  next q and u, the PD error, the torque table, the actuators' states, the impulses and the
  contacts. The contacts are a ContactSet (`PackedContacts`) whose arrays are views of it, made
  when first read. The arrays are reused once nothing holds them (QuickScratch.results).

`step` takes the step when the world holds one robot with neither loop constraints nor spherical
joints, under any scheme but RUNGE_KUTTA_4 after spec step 6's replacement rules, and its contacts
(if any) are with the ground alone (no static box, no self-collision); `step_apart` when it holds
several such robots on the ground, apart (ContactWorld.robots_apart, the test of detect_apart),
with one call per robot, whose results become the state once every robot's call is made and the
robots are found apart. A robot whose constraints are all mimics gets their rows and their
elimination in the call (constraints._eliminate_mimics, as Elimination.of_mimics), then the
constrained solve of _impulse_step; their impulses and errors go into OF
(finish.constraint_report's arrays). A step without any row (no contact, no joint at a
limit, no joint friction) takes u* (u_0 with mimics) as u_{t+1}, as finish.finish_step
does. Otherwise, or when the compiled call finds what only the other path handles (a shape near
the ground that coal must answer: a box under 2 mm; M~ not positive definite), it returns None
and pipeline.step takes the step from the start: Pinocchio's results are recomputed. After such
a step the next `_BACK_OFF` steps go to pipeline.step directly (a robot whose plate rests on the
ground would otherwise pay for both at every step).
"""

from __future__ import annotations

from sys import getrefcount

import numpy as np
from numba import types
from numba.extending import overload

from raisimcli.jit import ArrayTable, carve, kernel, present, span, table_view
from raisimcli.physics.ground import NO_PATCHES, _near_ground
from raisimcli.physics.conventions import _pin_inputs, _step_pin_acceleration
from raisimcli.physics.constraints import RANK_TOLERANCE, _eliminate_mimics, beta, packed_size, \
    scratch_size
from raisimcli.physics.contact_set import EMPTY_CONTACTS, ContactLoads, ContactSet
from raisimcli.physics.contact_world import _GROUND_SLACK, _UP_FRAME
from raisimcli.physics.step.alone import _TABLE_ROWS, _U_BAR, _advance, _advance_constrained, \
    _constrained_size, _g_at, _impulse_step
from raisimcli.physics.step.contact_solver import SCALAR
from raisimcli.physics.step.decomposition import _row_names
from raisimcli.physics.step.joint_rows import ABOVE, BELOW, FAST_UP, FREE
from raisimcli.physics.step.explicit import PD_PLUS_FEEDFORWARD_TORQUE, _stage, stage_constants
from raisimcli.physics.step.solver import WarmStart

_BACK_OFF = 50  # steps taken by pipeline.step after the compiled call declined one
_POOL = 4  # the sets of result arrays a robot keeps for reuse (QuickScratch.results)
_KINDS = ("position_limit", "velocity_limit", "friction")  # the joint rows' kinds, by code
_SOURCES = ("joint_limits", "joint_friction", "contacts")  # the row sources, in row order
# OF's contact entries, for n contacts: entry E holds the n contacts' values one after the other,
# from E * n floats after the contacts' start; an entry's floats per contact are the next entry's
# offset minus its own (points 3, frames 9, distance 1, params 5, impulse 3, impulse_contact 3,
# velocity_contact 3, target 1, force 3: the impulse / dt, the contact loads of inverse dynamics)
_C_POINTS, _C_FRAMES, _C_DISTANCE, _C_PARAMS = 0, 3, 12, 13
_C_IMPULSE, _C_IMPULSE_CONTACT, _C_VELOCITY_CONTACT, _C_TARGET, _C_FORCE = 18, 21, 24, 27, 28
_PER_CONTACT = 31
_C_LOGGED = _C_VELOCITY_CONTACT  # the entries before it: a contact's row of the log (log_block)

# the compiled call's answers (the first entry of what it returns)
DONE, FOR_COAL, NOT_DEFINITE = 0, 1, 2

# the arrays _quick reads at every step of a robot, in QuickScratch.arrays (an ArrayTable: one
# argument instead of ten), with their kinds: the placements' rotations and origins and the
# joint Jacobians (views of Pinocchio's data made at load), the bodies' supports, QI, QF, the
# system's commands and its joints' states, the robot's shapes packed (RobotShapes._pack; QI
# and QF without shapes): arrays written in place, never rebound
_ROTATIONS, _ORIGINS = (types.float64, 3, "A"), (types.float64, 2, "A")
_JACOBIANS, _SUPPORTS = (types.float64, 2, "F"), (types.boolean, 2, "C")
_INTS, _FLOATS, _STATES = (types.int64, 1, "C"), (types.float64, 1, "C"), (types.int8, 1, "C")
_rotations_of, _origins_of = table_view(_ROTATIONS), table_view(_ORIGINS)
_jacobians_of, _supports_of = table_view(_JACOBIANS), table_view(_SUPPORTS)
_ints_of, _floats_of, _states_of = table_view(_INTS), table_view(_FLOATS), table_view(_STATES)


@kernel
def _quick(dt, height, margin, tolerance, max_iterations, flags, arrays, R, ground_params,
           bounds, row, patches, M_upper, h_pin, u_pin, q, u, stall, prev_codes, prev_lam, prev_m,
           pin_at, OF, OI, MI, MF):
    """Steps 1-12 of a robot alone (the module's docstring), after Pinocchio's crba (M_upper),
    nonLinearEffects (h_pin) and, with the ground query, computeJointJacobians (J_world, the
    placements pl_R, pl_T); the ground query (at `height`, with the contact world's `margin`)
    writes the robot's shapes (rs_I, rs_F, _near_ground's) and row `row` of `bounds` (None when
    there is no ground to query, or the robot has no shapes: numba then compiles the call
    without the ground query and the contacts' code, as for MI below); `patches` the robot's
    RobotShapes.patch_shapes ((boxes, cylinders, meshes), each None when the robot has none:
    no code for those compiled; NO_PATCHES without the ground query).
    `flags`: bits 0-4 for PD mode, springs, the motor regions enforced, loads (their J^T F
    written into the stage's tau_ext) and inverse dynamics; bits 5-6 the scheme's rule of
    _U_BAR; bit 7 the ground query; bit 8 when the warm start's impulses lie where this call
    writes its own (prev_lam is a quick step's OF), else from 0. `arrays`: QuickScratch.arrays'
    table of pl_R, pl_T, J_world, the supports, QI, QF, the system's commands
    (raisimcli.physics.commands; its views' starts in _stage's I), its joints' states, and the
    robot's shapes rs_I, rs_F. MI, MF: the robot's mimic constraints (QuickScratch; MF's last
    entry their error-correction rate beta), None without them: numba then leaves out the
    blocks under `MI is not None` before it types the call, and compiles neither the mimics'
    functions nor the constrained impulse step for such a robot. The robot's constant arrays
    come packed (QuickScratch): QI is BI (its header, _stage's I, the integration's integ_at and
    integ, Pinocchio's q_to_pin, the conventions' block_q) then the integer scratch WI; QF is BF
    (_stage's C, each joint's friction bound per second, the ground's contact frame, the
    back-EMF damping) then the float scratch W. The last step's row codes and impulses are the
    warm start (prev_codes[0:prev_m], and prev_lam's prev_m from where bit 8 says). Writes OF
    and OI (the layouts in QuickScratch), and Pinocchio's inputs at the step's result into QF
    from `pin_at` (QuickScratch's slots). Returns (DONE or why not, the contacts, the rows, the
    sweeps, the sources of _SOURCES with impulses: bit k for source k)."""
    pl_R, pl_T = _rotations_of(arrays, 0), _origins_of(arrays, 1)
    J_world, supports = _jacobians_of(arrays, 2), _supports_of(arrays, 3)
    QI, QF = _ints_of(arrays, 4), _floats_of(arrays, 5)
    commands, states = _floats_of(arrays, 6), _states_of(arrays, 7)
    rs_I, rs_F = _ints_of(arrays, 8), _floats_of(arrays, 9)
    u_bar_rule = (flags >> 5) & 3
    n, nq = u.shape[0], q.shape[0]
    BI, WI = span(QI, 0, QI[12]), span(QI, QI[12], QI.shape[0])
    nj, n_act = BI[9], BI[10]
    m0max, emax = 2 * nj, BI[11]
    stage_I = span(BI, BI[0], BI[1])
    integ_at, integ = span(BI, BI[1], BI[2]), span(BI, BI[2], BI[3])
    lc = n + n_act * n + 2 * n_act + 3 * nj
    BF, W = span(QF, 0, BI[13]), span(QF, BI[13], QF.shape[0])
    stage_C = span(BF, 0, lc)
    fric = span(BF, lc, lc + nj)
    up = carve(BF, lc + nj, (3, 3))
    back_emf = span(BF, lc + nj + 9, lc + nj + 9 + n_act)
    bu = span(stage_I, stage_I[6], stage_I[7])  # (the conventions' block_u)
    q_to_pin, bq = span(BI, BI[14], BI[15]), span(BI, BI[15], BI[12])
    if R.shape[0] == 0:
        bu, bq = span(bu, 0, 0), span(bq, 0, 0)
    idx = span(stage_I, stage_I[11], stage_I[12])
    vmax = span(stage_C, lc - nj, lc)
    c = span(stage_I, stage_I[12], stage_I[13])  # (the views of `commands`, as _stage reads them)
    kp, kd = span(commands, c[0], c[1]), span(commands, c[1], c[2])
    if not flags & 1:  # (ArticulatedSystem.gains outside PD mode)
        kp, kd = span(commands, c[11], c[12]), span(commands, c[11], c[12])
    k_s = span(commands, c[8], c[9])
    # the ground query (ContactWorld.detect of a robot alone on the ground); `bounds` None: no
    # ground query, and numba compiles this call without it, the contacts' arrays and rows,
    # and the impulse step's contact code
    nc = 0
    if bounds is not None and flags & 128:
        nc, others = _near_ground(pl_R, pl_T, rs_I, rs_F, height + margin, _GROUND_SLACK,
                                  height, margin, ground_params, bounds, row, patches)
        if others:
            return FOR_COAL, 0, 0, 0, 0
    # spec steps 1-3 and u* (explicit._stage), with the flags explicit.make_stage sets
    for i in range(4):
        stage_I[1 + i] = (flags >> i) & 1
    stage_I[5] = 0
    ls = 5 * n * n + 12 * n
    SF = span(W, 0, ls)
    q_next, u_next, q_err = span(OF, 0, nq), span(OF, nq, nq + n), span(OF, nq + n, nq + 2 * n)
    a = nq + 2 * n
    table = carve(OF, a, (_TABLE_ROWS, n))
    a += _TABLE_ROWS * n
    act = span(OF, a, a + 5 * n_act + n)
    a += 5 * n_act + n
    lam_all = span(OF, a, a + m0max + 3 * emax)
    prev_at = a if flags & 256 else 0  # (the last step's impulses: where these go in its OF)
    c0 = a + m0max + 3 * emax  # the contacts' arrays
    info = _stage(dt, stage_I, stage_C, M_upper, h_pin, u_pin, R, q, u, commands, stall,
                  back_emf, SF, q_err, act, states)
    if info != 0:
        return NOT_DEFINITE, 0, 0, 0, 0
    # _stage's results that the steps below read
    a = 3 * n * n + 7 * n
    M_end = a + n * n
    spring_err, tau_cmd = span(SF, M_end + n, M_end + 2 * n), span(SF, M_end + 2 * n, M_end + 3 * n)
    b = span(SF, M_end + 3 * n, M_end + 4 * n)
    u_star = span(SF, M_end + 4 * n + n * n, M_end + 5 * n + n * n)
    tau_ext = span(SF, 2 * n * n + 6 * n, 2 * n * n + 7 * n)
    tau_act = span(act, 5 * n_act, 5 * n_act + n)
    L = carve(SF, M_end + 4 * n, (n, n))
    # mimic constraints: their rows and elimination (constraints.Elimination.of_mimics, in
    # MF's slots: the errors e, u_0, EF, the scratch), the solver's start u_0 instead of u*
    EF, EI = _elimination_of(MI, MF, n)  # (None, None without mimics)
    kc = 0
    u_free = u_star
    if MI is not None:
        kc = MI[0]
        u_free = span(MF, 3 * kc, 3 * kc + n)
        _eliminate_mimics(q, span(MI, 1, 1 + kc), span(MI, 1 + kc, 1 + 2 * kc),
                          span(MI, 1 + 2 * kc, 1 + 3 * kc), span(MI, 1 + 3 * kc, 1 + 4 * kc),
                          span(MF, 0, kc), span(MF, kc, 2 * kc), L,
                          span(MF, 2 * kc, 3 * kc), u_star, MF[MF.shape[0] - 1], RANK_TOLERANCE,
                          span(MF, 3 * kc + n + EF.shape[0], MF.shape[0] - 1), EF, EI, u_free)
    # the joint rows (JointRowTable._build: position limits, velocity limits, then friction)
    n_lim, n_vel, n_fric = 0, 0, 0
    for k in range(nj):
        if states[k] == BELOW or states[k] == ABOVE:
            n_lim += 1
        elif states[k] != FREE:
            n_vel += 1
        if fric[k] > 0:
            n_fric += 1
    m0 = n_lim + n_vel + n_fric
    m = m0 + 3 * nc
    if m == 0:  # no row: u_{t+1} = u* (u_0 with constraints), then spec step 6 and the table
        # without impulses (with constraints: theirs, lambda_0), the loops of _impulse_step
        # after its solve (finish.finish_step's results)
        FI = span(W, ls, W.shape[0])
        for i in range(n):
            u_next[i] = u_free[i]
        if MI is not None:  # (Elimination.impulses of no row: lambda_0 and J^T lambda_0)
            _advance_constrained(EF, EI, q, u, u_next, dt, u_bar_rule, integ_at, integ, tau_cmd,
                                 kp, kd, b, tau_act, k_s, spring_err, tau_ext, FI, q_next, table)
            _mimic_report(EF, span(MF, 2 * kc, 3 * kc), n,  # (QuickScratch.at_constraints)
                          carve(OF, c0 + _PER_CONTACT * emax + n, (2 * kc, 3)))
        else:
            _advance(q, u, u_next, dt, u_bar_rule, integ_at, integ, tau_cmd, kp, kd, b, tau_act,
                     k_s, spring_err, tau_ext, table[:0], span(FI, 0, n), span(FI, n, 2 * n),
                     q_next, table)
        if bq.shape[0] or flags >> 4 & 1:  # (else the call has nothing to write, and making
            # it cost a fixed base's step its arguments' views)
            _next_inputs(q_next, u_next, q_to_pin, bq, bu, span(QF, pin_at, QF.shape[0]),
                         span(OF, c0 + _PER_CONTACT * emax, OF.shape[0]), flags >> 4 & 1, u, dt,
                         R, u_pin, stage_I, FI)
        return DONE, 0, 0, 0, 0
    codes = span(OI, 0, m)
    RF = span(W, ls, ls + m0 * n + 4 * m0)
    bJ = carve(RF, 0, (m0, n))
    btarget, blo = span(RF, m0 * n, m0 * n + m0), span(RF, m0 * n + m0, m0 * n + 2 * m0)
    bhi = span(RF, m0 * n + 2 * m0, m0 * n + 3 * m0)
    bmu = span(RF, m0 * n + 3 * m0, m0 * n + 4 * m0)
    for r in range(m0 * n):
        RF[r] = 0.0
    r = 0
    for k in range(nj):  # position limits: a hard stop
        if states[k] == BELOW or states[k] == ABOVE:
            below = states[k] == BELOW
            bJ[r, idx[k]] = 1.0
            btarget[r] = 0.0
            blo[r] = 0.0 if below else -np.inf
            bhi[r] = np.inf if below else 0.0
            codes[r] = k
            r += 1
    for k in range(nj):  # velocity limits
        if states[k] != FREE and states[k] != BELOW and states[k] != ABOVE:
            up_ = states[k] == FAST_UP
            bJ[r, idx[k]] = 1.0
            btarget[r] = (1.0 if up_ else -1.0) * vmax[k]
            blo[r] = -np.inf if up_ else 0.0
            bhi[r] = 0.0 if up_ else np.inf
            codes[r] = nj + k
            r += 1
    for k in range(nj):  # friction, bounded by (tau_c,joint + tau_c,out) dt
        if fric[k] > 0:
            bound = fric[k] * dt
            bJ[r, idx[k]] = 1.0
            btarget[r] = 0.0
            blo[r] = -bound
            bhi[r] = bound
            codes[r] = 2 * nj + k
            r += 1
    for r in range(m0):
        bmu[r] = 0.0
    # the contacts' arrays (ContactSet of _answered_on_ground), their rows' codes
    bodies = span(OI, m0max + 3 * emax, m0max + 3 * emax + nc)
    slots = span(OI, m0max + 4 * emax, m0max + 4 * emax + nc)
    points = carve(OF, c0 + _C_POINTS * nc, (nc, 3))
    frames = carve(OF, c0 + _C_FRAMES * nc, (nc, 3, 3))
    distance = span(OF, c0 + _C_DISTANCE * nc, c0 + _C_PARAMS * nc)
    params = carve(OF, c0 + _C_PARAMS * nc, (nc, 5))
    impulse = carve(OF, c0 + _C_IMPULSE * nc, (nc, 3))
    impulse_contact = carve(OF, c0 + _C_IMPULSE_CONTACT * nc, (nc, 3))
    velocity_contact = carve(OF, c0 + _C_VELOCITY_CONTACT * nc, (nc, 3))
    target_c = span(OF, c0 + _C_TARGET * nc, c0 + _C_FORCE * nc)
    if bounds is not None and nc:
        ns_ = rs_I[3]  # (the robot's slots: _near_ground's layout)
        e_slot = span(rs_I, BI[4], BI[4] + ns_)
        e_bodies = span(rs_I, BI[5], BI[5] + ns_)
        e_point = carve(rs_F, BI[6], (ns_, 3))
        e_distance = span(rs_F, BI[7], BI[7] + ns_)
        e_params = carve(rs_F, BI[8], (ns_, 5))
        for e in range(nc):
            bodies[e], slots[e] = e_bodies[e], e_slot[e]
            distance[e] = e_distance[e]
            for i in range(3):
                points[e, i] = e_point[e, i]
                impulse[e, i], impulse_contact[e, i], velocity_contact[e, i] = 0.0, 0.0, 0.0
                for j in range(3):
                    frames[e, i, j] = up[i, j]
            for i in range(5):
                params[e, i] = e_params[e, i]
            target_c[e] = 0.0
            for i in range(3):
                codes[m0 + 3 * e + i] = 3 * nj + 3 * e_slot[e] + i
    # the warm start: the last step's impulse of the row with the same code, else 0
    lam = span(lam_all, 0, m)
    for r in range(m):
        lam[r] = 0.0
        for p in range(prev_m):
            if prev_codes[p] == codes[r]:
                lam[r] = prev_lam[prev_at + p]
                break
    # _packed_rows' RI: m0, blocks (one scalar block a joint row), sources, their rows in order
    ns = (1 if n_lim + n_vel else 0) + (1 if n_fric else 0) + (1 if nc else 0)
    lr = 3 + 2 * m0 + m + ns + 1
    RI = span(WI, 0, lr + 7 + integ.shape[0])
    RI[0], RI[1], RI[2] = m0, m0, ns
    for r in range(m0):
        RI[3 + r] = r
        RI[3 + m0 + r] = SCALAR
    for r in range(m):
        RI[3 + 2 * m0 + r] = r
    a = 3 + 2 * m0 + m
    RI[a] = 0
    k = 1
    if n_lim + n_vel:
        RI[a + k] = n_lim + n_vel
        k += 1
    if n_fric:
        RI[a + k] = m0
        k += 1
    if nc:
        RI[a + k] = m
    for i in range(7):
        RI[lr + i] = integ_at[i]
    for i in range(integ.shape[0]):
        RI[lr + 7 + i] = integ[i]
    # spec steps 4-6 and 5's table (alone._impulse_step, in _workspace's layout)
    FI = span(W, ls + m0max * n + 4 * m0max, W.shape[0])
    II = span(WI, 3 + 2 * m0max + m0max + 3 * emax + 4 + 7 + integ.shape[0], WI.shape[0])
    sweeps = _impulse_step(RF, RI, J_world, pl_T, supports, bu, R, bodies, points,
                           present(bounds, frames), distance, params, impulse, impulse_contact,
                           velocity_contact, target_c, L, q, u, u_free, lam, max_iterations,
                           tolerance, dt, u_bar_rule, tau_cmd, kp, kd, b, tau_act, k_s,
                           spring_err, tau_ext, FI, II, u_next, q_next, table, EF, EI)
    if MI is not None:
        _mimic_report(EF, span(MF, 2 * kc, 3 * kc), n,
                      carve(OF, c0 + _PER_CONTACT * emax + n, (2 * kc, 3)))
    force = carve(OF, c0 + _C_FORCE * nc, (nc, 3))
    for e in range(nc):  # (ContactSet.loads_on's vectors: numpy's impulse / dt, entry by entry)
        for i in range(3):
            force[e, i] = impulse[e, i] / dt
    nonzero = span(II, nc + 2 * (m0 + nc), nc + 2 * (m0 + nc) + ns)
    mask, k = 0, 0  # bit k: source k of _SOURCES has rows and an impulse
    if n_lim + n_vel:
        mask |= 1 if nonzero[k] else 0
        k += 1
    if n_fric:
        mask |= 2 if nonzero[k] else 0
        k += 1
    if nc:
        mask |= 4 if nonzero[k] else 0
    if bq.shape[0] or flags >> 4 & 1:  # (as above)
        _next_inputs(q_next, u_next, q_to_pin, bq, bu, span(QF, pin_at, QF.shape[0]),
                     span(OF, c0 + _PER_CONTACT * emax, OF.shape[0]),
                     flags >> 4 & 1, u, dt, R, u_pin, stage_I, FI)
    return DONE, nc, m, sweeps, mask


def _elimination_of(MI, MF, n):
    """(EF, EI): the slots of the mimics' elimination in MF and MI (QuickScratch), or (None,
    None) when the robot has no mimics (MI is None). In a compiled loop the two cases are two
    functions chosen by MI's type (below): a function whose result is None or arrays would give
    numba's Optional type, which keeps the constrained code in _impulse_step's compiled code."""
    if MI is None:
        return None, None
    return _elimination_slots(MI, MF, n)


def _elimination_slots(MI, MF, n):
    kc = MI[0]
    return MF[3 * kc + n:3 * kc + n + 4 * kc * n + kc * kc + 2 * kc], \
        MI[1 + 4 * kc:3 + 5 * kc]  # (EF: packed_size's floats)


@overload(_elimination_of, jit_options={"_nrt": False})
def _elimination_of_compiled(MI, MF, n):
    if isinstance(MI, types.NoneType):
        return lambda MI, MF, n: (None, None)
    return _elimination_slots


@kernel
def _mimic_report(EF, e, n, out):
    """finish.constraint_report of mimics into out (2 k, 3): rows 0..k-1 the
    constraints' impulses (lambda, 0, 0) from EF's slot of those recovered after the solve
    (constraints.packed_size), rows k..2k-1 their errors (e, 0, 0)."""
    k = e.shape[0]
    a = 4 * k * n + k * k + k
    for r in range(k):
        for i in range(3):
            out[r, i] = 0.0
            out[k + r, i] = 0.0
        out[r, 0] = EF[a + r]
        out[k + r, 0] = e[r]


@kernel
def _next_inputs(q_next, u_next, q_to_pin, bq, bu, out, acc, inverse_dynamics, u, dt, R, u_pin,
                 stage_I, scratch):
    """Pinocchio's inputs at the step's result (q_next, u_next), as
    ArticulatedSystem.pinocchio_inputs makes them (Conventions.pin_inputs), into `out`: q_pin
    (nq), u_pin (nv), the rotation blocks of T (9 each; nothing is written when T = I); for
    `inverse_dynamics`, Pinocchio's acceleration of the step from u (its inputs R, u_pin)
    into `acc` (nv), as InverseDynamics.after_step makes it (_step_pin_acceleration).
    `scratch`: 2 nv floats."""
    nq, n, k = q_next.shape[0], u_next.shape[0], bq.shape[0]
    if k:  # (T = I: pinocchio_inputs makes them as cheaply from Python, without this call's views)
        _pin_inputs(q_next, carve(u_next, 0, (n, 1)), q_to_pin, bq, bu, span(out, 0, nq),
                    carve(out, nq + n, (k, 3, 3)), carve(out, nq, (n, 1)))
    if inverse_dynamics:
        _step_pin_acceleration(u_next, u, dt, stage_I[0] != 0, bu, R, u_pin,
                               span(stage_I, stage_I[7], stage_I[8]), carve(scratch, 0, (n, 1)),
                               carve(scratch, n, (n, 1)), span(acc, 0, n))


class QuickScratch:
    """One system's constant arrays packed for _quick, its scratch and the layout of its results,
    made at its first quick step (and again after ArticulatedSystem.invalidate(), or when its
    shapes in the contact world were made again)."""

    def __init__(self, s, rs):
        nv, nq, conv, tr, jr = s.nv, s.nq, s.conv, s.transmission, s.joint_rows
        nj, n_act = jr.idx.size, tr.T.shape[0]
        self.rs = rs
        self.emax = emax = rs.entry_slot.size if rs is not None else 0  # (the slots)
        m0max = 2 * nj
        mmax = m0max + 3 * emax
        integ, integ_at = conv.integration_packed
        stage_I, stage_C = stage_constants(s)
        head = np.zeros(16, dtype=np.int64)
        head[0] = 16
        head[1] = head[0] + stage_I.size
        head[2] = head[1] + 7
        head[3] = head[2] + integ.size
        if rs is not None:  # where the entries are in the shapes' packed arrays
            head[4] = _offset(rs.entry_slot, rs.packed_I)
            head[5] = _offset(rs.entry_bodies, rs.packed_I)
            head[6] = _offset(rs.entry_point, rs.packed_F)
            head[7] = _offset(rs.entry_distance, rs.packed_F)
            head[8] = _offset(rs.entry_params, rs.packed_F)
        head[9], head[10], head[11] = nj, n_act, emax
        q_to_pin = s.pinocchio.q_to_pin
        head[14] = head[3]
        head[15] = head[14] + q_to_pin.size
        BI = np.concatenate([head, stage_I, integ_at, integ, q_to_pin, conv.block_q]) \
            .astype(np.int64)
        fric = (jr.joint_friction + jr.output_friction).astype(np.float64)
        BF = np.concatenate([stage_C, fric, _UP_FRAME.reshape(-1), tr.back_emf]) \
            .astype(np.float64)  # (not the stall torques: the bus voltage's setter makes them)
        ls = 5 * nv * nv + 12 * nv
        # mimic constraints (all of its constraints mimics; else it has none, or the quick
        # step does not take it): MI = [k, follower_u, leader_u, follower_q, leader_q, EI
        # (2 + k)], MF = [multiplier, offset, e (k), u_0 (nv), EF (packed_size), the scratch,
        # beta (written by _run at each step)]
        plan = s.mimics_only()
        self.n_constraints = len(s.constraints)
        self.k = k = len(plan[0]) if plan is not None else 0
        if k:
            self.MI = np.concatenate([[k], *plan[1:5], np.zeros(2 + k)]).astype(np.int64)
            floats = k + nv + packed_size(k, nv) + scratch_size(k, nv) + 1
            self.MF = np.concatenate([*plan[5:7], np.zeros(floats)])
        else:  # (_quick's arguments: None leaves the mimics' code out of its compiled code)
            self.MI, self.MF = None, None
        nf = _g_at(mmax, nv, m0max, emax) + 2 * len(_SOURCES) * nv + 2 * nv + \
            (_constrained_size(mmax, nv, len(_SOURCES), k) if k else 0)
        ni = emax + 2 * (m0max + emax) + len(_SOURCES)
        # QI: BI then the integer scratch; QF: BF then the float scratch (W)
        BI[12], BI[13] = BI.size, BF.size
        self.QI = np.concatenate([BI, np.zeros(3 + 2 * m0max + mmax + 4 + 7 + integ.size + ni,
                                               dtype=np.int64)])
        self.n_blocks = k = 0 if conv.identity else conv.block_q.size
        n_pin = nq + nv + 9 * k if k else 0
        self.QF = np.concatenate([BF, np.zeros(ls + m0max * nv + 4 * m0max + nf + 2 * n_pin)])
        # Pinocchio's inputs at a quick step's result (q_pin, u_pin, the rotation blocks of T;
        # when T is not I), in two slots at the end of QF used in turn: the call writes the
        # next state's into the slot that does not hold the current state's (pin_slot), and
        # once the step is the state's, that slot's views are pinocchio_inputs() (made once
        # here: no views a step). The other slot is written at the next step's call, when the
        # state it held is gone (pinocchio_inputs' arrays are valid while their state is).
        self.pin_slot = 0
        self.pin_at = [self.QF.size - 2 * n_pin, self.QF.size - n_pin]
        self.pin_views = [(self.QF[a:a + nq], self.QF[a + nq:a + nq + nv],
                           self.QF[a + nq + nv:a + n_pin].reshape(k, 3, 3))
                          for a in self.pin_at]
        a = BF.size + 2 * nv * nv + 6 * nv
        self.tau_ext = self.QF[a:a + nv]  # (J^T F of the loads, in _stage's scratch)
        # the results: OF is q_next, u_next, q_err, the table, the actuators' block, the
        # impulses, the contacts' arrays, Pinocchio's acceleration of the step (written for
        # inverse dynamics), the mimics' impulses and errors (k, 3) each; OI the rows' codes,
        # the contacts' bodies, slots
        self.at_table = nq + 2 * nv
        self.at_act = self.at_table + _TABLE_ROWS * nv
        self.at_lam = self.at_act + 5 * n_act + nv
        self.at_contacts = self.at_lam + mmax
        self.at_acc = self.at_contacts + _PER_CONTACT * emax
        self.at_constraints = self.at_acc + nv
        self.n_of = self.at_constraints + 6 * self.k
        self.n_oi = mmax + 2 * emax
        self.pool: list[_Results] = []  # (results)
        self.nq, self.nv, self.nj, self.n_act = nq, nv, nj, n_act
        self.R_none = conv.no_blocks
        self.no_params = np.zeros((1, 5))
        # the views of Pinocchio's data the call reads (made at load, never rebound)
        self.eligible = s.placement_views is not None and s.has_jacobian_view and \
            not conv.spherical and (plan is not None or not s.constraints)
        if self.eligible:
            J_world, origins, supports = s.jacobian_views_unread()[:3]
            try:
                self.arrays = ArrayTable([
                    (s.placement_views[0], _ROTATIONS), (origins, _ORIGINS),
                    (J_world, _JACOBIANS), (supports, _SUPPORTS), (self.QI, _INTS),
                    (self.QF, _FLOATS), (s.commands, _FLOATS), (jr.states, _STATES),
                    (rs.packed_I if rs is not None else self.QI, _INTS),
                    (rs.packed_F if rs is not None else self.QF, _FLOATS)])
            except TypeError:  # (views of Pinocchio's data of other kinds: pipeline.step's)
                self.eligible = False
        # the record of a step's results in OF (ArticulatedSystem.end_step's) but OF, by the mask
        # of the sources with impulses (record_part)
        self.record_parts: dict[int, tuple] = {}
        # whether pinocchio_inputs()[0] is q itself: then _commit hands end_step the next
        # state's inputs (q, u, None), as pinocchio_inputs would make them
        self.q_is_pin = conv.identity and s.pinocchio_inputs()[0] is s.q
        self.no_actuators = None if n_act else tr.none_acting[1]  # (end_step's act_state)
        self.key_of: list | None = None  # each code's key (made when first asked)
        self.code_of: dict | None = None
        self.system, self.back_off = s, 0

    def results(self) -> "_Results":
        """The arrays of a step's results: a _Results of `pool` that nothing else holds any
        more, else a new one (kept in the pool while it has fewer than _POOL). A step's
        results are held by what it left (the state q and u are views of OF, the record, the
        warm start, the contacts) and by whatever a user kept of them (a view, a ContactSet):
        they come back only once all of these are gone. Reusing them spares numpy's two
        allocations, the views of q and u and the warm start's object;
        the call writes every entry it reads."""
        for results in self.pool:  # (OF first: the last step's record holds it, and a log's
            own = results.own  # contact blocks hold their steps' until their chunk is written)
            if getrefcount(results.OF) == own[0] and getrefcount(results.warm) == own[1] and \
                    getrefcount(results.OI) == own[2] and getrefcount(results.q) == own[3] and \
                    getrefcount(results.u) == own[4] and getrefcount(results.pin) == own[5] and \
                    (not results.constraints or results.references() == own):
                return results
        pooled = len(self.pool) < _POOL
        results = _Results(self, pooled)
        if pooled:
            self.pool.append(results)
        return results

    def record_part(self, mask: int) -> tuple:
        """The record of end_step but its array, for the sources of _SOURCES whose bits are
        set in `mask`: (record_layout, its torque rows for TorqueTable, where the actuators'
        block starts, where the PD error starts)."""
        names = _row_names(tuple(source for k, source in enumerate(_SOURCES) if mask >> k & 1) +
                           (("constraints",) if self.k else ()))
        layout = self.record_layout(names)
        torque_at = {key[7:]: at for key, at in layout.items() if key.startswith("torque/")}
        return layout, torque_at, self.at_act, self.nq + self.nv

    def record_layout(self, names: tuple) -> dict:
        """Where the step's results lie in OF, as ArticulatedSystem.step_record describes them,
        for the torque table's row names `names` (_commit's torque: row k is names[k], the last
        row the total)."""
        nq, nv, n, t, a = self.nq, self.nv, self.n_act, self.at_table, self.at_act
        layout = {"q": (0, nq), "u": (nq, nq + nv)}
        for k, name in enumerate(names[:_TABLE_ROWS - 1] + ("total",)):
            layout[f"torque/{name}"] = (t + k * nv, t + (k + 1) * nv)
        for k, name in enumerate(("motor_speed", "tau_min", "tau_max", "commanded", "applied")):
            layout[f"actuators/{name}"] = (a + k * n, a + (k + 1) * n)
        return layout

    def keys(self) -> tuple[list, dict]:
        """(key of each code, code of each key)."""
        if self.key_of is None:
            jr = self.system.joint_rows
            keys = [(jr.system_name, kind, name) for kind in _KINDS for name in jr.names]
            if self.rs is not None:
                keys += [(key, i) for key in self.rs.ground_key for i in (0, 1, 2)]
            self.key_of, self.code_of = keys, {key: c for c, key in enumerate(keys)}
        return self.key_of, self.code_of


def _offset(view: np.ndarray, buffer: np.ndarray) -> int:
    """Where `view` starts in `buffer`, in elements."""
    return (view.ctypes.data - buffer.ctypes.data) // buffer.itemsize


class _Results:
    """The arrays of a quick step's results (OF, OI; QuickScratch.results) and what is made of
    them once: the views of the next q and u, Pinocchio's inputs (q, u, None) for a robot whose
    q is Pinocchio's coordinates, the warm start. They are free again when the references to
    each of them are those they had when made (their own, sys.getrefcount): nothing that a
    step made (the state, the record, the World's warm start, the contacts) nor anything a user
    kept (a view, a ContactSet, the warm start) holds any of them any more."""

    __slots__ = ("OF", "OI", "q", "u", "pin", "warm", "constraints", "own")

    def __init__(self, qs: "QuickScratch", pooled: bool):
        self.OF, self.OI = np.empty(qs.n_of), np.empty(qs.n_oi, dtype=np.int64)
        self.q, self.u = self.OF[0:qs.nq], self.OF[qs.nq:qs.nq + qs.nv]
        self.pin = (self.q, self.u, None)
        self.warm = CodedWarmStart(qs, self.OI, self.OF, 0)
        a, k = qs.at_constraints, qs.k  # the mimics' impulses and errors (with mimics)
        self.constraints = (self.OF[a:a + 3 * k].reshape(k, 3),
                            self.OF[a + 3 * k:a + 6 * k].reshape(k, 3)) if k else ()
        self.own = self.references() if pooled else None  # (only a pooled one is counted)

    def references(self) -> tuple:
        """The references to each of its objects, as QuickScratch.results counts them."""
        return (getrefcount(self.OF), getrefcount(self.warm), getrefcount(self.OI),
                getrefcount(self.q), getrefcount(self.u), getrefcount(self.pin),
                *(getrefcount(c) for c in self.constraints))


class CodedWarmStart(WarmStart):
    """The impulses of a quick step by row code (the module's docstring), read as a WarmStart:
    the step's m codes and impulses are in its results OI and OF (at OI[0:m], and at
    scratch.at_lam in OF), the keys are made from the codes when first asked for."""

    _keys = _dict = _first = None  # (WarmStart's, set when first made)
    _parts = ()

    def __init__(self, scratch: QuickScratch, OI: np.ndarray, OF: np.ndarray, m: int):
        self.scratch, self.packed, self.m = scratch, (OI, OF), m

    def renew(self, m: int) -> "CodedWarmStart":
        """This object as the warm start of a new step whose results are in the same arrays
        (_Results', reused once nothing holds it), with m rows: the keys made when read."""
        self.m, self._keys, self._dict, self._first = m, None, None, None
        return self

    @property
    def codes(self) -> np.ndarray:
        return self.packed[0][0:self.m]

    @property
    def impulses(self) -> np.ndarray:
        a = self.scratch.at_lam
        return self.packed[1][a:a + self.m]

    @property
    def keys_list(self) -> list:
        if self._keys is None:
            key_of = self.scratch.keys()[0]
            self._keys = [key_of[c] for c in self.codes.tolist()]
        return self._keys

    def __bool__(self) -> bool:
        return self.m > 0


_LAZY = ("points", "frames", "distance", "params", "impulse", "impulse_contact",
         "velocity_contact", "target", "bodies_a", "meta", "keys")  # PackedContacts' attributes


def _links_of(rs, slots: np.ndarray) -> tuple:
    """The link names of the contacts in these slots (kept per robot and slots)."""
    key = slots.tobytes()
    links = rs.links_of_entries.get(key)
    if links is None:
        if len(rs.links_of_entries) >= 256:
            rs.links_of_entries.clear()
        links = rs.links_of_entries[key] = tuple(rs.ground_meta[k][2] for k in slots.tolist())
    return links


class ApartWarmStart(WarmStart):
    """WarmStart.of_parts of step_apart's robots, each robot's part also by the robot
    (`by_system`: id of the system -> its CodedWarmStart)."""

    def __init__(self, by_system: dict, parts: list):
        super().__init__(None, None, tuple(parts))
        self.by_system = by_system


class PackedContacts(ContactSet):
    """The contacts of a quick step: their arrays are views of the step's results (OF, OI),
    their meta and keys the robot's, made when first read."""

    def __init__(self, rs, system, OF, OI, at: int, nc: int, emax: int, m0max: int, dt: float):
        self.alone = system
        self._packed = (rs, OF, OI, at, nc, emax, m0max)
        self._dt = dt  # the step's, by which the compiled call divided the impulses

    def __len__(self) -> int:
        return self._packed[4]

    def loads_on(self, system, dt: float) -> ContactLoads | None:
        """ContactSet.loads_on, from the packed arrays (without the meta and keys)."""
        rs, OF, OI, c, n, emax, m0max = self._packed
        if system is not self.alone:
            return None
        slots = OI[m0max + 4 * emax:m0max + 4 * emax + n]
        if dt == self._dt:  # the forces the compiled call wrote
            vectors = OF[c + _C_FORCE * n:c + _PER_CONTACT * n].reshape(n, 3)
        else:
            vectors = OF[c + _C_IMPULSE * n:c + _C_IMPULSE_CONTACT * n].reshape(n, 3) / dt
        return ContactLoads(_links_of(rs, slots),
                            OI[m0max + 3 * emax:m0max + 3 * emax + n],
                            OF[c + _C_POINTS * n:c + _C_FRAMES * n].reshape(n, 3), vectors)

    def log_key(self):
        """ContactSet.log_key from the robot's slots in contact (the meta is made from them)."""
        rs, _, OI, _, n, emax, m0max = self._packed
        return rs.token, OI[m0max + 4 * emax:m0max + 4 * emax + n].tobytes()

    def log_block(self):
        """ContactSet.log_block: the points, frames, distances, params and impulses of the
        contacts, end to end in OF (__getattr__'s layout), and _log_columns."""
        _, OF, _, c, n, _, _ = self._packed
        return OF[c:c + _C_LOGGED * n], _log_columns

    def __getattr__(self, name):
        if name not in _LAZY:
            raise AttributeError(name)
        rs, OF, OI, c, n, emax, m0max = self._packed
        slots = OI[m0max + 4 * emax:m0max + 4 * emax + n].tolist()
        self.meta = [rs.ground_meta[k] for k in slots]
        self.keys = [rs.ground_key[k] for k in slots]
        self.bodies_a = OI[m0max + 3 * emax:m0max + 3 * emax + n]
        self.points = OF[c + _C_POINTS * n:c + _C_FRAMES * n].reshape(n, 3)
        self.frames = OF[c + _C_FRAMES * n:c + _C_DISTANCE * n].reshape(n, 3, 3)
        self.distance = OF[c + _C_DISTANCE * n:c + _C_PARAMS * n]
        self.params = OF[c + _C_PARAMS * n:c + _C_IMPULSE * n].reshape(n, 5)
        self.impulse = OF[c + _C_IMPULSE * n:c + _C_IMPULSE_CONTACT * n].reshape(n, 3)
        self.impulse_contact = OF[c + _C_IMPULSE_CONTACT * n:c + _C_VELOCITY_CONTACT * n] \
            .reshape(n, 3)
        self.velocity_contact = OF[c + _C_VELOCITY_CONTACT * n:c + _C_TARGET * n].reshape(n, 3)
        self.target = OF[c + _C_TARGET * n:c + _C_FORCE * n]
        return getattr(self, name)


def _log_columns(blocks: np.ndarray, n: int) -> tuple:
    """log_arrays' (points, normals, impulse, impulse_contact, distance) of k steps' contacts,
    from their log_block blocks stacked as the rows of `blocks` (k, _C_LOGGED n), n contacts
    each: the k n contacts in step order, as concatenating each step's log_arrays gives them."""
    k = blocks.shape[0] * n
    return (blocks[:, _C_POINTS * n:_C_FRAMES * n].reshape(k, 3),
            blocks[:, _C_FRAMES * n:_C_DISTANCE * n].reshape(k, 3, 3)[:, :, 2],
            blocks[:, _C_IMPULSE * n:_C_IMPULSE_CONTACT * n].reshape(k, 3),
            blocks[:, _C_IMPULSE_CONTACT * n:_C_VELOCITY_CONTACT * n].reshape(k, 3),
            blocks[:, _C_DISTANCE * n:_C_PARAMS * n].reshape(k))


def step(world, s, warm_start):
    """The step of a world whose one robot is s, when the quick step applies (the module's
    docstring): returns (the step's ContactSet, its WarmStart), or None when pipeline.step must take
    it; then nothing of the state has changed."""
    cw = world.contact_world
    robots = cw.robots
    rs = robots[0] if robots else None
    if rs is not None and (len(robots) > 1 or cw.static or rs.self_collision or
                           rs.system is not s):
        return None
    return _run(world, s, rs, warm_start, rs.bounds if rs is not None else None, 0)


def step_apart(world, warm_start):
    """The step of a world of several robots on the ground, each touching nothing but it (the
    case of ContactWorld.detect_apart), each robot's by the compiled call: returns (the step's
    ContactSet, its WarmStart), or None when pipeline.step must take it (then nothing of the state
    has changed, and the next _BACK_OFF steps go to pipeline.step)."""
    cw = world.contact_world
    robots, systems = cw.robots, world.systems
    if cw.ground_height is None or cw.static or len(robots) != len(systems):
        return None
    scratch = systems[0].step_scratch  # (the world's back-off: with its first robot's scratch)
    wait = scratch.get("quick_apart", 0)
    if wait:
        scratch["quick_apart"] = wait - 1
        return None
    for rs in robots:
        if rs.self_collision:
            return None
    # each robot's part of the last step's warm start, when the last step was this one
    parts = warm_start.by_system if isinstance(warm_start, ApartWarmStart) else {}
    bounds = np.empty((len(robots), 6))  # each robot's box of its shapes' boxes
    runs = {}
    for k, rs in enumerate(robots):
        s = rs.system
        run = _run(world, s, rs, parts.get(id(s), warm_start), bounds, k, False)
        if run is None:
            break
        runs[id(s)] = run
    else:  # (every system once: as many robots as systems, none twice)
        if len(runs) == len(systems) and cw.robots_apart(bounds):
            done = {key: _commit(world.dt, *run) for key, run in runs.items()}
            return ContactSet.joined([done[id(rs.system)][0] for rs in robots]), \
                ApartWarmStart({key: part for key, (_, part) in done.items()},
                               [done[id(s)][1] for s in systems])
    for s in systems:  # pipeline.step takes it from the start, and the next steps
        s.forget_joint_jacobians()
    scratch["quick_apart"] = _BACK_OFF
    return None


def _run(world, s, rs, warm_start, bounds, row, alone=True):
    """The compiled call for robot s (its shapes rs, or None without the ground; the box of
    its shapes into row `row` of `bounds`), or None when it did not take the step (and, for a
    robot `alone` in its world, the next _BACK_OFF steps go to pipeline.step; step_apart keeps the
    count for several). A robot `alone`: its results then become its state (_commit's result).
    Else (step_apart's robots): (s, its QuickScratch, the results OF and OI, its shapes, what
    the call returned), with nothing of the state changed, for _commit once every robot's call
    is made."""
    qs = s.step_scratch.get("quick")
    if qs is None or qs.rs is not rs or qs.n_constraints != len(s.constraints):
        qs = s.step_scratch["quick"] = QuickScratch(s, rs)
    if not qs.eligible:
        return None
    scheme = s.scheme
    if scheme == "RUNGE_KUTTA_4":  # (unless spec step 6's rules make it SEMI_IMPLICIT)
        scheme = s.effective_scheme()
        if scheme == "RUNGE_KUTTA_4":
            return None
    if alone and qs.back_off:
        qs.back_off -= 1
        return None
    cw = world.contact_world
    detect = rs is not None and cw.ground_height is not None  # (else ContactWorld.active: no)
    # spec step 1's kinematics (pinocchio_dynamics, then the ground query's joint Jacobians)
    upper, h_pin, u_pin, R = s.pinocchio_dynamics()
    if detect:  # the placements and data.J
        s.body_placements()
        params = cw.ground_contact_params(rs)
        h, margin = cw.ground_height, cw.margin
    else:  # (params: an array of the type of the ground's, not read; bounds None: the call's
        # version without the ground query and contacts)
        params, h, margin, bounds, row = qs.no_params, 0.0, 0.0, None, 0
    pd = s.control_mode == PD_PLUS_FEEDFORWARD_TORQUE
    flags = (1 if pd else 0) | (2 if s.springs else 0) | (4 if s.motor_region_enforced else 0) | \
        (16 if s.compute_inverse_dynamics else 0) | (128 if detect else 0)
    if s.pending_loads:  # J^T F of the loads set for this step
        qs.tau_ext[:] = s.external_generalized_force()
        flags |= 8
    if scheme == "EULER" and pd and s.had_contact:  # (spec step 6's replacement rule)
        scheme = "SEMI_IMPLICIT"
    flags |= _U_BAR[scheme] << 5
    if warm_start.__class__ is CodedWarmStart and warm_start.scratch is qs:  # (_previous's)
        prev_codes, prev_lam = warm_start.packed
        prev_m = warm_start.m
        flags |= 256
    else:
        prev_codes, prev_lam, in_results, prev_m = _previous(qs, warm_start)
        flags |= 256 if in_results else 0
    if qs.k:  # the mimics' error-correction rate (MF's last entry)
        qs.MF[-1] = beta(s.constraint_erp, world.dt)
    results = qs.results()
    OF, OI = results.OF, results.OI
    answer = _quick(world.dt, h, margin, float(s.solver_tolerance), int(s.solver_max_iterations),
                    flags, qs.arrays.table, qs.R_none if R is None else R, params, bounds, row,
                    rs.patch_shapes if detect else NO_PATCHES, upper, h_pin, u_pin, s.q, s.u,
                    s.transmission.stall, prev_codes, prev_lam, prev_m, qs.pin_at[qs.pin_slot],
                    OF, OI, qs.MI, qs.MF)
    if detect:
        rs.poses_written()
    if answer[0] != DONE:  # pipeline.step takes it from the start (its computeJointJacobians too)
        s.forget_joint_jacobians()
        if alone:
            qs.back_off = _BACK_OFF
        return None
    if alone:
        return _commit(world.dt, s, qs, results, rs, answer)
    return s, qs, results, rs, answer


def _commit(dt, s, qs, results, rs, answer):
    """The results of robot s's compiled call (and what it returned, `answer`) become its
    state (ArticulatedSystem.end_step): returns (its ContactSet, its WarmStart)."""
    _, nc, m, sweeps, mask = answer
    OF = results.OF
    part = qs.record_parts.get(mask)
    if part is None:
        part = qs.record_parts[mask] = qs.record_part(mask)
    contacts = PackedContacts(rs, s, OF, results.OI, qs.at_contacts, nc, qs.emax, 2 * qs.nj,
                              dt) if nc \
        else EMPTY_CONTACTS
    point_loads, start_pin, acceleration = (), None, None
    if s.compute_inverse_dynamics:
        start_pin = s.pinocchio_inputs()
        point_loads = [contacts.loads_on(s, dt)] if nc else []
        acceleration = OF[qs.at_acc:qs.at_acc + qs.nv]
    if qs.n_blocks:  # (the slot the call wrote: the other one's turn at the next step)
        next_pin = qs.pin_views[qs.pin_slot]
        qs.pin_slot ^= 1
    else:  # (pinocchio_inputs' when q is Pinocchio's coordinates, else made when asked)
        next_pin = results.pin if qs.q_is_pin else None
    if qs.k:  # (finish.constraint_report's, in OF)
        s.constraint_impulses, s.constraint_errors = results.constraints
    # (the torque table, the actuators' states and the PD error: made from OF when read)
    s.end_step(dt, None, results.q, results.u, None, qs.no_actuators, point_loads, sweeps,
               nc > 0, start_pin, next_pin, acceleration, (OF, part))
    return contacts, results.warm.renew(m)


_NO_CODES, _NO_IMPULSES = np.zeros(0, dtype=np.int64), np.zeros(0)


def _previous(qs: QuickScratch, warm_start) -> tuple:
    """The last step's row codes and impulses from the World's warm start, as _quick takes them
    (codes, an array holding the impulses, whether they lie there where a quick step's results
    hold them (else from 0), how many): a quick step's where its results hold them, else those
    of its keys that name a row of this robot (World.set_state's dict, or the other paths'
    WarmStart)."""
    if isinstance(warm_start, CodedWarmStart) and warm_start.scratch is qs:
        OI, OF = warm_start.packed
        return OI, OF, True, warm_start.m
    if not warm_start:
        return _NO_CODES, _NO_IMPULSES, False, 0
    code_of = qs.keys()[1]
    codes, impulses = [], []
    for key, impulse in warm_start.items():
        code = code_of.get(key)
        if code is not None:
            codes.append(code)
            impulses.append(impulse)
    return np.array(codes, dtype=np.int64), np.array(impulses, dtype=np.float64), False, \
        len(codes)
