"""The commands around the run (compare, plot, export, sweep) with damaged logs and with files
in the way: a damaged or truncated log is one message and exit 2 in bounded time; a file that is
not ours, or an input of the command, is never replaced; every file is written whole or not at
all; compare never passes a run that did not complete, nor a comparison of nothing."""

import json
import os
import resource
import shutil
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from conftest import small_disk
from models import pendulum_scenario
from raisimcli.cli.main import cli

PEND = pendulum_scenario(200)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def command(args, tmp_path, timeout=60, limit=None):
    """The raisimcli command in a subprocess (KILLed past `timeout` s); `limit`: RLIMIT_FSIZE in
    bytes. Returns (exit code, stdout + stderr, seconds)."""
    def limited():
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "raisimcli", *map(str, args)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=timeout, preexec_fn=limited)
    return p.returncode, p.stdout + p.stderr, time.monotonic() - t


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    d = tmp_path_factory.mktemp("log")
    (d / "s.toml").write_text(PEND)
    out = d / "g.h5"
    r = run("run", d / "s.toml", "-q", "-o", out)
    assert r.exit_code == 0, r.output
    return out


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """The file of a run killed with SIGKILL mid-run (its writer never closed it)."""
    d = tmp_path_factory.mktemp("killed")
    (d / "s.toml").write_text(PEND.replace("steps = 200", "steps = 2000000"))
    p = subprocess.Popen([sys.executable, "-m", "raisimcli", "run", "s.toml", "-q", "-o", "k.h5"],
                         cwd=d)
    partial = None
    for _ in range(600):
        time.sleep(0.1)
        found = [f for f in os.listdir(d) if f.startswith("k.h5.partial-")]
        if found and os.path.getsize(d / found[0]) > 200_000:
            partial = d / found[0]
            break
    p.kill()
    p.wait()
    assert partial is not None, "the run never flushed"
    return partial


def _no_traceback(out: str) -> None:
    assert "Traceback" not in out, out
    assert out.strip().count("\n") == 0 or out.strip().startswith("error:"), out


