"""Every shipped scenario against its golden log (tests/golden/, see its README), bit for bit: the
step does not depend on the machine's BLAS kernels (tests/test_determinism.py), so any difference
is a change of the physics, or of a dependency's arithmetic (CI installs the versions of
.ci/constraints.txt)."""

import os

import pytest
from click.testing import CliRunner

from conftest import ROOT, SCENARIOS
from raisimcli.cli.main import cli

GOLDEN = os.path.join(ROOT, "tests", "golden")
NAMES = sorted(f[:-5] for f in os.listdir(SCENARIOS) if f.endswith(".toml"))


def test_every_scenario_has_a_golden_log():
    assert sorted(f[:-3] for f in os.listdir(GOLDEN) if f.endswith(".h5")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_scenario_matches_golden(tmp_path, name):
    out = tmp_path / f"{name}.h5"
    r = CliRunner().invoke(cli, ["run", os.path.join(SCENARIOS, f"{name}.toml"), "-q",
                                 "--duration", "0.2", "-o", str(out)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["compare", os.path.join(GOLDEN, f"{name}.h5"), str(out),
                                 "--rtol", "0", "--atol", "0", "--max-report", "5"])
    assert r.exit_code == 0, r.output
