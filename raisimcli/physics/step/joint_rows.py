"""Which joint rows act in a step (spec step 4, last paragraph; DESIGN.md §4.3).

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
        sel_idx, target, lo, hi, src, key = [], [], [], [], [], []
        for k in np.flatnonzero(at_limit):
            sel_idx.append(self.idx[k]); target.append(0.0); src.append("joint_limits")
            lo.append(0.0 if below[k] else -np.inf); hi.append(np.inf if below[k] else 0.0)
            key.append(("position_limit", self.names[k]))
        for k in np.flatnonzero(fast):
            up = uj[k] > 0
            sel_idx.append(self.idx[k]); src.append("joint_limits")
            target.append(self.vmax[k] if up else -self.vmax[k])
            lo.append(-np.inf if up else 0.0); hi.append(0.0 if up else np.inf)
            key.append(("velocity_limit", self.names[k]))
        for k in np.flatnonzero(fric > 0):
            bound = fric[k] * dt
            sel_idx.append(self.idx[k]); target.append(0.0); src.append("joint_friction")
            lo.append(-bound); hi.append(bound)
            key.append(("friction", self.names[k]))
        m = len(sel_idx)
        J = np.zeros((m, self.nv))
        J[np.arange(m), sel_idx] = 1.0
        return Rows(J, np.array(target), np.array(lo), np.array(hi), src, key)
