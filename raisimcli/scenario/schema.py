"""The scenario file (TOML), validated with pydantic models that forbid unknown keys.

See docs/scenario.md for every key. Shapes that need the robot (vector sizes, joint names) are
checked after loading the URDF, in :mod:`raisimcli.scenario.loader`, with the same key paths.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SCHEMES = Literal["SEMI_IMPLICIT", "TRAPEZOID", "EULER", "RUNGE_KUTTA_4"]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
Vector3 = Annotated[list[FiniteFloat], Field(min_length=3, max_length=3)]


class Strict(BaseModel):
    """Unknown keys are errors, and so are values of the wrong type: no "0.001" for a number, no
    true for a gain, no 1 for a flag (an integer is taken where a number is expected)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# --- schedules: a value as a function of time ---------------------------------------------------
class Constant(Strict):
    type: Literal["constant"]
    value: FiniteFloat


class Step(Strict):
    """`before` until `time`, then `after`."""
    type: Literal["step"]
    time: FiniteFloat
    before: FiniteFloat = 0.0
    after: FiniteFloat


class Ramp(Strict):
    """`start_value` until `start`, linear to `stop_value` at `stop`, then held."""
    type: Literal["ramp"]
    start: FiniteFloat
    stop: FiniteFloat
    start_value: FiniteFloat = 0.0
    stop_value: FiniteFloat

    @model_validator(mode="after")
    def _order(self):
        if not self.stop > self.start:
            raise ValueError(f"stop ({self.stop}) must be after start ({self.start})")
        return self


class Sine(Strict):
    """offset + amplitude sin(2 pi frequency t + phase)."""
    type: Literal["sine"]
    amplitude: FiniteFloat
    frequency: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    phase: FiniteFloat = 0.0
    offset: FiniteFloat = 0.0


class Piecewise(Strict):
    """Linear between the points, held before the first and after the last."""
    type: Literal["piecewise"]
    times: list[FiniteFloat] = Field(min_length=1)
    values: list[FiniteFloat] = Field(min_length=1)

    @model_validator(mode="after")
    def _shape(self):
        if len(self.times) != len(self.values):
            raise ValueError(f"times and values must have the same length, got "
                             f"{len(self.times)} and {len(self.values)}")
        if any(b <= a for a, b in zip(self.times, self.times[1:])):
            raise ValueError("times must be strictly increasing")
        return self


class Csv(Strict):
    """A column of a CSV file (path relative to the scenario), linear in time."""
    type: Literal["csv"]
    file: str
    column: str
    time_column: str = "time"


Schedule = Union[FiniteFloat, Annotated[Union[Constant, Step, Ramp, Sine, Piecewise, Csv],
                                        Field(discriminator="type")]]
# a per-DoF quantity: one number for every DoF, a list (nv), or a table by joint name
PerJoint = Union[FiniteFloat, list[FiniteFloat], dict[str, FiniteFloat]]
# a per-joint schedule: a table by joint (or actuator) name
PerJointSchedule = dict[str, Schedule]


# --- sections ---------------------------------------------------------------------------------
class Ground(Strict):
    height: FiniteFloat = 0.0
    material: str = "default"


class StaticBox(Strict):
    name: str
    size: Annotated[list[Annotated[float, Field(gt=0, allow_inf_nan=False)]],
                    Field(min_length=3, max_length=3)]
    position: Vector3 = [0.0, 0.0, 0.0]
    rpy: Vector3 = [0.0, 0.0, 0.0]
    material: str = "default"


class MaterialPairSpec(Strict):
    materials: Annotated[list[str], Field(min_length=2, max_length=2)]
    friction: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    restitution: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.0
    restitution_threshold: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.01


class DefaultMaterial(Strict):
    friction: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.8
    restitution: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.0
    restitution_threshold: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.01


class ContactSolver(Strict):
    max_iterations: Annotated[int, Field(ge=1)] = 200
    tolerance: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 1e-12
    margin: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.005
    erp: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.2
    slop: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 1e-5


