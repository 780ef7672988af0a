"""raisimcli.physics.arctan: atan and atan2 in plain arithmetic, checked against a 40-digit
reference computed here with Python's decimal module, against the C library's, at C99's special
values, and for the one property they are there for: the same bits whichever build of the C
library's math the process runs, since they call none of it."""

import math
import struct
import os
import re
import subprocess
import sys
from decimal import Decimal, localcontext

import numba
import numpy as np
import pytest

from conftest import ROOT
from raisimcli.libm import applies
from raisimcli.physics import arctan
from raisimcli.physics.arctan import atan, atan2

DIGITS = 45


def _d_atan(x: Decimal) -> Decimal:
    """atan(x) to about DIGITS digits: halve the angle until x < 0.01, atan(x) = 2 atan(x / (1 +
    sqrt(1 + x^2))), then the Taylor series."""
    if x < 0:
        return -_d_atan(-x)
    halvings = 0
    while x > Decimal("0.01"):
        x = x / (1 + (1 + x * x).sqrt())
        halvings += 1
    term, total, n, x2 = x, x, 1, x * x
    eps = Decimal(10) ** -(DIGITS + 5)
    while abs(term) > eps * abs(total):
        term = -term * x2
        total += term / (2 * n + 1)
        n += 1
    return total * 2 ** halvings


def _d_pi() -> Decimal:
    return 16 * _d_atan(Decimal(1) / 5) - 4 * _d_atan(Decimal(1) / 239)  # Machin's formula


def _d_atan2(y: float, x: float, pi: Decimal) -> Decimal:
    """atan2 of two finite numbers, not both zero, from their exact values."""
    dy, dx = Decimal(y), Decimal(x)  # (a float's Decimal is its exact value)
    if dx == 0:
        return pi / 2 if dy > 0 else -pi / 2
    a = _d_atan(dy / dx)
    if dx > 0:
        return a
    return a + pi if dy >= 0 else a - pi


def _ulps(a: float, b: float) -> int:
    """The distance of two finite floats of the same sign in units in the last place."""
    return abs(int(np.float64(a).view(np.int64)) - int(np.float64(b).view(np.int64)))


def _pairs(n: int, seed: int) -> list[tuple[float, float]]:
    """(y, x): every quadrant, magnitudes from 1e-8 to 1e8 and their ratios, and the four
    reduction ranges' edges of atan (7/16, 11/16, 19/16, 39/16) as ratios, a few ulps either
    side."""
    rng = np.random.default_rng(seed)
    pairs = [(float(y), float(x)) for y, x in zip(
        rng.normal(size=n) * 10.0 ** rng.uniform(-8, 8, n),
        rng.normal(size=n) * 10.0 ** rng.uniform(-8, 8, n))]
    for edge in (0.4375, 0.6875, 1.1875, 2.4375, 1.0, 2.0 ** 66, 2.0 ** -29):
        v = edge
        for _ in range(4):
            pairs += [(v, 1.0), (-v, 1.0), (v, -1.0), (1.0, v)]
            v = float(np.nextafter(v, 2 * v))
    return pairs


def test_atan2_is_within_one_ulp_of_the_true_value():
    with localcontext() as ctx:
        ctx.prec = DIGITS
        pi = _d_pi()
        assert float(pi) == math.pi
        exact, n = 0, 0
        for y, x in _pairs(1500, seed=3):
            ref = float(_d_atan2(y, x, pi))  # (correctly rounded: str -> float)
            ours = atan2(y, x)
            assert _ulps(ours, ref) <= 1, (y, x, ours, ref)
            exact += ours == ref
            n += 1
    assert exact > 0.75 * n  # (most are the nearest double; the rest one ulp off)


def test_atan_is_within_one_ulp_of_the_true_value():
    with localcontext() as ctx:
        ctx.prec = DIGITS
        rng = np.random.default_rng(5)
        xs = list(rng.normal(size=1500) * 10.0 ** rng.uniform(-10, 10, 1500))
        xs += [0.4375, 0.6875, 1.1875, 2.4375, 2.0 ** 66, 2.0 ** -29, 1e-300, 1e300]
        exact = 0
        for x in xs:
            ref = float(_d_atan(Decimal(float(x))))
            ours = atan(float(x))
            assert _ulps(ours, ref) <= 1, (x, ours, ref)
            exact += ours == ref
    assert exact > 0.95 * len(xs)


