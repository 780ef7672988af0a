"""`raisimcli compare GOLDEN_DIR NEW_DIR`: every log of two folders, pairwise by name.

A log of the folder is `NAME.h5`; a failed run's log beside it (`NAME.diverged.h5`,
`NAME.error.h5`, `NAME.interrupted.h5`), a run's partial file and the temporary files of a
batch are not logs to compare, but a failed run's log in NEW says why NAME is missing or stale.
A log in GOLDEN without one in NEW, and a log in NEW without a golden, are failures.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field

from raisimcli.batch.engine import FAILED_STATUSES
from raisimcli.errors import UsageError
from raisimcli.log.compare import (
    Comparison,
    check_patterns_match,
    check_tolerances,
    compare_logs,
)

_SIDECAR = re.compile(r"^(?P<name>.+)\.(?P<status>" + "|".join(FAILED_STATUSES) + r")\.h5$")


@dataclass
class LogPair:
    name: str
    status: str                      # pass | fail | missing | extra | error
    reason: str = ""
    comparison: Comparison | None = None

    @property
    def ok(self) -> bool:
        return self.status == "pass"


@dataclass
class FolderComparison:
    golden: str
    new: str
    pairs: list[LogPair] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.pairs) and all(p.ok for p in self.pairs)

    @property
    def failures(self) -> list[LogPair]:
        return [p for p in self.pairs if not p.ok]


def logs_in(folder: str) -> tuple[dict[str, str], dict[str, str]]:
    """(name -> log path, name -> failed run's log) of a folder."""
    logs, failed = {}, {}
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if entry.startswith(".") or not entry.endswith(".h5") or not os.path.isfile(path):
            continue
        m = _SIDECAR.match(entry)
        if m:
            failed[m["name"]] = entry
        else:
            logs[entry[:-3]] = path
    return logs, failed


def _compare_pair(golden, new, options: dict) -> Comparison:
    """One pair; `golden` and `new` are paths, or (name, bytes) for a worker without the files."""
    if isinstance(golden, str):
        return compare_logs(golden, new, check_patterns=False, **options)
    with tempfile.TemporaryDirectory(prefix="raisimcli-compare-") as d:
        paths = []
        for tag, (name, data) in (("golden", golden), ("new", new)):
            os.makedirs(os.path.join(d, tag))
            p = os.path.join(d, tag, name)
            with open(p, "wb") as f:
                f.write(data)
            paths.append(p)
        c = compare_logs(paths[0], paths[1], check_patterns=False, **options)
        c.golden, c.new = golden[0], new[0]
        return c


def compare_folders(golden_dir: str, new_dir: str, *, scheduler=None, **options) -> FolderComparison:
    """Compare every pair of logs. `scheduler`: None to compare in this process, else a
    batch.engine.Scheduler (a local cluster gets paths, a remote one the files' bytes)."""
    check_tolerances(options.get("rtol", 0.0), options.get("atol", 0.0))
    for option, d in (("GOLDEN", golden_dir), ("NEW", new_dir)):
        if not os.path.isdir(d):
            raise UsageError(f"{option} {d}: not a folder; compare two folders or two logs")
    golden, _ = logs_in(golden_dir)
    new, new_failed = logs_in(new_dir)
    if not golden and not new:
        raise UsageError(f"no logs (*.h5) in {golden_dir} or {new_dir}")
    out = FolderComparison(golden_dir, new_dir)
    both = [n for n in golden if n in new]
    comparisons: dict[str, Comparison | Exception] = {}
    if scheduler is None or len(both) <= 1:
        for n in both:
            try:
                comparisons[n] = _compare_pair(golden[n], new[n], options)
            except Exception as e:  # an unreadable log fails its pair, not the whole check
                comparisons[n] = e
    else:
        from distributed import as_completed

        from raisimcli.batch.engine import Cluster
        with Cluster(scheduler, len(both)) as cluster:
            futures = {}
            for n in both:
                g, w = golden[n], new[n]
                if scheduler.address:  # a worker elsewhere: the bytes, not our paths
                    g, w = (os.path.basename(g), _read(g)), (os.path.basename(w), _read(w))
                futures[cluster.client.submit(_compare_pair, g, w, options, pure=False)] = n
            for f in as_completed(futures):
                try:
                    comparisons[futures[f]] = f.result()
                except Exception as e:
                    comparisons[futures[f]] = e
    include, exclude = options.get("include", ()), options.get("exclude", ())
    if include or exclude:
        names = set().union(*(c.names for c in comparisons.values() if isinstance(c, Comparison)))
        check_patterns_match(include, exclude, names, f"the logs of {golden_dir} or {new_dir}")
    for n in sorted(set(golden) | set(new)):
        if n not in new:
            why = (f"its run did not complete ({new_failed[n]})" if n in new_failed
                   else "no log in NEW")
            out.pairs.append(LogPair(n, "missing", why))
        elif n not in golden:
            out.pairs.append(LogPair(n, "extra", "no golden log (a new case? add its golden)"))
        elif isinstance(comparisons[n], Exception):
            out.pairs.append(LogPair(n, "error", str(comparisons[n])))
        else:
            c = comparisons[n]
            stale = f"; and its latest run failed ({new_failed[n]})" if n in new_failed else ""
            if c.ok and not stale:
                out.pairs.append(LogPair(n, "pass", "", c))
            else:
                parts = [f"{len(c.failures)} datasets differ"] if c.failures else []
                parts += [f"{len(c.attributes)} attributes differ"] if c.attributes else []
                parts += c.status_failures
                out.pairs.append(LogPair(n, "fail", (", ".join(parts) or "the logs match") + stale,
                                         c))
    return out


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()
