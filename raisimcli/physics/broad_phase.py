"""The broad phase: which pairs of shapes may touch (sweep and prune over bounding boxes), and
whether robots' bounding boxes are apart (then no robot touches another).
"""

from __future__ import annotations

import numpy as np

from raisimcli.jit import kernel


@kernel
def _robot_bounds(poses, radii, margin, bounds, row):
    """Into bounds[row] (lo xyz, hi xyz): the box that holds the boxes sweep_and_prune gives a
    robot's shapes (centre -+ (radius + margin), the same operations); an empty box (lo +inf,
    hi -inf) without shapes. No shape of a robot is a pair with one of a robot whose box its
    box does not meet."""
    for a in range(3):
        bounds[row, a] = np.inf
        bounds[row, 3 + a] = -np.inf
    for k in range(radii.shape[0]):
        grown = radii[k] + margin
        for a in range(3):
            lo = poses[k, a, 3] - grown
            hi = poses[k, a, 3] + grown
            if lo < bounds[row, a]:
                bounds[row, a] = lo
            if hi > bounds[row, 3 + a]:
                bounds[row, 3 + a] = hi


@kernel
def boxes_apart(bounds) -> bool:
    """Whether no two of the boxes (k, 6) (lo xyz, hi xyz) meet (closed intervals: the test of
    sweep_and_prune)."""
    for i in range(bounds.shape[0]):
        for j in range(i + 1, bounds.shape[0]):
            if bounds[i, 0] <= bounds[j, 3] and bounds[j, 0] <= bounds[i, 3] and \
                    bounds[i, 1] <= bounds[j, 4] and bounds[j, 1] <= bounds[i, 4] and \
                    bounds[i, 2] <= bounds[j, 5] and bounds[j, 2] <= bounds[i, 5]:
                return False
    return True


def sweep_and_prune(centers: np.ndarray, radii: np.ndarray, margin: float,
                    group: np.ndarray | None = None,
                    self_pairs: np.ndarray | None = None) -> np.ndarray:
    """Pairs (i, j), i < j, (m, 2), whose bounding boxes (spheres grown by `margin`) overlap:
    sorted along x, each box is tested only against those whose x-interval it meets, then on y
    and z, in one compiled loop. With `group` (n,): a pair of the same group g is left out
    unless g >= 0 and self_pairs[g] (shapes of one robot: only with its self-collision; group
    -1: static shapes, never against each other)."""
    n = len(radii)
    if group is None:
        group, self_pairs = np.zeros(n, dtype=np.int64), np.ones(1, dtype=np.bool_)
    if n < 2:
        return np.zeros((0, 2), dtype=np.int64)
    lo = centers - (radii + margin)[:, None]
    hi = centers + (radii + margin)[:, None]
    order = np.argsort(lo[:, 0], kind="stable")
    # room for a few pairs a shape (not n^2 / 2: 50 robots' 650 shapes would be 3.4 MB a step);
    # a sweep that finds more is made again with room for all
    room = min(n * (n - 1) // 2, 8 * n + 64)
    out, active = np.empty((room, 2), dtype=np.int64), np.empty(n, dtype=np.int64)
    m = _sweep(lo, hi, order, group, self_pairs, active, out)
    if m > room:
        out = np.empty((m, 2), dtype=np.int64)
        _sweep(lo, hi, order, group, self_pairs, active, out)
    return out[:m]


@kernel
def _sweep(lo, hi, order, group, self_pairs, active, out):
    """sweep_and_prune's loop over the boxes [lo, hi] in the order `order`; `active`: scratch.
    Returns the number of pairs found; the first out.shape[0] of them are written to out."""
    n_active = 0
    count = 0
    for t in range(order.shape[0]):
        i = order[t]
        x = lo[i, 0]
        kept = 0  # the active boxes whose x-interval reaches x, in their order
        for a in range(n_active):
            j = active[a]
            if hi[j, 0] >= x:
                active[kept] = j
                kept += 1
        n_active = kept
        for a in range(n_active):
            j = active[a]
            if lo[i, 1] <= hi[j, 1] and lo[j, 1] <= hi[i, 1] and \
                    lo[i, 2] <= hi[j, 2] and lo[j, 2] <= hi[i, 2]:
                g = group[i]
                if g == group[j] and (g < 0 or not self_pairs[g]):
                    continue
                if count < out.shape[0]:
                    out[count, 0], out[count, 1] = min(i, j), max(i, j)
                count += 1
        active[n_active] = i
        n_active += 1
    return count
