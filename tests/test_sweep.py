"""Many runs at once on Dask (raisimcli.batch, docs/sweep.md): `raisimcli sweep`, `raisimcli run
A.toml B.toml -o DIR`, `raisimcli compare GOLDEN_DIR NEW_DIR`. Every log a batch writes must be
bit-identical (compare --rtol 0 --atol 0) to the log of the single `raisimcli run` with the same
--set, wherever the case ran: a local cluster, a real `dask scheduler` with `dask worker`
processes, or a worker killed and replaced mid-case."""

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import h5py
import pytest
from click.testing import CliRunner

from conftest import BASELINE_ENV, SCENARIOS
from raisimcli.cli.main import cli
from raisimcli.libm import variant

CARTPOLE = os.path.join(SCENARIOS, "cartpole.toml")
QUADRUPED = os.path.join(SCENARIOS, "quadruped_stand.toml")
RAISIMCLI = [sys.executable, "-m", "raisimcli"]
BIN = os.path.dirname(sys.executable)


def write_sweep(folder, body, scenario=CARTPOLE, name="sweep.toml"):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(f'scenario = "{scenario}"\n' + body)
    return path


GRID_2X2 = """set = { "world.duration" = 0.3 }
[grid]
"robot.0.pd.kp.slider" = [200.0, 400.0]
"robot.0.pd.kd.slider" = [20.0, 40.0]
"""


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def same_log(a, b):
    r = invoke("compare", a, b, "--rtol", "0", "--atol", "0", "-q")
    return r.exit_code == 0, r.output


def single_run(tmp_path, scenario, overrides, name):
    out = tmp_path / "single" / f"{name}.h5"
    r = invoke("run", scenario, "-q", "-o", out, *[x for o in overrides for x in ("--set", o)])
    assert r.exit_code == 0, r.output
    return out


def read_index(folder):
    with open(os.path.join(folder, "index.csv")) as f:
        return list(csv.DictReader(f))