# --- damaged logs ------------------------------------------------------------------------------
@pytest.mark.parametrize("cmd", ["compare", "plot", "export", "folder"])
@pytest.mark.parametrize("source", ["complete", "killed"])
def test_a_truncated_log_is_exit_2_within_seconds_for_every_command(log, killed, tmp_path, cmd,
                                                                    source):
    """A copy cut short: HDF5's SWMR read mode retried its metadata without end (and Ctrl-C
    could not stop it); now its size is checked against what its superblock declares."""
    data = (log if source == "complete" else killed).read_bytes()
    cut = tmp_path / "cut.h5"
    cut.write_bytes(data[:len(data) // 2])
    args = {"compare": ["compare", log, cut], "plot": ["plot", cut, "-o", "f.png"],
            "export": ["export", cut, "-o", "tables"]}.get(cmd)
    if cmd == "folder":
        for d in ("golden", "new"):
            (tmp_path / d).mkdir()
        shutil.copyfile(log, tmp_path / "golden" / "a.h5")
        shutil.copyfile(cut, tmp_path / "new" / "a.h5")
        args = ["compare", "golden", "new", "--jobs", "1"]
    code, out, seconds = command(args, tmp_path)
    assert "Traceback" not in out, out
    assert seconds < 20, seconds
    if cmd == "folder":  # a pair that cannot be read fails the folder comparison
        assert code == 1 and "truncated" in out, out
    else:
        assert code == 2 and "is truncated" in out and "cut.h5" in out, out
    assert not os.path.exists(tmp_path / "f.png") and not os.path.exists(tmp_path / "tables")


def test_a_killed_run_s_file_still_opens_where_it_was_flushed(killed):
    from raisimcli.log import open_log
    with open_log(str(killed)) as lg:
        assert lg.partial and lg.time.shape[0] > 0


def _damaged(data: bytes, rng) -> list[tuple[str, bytes]]:
    out = []
    for k in range(8):
        b = bytearray(data)
        at = int(rng.integers(0, len(data) // 512)) * 512
        b[at:at + 512] = bytes(512)
        out.append((f"zeros at {at}", bytes(b)))
    for k in range(8):
        b = bytearray(data)
        at = int(rng.integers(0, len(data)))
        b[at] ^= 0xFF
        out.append((f"byte {at} flipped", bytes(b)))
    return out


def test_damaged_logs_give_one_message_or_their_readable_data(log, tmp_path, monkeypatch):
    """Blocks of zeros and flipped bytes anywhere in the file: each command either reads what
    is readable or says in one line that the file is damaged (exit 2; compare's exit 1 is a
    difference found), never a traceback. One of these blocks of zeros (at 2560) makes HDF5
    loop in C at full CPU while it reads an attribute: the structure check's process is
    stopped (given 3 s here)."""
    from raisimcli.log import reader
    monkeypatch.setattr(reader, "STRUCTURE_SECONDS", 3.0)
    rng = np.random.default_rng(7)
    for what, data in _damaged(log.read_bytes(), rng):
        bad = tmp_path / "bad.h5"
        bad.write_bytes(data)
        for args in (["compare", log, bad], ["plot", bad, "-o", tmp_path / "f.png"],
                     ["export", bad, "-o", tmp_path / "tables"]):
            r = run(*args)
            assert r.exit_code in (0, 1, 2), (what, args[0], r.output)
            assert r.exception is None or isinstance(r.exception, SystemExit), \
                (what, args[0], repr(r.exception))
            if r.exit_code == 2:
                assert r.output.startswith("error:") and "bad.h5" in r.output, (what, r.output)


@pytest.mark.parametrize("cmd", ["compare", "plot", "export"])
def test_a_log_that_declares_more_than_it_can_hold_is_refused_before_reading(log, tmp_path, cmd):
    """A dataset of 10^10 rows (80 GB) in a 45 kB file: refused, nothing allocated."""
    big = tmp_path / "big.h5"
    shutil.copyfile(log, big)
    with h5py.File(big, "r+") as f:
        del f["robots/p/energy/kinetic"]
        f.create_dataset("robots/p/energy/kinetic", shape=(10 ** 10,), dtype="f8",
                         chunks=(1024,))
    args = {"compare": ["compare", log, big], "plot": ["plot", big, "-o", tmp_path / "f.png"],
            "export": ["export", big, "-o", tmp_path / "t"]}[cmd]
    r = run(*args)
    assert r.exit_code == 2 and "declares 80000000000 bytes" in r.output, r.output


# --- files that are not ours, and the commands' inputs ----------------------------------------
def test_run_leaves_a_file_that_is_not_a_log_byte_for_byte(log, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    r = run("run", log.parent / "s.toml", "-q", "-o", notes)
    assert r.exit_code == 2 and "not a log of raisimcli" in r.output
    assert notes.read_text() == "my notes\n"


def test_compare_never_writes_its_reports_over_the_logs_it_compares(log, tmp_path):
    new = tmp_path / "new.h5"
    shutil.copyfile(log, new)
    before = log.read_bytes(), new.read_bytes()
    for option, target in (("--junit-xml", log), ("--html", new)):
        r = run("compare", log, new, option, target)
        assert r.exit_code == 2 and "inputs" in r.output, r.output
    assert (log.read_bytes(), new.read_bytes()) == before


@pytest.mark.parametrize("option", ["--junit-xml", "--html"])
def test_compare_replaces_its_own_report_and_nothing_else(log, tmp_path, option):
    target = tmp_path / ("r.xml" if option == "--junit-xml" else "r.html")
    target.write_text("somebody's file\n")
    r = run("compare", log, log, option, target, "-q")
    assert r.exit_code == 2 and target.read_text() == "somebody's file\n"
    target.unlink()
    assert run("compare", log, log, option, target, "-q").exit_code == 0
    first = target.read_bytes()
    assert run("compare", log, log, option, target, "-q").exit_code == 0  # ours: replaced
    assert target.read_bytes().startswith(first[:20])


def test_plot_replaces_its_own_figure_and_nothing_else(log, tmp_path):
    fig = tmp_path / "f.png"
    fig.write_bytes(b"not a figure")
    r = run("plot", log, "-o", fig)
    assert r.exit_code == 2 and fig.read_bytes() == b"not a figure"
    fig.unlink()
    assert run("plot", log, "-o", fig).exit_code == 0
    assert run("plot", log, "-o", fig).exit_code == 0, "its own figure is replaced"


def test_export_of_a_log_whose_names_climb_out_writes_nothing_outside(log, tmp_path):
    hostile = tmp_path / "hostile.h5"
    shutil.copyfile(log, hostile)
    with h5py.File(hostile, "r+") as f:
        f.move("robots/p", "robots/..")
    out = tmp_path / "deep" / "tables"
    r = run("export", hostile, "-o", out)
    assert r.exit_code == 2 and "cannot be a file name" in r.output, r.output
    assert sorted(os.listdir(tmp_path)) == ["hostile.h5"]


def test_export_replaces_only_the_tables_an_earlier_export_listed(log, tmp_path):
    out = tmp_path / "tables"
    (out / "p").mkdir(parents=True)
    (out / "p" / "q.csv").write_text("mine\n")
    r = run("export", log, "-o", out)
    assert r.exit_code == 2 and "not a table of raisimcli" in r.output
    assert os.listdir(out / "p") == ["q.csv"] and (out / "p" / "q.csv").read_text() == "mine\n"
    (out / "p" / "q.csv").unlink()
    assert run("export", log, "-o", out).exit_code == 0
    assert run("export", log, "-o", out, "--format", "parquet").exit_code == 0
    assert run("export", log, "-o", out).exit_code == 0, "its own tables are replaced"
    listed = json.loads((out / "export.json").read_text())["files"]
    assert "p/q.csv" in listed and "p/q.parquet" in listed


def test_a_batch_run_never_replaces_an_index_that_is_not_its_own(tmp_path):
    (tmp_path / "a.toml").write_text(PEND)
    (tmp_path / "b.toml").write_text(PEND)
    (tmp_path / "index.csv").write_text("my,data\n1,2\n")
    r = run("run", tmp_path / "a.toml", tmp_path / "b.toml", "-o", f"{tmp_path}{os.sep}",
            "--jobs", "1", "-q")
    assert r.exit_code == 2 and "index" in r.output, r.output
    assert (tmp_path / "index.csv").read_text() == "my,data\n1,2\n"
    assert not any(f.endswith(".h5") for f in os.listdir(tmp_path))


# --- writes that fail -----------------------------------------------------------------------------
@pytest.fixture(params=["ulimit -f", "full disk"])
def cramped(request, tmp_path):
    """(folder, limit): a folder where writing fails: under a file-size limit of 400 bytes, or
    on a 1 MB tmpfs filled to its last 512 bytes (mounted here; skipped where that is not
    allowed)."""
    if request.param == "ulimit -f":
        yield tmp_path, 400
        return
    with small_disk(tmp_path / "disk") as disk:
        yield disk, None


def _fill(folder) -> None:
    """Leave 512 bytes free on the file system of `folder`."""
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    with open(os.path.join(folder, "filler"), "wb") as f:
        f.write(bytes(max(0, free - 512)))


@pytest.mark.parametrize("what", ["update", "junit", "html", "plot", "export"])
def test_a_write_that_fails_leaves_nothing_and_one_message(log, tmp_path, cramped, what):
    folder, limit = cramped
    new = tmp_path / "new.h5"
    shutil.copyfile(log, new)
    golden = folder / "golden.h5"
    shutil.copyfile(log, golden)
    with h5py.File(golden, "r+") as f:
        f.attrs["created"] = "before"
    before = golden.read_bytes()
    args = {"update": ["compare", golden, new, "--update", "-q"],
            "junit": ["compare", golden, new, "--junit-xml", folder / "r.xml", "-q"],
            "html": ["compare", golden, new, "--html", folder / "r.html", "-q"],
            "plot": ["plot", new, "-o", folder / "f.png"],
            "export": ["export", new, "-o", folder / "tables"]}[what]
    if limit is None:
        _fill(folder)
    code, out, _ = command(args, tmp_path, limit=limit)
    assert code == 1 and "Traceback" not in out, out
    assert "cannot write" in out and "nothing was written" in out, out
    assert golden.read_bytes() == before
    left = sorted(f for f in os.listdir(folder)
                  if f not in ("new.h5", "golden.h5", "tables", "filler", "disk"))
    assert left == [], left
    if os.path.isdir(folder / "tables"):
        files = [f for _, _, fs in os.walk(folder / "tables") for f in fs]
        assert files == [], files


# --- compare never passes falsely ------------------------------------------------------------------
def _copy_with(src, dst, fn):
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        fn(f)
    return dst


@pytest.mark.parametrize("status", ["diverged", "interrupted"])
@pytest.mark.parametrize("include", [[], ["--include", "robots/*"], ["--exclude", "/:*"]])
def test_a_run_that_did_not_complete_fails_whatever_the_filters(log, tmp_path, status, include):
    new = _copy_with(log, tmp_path / "n.h5", lambda f: f.attrs.__setitem__("status", status))
    r = run("compare", log, new, "-q", *include)
    assert r.exit_code == 1 and f"status '{status}'" in r.output, r.output


def test_a_comparison_of_nothing_is_an_error(log):
    r = run("compare", log, log, "--exclude", "*")
    assert r.exit_code == 2 and "nothing" in r.output


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_a_dataset_of_another_type_with_the_same_values_fails(log, tmp_path, dtype):
    def retype(f):
        data = f["time"][()]
        del f["time"]
        f.create_dataset("time", data=np.round(data * 1000).astype(dtype) / 1000
                         if dtype is np.float32 else data.astype(dtype))
    new = _copy_with(log, tmp_path / "n.h5", retype)
    r = run("compare", log, new, "-q", "--include", "time")
    assert r.exit_code == 1, r.output


def test_integers_beyond_2_to_the_53_are_compared_exactly(log, tmp_path):
    big = 2 ** 60

    def put(value):
        return lambda f: f.create_dataset("extra/big", data=np.array([value], dtype=np.int64))
    a = _copy_with(log, tmp_path / "a.h5", put(big))
    b = _copy_with(log, tmp_path / "b.h5", put(big + 1))
    assert run("compare", a, a, "-q", "--include", "extra/*").exit_code == 0
    r = run("compare", a, b, "-q", "--include", "extra/*")
    assert r.exit_code == 1, r.output


def test_identical_nan_attributes_are_equal(log, tmp_path):
    a = _copy_with(log, tmp_path / "a.h5", lambda f: f.attrs.__setitem__("gain", np.nan))
    b = _copy_with(log, tmp_path / "b.h5", lambda f: f.attrs.__setitem__("gain", np.nan))
    assert run("compare", a, b, "-q").exit_code == 0
