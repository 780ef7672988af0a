"""World: gravity, the time step, and the articulated systems it steps."""

from __future__ import annotations

import numpy as np

from raisimcli.errors import StateError
from raisimcli.model import RobotModel, load_urdf
from raisimcli.physics.articulated_system import ArticulatedSystem


class World:
    """`dt` in s, `gravity` (3,) in m/s^2. Time lives on an integer grid: t = k dt."""

    def __init__(self, dt: float = 0.001, gravity=(0.0, 0.0, -9.81)):
        self.set_time_step(dt)
        self.gravity = np.array(gravity, dtype=float)
        self.systems: list[ArticulatedSystem] = []
        self.step_count = 0

    @property
    def time(self) -> float:
        return self.step_count * self.dt

    def set_time_step(self, dt: float) -> None:
        if not (dt > 0 and np.isfinite(dt)):
            raise StateError(f"time step must be a positive number, got {dt}")
        self.dt = float(dt)

    def set_gravity(self, gravity) -> None:
        self.gravity = np.array(gravity, dtype=float)
        for s in self.systems:
            s._gravity = self.gravity
            s._touched()

    def get_gravity(self) -> np.ndarray:
        return self.gravity.copy()

    def add_articulated_system(self, model: RobotModel | str, name: str | None = None,
                               base: str | None = None) -> ArticulatedSystem:
        """Add a robot from a RobotModel or a URDF path."""
        if not isinstance(model, RobotModel):
            model = load_urdf(model, base=base)
        system = ArticulatedSystem(model, name=name)
        system._gravity = self.gravity
        if any(s.name == system.name for s in self.systems):
            raise StateError(f"a system named {system.name!r} is already in the world")
        self.systems.append(system)
        return system

    def integrate1(self) -> None:
        for s in self.systems:
            s.integrate1(self.dt)

    def integrate2(self) -> None:
        for s in self.systems:
            s.integrate2(self.dt)
        self.step_count += 1

    def integrate(self) -> None:
        """One step: integrate1 then integrate2."""
        self.integrate1()
        self.integrate2()
