"""Many cases at once on Dask: a LocalCluster of single-threaded worker processes by default, or
any Dask cluster named by its scheduler's address (docs/sweep.md).

The client resolves every case first (a bad sweep file or scenario stops everything with exit
code 2 before anything runs), sends each case as one self-contained task (batch.task), and
writes each log it gets back atomically: a temporary file in the output folder, then a rename.
A complete case's log is `DIR/NAME.h5`; a case that did not complete leaves its log beside as
`DIR/NAME.<status>.h5` and never a file at `DIR/NAME.h5` (a complete log already there is left
as it was, as `raisimcli run` does). The index (`DIR/index.csv`) is written at the end, and on
SIGINT with the cases that did not run marked `cancelled`.
"""

from __future__ import annotations

import csv
import logging
import math
import os
import signal
import threading
import time
from dataclasses import dataclass
from typing import Callable

from raisimcli.batch.task import CaseResult, Task, run_task, summary_figures
from raisimcli.errors import UsageError

FAILED_STATUSES = ("diverged", "error", "interrupted")
INDEX_CSV = "index.csv"
INDEX_PARQUET = "index.parquet"


@dataclass(frozen=True)
class Scheduler:
    """Where tasks run: `address` of a running Dask scheduler, or a LocalCluster of `jobs`
    worker processes."""
    jobs: int
    address: str | None = None

    @staticmethod
    def from_options(jobs: int | None, address: str | None) -> "Scheduler":
        address = address or os.environ.get("DASK_SCHEDULER_ADDRESS") or None
        if address is not None:
            _check_address(address)
        return Scheduler(jobs=jobs or os.cpu_count() or 1, address=address)

    def describe(self) -> str:
        return (f"the Dask scheduler at {self.address}" if self.address else
                f"a local cluster of {self.jobs} worker process{'es' * (self.jobs != 1)}")


class Cluster:
    """A distributed.Client (and the LocalCluster it owns, if any), closed on exit."""

    def __init__(self, scheduler: Scheduler, n_tasks: int):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise UsageError("batch runs need Dask: pip install dask distributed") from None
        self.cluster = None
        if scheduler.address:
            try:
                self.client = Client(scheduler.address, timeout="10s")
            except (OSError, TimeoutError) as e:
                raise UsageError(f"--scheduler {scheduler.address}: cannot reach a Dask "
                                 f"scheduler there ({e})") from None
        else:
            import dask
            n = max(1, min(scheduler.jobs, n_tasks))
            # TLS with a certificate made for this cluster alone and kept in memory: the
            # scheduler (on 127.0.0.1) accepts only this client and its own workers, so that no
            # other user of the machine can join it and run code on a worker
            from distributed.security import Security
            security = Security.temporary()
            # the workers start with SIGINT ignored (a child keeps an ignored signal, and Python
            # then installs no handler of its own): Ctrl-C in a terminal signals the whole process
            # group, and the workers printed KeyboardInterrupt tracebacks; this process cancels
            # their cases and closes the cluster instead
            in_main = threading.current_thread() is threading.main_thread()
            sigint = signal.signal(signal.SIGINT, signal.SIG_IGN) if in_main else None
            try:
                # Dask's statistical profiler samples the worker's threads: on our step, which
                # is mostly Python, it cost a third of a case (benchmarks/sweep.py). Off;
                # the workers get this configuration from the nanny that starts them.
                # The scheduler starts its HTTP server even with dashboard_address=None, on
                # port 8787 ("Passing `dashboard_address=None` does not disable dashboard",
                # https://github.com/dask/distributed/issues/8136): a free port of the loopback
                # address instead, so two sweeps at once give no "Port 8787 is already in use".
                with dask.config.set({"distributed.worker.profile.enabled": False}):
                    self.cluster = LocalCluster(
                        n_workers=n, threads_per_worker=1, processes=True,
                        dashboard_address="127.0.0.1:0", host="127.0.0.1", protocol="tls://",
                        security=security, silence_logs=logging.CRITICAL, memory_limit=0)
            finally:
                if in_main:
                    signal.signal(signal.SIGINT, sigint)
            self.client = Client(self.cluster, security=security)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        try:
            self.client.close(timeout=10)
        finally:
            if self.cluster is not None:
                self.cluster.close(timeout=10)


