"""Every shipped scenario against its golden log (tests/golden/, see its README), bit for bit: the
step does not depend on the machine's BLAS kernels nor on its processor (tests/test_determinism.py),
so any difference is a change of the physics, or of a dependency's arithmetic (CI installs the
versions of .ci/constraints.txt). The scenarios run in one process started as the `raisimcli`
command starts itself, with glibc's plain math functions (conftest.run_scenarios,
raisimcli.libm); tests/test_libm.py checks that the command itself gives these logs."""

import os

import pytest
from click.testing import CliRunner

from conftest import ROOT, SCENARIOS, run_scenarios
from raisimcli.cli.main import cli

GOLDEN = os.path.join(ROOT, "tests", "golden")
NAMES = sorted(f[:-5] for f in os.listdir(SCENARIOS) if f.endswith(".toml"))


def test_every_scenario_has_a_golden_log():
    assert sorted(f[:-3] for f in os.listdir(GOLDEN) if f.endswith(".h5")) == NAMES


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    out = tmp_path_factory.mktemp("golden")
    p = run_scenarios(out, NAMES)
    output, _ = p.communicate(timeout=900)
    assert p.returncode == 0, output
    return out


@pytest.mark.parametrize("name", NAMES)
def test_scenario_matches_golden(logs, name):
    out = logs / f"{name}.h5"
    r = CliRunner().invoke(cli, ["compare", os.path.join(GOLDEN, f"{name}.h5"), str(out),
                                 "--rtol", "0", "--atol", "0", "--max-report", "5"])
    assert r.exit_code == 0, r.output
