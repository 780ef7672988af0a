import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROBOTS = os.path.join(ROOT, "robots")
SCENARIOS = os.path.join(ROOT, "scenarios")

SHIPPED = sorted(
    [os.path.join(ROBOTS, f) for f in os.listdir(ROBOTS) if f.endswith(".urdf")]
    + [os.path.join(ROBOTS, "acme_description", "urdf", "acme_s400.urdf")]
)


def robot(name: str) -> str:
    return os.path.join(ROBOTS, name)


def assert_close(actual, expected, rtol=1e-9, atol=1e-12, what=""):
    """Project-wide closeness check with a readable failure."""
    actual = np.asarray(actual, dtype=float)
    expected = np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    err = np.abs(actual - expected)
    bound = atol + rtol * np.abs(expected)
    if not np.all(err <= bound):
        i = np.unravel_index(np.argmax(err - bound), err.shape)
        raise AssertionError(f"{what}: max violation at {i}: {actual[i]!r} vs {expected[i]!r} "
                             f"(|diff| {err[i]:.3e} > {bound[i]:.3e})")


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
