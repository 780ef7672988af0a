"""Hostile input and crashing machines: nothing a user already has is lost, CI never passes when
it must fail, and every bad input or fault ends with one message and a documented exit code.

Each test asserts the exit code, the message and what is left on disk (byte for byte where a file
must be preserved). The fault tests run the real command in a subprocess."""

import json
import os
import resource
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from conftest import ROBOTS, ROOT, SCENARIOS, small_disk
from raisimcli.cli.main import cli
from raisimcli.log import open_log

PEND = f"""[world]
dt = 0.001
steps = {{steps}}
[[robot]]
name = "{{name}}"
urdf = "{ROBOTS}/pendulum.urdf"
initial = {{{{ q = [0.5] }}}}
"""


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def scenario(tmp_path, steps=200, name="p", text=None, file="s.toml"):
    p = tmp_path / file
    p.write_text(text if text is not None else PEND.format(steps=steps, name=name))
    return p


def spawn(args, cwd, **kw):
    return subprocess.Popen([sys.executable, "-m", "raisimcli", *map(str, args)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def lines(text: str) -> list[str]:
    return [x for x in text.splitlines() if x.strip()]


def wait_for(predicate, timeout=60):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def partials(folder):
    return [p for p in os.listdir(folder) if ".partial-" in p]


# --- data loss ------------------------------------------------------------------------------------
def test_output_onto_an_input_is_refused_and_the_input_kept(tmp_path):
    csv = tmp_path / "traj.csv"
    csv.write_text("time,j\n0,0\n1,0.5\n")
    ctrl = tmp_path / "ctrl.py"
    ctrl.write_text("def control(t, robot):\n    pass\n")
    urdf = tmp_path / "p.urdf"
    urdf.write_bytes(open(f"{ROBOTS}/pendulum.urdf", "rb").read())
    (tmp_path / "sub").mkdir()
    os.symlink(urdf, tmp_path / "link.h5")
    text = (PEND.format(steps=10, name="p").replace(f"{ROBOTS}/pendulum.urdf", str(urdf))
            + 'controller = "ctrl.py:control"\n[robot.pd]\nkp = 1.0\nkd = 0.1\n'
            + '[robot.pd.target]\nhinge = { type = "csv", file = "traj.csv", column = "j" }\n')
    s = scenario(tmp_path, text=text)
    for out in (s, urdf, csv, ctrl, tmp_path / "sub" / ".." / "p.urdf", tmp_path / "link.h5"):
        before = {p: p.read_bytes() for p in (s, urdf, csv, ctrl)}
        r = run("run", s, "-q", "-o", out)
        assert r.exit_code == 2, (out, r.output)
        assert "an input of this run" in r.output and "Traceback" not in r.output
        assert {p: p.read_bytes() for p in before} == before
        assert not partials(tmp_path)
    assert run("run", s, "-q", "-o", tmp_path / "ok.h5").exit_code == 0


# (`-o somewhere/` names a folder: the logs of a batch go there, see tests/test_sweep.py)
@pytest.mark.parametrize("out", ["", "s.toml/x.h5"])
def test_unusable_output_path_is_refused_before_simulating(tmp_path, out):
    s = scenario(tmp_path)
    r = spawn(["run", s, "-q", "-o", out], tmp_path)
    _, err = r.communicate(timeout=120)
    assert r.returncode == 2, err.decode()
    assert len(lines(err.decode())) == 1 and b"Traceback" not in err
    assert sorted(os.listdir(tmp_path)) == ["s.toml"]
    assert not [p for p in os.listdir(tmp_path.parent) if p.startswith(tmp_path.name + ".")]


def _long_run(tmp_path, out, steps=10_000_000):
    s = scenario(tmp_path, steps=steps, file="long.toml")
    return spawn(["run", s, "-q", "-o", out], tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_never_replaces_a_complete_log(tmp_path, sig):
    out = tmp_path / "golden.h5"
    assert run("run", scenario(tmp_path, steps=30), "-q", "-o", out).exit_code == 0
    before = out.read_bytes()
    proc = _long_run(tmp_path, out)
    assert wait_for(lambda: partials(tmp_path))  # the run has started writing
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    err = err.decode()
    name = signal.Signals(sig).name
    assert proc.returncode == 130, err
    assert "Traceback" not in err and len(lines(err)) == 1
    assert f"interrupted by {name}" in err and "golden.interrupted.h5" in err
    assert out.read_bytes() == before
    with open_log(str(tmp_path / "golden.interrupted.h5")) as log:
        assert log.status == "interrupted"
        assert name in log.attrs["message"]
    assert not partials(tmp_path)


@pytest.mark.parametrize("delay", [0.2, 0.5, 1.5])
def test_a_signal_during_start_up_is_one_line_and_exit_130(tmp_path, delay):
    out = tmp_path / "x.h5"
    proc = _long_run(tmp_path, out)
    time.sleep(delay)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    err = err.decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "Aborted" not in err
    assert len(lines(err)) == 1 and "interrupted by SIGTERM" in err, err
    assert not partials(tmp_path)


_SIGNAL_IN_AN_IMPORT = """
import os, signal, sys
from raisimcli.cli import entry

class SignalOnImport:  # SIGTERM while the command imports {module}
    def find_spec(self, name, path=None, target=None):
        if name == "{module}":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGTERM)
        return None

sys.meta_path.insert(0, SignalOnImport())
sys.argv = ["raisimcli", "--version"]
entry._command()
"""


@pytest.mark.parametrize("module", ["click", "raisimcli.cli.main"])
def test_a_signal_in_the_command_s_first_imports_is_one_line_and_exit_130(module):
    # the imports at the command's start (click, the commands)
    # are inside its handling of a signal: one line, exit 130, no traceback. A SIGTERM in the
    # first one had given a traceback (seen under load, with the start-up test's 0.2 s delay)
    proc = subprocess.run([sys.executable, "-c", _SIGNAL_IN_AN_IMPORT.format(module=module)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr and len(lines(proc.stderr)) == 1
    assert "interrupted by SIGTERM" in proc.stderr


def test_a_start_up_signal_that_lands_in_a_destructor_still_stops_the_run(tmp_path):
    """Python ignores an exception raised in __del__ (numba's cache loading disposes of LLVM
    objects there): a SIGTERM whose handler ran there at start-up had let a long run go on for
    ever, after printing "Exception ignored ... Traceback". The run now stops before its first
    step, its log marked interrupted, and nothing is printed."""
    from raisimcli.cli.entry import install_signal_handlers
    from raisimcli.errors import Interrupted
    from raisimcli.scenario import load_scenario, run as run_scenario

    class Disposed:
        def __del__(self):
            signal.raise_signal(signal.SIGTERM)

    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    hook = sys.unraisablehook
    scn = load_scenario(str(scenario(tmp_path, steps=5000)), log_path=str(tmp_path / "x.h5"))
    try:
        install_signal_handlers()
        Disposed()  # the handler raises Interrupted in __del__: ignored, as numba's was
        with pytest.raises(Interrupted) as e:
            run_scenario(scn)
    finally:
        sys.unraisablehook = hook
        for s, h in saved.items():
            signal.signal(s, h)
    assert e.value.signal_name == "SIGTERM"
    with open_log(str(tmp_path / "x.h5")) as log:
        assert log.status == "interrupted" and len(log.time) == 0
    # and Python prints nothing of the exception it ignored (no "Exception ignored ... Traceback")
    code = ("import signal\n"
            "from raisimcli.cli.entry import install_signal_handlers\n"
            "from raisimcli.errors import take_interrupt\n"
            "class Disposed:\n"
            "    def __del__(self):\n"
            "        signal.raise_signal(signal.SIGTERM)\n"
            "install_signal_handlers()\n"
            "Disposed()\n"
            "print(take_interrupt())\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout, p.stderr) == (0, "SIGTERM\n", "")


def test_sigkill_leaves_a_partial_file_readable_to_its_last_flush(tmp_path):
    out = tmp_path / "run.h5"
    proc = _long_run(tmp_path, out)
    # the writer flushes after every chunk of 512 rows and at least every 2 s
    assert wait_for(lambda: partials(tmp_path))
    partial = tmp_path / partials(tmp_path)[0]

    def flushed():
        try:
            with open_log(str(partial)) as log:
                return len(log.time) >= 1024
        except Exception:  # noqa: BLE001 - not flushed yet
            return False

    assert wait_for(flushed)
    proc.kill()
    proc.wait(timeout=30)
    assert not out.exists()
    with open_log(str(partial)) as log:
        assert log.partial and log.status == "partial"
        n = len(log.time)
        assert n >= 1024
        assert np.array_equal(log.time, 0.001 * np.arange(1, n + 1))
        assert log.robot("p").signal("q").data.shape == (n, 1)
    r = run("compare", partial, partial)
    assert r.exit_code == 2 and "a partial log" in r.output
    assert partial.name.startswith("run.h5.partial-")
    # the next run to the same path removes the leftovers of dead runs
    assert run("run", scenario(tmp_path, steps=20), "-q", "-o", out).exit_code == 0
    assert not partial.exists() and out.exists()


def _limit_file_size(nbytes):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))


def _assert_write_failure(proc, folder, out, before, words):
    _, err = proc.communicate(timeout=300)
    err = err.decode()
    assert proc.returncode == 1, err
    assert "Traceback" not in err and len(lines(err)) == 1, err
    assert words in err and str(out) in err
    assert out.read_bytes() == before
    assert not partials(folder)


def test_file_size_limit_stops_the_run_with_one_message(tmp_path):
    out = tmp_path / "run.h5"
    assert run("run", scenario(tmp_path, steps=20), "-q", "-o", out).exit_code == 0
    before = out.read_bytes()
    s = scenario(tmp_path, steps=400_000, file="big.toml")
    proc = spawn(["run", s, "-q", "-o", out], tmp_path, preexec_fn=_limit_file_size(300_000))
    _assert_write_failure(proc, tmp_path, out, before, "File too large")


def test_full_disk_stops_the_run_with_one_message(tmp_path):
    with small_disk(tmp_path / "disk") as disk:
        out = disk / "run.h5"
        assert run("run", scenario(tmp_path, steps=20), "-q", "-o", out).exit_code == 0
        before = out.read_bytes()
        s = scenario(tmp_path, steps=400_000, file="big.toml")
        proc = spawn(["run", s, "-q", "-o", out], tmp_path)
        _assert_write_failure(proc, disk, out, before, "No space left on device")


# --- CI passing when it must fail -----------------------------------------------------------------
@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("pair")
    s = d / "s.toml"
    s.write_text(PEND.format(steps=20, name="p"))
    out = d / "a.h5"
    assert run("run", s, "-q", "-o", out).exit_code == 0
    return out


def _with(src, dst, path, values=None, attr=None):
    import shutil
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        if values is not None:
            f[path][...] = values
        if attr is not None:
            f.attrs[attr[0]] = attr[1]
    return dst


@pytest.mark.parametrize("golden,new,passes", [
    (-np.inf, np.inf, False), (np.inf, 0.5, False), (np.inf, np.inf, True), (0.5, np.inf, False),
    (-np.inf, -np.inf, True), (np.nan, np.nan, True), (np.nan, 0.0, False)])
def test_infinities_are_equal_only_when_identical(pair, tmp_path, golden, new, passes):
    g = _with(pair, tmp_path / "g.h5", "robots/p/energy/kinetic", values=golden)
    n = _with(pair, tmp_path / "n.h5", "robots/p/energy/kinetic", values=new)
    r = run("compare", g, n, "--rtol", "1", "--atol", "1")
    assert r.exit_code == (0 if passes else 1), r.output


@pytest.mark.parametrize("args", [["--rtol", "nan"], ["--atol", "nan"], ["--rtol", "inf"],
                                  ["--atol", "-1"], ["--include", "robots/nothing/*"],
                                  ["--exclude", "no_such_dataset"],
                                  ["--junit-xml", "missing/dir/r.xml"]])
def test_unusable_compare_arguments_exit_2_before_comparing(pair, tmp_path, args):
    os.chdir(tmp_path)
    r = run("compare", pair, pair, *args)
    assert r.exit_code == 2, r.output
    assert lines(r.output)[-1].startswith("error:") and "Traceback" not in r.output
    assert not os.path.exists(tmp_path / "missing")


def test_tolerance_file_with_nan_is_refused(pair, tmp_path):
    tol = tmp_path / "tol.toml"
    tol.write_text('"robots/*" = { rtol = nan }\n')
    r = run("compare", pair, pair, "--tolerances", tol)
    assert r.exit_code == 2 and "finite number" in r.output


def test_the_documented_tolerances_catch_a_small_regression(pair, tmp_path):
    tol = os.path.join(ROOT, "docs", "examples", "tolerances.toml")
    assert run("compare", pair, pair, "--tolerances", tol).exit_code == 0
    with h5py.File(pair) as f:
        q = f["robots/p/q"][()]
    bad = _with(pair, tmp_path / "q.h5", "robots/p/q", values=q + 1e-8)  # 10 nrad
    r = run("compare", pair, bad, "--tolerances", tol)
    assert r.exit_code == 1 and "robots/p/q" in r.output


@pytest.mark.parametrize("version", ["1", 1.5, True])
def test_a_format_version_that_is_not_an_integer_is_not_a_log(pair, tmp_path, version):
    bad = _with(pair, tmp_path / "v.h5", None, attr=("format_version", version))
    r = run("compare", pair, bad)
    assert r.exit_code == 2 and "not a raisimcli log" in r.output and "format_version" in r.output


@pytest.mark.parametrize("body", ["import sys\n    sys.exit(0)", "raise SystemExit(3)",
                                  "raise KeyboardInterrupt"])
def test_a_controller_that_exits_fails_the_run(tmp_path, body):
    (tmp_path / "ctrl.py").write_text(f"def control(t, robot):\n    {body}\n")
    s = scenario(tmp_path, text=PEND.format(steps=50, name="p") + 'controller = "ctrl.py:control"\n')
    out = tmp_path / "x.h5"
    r = spawn(["run", s, "-q", "-o", out], tmp_path)
    _, err = r.communicate(timeout=120)
    assert r.returncode == 1, err.decode()
    assert b"raised" in err and b"with status error" in err
    with open_log(str(out)) as log:
        assert log.status == "error"


# --- crashes and injections -----------------------------------------------------------------------
def _urdf(tmp_path, text, name="r.urdf"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_mimic_with_multiplier_zero_runs(tmp_path):
    """q_follower = 0 q_leader + c holds the follower at c: a row the mechanism cannot move
    (its friction row) must not break the solver."""
    text = open(f"{ROBOTS}/gripper.urdf").read()
    mimic = '<mimic joint="left_finger_joint" multiplier="1" offset="0"/>'
    assert mimic in text
    text = text.replace(mimic, '<mimic joint="left_finger_joint" multiplier="0" offset="0.01"/>')
    urdf = _urdf(tmp_path, text, "g.urdf")
    r = run("inspect", urdf, "-q")
    assert r.exit_code == 0 and "Traceback" not in r.output
    scn = open(f"{SCENARIOS}/gripper.toml").read().replace("../robots/gripper.urdf", str(urdf))
    out = tmp_path / "g.h5"
    r = run("run", scenario(tmp_path, text=scn), "-q", "-o", out, "--duration", "0.2")
    assert r.exit_code == 0, r.output
    with open_log(str(out)) as log:
        q = log.robot("gripper").signal("q").column("right_finger_joint")
        # the error feedback removes 30 % of the follower's offset error per step
        assert abs(q[-1] - 0.01) < 1e-12 and np.all(np.abs(np.diff(q[-50:])) < 1e-12)


def _pendulum_with_mesh(tmp_path, mesh_attrs):
    text = open(f"{ROBOTS}/pendulum.urdf").read()
    assert '<sphere radius="0.05"/>' in text
    return _urdf(tmp_path, text.replace('<sphere radius="0.05"/>', f"<mesh {mesh_attrs}/>"))


@pytest.mark.parametrize("attrs,words", [
    ('filename="m.stl" scale="0 0 0"', "flattens the mesh"),
    ('filename="junk.stl"', "not a mesh file trimesh can parse"),
    ('filename="two.stl"', "no volume")])
def test_what_run_would_refuse_about_meshes_inspect_refuses_with_the_line(tmp_path, attrs, words):
    import shutil
    shutil.copyfile(f"{ROBOTS}/acme_description/meshes/arm1.stl", tmp_path / "m.stl")
    (tmp_path / "junk.stl").write_bytes(np.random.default_rng(0).bytes(3000))
    (tmp_path / "two.stl").write_text("solid t\nfacet normal 0 0 1\n outer loop\n  vertex 0 0 0\n"
                                      "  vertex 1 0 0\n  vertex 0 1 0\n endloop\nendfacet\n"
                                      "endsolid t\n")
    urdf = _pendulum_with_mesh(tmp_path, attrs)
    line = next(i for i, x in enumerate(urdf.read_text().splitlines(), 1) if "<mesh" in x)
    r = run("inspect", urdf)
    assert r.exit_code == 2, r.output
    assert f"{urdf}:{line}: <mesh" in r.output and words in r.output
    assert len(lines(r.output)) == 1


def test_names_are_text_not_markup(tmp_path):
    text = open(f"{ROBOTS}/pendulum.urdf").read()
    evil = "a[/]b[link=http://evil.example]x[/link]"
    text = text.replace('<link name="bob">', f'<link name="{evil}">').replace(
        '<child link="bob"/>', f'<child link="{evil}"/>')
    assert evil in text
    r = run("inspect", _urdf(tmp_path, text))
    assert r.exit_code == 0, r.output
    assert evil in r.output


@pytest.mark.parametrize("name", ["a/b", "..", ".", "[/]x", "x y", "", "-x"])
def test_robot_names_that_are_not_group_names_are_refused(tmp_path, name):
    r = run("run", scenario(tmp_path, name=name), "-q", "-o", tmp_path / "x.h5")
    assert r.exit_code == 2 and "not a valid robot name" in r.output
    assert not (tmp_path / "x.h5").exists()


def _chain(n: int) -> str:
    """A URDF chain of n continuous joints."""
    links = "".join(f'<link name="l{i}"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" '
                    f'ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>' for i in range(n + 1))
    joints = "".join(f'<joint name="j{i}" type="continuous"><parent link="l{i}"/>'
                     f'<child link="l{i + 1}"/><axis xyz="0 1 0"/></joint>' for i in range(n))
    return f'<robot name="chain">\n{links}{joints}</robot>'


def test_a_huge_model_is_refused_before_it_is_built(tmp_path):
    urdf = _urdf(tmp_path, _chain(1000))
    t0 = time.time()
    r = run("inspect", urdf)
    assert time.time() - t0 < 10
    assert r.exit_code == 2 and "1000 moving joints" in r.output and "--max-joints" in r.output
    assert f"{urdf}:1:" in r.output
    small = _urdf(tmp_path, _chain(5), "small.urdf")
    assert run("inspect", small, "--max-joints", "4").exit_code == 2
    assert run("inspect", small, "--max-joints", "5", "-q").exit_code == 0


def test_absolute_mesh_paths_outside_the_model_are_listed(tmp_path):
    import shutil
    (tmp_path / "model").mkdir()
    shutil.copyfile(f"{ROBOTS}/acme_description/meshes/arm1.stl", tmp_path / "outside.stl")
    for uri in (str(tmp_path / "outside.stl"), f"file://{tmp_path / 'outside.stl'}"):
        urdf = _pendulum_with_mesh(tmp_path / "model", f'filename="{uri}"')
        r = run("inspect", urdf)
        assert r.exit_code == 0, r.output
        assert f"mesh outside the model's folder: {tmp_path / 'outside.stl'}" in r.output
        js = json.loads(run("inspect", urdf, "--json").stdout)
        assert [c["outside_model_folder"] for link in js["links"] for c in link["collisions"]] \
            == [True]


# --- quieter defects ------------------------------------------------------------------------------
@pytest.mark.parametrize("old,new,path", [
    ("dt = 0.001", 'dt = "0.001"', "world.dt"),
    ("dt = 0.001", "dt = true", "world.dt"),
    ("q = [0.5]", "q = [true]", "robot[0].initial.q"),
    ('name = "p"', "name = 3", "robot[0].name"),
])
def test_wrong_toml_types_are_refused(tmp_path, old, new, path):
    text = PEND.format(steps=10, name="p").replace(old, new)
    r = run("run", scenario(tmp_path, text=text), "-q", "-o", tmp_path / "x.h5")
    assert r.exit_code == 2 and path in r.output, r.output


def test_pd_gain_of_the_wrong_type_or_sign(tmp_path):
    base = PEND.format(steps=10, name="p") + "[robot.pd]\nkp = KP\nkd = 0.1\n"
    r = run("run", scenario(tmp_path, text=base.replace("KP", "true")), "-q")
    assert r.exit_code == 2 and "robot[0].pd.kp" in r.output
    r = run("run", scenario(tmp_path, text=base.replace("KP", "-5.0")), "-q")
    assert r.exit_code == 2 and "s.toml: robot[0].pd.kp: gains must be >= 0" in r.output


def test_unknown_schedule_type_names_the_known_ones(tmp_path):
    text = PEND.format(steps=10, name="p") + (
        "[robot.pd]\nkp = 1.0\nkd = 0.1\n[robot.pd.target]\nhinge = { type = \"sinus\" }\n")
    r = run("run", scenario(tmp_path, text=text), "-q")
    assert r.exit_code == 2 and "robot[0].pd.target.hinge" in r.output
    assert "sinus" in r.output and "sine" in r.output
    assert "valid number" not in r.output


def test_messages_say_what_is_wrong(tmp_path):
    text = open(f"{ROBOTS}/pendulum.urdf").read()
    heavy = _urdf(tmp_path, text.replace('<mass value="1"/>', '<mass value="1e300"/>', 1), "h.urdf")
    assert '<mass value="1e300"/>' in heavy.read_text()
    r = run("inspect", heavy)
    assert r.exit_code == 2 and "beyond any robot link" in r.output and "no mass" not in r.output
    underscore = _urdf(tmp_path, text.replace('<mass value="1"/>', '<mass value="2_5"/>', 1),
                       "u.urdf")
    r = run("inspect", underscore)
    assert r.exit_code == 2 and "must be a number, got '2_5'" in r.output


def test_divergence_message_prints_plain_numbers(tmp_path):
    text = PEND.format(steps=2000, name="p") + "[[robot.external]]\nlink = \"bob\"\nforce = [1e30, 0.0, 0.0]\n"
    r = run("run", scenario(tmp_path, text=text), "-q", "-o", tmp_path / "d.h5")
    assert r.exit_code == 1 and "diverged" in r.output
    assert "np.float64" not in r.output


def test_csv_with_a_byte_order_mark(tmp_path):
    (tmp_path / "t.csv").write_bytes("\ufefftime,a\n0,0\n1,1\n".encode("utf-8"))
    text = PEND.format(steps=10, name="p") + (
        '[robot.pd]\nkp = 1.0\nkd = 0.1\n[robot.pd.target]\n'
        'hinge = { type = "csv", file = "t.csv", column = "a" }\n')
    r = run("run", scenario(tmp_path, text=text), "-q", "-o", tmp_path / "x.h5")
    assert r.exit_code == 0, r.output


def test_undecodable_scenario_bytes_are_refused(tmp_path):
    p = tmp_path / "s.toml"
    p.write_bytes(PEND.format(steps=10, name="p").encode() + b'description = "caf\xe9"\n')
    r = run("run", p, "-q", "-o", tmp_path / "x.h5")
    assert r.exit_code == 2 and "not valid UTF-8" in r.output and f"{p}:" in r.output


def test_zero_quaternion_in_the_initial_state_is_refused(tmp_path):
    text = f"""[world]
dt = 0.001
steps = 10
[[robot]]
urdf = "{ROBOTS}/quadruped.urdf"
[robot.initial]
q = {{ "root.qw" = 0.0 }}
"""
    r = run("run", scenario(tmp_path, text=text), "-q", "-o", tmp_path / "x.h5")
    assert r.exit_code == 2 and "robot[0].initial.q" in r.output and "is zero" in r.output


def test_json_onto_a_full_stdout_is_one_message_exit_1(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "raisimcli", "inspect",
                            f"{ROBOTS}/pendulum.urdf", "--json"], stdout=full,
                           stderr=subprocess.PIPE, cwd=ROOT)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert "Traceback" not in err and len(lines(err)) == 1 and "standard output" in err
