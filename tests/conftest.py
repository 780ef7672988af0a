import contextlib
import os
import subprocess
import sys

import numpy as np
import pytest

from raisimcli.libm import baseline_environment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROBOTS = os.path.join(ROOT, "robots")
SCENARIOS = os.path.join(ROOT, "scenarios")

SHIPPED = sorted(
    [os.path.join(ROBOTS, f) for f in os.listdir(ROBOTS) if f.endswith(".urdf")]
    + [os.path.join(ROBOTS, "acme_description", "urdf", "acme_s400.urdf")]
)


# The environment the `raisimcli` command gives itself: glibc's plain math functions, the ones
# every x86-64 processor runs (raisimcli.libm). This process runs whatever build it started with,
# so the tests that compare logs bit for bit with the golden ones, or with each other across
# processes, run the scenarios in a process started with this environment (run_scenarios).
BASELINE_ENV = baseline_environment(os.environ) or dict(os.environ)

# every scenario named in one interpreter: start-up and the compiled loops' loading paid once
_DRIVER = """
import sys
from raisimcli.cli.main import cli
scenarios, out, duration = sys.argv[1], sys.argv[2], sys.argv[3]
for name in sys.argv[4:]:
    try:
        cli(["run", f"{scenarios}/{name}.toml", "-q", "--duration", duration,
             "-o", f"{out}/{name}.h5"], standalone_mode=False)
    except SystemExit as e:
        if e.code:
            raise
"""


def run_scenarios(out, names, env: dict | None = None, duration: str = "0.2"):
    """Start a process that runs the scenarios `names` of scenarios/ for `duration` s, each
    into out/<name>.h5, in the environment BASELINE_ENV updated with `env` (a None value
    removes the variable); returns the Popen (its output in .communicate())."""
    env = {k: v for k, v in {**BASELINE_ENV, **(env or {})}.items() if v is not None}
    return subprocess.Popen([sys.executable, "-c", _DRIVER, SCENARIOS, str(out), duration,
                             *names], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


@contextlib.contextmanager
def small_disk(folder):
    """A 1 MB tmpfs mounted at `folder` (made here) for the block; the test is skipped where
    mounting is not allowed (not root)."""
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


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
