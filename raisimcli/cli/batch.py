"""`raisimcli sweep SWEEP.toml -o DIR` and `raisimcli run A.toml B.toml ... -o DIR`: many cases
on Dask, one log per case and an index (docs/sweep.md)."""

from __future__ import annotations

import json
import math
import os
import sys

import click
from rich.markup import escape
from rich.table import Table

from raisimcli.cli.output import emit
from raisimcli.errors import RaisimcliError, ScenarioError, UsageError

EXIT_INTERRUPTED = 130


def scheduler_options(fn):
    """--jobs and --scheduler, shared by sweep, run (several scenarios) and compare (folders)."""
    fn = click.option("--scheduler", default=None, metavar="ADDRESS",
                      help="A running Dask scheduler, e.g. tcp://host:8786 (default: "
                           "$DASK_SCHEDULER_ADDRESS, else a local cluster).")(fn)
    fn = click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
                      help="Worker processes of the local cluster (default: the number of "
                           "cores).")(fn)
    return fn


def check_output_folder(out_dir: str, create: bool = True) -> str:
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageError(f"-o {out_dir}: is a file; expected the output folder")
    if not create:
        return os.path.abspath(out_dir)
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise UsageError(f"-o {out_dir}: cannot create the folder: {e.strerror}") from None
    if not os.access(out_dir, os.W_OK):
        raise UsageError(f"-o {out_dir}: the folder is not writable")
    return os.path.abspath(out_dir)


def prepare_cases(cases, out_dir, duration, strict, ignore):
    """Resolve each case on the client. `cases`: (name, scenario path, overrides, parameters,
    fails_alone). A case whose resolution fails is an error result when `fails_alone` (a bad
    value of a sweep), else the error stops everything (exit 2). Returns (tasks, failed)."""
    from raisimcli.batch.task import CaseResult, make_task
    from raisimcli.scenario import load_scenario
    tasks, failed = [], {}
    for name, path, overrides, _, fails_alone in cases:
        try:
            scn = load_scenario(path, tuple(overrides), duration=duration,
                                log_path=os.path.join(out_dir, f"{name}.h5"), strict=strict,
                                ignore_warnings=ignore)
        except RaisimcliError as e:
            if not fails_alone:
                raise
            failed[name] = CaseResult(name, "error", message=f"not run: {e}")
            continue
        tasks.append(make_task(name, scn, overrides, duration, strict, ignore))
    return tasks, failed


