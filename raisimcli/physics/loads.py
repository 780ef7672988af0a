"""A force or torque that acts on one step: the external loads a user sets and the contact and
constraint forces that inverse dynamics takes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PointLoad:
    """A force or torque on one step: `vector` (3,) in the world frame (N, or N m when
    `is_torque`) on `link`'s rigid body, acting at `point` given in the link's frame, at
    `world_point` given in the world frame (contact and constraint forces), or at the body's COM
    when both are None. External forces set with set_external_force are these; inverse dynamics
    takes them with the step's contact forces (ContactLoads)."""

    link: str
    vector: np.ndarray          # world frame, N or N m
    point: np.ndarray | None    # in the link frame; None: the COM of the link's body
    is_torque: bool = False
    world_point: np.ndarray | None = None  # a world point instead (contact forces)
