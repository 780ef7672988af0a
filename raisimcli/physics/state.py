"""The state of a world: everything its next step depends on, written down (docs/physics.md,
"The state").

A world is its structure (the robots' models, the contact set-up, the loop and mimic
constraints, the time step, as a scenario builds them) and its state. `World.get_state()`
returns the state as plain records of numbers; `World.set_state(state)` puts it into a world of
the same structure (a fresh one built from the same scenario, say), and the steps that follow
are bit-identical to those of the world it was taken from: "same state in, same log out".

What a step reads besides the structure, per system (spec, Integration Steps 1-12): q and u;
the commands (control mode, gains, targets, feedforward force, actuator torques, actuation
limits, bus voltages, whether the motor region is enforced); the joint damping and the springs
(stiffness and rest position per coordinate); the external forces set for the next step; the
integration scheme, the solver's settings and the constraints' ERP; `had_contact` (spec step 6:
after a contact, EULER and RUNGE_KUTTA_4 under PD are replaced by SEMI_IMPLICIT); the position
error of the last step (read by `get_generalized_force`); and for the world, the step count and
the last step's impulses, by row, that warm-start the next impulse solve.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class SystemState:
    name: str
    q: np.ndarray                      # (nq,)
    u: np.ndarray                      # (nv,)
    control_mode: str
    kp: np.ndarray                     # (nv,) each, below
    kd: np.ndarray
    q_ref: np.ndarray                  # (nq,)
    u_ref: np.ndarray
    tau_ff: np.ndarray
    tau_lower: np.ndarray
    tau_upper: np.ndarray
    b_joint: np.ndarray
    tau_a: np.ndarray                  # (n_actuators,)
    bus_voltage: np.ndarray            # (n_actuators,)
    motor_region_enforced: bool
    springs: tuple                     # (joint, stiffness, rest) per spring, in order
    k_s: np.ndarray                    # (nv,) the springs' stiffness per DoF
    spring_rest: np.ndarray            # (nq,) their rest coordinates
    loads: tuple                       # the external forces and torques set for the next step
    scheme: str
    had_contact: bool
    pd_error: np.ndarray               # (nv,) the last step's position error
    solver_max_iterations: int
    solver_tolerance: float
    constraint_erp: float
    compute_inverse_dynamics: bool


@dataclass(frozen=True)
class WorldState:
    step_count: int
    dt: float
    gravity: np.ndarray
    systems: tuple[SystemState, ...]
    warm_start: dict = field(default_factory=dict)   # row key -> impulse of the last step


def _copy(a):
    return np.array(a, dtype=float, copy=True)


def system_state(s) -> SystemState:
    """The state of an ArticulatedSystem (copies: later steps do not change it)."""
    return SystemState(
        name=s.name, q=_copy(s.q), u=_copy(s.u), control_mode=s.control_mode, kp=_copy(s.kp),
        kd=_copy(s.kd), q_ref=_copy(s.q_ref), u_ref=_copy(s.u_ref), tau_ff=_copy(s.tau_ff),
        tau_lower=_copy(s.tau_lower), tau_upper=_copy(s.tau_upper), b_joint=_copy(s.b_joint),
        tau_a=_copy(s.tau_a), bus_voltage=_copy(s.transmission.bus_voltage),
        motor_region_enforced=bool(s.motor_region_enforced),
        springs=tuple((sp.joint, float(sp.stiffness), _copy(sp.rest)) for sp in s.springs),
        k_s=_copy(s.k_s), spring_rest=_copy(s.spring_rest),
        loads=tuple(copy.deepcopy(ld) for ld in s.pending_loads), scheme=s.scheme,
        had_contact=bool(s.had_contact), pd_error=_copy(s.pd_error),
        solver_max_iterations=int(s.solver_max_iterations),
        solver_tolerance=float(s.solver_tolerance), constraint_erp=float(s.constraint_erp),
        compute_inverse_dynamics=bool(s.compute_inverse_dynamics))


def restore_system(s, st: SystemState) -> None:
    """Put `st` into the ArticulatedSystem `s` (of the same model)."""
    from raisimcli.errors import StateError
    from raisimcli.physics.articulated_system import Spring
    if st.q.shape != (s.nq,) or st.u.shape != (s.nv,) or st.tau_a.shape != s.tau_a.shape:
        raise StateError(f"{s.name}: the state is of another model (nq {st.q.size}, nv "
                         f"{st.u.size}; this system has nq {s.nq}, nv {s.nv})")
    s.q, s.u = _copy(st.q), _copy(st.u)
    s.control_mode = st.control_mode
    s.kp, s.kd = _copy(st.kp), _copy(st.kd)
    s.q_ref, s.u_ref, s.tau_ff = _copy(st.q_ref), _copy(st.u_ref), _copy(st.tau_ff)
    s.tau_lower, s.tau_upper = _copy(st.tau_lower), _copy(st.tau_upper)
    s.b_joint, s.tau_a = _copy(st.b_joint), _copy(st.tau_a)
    s.transmission.set_bus_voltage(_copy(st.bus_voltage))
    s.motor_region_enforced = st.motor_region_enforced
    s.springs = [Spring(j, k, _copy(rest)) for j, k, rest in st.springs]
    s.k_s, s.spring_rest = _copy(st.k_s), _copy(st.spring_rest)
    s.pending_loads[:] = [copy.deepcopy(ld) for ld in st.loads]
    s.scheme, s.had_contact = st.scheme, st.had_contact
    s.pd_error = _copy(st.pd_error)
    s.solver_max_iterations, s.solver_tolerance = st.solver_max_iterations, st.solver_tolerance
    s.constraint_erp = st.constraint_erp
    s.set_compute_inverse_dynamics(st.compute_inverse_dynamics)
    s.invalidate()  # derived quantities: recomputed from the state
