"""Stepping a package World and the reference side by side: the reference's inputs read from the
world before each step, its result compared with the world's after it, at a tolerance."""

from __future__ import annotations

import numpy as np

from reference import step as ref

# per step, relative to the largest entry of the compared vector (at least 1)
TOLERANCE = 1e-10
# the torque rows that carry impulses (and their total): an impulse divided by dt, whose
# direction on a friction cone a root search finds with the conditioning of the contact's
# tangential speed (a box that starts to slide)
IMPULSE_TOLERANCE = 1e-9


def close(actual, expected, what: str, scale: float | None = None,
          tolerance: float = TOLERANCE) -> None:
    """|actual - expected| <= tolerance * max(1, scale), with `scale` the largest |expected| when
    not given."""
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if actual.size == 0:
        return
    if scale is None:
        scale = float(np.max(np.abs(expected)))
    bound = tolerance * max(1.0, scale)
    err = np.abs(actual - expected)
    i = int(np.argmax(err))
    assert err.flat[i] <= bound, (f"{what}: entry {i}: {actual.flat[i]!r} vs the reference's "
                                  f"{expected.flat[i]!r} (|diff| {err.flat[i]:.3e} > {bound:.3e})")


def contacts_of(world) -> list:
    """The world's contacts of its last step (detected at its start) as the reference takes them."""
    index = {id(s): k for k, s in enumerate(world.systems)}
    out = []
    cs = world.contacts
    for c, (sa, ba, _, sb, bb, _) in enumerate(cs.meta):
        out.append((index[id(sa)], int(ba), None if sb is None else index[id(sb)],
                    int(bb) if sb is not None else 0, np.array(cs.points[c]),
                    np.array(cs.frames[c]), float(cs.distance[c]), np.array(cs.params[c])))
    return out


APPLIED = ("feedforward_pd", "damping", "actuators", "springs", "external")
IMPULSES = ("joint_friction", "joint_limits", "contacts", "constraints")


class SideBySide:
    """A World and the reference's robots for its systems. The world's solver is set to a
    tolerance of 1e-14 and a cap of 10,000 sweeps, so that its impulses are the converged ones to
    well below the comparison's tolerance (an impulse's uncertainty is divided by dt in its
    torque row): the tolerance is a setting of the solver, not of the step's semantics. With
    `every_step` False, only for the steps compared (from `inputs` to `check`), the others keeping
    the systems' own settings: cheaper where the solver would hit its cap at every step, but a
    solve from a loose warm start may then not reach 1e-14 (a standing quadruped)."""

    def __init__(self, world, every_step: bool = True):
        self.world = world
        self.robots = [ref.Robot(s.model) for s in world.systems]
        self.own = None if every_step else [(s.solver_tolerance, s.solver_max_iterations)
                                            for s in world.systems]
        if every_step:
            for s in world.systems:
                s.solver_tolerance, s.solver_max_iterations = 1e-14, 10000

    def inputs(self) -> list:
        """The reference's inputs of the next step, read from the world; its solver set tight
        for the step."""
        for s in self.world.systems:
            s.solver_tolerance, s.solver_max_iterations = 1e-14, 10000
        return [ref.inputs_of(s) for s in self.world.systems]

    def check(self, inputs: list, what: str) -> bool:
        """Compare the world's last step, taken from `inputs`, with the reference's step from
        them. Returns False (nothing compared) when a system's solver stopped at its sweep cap:
        its impulses are then the last sweep's, not the solution the reference converges to; or
        when the reference's solver, started from the world's impulses, stops at its own cap (a
        problem so badly conditioned that neither answer is known to the tolerance)."""
        w = self.world
        capped = any(s.solver_iterations >= s.solver_max_iterations for s in w.systems)
        for s, (tolerance, cap) in zip(w.systems, self.own or ()):
            s.solver_tolerance, s.solver_max_iterations = tolerance, cap
        if capped:
            return False
        contacts = contacts_of(w)
        # (the reference's solver starts from the world's contact impulses: see ref.step)
        start = np.array(w.contacts.impulse) if contacts else None
        try:
            r = ref.step(self.robots, inputs, w.dt, w.gravity, contacts, start)
        except ref.NotConverged:
            return False
        for s, x, res in zip(w.systems, inputs, r.systems):
            where = f"{what}: {s.name} ({res.scheme})"
            close(s.u, res.u, f"{where}: u")
            close(s.q, res.q, f"{where}: q")
            # the torque rows relative to the step's largest torque: an impulse that the
            # solver's tolerance leaves uncertain is divided by dt in its row
            scale = max(float(np.max(np.abs(t), initial=0.0)) for t in res.torque.values())
            for source in ref.SOURCES + ("total",):
                if r.unique_impulses or source not in IMPULSES:
                    close(s.torque[source], res.torque[source], f"{where}: torque[{source}]",
                          scale, TOLERANCE if source in APPLIED else IMPULSE_TOLERANCE)
            if not r.unique_impulses:  # only the impulses' sum is unique
                close(sum(s.torque[k] for k in IMPULSES), sum(res.torque[k] for k in IMPULSES),
                      f"{where}: the impulses' torque", scale, IMPULSE_TOLERANCE)
        if contacts and r.unique_impulses:
            close(np.array(w.contacts.impulse), r.contact_impulses, f"{what}: contact impulses")
        return True