def test_the_same_as_the_c_library_to_one_ulp():
    differ = 0
    pairs = _pairs(20000, seed=11)
    for y, x in pairs:
        ours, theirs = atan2(y, x), math.atan2(y, x)
        assert _ulps(ours, theirs) <= 1, (y, x)
        differ += ours != theirs
    assert differ < 0.25 * len(pairs)


SPECIAL = [0.0, -0.0, 1.0, -1.0, 1e-310, -1e-310, 1e308, -1e308, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("y", SPECIAL)
def test_c99_values_at_zeros_infinities_and_nan(y):
    """atan2(+-0, +0) = +-0, atan2(+-0, -0) = +-pi, atan2(+-inf, -inf) = +-3pi/4, ... as the C
    library gives them (C99 F.9.1.4), with the sign of a zero; atan at the same values."""
    for x in SPECIAL:
        ours, theirs = atan2(y, x), math.atan2(y, x)
        if math.isnan(theirs):
            assert math.isnan(ours), (y, x)
            continue
        # (the C library's atan2 may round a finite quotient's angle the other way: one ulp)
        assert math.copysign(1.0, ours) == math.copysign(1.0, theirs), (y, x)
        assert ours == theirs or _ulps(ours, theirs) <= 1, (y, x, ours, theirs)
        if math.isinf(y) or math.isinf(x) or y == 0.0 or x == 0.0:
            assert ours == theirs, (y, x, ours, theirs)
    ours, theirs = atan(y), math.atan(y)
    assert (math.isnan(ours) and math.isnan(theirs)) or \
        (ours == theirs and math.copysign(1.0, ours) == math.copysign(1.0, theirs))


def test_the_compiled_functions_call_nothing_of_the_c_library():
    """Compiled afresh (not from the cache), their LLVM IR declares no function but LLVM's
    intrinsics and numba's and Python's runtime; a compiled math.atan2 declares atan2."""
    def declared(fn, *args):
        f = numba.njit(fn)
        f(*args)
        ir = f.inspect_llvm(f.signatures[0])
        return set(re.findall(r'declare [^@]*@"?([A-Za-z_0-9.]+)', ir))

    allowed = re.compile(r"^(llvm\.|numba_|NRT_|Py)")
    for fn, args in ((arctan.atan2.py_func, (0.3, -0.7)), (arctan.atan.py_func, (0.3,))):
        calls = declared(fn, *args)
        assert all(allowed.match(s) for s in calls), sorted(calls)
    assert "atan2" in declared(lambda y, x: math.atan2(y, x), 0.3, -0.7)


BITS = """
import hashlib, math, struct, sys
from raisimcli.libm import variant
from raisimcli.physics.arctan import atan2
pairs = struct.unpack("40000d", sys.stdin.buffer.read())
ys, xs = pairs[0::2], pairs[1::2]
print(variant(),
      hashlib.sha256(struct.pack("20000d", *map(atan2, ys, xs))).hexdigest(),
      hashlib.sha256(struct.pack("20000d", *map(math.atan2, ys, xs))).hexdigest())
"""


@pytest.mark.skipif(not applies(), reason="not glibc on x86-64: no build to choose")
def test_the_same_bits_under_either_build_of_the_c_library():
    """A process running glibc's plain build and one running its default computes the same bits
    here; where the default is the fused build, glibc's own atan2 differs between the two. The
    arguments are made here and handed to both processes as bytes: made in each (with numpy's
    power, which calls the C library's pow) they would differ between the two builds already."""
    rng = np.random.default_rng(9)
    pairs = rng.normal(size=(20000, 2)) * 10.0 ** rng.uniform(-3, 3, (20000, 2))
    data = struct.pack("40000d", *pairs.ravel().tolist())
    runs = []
    for tunables in (None, "glibc.cpu.hwcaps=-FMA,-FMA4,-FMA_Usable,-FMA4_Usable"):
        env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
        if tunables is not None:
            env["GLIBC_TUNABLES"] = tunables
        runs.append(subprocess.run([sys.executable, "-c", BITS], env=env, cwd=ROOT, check=True,
                                   input=data, capture_output=True).stdout.decode().split())
    (v0, ours0, libc0), (v1, ours1, libc1) = runs
    assert v1 == "baseline"
    assert ours0 == ours1
    if v0 == "fma":
        assert libc0 != libc1  # (the check has teeth: the C library's builds differ here)
