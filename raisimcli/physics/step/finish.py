"""The end of one system's step after the impulse solve (spec steps 5-6): the constraints' report,
the integration under the system's scheme (RUNGE_KUTTA_4's four stages included) and the torque
table, then ArticulatedSystem.end_step, which makes the results the state. The impulse problems
of step/world_step.py and, under RUNGE_KUTTA_4, step/alone.py end here; step/alone.py's
compiled call and step/quick.py's do the same in their loops."""

from __future__ import annotations

import numpy as np

from raisimcli.physics.constraints import _report
from raisimcli.physics.loads import PointLoad
from raisimcli.physics.step.decomposition import torque_table
from raisimcli.physics.step.explicit import explicit_stage
from raisimcli.physics.step.stage import Stage


def finish_step(system, dt: float, s: Stage, u_solved: np.ndarray, impulse_by_source: dict,
                point_loads: list, iterations: int, in_contact: bool) -> None:
    """Steps 11-12 and the torque table, given the solver's velocity u* + A^-1 J_c^T lambda_c
    and the generalized impulses by source; `point_loads`: the contact forces on this system
    (for inverse dynamics). Ends with ArticulatedSystem.end_step, which makes the results
    the state."""
    q, u = system.q, system.u
    # Pinocchio's inputs at the step's start, for inverse dynamics (before RK4's stages
    # move the kinematics)
    start_pin = system.pinocchio_inputs() if system.compute_inverse_dynamics else None
    scheme = system.effective_scheme()
    if s.elimination is not None:
        point_loads = point_loads + _constraint_report(system, s, dt, impulse_by_source)
    act_state = s.act_state
    if scheme == "RUNGE_KUTTA_4":
        q_next, u_next, table, act_state = runge_kutta_4(
            system, dt, u + (u_solved - s.u_star), impulse_by_source)
    else:
        u_next = u_solved
        if scheme == "SEMI_IMPLICIT":
            u_bar = u_next
        elif scheme == "TRAPEZOID":
            u_bar = 0.5 * (u + u_next)
        else:  # EULER
            u_bar = u
        q_next = system.conv.integrate(q, u_bar, dt)
        table = torque_table(dt, u_next - u, u, u_next, s.tau_cmd, s.kp, s.kd,
                             s.b, s.tau_act, system.k_s, s.spring_err, s.tau_ext,
                             impulse_by_source)
    system.end_step(dt, s.q_err, q_next, u_next, table, act_state, point_loads, iterations,
                    in_contact, start_pin)


