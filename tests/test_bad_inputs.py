"""Inputs that used to end in a traceback (or never end): each is one message naming the file
or key, exit 2, before anything is written."""

import os

import pytest
from click.testing import CliRunner

from models import pendulum_scenario
from raisimcli.cli.main import cli

PEND = pendulum_scenario(20)
DEEP = "a = " + "[" * 5000 + "]" * 5000 + "\n"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def refused(r, *words) -> None:
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.output.startswith("error:") and "Traceback" not in r.output, r.output
    for w in words:
        assert w in r.output, (w, r.output)


@pytest.fixture
def scenario(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(PEND)
    return p


@pytest.fixture
def log(tmp_path, scenario):
    out = tmp_path / "g.h5"
    assert run("run", scenario, "-q", "-o", out).exit_code == 0
    return out


@pytest.mark.parametrize("kind", ["scenario", "sweep", "tolerance", "set"])
def test_toml_nested_thousands_deep(tmp_path, scenario, log, kind):
    deep = tmp_path / "deep.toml"
    deep.write_text(DEEP)
    args = {"scenario": ["run", deep], "sweep": ["sweep", deep, "-o", tmp_path / "out"],
            "tolerance": ["compare", log, log, "--tolerances", deep],
            "set": ["run", scenario, "--set", "world.dt=" + DEEP[4:].strip()]}[kind]
    refused(run(*args), "nested more than 100 levels deep")
    assert not os.path.exists(tmp_path / "out")


@pytest.mark.parametrize("key,value", [("duration", "1e308"), ("steps", "10000000000")])
def test_a_run_longer_than_the_step_limit(tmp_path, key, value):
    p = tmp_path / "s.toml"
    p.write_text(PEND.replace("steps = 20", f"{key} = {value}"))
    refused(run("run", p, "-q", "-o", tmp_path / "x.h5"), "more than the 1e+09")
    assert not os.path.exists(tmp_path / "x.h5")


@pytest.mark.parametrize("kind", ["scenario", "urdf", "sweep", "tolerance"])
def test_a_device_as_an_input_file(tmp_path, scenario, log, kind):
    args = {"scenario": ["run", "/dev/zero"], "urdf": ["inspect", "/dev/zero"],
            "sweep": ["sweep", "/dev/zero", "-o", tmp_path / "out"],
            "tolerance": ["compare", log, log, "--tolerances", "/dev/zero"]}[kind]
    refused(run(*args), "/dev/zero", "device")


def test_a_tolerance_file_that_is_not_utf8(tmp_path, log):
    p = tmp_path / "tol.toml"
    p.write_bytes(b'"robots/*" = { rtol = 1e-6 }\n# caf\xe9\n')
    refused(run("compare", log, log, "--tolerances", p), "tol.toml:2", "not valid UTF-8")


def test_a_scheduler_that_is_no_address(tmp_path, log):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "g.h5").write_bytes(log.read_bytes())
    refused(run("compare", tmp_path / "a", tmp_path / "b", "--scheduler", "not an address"),
            "--scheduler", "not the address of a Dask scheduler")


@pytest.mark.parametrize("cell,words", [("x" * 200_000, "not a table of numbers"),
                                        ("1_0", "expected numbers")])
def test_csv_cells_that_are_not_numbers(tmp_path, cell, words):
    (tmp_path / "t.csv").write_text(f"time,a\n0.0,0.0\n1.0,{cell}\n")
    p = tmp_path / "s.toml"
    p.write_text(PEND + '[robot.pd]\nkp = 10.0\nkd = 1.0\n[robot.pd.target]\n'
                        'hinge = { type = "csv", file = "t.csv", column = "a" }\n')
    refused(run("run", p, "-q", "-o", tmp_path / "x.h5"), "t.csv", words)


def test_a_sweep_of_too_many_cases_is_refused_at_once(tmp_path, scenario):
    grid = "\n".join(f'"robot.0.pd.kp{k}" = [1.0, 2.0]' for k in range(20))
    p = tmp_path / "sweep.toml"
    p.write_text(f'scenario = "{scenario}"\n[grid]\n{grid}\n')
    refused(run("sweep", p, "-o", tmp_path / "out"), "1048576 cases", "more than the 100000")


