"""A scenario's initial state: every shipped scenario starts inside its joints' limits with its
standing robots' feet on the ground (checked from the model and forward kinematics), and `run`
warns (an error under --strict) of a joint outside its limits, a shape in the ground, and a
floating robot a few millimetres above it."""

import glob
import os

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import ROBOTS, SCENARIOS
from raisimcli.cli.main import cli
from raisimcli.scenario import load_scenario
from raisimcli.scenario.runner import build_world

SHIPPED = sorted(glob.glob(os.path.join(SCENARIOS, "*.toml")))
FOOT_RADIUS = 0.03  # the quadruped's sphere feet


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: os.path.basename(p)[:-5])
def test_every_shipped_scenario_starts_inside_its_limits(path):
    scn = load_scenario(path, duration=0.01)
    for r in scn.robots:
        for j in r.model.moving_joints:
            if j.nv == 1 and j.has_position_limits:
                q = r.q0[j.q_slice.start]
                assert j.lower <= q <= j.upper, f"{r.name}: {j.name} = {q} not in " \
                                                f"[{j.lower}, {j.upper}]"
    _, drivers = build_world(scn)
    assert [m for d in drivers for m in d.warnings] == []


@pytest.mark.parametrize("name, height", [("quadruped_stand", 0.0), ("quadruped_drop", 0.5)])
def test_the_quadruped_s_feet_start_on_the_ground_or_half_a_metre_above(name, height):
    _, (d,) = build_world(load_scenario(os.path.join(SCENARIOS, f"{name}.toml")))
    for foot in ("LF_foot", "RF_foot", "LH_foot", "RH_foot"):
        bottom = d.system.get_frame_position(foot)[2] - FOOT_RADIUS
        assert bottom == pytest.approx(height, abs=1e-5), foot


def _scenario(tmp_path, urdf_text: str, z: float) -> str:
    """quadruped_stand with the given URDF text and root.z."""
    (tmp_path / "quadruped.urdf").write_text(urdf_text)
    if not (tmp_path / "actuators").exists():
        os.symlink(os.path.join(ROBOTS, "actuators"), tmp_path / "actuators")
    text = open(os.path.join(SCENARIOS, "quadruped_stand.toml")).read()
    text = text.replace("../robots/quadruped.urdf", "quadruped.urdf") \
        .replace('"root.z" = 0.44267', f'"root.z" = {z}')
    (tmp_path / "s.toml").write_text(text)
    return str(tmp_path / "s.toml")


def _run(*args):
    return CliRunner().invoke(cli, ["run", *args, "--duration", "0.002"])


def test_a_knee_outside_its_limits_warns_and_strict_refuses_it(tmp_path):
    # the quadruped as it was: every knee limited to [-2.7, 0.3], the hind ones at +1.2
    urdf = open(os.path.join(ROBOTS, "quadruped.urdf")).read().replace(
        'lower="-0.3" upper="2.7"', 'lower="-2.7" upper="0.3"')
    path = _scenario(tmp_path, urdf, 0.44267)
    out = str(tmp_path / "run.h5")
    r = _run(path, "-o", out)
    assert r.exit_code == 0, r.output
    lines = [x for x in r.stderr.splitlines() if x.startswith("warning:")]
    assert len(lines) == 2 and all("robot[0].initial" in x for x in lines)
    assert "LH_KFE starts at 1.2, outside its limits [-2.7, 0.3]" in lines[0]
    assert "quadruped.urdf:" in lines[0] and "RH_KFE" in lines[1]
    os.remove(out)
    r = _run(path, "-o", out, "--strict")
    assert r.exit_code == 2 and "[initial-outside-limits]" in r.stderr
    assert not os.path.exists(out)
    r = _run(path, "-o", out, "-W", "initial-outside-limits")
    assert r.exit_code == 0 and "warning" not in r.stderr


@pytest.mark.parametrize("z, words", [
    (0.4485, "its lowest shape (link 'LF_foot') starts 5.83 mm above the ground"),
    (0.44, "a shape of link 'LF_foot' starts 2.67 mm into the ground"),
])
def test_a_robot_a_few_mm_above_or_in_the_ground_warns(tmp_path, z, words):
    urdf = open(os.path.join(ROBOTS, "quadruped.urdf")).read()
    r = _run(_scenario(tmp_path, urdf, z), "-o", str(tmp_path / "run.h5"))
    assert r.exit_code == 0, r.output
    assert r.stderr.count("warning:") == 1 and words in r.stderr, r.stderr


def test_the_check_changes_no_bit_of_the_run(tmp_path):
    # the shapes' arrays it uses are the step's: a run gives the same state as a world stepped
    # without the check
    from raisimcli.physics import World
    scn = load_scenario(os.path.join(SCENARIOS, "quadruped_stand.toml"), duration=0.02)
    w1, (d1,) = build_world(scn)
    w2 = World(scn.dt, scn.spec.world.gravity)
    w2.add_ground(0.0)
    s2 = w2.add_articulated_system(scn.robots[0].model, name="quadruped")
    s2.set_state(scn.robots[0].q0, scn.robots[0].u0)
    s2.set_pd_gains(scn.robots[0].kp, scn.robots[0].kd)
    s2.set_pd_target(s2.q, np.zeros(s2.nv))
    for _ in range(20):
        w1.integrate()
        w2.integrate()
    assert np.array_equal(d1.system.q, s2.q) and np.array_equal(d1.system.u, s2.u)
