"""The intermediate results of one system's step, as a typed record (spec Integration Steps 1-9,
and what the impulse solve adds): what `explicit.make_stage` computes, the impulse solve reads
and fills, and `finish.finish_step` turns into the next state and the torque table."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from raisimcli.physics.step.actuators import ActuatorState
from raisimcli.physics.step.implicit import Factorized
from raisimcli.physics.step.solver import Rows


@dataclass
class Stage:
    # steps 1-4 without impulses, at the state the stage was evaluated at
    M: np.ndarray              # mass matrix (nv, nv)
    h: np.ndarray              # nonlinear effects (nv,)
    q_err: np.ndarray          # PD position error (nv,)
    tau_cmd: np.ndarray        # clamped command: PD + feedforward (nv,)
    tau_act: np.ndarray        # actuator torque on the joints (nv,)
    act_state: ActuatorState
    spring_err: np.ndarray     # spring position error (nv,)
    tau_ext: np.ndarray        # J^T F of the external loads (nv,)
    b: np.ndarray              # joint + output damping (nv,)
    factor: Factorized         # Cholesky of M + diag(w)
    u_star: np.ndarray         # the free velocity (nv,)
    kp: np.ndarray
    kd: np.ndarray
    # the impulse problem's part of this system (prepare_step)
    joint_rows: Rows | None = None
    u_free: np.ndarray | None = None        # the solver's start: u*, or u_0 with constraints
    elimination: object | None = None       # constraints.Elimination, with loops or mimics
    constraint_spans: list = field(default_factory=list)
    constraint_axes: np.ndarray | None = None  # their rows' world axes (k, 3), with loops
    # filled by the impulse solve
    constraint_recover: object | None = None
    solver_impulses: np.ndarray | None = None