def test_a_scenario_given_as_a_sweep_file_says_so(tmp_path, scenario):
    refused(run("sweep", scenario, "-o", tmp_path / "out"), "this is a scenario file")


@pytest.mark.parametrize("uri", ["package://../x.stl", "package://./x.stl",
                                 "package:///../x.stl", "package://pkg/../../x.stl"])
def test_a_package_path_that_climbs_out_is_refused_without_looking(tmp_path, uri):
    """No file outside a package is looked at (so the message cannot tell whether it exists)."""
    (tmp_path / "x.stl").write_text("solid x\nendsolid x\n")
    d = tmp_path / "pkg" / "urdf"
    d.mkdir(parents=True)
    (d / "r.urdf").write_text(
        f'<robot name="r"><link name="a"><collision><geometry><mesh filename="{uri}"/>'
        '</geometry></collision></link></robot>')
    refused(run("inspect", d / "r.urdf"), uri)
    r = run("inspect", d / "r.urdf")
    assert "package" in r.output and "not found" not in r.output, r.output


def _controller_run(tmp_path, body):
    (tmp_path / "ctl.py").write_text(f"import os\n\ndef control(t, robot):\n    {body}\n")
    p = tmp_path / "c.toml"
    p.write_text(PEND.replace("steps = 20", "steps = 2000").replace(
        'name = "p"', 'name = "p"\ncontroller = "ctl.py:control"'))
    return p


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_controller_stuck_in_a_loop_is_stopped_by_a_signal(tmp_path, sig):
    import signal
    import subprocess
    import sys
    import time
    p = _controller_run(tmp_path, "while True: pass")
    proc = subprocess.Popen([sys.executable, "-m", "raisimcli", "run", str(p), "-q", "-o",
                             str(tmp_path / "c.h5")], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    time.sleep(4.0)
    proc.send_signal(getattr(signal, sig))
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, out
    assert "Traceback" not in out and "interrupted" in out, out
    from raisimcli.log import open_log
    with open_log(str(tmp_path / "c.h5")) as lg:
        assert lg.status == "interrupted"


def test_os_exit_in_a_controller_fails_the_run(tmp_path):
    p = _controller_run(tmp_path, "os._exit(0)")
    r = run("run", p, "-q", "-o", tmp_path / "c.h5")
    assert r.exit_code != 0 and "os._exit(0)" in r.output, r.output


def test_a_sweep_case_with_a_very_long_name_gets_a_log_and_an_index(tmp_path, scenario):
    """A name over the file systems' 255 bytes: its start and a digest, so the log and the index
    are written."""
    p = tmp_path / "sweep.toml"
    p.write_text(f'scenario = "{scenario}"\n[[case]]\nname = "{"k" * 400}"\n')
    r = run("sweep", p, "-o", tmp_path / "out", "-j", "1", "-q")
    assert r.exit_code == 0, r.output
    logs = [f for f in os.listdir(tmp_path / "out") if f.endswith(".h5")]
    assert len(logs) == 1 and len(logs[0]) < 255 and logs[0].startswith("k" * 100)
    assert (tmp_path / "out" / "index.csv").exists()


def test_plot_and_export_say_that_a_log_is_partial(tmp_path, log):
    import h5py
    with h5py.File(log, "r+") as f:
        f.attrs["status"] = "diverged"
    r = run("plot", log, "-o", tmp_path / "f.png")
    assert r.exit_code == 0 and "did not complete (status diverged)" in r.output, r.output
    r = run("export", log, "-o", tmp_path / "t")
    assert r.exit_code == 0 and "did not complete (status diverged)" in r.output, r.output


def test_several_scenarios_to_a_log_name_are_refused_before_running(tmp_path):
    # -o out.h5 with two scenarios would make a folder named out.h5/: refused, nothing made
    from conftest import SCENARIOS
    out = tmp_path / "out.h5"
    r = run("run", os.path.join(SCENARIOS, "pendulum.toml"),
            os.path.join(SCENARIOS, "double_pendulum.toml"), "-q", "-o", out)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: -o ") and "into a folder" in r.output
    assert not out.exists() and os.listdir(tmp_path) == []