def run_batch(cases, out_dir, *, jobs, scheduler, resume, duration, strict, ignore, as_json,
              quiet, parameter_names=()) -> None:
    """Run the cases, write the logs and the index, report, and exit with 0 / 1 / 130."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
        TimeElapsedColumn, TimeRemainingColumn

    from raisimcli.batch.engine import Scheduler, check_outputs, index_rows, run_tasks, \
        write_index
    from raisimcli.cli.main import stderr, stdout

    out_dir = check_output_folder(out_dir, create=False)
    tasks, failed = prepare_cases(cases, out_dir, duration, strict, ignore)  # exit 2 here: no folder
    check_output_folder(out_dir)
    inputs = tuple({path for t in tasks for path in t.inputs} | {c[1] for c in cases
                                                                 if isinstance(c[1], str)})
    check_outputs(out_dir, [c[0] for c in cases], inputs)  # before any case runs
    sched = Scheduler.from_options(jobs, scheduler)
    sched = Scheduler(max(1, min(sched.jobs, len(tasks))), sched.address)  # never idle workers
    order = [c[0] for c in cases]
    parameters = {c[0]: dict(c[3]) for c in cases}
    show = not quiet and not as_json
    progress = None
    if show:
        progress = Progress(TextColumn("[bold]cases"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(),
                            TextColumn("elapsed,"), TimeRemainingColumn(), TextColumn("left"),
                            console=stderr, transient=False)
        bar = progress.add_task("cases", total=len(tasks), failed=0)
        progress.start()
    n_failed = 0

    def on_result(r):
        nonlocal n_failed
        n_failed += r.status != "complete"
        if progress:
            progress.update(bar, advance=1, failed=n_failed)

    interrupted = None
    try:
        results = run_tasks(tasks, out_dir, sched, resume=resume, on_result=on_result)
    except KeyboardInterrupt as e:
        interrupted = e
        results = getattr(e, "results", None) or {}
    finally:
        if progress:
            progress.stop()
    results = {**failed, **results}
    for name in order:  # an interrupt before any task was sent
        if name not in results:
            from raisimcli.batch.task import CaseResult
            results[name] = CaseResult(name, "cancelled", message="cancelled: interrupted")
    by_name = {t.name: t for t in tasks}
    rows = index_rows([by_name.get(n) or _NotRun(n) for n in order], results, parameters,
                      parameter_names)
    index_files = write_index(out_dir, rows)
    counts = {s: sum(1 for r in rows if r["status"] == s)
              for s in ("complete", "diverged", "error", "cancelled")}
    if as_json:
        emit(json.dumps({"output": out_dir, "index": index_files, "scheduler": sched.describe(),
                         "summary": counts, "cases": [_json_row(r) for r in rows]}, indent=2))
    elif not quiet:
        stdout.print(_table(rows, parameter_names))
        stdout.print(f"index: {escape(index_files[0])}")
    if not as_json:
        click.echo(f"{counts['complete']} of {len(rows)} cases complete"
                   + "".join(f", {n} {s}" for s, n in counts.items() if n and s != "complete")
                   + f" ({sched.describe()})", err=True)
    _warn_of_other_math(results.values())
    if interrupted is not None:
        name = getattr(interrupted, "signal_name", "SIGINT")
        click.echo(f"interrupted by {name}: the complete logs are kept; the index marks the "
                   f"{counts['cancelled']} cases that did not run as cancelled", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if len(rows) != counts["complete"]:
        sys.exit(1)


def _warn_of_other_math(results) -> None:
    """One warning when cases ran on workers whose glibc math functions are another build than
    this command's (raisimcli.libm): a worker started by hand without the command's setting."""
    from raisimcli.libm import MASK, variant
    own = variant()
    other = [r for r in results if r.libm and r.libm != own]
    if other:
        builds = ", ".join(sorted({r.libm for r in other}))
        click.echo(f"warning: {len(other)} cases ran on workers whose C math functions are "
                   f"glibc's {builds} build, not the {own} build of this command: their logs "
                   "can differ from those of `raisimcli run` in the last bits; start the workers "
                   f"with GLIBC_TUNABLES=glibc.cpu.hwcaps={','.join(MASK)} (docs/sweep.md)",
                   err=True)


class _NotRun:
    """A case that failed on the client, in the index."""

    def __init__(self, name):
        self.name, self.resolved_sha256 = name, ""


def _json_row(row: dict) -> dict:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}


def _table(rows, parameter_names) -> Table:
    t = Table(title="cases", title_justify="left")
    for col in ["case", "status", "wall s", "steps/s", "max contact N", "kinetic J", "message"]:
        t.add_column(col, overflow="fold")
    for r in rows:
        style = "green" if r["status"] == "complete" else "red"
        t.add_row(escape(r["case"]), f"[{style}]{r['status']}[/]", _num(r["wall_time_s"], ".2f"),
                  _num(r["steps_per_second"], ".0f"), _num(r.get("max_contact_force"), ".4g"),
                  _num(r.get("kinetic_energy"), ".4g"),
                  escape(r["message"]) if r["status"] != "complete" else "")
    return t


def _num(v, fmt) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return format(v, fmt)


@click.command("sweep")
@click.argument("sweep_file", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), required=True,
              help="Folder for the logs (CASE.h5) and index.csv.")
@scheduler_options
@click.option("--resume", is_flag=True,
              help="Skip the cases whose complete log in the folder has the same resolved "
                   "scenario (its hash).")
@click.option("--duration", type=float, default=None, help="Override world.duration (s).")
@click.option("--strict", is_flag=True, help="Refuse a URDF that gives warnings.")
@click.option("-W", "--ignore-warning", "ignore", multiple=True, metavar="CODE",
              help="Do not report URDF warnings with this code (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the index as JSON on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no table.")
def sweep_command(sweep_file, out_dir, jobs, scheduler, resume, duration, strict, ignore,
                  as_json, quiet):
    """Run every case of SWEEP_FILE (a base scenario and the values that vary, TOML) on Dask:
    one log per case in the output folder, and index.csv.

    Exit codes: 0 every case complete; 1 a case diverged or failed (the others ran); 2 a bad
    sweep file or scenario (nothing ran); 130 interrupted (complete logs kept)."""
    from raisimcli.cli.main import report_errors

    @report_errors(json_output=as_json)
    def go():
        from raisimcli.batch.sweep_file import load_sweep
        sw = load_sweep(sweep_file)
        common = sw.cases[0].overrides[:len(sw.cases[0].overrides) - len(sw.cases[0].parameters)]
        # the base scenario itself (with the common values) must resolve: exit 2 if not
        from raisimcli.scenario import load_scenario
        load_scenario(sw.scenario, common, duration=duration,
                      log_path=os.path.join(os.getcwd(), "base.h5"), strict=strict,
                      ignore_warnings=ignore)
        cases = [(c.name, sw.scenario, c.overrides, c.parameters, True) for c in sw.cases]
        run_batch(cases, out_dir, jobs=jobs, scheduler=scheduler, resume=resume,
                  duration=duration, strict=strict, ignore=ignore, as_json=as_json, quiet=quiet,
                  parameter_names=sw.parameter_names)

    go()


def scenario_cases(paths, overrides) -> list:
    """The cases of `run A.toml B.toml ... -o DIR`: one per scenario, named by its file name."""
    names: dict[str, str] = {}
    cases = []
    for p in paths:
        name = os.path.splitext(os.path.basename(p))[0]
        if name in names:
            raise ScenarioError(f"{p}: its log would be {name}.h5, like that of {names[name]}; "
                                "run them into different folders")
        names[name] = p
        cases.append((name, p, tuple(overrides), (), False))
    return cases