class World(Strict):
    dt: Annotated[float, Field(gt=0, le=1.0, allow_inf_nan=False)] = 0.001
    duration: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    steps: Annotated[int, Field(gt=0)] | None = None
    gravity: Vector3 = [0.0, 0.0, -9.81]
    integration_scheme: SCHEMES = "SEMI_IMPLICIT"
    erp: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 1.5
    ground: Ground | None = None
    box: list[StaticBox] = []
    default_material: DefaultMaterial = DefaultMaterial()
    material_pair: list[MaterialPairSpec] = []
    contact_solver: ContactSolver = ContactSolver()

    @model_validator(mode="after")
    def _length(self):
        if self.duration is None and self.steps is None:
            raise ValueError("give the length of the run: duration (s) or steps")
        if self.duration is not None and self.steps is not None:
            raise ValueError("give either duration or steps, not both")
        return self


class Initial(Strict):
    q: Union[list[FiniteFloat], dict[str, FiniteFloat]] | None = None
    u: Union[list[FiniteFloat], dict[str, FiniteFloat]] | None = None


class PD(Strict):
    kp: PerJoint = 0.0
    kd: PerJoint = 0.0
    target: PerJointSchedule = {}
    velocity_target: PerJointSchedule = {}


class Actuators(Strict):
    torque: PerJointSchedule = {}            # by actuator name, joint-side N m
    bus_voltage: Union[FiniteFloat, dict[str, FiniteFloat]] | None = None
    operating_region: bool = True


class Load(Strict):
    """A force or torque in the world frame on `link` (at `point` in the link frame; default the
    body's COM) from `start` to `stop` (s)."""
    link: str
    force: Vector3 | None = None
    torque: Vector3 | None = None
    point: Vector3 | None = None
    start: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0
    stop: Annotated[float, Field(allow_inf_nan=False)] | None = None

    @model_validator(mode="after")
    def _check(self):
        if (self.force is None) == (self.torque is None):
            raise ValueError("give exactly one of force and torque")
        if self.torque is not None and self.point is not None:
            raise ValueError("a torque takes no point")
        if self.stop is not None and self.stop <= self.start:
            raise ValueError(f"stop ({self.stop}) must be after start ({self.start})")
        return self


class SpringSpec(Strict):
    joint: str
    stiffness: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    rest: Union[FiniteFloat, list[FiniteFloat]]


class Robot(Strict):
    name: str | None = None
    urdf: str
    xacro_args: dict[str, str] = {}  # arguments of a .xacro urdf (name -> value)
    base: Literal["fixed", "floating"] | None = None
    integration_scheme: SCHEMES | None = None
    control_mode: Literal["FORCE_AND_TORQUE", "PD_PLUS_FEEDFORWARD_TORQUE"] | None = None
    controller: str | None = None
    initial: Initial = Initial()
    pd: PD | None = None
    feedforward: PerJointSchedule = {}
    actuators: Actuators = Actuators()
    external: list[Load] = []
    spring: list[SpringSpec] = []
    damping: dict[str, Annotated[float, Field(ge=0, allow_inf_nan=False)]] = {}
    inverse_dynamics: bool = False  # compute and log the joint wrenches every step
    materials: dict[str, str] = {}     # link name (or "*") -> material
    self_collision: bool = False
    self_collision_exclude: list[Annotated[list[str], Field(min_length=2, max_length=2)]] = []

    @field_validator("controller")
    @classmethod
    def _controller(cls, v):
        if v is not None and (":" not in v or not v.rsplit(":", 1)[1]):
            raise ValueError(f"expected 'file.py:function', got {v!r}")
        return v


SIGNALS = ("state", "energy", "torque", "generalized_force", "actuators", "solver", "contacts",
           "constraints")


class Log(Strict):
    path: str | None = None
    signals: list[Literal["state", "energy", "torque", "generalized_force", "actuators",
                          "solver", "contacts", "constraints"]] = list(SIGNALS)
    decimation: Annotated[int, Field(ge=1)] = 1
    compression: Literal["gzip", "lzf", "none"] = "gzip"


class Scenario(Strict):
    schema_version: Literal[1] = 1
    seed: int = 0
    description: str = ""
    world: World
    robot: list[Robot] = Field(min_length=1)
    log: Log = Log()
