"""The per-contact exact solve of a Coulomb contact (Hwangbo, Lee, Hutter, "Per-contact iteration
method for solving contact dynamics", RA-L 2018), and the block Gauss-Seidel that iterates it with
the scalar rows of :mod:`raisimcli.physics.step.solver`.

A contact block has three rows in its contact frame, [t1, t2, n]. Given the other impulses, its
velocity is v = v0 + G lambda with G the 3x3 Delassus block. Its impulse lies in the friction cone
K = {lambda_n >= 0, |lambda_t| <= mu lambda_n}, and with the target normal velocity t_n:

- separating: lambda = 0 when v0_n >= t_n;
- sticking: v = (0, 0, t_n), lambda = G^-1 (target - v0), when that lambda is in K;
- sliding: lambda on the cone's surface, lambda = lambda_n (mu cos th, mu sin th, 1), with v_n = t_n
  and the tangential velocity opposite the tangential impulse (maximal dissipation); th is found by
  a bracketing search and bisection on the angle.
"""

from __future__ import annotations

import math

from raisimcli.jit import kernel
from raisimcli.physics.arctan import atan2

SCALAR = 0
CONTACT = 1

# A row along which the mechanism cannot move gets no impulse: its diagonal entry of the Delassus
# matrix G (for a contact, its normal's) at most IMMOBILE times G's largest diagonal entry, i.e.
# its Jacobian row below 1e-10 of the largest one in the metric of M~^-1. Such a row is zero in
# exact arithmetic, and what rounding leaves of it is no mobility: a cylinder that turns about
# its own horizontal axis and dips into the ground under it (Z1's second link) cannot lift its
# lowest points, whose normal entry came out as 0 at one step and 1e-39 of the largest at the
# next, where the impulse meeting the target was 1e21 N s. A row that moves, however little
# (1e-12 of the largest entry at a joint's singular pose), is solved as any other.
IMMOBILE = 1e-20


@kernel
def _solve3(G, b0, b1, b2):
    """(x0, x1, x2, invertible): x = G^-1 b for a 3x3 matrix (Cramer). Scalars in and out: no
    array is made inside (each would cost numba compile time)."""
    a00, a01, a02 = G[0, 0], G[0, 1], G[0, 2]
    a10, a11, a12 = G[1, 0], G[1, 1], G[1, 2]
    a20, a21, a22 = G[2, 0], G[2, 1], G[2, 2]
    c00 = a11 * a22 - a12 * a21
    c01 = a12 * a20 - a10 * a22
    c02 = a10 * a21 - a11 * a20
    det = a00 * c00 + a01 * c01 + a02 * c02
    if abs(det) < 1e-300:
        return 0.0, 0.0, 0.0, False
    x0 = (c00 * b0 + (a02 * a21 - a01 * a22) * b1 + (a01 * a12 - a02 * a11) * b2) / det
    x1 = (c01 * b0 + (a00 * a22 - a02 * a20) * b1 + (a02 * a10 - a00 * a12) * b2) / det
    x2 = (c02 * b0 + (a01 * a20 - a00 * a21) * b1 + (a00 * a11 - a01 * a10) * b2) / det
    return x0, x1, x2, True


@kernel
def _sliding(G, v0, tn, mu, th):
    """For the tangential direction th: the impulse on the cone surface that meets the normal
    target, and the residual (cross product of the direction with the tangential velocity; zero
    when they are parallel) and the dot product (negative when they oppose); then cos th and
    sin th."""
    c, s = math.cos(th), math.sin(th)
    d0, d1, d2 = mu * c, mu * s, 1.0
    gn = G[2, 0] * d0 + G[2, 1] * d1 + G[2, 2] * d2
    if gn <= 1e-300:
        return -1.0, 0.0, 1.0, c, s
    ln = (tn - v0[2]) / gn
    vt0 = v0[0] + ln * (G[0, 0] * d0 + G[0, 1] * d1 + G[0, 2] * d2)
    vt1 = v0[1] + ln * (G[1, 0] * d0 + G[1, 1] * d1 + G[1, 2] * d2)
    return ln, c * vt1 - s * vt0, c * vt0 + s * vt1, c, s


