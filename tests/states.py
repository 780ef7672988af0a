"""Random states for tests."""

import numpy as np


def random_state(model, rng, speed=1.0):
    q = np.zeros(model.nq)
    for j in model.moving_joints:
        s = j.q_slice
        if j.type == "floating":
            q[s.start:s.start + 3] = rng.uniform(-1, 1, 3)
            quat = rng.normal(size=4)
            q[s.start + 3:s.stop] = quat / np.linalg.norm(quat)
        elif j.type == "spherical":
            quat = rng.normal(size=4)
            q[s] = quat / np.linalg.norm(quat)
        else:
            lo = j.lower if np.isfinite(j.lower) else -np.pi
            hi = j.upper if np.isfinite(j.upper) else np.pi
            q[s] = rng.uniform(lo, hi)
    u = speed * rng.normal(size=model.nv)
    return q, u
