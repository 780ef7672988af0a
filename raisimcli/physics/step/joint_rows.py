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

from raisimcli.jit import kernel
from raisimcli.physics.step.solver import Rows

# each joint's state in a step: which of its rows act (see _states)
FREE, BELOW, ABOVE, FAST_UP, FAST_DOWN = 0, 1, 2, 3, 4
_CACHE_SIZE = 64  # row structures kept (joints that hit their limits switch between a few)


@kernel
def _states(q, u_star, qidx, idx, lower, upper, vmax, out):
    """Each joint's state into out (FREE, BELOW, ABOVE, FAST_UP, FAST_DOWN): outside its range
    (below or above), else faster than its velocity limit (up or down), else free."""
    for k in range(idx.shape[0]):
        qj = q[qidx[k]]
        uj = u_star[idx[k]]
        if qj < lower[k]:
            out[k] = BELOW
        elif qj > upper[k]:
            out[k] = ABOVE
        elif abs(uj) > vmax[k]:
            out[k] = FAST_UP if uj > 0 else FAST_DOWN
        else:
            out[k] = FREE


class JointRowTable:
    """Per-joint parameters as index arrays, built once at load time. `idx`: (k,) u-indices of the
    1-DoF joints; `lower`, `upper`, `vmax`, `friction`: (k,) each. A row's key (its identity for
    the next step's warm start) is (system name, kind, joint): it names the robot, because two
    robots of one URDF have joints of the same names. The arrays are never written after
    loading: the steps keep copies of them (step/explicit.py's StageScratch,
    step/quick.py's QuickScratch); whatever changes them must call the system's `invalidate()`,
    which drops those copies."""

    def __init__(self, model, output_friction: np.ndarray, system_name: str):
        one = [j for j in model.moving_joints if j.nv == 1]
        self.system_name = system_name
        self.nv = model.nv
        self.names = [j.name for j in one]
        self.idx = np.array([j.u_slice.start for j in one], dtype=np.int64)
        self.qidx = np.array([j.q_slice.start for j in one], dtype=np.int64)
        self.lower = np.array([j.lower if j.has_position_limits else -np.inf for j in one])
        self.upper = np.array([j.upper if j.has_position_limits else np.inf for j in one])
        self.vmax = np.array([j.velocity for j in one], dtype=np.float64)
        self.joint_friction = np.array([j.friction for j in one])
        self.output_friction = output_friction[self.idx] if len(one) else np.zeros(0)
        # each joint's state in the step (_states writes it, rows_of_states reads it)
        self.states = np.zeros(len(one), dtype=np.int8)
        # Rows by (dt, every joint's state): the rows depend on nothing else, and the solver
        # and the torque table only read them
        self._built: dict[tuple, Rows] = {}

    def rows(self, q: np.ndarray, u_star: np.ndarray, dt: float) -> Rows:
        """The rows that act in this step, at the coordinates q_t and the free velocity u*."""
        if self.idx.size == 0:
            return Rows.empty(self.nv)
        _states(q, u_star, self.qidx, self.idx, self.lower, self.upper, self.vmax, self.states)
        return self.rows_of_states(dt)

    def rows_of_states(self, dt: float) -> Rows:
        """The rows of the joints' states that _states has just written into self.states."""
        if self.idx.size == 0:
            return Rows.empty(self.nv)
        state = self.states
        key = (dt, state.tobytes())
        rows = self._built.get(key)
        if rows is None:
            if len(self._built) >= _CACHE_SIZE:
                self._built.clear()
            below = state == BELOW
            at_limit = below | (state == ABOVE)
            fast = (state == FAST_UP) | (state == FAST_DOWN)
            rows = self._build(at_limit, fast, below, state == FAST_UP,
                               self.joint_friction + self.output_friction, dt)
            self._built[key] = rows
        return rows

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
        key = [(self.system_name, kind, self.names[k]) for kind, k in zip(kinds, sel.tolist())]
        return Rows(J, target, lo, hi, source, key)
