"""Which joint rows act in a step (spec step 4, last paragraph; docs/physics.md).

- A position-limit impulse acts on a joint outside its range (a hard stop, restitution 0: it may
  stop the joint, never push it back).
- A velocity-limit impulse acts on a joint whose entry of u* exceeds its velocity limit, unless a
  position-limit impulse acts on that joint.
- A joint-friction impulse acts on every revolute or prismatic joint with friction, bounded by
  (tau_c,joint + tau_c,out) dt: it stops the joint if the bound allows it.
"""

from __future__ import annotations

import numpy as np

from raisimcli.physics.step.solver import Rows


class JointRowTable:
    """Per-joint parameters as index arrays, built once at load time. `idx`: (k,) u-indices of the
    1-DoF joints; `lower`, `upper`, `vmax`, `friction`: (k,) each."""

    def __init__(self, model, output_friction: np.ndarray):
        one = [j for j in model.moving_joints if j.nv == 1]
        self.nv = model.nv
        self.names = [j.name for j in one]
        self.idx = np.array([j.u_slice.start for j in one], dtype=int)
        self.qidx = np.array([j.q_slice.start for j in one], dtype=int)
        self.lower = np.array([j.lower if j.has_position_limits else -np.inf for j in one])
        self.upper = np.array([j.upper if j.has_position_limits else np.inf for j in one])
        self.vmax = np.array([j.velocity for j in one])
        self.joint_friction = np.array([j.friction for j in one])
        self.output_friction = output_friction[self.idx] if len(one) else np.zeros(0)
        self._friction_rows: tuple | None = None  # (dt, Rows): the same every step at one dt

    def rows(self, q: np.ndarray, u_star: np.ndarray, dt: float) -> Rows:
        """The rows that act in this step, at the coordinates q_t and the free velocity u*."""
        if self.idx.size == 0:
            return Rows.empty(self.nv)
        qj = q[self.qidx]
        uj = u_star[self.idx]
        below = qj < self.lower
        above = qj > self.upper
        at_limit = below | above
        fast = ~at_limit & (np.abs(uj) > self.vmax)
        fric = self.joint_friction + self.output_friction
        if not at_limit.any() and not fast.any():  # the common case: friction rows only
            if self._friction_rows is None or self._friction_rows[0] != dt:
                self._friction_rows = (dt, self._build(at_limit, fast, below, uj > 0, fric, dt))
            return self._friction_rows[1]
        return self._build(at_limit, fast, below, uj > 0, fric, dt)

    def _build(self, at_limit, fast, below, up, fric, dt) -> Rows:
        has_fric = fric > 0
        # position limits, then velocity limits, then friction (each a boolean selection)
        sel = np.concatenate([np.flatnonzero(at_limit), np.flatnonzero(fast),
                              np.flatnonzero(has_fric)])
        n_lim, n_vel = int(at_limit.sum()), int(fast.sum())
        b_lim, u_vel = below[at_limit], up[fast]
        bound = fric[has_fric] * dt
        inf = np.inf
        target = np.concatenate([np.zeros(n_lim), np.where(u_vel, 1.0, -1.0) * self.vmax[fast],
                                 np.zeros(bound.size)])
        lo = np.concatenate([np.where(b_lim, 0.0, -inf), np.where(u_vel, -inf, 0.0), -bound])
        hi = np.concatenate([np.where(b_lim, inf, 0.0), np.where(u_vel, 0.0, inf), bound])
        m = sel.size
        J = np.zeros((m, self.nv))
        J[np.arange(m), self.idx[sel]] = 1.0
        source = ["joint_limits"] * (n_lim + n_vel) + ["joint_friction"] * bound.size
        kinds = ["position_limit"] * n_lim + ["velocity_limit"] * n_vel + \
            ["friction"] * bound.size
        key = [(kind, self.names[k]) for kind, k in zip(kinds, sel.tolist())]
        return Rows(J, target, lo, hi, source, key)