def _check_address(address: str) -> None:
    """A Dask scheduler address: [protocol://]host:port (UsageError otherwise)."""
    from distributed.comm.addressing import parse_address, parse_host_port
    try:
        protocol, location = parse_address(address)
        if protocol in ("tcp", "tls", "ws", "wss", "ucx"):
            parse_host_port(location)
        elif protocol != "inproc":
            raise ValueError(f"unknown protocol {protocol!r}")
    except (ValueError, TypeError) as e:
        raise UsageError(f"--scheduler {address!r}: not the address of a Dask scheduler "
                         f"(expected tcp://HOST:PORT: {e})") from None


def log_name(out_dir: str, name: str, status: str) -> str:
    return os.path.join(out_dir, f"{name}.h5" if status == "complete" else f"{name}.{status}.h5")


def is_index(path: str) -> bool:
    """Whether `path` is an index of ours (index.csv or index.parquet): its columns start with
    `case` and include `resolved_sha256` (a Parquet file names its columns at its end)."""
    try:
        with open(path, "rb") as f:
            if path.endswith(".csv"):
                head = f.readline(1 << 16)
                return head.startswith(b"case,") and b",resolved_sha256" in head
            f.seek(max(0, os.path.getsize(path) - (1 << 16)))
            tail = f.read()
    except OSError:
        return False
    return tail.endswith(b"PAR1") and b"resolved_sha256" in tail


def check_outputs(out_dir: str, names: list[str], inputs: tuple) -> None:
    """Before any case runs: each log the cases may write, and the index, is either absent or a
    file of ours, and none is one of the inputs (UsageError naming it)."""
    from raisimcli.log.writer import is_log
    from raisimcli.writing import check_output
    if not os.path.isdir(out_dir):
        return
    for name in names:
        for status in ("complete",) + FAILED_STATUSES:
            path = log_name(out_dir, name, status)
            if os.path.lexists(path):
                check_output(path, "-o", "log", is_log, inputs)
    for index in (INDEX_CSV, INDEX_PARQUET):
        path = os.path.join(out_dir, index)
        if os.path.lexists(path):
            check_output(path, "-o", "index", is_index, inputs)


def store_log(out_dir: str, r: CaseResult) -> str | None:
    """Write a case's log into `out_dir` (see the module's docstring); its file name or None."""
    if r.log is None:
        return None
    from raisimcli.log.writer import is_log
    from raisimcli.writing import write_bytes
    path = log_name(out_dir, r.name, r.status)
    write_bytes(path, r.log, "-o", "log", is_log)
    if r.status == "complete":  # earlier runs' failed logs of this case are stale now
        for s in FAILED_STATUSES:
            stale = log_name(out_dir, r.name, s)
            if os.path.exists(stale):
                os.unlink(stale)
    r.log = None
    return os.path.basename(path)


def resumable(out_dir: str, task: Task) -> CaseResult | None:
    """The result of a case whose complete log in `out_dir` has the same resolved hash."""
    import h5py
    path = log_name(out_dir, task.name, "complete")
    if not os.path.isfile(path):
        return None
    try:
        with h5py.File(path, "r") as f:
            attrs = dict(f.attrs)
    except OSError:
        return None
    if attrs.get("status") != "complete" or attrs.get("resolved_sha256") != task.resolved_sha256:
        return None
    rows = int(attrs.get("rows", 0))
    dt = float(attrs.get("dt", 0.0)) * int(attrs.get("decimation", 1))
    return CaseResult(task.name, "complete", message="resumed: its log was complete", steps=0,
                      sim_time=rows * dt, wall_time=float("nan"), figures=summary_figures(path),
                      resolved_sha256=task.resolved_sha256, log_file=os.path.basename(path))