@kernel
def solve_contact(G, v0, tn, mu, lam_out):
    """Write the impulse of one contact (given the others) into lam_out (3,)."""
    if v0[2] >= tn:  # separating: no impulse needed
        lam_out[0] = 0.0
        lam_out[1] = 0.0
        lam_out[2] = 0.0
        return
    # scalars, not array expressions: those compile numba's broadcasting checks and their
    # error messages, seconds on a fresh cache
    l0, l1, l2, ok = _solve3(G, 0.0 - v0[0], 0.0 - v0[1], tn - v0[2])
    if ok and l2 >= 0.0 and math.sqrt(l0 ** 2 + l1 ** 2) <= mu * l2:
        lam_out[0] = l0
        lam_out[1] = l1
        lam_out[2] = l2
        return
    if mu <= 0.0:  # frictionless: a normal impulse alone
        ln = max(0.0, (tn - v0[2]) / G[2, 2])
        lam_out[0] = 0.0
        lam_out[1] = 0.0
        lam_out[2] = ln
        return
    # sliding: search the angle. Start from the sticking impulse's direction.
    th0 = atan2(l1, l0) if ok else atan2(-v0[1], -v0[0])  # (ours: the same bits with any libm)
    n_samples = 32
    best_th = th0
    best_r = 1e300
    found = False
    lo_th = 0.0
    hi_th = 0.0
    r_lo = 0.0
    prev_th = th0 - math.pi
    ln_p, r_p, dot_p, _, _ = _sliding(G, v0, tn, mu, prev_th)
    for k in range(1, n_samples + 1):
        th = th0 - math.pi + 2.0 * math.pi * k / n_samples
        ln_k, r_k, dot_k, _, _ = _sliding(G, v0, tn, mu, th)
        if ln_k >= 0.0 and dot_k <= 0.0 and abs(r_k) < best_r:
            best_r = abs(r_k)
            best_th = th
        if (r_p <= 0.0) != (r_k <= 0.0) and ln_p >= 0.0 and ln_k >= 0.0 and \
                (dot_p <= 0.0 or dot_k <= 0.0):
            # the first bracket: the bisection's answer replaces best_th, so the samples after
            # it would change nothing
            lo_th, hi_th, r_lo = prev_th, th, r_p
            found = True
            break
        prev_th, ln_p, r_p, dot_p = th, ln_k, r_k, dot_k
    th = best_th
    if found:
        for _ in range(60):
            mid = 0.5 * (lo_th + hi_th)
            ln_m, r_m, _, _, _ = _sliding(G, v0, tn, mu, mid)
            if (r_m <= 0.0) == (r_lo <= 0.0):
                if mid == lo_th:  # nothing moved (r_lo is the residual at lo_th): every
                    break  # further halving would give this same (lo_th, hi_th)
                lo_th, r_lo = mid, r_m
            else:
                if mid == hi_th:
                    break
                hi_th = mid
        th = 0.5 * (lo_th + hi_th)
    ln, _, _, c, s = _sliding(G, v0, tn, mu, th)
    ln = max(ln, 0.0)
    lam_out[0] = ln * mu * c
    lam_out[1] = ln * mu * s
    lam_out[2] = ln


@kernel
def block_gauss_seidel(G, Gc, v, lam, target, lo, hi, block_start, block_kind, block_mu,
                       max_iterations, tolerance, scratch):
    """Sweep the blocks (a scalar box row, or a 3-row contact), solving each exactly given the
    others; `v` and `lam` are updated in place; `scratch` (5, 3). `block_mu` None when no block
    is a contact: the loop is then compiled without the contacts' solve (solve_contact).
    Returns (sweeps, largest velocity change of the last sweep). Gc holds G's columns as its
    rows (Gc[i, k] = G[k, i]): a change of impulse i moves every v[k] by G[k, i] d, read from
    one contiguous row, which the compiler can do several k at a time (each v[k] gets the same
    one product and sum). A row along which the mechanism cannot move (IMMOBILE: a scalar row's
    diagonal entry, a contact's normal one) gets no impulse: no impulse can change its
    velocity."""
    nb = block_start.shape[0]
    m = lam.shape[0]
    residual = 0.0
    sweeps = 0
    largest = 0.0
    for k in range(m):
        if G[k, k] > largest:
            largest = G[k, k]
    floor = IMMOBILE * largest
    Gb, v0, new = scratch[0:3], scratch[3], scratch[4]
    for sweep in range(1, max_iterations + 1):
        sweeps = sweep
        residual = 0.0
        for b in range(nb):
            i = block_start[b]
            if block_kind[b] == SCALAR:
                g = G[i, i]
                if not g > floor:
                    # the mechanism cannot move along this row (a joint held still by a loop or
                    # by a mimic of multiplier 0): no impulse can change its velocity
                    continue
                x = lam[i] + (target[i] - v[i]) / g
                if x < lo[i]:
                    x = lo[i]
                elif x > hi[i]:
                    x = hi[i]
                d = x - lam[i]
                if d != 0.0:
                    gi = Gc[i]
                    for k in range(m):
                        v[k] += gi[k] * d
                    lam[i] = x
                    change = abs(d) * g
                    if change > residual:
                        residual = change
            elif block_mu is not None:  # (None: no contact block; numba drops this one)
                for r in range(3):
                    for c in range(3):
                        Gb[r, c] = G[i + r, i + c]
                for r in range(3):
                    acc = v[i + r]
                    for c in range(3):
                        acc -= Gb[r, c] * lam[i + c]
                    v0[r] = acc
                if Gb[2, 2] > floor:
                    solve_contact(Gb, v0, target[i + 2], block_mu[b], new)
                else:  # the mechanism cannot move along the normal: no push, so no friction
                    new[0] = 0.0
                    new[1] = 0.0
                    new[2] = 0.0
                for c in range(3):
                    d = new[c] - lam[i + c]
                    if d != 0.0:
                        gi = Gc[i + c]
                        for k in range(m):
                            v[k] += gi[k] * d
                        lam[i + c] = new[c]
                        change = abs(d) * Gb[c, c]
                        if change > residual:
                            residual = change
        if residual <= tolerance:
            break
    return sweeps, residual
