"""One step of a world (spec Integration Steps 1-12), stage after stage: World.integrate calls
`step`; World.integrate1 and integrate2 are the same step cut at the controller (`step` when
nothing but commands changed between them, `step_with` and integrate1's contacts otherwise).

1. Kinematics: Pinocchio's crba and nonLinearEffects at each system's state
   (ArticulatedSystem.pinocchio_dynamics).
2. Collision detection (ContactWorld.detect; detect_apart for robots that touch only the
   static world).
3. Islands: robots in contact with each other share one impulse problem
   (world_step.integrate2_world).
4. Each island's step: spec steps 1-3 and u* per system (explicit.make_stage), the rows, the
   impulse solve, the integration and the torque table. A robot that touches only the static
   world takes step/alone.py's compiled call, a robot without any row but its constraints'
   takes u_0 (_without_rows), several robots touching each other world_step.integrate2_systems.
5. Inverse dynamics and the commit of the new state (ArticulatedSystem.end_step).

Before those stages, a robot alone whose contacts can only be with the ground (or several such
robots apart) is offered to step/quick.py, which takes stages 1-5 in one compiled call; it
declines what it does not handle, changing nothing.
"""

from __future__ import annotations

import numpy as np

from raisimcli.physics.contact_set import EMPTY_CONTACTS, ContactSet
from raisimcli.physics.step import quick
from raisimcli.physics.step.alone import _TABLE_ROWS, _U_BAR, _advance_constrained, can_go_alone, \
    integrate2_alone
from raisimcli.physics.step.decomposition import _row_names
from raisimcli.physics.step.explicit import make_stage
from raisimcli.physics.step.finish import constraint_report, finish_step
from raisimcli.physics.step.solver import WarmStart
from raisimcli.physics.step.stage import Stage
from raisimcli.physics.step.world_step import integrate2_systems, integrate2_world

_CONSTRAINED_ROWS = _row_names(("constraints",))  # the table's rows when only constraints act


def step(world, warm_start):
    """World.integrate(): steps the world's robots and returns (the step's ContactSet, the
    WarmStart of their impulses for the next step), or None, changing nothing, when the world
    has no robot or a robot's integrate1 has run (World.integrate1 and integrate2 take the step
    then). A robot that touches no other robot is stepped by _alone; robots in contact with each
    other form an island of step/world_step.py's impulse problem."""
    systems = world.systems
    cw = world.contact_world
    if len(systems) == 1:  # (one island, without the grouping)
        s = systems[0]
        if s.integrate1_pending:
            return None
        if not s.constraints or s.mimics_only() is not None:  # (loops: this module's)
            done = quick.step(world, s, warm_start)
            if done is not None:
                return done
        dynamics = s.pinocchio_dynamics()  # (spec step 1's kinematics)
        contacts = cw.detect() if cw.active else EMPTY_CONTACTS
        return contacts, _alone(s, world.dt, contacts, warm_start, *dynamics)
    if not systems or any(s.integrate1_pending for s in systems):
        return None
    done = quick.step_apart(world, warm_start)
    if done is not None:
        return done
    pinocchio = {id(s): s.pinocchio_dynamics() for s in systems}  # (spec step 1's kinematics)
    apart = cw.detect_apart() if cw.active else None
    if apart is not None:  # robots on the ground, none near another: each one on its own
        part_of = {id(rs.system): part for rs, part in zip(cw.robots, apart)}
        parts = [_alone(s, world.dt, part_of[id(s)], warm_start, *pinocchio[id(s)])
                 for s in systems]
        return ContactSet.joined(apart), WarmStart.of_parts(parts)
    contacts = cw.detect() if cw.active else EMPTY_CONTACTS
    return contacts, _islands(world, contacts, warm_start, pinocchio)


def step_with(world, contacts, warm_start) -> WarmStart:
    """Steps 1-12 of the world's robots from their current state with the given contacts (those
    World.integrate1 detected, when a state was set between it and World.integrate2)."""
    return _islands(world, contacts, warm_start,
                    {id(s): s.pinocchio_dynamics() for s in world.systems})


def _islands(world, contacts, warm_start, pinocchio) -> WarmStart:
    """Each island of robots in contact with each other stepped on its own (_alone for a robot
    that touches no other), from Pinocchio's results `pinocchio` (by id of the system)."""
    dt = world.dt

    def island(systems, dt, part, warm_start):
        if len(systems) == 1:
            return _alone(systems[0], dt, part, warm_start, *pinocchio[id(systems[0])])
        stages = [make_stage(s, dt, *pinocchio[id(s)]) for s in systems]
        return integrate2_systems(systems, dt, part, warm_start, stages)
    return integrate2_world(world.systems, dt, contacts, warm_start, island)


def _alone(s, dt, contacts, warm_start, upper, h_pin, u_pin, R) -> WarmStart:
    """Steps 1-12 of system s, which touches no other robot (`contacts`: its own), from
    Pinocchio's M (`upper`) and h at the step's start: returns the WarmStart of its rows."""
    st = make_stage(s, dt, upper, h_pin, u_pin, R)
    if can_go_alone((s,), (st,), contacts):  # (with an elimination too, beside other rows)
        return WarmStart(*integrate2_alone(s, st, dt, contacts, warm_start))
    if contacts:  # its own bodies touching
        return integrate2_systems([s], dt, contacts, warm_start, [st])
    return _without_rows(s, st, dt)


def _without_rows(s, st: Stage, dt) -> WarmStart:
    """Steps 7-12 of system s alone without any row but its constraints' (no contact, no joint
    at a limit, no joint friction): what integrate2_systems gives then, without its rows'
    bookkeeping. The solver has no row, so u_{t+1} is its start u_free (solve_impulses' copy:
    u*, or u_0 with constraints), and the constraints' impulses are lambda_0 (no impulse to
    recover them from: Elimination.response of no row). With constraints, finish_step's
    impulses, integration and table are one compiled call (alone._advance_constrained), then
    its constraint report and end_step; their scheme is never RUNGE_KUTTA_4 (spec step 6 makes
    it SEMI_IMPLICIT while a robot has constraints: effective_scheme)."""
    elim = st.elimination
    if elim is None:
        finish_step(s, dt, st, st.u_free.copy(), {}, [], 0, False)
        return WarmStart([], np.zeros(0))
    scheme = s.effective_scheme()
    start_pin = s.pinocchio_inputs() if s.compute_inverse_dynamics else None
    u_next, q_next, table = st.u_free.copy(), np.empty(s.nq), np.empty((_TABLE_ROWS, s.nv))
    integ, integ_at = s.conv.integration_packed
    _advance_constrained(elim.EF, elim.EI, s.q, s.u, u_next, float(dt), _U_BAR[scheme], integ_at,
                         integ, st.tau_cmd, st.kp, st.kd, st.b, st.tau_act, s.k_s,
                         st.spring_err, st.tau_ext, np.empty(4 * s.nv + elim.k), q_next, table)
    point_loads = constraint_report(s, st, dt, elim.impulses_solved)
    torque = dict(zip(_CONSTRAINED_ROWS, table))
    torque["total"] = table[-1]
    s.end_step(dt, st.q_err, q_next, u_next, torque, st.act_state, point_loads, 0, False,
               start_pin)
    return WarmStart([], np.zeros(0))


def step_alone(s, dt, contacts) -> None:
    """Steps 1-12 of system s alone, from its current state, with `contacts` (a ContactSet with
    s's contacts only): ArticulatedSystem.integrate2."""
    _alone(s, dt, contacts, None, *s.pinocchio_dynamics())