def test_a_2x2_sweep_on_two_local_workers_gives_the_logs_of_single_runs(tmp_path):
    sweep = write_sweep(tmp_path, GRID_2X2)
    out = tmp_path / "out"
    r = invoke("sweep", sweep, "-o", out, "--jobs", "2", "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["summary"]["complete"] == 4 and "2 worker processes" in report["scheduler"]
    rows = read_index(out)
    names = [row["case"] for row in rows]
    assert names == ["kp.slider=200.0,kd.slider=20.0", "kp.slider=200.0,kd.slider=40.0",
                     "kp.slider=400.0,kd.slider=20.0", "kp.slider=400.0,kd.slider=40.0"]
    for row in rows:
        kp, kd = float(row["robot.0.pd.kp.slider"]), float(row["robot.0.pd.kd.slider"])
        assert row["case"] == f"kp.slider={kp!r},kd.slider={kd!r}" and row["status"] == "complete"
        assert int(row["steps"]) == 300 and float(row["wall_time_s"]) > 0
        single = single_run(tmp_path, CARTPOLE, [f"robot.0.pd.kp.slider={kp!r}",
                                                 f"robot.0.pd.kd.slider={kd!r}",
                                                 "world.duration=0.3"], row["case"])
        ok, text = same_log(single, out / row["log"])
        assert ok, text
        # the index's figures are the log's
        with h5py.File(out / row["log"]) as f:
            ke = f["robots/cartpole/energy/kinetic"][-1]
            tau = abs(f["robots/cartpole/torque/feedforward_pd"][:]).max()
            assert f.attrs["resolved_sha256"] == row["resolved_sha256"]
        assert float(row["kinetic_energy"]) == ke
        assert float(row["max_torque_feedforward_pd"]) == tau
    # the logs of different gains differ (the sweep did vary something)
    ok, _ = same_log(out / rows[0]["log"], out / rows[3]["log"])
    assert not ok
    assert sorted(os.listdir(out)) == sorted([row["log"] for row in rows]
                                             + ["index.csv", "index.parquet"])


def test_a_case_with_a_bad_value_fails_alone_and_resume_runs_nothing_again(tmp_path):
    sweep = write_sweep(tmp_path, """set = { "world.duration" = 0.2 }
[grid]
"robot.0.pd.kp.slider" = [200.0, 400.0]

[[case]]
name = "bad"
"robot.0.pd.kp.slider" = "stiff"

[[case]]
name = "diverges"
"robot.0.external" = [{ link = "pole", force = [1e30, 0.0, 0.0] }]
""")
    out = tmp_path / "out"
    r = invoke("sweep", sweep, "-o", out, "-j", "2")
    assert r.exit_code == 1, r.output
    rows = {row["case"]: row for row in read_index(out)}
    assert list(rows) == ["slider=200.0", "slider=400.0", "bad", "diverges"]
    assert rows["slider=200.0"]["status"] == rows["slider=400.0"]["status"] == "complete"
    assert rows["bad"]["status"] == "error" and "robot[0].pd.kp" in rows["bad"]["message"]
    assert rows["diverges"]["status"] == "diverged" and "diverged at t" in rows["diverges"]["message"]
    files = set(os.listdir(out))
    assert "bad.h5" not in files and "diverges.h5" not in files  # no file at a failed name
    assert rows["diverges"]["log"] == "diverges.diverged.h5" and "diverges.diverged.h5" in files
    stamps = {f: os.stat(out / f).st_mtime_ns for f in ("slider=200.0.h5", "slider=400.0.h5")}

    r = invoke("sweep", sweep, "-o", out, "-j", "2", "--resume", "--json")
    assert r.exit_code == 1  # the failed cases ran again, and failed again
    again = {row["case"]: row for row in json.loads(r.output)["cases"]}
    assert again["slider=200.0"]["message"].startswith("resumed")
    assert again["slider=200.0"]["kinetic_energy"] == float(rows["slider=200.0"]["kinetic_energy"])
    assert {f: os.stat(out / f).st_mtime_ns for f in stamps} == stamps  # not rewritten
    assert not again["diverges"]["message"].startswith("resumed")



def test_resume_reruns_a_case_whose_input_files_changed(tmp_path):
    """The resolved hash covers the bytes of every input file (here the URDF), not its name."""
    copy = tmp_path / "copy"
    for sub in ("scenarios", "robots"):
        shutil.copytree(os.path.join(os.path.dirname(SCENARIOS), sub), copy / sub,
                        ignore=shutil.ignore_patterns("*.h5"))
    sweep = write_sweep(tmp_path, GRID_2X2, scenario=copy / "scenarios" / "cartpole.toml")
    out = tmp_path / "out"
    assert invoke("sweep", sweep, "-o", out, "-j", "2", "-q").exit_code == 0
    r = invoke("sweep", sweep, "-o", out, "-j", "2", "--resume", "--json")
    assert all(row["message"].startswith("resumed") for row in json.loads(r.output)["cases"])
    urdf = copy / "robots" / "cartpole.urdf"
    urdf.write_text(urdf.read_text() + "\n<!-- edited -->\n")
    r = invoke("sweep", sweep, "-o", out, "-j", "2", "--resume", "--json")
    assert r.exit_code == 0, r.output
    assert not any(row["message"].startswith("resumed") for row in json.loads(r.output)["cases"])


def test_a_bad_sweep_file_stops_everything_before_anything_runs(tmp_path):
    out = tmp_path / "out"
    for body, expected in [
        ('[grid]\n"robot.0.pd.kpp" = [1.0]\n', "'kpp' in robot.0.pd; did you mean 'kp'?"),
        ('[grid]\n"world.dt" = 0.001\n', "expected a non-empty list"),
        ('sets = {}\n', "did you mean 'set'?"),
        ('[[case]]\n"world.dt" = 0.001\n[[case]]\n"world.dt" = 0.001\n', "defined twice"),
    ]:
        sweep = write_sweep(tmp_path, body)
        r = invoke("sweep", sweep, "-o", out)
        assert r.exit_code == 2, r.output
        assert expected in r.output and str(sweep) in r.output and "Traceback" not in r.output
        assert not out.exists()
    r = invoke("sweep", tmp_path / "nope.toml", "-o", out)
    assert r.exit_code == 2 and "sweep file not found" in r.output
    # the base scenario is checked too
    sweep = write_sweep(tmp_path, "", scenario=tmp_path / "missing.toml")
    r = invoke("sweep", sweep, "-o", out)
    assert r.exit_code == 2 and "missing.toml" in r.output and not out.exists()


def test_run_of_several_scenarios_into_a_folder_and_compare_of_two_folders(tmp_path):
    new, golden = tmp_path / "new", tmp_path / "golden"
    scenarios = [CARTPOLE, os.path.join(SCENARIOS, "arm7_pd.toml")]  # arm7: a CSV schedule too
    r = invoke("run", *scenarios, "-o", f"{new}/", "--duration", "0.2", "-q")
    assert r.exit_code == 0, r.output
    for s in scenarios:
        name = os.path.basename(s)[:-5]
        single = tmp_path / "single" / f"{name}.h5"
        assert invoke("run", s, "-q", "--duration", "0.2", "-o", single).exit_code == 0
        ok, text = same_log(single, new / f"{name}.h5")
        assert ok, text
    shutil.copytree(new, golden)
    r = invoke("compare", golden, new, "--junit-xml", tmp_path / "report.xml")
    assert r.exit_code == 0, r.output
    assert "OK: 2 logs, 0 failing" in r.output
    # a missing, an extra and a different log: each a failure, each its own JUnit test case
    os.rename(new / "cartpole.h5", new / "cartpole2.h5")
    with h5py.File(new / "arm7_pd.h5", "a") as f:
        f["robots/arm7/q"][5, 2] += 1e-9
    for jobs in ("1", "2"):
        r = invoke("compare", golden, new, "-j", jobs, "--junit-xml", tmp_path / "report.xml")
        assert r.exit_code == 1, r.output
        assert "DIFFERENT: 3 logs, 3 failing" in r.output
        cases = {c.get("name"): c for c in ET.parse(tmp_path / "report.xml").iter("testcase")}
        assert set(cases) == {"arm7_pd", "cartpole", "cartpole2"}
        assert cases["cartpole"].find("failure").get("type") == "missing"
        assert cases["cartpole2"].find("failure").get("type") == "extra"
        assert "robots/arm7/q" in cases["arm7_pd"].find("failure").text
    r = invoke("compare", golden, new / "arm7_pd.h5")
    assert r.exit_code == 2 and "not a folder" in r.output
    r = invoke("compare", golden, new, "--include", "robots/nobody/*")
    assert r.exit_code == 2 and "matches no dataset" in r.output
    bad = tmp_path / "bad.toml"
    bad.write_text(open(CARTPOLE).read().replace("kp = { slider = 400.0 }", "kp = { slidr = 1.0 }"))
    r = invoke("run", CARTPOLE, bad, "-o", tmp_path / "never")
    assert r.exit_code == 2 and "bad.toml" in r.output and not (tmp_path / "never").exists()
    os.makedirs(tmp_path / "x")
    shutil.copy(CARTPOLE, tmp_path / "x" / "cartpole.toml")
    r = invoke("run", CARTPOLE, tmp_path / "x" / "cartpole.toml", "-o", new)
    assert r.exit_code == 2 and "cartpole.h5, like that of" in r.output


@pytest.mark.parametrize("name,needed", [("arm7_pd", "arm7_shoulder.csv"),
                                         ("acme_s400", "meshes/base.stl")])  # package:// meshes
def test_a_task_needs_neither_the_checkout_nor_a_shared_file_system(tmp_path, name, needed):
    """The task carries the files' bytes: the case runs after its files are gone."""
    from raisimcli.batch.task import make_task, run_task
    from raisimcli.scenario import load_scenario
    copy = tmp_path / "copy"
    for sub in ("scenarios", "robots"):
        shutil.copytree(os.path.join(os.path.dirname(SCENARIOS), sub), copy / sub,
                        ignore=shutil.ignore_patterns("*.h5"))
    scenario = copy / "scenarios" / f"{name}.toml"
    overrides = ("world.duration=0.1",)
    scn = load_scenario(scenario, overrides, log_path=tmp_path / "x.h5")
    task = make_task(name, scn, overrides)
    assert any(p.endswith(needed) for p in task.inputs)
    reference = tmp_path / "reference.h5"
    assert invoke("run", scenario, "-q", "--set", overrides[0], "-o", reference).exit_code == 0
    shutil.rmtree(copy)
    result = run_task(task)
    assert result.status == "complete", result.message
    (tmp_path / "task.h5").write_bytes(result.log)
    ok, text = same_log(reference, tmp_path / "task.h5")
    assert ok, text
    with h5py.File(tmp_path / "task.h5") as f:  # the client's path, not the worker's folder
        group = f["robots"][list(f["robots"])[0]]
        assert group.attrs["urdf_path"] == scn.robots[0].model.path
        assert group.attrs["urdf_path"].startswith(str(copy))


# --- a real cluster: `dask scheduler` and `dask worker` processes --------------------------------
class DaskCluster:
    def __init__(self, folder, workers: int, worker_env: dict | None = None):
        self.folder, self.worker_env = folder, worker_env
        self.file = os.path.join(folder, "scheduler.json")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.procs = [subprocess.Popen(
            [os.path.join(BIN, "dask"), "scheduler", "--port", "0", "--no-dashboard",
             "--scheduler-file", self.file], cwd=folder, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        deadline = time.time() + 60
        while not os.path.exists(self.file) and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(0.3)
        with open(self.file) as f:
            self.address = json.load(f)["address"]
        self.workers = [self.start_worker() for _ in range(workers)]

    def start_worker(self):
        p = subprocess.Popen([os.path.join(BIN, "dask"), "worker", "--scheduler-file", self.file,
                              "--nthreads", "1", "--no-nanny", "--no-dashboard",
                              "--memory-limit", "0"],
                             cwd=self.folder, env=self.worker_env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def wait_for_workers(self, n):
        from distributed import Client
        with Client(self.address, timeout="30s") as c:
            c.wait_for_workers(n, timeout=120)

    def close(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.fixture
def cluster_folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("dask-cluster")  # not the checkout: workers have no files
    assert not str(d).startswith(os.path.dirname(SCENARIOS))
    return str(d)


def test_a_sweep_on_a_running_dask_scheduler_and_worker(tmp_path, cluster_folder):
    c = DaskCluster(cluster_folder, workers=1)
    try:
        c.wait_for_workers(1)
        sweep = write_sweep(tmp_path, GRID_2X2)
        out = tmp_path / "out"
        r = subprocess.run(RAISIMCLI + ["sweep", str(sweep), "-o", str(out), "--scheduler",
                                        c.address, "-q"], capture_output=True, text=True,
                           cwd=tmp_path, timeout=300)
        assert r.returncode == 0, r.stderr
        assert f"the Dask scheduler at {c.address}" in r.stderr
        rows = read_index(out)
        assert len(rows) == 4 and {row["worker"].split(":")[1] for row in rows} == \
            {str(c.workers[0].pid)}
        row = rows[1]
        single = single_run(tmp_path, CARTPOLE, [f"robot.0.pd.kp.slider={row['robot.0.pd.kp.slider']}",
                                                 f"robot.0.pd.kd.slider={row['robot.0.pd.kd.slider']}",
                                                 "world.duration=0.3"], row["case"])
        ok, text = same_log(single, out / row["log"])
        assert ok, text
        # DASK_SCHEDULER_ADDRESS names it too; compare of two folders runs there as well
        env = dict(os.environ, DASK_SCHEDULER_ADDRESS=c.address)
        r = subprocess.run(RAISIMCLI + ["compare", str(out), str(out)], capture_output=True,
                           text=True, env=env, timeout=300)
        assert r.returncode == 0 and "OK: 4 logs, 0 failing" in r.stdout, r.stdout + r.stderr
    finally:
        c.close()


def test_a_worker_whose_math_functions_are_another_build_is_reported(tmp_path, cluster_folder):
    # the command runs in this process; its worker starts with glibc's plain math functions (the
    # environment `raisimcli` gives itself, raisimcli.libm): where this process runs another
    # build (a processor with FMA), the sweep says that its logs may differ from a single run's
    own = variant()
    if own in ("baseline", "other"):
        pytest.skip(f"this process runs glibc's {own} math: no other build to give a worker")
    c = DaskCluster(cluster_folder, workers=1, worker_env=BASELINE_ENV)
    try:
        c.wait_for_workers(1)
        sweep = write_sweep(tmp_path, """set = { "world.duration" = 0.05 }
[grid]
"robot.0.pd.kp.slider" = [200.0]
""")
        r = invoke("sweep", sweep, "-o", tmp_path / "out", "--scheduler", c.address, "-q")
        assert r.exit_code == 0, r.output
        assert (f"warning: 1 cases ran on workers whose C math functions are glibc's baseline "
                f"build, not the {own} build of this command") in " ".join(r.output.split())
        with h5py.File(tmp_path / "out" / read_index(tmp_path / "out")[0]["log"]) as f:
            assert f.attrs["libm"] == "baseline"
    finally:
        c.close()


def test_a_worker_killed_mid_case_leaves_every_case_with_exactly_one_complete_log(
        tmp_path, cluster_folder):
    c = DaskCluster(cluster_folder, workers=2)
    try:
        c.wait_for_workers(2)
        sweep = write_sweep(tmp_path, """set = { "world.duration" = 1.5 }
[grid]
"robot.0.pd.kp" = [200.0, 250.0, 300.0, 350.0]
""", scenario=QUADRUPED)
        out = tmp_path / "out"
        proc = subprocess.Popen(RAISIMCLI + ["sweep", str(sweep), "-o", str(out), "--scheduler",
                                             c.address, "-q"], cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        from distributed import Client
        victim = c.workers[0]
        with Client(c.address, timeout="30s") as client:
            address = next(a for a, pid in client.run(os.getpid).items() if pid == victim.pid)
            deadline = time.time() + 120
            while time.time() < deadline:  # until the victim is running a case
                if client.processing().get(address):
                    break
                time.sleep(0.05)
            else:
                pytest.fail("no case reached the first worker")
        time.sleep(0.5)  # mid-case
        victim.send_signal(signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr
        assert victim.poll() is not None  # it was killed, not finished
        rows = read_index(out)
        assert [row["status"] for row in rows] == ["complete"] * 4
        logs = sorted(f for f in os.listdir(out) if f.endswith(".h5"))
        assert logs == sorted(row["log"] for row in rows)  # one log each, nothing else
        assert not [f for f in os.listdir(out) if f.startswith(".")]
        for row in rows:
            with h5py.File(out / row["log"]) as f:
                assert f.attrs["status"] == "complete" and f.attrs["rows"] == 1500
    finally:
        c.close()


@pytest.mark.parametrize("group", [False, True])
def test_sigint_cancels_a_sweep_cleanly(tmp_path, group):
    """SIGINT to the command, or (group) Ctrl-C in a terminal, which signals the whole process
    group: the workers too, which must not print tracebacks."""
    sweep = write_sweep(tmp_path, """set = { "world.duration" = 1.0 }
[grid]
"robot.0.pd.kp" = [200.0, 220.0, 240.0, 260.0, 280.0, 300.0, 320.0, 340.0]
""", scenario=QUADRUPED)
    out = tmp_path / "out"
    proc = subprocess.Popen(RAISIMCLI + ["sweep", str(sweep), "-o", str(out), "-j", "1", "-q"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=group)
    deadline = time.time() + 240
    while time.time() < deadline:
        if out.exists() and any(f.endswith(".h5") for f in os.listdir(out)):
            break
        time.sleep(0.05)
    if group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted by SIGINT" in stderr and "Traceback" not in stderr
    rows = read_index(out)
    done = [row for row in rows if row["status"] == "complete"]
    cancelled = [row for row in rows if row["status"] == "cancelled"]
    assert done and cancelled and len(done) + len(cancelled) == 8
    assert sorted(f for f in os.listdir(out) if f.endswith(".h5")) == sorted(r["log"] for r in done)
    assert not [f for f in os.listdir(out) if f.startswith(".")]
    for row in done:
        with h5py.File(out / row["log"]) as f:
            assert f.attrs["status"] == "complete"


def test_the_shipped_sweep_file_is_the_one_the_docs_show():
    import tomllib

    from raisimcli.batch.sweep_file import load_sweep
    shipped = os.path.join(SCENARIOS, "sweeps", "quadruped_gains.toml")
    sw = load_sweep(shipped)
    assert sw.scenario == QUADRUPED
    assert [c.name for c in sw.cases] == ["kp=150.0,kd=5.0", "kp=150.0,kd=10.0",
                                          "kp=300.0,kd=5.0", "kp=300.0,kd=10.0"]
    assert sw.cases[1].overrides == ("world.duration=1.0", "robot.0.pd.kp=150.0",
                                     "robot.0.pd.kd=10.0")
    with open(os.path.join(os.path.dirname(SCENARIOS), "docs", "sweep.md")) as f:
        first = f.read().split("```toml\n", 1)[1].split("```", 1)[0]
    with open(shipped, "rb") as f:
        assert tomllib.loads(first) == tomllib.load(f)


def test_values_survive_the_trip_through_set_exactly():
    """A grid value becomes a `--set` assignment: it must read back as the same value."""
    import tomllib

    from raisimcli.batch.sweep_file import toml_value
    for v in [0.1, 1e-300, 2.0**0.5, -0.0, 1e22, 7, True, "a \"b\" \\c", [1.5, 2], {"x": 1.25}]:
        assert tomllib.loads(f"v = {toml_value(v)}")["v"] == v
    assert repr(tomllib.loads(f"v = {toml_value(-0.0)}")["v"]) == "-0.0"


def test_a_local_cluster_serves_nothing_on_port_8787(tmp_path):
    # the scheduler's HTTP server would take 8787 even with the dashboard off (dask/distributed
    # issue 8136): with 8787 taken, as by a second sweep at once, no warning that it is in use
    import socket
    import warnings

    from raisimcli.batch.engine import Cluster, Scheduler
    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 8787))
    except OSError:
        pass  # (taken already: as good)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with Cluster(Scheduler(jobs=1), 1) as cluster:
                assert cluster.client.submit(sum, [1, 2]).result() == 3
    finally:
        taken.close()
