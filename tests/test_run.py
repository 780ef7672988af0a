"""`raisimcli run`: the log's layout read with plain h5py, determinism, interruption, divergence,
custom controllers against the built-in PD (the spec's implicit terms), and the reader API."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from conftest import ROBOTS, SCENARIOS, assert_close
from raisimcli.cli.main import cli


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def write(tmp_path, text, name="s.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


QUAD = f"""schema_version = 1
[world]
dt = 0.001
steps = {{steps}}
gravity = [0.0, 0.0, -9.81]
[[robot]]
name = "dog"
urdf = "{ROBOTS}/quadruped.urdf"
[robot.initial]
q = {{{{ "root.z" = 0.6, LF_HFE = 0.5 }}}}
u = {{{{ LF_KFE = 2.0 }}}}
[robot.pd]
kp = 60.0
kd = 1.5
[robot.pd.target]
RF_HFE = {{{{ type = "sine", amplitude = 0.4, frequency = 2.0 }}}}
[robot.actuators.torque]
LF_KFE_belt_drive = 3.0
"""


def test_plain_h5py_layout(tmp_path):
    out = tmp_path / "log.h5"
    r = run("run", write(tmp_path, QUAD.format(steps=50)), "-q", "-o", out)
    assert r.exit_code == 0, r.output
    with h5py.File(out, "r") as f:
        assert f.attrs["format"] == "raisimcli-log" and f.attrs["format_version"] == 2
        assert f.attrs["status"] == "complete" and f.attrs["rows"] == 50
        assert len(f.attrs["scenario_sha256"]) == 64 and "tool_version" in f.attrs
        t = f["time"][()]
        assert_close(t, 0.001 * np.arange(1, 51), rtol=1e-15, atol=0)
        assert f["time"].attrs["units"] == "s"
        assert f["time"].attrs["CLASS"] == b"DIMENSION_SCALE"
        g = f["robots/dog"]
        names = [n.decode() for n in g["coordinate_names"][()]]
        assert names[:3] == ["root.x", "root.y", "root.z"] and len(names) == 19
        dofs = [n.decode() for n in g["dof_names"][()]]
        assert g["q"].shape == (50, 19) and g["u"].shape == (50, 18)
        for source in ("feedforward_pd", "damping", "actuators", "springs", "external",
                       "joint_friction", "joint_limits", "total"):
            ds = g[f"torque/{source}"]
            assert ds.shape == (50, 18)
            assert ds.dims[0][0] == f["time"]         # the time axis is attached as a scale
            assert ds.dims[1][0] == g["dof_names"]    # and so is the DoF axis
            assert ds.attrs["names"] == "robots/dog/dof_names"
            # CF units, one per column where they differ; prose apart
            assert list(ds.attrs["column_units"][:6]) == ["N"] * 3 + ["N m"] * 3
            assert "units" not in ds.attrs and ds.attrs["description"]
        assert list(g["u"].attrs["column_units"][:6]) == ["m s-1"] * 3 + ["rad s-1"] * 3
        assert [u.decode() for u in g["force_units"][()]][:6] == ["N"] * 3 + ["N m"] * 3
        assert g["energy/kinetic"].attrs["units"] == "J"
        assert g["actuators/applied"].shape == (50, 12)
        assert g.attrs["urdf_sha256"] and "quadruped" in g["urdf"][()].decode()
        assert "[world]" in f["meta/scenario"][()].decode()
        # total is the sum of the rows, as the spec's table says
        total = sum(g[f"torque/{s}"][()] for s in ("feedforward_pd", "damping", "actuators",
                                                   "springs", "external", "joint_friction",
                                                   "joint_limits"))
        assert_close(g["torque/total"][()], total, rtol=1e-13, atol=1e-12)
        assert dofs[dofs.index("LF_KFE")] == "LF_KFE"


@pytest.mark.skipif(shutil.which("h5dump") is None, reason="no h5dump (Debian's hdf5-tools)")
@pytest.mark.parametrize("helper", ["1", "0"])
def test_the_log_opens_in_h5dump(tmp_path, monkeypatch, helper):
    """The log is in HDF5's 1.10 format, so that tools built on an older HDF5 than h5py's open
    it (Debian's h5dump is 1.10; the 2.0 format of h5py's HDF5 had made it fail on the root
    group), its gzip chunks (libdeflate's, written by the helper process or, without it, by the
    run's) included."""
    monkeypatch.setenv("RAISIMCLI_DEFLATE_HELPER", helper)
    out = tmp_path / "o.h5"
    assert run("run", os.path.join(SCENARIOS, "quadruped_stand.toml"), "--duration", "1.5", "-q",
               "-o", out).exit_code == 0
    header = subprocess.run(["h5dump", "-H", str(out)], capture_output=True, text=True)
    assert header.returncode == 0 and "robots/quadruped/q" not in header.stderr, header.stderr
    with h5py.File(out) as f:
        assert f["robots/quadruped/q"].compression == "gzip"
        assert f["contacts/position"].compression == "gzip"
        q = f["robots/quadruped/q"][()]
        p = f["contacts/position"][()]
    assert len(p) > 4000  # (several chunks of 512 contacts)
    for name, values, row in (("robots/quadruped/q", q, 500), ("robots/quadruped/q", q, 1200),
                              ("contacts/position", p, 700), ("contacts/position", p, len(p) - 1)):
        # a full chunk (the helper's) and the last, partial one; a full chunk of contacts and
        # the last one, written again at each chunk of rows while it was partial
        cell = subprocess.run(["h5dump", "-d", f"/{name}", "-s", f"{row},2", "-c",
                               "1,1", "-m", "%.17g", str(out)], capture_output=True, text=True)
        assert cell.returncode == 0, cell.stderr
        assert f"({row},2): {float(values[row, 2]):.17g}" in cell.stdout, cell.stdout


def test_same_scenario_gives_bit_identical_logs(tmp_path):
    p = write(tmp_path, QUAD.format(steps=300))
    for out in ("a.h5", "b.h5"):
        assert run("run", p, "-q", "-o", tmp_path / out).exit_code == 0
    with h5py.File(tmp_path / "a.h5") as a, h5py.File(tmp_path / "b.h5") as b:
        paths = []
        a.visititems(lambda n, o: paths.append(n) if isinstance(o, h5py.Dataset) else None)
        assert len(paths) > 20
        for n in paths:
            if a[n].dtype.kind == "O":  # strings
                assert np.array_equal(a[n][()], b[n][()]), n
            else:
                assert a[n][()].tobytes() == b[n][()].tobytes(), n
        for k in a.attrs:
            if k != "created":
                assert np.array_equal(a.attrs[k], b.attrs[k]), k


def test_a_log_of_contacts_leaves_the_steps_results_to_be_reused(tmp_path, monkeypatch):
    """The log copies a quick step's contact block when it logs the row: had it kept a view
    until the chunk is written, each step's result arrays would stay held, and every step
    would make new ones (step/quick.py's pool). A standing quadruped logged with its contacts
    for 700 steps (a chunk of 512 rows written on the way) makes a handful of result sets, and
    its contacts are in the log."""
    from raisimcli.physics.step import quick
    from raisimcli.scenario import load_scenario, run as run_scenario
    made = []

    class Counted(quick._Results):
        def __init__(self, *a):
            made.append(1)
            super().__init__(*a)

    monkeypatch.setattr(quick, "_Results", Counted)
    out = tmp_path / "stand.h5"
    res = run_scenario(load_scenario(os.path.join(SCENARIOS, "quadruped_stand.toml"),
                                     ('log.signals=["state", "contacts"]',), duration=0.7,
                                     log_path=str(out)))
    assert res.steps == 700
    assert 1 <= len(made) <= quick._POOL + 2, len(made)
    with h5py.File(out) as f:
        counts = f["contacts/count"][()]
        assert counts[-100:].min() == 4 and len(f["contacts/position"]) == counts.sum()


@pytest.mark.parametrize("budget", [8, 1])
def test_contact_chunks_go_to_the_helper_with_their_rows(tmp_path, monkeypatch, budget):
    """With the helper process, each full chunk of rows takes its contacts' chunks along when
    they fit in the helper's job (room for CONTACTS_IN_HELPER contacts a row; with room for 1,
    a standing quadruped's 4 do not fit and are compressed in the run's process). Either way
    the log holds, chunk for chunk, the bytes of a log written without the helper."""
    import functools
    from raisimcli.log import writer as writer_module
    from raisimcli.scenario import load_scenario, run as run_scenario
    from raisimcli.scenario import runner
    monkeypatch.setattr(writer_module, "CONTACTS_IN_HELPER", budget)
    from_helper = []
    real_write = writer_module._ChunkAppender.write
    monkeypatch.setattr(writer_module._ChunkAppender, "write", lambda self, plan, done=None: (
        from_helper.append(done is not None), real_write(self, plan, done))[1])
    logs = {}
    for helper in (True, False):
        monkeypatch.setattr(runner, "LogWriter",
                            functools.partial(writer_module.LogWriter, deflate_helper=helper))
        from_helper.clear()
        out = tmp_path / f"helper{helper}.h5"
        res = run_scenario(load_scenario(os.path.join(SCENARIOS, "quadruped_stand.toml"),
                                         ('log.signals=["state", "contacts"]',), duration=1.2,
                                         log_path=str(out)))
        assert res.steps == 1200
        logs[helper] = out
        if helper:  # two full chunks of rows went to the helper, the last one was written here
            assert from_helper.count(True) == (20 if budget == 8 else 0), from_helper
        else:
            assert not any(from_helper)
    with h5py.File(logs[True]) as a, h5py.File(logs[False]) as b:
        for name in ("count", "start", "position", "normal", "impulse_world", "impulse_contact",
                     "force", "penetration", "body_a", "body_b"):
            x, y = a[f"contacts/{name}"], b[f"contacts/{name}"]
            assert x.shape == y.shape and x[()].tobytes() == y[()].tobytes(), name
            for at in range(0, x.shape[0], x.chunks[0]):
                offset = (at,) + (0,) * (x.ndim - 1)
                assert x.id.read_direct_chunk(offset) == y.id.read_direct_chunk(offset), name


@pytest.mark.parametrize("helper", [True, False])
def test_timed_flushes_between_chunks_keep_rows_and_contacts(tmp_path, monkeypatch, helper):
    """Flushes every few milliseconds (the timer's, which write a chunk of rows in parts, and
    the contacts' chunks again each time) between 64-row chunks, with and without the helper:
    the log holds the bits of one written without timed flushes."""
    import functools
    from raisimcli.log import writer as writer_module
    from raisimcli.scenario import load_scenario, run as run_scenario
    from raisimcli.scenario import runner
    logs = {}
    for name, seconds in (("timed", 0.003), ("reference", 1e9)):
        monkeypatch.setattr(writer_module, "FLUSH_SECONDS", seconds)
        monkeypatch.setattr(runner, "LogWriter", functools.partial(
            writer_module.LogWriter, chunk_rows=64, deflate_helper=helper))
        logs[name] = tmp_path / f"{name}.h5"
        run_scenario(load_scenario(os.path.join(SCENARIOS, "quadruped_drop.toml"), (),
                                   duration=0.6, log_path=str(logs[name])))
    with h5py.File(logs["timed"]) as a, h5py.File(logs["reference"]) as b:
        assert a["contacts/count"][()].sum() > 500
        paths = []
        a.visititems(lambda n, o: paths.append(n) if isinstance(o, h5py.Dataset) else None)
        for n in paths:
            if a[n].dtype.kind != "O":
                assert a[n].shape == b[n].shape and a[n][()].tobytes() == b[n][()].tobytes(), n


def test_rows_flushed_chunk_by_chunk_are_the_rows_of_one_chunk(tmp_path, monkeypatch):
    """Each full chunk is written and flushed during the run, the last one at close. With 16-row
    chunks (25 flushes; the contacts' chunks, 16 contacts each, written again while partial)
    the log must hold exactly what one chunk written at close holds, and what HDF5 itself
    writes without compression."""
    import functools
    from raisimcli.log.writer import LogWriter
    from raisimcli.scenario import load_scenario, run as run_scenario
    from raisimcli.scenario import runner
    logs = {}
    for chunk, compression in ((16, "gzip"), (100_000, "gzip"), (16, "none")):
        monkeypatch.setattr(runner, "LogWriter", functools.partial(LogWriter, chunk_rows=chunk))
        out = tmp_path / f"chunk{chunk}{compression}.h5"
        res = run_scenario(load_scenario(os.path.join(SCENARIOS, "quadruped_drop.toml"),
                                         (f'log.compression="{compression}"',),
                                         duration=0.4, log_path=str(out)))
        assert res.steps == 400
        logs[chunk, compression] = out
    for other in ((100_000, "gzip"), (16, "none")):
        with h5py.File(logs[16, "gzip"]) as a, h5py.File(logs[other]) as b:
            assert a["robots/quadruped/q"].chunks[0] == 16
            assert a["contacts/position"].chunks[0] == 16
            assert a["contacts/count"][()].sum() > 40  # (more than two contacts' chunks)
            paths = []
            a.visititems(lambda n, o: paths.append(n) if isinstance(o, h5py.Dataset) else None)
            assert len(paths) > 20
            for n in paths:
                assert a[n].shape == b[n].shape, n
                if n.startswith("meta/") and other[1] == "none":  # (its config says "none")
                    continue
                if a[n].dtype.kind == "O":
                    assert np.array_equal(a[n][()], b[n][()]), n
                else:
                    assert a[n][()].tobytes() == b[n][()].tobytes(), n
            assert a.attrs["rows"] == 400 and a.attrs["status"] == "complete"


def _spawn(args, cwd, **kw):
    env = dict(os.environ)
    return subprocess.Popen([sys.executable, "-m", "raisimcli", *map(str, args)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, **kw)


def _wait_for_rows(tmp_glob_dir, timeout=60):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if any(p.name.startswith("long.h5.partial-") for p in tmp_glob_dir.iterdir()):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("sig,group", [(signal.SIGINT, False), (signal.SIGTERM, False),
                                       (signal.SIGINT, True)])
def test_sigint_leaves_readable_interrupted_log(tmp_path, sig, group):
    """A signal to the run, or (group) Ctrl-C in a terminal, which signals the run's whole
    process group: the log's helper process (log/deflate.py) too."""
    p = write(tmp_path, QUAD.format(steps=10_000_000).replace("[robot.pd]", "[log]\ndecimation = 1\n[robot.pd]", 0))
    out = tmp_path / "long.h5"
    proc = _spawn(["run", p, "-q", "-o", out], tmp_path, start_new_session=group)
    assert _wait_for_rows(tmp_path)
    time.sleep(2.5)  # past the first 512-row chunks
    if group:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    assert b"Traceback" not in err
    with h5py.File(out) as f:
        assert f.attrs["status"] == "interrupted"
        n = f.attrs["rows"]
        assert n > 0 and f["time"].shape == (n,)
        # every step up to the stop: no gap in the time axis
        assert_close(f["time"][()], 0.001 * np.arange(1, n + 1), rtol=1e-12, atol=0)
        assert f["robots/dog/q"].shape == (n, 19)
    assert not [x for x in tmp_path.iterdir() if ".partial-" in x.name]


def test_sigkill_leaves_no_corrupt_file_under_the_final_name(tmp_path):
    p = write(tmp_path, QUAD.format(steps=10_000_000))
    out = tmp_path / "long.h5"
    short = write(tmp_path, QUAD.format(steps=5), "short.toml")
    assert run("run", short, "-q", "-o", out).exit_code == 0
    previous = out.read_bytes()  # an earlier log there is not corrupted either
    proc = _spawn(["run", p, "-q", "-o", out], tmp_path)
    assert _wait_for_rows(tmp_path)
    time.sleep(1.0)
    proc.kill()
    proc.wait(timeout=30)
    assert out.read_bytes() == previous


CONTROLLER_PD = """
import numpy as np
KP, KD = {kp}, {kd}

def control(t, robot):
    q, u = robot.get_state()
    robot.set_generalized_force(KP * ({target} - q) - KD * u)
"""


def _wheel(tmp_path, body):
    (tmp_path / "wheel.urdf").write_text(
        '<robot name="wheel"><link name="world"/><link name="disc"><inertial><mass value="2"/>'
        '<inertia ixx="1" iyy="1" izz="0.5" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        '<joint name="spin" type="continuous"><parent link="world"/><child link="disc"/>'
        '<axis xyz="0 0 1"/></joint></robot>')
    return write(tmp_path, f"""schema_version = 1
[world]
dt = 0.01
steps = {{steps}}
[[robot]]
urdf = "wheel.urdf"
{body}
""", name=f"s{abs(hash(body)) % 10000}.toml")


def test_custom_controller_pd_matches_builtin_up_to_the_implicit_terms(tmp_path):
    kp, kd, target, dt = 40.0, 3.0, 1.0, 0.01
    (tmp_path / "ctrl.py").write_text(CONTROLLER_PD.format(kp=kp, kd=kd, target=target))
    hand = _wheel(tmp_path, 'controller = "ctrl.py:control"')
    builtin = _wheel(tmp_path, f"[robot.pd]\nkp = {kp}\nkd = {kd}\n[robot.pd.target]\nspin = {target}")
    from raisimcli.log import open_log
    # one step from the same state: the applied PD torques differ by -(kd/2 + dt/4 kp) du,
    # the spec's implicit part
    for name, p in (("hand", hand), ("builtin", builtin)):
        p.write_text(p.read_text().replace("{steps}", "1"))
        assert run("run", p, "-q", "-o", tmp_path / f"{name}1.h5").exit_code == 0
    with open_log(tmp_path / "hand1.h5") as a, open_log(tmp_path / "builtin1.h5") as b:
        ra, rb = a.robot("wheel"), b.robot("wheel")
        tau_hand = ra.signal("torque/feedforward_pd").data[0, 0]
        tau_builtin = rb.signal("torque/feedforward_pd").data[0, 0]
        du = rb.signal("u").data[0, 0]  # from rest
        assert tau_hand == pytest.approx(kp * target, rel=1e-14)
        assert tau_builtin - tau_hand == pytest.approx(-(kd / 2 + dt / 4 * kp) * du, rel=1e-12)
        # and the velocities follow: I du = dt tau
        assert du == pytest.approx(dt * tau_builtin / 0.5, rel=1e-12)
    # over a run, both settle on the target; the explicit one differs by O(dt)
    for name, p in (("hand", hand), ("builtin", builtin)):
        p.write_text(p.read_text().replace("steps = 1\n", "steps = 400\n"))
        assert run("run", p, "-q", "-o", tmp_path / f"{name}.h5").exit_code == 0
    with open_log(tmp_path / "hand.h5") as a, open_log(tmp_path / "builtin.h5") as b:
        qa = a.robot("wheel").signal("q").data[:, 0]
        qb = b.robot("wheel").signal("q").data[:, 0]
        assert abs(qa[-1] - target) < 1e-3 and abs(qb[-1] - target) < 1e-3
        assert 1e-4 < np.abs(qa - qb).max() < 0.2


def test_controller_exception_shows_user_traceback_and_keeps_log(tmp_path):
    (tmp_path / "bad.py").write_text("def helper(x):\n    return 1 / x\n\n"
                                     "def control(t, robot):\n    if t > 0.05:\n"
                                     "        helper(0)\n")
    p = _wheel(tmp_path, 'controller = "bad.py:control"')
    p.write_text(p.read_text().replace("{steps}", "100"))
    out = tmp_path / "log.h5"
    r = run("run", p, "-q", "-o", out)
    assert r.exit_code == 1
    assert "bad.py" in r.output and "ZeroDivisionError" in r.output and "helper(0)" in r.output
    assert "raisimcli/" not in r.output  # only the user's frames
    with h5py.File(out) as f:
        assert f.attrs["status"] == "error" and "ZeroDivisionError" in f.attrs["message"]
        assert f.attrs["rows"] >= 5


def test_divergence_stops_with_status_and_message(tmp_path):
    (tmp_path / "wild.py").write_text(CONTROLLER_PD.format(kp=1e7, kd=0.0, target=1.0))
    p = _wheel(tmp_path, 'controller = "wild.py:control"')
    p.write_text(p.read_text().replace("{steps}", "10000"))
    out = tmp_path / "log.h5"
    r = run("run", p, "-q", "-o", out)
    assert r.exit_code == 1
    assert "robot 'wheel' diverged at t = " in r.output and "[spin]" in r.output
    with h5py.File(out) as f:
        assert f.attrs["status"] == "diverged"
        assert f.attrs["rows"] < 10000


def test_divergence_names_the_first_coordinate_or_velocity_beyond_the_limit():
    """The divergence check names the first coordinate beyond the limit (or not finite), else
    the first velocity, with its value; a robot within the limit passes."""
    from types import SimpleNamespace
    from raisimcli.scenario.runner import DIVERGENCE_LIMIT, _diverged
    s = SimpleNamespace(name="r", q=np.zeros(3), u=np.zeros(2), coordinate_names=["a", "b", "c"],
                        dof_names=["x", "y"])
    drivers = [SimpleNamespace(system=s)]
    assert _diverged(drivers, 0.5) is None
    s.u[1] = -2 * DIVERGENCE_LIMIT
    assert _diverged(drivers, 0.5) == f"robot 'r' diverged at t = 0.5 s: u[y] = {s.u[1]:.6g}"
    s.q[2] = np.nan
    assert _diverged(drivers, 0.5) == "robot 'r' diverged at t = 0.5 s: q[c] = nan"


def test_overrides_and_duration(tmp_path):
    p = write(tmp_path, QUAD.format(steps=10))
    out = tmp_path / "o.h5"
    r = run("run", p, "-q", "-o", out, "--duration", "0.02", "--set", "world.dt=0.002",
            "--set", "robot.0.pd.kp=10")
    assert r.exit_code == 0, r.output
    with h5py.File(out) as f:
        assert f.attrs["rows"] == 10 and f.attrs["dt"] == 0.002
        import json
        cfg = json.loads(f["meta/config"][()].decode())
        assert cfg["robot"][0]["pd"]["kp"] == 10 and cfg["world"]["duration"] == 0.02


def test_json_summary(tmp_path):
    import json
    r = CliRunner().invoke(cli, ["run", str(write(tmp_path, QUAD.format(steps=20))), "--json",
                                 "-o", str(tmp_path / "o.h5")])
    assert r.exit_code == 0
    s = json.loads(r.stdout)
    assert s["status"] == "complete" and s["steps"] == 20 and s["real_time_factor"] > 0
    assert 0 < s["first_step_time"] <= s["wall_time"]


def test_summary_says_when_the_first_step_compiled(tmp_path, monkeypatch):
    """A first run in a new environment spends most of its wall time compiling the step's loops
    in its first step: the summary says so, beside a real-time factor that is mostly that."""
    import raisimcli.scenario
    real_run = raisimcli.scenario.run
    p, out = write(tmp_path, QUAD.format(steps=20)), tmp_path / "o.h5"
    for first, said in ((0.001, False), (11.0, True)):
        def run_compiling(*a, **k):
            res = real_run(*a, **k)
            res.wall_time, res.first_step_time = res.wall_time + first, first
            return res
        monkeypatch.setattr(raisimcli.scenario, "run", run_compiling)
        r = run("run", p, "-o", out)
        assert r.exit_code == 0, r.output
        assert ("11.0 s of it the first step: numba compiling" in r.stdout) == said, r.stdout


def test_open_log_api(tmp_path):
    from raisimcli.log import open_log
    out = tmp_path / "o.h5"
    assert run("run", write(tmp_path, QUAD.format(steps=30)), "-q", "-o", out).exit_code == 0
    with open_log(out) as log:
        assert log.status == "complete" and log.robot_names == ["dog"]
        dog = log.robot("dog")
        q = dog.signal("q")
        assert q.data.shape == (30, 19) and q.names[7] == "LF_HAA"
        tau = dog.signal("torque/actuators")
        assert tau.column("LF_KFE").shape == (30,)
        assert "torque/total" in dog.signals()
    from raisimcli.errors import LogError
    with pytest.raises(LogError, match="not a raisimcli log"):
        h5py.File(tmp_path / "other.h5", "w").close()
        open_log(tmp_path / "other.h5")


@pytest.mark.parametrize("scenario", sorted(f for f in os.listdir(SCENARIOS) if f.endswith(".toml")))
def test_every_shipped_scenario_runs(tmp_path, scenario):
    r = run("run", os.path.join(SCENARIOS, scenario), "-q", "-o", tmp_path / "o.h5",
            "--duration", "0.05")
    assert r.exit_code == 0, r.output


def test_every_group_opens_in_xarray_with_labelled_dimensions(tmp_path):
    """The netCDF view of the log (h5netcdf): every axis of every dataset has a dimension scale,
    so xarray opens each group; names, shapes and values are those of the log."""
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    out = tmp_path / "stand.h5"
    r = run("run", os.path.join(SCENARIOS, "quadruped_stand.toml"), "-q", "--duration", "0.05",
            "-o", out, "--set", "robot.0.inverse_dynamics=true")
    assert r.exit_code == 0, r.output
    groups = []
    with h5py.File(out) as f:
        f.visititems(lambda name, obj: groups.append(name) if isinstance(obj, h5py.Group) else None)
        time = f["time"][()]
        q = f["robots/quadruped/q"][()]
        tau = f["robots/quadruped/torque/total"][()]
        force = f["robots/quadruped/inverse_dynamics/force_world"][()]
        dofs = [d.decode() for d in f["robots/quadruped/dof_names"][()]]
        n_contacts = f["contacts/position"].shape[0]
    assert "robots/quadruped/torque" in groups and "contacts" in groups
    for g in groups:
        xr.open_dataset(out, engine="h5netcdf", group=g).close()
    with xr.open_dataset(out, engine="h5netcdf", group="robots/quadruped") as ds:
        assert ds["q"].dims == ("time", "coordinate_names") and ds["q"].shape == q.shape
        assert np.array_equal(ds["q"].values, q)
        assert np.array_equal(ds["time"].values, time)
    with xr.open_dataset(out, engine="h5netcdf", group="robots/quadruped/torque") as ds:
        assert ds["total"].dims == ("time", "dof_names")
        assert list(ds["dof_names"].values) == dofs and np.array_equal(ds["total"].values, tau)
    with xr.open_dataset(out, engine="h5netcdf", group="robots/quadruped/inverse_dynamics") as ds:
        assert ds["force_world"].dims == ("time", "joint_names", "xyz")
        assert np.array_equal(ds["force_world"].values, force)
    with xr.open_dataset(out, engine="h5netcdf", group="contacts") as ds:
        assert ds["position"].dims == ("contact", "xyz") and ds.sizes["contact"] == n_contacts
        assert ds["count"].dims == ("time",) and int(ds["count"].sum()) == n_contacts


def test_signals_and_contacts_as_tables(tmp_path):
    pytest.importorskip("pandas")
    from raisimcli.log import open_log
    out = tmp_path / "stand.h5"
    assert run("run", os.path.join(SCENARIOS, "quadruped_stand.toml"), "-q", "--duration",
               "0.05", "-o", out).exit_code == 0
    with open_log(str(out)) as log, h5py.File(out) as f:
        sig = log.robot("quadruped").signal("torque/damping")
        df = sig.to_pandas()
        assert list(df.columns) == [d.decode() for d in f["robots/quadruped/dof_names"][()]]
        assert np.array_equal(df.index.values, f["time"][()])
        assert np.array_equal(df.values, f["robots/quadruped/torque/damping"][()])
        da = sig.to_xarray()
        assert da.dims == ("time", "dof_names") and da.attrs["column_units"][6] == "N m"
        contacts = log.contacts()
        count = f["contacts/count"][()]
        assert len(contacts) == count.sum()
        row = int(np.argmax(count))
        at = contacts[contacts["row"] == row]
        assert np.array_equal(at[["force_x", "force_y", "force_z"]].values,
                              log.contacts_at(row)["force"])
        assert set(at["body_b"]) == {"ground"} and all(at["body_a"].str.startswith("quadruped/"))
        assert np.allclose(at["time"], f["time"][row])


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_writes_every_signal_as_a_table(tmp_path, fmt):
    pd = pytest.importorskip("pandas")
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    out = tmp_path / "stand.h5"
    assert run("run", os.path.join(SCENARIOS, "quadruped_stand.toml"), "-q", "--duration",
               "0.02", "-o", out).exit_code == 0
    r = run("export", out, "--format", fmt, "-o", tmp_path / "tables", "--json")
    assert r.exit_code == 0, r.output
    import json
    files = json.loads(r.stdout)["files"]
    read = pd.read_csv if fmt == "csv" else pd.read_parquet
    with h5py.File(out) as f:
        path = tmp_path / "tables" / "quadruped" / f"torque/total.{fmt}"
        assert str(path) in files
        df = read(path, index_col=0) if fmt == "csv" else read(path)
        names = [d.decode() for d in f["robots/quadruped/dof_names"][()]]
        units = [str(u) for u in f["robots/quadruped/torque/total"].attrs["column_units"]]
        if fmt == "csv":  # the units in the header: "name [unit]"
            assert list(df.columns) == [f"{n} [{u}]" for n, u in zip(names, units)]
            assert df.index.name == "time [s]"
        else:  # the units in each field's metadata
            import pyarrow.parquet as pq
            schema = pq.read_schema(path)
            assert [schema.field(n).metadata[b"units"].decode() for n in names] == units
            assert schema.field("time").metadata[b"units"] == b"s"
            assert list(df.columns) == names
        assert np.array_equal(df.values, f["robots/quadruped/torque/total"][()])  # all 17 digits
        assert np.array_equal(np.asarray(df.index, dtype=float), f["time"][()])
        contacts = read(tmp_path / "tables" / f"contacts.{fmt}")
        assert len(contacts) == f["contacts/count"][()].sum()
        if fmt == "csv":
            assert {"force_z [N]", "impulse_z [N s]", "penetration [m]", "body_a"} <= \
                set(contacts.columns)


def test_export_without_pandas_says_how_to_install_it(tmp_path, monkeypatch):
    out = tmp_path / "p.h5"
    assert run("run", os.path.join(SCENARIOS, "pendulum.toml"), "-q", "--duration", "0.01",
               "-o", out).exit_code == 0
    monkeypatch.setitem(sys.modules, "pandas", None)
    r = run("export", out, "-o", tmp_path / "t")
    assert r.exit_code == 2 and "pip install pandas" in r.output


def test_the_run_s_commands_are_the_setters_applied_at_every_step():
    # Without a controller the run writes its schedules' values into the robot's command arrays
    # after the first step; stated the other way, the commands are set_pd_target,
    # set_generalized_force and set_actuator_torques of the scenario's values before every
    # step. Both ways, 300 steps of quadruped_pd.toml (sine targets, a step of an actuator's
    # torque at 0.2 s here) and a feedforward ramp must give the same bits.
    from raisimcli.scenario import load_scenario
    from raisimcli.scenario.runner import build_world
    scn = load_scenario(os.path.join(SCENARIOS, "quadruped_pd.toml"),
                        ("robot.0.actuators.torque.LF_KFE_belt_drive.time=0.2",
                         'robot.0.feedforward.RH_KFE={type="ramp", start=0.05, stop=0.25, '
                         'start_value=0.0, stop_value=2.0}'), duration=0.3)
    w1, (d1,) = build_world(scn)
    w2, (d2,) = build_world(scn)
    s1, s2, spec = d1.system, d2.system, d2.spec
    assert d1._direct and spec.targets and spec.feedforward and spec.actuator_torques
    q_ref, u_ref, tau_ff, tau_a = s2.q_ref.copy(), s2.u_ref.copy(), s2.tau_ff.copy(), \
        s2.tau_a.copy()
    for k in range(scn.steps):
        t = k * scn.dt
        d1.apply(t)
        w1.integrate()
        for values, schedules in ((q_ref, spec.targets), (u_ref, spec.velocity_targets),
                                  (tau_ff, spec.feedforward), (tau_a, spec.actuator_torques)):
            for i, f, _ in schedules:
                values[i] = f(t)
        s2.set_pd_target(q_ref, u_ref)
        s2.set_generalized_force(tau_ff)
        s2.set_actuator_torques(tau_a)
        w2.integrate()
        for name in ("q_ref", "u_ref", "tau_ff", "tau_a", "q", "u"):
            assert getattr(s1, name).tobytes() == getattr(s2, name).tobytes(), (k, name)
    assert s1.tau_a.any() and s1.tau_ff.any()  # (the step and the ramp acted)


CYCLE_CONTROLLER = '''
import os


class Holder:
    """A file held in a reference cycle: only Python's collector at exit closes (and flushes) it."""

    def __init__(self, path):
        self.f = open(path, "w")
        self.me = self


HOLDER = Holder(os.path.join(os.path.dirname(os.path.abspath(__file__)), "seen.txt"))


def control(t, robot):
    HOLDER.f.write(f"{t:.3f}\\n")
'''


def test_a_controller_s_unclosed_file_is_flushed_at_the_command_s_exit(tmp_path):
    """`raisimcli run` skips the exit's last collections for a run of our code alone (the quick
    exit of raisimcli/cli/entry.py); a controller's file that only they would close must still
    be written whole (here 50 lines, less than one buffer: nothing reaches the file before)."""
    (tmp_path / "ctrl.py").write_text(CYCLE_CONTROLLER)
    (tmp_path / "s.toml").write_text(
        f'schema_version = 1\n[world]\ndt = 0.001\nduration = 0.05\n[[robot]]\n'
        f'urdf = "{os.path.join(ROBOTS, "arm7.urdf")}"\ncontroller = "ctrl.py:control"\n')
    p = _spawn(["run", "s.toml", "-q", "-o", "s.h5"], tmp_path)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err.decode()
    lines = (tmp_path / "seen.txt").read_text().splitlines()
    assert len(lines) == 50 and lines[-1] == "0.049"


def test_the_quick_exit_keeps_the_command_s_output_and_exit_code(tmp_path):
    """The commands that end with the quick exit: their output, files and exit codes are those
    of a normal exit (run, inspect, and compare of two files that differ: exit 1)."""
    p = _spawn(["run", os.path.join(SCENARIOS, "quadruped_pd.toml"), "--duration", "0.05", "--json",
                "-o", "a.h5"], tmp_path)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err.decode()
    assert json.loads(out)["steps"] == 50
    p = _spawn(["run", os.path.join(SCENARIOS, "quadruped_pd.toml"), "--duration", "0.06", "-q",
                "-o", "b.h5"], tmp_path)
    assert p.wait(timeout=300) == 0
    with h5py.File(tmp_path / "a.h5") as f:
        assert f.attrs["status"] == "complete" and f.attrs["rows"] == 50
    p = _spawn(["compare", "a.h5", "b.h5"], tmp_path)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 1 and out.strip(), err.decode()
    p = _spawn(["inspect", os.path.join(ROBOTS, "arm7.urdf"), "--json"], tmp_path)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0 and json.loads(out), err.decode()


@pytest.mark.parametrize("scenario", ["quadruped_pd.toml", "quadruped_stand.toml"])
def test_rows_copied_from_the_step_record_are_the_getters_rows(tmp_path, scenario, monkeypatch):
    """The writer copies q, u, the torque table and the actuators' states of a quick step from
    its record in one operation (ArticulatedSystem.step_record); with no record it reads each
    signal from its getter. It reads a quick step's contacts from their packed arrays
    (PackedContacts.log_key, log_block), else from a ContactSet's attributes. The two logs hold
    the same bits in every dataset."""
    from raisimcli.physics.articulated_system import ArticulatedSystem
    from raisimcli.physics.contact_set import ContactSet
    from raisimcli.physics.step.quick import PackedContacts
    signals = ('["state", "energy", "torque", "generalized_force", "actuators", "solver", '
               '"contacts"]')
    logs = []
    for use in (True, False):
        if not use:
            monkeypatch.setattr(ArticulatedSystem, "step_record", lambda self: None)
            for name in ("log_key", "log_block"):
                monkeypatch.setattr(PackedContacts, name, getattr(ContactSet, name))
        out = tmp_path / f"{use}.h5"
        r = run("run", os.path.join(SCENARIOS, scenario), "-o", out, "--duration", "0.6", "--set",
                f"log.signals={signals}", "-q")
        assert r.exit_code == 0, r.output
        logs.append(out)
    with h5py.File(logs[0]) as a, h5py.File(logs[1]) as b:
        names = []
        a.visit(lambda n: names.append(n) if isinstance(a[n], h5py.Dataset) else None)
        assert any(n.endswith("torque/contacts") for n in names)
        if scenario == "quadruped_stand.toml":
            assert a["contacts/count"][()].sum() > 1000
        for n in names:
            if n.startswith("meta"):
                continue
            x, y = a[n][()], b[n][()]
            if a[n].dtype.kind == "O":  # (names, texts)
                assert np.asarray(x).tolist() == np.asarray(y).tolist(), n
            else:
                assert x.tobytes() == y.tobytes(), n


FOLDED = """schema_version = 1
[world]
dt = 0.001
duration = 0.2
gravity = [0.0, 0.0, 0.0]
[[robot]]
name = "arm"
urdf = "folded.urdf"
self_collision = true
{extra}
[robot.initial]
u = {{ turn = 1.0 }}
"""
# (the same arm starting with fold at pi/2: its balls 0.206 m apart)
FOLDED_APART = FOLDED.format(extra="").replace("u = {", "q = { fold = 1.5707963267948966 }\nu = {")


def test_self_collision_of_links_that_start_inside_each_other_is_refused_with_the_exclusion(
        tmp_path):
    # base and lower overlap by 50 mm at the start (tests/models.py): a contact cannot part
    # them, so the run stops before it starts (exit 2, no log, an earlier log untouched) and
    # names the pair and the line that leaves it out; that line, pasted, runs
    from models import folded_arm_urdf
    (tmp_path / "folded.urdf").write_text(folded_arm_urdf())
    scn = write(tmp_path, FOLDED.format(extra=""))
    log = tmp_path / "log.h5"
    # starting apart (fold at pi/2) needs no exclusion: the earlier log
    apart = write(tmp_path, FOLDED_APART, "apart.toml")
    assert run("run", apart, "-o", log, "-q").exit_code == 0
    earlier = log.read_bytes()
    r = run("run", scn, "-o", log, "-q")
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    assert f"{scn}: robot[0].self_collision: 1 pair of links of robot 'arm' overlap at its " \
           "initial state: 'base' and 'lower' (50 mm)" in r.output
    line = 'self_collision_exclude = [["base", "lower"]]'
    assert line in r.output
    assert log.read_bytes() == earlier
    fixed = write(tmp_path, FOLDED.format(extra=line), "fixed.toml")
    r = run("run", fixed, "-o", log, "-q")
    assert r.exit_code == 0, r.output


TWO_BALLS = """schema_version = 1
[world]
dt = 0.001
duration = 0.3
gravity = [0.0, 0.0, 0.0]
[[robot]]
name = "left"
urdf = "ball.urdf"
[[robot]]
name = "right"
urdf = "ball.urdf"
[robot.initial]
q = {{ "root.x" = {x} }}
u = {{ "root.vx" = -1.0 }}
"""


def test_robots_that_start_inside_each_other_are_refused(tmp_path):
    # two balls of radius 0.1 m, 0.15 m apart: 50 mm deep (exit 2, nothing written); 0.25 m
    # apart, the right one rolls into the left one, which is a run like any other
    from test_contacts import box_urdf
    (tmp_path / "ball.urdf").write_text(box_urdf(size=(0.1,) * 3, shape="sphere"))
    r = run("run", write(tmp_path, TWO_BALLS.format(x=0.15)), "-o", tmp_path / "log.h5", "-q")
    assert r.exit_code == 2, r.output
    assert "robot[1].initial: robots 'left' (robot[0]) and 'right' overlap at their initial " \
           "states, 1 pair of links (left first): 'body' and 'body' (50 mm)" in r.output
    assert "start them apart" in r.output and not (tmp_path / "log.h5").exists()
    r = run("run", write(tmp_path, TWO_BALLS.format(x=0.25)), "-o", tmp_path / "log.h5", "-q")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("case", ["self", "two robots"])
def test_the_overlap_check_changes_nothing_of_a_run(tmp_path, monkeypatch, case):
    # the check detects contacts once before the first step: the log is the same without it
    from models import folded_arm_urdf
    from test_contacts import box_urdf
    from raisimcli.scenario import runner
    (tmp_path / "folded.urdf").write_text(folded_arm_urdf())
    (tmp_path / "ball.urdf").write_text(box_urdf(size=(0.1,) * 3, shape="sphere"))
    scn = write(tmp_path, FOLDED_APART.replace("u = { turn = 1.0 }", "u = { fold = -3.0 }")
                if case == "self" else TWO_BALLS.format(x=0.25))  # (the arm swings into the
    # base; the balls meet)
    signals = 'log.signals=["state", "contacts"]'
    assert run("run", scn, "-o", tmp_path / "a.h5", "-q", "--set", signals).exit_code == 0
    monkeypatch.setattr(runner, "_check_overlaps", lambda *a: None)
    assert run("run", scn, "-o", tmp_path / "b.h5", "-q", "--set", signals).exit_code == 0
    with h5py.File(tmp_path / "a.h5") as a:
        assert a["contacts/count"][:].max() > 0  # (the collision happens)
    r = run("compare", tmp_path / "a.h5", tmp_path / "b.h5", "--rtol", "0", "--atol", "0")
    assert r.exit_code == 0, r.output
