"""atan and atan2 in plain floating-point arithmetic: the same bits on every machine.

The C library's atan2 is not the same on every machine. glibc has several builds of it (with and
without fused multiply-add, which raisimcli/libm.py settles for a run), and its versions compute
it differently: glibc 2.31 (Debian 11, Ubuntu 20.04) and 2.36 disagree in the last bit for about
one argument pair in 1400 (docs/physics.md, "The same log on every machine"). The step calls
atan2 in the sliding contact's angle search (step/contact_solver.py) and for a spherical joint's
rotation vector (conventions.quat_log), so a log made with one C library could differ from a
golden log made with another.

These two functions use only additions, multiplications, divisions, comparisons and sign
operations, which IEEE 754 rounds the same on every processor (the package compiles its loops
without fastmath, so LLVM neither fuses nor reorders them). They follow the method of fdlibm's
s_atan.c and e_atan2.c, with its constants (Sun Microsystems' freely distributable math library,
netlib: https://www.netlib.org/fdlibm/; "Copyright (C) 1993 by Sun Microsystems, Inc. All rights
reserved. Developed at SunSoft, a Sun Microsystems, Inc. business. Permission to use, copy,
modify, and distribute this software is freely granted, provided that this notice is
preserved."):

- atan(x): |x| is reduced to [0, 7/16) by atan(x) = atan(c) + atan((x - c) / (1 + c x)) for c in
  (0.5, 1, 1.5, infinity), whose atan(c) is held as a sum of two doubles, hi + lo; then an odd
  polynomial of degree 23 in the reduced argument, its error below 2^-58 there (fdlibm's bound).
  fdlibm's reductions are written for its ranges: (2x - 1) / (2 + x) around 0.5, (x - 1) / (x +
  1) around 1, (x - 1.5) / (1 + 1.5 x) around 1.5 and -1 / x past 39/16.
- atan2(y, x) = atan(|y / x|) put into its quadrant with pi = pi_hi + pi_lo, with C99's values at
  zeros, infinities and NaN (atan2(+-0, -0) = +-pi, atan2(+-inf, -inf) = +-3 pi / 4, ...). One
  change from fdlibm: for |y / x| past 2^60 the answer is +-pi/2 whatever the sign of x, as
  FreeBSD's libm (msun, e_atan2.c) has it; fdlibm's pi - (pi/2 - pi_lo) for x < 0 was one ulp
  above.

fdlibm selects the ranges and the special cases by the bits of the argument's high word; here
they are the comparisons of values that those tests amount to (a threshold whose low word is zero
is compared as a value exactly: |x| < 0.4375 is its high word below 0x3fdc0000). Where fdlibm
tests the difference of two exponents (|y / x| past 2^60, and x < 0 with |y / x| below 2^-60),
these compare |y| with 2^60 |x| (or |x| with 2^60 |y|) instead, so a ratio within a factor of two
of the threshold may take the other branch than fdlibm's. Below 2^-60 both branches round to pi.
With x < 0 and |y / x| between about 2^54 and 2^60 the general branch gives one ulp above pi/2
(as fdlibm's does), past 2^60 the first branch gives pi/2 itself.

tests/test_arctan.py compares both with glibc's and with a 45-digit reference computed with
Python's decimal module, and checks that processes running glibc's two builds (with and without
fused multiply-add) compute the same bits here while glibc's own differ.
"""

from __future__ import annotations

import math

from raisimcli.jit import kernel

# atan(0.5), atan(1), atan(1.5), atan(inf) = pi / 2, each as hi + lo
_HI0, _LO0 = 4.63647609000806093515e-01, 2.26987774529616870924e-17
_HI1, _LO1 = 7.85398163397448278999e-01, 3.06161699786838301793e-17
_HI2, _LO2 = 9.82793723247329054082e-01, 1.39033110312309984516e-17
_HI3, _LO3 = 1.57079632679489655800e+00, 6.12323399573676603587e-17
# the odd polynomial's coefficients
_T0, _T1, _T2 = 3.33333333333329318027e-01, -1.99999999998764832476e-01, 1.42857142725034663711e-01
_T3, _T4 = -1.11111104054623557880e-01, 9.09088713343650656196e-02
_T5, _T6 = -7.69187620504482999495e-02, 6.66107313738753120669e-02
_T7, _T8 = -5.83357013379057348645e-02, 4.97687799461593236017e-02
_T9, _T10 = -3.65315727442169155270e-02, 1.62858201153657823623e-02

