"""Every shipped scenario against its golden log (tests/golden/, see its README): an unintended
change of the physics fails CI."""

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
                                 "--rtol", "1e-8", "--atol", "1e-10", "--max-report", "5"])
    assert r.exit_code == 0, r.output