def runge_kutta_4(system, dt, u_start, impulse_by_source):
    """Spec step 6, RUNGE_KUTTA_4: the solver's velocity change applied at the step's start,
    then steps 1-4 without impulses at each of four stages. The torque rows are the stages'
    explicit rows averaged with the RK4 weights (the implicit corrections vanish); the
    actuator states are the last stage's, as the spec says.

    The classical tableau in Munthe-Kaas's form (RKMK4, Munthe-Kaas, "High order Runge-Kutta
    methods on manifolds", Appl. Numer. Math. 29, 1999) in the variables that MuJoCo's RK4
    also uses: each quaternion's angular velocity in its own body's frame, and the rotation
    written q_0 exp(theta). A stage's angular velocity enters as the rate of theta,
    dexp^-1_-theta(omega), evaluated at the stage's theta (Conventions.local_rate); taking it
    as it is would make the rotation second order only. The body frame turns the free
    body's gyroscopic motion into Euler's equations, whose velocity varies slowly, which
    makes the error constant smaller than with the world-frame angular velocity."""
    conv = system.conv
    q0, u0 = system.q, system.u
    weights = (1 / 6, 1 / 3, 1 / 3, 1 / 6)
    stage_h = (0.0, 0.5 * dt, 0.5 * dt, dt)  # the tableau's c_i dt
    ks_u, ks_a, ks_k, rows = [], [], [], []
    y0 = conv.local_velocity(q0, u_start)    # the velocity variable of the tableau
    q_stage, y_stage = q0, y0
    s = None
    for k in range(4):
        u_stage = conv.world_velocity(q_stage, y_stage)
        system.q, system.u = q_stage, u_stage  # M, h and loads are evaluated at the stage
        system.touched()
        s = explicit_stage(system, dt)
        a = conv.local_velocity(q_stage, (s.u_star - u_stage) / dt)
        theta = stage_h[k] * ks_k[-1] if k else np.zeros(system.nv)
        rate = conv.local_rate(theta, y_stage)  # d theta / dt of the stage
        ks_u.append(u_stage)
        ks_a.append(a)
        ks_k.append(rate)
        rows.append(s)
        if k < 3:
            h = stage_h[k + 1]
            q_stage = conv.integrate_local(q0, rate, h)
            y_stage = y0 + h * a
    q_next = conv.integrate_local(q0, sum(wt * v for wt, v in zip(weights, ks_k)), dt)
    u_next = conv.world_velocity(q_next, y0 + dt * sum(wt * a for wt, a in zip(weights, ks_a)))
    # back to the step's start, kinematics included (inverse dynamics reads them next)
    system.q, system.u = q0, u0
    system.touched()
    avg = lambda key: sum(wt * getattr(r, key) for wt, r in zip(weights, rows))  # noqa: E731
    zero = np.zeros(system.nv)
    table = torque_table(dt, zero, zero, zero, avg("tau_cmd"), zero, zero, zero,
                         avg("tau_act"), zero, zero, avg("tau_ext"), impulse_by_source)
    table["damping"] = -sum(wt * r.b * v for wt, r, v in zip(weights, rows, ks_u))
    table["springs"] = sum(wt * system.k_s * r.spring_err for wt, r in zip(weights, rows))
    table["total"] = sum(table[k] for k in table if k != "total")
    return q_next, u_next, table, s.act_state


def _constraint_report(system, s: Stage, dt: float, impulse_by_source: dict) -> list:
    """Per-constraint impulses and errors of this step; their generalized impulse joins the
    table; returns their forces as point loads (inverse dynamics; none when it is off)."""
    lam, impulse_by_source["constraints"] = s.elimination.impulses(s.constraint_recover,
                                                                   s.solver_impulses)
    return constraint_report(system, s, dt, lam)

def constraint_report(system, s: Stage, dt: float, lam: np.ndarray) -> list:
    """The constraints' impulses lam (one per row of the step's elimination, Elimination.
    impulses) and errors become constraint_impulses and constraint_errors; returns their
    forces as point loads (inverse dynamics; none when it is off)."""
    elim = s.elimination
    if system.mimics_only() is not None:  # a row each, in order: (lambda, 0, 0), (e, 0, 0)
        system.constraint_impulses = np.zeros((lam.shape[0], 3))
        system.constraint_errors = np.zeros((lam.shape[0], 3))
        system.constraint_impulses[:, 0], system.constraint_errors[:, 0] = lam, elim.e_all
        return []  # (a mimic's force is a generalized one: no point load)
    # each one's world vector A^T lam and its errors, in one compiled call (_report)
    out = np.empty((2, len(system.constraints), 3))
    _report(s.constraint_axes, np.ascontiguousarray(lam, dtype=np.float64), elim.e_all,
            system.constraint_plan(), out)
    system.constraint_impulses, system.constraint_errors = out[0], out[1]
    loads = []
    if system.compute_inverse_dynamics:  # (only inverse dynamics reads them)
        for c, (_, _, axes, points), vec in zip(system.constraints, s.constraint_spans, out[0]):
            if axes is not None:
                loads.append(PointLoad(c.link1, vec / dt, None, False,
                                       world_point=points[0]))
                loads.append(PointLoad(c.link2, -vec / dt, None, False,
                                       world_point=points[1]))
    return loads
