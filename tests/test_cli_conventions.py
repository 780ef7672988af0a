"""Command-line conventions: results on stdout and the rest on stderr, JSON on stdout even when a
command fails, warnings filtered by code, reruns and --no-clobber."""

import json
import os

from click.testing import CliRunner

from conftest import ROBOTS, SCENARIOS
from raisimcli.cli.main import cli


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_inspect_report_goes_to_stdout_and_warnings_to_stderr(tmp_path):
    r = run("inspect", f"{ROBOTS}/quadruped.urdf")
    assert r.exit_code == 0
    assert "LF_KFE" in r.stdout and "LF_KFE" not in r.stderr    # `| grep LF_KFE` finds it
    odd = tmp_path / "odd.urdf"
    odd.write_text(open(f"{ROBOTS}/pendulum.urdf").read().replace(
        '<axis xyz="0 1 0"/>', '<axis xyz="0 1 0"/><limit effort="0" velocity="0"/>'))
    r = run("inspect", odd)
    assert r.exit_code == 0
    assert "zero-velocity-limit" in r.stderr and "zero-velocity-limit" not in r.stdout
    assert "hinge" in r.stdout


def test_run_and_compare_results_go_to_stdout(tmp_path):
    out = tmp_path / "p.h5"
    r = run("run", f"{SCENARIOS}/pendulum.toml", "--duration", "0.01", "-o", out)
    assert r.exit_code == 0 and "real-time factor" in r.stdout
    r = run("compare", out, out)
    assert r.exit_code == 0 and r.stdout.strip().splitlines()[-1].startswith("OK:")


def test_the_progress_bar_on_stderr_says_the_time_elapsed_and_left(tmp_path):
    """run's progress line gives the steps, the simulated time, the real-time factor, the time
    elapsed and an estimate of the time left (0 once done); a sweep's the cases done, the
    failed ones and the same two times. On stderr, so that stdout stays the results."""
    r = run("run", f"{SCENARIOS}/pendulum.toml", "--duration", "0.05", "-o", tmp_path / "p.h5")
    assert r.exit_code == 0, r.output
    line = [x for x in r.stderr.splitlines() if "steps" in x][-1]
    assert "50/50 steps" in line and "real time" in line, line
    assert line.rstrip().endswith("elapsed, 0:00:00 left"), line
    assert "left" not in r.stdout
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(f'scenario = "{SCENARIOS}/pendulum.toml"\n'
                     'set = { "world.duration" = 0.02 }\n'
                     '[grid]\n"world.dt" = [0.001, 0.002]\n')
    r = run("sweep", sweep, "-o", tmp_path / "out", "-j", "1")
    assert r.exit_code == 0, r.output
    line = [x for x in r.stderr.splitlines() if "failed" in x and "left" in x][-1]
    assert "/2" in line and "elapsed," in line, line


def test_json_failure_is_a_json_error_object_on_stdout(tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='x'><link name='a'><inertial><mass value='-1'/>"
                   "<inertia ixx='1' iyy='1' izz='1'/></inertial></link></robot>")
    for args in (["inspect", bad, "--json"], ["compare", tmp_path / "none.h5", bad, "--json"],
                 ["run", tmp_path / "none.toml", "--json"]):
        r = run(*args)
        assert r.exit_code == 2, r.output
        obj = json.loads(r.stdout)
        assert obj["exit_code"] == 2 and obj["error"]["message"]
    obj = json.loads(run("inspect", bad, "--json").stdout)["error"]
    assert obj["type"] == "ModelError" and obj["file"] == str(bad) and obj["line"] == 1
    assert obj["element"] == "<mass>"


def test_warnings_filtered_by_code(tmp_path):
    odd = tmp_path / "odd.urdf"
    odd.write_text(open(f"{ROBOTS}/pendulum.urdf").read().replace(
        '<axis xyz="0 1 0"/>', '<axis xyz="0 1 0"/><limit effort="0" velocity="0"/>'))
    codes = lambda r: [w["code"] for w in json.loads(r.stdout)["warnings"]]  # noqa: E731
    assert codes(run("inspect", odd, "--json")) == ["zero-velocity-limit", "zero-effort-limit"]
    assert codes(run("inspect", odd, "--json", "-W", "zero-velocity-limit")) == \
        ["zero-effort-limit"]
    assert run("inspect", odd, "--strict").exit_code == 2
    assert run("inspect", odd, "--strict", "-W", "zero-velocity-limit",
               "-W", "zero-effort-limit").exit_code == 0
    r = run("inspect", odd, "-W", "zero-velocity")
    assert r.exit_code == 2 and "did you mean 'zero-velocity-limit'" in r.output


def test_rerun_replaces_and_says_so_and_no_clobber_refuses(tmp_path):
    out = tmp_path / "p.h5"
    first = run("run", f"{SCENARIOS}/pendulum.toml", "--duration", "0.01", "-o", out, "--json")
    assert json.loads(first.stdout)["replaced"] is False
    second = run("run", f"{SCENARIOS}/pendulum.toml", "--duration", "0.01", "-o", out, "--json")
    assert json.loads(second.stdout)["replaced"] is True
    before = out.read_bytes()
    r = run("run", f"{SCENARIOS}/pendulum.toml", "--duration", "0.01", "-o", out, "--no-clobber")
    assert r.exit_code == 2 and "--no-clobber" in r.output and out.read_bytes() == before
    assert not [p for p in os.listdir(tmp_path) if ".partial-" in p]
