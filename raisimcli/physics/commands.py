"""A system's commands and joint terms, end to end in one array.

What a step reads of a system besides its state and model, per DoF or coordinate (spec
Integration Steps 1-3): the PD gains, the targets, the feedforward force, the actuation limits,
the joint damping, the springs' stiffness and rest coordinates, the actuator torques. Each is a
named attribute of the ArticulatedSystem (`s.kp`, `s.q_ref`, ...), and each is a view of one
float64 array, `s.commands`, in the order of COMMANDS. The compiled step takes that one array
instead of eleven: numba unboxes every array argument of a call, and the eleven attribute
reads cost as much again.

Assigning such an attribute copies the values into its view (`s.kp = gains` leaves `gains`
the caller's own); an array of another shape is refused. Writing into a view in place
(`s.q_ref[3] = 0.2`, as the scenario runner's schedules do between steps) is a command like any
other. Nothing keeps a view past a step expecting it unchanged: the step reads the commands when
it runs, and integrate1 computes nothing that a command written before integrate2 would leave
stale (ArticulatedSystem.integrate1).
"""

from __future__ import annotations

from operator import attrgetter

import numpy as np

from raisimcli.errors import StateError

# (name, size): the views of `commands` in order; sizes by "nv" (DoFs), "nq" (coordinates) or
# "na" (actuators). The last one, zeros never written, is the gains outside PD mode.
COMMANDS = (("kp", "nv"), ("kd", "nv"), ("q_ref", "nq"), ("u_ref", "nv"), ("tau_ff", "nv"),
            ("tau_lower", "nv"), ("tau_upper", "nv"), ("b_joint", "nv"), ("k_s", "nv"),
            ("spring_rest", "nq"), ("tau_a", "na"), ("zero_gains", "nv"))


def command_layout(nq: int, nv: int, n_act: int) -> dict[str, tuple[int, int]]:
    """Each view's (start, stop) in `commands`, and "size": the whole array's."""
    size_of = {"nv": nv, "nq": nq, "na": n_act}
    layout, a = {}, 0
    for name, size in COMMANDS:
        layout[name] = (a, a + size_of[size])
        a += size_of[size]
    layout["size"] = (0, a)
    return layout


def command_views(commands: np.ndarray, layout: dict) -> dict[str, np.ndarray]:
    """The named views of `commands`."""
    return {name: commands[layout[name][0]:layout[name][1]] for name, _ in COMMANDS}


def command(name: str, doc: str) -> property:
    """The ArticulatedSystem's attribute `name`: reads give the view (`_cmd_<name>`), an
    assignment copies into it (same shape, finite or not: the setters check the values)."""
    view = "_cmd_" + name

    def assign(self, value) -> None:
        target = getattr(self, view)
        a = np.asarray(value, dtype=float)
        if a.shape != target.shape:
            raise StateError(f"{self.name}: {name} must have the shape {target.shape}, got "
                             f"{a.shape}")
        target[...] = a

    return property(attrgetter(view), assign, doc=doc)
