"""URDF -> frozen :class:`RobotModel` (and its Pinocchio model)."""

from raisimcli.model.pinocchio_model import PinocchioModel, build_pinocchio_model
from raisimcli.model.types import (
    Actuator,
    Geometry,
    Inertial,
    Joint,
    Link,
    LoopConstraint,
    Mimic,
    ModelWarning,
    Motor,
    RobotModel,
)
from raisimcli.model.urdf import load_urdf, load_urdf_string

__all__ = [
    "Actuator", "Geometry", "Inertial", "Joint", "Link", "LoopConstraint", "Mimic", "ModelWarning", "Motor",
    "PinocchioModel", "RobotModel", "build_pinocchio_model", "load_urdf", "load_urdf_string",
]
