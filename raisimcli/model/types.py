"""The static description of a robot: what a URDF says, resolved into our conventions.

A :class:`RobotModel` never changes during a run (Pinocchio's Model, MuJoCo's mjModel). Mutable
state lives in :class:`raisimcli.physics.ArticulatedSystem`.

Conventions (docs/conventions.md): SI units; joint order is the root first, then depth-first through the
tree with children in the order their joints appear in the file; quaternions are (w, x, y, z).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

# the name of a robot in a world becomes the log's group robots/<name>: no "/", no "." or ".."
ROBOT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
ROBOT_NAME_RULE = ("letters, digits, '_', '.' and '-', starting with a letter, digit or '_', at "
                   "most 128 characters")

# q / u sizes per joint type (docs/conventions.md)
JOINT_NQ = {"fixed": 0, "revolute": 1, "continuous": 1, "prismatic": 1, "spherical": 4, "floating": 7}
JOINT_NV = {"fixed": 0, "revolute": 1, "continuous": 1, "prismatic": 1, "spherical": 3, "floating": 6}
ONE_DOF_TYPES = ("revolute", "continuous", "prismatic")


def _frozen(a) -> np.ndarray:
    arr = np.array(a, dtype=float)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class Inertial:
    """Mass properties of one link, in the link frame.

    `com`: (3,) centre of mass; `inertia`: (3, 3) rotational inertia about the COM, axes of the link
    frame (the URDF's `<inertial><origin rpy>` already applied).
    """

    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass(frozen=True)
class Geometry:
    """One collision (or visual) shape of a link.

    `kind`: box | sphere | cylinder | capsule | mesh. `origin`: (4, 4) pose in the link frame.
    `size`: box (3,) full extents; sphere (radius,); cylinder and capsule (radius, length), the
    axis along z. `mesh`: resolved absolute path; `scale`: (3,). `line`: of its element in the
    URDF, for messages. `rgba`: a visual's colour from its `<material>` (None: none given).
    """

    kind: str
    origin: np.ndarray
    size: tuple[float, ...] = ()
    mesh: str | None = None
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    line: int | None = None
    uri: str | None = None  # a mesh's filename as the URDF writes it
    rgba: tuple[float, float, float, float] | None = None


@dataclass(frozen=True)
class Link:
    """A URDF link. `body` is the index of the rigid body it is merged into (fixed joints merge
    links); `body_T_link` (4, 4) is the link frame's pose in that body's frame."""

    name: str
    inertial: Inertial | None
    collisions: tuple[Geometry, ...]
    body: int = -1
    body_T_link: np.ndarray = field(default_factory=lambda: _frozen(np.eye(4)))
    line: int | None = None


@dataclass(frozen=True)
class Mimic:
    """q_follower = multiplier * q_leader + offset."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class Joint:
    """A URDF joint (or the synthetic floating root joint `root`).

    `origin`: (4, 4) pose of the joint frame in the parent link frame. `axis`: (3,) unit axis in
    the joint frame. `q_slice`, `u_slice`: where its coordinates sit in q and u. Limits are +-inf
    where the URDF gives none; `effort` is the actuation limit (spec step 1). `spring_mount`: the
    spring's rest position, q-sized for this joint (a quaternion w, x, y, z for spherical joints).
    """

    name: str
    type: str
    parent: str | None
    child: str
    origin: np.ndarray
    axis: np.ndarray
    lower: float = -np.inf
    upper: float = np.inf
    effort: float = np.inf
    velocity: float = np.inf
    damping: float = 0.0
    friction: float = 0.0
    rotor_inertia: float = 0.0
    stiffness: float = 0.0
    spring_mount: np.ndarray | None = None
    mimic: Mimic | None = None
    q_slice: slice = field(default_factory=lambda: slice(0, 0))
    u_slice: slice = field(default_factory=lambda: slice(0, 0))
    line: int | None = None

    @property
    def nq(self) -> int:
        return JOINT_NQ[self.type]

    @property
    def nv(self) -> int:
        return JOINT_NV[self.type]

    @property
    def has_position_limits(self) -> bool:
        return self.type in ("revolute", "prismatic") and (
            np.isfinite(self.lower) or np.isfinite(self.upper)
        )


@dataclass(frozen=True)
class Motor:
    """An electric motor (spec step 2). SI units: ohm, N m / A, rad / (s V), V, N m."""

    resistance: float
    torque_constant: float
    velocity_constant: float
    bus_voltage: float
    peak_torque: float = np.inf

    @property
    def stall_torque(self) -> float:
        """tau_stall = K_t V_bus / R."""
        return self.torque_constant * self.bus_voltage / self.resistance

    @property
    def back_emf_damping(self) -> float:
        """b = K_t / (R K_v), in N m s / rad of motor speed."""
        return self.torque_constant / (self.resistance * self.velocity_constant)

    @property
    def no_load_speed(self) -> float:
        """Motor speed at which the stall torque is used up by back-EMF: tau_stall / b = K_v V_bus."""
        return self.velocity_constant * self.bus_voltage


@dataclass(frozen=True)
class Actuator:
    """A motor driving `joint` through `gear_ratio` and, through `couplings`, other joints.

    Motor speed w_m = G u_j + sum_c r_c u_c (spec step 2); the joint torques are G tau_m on `joint`
    and r_c tau_m on each coupled joint. `output_damping` / `output_friction` act on `joint`.
    """

    name: str
    joint: str
    gear_ratio: float
    output_damping: float
    output_friction: float
    motor: Motor
    couplings: tuple[tuple[str, float], ...] = ()
    line: int | None = None


@dataclass(frozen=True)
class LoopConstraint:
    """A loop closure (spec: Kinematic loops). `anchor`: (3,) in body1's link frame; `axes`:
    (k, 3) unit axes in body1's link frame (k = 3 world-fixed axes for a pin, 1 or 2 for an
    equality)."""

    kind: str
    body1: str
    body2: str
    anchor: np.ndarray
    axes: np.ndarray
    line: int | None = None


@dataclass(frozen=True)
class ModelWarning:
    """Something the reader had to interpret, or that looks wrong but can be simulated.

    `code` names the kind (see docs/urdf.md, "Warnings"); `file`, `line` and `element` say where;
    `str()` gives the one-line form `file:line: <element>: message`."""

    code: str
    message: str
    file: str
    line: int | None = None
    element: str | None = None

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        elem = f" {self.element}:" if self.element else ""
        return f"{where}:{elem} {self.message}"


@dataclass(frozen=True)
class RobotModel:
    """A robot, as the simulator sees it. Build it with :func:`raisimcli.model.load_urdf`.

    `joints` are in our joint order (root first, depth-first), fixed joints included; the
    coordinates of the moving ones are laid out in that order. `bodies` lists, per rigid body, the
    names of the links merged into it (the first is the body's own link).
    """

    name: str
    path: str
    urdf_text: str
    base: str
    root_link: str
    links: tuple[Link, ...]
    joints: tuple[Joint, ...]
    bodies: tuple[tuple[str, ...], ...]
    nq: int
    nv: int
    coordinate_names: tuple[str, ...]
    dof_names: tuple[str, ...]
    actuators: tuple[Actuator, ...] = ()
    constraints: tuple[LoopConstraint, ...] = ()
    nominal_config: np.ndarray | None = None
    warnings: tuple[ModelWarning, ...] = ()
    files: tuple[str, ...] = ()  # every file read: the URDF, actuator model files, meshes

    # --- lookups -------------------------------------------------------------------------------
    def joint(self, name: str) -> Joint:
        for j in self.joints:
            if j.name == name:
                return j
        raise KeyError(name)

    def link(self, name: str) -> Link:
        for link in self.links:
            if link.name == name:
                return link
        raise KeyError(name)

    @property
    def moving_joints(self) -> tuple[Joint, ...]:
        return tuple(j for j in self.joints if j.type != "fixed")

    @property
    def total_mass(self) -> float:
        """Mass of every link but `world`, in kg."""
        return float(sum(link.inertial.mass for link in self.links
                         if link.inertial is not None and link.name != "world"))

    @property
    def moving_mass(self) -> float:
        """Mass of the links that are not welded to the world, in kg."""
        return float(sum(link.inertial.mass for link in self.links
                         if link.inertial is not None and link.body > 0))

    @property
    def is_floating(self) -> bool:
        return self.base == "floating"

    def neutral_configuration(self) -> np.ndarray:
        """q with every joint at 0 and every quaternion at identity, (nq,)."""
        q = np.zeros(self.nq)
        for j in self.joints:
            if j.type == "floating":
                q[j.q_slice.start + 3] = 1.0
            elif j.type == "spherical":
                q[j.q_slice.start] = 1.0
        return q
