"""The per-contact solve (physics/step/contact_solver.py): its answers satisfy Coulomb's law, and
its shortcuts (the sampling stops at the first bracket, the bisection when it stops moving) give
the bits of the search written out in full."""

import math

import numpy as np
import pytest

from raisimcli.physics.arctan import atan2
from raisimcli.physics.step.contact_solver import solve_contact


def _sliding(G, v0, tn, mu, th):
    c, s = math.cos(th), math.sin(th)
    d0, d1, d2 = mu * c, mu * s, 1.0
    gn = G[2, 0] * d0 + G[2, 1] * d1 + G[2, 2] * d2
    if gn <= 1e-300:
        return -1.0, 0.0, 1.0
    ln = (tn - v0[2]) / gn
    vt0 = v0[0] + ln * (G[0, 0] * d0 + G[0, 1] * d1 + G[0, 2] * d2)
    vt1 = v0[1] + ln * (G[1, 0] * d0 + G[1, 1] * d1 + G[1, 2] * d2)
    return ln, c * vt1 - s * vt0, c * vt0 + s * vt1


def _full_search(G, v0, tn, mu):
    """The sliding search as the module describes it, every step taken: all 32 samples of the
    angle from the sticking impulse's direction (the smallest valid residual, and the first
    bracket of a sign change), then 60 bisections of the bracket. Plain Python, but for the
    direction's angle: the package's atan2, as the module takes it (raisimcli.physics.arctan,
    tested in tests/test_arctan.py)."""
    # the sticking impulse's direction, by Cramer's rule (as the module computes it)
    b0, b1, b2 = 0.0 - v0[0], 0.0 - v0[1], tn - v0[2]
    (a00, a01, a02), (a10, a11, a12), (a20, a21, a22) = G.tolist()
    c00, c01 = a11 * a22 - a12 * a21, a12 * a20 - a10 * a22
    det = a00 * c00 + a01 * c01 + a02 * (a10 * a21 - a11 * a20)
    if abs(det) < 1e-300:
        th0 = atan2(-v0[1], -v0[0])
    else:
        l0 = (c00 * b0 + (a02 * a21 - a01 * a22) * b1 + (a01 * a12 - a02 * a11) * b2) / det
        l1 = (c01 * b0 + (a00 * a22 - a02 * a20) * b1 + (a02 * a10 - a00 * a12) * b2) / det
        th0 = atan2(l1, l0)
    best_th, best_r, found = th0, 1e300, False
    prev_th = th0 - math.pi
    ln_p, r_p, dot_p = _sliding(G, v0, tn, mu, prev_th)
    for k in range(1, 33):
        th = th0 - math.pi + 2.0 * math.pi * k / 32
        ln_k, r_k, dot_k = _sliding(G, v0, tn, mu, th)
        if ln_k >= 0.0 and dot_k <= 0.0 and abs(r_k) < best_r:
            best_r, best_th = abs(r_k), th
        if (r_p <= 0.0) != (r_k <= 0.0) and ln_p >= 0.0 and ln_k >= 0.0 and \
                (dot_p <= 0.0 or dot_k <= 0.0) and not found:
            lo_th, hi_th, found = prev_th, th, True
        prev_th, ln_p, r_p, dot_p = th, ln_k, r_k, dot_k
    th = best_th
    if found:
        _, r_lo, _ = _sliding(G, v0, tn, mu, lo_th)
        for _ in range(60):
            mid = 0.5 * (lo_th + hi_th)
            _, r_m, _ = _sliding(G, v0, tn, mu, mid)
            if (r_m <= 0.0) == (r_lo <= 0.0):
                lo_th, r_lo = mid, r_m
            else:
                hi_th = mid
        th = 0.5 * (lo_th + hi_th)
    ln = max(_sliding(G, v0, tn, mu, th)[0], 0.0)
    return np.array([ln * mu * math.cos(th), ln * mu * math.sin(th), ln])


def _cases(n, seed=0, coupled=True):
    """Random Delassus blocks and approach velocities steep enough along the tangent to slide.
    `coupled`: any symmetric positive definite block (A A^T + 0.05 I); else blocks whose
    couplings are at most 0.3 of their diagonal, as a foot's on a heavier body."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        if coupled:
            A = rng.normal(size=(3, 3))
            G = A @ A.T + 0.05 * np.eye(3)
        else:
            d = rng.uniform(0.5, 2.0, 3)
            C = rng.uniform(-0.3, 0.3, (3, 3))
            G = (C + C.T) / 2 * np.sqrt(np.outer(d, d))
            np.fill_diagonal(G, d)
        v0 = np.array([rng.normal(scale=2.0), rng.normal(scale=2.0), -abs(rng.normal())])
        yield G, v0, float(rng.uniform(0.0, 0.05)), float(rng.uniform(0.1, 1.2))


def test_sliding_answers_are_the_full_search_s_bits():
    lam, sliding = np.empty(3), 0
    for G, v0, tn, mu in _cases(400):
        solve_contact(G, v0, tn, mu, lam)
        if abs(math.hypot(lam[0], lam[1]) - mu * lam[2]) <= 1e-12 * lam[2] and lam[2] > 0:
            sliding += 1
            assert lam.tobytes() == _full_search(G, v0, tn, mu).tobytes(), (G, v0, mu)
    assert sliding > 100  # (most of the cases slide: the test is about them)


@pytest.mark.parametrize("seed", [1, 2])
def test_every_answer_satisfies_coulomb_s_law(seed):
    """Independently of how it was found: the impulse is in the cone; a separating contact
    carries none; a sticking one leaves v = (0, 0, t_n); a sliding one meets t_n along the normal,
    lies on the cone's surface, and its tangential velocity opposes its tangential impulse. (On
    blocks of strong couplings, about 1 in 120 sliding answers of random ones misses the last:
    when the 32 samples find no bracket, the search takes its best sample.)"""
    lam = np.empty(3)
    for G, v0, tn, mu in _cases(300, seed, coupled=False):
        solve_contact(G, v0, tn, mu, lam)
        v = v0 + G @ lam
        lt = math.hypot(lam[0], lam[1])
        assert lam[2] >= 0.0 and lt <= mu * lam[2] * (1 + 1e-12) + 1e-15
        if lam[2] == 0.0:
            assert v0[2] >= tn
            continue
        assert v[2] == pytest.approx(tn, abs=1e-12)
        vt = math.hypot(v[0], v[1])
        if lt < mu * lam[2] * (1 - 1e-9):  # inside the cone: sticking
            assert vt <= 1e-12
        else:  # on its surface: sliding against the impulse (or at rest on the edge)
            assert vt <= 1e-12 or (v[0] * lam[0] + v[1] * lam[1]) / (vt * lt) \
                == pytest.approx(-1.0, abs=1e-9)
