"""Simulation: the World and its ArticulatedSystems (RaiSim's API in snake_case)."""

from raisimcli.physics.articulated_system import (
    FORCE_AND_TORQUE,
    PD_PLUS_FEEDFORWARD_TORQUE,
    SCHEMES,
    ArticulatedSystem,
    PointLoad,
    Spring,
)
from raisimcli.physics.world import World

__all__ = ["World", "ArticulatedSystem", "PointLoad", "Spring", "FORCE_AND_TORQUE",
           "PD_PLUS_FEEDFORWARD_TORQUE", "SCHEMES"]