_PI_O_4 = 7.8539816339744827900e-01
_PI_O_2 = 1.5707963267948965580e+00
_PI = 3.1415926535897931160e+00
_PI_LO = 1.2246467991473531772e-16
_TWO66, _TWO60, _TWOM29 = 2.0 ** 66, 2.0 ** 60, 2.0 ** -29


@kernel
def atan(x: float) -> float:
    """The arc tangent of x, in [-pi/2, pi/2] (fdlibm's s_atan.c; see the module)."""
    if x != x:  # NaN
        return x + x
    ax = math.fabs(x)
    if ax >= _TWO66:  # atan(+-x) = +-pi/2 to within 2^-66
        return _HI3 + _LO3 if x > 0.0 else -_HI3 - _LO3
    k = -1
    if ax < 0.4375:
        if ax < _TWOM29:  # atan(x) = x to within x^3 / 3
            return x
        t = x
    else:
        if ax < 1.1875:
            if ax < 0.6875:  # 7/16 <= |x| < 11/16
                k = 0
                t = (2.0 * ax - 1.0) / (2.0 + ax)
            else:  # 11/16 <= |x| < 19/16
                k = 1
                t = (ax - 1.0) / (ax + 1.0)
        else:
            if ax < 2.4375:  # 19/16 <= |x| < 39/16
                k = 2
                t = (ax - 1.5) / (1.0 + 1.5 * ax)
            else:  # 39/16 <= |x| < 2^66
                k = 3
                t = -1.0 / ax
    z = t * t
    w = z * z
    s1 = z * (_T0 + w * (_T2 + w * (_T4 + w * (_T6 + w * (_T8 + w * _T10)))))
    s2 = w * (_T1 + w * (_T3 + w * (_T5 + w * (_T7 + w * _T9))))
    if k < 0:
        return t - t * (s1 + s2)
    if k == 0:
        hi, lo = _HI0, _LO0
    elif k == 1:
        hi, lo = _HI1, _LO1
    elif k == 2:
        hi, lo = _HI2, _LO2
    else:
        hi, lo = _HI3, _LO3
    r = hi - ((t * (s1 + s2) - lo) - t)
    return -r if x < 0.0 else r


@kernel
def atan2(y: float, x: float) -> float:
    """The angle of the point (x, y), in [-pi, pi], with C99's values at zeros, infinities and
    NaN (fdlibm's e_atan2.c; see the module)."""
    if x != x or y != y:
        return x + y
    if x == 1.0:
        return atan(y)
    # 0: x >= +0, y >= +0; 1: x >= +0, y <= -0; 2: x <= -0, y >= +0; 3: x <= -0, y <= -0
    m = (1 if math.copysign(1.0, y) < 0.0 else 0) + (2 if math.copysign(1.0, x) < 0.0 else 0)
    ax, ay = math.fabs(x), math.fabs(y)
    if ay == 0.0:
        if m <= 1:
            return y  # atan2(+-0, x >= +0) = +-0
        return _PI if m == 2 else -_PI
    if ax == 0.0:
        return -_PI_O_2 if y < 0.0 else _PI_O_2
    if ax == math.inf:
        if ay == math.inf:
            if m == 0:
                return _PI_O_4
            if m == 1:
                return -_PI_O_4
            return 3.0 * _PI_O_4 if m == 2 else -3.0 * _PI_O_4
        if m == 0:
            return 0.0
        if m == 1:
            return -0.0
        return _PI if m == 2 else -_PI
    if ay == math.inf:
        return -_PI_O_2 if y < 0.0 else _PI_O_2
    if ay > _TWO60 * ax:  # |y / x| > 2^60: +-pi/2 whatever the sign of x (the module)
        z = _PI_O_2 + 0.5 * _PI_LO
        m = m & 1
    elif x < 0.0 and _TWO60 * ay < ax:  # |y / x| < 2^-60, x < 0
        z = 0.0
    else:
        z = atan(math.fabs(y / x))
    if m == 0:
        return z
    if m == 1:
        return -z
    if m == 2:
        return _PI - (z - _PI_LO)
    return (z - _PI_LO) - _PI
