"""ArticulatedSystem: one robot's state, its commands, and the results of its last step.

The state is (q, u) plus the commands (gains, targets, feedforward force, actuator torques, springs,
damping, external forces); everything else is derived. What the state means in Pinocchio's terms
(kinematics, M, h, Jacobians) is :mod:`raisimcli.physics.kinematics`; the conversions to our
conventions :mod:`raisimcli.physics.conventions`; the stages of the step
:mod:`raisimcli.physics.step`, which read the state here and hand their results to `end_step`.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from raisimcli.errors import StateError
from raisimcli.linalg import FLOAT_MAX, cross, first_beyond, matmul, norm
from raisimcli.model import RobotModel, build_pinocchio_model
from raisimcli.physics.commands import command, command_layout, command_views
from raisimcli.physics.constraints import mimic_plan, row_plan
from raisimcli.physics.conventions import (Conventions, GetterScratch)
from raisimcli.physics.kinematics import PinocchioAdapter
from raisimcli.physics.loads import PointLoad
from raisimcli.physics.pinocchio_views import checked_placements
from raisimcli.physics.readings import _energies_and_force, energies_table, generalized_force
from raisimcli.physics.step.actuators import ActuatorState, Transmission, actuator_torques
from raisimcli.physics.step.decomposition import TorqueTable
from raisimcli.physics.step.joint_rows import JointRowTable
from raisimcli.physics.step.solver import DEFAULT_MAX_ITERATIONS, DEFAULT_TOLERANCE

FORCE_AND_TORQUE = "FORCE_AND_TORQUE"
PD_PLUS_FEEDFORWARD_TORQUE = "PD_PLUS_FEEDFORWARD_TORQUE"
CONTROL_MODES = (FORCE_AND_TORQUE, PD_PLUS_FEEDFORWARD_TORQUE)
SCHEMES = ("SEMI_IMPLICIT", "TRAPEZOID", "EULER", "RUNGE_KUTTA_4")


@dataclass
class Spring:
    """A joint spring: k_s (q_s - q_t) on `joint` (spec step 3). `rest` is q-sized for the joint
    (a quaternion w, x, y, z for a spherical joint)."""

    joint: str
    stiffness: float
    rest: np.ndarray


class ArticulatedSystem(PinocchioAdapter):
    """A robot in a :class:`World`. Vectors are (nq,) for coordinates and (nv,) for velocities and
    generalized forces, in our joint order (see docs/conventions.md)."""

    # the commands and joint terms of spec steps 1-3: views of one array, `commands`
    # (raisimcli.physics.commands); an assignment copies into the view
    kp = command("kp", "(nv,) the P gains (read in PD mode)")
    kd = command("kd", "(nv,) the D gains (read in PD mode)")
    q_ref = command("q_ref", "(nq,) the position target")
    u_ref = command("u_ref", "(nv,) the velocity target")
    tau_ff = command("tau_ff", "(nv,) the feedforward generalized force")
    tau_lower = command("tau_lower", "(nv,) the lower bound of spec step 1's clamp")
    tau_upper = command("tau_upper", "(nv,) its upper bound")
    b_joint = command("b_joint", "(nv,) the joint damping")
    k_s = command("k_s", "(nv,) the springs' stiffness per DoF")
    spring_rest = command("spring_rest", "(nq,) the springs' rest coordinates")
    tau_a = command("tau_a", "(n_actuators,) the actuator torques")

    def __init__(self, model: RobotModel, name: str | None = None):
        self.model = model
        self.name = name or model.name
        self.pinocchio = build_pinocchio_model(model)
        self._pm = self.pinocchio.model
        self._data = self._pm.createData()
        # (R, T): views of data.oMi, the bodies' world placements, for compiled loops
        self._placements = checked_placements(self._pm, self._data)
        # (R, T): views of data.oMf, the frames' world placements (the frame getters read them)
        self._frame_placements = checked_placements(self._pm, self._data, "oMf")
        # a link's or joint's body, by name (body_of)
        self._body_of: dict[str, int] = {}
        # data.J (6, nv): eigenpy hands out a view of Pinocchio's own matrix, kept (a copy
        # would not follow computeJointJacobians: then it is read again at each use)
        J = self._data.J  # (6,) when nv == 1: eigenpy drops the unit dimension
        self._J_view = None if J.flags["OWNDATA"] else J.reshape(6, model.nv)
        self._supports = np.zeros((self._pm.njoints, model.nv), dtype=bool)
        for body in range(self._pm.njoints):
            for j in self._pm.supports[body]:
                if j > 0:
                    start = self._pm.idx_vs[j]
                    self._supports[body, start:start + self._pm.nvs[j]] = True
        self.conv = Conventions(model)
        nq, nv = model.nq, model.nv
        self.nq, self.nv = nq, nv
        self._floating_u = np.zeros(nv, dtype=bool)
        for j in model.moving_joints:
            if j.type == "floating":
                self._floating_u[j.u_slice] = True
        self._no_blocks = np.empty((0, 3, 3))
        self._pin_gravity = None  # the gravity last given to the Pinocchio model
        self._total_mass = pin.computeTotalMass(self._pm)
        self._u_of = {j.name: j.u_slice for j in model.moving_joints}
        # Pinocchio's coordinates are ours, in our order (pinocchio_inputs)
        self._q_is_pin = self.conv.identity and \
            np.array_equal(self.pinocchio.q_to_pin, np.arange(model.nq))
        self._q_of = {j.name: j.q_slice for j in model.moving_joints}
        # the getters' arrays (get_mass_matrix's; get_nonlinearities' when T is not I, else None)
        self._getters = GetterScratch(self.conv, self.pinocchio.q_to_pin)
        self._h_getters = None if self.conv.identity else self._getters
        # crba and rnea hand out new arrays (eigenpy's copies of data.M and data.tau), which the
        # getters turn into M and h in place; were they views of the data, they copy them first
        neutral, zero = pin.neutral(self._pm), np.zeros(nv)
        self._new_results = all(a.flags["OWNDATA"] and not np.shares_memory(a, d) for a, d in (
            (pin.crba(self._pm, self._data, neutral), self._data.M),
            (pin.rnea(self._pm, self._data, neutral, zero, zero), self._data.tau)))
        gs = self._getters  # (the getters' Pinocchio calls at the inputs they write)
        self._getter_crba = (self._pm, self._data, gs.q_pin)
        self._getter_rnea = (self._pm, self._data, gs.q_pin, gs.u_pin, gs.c)

        # the state
        q0 = model.nominal_config if model.nominal_config is not None else \
            model.neutral_configuration()
        self.q = self.conv.normalize(q0)
        self.u = np.zeros(nv)
        self._state_version = 0
        self._cache: dict = {}
        # the last step's results in one array, when they lie there (end_step's `record`), and
        # the state version it belongs to (step_record)
        self._record, self._record_version = None, -1

        # commands and parameters (spec steps 1-3)
        self.control_mode = FORCE_AND_TORQUE
        self.command_layout = command_layout(nq, nv, len(model.actuators))
        self.commands = np.zeros(self.command_layout["size"][1])  # (read it; write the views)
        for name, view in command_views(self.commands, self.command_layout).items():
            setattr(self, "_cmd_" + name, view)
        self._zero_gains = self._cmd_zero_gains  # the gains outside PD mode (never written)
        self.kp = np.zeros(nv)
        self.kd = np.zeros(nv)
        self.q_ref = self.q.copy()
        self.u_ref = np.zeros(nv)
        self.tau_ff = np.zeros(nv)
        effort = np.full(nv, np.inf)
        for j in model.moving_joints:
            if j.nv == 1:
                effort[j.u_slice] = j.effort
        self.tau_lower, self.tau_upper = -effort, effort.copy()
        self.b_joint = np.zeros(nv)
        for j in model.moving_joints:
            if j.type != "floating":
                self.b_joint[j.u_slice] = j.damping
        self.transmission = tr = Transmission.from_model(model)
        self.tau_a = np.zeros(len(model.actuators))
        # the arrays that log_energies_and_force's compiled call reads, with its scratch (the
        # quadratic form's, the actuators')
        self._energies_table = energies_table(
            self.conv.block_u, tr.T, tr.back_emf, tr.peak, tr.gear, self.commands,
            self.command_layout, np.empty(nv), np.empty(5 * tr.T.shape[0] + nv))
        self.motor_region_enforced = True
        self.springs: list[Spring] = [Spring(j.name, j.stiffness, np.array(j.spring_mount))
                                      for j in model.moving_joints if j.stiffness > 0]
        self.pending_loads: list[PointLoad] = []
        self.scheme = "SEMI_IMPLICIT"
        self.joint_rows = JointRowTable(model, self.transmission.output_friction, self.name)
        self.solver_max_iterations = DEFAULT_MAX_ITERATIONS
        self.solver_tolerance = DEFAULT_TOLERANCE
        self.had_contact = False  # set by the contact solver; spec step 6 replacement rule
        self.constraints: list = []     # loop and mimic constraints (raisimcli.physics.constraints)
        self._mimic_plan = (0, None)  # (len(constraints), mimic_plan(constraints))
        self._row_plan = (0, None)  # (len(constraints), row_plan(constraints))
        self.constraint_erp = 1.5
        self.constraint_impulses = None  # per constraint: (3,) world vector, or (1,) for a mimic
        self.constraint_errors = None    # per constraint, at the last step's start
        self.compute_inverse_dynamics = False
        self.last_contacts = ()  # the World's ContactSet of the last step, set after each step
        self.joint_wrenches = None  # JointWrenches of the last step, when computed
        self._idyn = None

        self._spring_vectors()

        self._constraints_from_model()

        # per-step buffers: results of the last step, read by the API and the log
        # (torque, actuator_state and pd_error below: made from `_record` when first read)
        self._torque: Mapping[str, np.ndarray] | None = {}
        self._actuator_state: ActuatorState | None = None
        self.solver_iterations = 0
        self._pd_error: np.ndarray | None = np.zeros(nv)
        self._stage = None  # quantities of integrate1, used by integrate2
        # the step modules' arrays of this system that live from step to step (their scratch,
        # their plans), by module: step/explicit.py's "stage" and "explicit",
        # step/alone.py's "plan", step/quick.py's "quick"
        self.step_scratch: dict = {}

    # ============================================================================================
    # state
    # ============================================================================================
    def _check(self, v, n: int, what: str) -> np.ndarray:
        a = np.asarray(v, dtype=float).reshape(-1)
        if a.size != n:
            raise StateError(f"{self.name}: {what} must have {n} entries, got {a.size}")
        if first_beyond(a, FLOAT_MAX) >= 0:
            raise StateError(f"{self.name}: {what} must be finite")
        return a

    def invalidate(self) -> None:
        """Forget everything derived from the state (M, h, kinematics, an integrate1 not
        followed by integrate2), after the state was set from a record, and the step modules'
        scratch with their copies of the model's constant arrays (made again at the next
        step)."""
        self._stage = None
        self.step_scratch.clear()
        self.touched()

    def touched(self) -> None:
        """The state changed (set here, or moved by a RUNGE_KUTTA_4 stage): what was derived
        from it is computed again when read."""
        self._state_version += 1
        self._cache.clear()

    def get_generalized_coordinate(self) -> np.ndarray:
        return self.q.copy()

    def get_generalized_velocity(self) -> np.ndarray:
        return self.u.copy()

    def get_state(self) -> tuple[np.ndarray, np.ndarray]:
        return self.q.copy(), self.u.copy()

    def set_generalized_coordinate(self, q) -> None:
        """Set q (nq,); quaternions are normalised."""
        self.q = self.conv.normalize(self._check(q, self.nq, "generalized coordinate"))
        self.had_contact = False
        self.touched()

    def set_generalized_velocity(self, u) -> None:
        self.u = self._check(u, self.nv, "generalized velocity").copy()
        self.touched()

    def set_state(self, q, u) -> None:
        self.set_generalized_coordinate(q)
        self.set_generalized_velocity(u)

    @property
    def coordinate_names(self) -> tuple[str, ...]:
        return self.model.coordinate_names

    @property
    def dof_names(self) -> tuple[str, ...]:
        return self.model.dof_names

    def get_dof(self) -> int:
        return self.nv

    def get_generalized_coordinate_dim(self) -> int:
        return self.nq

    # ============================================================================================
    # commands (spec: PD Controller, Actuators, Apply External Forces)
    # ============================================================================================
    def set_control_mode(self, mode: str) -> None:
        if mode not in CONTROL_MODES:
            raise StateError(f"control mode must be one of {CONTROL_MODES}, got {mode!r}")
        self.control_mode = mode

    def set_pd_gains(self, kp, kd) -> None:
        """kp, kd (nv,); floating-base entries are forced to 0. Switches to
        PD_PLUS_FEEDFORWARD_TORQUE."""
        kp = self._check(kp, self.nv, "p gain").copy()
        kd = self._check(kd, self.nv, "d gain").copy()
        if np.any(kp < 0) or np.any(kd < 0):
            raise StateError(f"{self.name}: PD gains must be >= 0")
        kp[self._floating_u] = 0.0
        kd[self._floating_u] = 0.0
        self.kp, self.kd = kp, kd
        self.control_mode = PD_PLUS_FEEDFORWARD_TORQUE

    def set_pd_target(self, q_ref, u_ref) -> None:
        """q_ref (nq,) with quaternions, u_ref (nv,)."""
        self.q_ref = self.conv.normalize(self._check(q_ref, self.nq, "position target"))
        self.u_ref = self._check(u_ref, self.nv, "velocity target").copy()

    def set_generalized_force(self, tau) -> None:
        """The feedforward force tau_ff (nv,); it stays until changed."""
        self.tau_ff = self._check(tau, self.nv, "generalized force").copy()

    def set_actuation_limits(self, upper, lower) -> None:
        """Bounds (nv,) of the clamp of spec step 1 (instead of the URDF effort)."""
        self.tau_upper = self._check(upper, self.nv, "upper actuation limit").copy()
        self.tau_lower = np.array(self._check(lower, self.nv, "lower actuation limit"))
        if np.any(self.tau_lower > self.tau_upper):
            raise StateError(f"{self.name}: lower actuation limit above the upper one")

    def set_actuator_torques(self, tau_a) -> None:
        """tau_a (n_actuators,), joint-side torque per actuator (spec step 2)."""
        self.tau_a = self._check(tau_a, len(self.model.actuators), "actuator torques").copy()

    def set_actuator_torque(self, actuator: str, tau: float) -> None:
        self.tau_a[self._actuator_index(actuator)] = float(tau)

    def _actuator_index(self, name: str) -> int:
        try:
            return self.transmission.names.index(name)
        except ValueError:
            raise StateError(f"{self.name}: no actuator named {name!r}") from None

    def set_motor_operating_region_enforced(self, enforced: bool) -> None:
        self.motor_region_enforced = bool(enforced)

    def set_bus_voltage(self, volts, actuator: str | None = None) -> None:
        """Bus voltage (V) of one actuator, or of all."""
        if volts < 0 or not np.isfinite(volts):
            raise StateError(f"{self.name}: bus voltage must be finite and >= 0, got {volts}")
        v = self.transmission.bus_voltage.copy()
        if actuator is None:
            v[:] = volts
        else:
            v[self._actuator_index(actuator)] = volts
        self.transmission.set_bus_voltage(v)

    def get_actuator_states(self) -> ActuatorState:
        """Motor speeds, operating-region bounds, commanded and applied motor torques, as used by
        the last step (before any step: at the current state)."""
        if self.actuator_state is None:
            return actuator_torques(self.transmission, self.tau_a, self.u,
                                    self.motor_region_enforced)[1]
        return self.actuator_state

    def set_joint_damping(self, b) -> None:
        """b_joint (nv,), >= 0; the floating-base entries stay zero."""
        b = self._check(b, self.nv, "joint damping").copy()
        if np.any(b < 0):
            raise StateError(f"{self.name}: joint damping must be >= 0")
        b[self._floating_u] = 0.0
        self.b_joint = b

    def add_spring(self, joint: str, stiffness: float, rest) -> None:
        """A spring k_s (q_s - q_t) on a revolute, prismatic or spherical joint."""
        j = self._joint(joint)
        if j.type not in ("revolute", "continuous", "prismatic", "spherical"):
            raise StateError(f"{self.name}: a spring needs a revolute, prismatic or spherical "
                             f"joint; {joint!r} is {j.type}")
        rest = np.atleast_1d(np.asarray(rest, dtype=float))
        if rest.size != j.nq or stiffness < 0:
            raise StateError(f"{self.name}: spring on {joint!r} needs stiffness >= 0 and a rest "
                             f"position of {j.nq} numbers")
        if j.type == "spherical":
            rest = rest / norm(rest)
        self.springs.append(Spring(joint, float(stiffness), rest))
        self._spring_vectors()

    def get_springs(self) -> list[Spring]:
        return list(self.springs)

    def _spring_vectors(self) -> None:
        self.k_s = np.zeros(self.nv)
        self.spring_rest = self.q.copy()
        for s in self.springs:
            j = self._joint(s.joint)
            self.k_s[j.u_slice] += s.stiffness
            self.spring_rest[j.q_slice] = s.rest
        # with several springs on one joint, the stiffness adds and the last rest position wins
        # for spherical joints; for 1-DoF joints the combined rest is the stiffness-weighted mean
        for name in {s.joint for s in self.springs}:
            j = self._joint(name)
            group = [s for s in self.springs if s.joint == name]
            if j.nv == 1 and len(group) > 1:
                k = sum(s.stiffness for s in group)
                if k > 0:
                    self.spring_rest[j.q_slice] = sum(s.stiffness * s.rest for s in group) / k

    def _joint(self, name: str):
        for j in self.model.moving_joints:
            if j.name == name:
                return j
        raise StateError(f"{self.name}: no moving joint named {name!r}")

    def set_external_force(self, link: str, force, point=None) -> None:
        """A world-frame force (3,) on `link`'s body at `point` (in the link frame; default: the
        body's centre of mass), for the next step (RaiSim clears external forces after a step)."""
        self._frame(link)
        f = self._check(force, 3, "external force")
        p = None if point is None else self._check(point, 3, "point")
        self.pending_loads.append(PointLoad(link, f, p))

    def set_external_torque(self, link: str, torque) -> None:
        """A world-frame torque (3,) on `link`'s body, for the next step."""
        self._frame(link)
        torque = self._check(torque, 3, "external torque")
        self.pending_loads.append(PointLoad(link, torque, None, True))

    def set_constraint_force(self, link: str, force, point=None) -> None:
        """Like set_external_force: a force of an outside constraint, for the next step."""
        self.set_external_force(link, force, point)

    def set_integration_scheme(self, scheme: str) -> None:
        if scheme not in SCHEMES:
            raise StateError(f"integration scheme must be one of {SCHEMES}, got {scheme!r}")
        self.scheme = scheme

    # ============================================================================================
    # the step
    # ============================================================================================
    def gains(self) -> tuple[np.ndarray, np.ndarray]:
        """(kp, kd) of this step: the PD gains in PD mode, zeros otherwise (read them, never
        write them)."""
        if self.control_mode == PD_PLUS_FEEDFORWARD_TORQUE:
            return self.kp, self.kd
        return self._zero_gains, self._zero_gains

    def load_point_world(self, load: PointLoad) -> tuple[int, np.ndarray]:
        """(body, world point) where a load acts: its point (link frame) or the body's COM, at
        the kinematics of the current state (call kinematics() first)."""
        data = self._data
        body = self.body_of(load.link)
        if load.world_point is not None:
            return body, load.world_point
        if load.point is None:
            return body, data.oMi[body].act(self._pm.inertias[body].lever)
        return body, data.oMf[self._frame(load.link)].act(load.point)

    def load_as_local_force(self, load: PointLoad) -> tuple[int, pin.Force]:
        """(body, the load as a spatial force in the body's frame, about its origin), at the
        kinematics of the current state (call kinematics() first)."""
        data = self._data
        body = self.body_of(load.link)
        R = data.oMi[body].rotation
        if load.is_torque:
            return body, pin.Force(np.zeros(3), matmul(R.T, load.vector))
        _, p = self.load_point_world(load)
        r_local = matmul(R.T, p - data.oMi[body].translation)
        F_local = matmul(R.T, load.vector)
        return body, pin.Force(F_local, cross(r_local, F_local))

    def external_generalized_force(self) -> np.ndarray:
        """J^T F_ext (nv,) of the loads set for this step, at the current state (a new array;
        zeros without loads)."""
        tau = np.zeros(self.nv)
        if self.pending_loads:
            self.kinematics()
        for load in self.pending_loads:
            body, p = self.load_point_world(load)
            if load.is_torque:
                p = self._data.oMi[body].translation
            J_lin, J_rot = self.point_jacobians(body, p)
            tau += matmul((J_rot if load.is_torque else J_lin).T, load.vector)
        return tau

    def effective_scheme(self) -> str:
        """The scheme this step uses after the replacement rules of spec step 6."""
        s = self.scheme
        if self.control_mode == PD_PLUS_FEEDFORWARD_TORQUE and self.had_contact and \
                s in ("EULER", "RUNGE_KUTTA_4"):
            return "SEMI_IMPLICIT"
        if s == "RUNGE_KUTTA_4" and self.has_constraints:
            return "SEMI_IMPLICIT"
        return s

    @property
    def integrate1_pending(self) -> bool:
        """Whether integrate1 ran at the current state and integrate2 has not yet."""
        return self._stage is not None

    @property
    def integrate1_mark(self) -> tuple:
        """(the system, integrate1's time step and state, the current state's version):
        World.integrate2 compares it with the one integrate1 left, to know that the state has
        not been set since (commands, gains and loads may have been)."""
        return id(self), self._stage, self._state_version

    @contextmanager
    def coordinates(self, q: np.ndarray):
        """Within the block the system is at the coordinates q (the same velocity and commands;
        what is derived from the state is computed for q when read), then back at its own: for a
        query about an earlier state (World.contacts detected at integrate1's coordinates after
        a state was set since). `q` is not copied: do not change it inside."""
        own = self.q
        self.q = q
        self.touched()
        try:
            yield
        finally:
            self.q = own
            self.touched()

    def end_integrate1(self) -> None:
        """Forget that integrate1 ran (its M and h stay cached for the state): the step is
        taken by World.integrate2's whole step (step/pipeline.py), which makes its own stages."""
        self._stage = None

    @property
    def has_constraints(self) -> bool:
        """Loop or mimic constraints (eliminated before the solver)."""
        return bool(self.constraints)

    def integrate1(self, dt: float) -> None:
        """Integration Steps 1-6: marks the step's start. Its quantities (kinematics, M, h,
        contact Jacobians) are computed when first read, at this state, and cached for it:
        get_mass_matrix or get_nonlinearities between integrate1 and integrate2 (a controller),
        or integrate2 itself. They would be the same computed here (a state set in between clears
        the cache either way), and a controller that reads none of them does not pay for them;
        w, which depends on the gains that a controller may set before integrate2, is made
        there."""
        self._stage = (dt, self._state_version)

    def integrate2(self, dt: float, contacts=()) -> None:
        """Integration Steps 7-12 of this system alone with `contacts` (a ContactSet, none by
        default): command, actuators, explicit torque, free velocity, impulse solver, velocity
        and position integration, torque decomposition. World.integrate2 solves every system's
        rows and the contacts together."""
        from raisimcli.physics.contact_set import EMPTY_CONTACTS
        from raisimcli.physics.step.pipeline import step_alone
        self._stage = None
        step_alone(self, dt, contacts if len(contacts) else EMPTY_CONTACTS)

    def end_step(self, dt: float, pd_error: np.ndarray | None, q_next: np.ndarray,
                 u_next: np.ndarray, table: Mapping | None, act_state, point_loads: list,
                 iterations: int, in_contact: bool, start_pin, next_pin=None,
                 pin_acceleration=None, record=None) -> None:
        """The step's results become the state: q_{t+1}, u_{t+1}, the torque table, the actuator
        states, the joint wrenches (inverse dynamics, from Pinocchio's inputs at the step's
        start `start_pin`, with the contact forces `point_loads`), the PD error of the step's
        start, had_contact. `next_pin`: pinocchio_inputs() at (q_{t+1}, u_{t+1}) when the step
        made them (with the bits pinocchio_inputs would give), else None; `pin_acceleration`:
        Pinocchio's acceleration of the step for inverse dynamics, when the step made it (see
        InverseDynamics.after_step).

        `record`, when the step's results lie in one array (the quick step):
        (array, (layout, torque_at, actuators_at, pd_error_at)). `layout` is step_record's;
        `torque_at` TorqueTable's `at`; the actuators' five fields lie end to end from
        `actuators_at`, the PD error from `pd_error_at`. The torque table, the actuator states
        and the PD error given as None are then made from it when first read."""
        self.solver_iterations = iterations
        if self.compute_inverse_dynamics:
            self.joint_wrenches = self._idyn.after_step(u_next, dt,
                                                        self.pending_loads + point_loads,
                                                        start_pin, pin_acceleration)
        self._torque, self._actuator_state, self._pd_error = table, act_state, pd_error
        if self.pending_loads:
            self.pending_loads.clear()
        self.q, self.u = q_next, u_next
        self._state_version += 1  # (touched)
        self._cache.clear()
        self._record, self._record_version = record, self._state_version
        if next_pin is not None:
            self._cache["pin"] = next_pin
        self._stage = None
        if in_contact:  # spec step 6: the replacement rule applies from the next step
            self.had_contact = True

    def step_record(self):
        """(array, layout) when the last step's results lie in one array (the quick step of
        step/quick.py) and the state has not changed since, else None. `layout` maps each key
        to (start, stop) in the array: "q", "u", "torque/<source>" for each source of the
        torque table and "torque/total", "actuators/<field>" for each field of ActuatorState.
        The entries hold the bits of q, u, torque[source] and actuator_state; the same layout
        object comes back for as long as it holds (a log keeps what it derived from it). Read
        the array, never write it."""
        r = self._record
        if r is None or self._record_version != self._state_version:
            return None
        return r[0], r[1][0]

    @property
    def torque(self) -> Mapping[str, np.ndarray]:
        """The last step's torque table: {source: (nv,) row, ..., "total": (nv,) row} (a dict,
        or the quick step's TorqueTable of views of its results); {} before any step."""
        if self._torque is None:
            r = self._record
            self._torque = TorqueTable(r[0], r[1][1])
        return self._torque

    @torque.setter
    def torque(self, table: Mapping[str, np.ndarray]) -> None:
        self._torque = table

    @property
    def actuator_state(self) -> ActuatorState | None:
        """The actuators' states of the last step (None before any step: see
        get_actuator_states)."""
        if self._actuator_state is None and self._record is not None:
            OF, a, n = self._record[0], self._record[1][2], len(self.model.actuators)
            self._actuator_state = ActuatorState(*(OF[a + k * n:a + (k + 1) * n]
                                                   for k in range(5)))
        return self._actuator_state

    @actuator_state.setter
    def actuator_state(self, state: ActuatorState | None) -> None:
        self._actuator_state = state

    @property
    def pd_error(self) -> np.ndarray:
        """(nv,) the position error of the last step's start (get_generalized_force reads it)."""
        if self._pd_error is None:
            OF, a = self._record[0], self._record[1][3]
            self._pd_error = OF[a:a + self.nv]
        return self._pd_error

    @pd_error.setter
    def pd_error(self, error: np.ndarray) -> None:
        self._pd_error = error

    # ============================================================================================
    # inverse dynamics (spec: "Inverse Dynamics")
    # ============================================================================================
    def set_compute_inverse_dynamics(self, flag: bool) -> None:
        """Compute the joint wrenches after every step (costs one RNEA per step)."""
        self.compute_inverse_dynamics = bool(flag)
        if flag and self._idyn is None:
            from raisimcli.physics.inverse_dynamics import InverseDynamics
            self._idyn = InverseDynamics(self)

    def _joint_index(self, joint: str) -> int:
        for k, j in enumerate(self.model.joints):
            if j.name == joint:
                return k
        raise StateError(f"{self.name}: no joint named {joint!r}")

    def _wrenches(self):
        if self.joint_wrenches is None:
            raise StateError(f"{self.name}: no inverse dynamics yet: call "
                             "set_compute_inverse_dynamics(True) and step")
        return self.joint_wrenches

    def get_force_at_joint_in_world_frame(self, joint: str) -> np.ndarray:
        """(3,) N: the force the parent body transmits to the child through `joint` in the last
        step, world frame."""
        return self._wrenches().force[self._joint_index(joint)].copy()

    def get_torque_at_joint_in_world_frame(self, joint: str) -> np.ndarray:
        """(3,) N m: the torque the parent transmits to the child through `joint` in the last
        step, world frame, about the joint's position at the step's start."""
        return self._wrenches().torque[self._joint_index(joint)].copy()

    def get_joint_actuation(self, joint: str) -> float:
        """axis . torque (revolute) or axis . force (prismatic) at `joint` in the last step."""
        return float(self._wrenches().actuation[self._joint_index(joint)])

    # ============================================================================================
    # loop and mimic constraints (spec: "Kinematic loops")
    # ============================================================================================
    def _constraints_from_model(self) -> None:
        """The URDF's loop constraints (body2's anchor attached where body1's anchor is at the
        nominal configuration, the current one at load) and mimic joints."""
        for k, c in enumerate(self.model.constraints):
            if c.kind == "pin":
                self.add_pin_constraint(c.body1, c.body2, c.anchor, name=f"{c.kind}{k}")
            else:
                self.add_equality_constraint(c.body1, c.body2, c.anchor, c.axes,
                                             name=f"{c.kind}{k}")
        for j in self.model.moving_joints:
            if j.mimic is not None:
                self.add_mimic_constraint(j.name, j.mimic.joint, j.mimic.multiplier,
                                          j.mimic.offset)

    def _attach(self, link1, link2, anchor):
        self._frame(link1)
        self._frame(link2)
        if self.body_of(link1) == self.body_of(link2):
            raise StateError(f"{self.name}: {link1!r} and {link2!r} are one rigid body")
        a1 = self._check(anchor, 3, "anchor")
        p1 = self.get_frame_position(link1) + matmul(self.get_frame_orientation(link1), a1)
        a2 = matmul(self.get_frame_orientation(link2).T, p1 - self.get_frame_position(link2))
        return a1, a2

    def add_pin_constraint(self, link1: str, link2: str, anchor, name: str | None = None):
        """Hold `anchor` (link1's frame) and the point of link2 coincident with it now together
        in all three directions."""
        from raisimcli.physics.constraints import LoopConstraintState
        a1, a2 = self._attach(link1, link2, anchor)
        self.constraints.append(LoopConstraintState(name or f"pin{len(self.constraints)}", "pin",
                                                    link1, link2, a1, a2, np.eye(3)))

    def add_equality_constraint(self, link1: str, link2: str, anchor, axes,
                                name: str | None = None):
        """Hold them together along one or two axes fixed in link1 (its frame)."""
        from raisimcli.physics.constraints import LoopConstraintState
        axes = np.atleast_2d(np.asarray(axes, dtype=float))
        if axes.shape[1] != 3 or len(axes) not in (1, 2):
            raise StateError(f"{self.name}: an equality constraint takes one or two axes (3,), "
                             f"got {axes.shape}")
        norms = np.array([norm(a) for a in axes])
        if np.any(norms < 1e-12):
            raise StateError(f"{self.name}: equality constraint axes must be non-zero")
        axes = axes / norms[:, None]
        if len(axes) == 2 and norm(cross(axes[0], axes[1])) < 1e-6:
            raise StateError(f"{self.name}: the two axes of an equality constraint are parallel")
        a1, a2 = self._attach(link1, link2, anchor)
        self.constraints.append(LoopConstraintState(
            name or f"equality{len(self.constraints)}", "equality", link1, link2, a1, a2, axes))

    def add_mimic_constraint(self, follower: str, leader: str, multiplier: float = 1.0,
                             offset: float = 0.0) -> None:
        """q_follower = multiplier q_leader + offset, held by the same elimination."""
        from raisimcli.physics.constraints import MimicConstraintState
        f, l_ = self._joint(follower), self._joint(leader)
        for j in (f, l_):
            if j.nv != 1:
                raise StateError(f"{self.name}: a mimic constraint needs revolute, continuous or "
                                 f"prismatic joints; {j.name!r} is {j.type}")
        if follower == leader:
            raise StateError(f"{self.name}: joint {follower!r} cannot mimic itself")
        self.constraints.append(MimicConstraintState(
            f"mimic_{follower}", follower, leader, float(multiplier), float(offset),
            f.u_slice.start, l_.u_slice.start, f.q_slice.start, l_.q_slice.start))

    def mimics_only(self) -> tuple | None:
        """raisimcli.physics.constraints.mimic_plan of this system's constraints (None unless
        it has constraints and all are mimics), made again when one is added."""
        if self._mimic_plan[0] != len(self.constraints):  # (constraints are only appended)
            self._mimic_plan = (len(self.constraints), mimic_plan(self.constraints))
        return self._mimic_plan[1]

    def constraint_plan(self) -> np.ndarray:
        """raisimcli.physics.constraints.row_plan of this system's constraints, made again when
        one is added."""
        if self._row_plan[0] != len(self.constraints):  # (constraints are only appended)
            self._row_plan = (len(self.constraints), row_plan(self.constraints))
        return self._row_plan[1]

    def get_contacts(self) -> list:
        """The contacts of this system in the last step (see raisimcli.physics.contact_set.Contact),
        with their impulses."""
        return [c for c in self.last_contacts if c.touches(self)]

    def log_energies_and_force(self, out: np.ndarray) -> None:
        """out (2 + nv,) = [get_kinetic_energy(), get_potential_energy(),
        *get_generalized_force()] at the current state, with their bits, in one compiled call
        after Pinocchio's crba and centre of mass (cheaper than the three getters; the call
        takes the robot's constant arrays as one ArrayTable). The state's M, M_pin, centre of
        mass and potential energy are kept as the getters keep them (the next step reuses the
        crba). When one of them is kept already (or the gravity is not a (3,) array), the
        getters give the values."""
        cache, g = self._cache, self._gravity
        key = ("V", g.tobytes())
        if "M" in cache or "com" in cache or key in cache or g.shape != (3,):
            out[0], out[1] = self.get_kinetic_energy(), self.get_potential_energy()
            out[2:] = self.get_generalized_force()
            return
        q_pin, _, R = self.pinocchio_inputs()
        upper = pin.crba(self._pm, self._data, q_pin)  # (the upper triangle)
        com = pin.centerOfMass(self._pm, self._data, pin.KinematicLevel.POSITION, False)
        n = self.nv
        M_pin, M = np.empty((n, n)), np.empty((n, n))
        _energies_and_force(upper, self._no_blocks if R is None else R, M_pin, M, self.u, com, g,
                            self.pd_error, self.transmission.stall, self._total_mass,
                            (1 if self.control_mode == PD_PLUS_FEEDFORWARD_TORQUE else 0) |
                            (2 if self.motor_region_enforced else 0), self._energies_table.table,
                            out)
        cache["M_pin"], cache["M"] = M_pin, M
        cache["pass"] = True  # (crba's joint placements: _joint_jacobians, get_center_of_mass)
        cache["com"] = com.copy()
        cache[key] = float(out[1])

    def get_generalized_force(self) -> np.ndarray:
        """tau_cmd + tau_act at the current state: the PD term with the position error of the last
        step and the current velocity, the actuator bounds at the current motor speeds. No damping,
        springs, external forces, implicit terms or impulses."""
        kp, kd = self.gains()
        # pd_command + actuator_torques' tau_act, compiled
        return generalized_force(self.transmission, self.tau_a, self.motor_region_enforced, kp,
                                 kd, self.pd_error, self.u_ref, self.u, self.tau_ff,
                                 self.tau_lower, self.tau_upper)


__all__ = ["ArticulatedSystem", "PointLoad", "Spring", "FORCE_AND_TORQUE",
           "PD_PLUS_FEEDFORWARD_TORQUE", "SCHEMES"]