def run_tasks(tasks: list[Task], out_dir: str, scheduler: Scheduler, *, resume: bool = False,
              on_result: Callable[[CaseResult], None] | None = None) -> dict[str, CaseResult]:
    """Run `tasks` and store their logs in `out_dir`; name -> result, in the tasks' order. On a
    KeyboardInterrupt the cases not done are cancelled, marked so, and the exception re-raised
    with `.results` attached."""
    os.makedirs(out_dir, exist_ok=True)
    results: dict[str, CaseResult] = {}
    todo = []
    for t in tasks:
        r = resumable(out_dir, t) if resume else None
        if r is not None:
            results[t.name] = r
            if on_result:
                on_result(r)
        else:
            todo.append(t)
    cluster = None
    try:
        if todo:
            from distributed import as_completed
            cluster = Cluster(scheduler, len(todo))
            client = cluster.client
            futures = {}
            for t in todo:
                f = client.submit(run_task, t, key=f"raisimcli-case-{t.name}-{time.time_ns()}",
                                  pure=False)
                futures[f] = t
            for f in as_completed(futures):
                t = futures[f]
                try:
                    r = f.result()
                except Exception as e:  # the case's worker died too often, or a bug of ours
                    r = CaseResult(t.name, "error", message=f"{type(e).__name__}: {e}")
                r.log_file = store_log(out_dir, r)
                results[t.name] = r
                if on_result:
                    on_result(r)
    except KeyboardInterrupt as e:
        for t in tasks:
            if t.name not in results:
                results[t.name] = CaseResult(t.name, "cancelled",
                                             message="cancelled: the sweep was interrupted")
        e.results = {t.name: results[t.name] for t in tasks}
        raise
    finally:
        if cluster is not None:
            cluster.close()
    return {t.name: results[t.name] for t in tasks}


def index_rows(tasks: list[Task], results: dict[str, CaseResult], parameters: dict[str, dict],
               parameter_names) -> list[dict]:
    """One row per case: its parameters, status, timing and summary figures."""
    figure_keys = list(dict.fromkeys(k for r in results.values() for k in r.figures))
    rows = []
    for t in tasks:
        r = results[t.name]
        steps_per_s = r.steps / r.wall_time if r.wall_time and r.wall_time > 0 else float("nan")
        row = {"case": t.name}
        for p in parameter_names:
            row[p] = parameters.get(t.name, {}).get(p, "")
        row.update({"status": r.status, "message": r.message,
                    "log": r.log_file or "", "wall_time_s": r.wall_time,
                    "steps": r.steps, "steps_per_second": steps_per_s,
                    "sim_time_s": r.sim_time})
        for k in figure_keys:
            row[k] = r.figures.get(k, float("nan"))
        row["worker"] = r.worker
        row["resolved_sha256"] = t.resolved_sha256
        rows.append(row)
    return rows


def write_index(out_dir: str, rows: list[dict]) -> list[str]:
    """`index.csv` (and `index.parquet` when pandas and pyarrow are installed), atomically;
    the files written."""
    import io
    if not rows:
        return []
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: (_fmt(v) if isinstance(v, float) else v) for k, v in row.items()})
    written = [os.path.join(out_dir, INDEX_CSV)]
    from raisimcli.writing import write_bytes
    write_bytes(written[0], buf.getvalue().encode(), "-o", "index", is_index)
    try:
        import pandas as pd
        import pyarrow  # noqa: F401
    except ImportError:
        return written
    frame = pd.DataFrame(rows)
    for col in frame.columns:  # parameters of mixed types: as their text
        if frame[col].dtype == object:
            frame[col] = frame[col].map(lambda v: v if isinstance(v, str) else repr(v))
    pbuf = io.BytesIO()
    frame.to_parquet(pbuf, index=False)
    written.append(os.path.join(out_dir, INDEX_PARQUET))
    write_bytes(written[1], pbuf.getvalue(), "-o", "index", is_index)
    return written


def _fmt(v: float) -> str:
    return "" if math.isnan(v) else repr(v)
