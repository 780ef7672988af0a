"""The shipped custom-controller example (docs/controllers.md): gravity and Coriolis compensation
plus PD holds the arm at its target, where the same PD alone sags under gravity."""

import os

import numpy as np
from click.testing import CliRunner

from conftest import SCENARIOS
from raisimcli.cli.main import cli
from raisimcli.log import open_log

TARGET = np.array([0.0, 0.5, 0.0, -1.0, 0.0, 0.5, 0.0])


def _final(tmp_path, scenario):
    out = tmp_path / "arm.h5"
    r = CliRunner().invoke(cli, ["run", str(scenario), "-q", "-o", str(out)])
    assert r.exit_code == 0, r.output
    with open_log(str(out)) as log:
        robot = log.robot("arm7")
        return robot.signal("q").data[-1], robot.signal("u").data[-1]


def test_gravity_compensation_holds_the_target(tmp_path):
    q, u = _final(tmp_path, os.path.join(SCENARIOS, "arm7_gravity_comp.toml"))
    assert np.abs(u).max() < 1e-9  # at rest after 4 s
    # what remains is held by Coulomb stiction: at most friction / kp per joint (0.3 N m / 40)
    assert np.abs(q - TARGET).max() < 0.3 / 40


def test_the_same_pd_without_compensation_sags(tmp_path):
    import shutil
    folder = tmp_path / "s"
    shutil.copytree(SCENARIOS, folder, symlinks=True)
    ctrl = folder / "controllers" / "arm7_gravity_comp.py"
    text = ctrl.read_text()
    assert "h + KP" in text
    ctrl.write_text(text.replace("h + KP", "KP"))
    scenario = folder / "arm7_gravity_comp.toml"
    scenario.write_text(scenario.read_text().replace("../robots", os.path.join(
        os.path.dirname(SCENARIOS), "robots")))
    q, _ = _final(tmp_path, scenario)
    assert np.abs(q - TARGET).max() > 0.1
