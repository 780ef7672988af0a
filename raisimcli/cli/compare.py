"""`raisimcli compare GOLDEN NEW`: the regression check for CI."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import click
from rich.markup import escape
from rich.table import Table

from raisimcli.cli.batch import scheduler_options
from raisimcli.cli.output import emit
from raisimcli.errors import UsageError
from raisimcli.writing import check_output, marked, output_file
from raisimcli.log.compare import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    Comparison,
    compare_logs,
    load_tolerances,
    update_golden,
)


def _write_xml(root, path: str, inputs: tuple) -> None:
    with output_file(path, "--junit-xml", "JUnit report", marked, inputs) as tmp:
        ET.ElementTree(root).write(tmp, encoding="utf-8", xml_declaration=True)


def _junit_report(cases: list, path: str, inputs: tuple) -> None:
    """Write a JUnit XML report: one <testsuite> of `cases`, each (classname, name, failure) with
    failure None or (message, type, text). It has what the Jenkins xUnit plugin's schema of JUnit
    reports (junit-10.xsd) requires: the suite's name, tests, failures and errors (0: a case
    that cannot be compared is a failure), each case's name."""
    failures = sum(1 for *_, failure in cases if failure is not None)
    totals = {"tests": str(len(cases)), "failures": str(failures), "errors": "0"}
    root = ET.Element("testsuites", name="raisimcli", **totals)
    suite = ET.SubElement(root, "testsuite", name="raisimcli compare", **totals, skipped="0")
    for classname, name, failure in cases:
        case = ET.SubElement(suite, "testcase", classname=classname, name=name)
        if failure is not None:
            message, kind, text = failure
            f = ET.SubElement(case, "failure", message=message,
                              **({"type": kind} if kind else {}))
            f.text = text
    _write_xml(root, path, inputs)


def _junit(c: Comparison, path: str, inputs: tuple) -> None:
    """One test case per dataset, and one for the attributes."""
    failed = c.attributes or c.status_failures
    cases = [("attributes", "attributes", (
        f"{len(c.attributes)} attributes differ" + "".join(f"; {m}" for m in c.status_failures),
        None, "\n".join(c.status_failures + c.attributes)) if failed else None)]
    for r in c.results:
        cases.append(("datasets", r.path, None if r.ok else (
            r.reason, r.status, f"{r.reason}\nmax abs error {r.max_abs:.6g}, max rel error "
            f"{r.max_rel:.6g}" + (f"\nworst at {r.where}" if r.where else ""))))
    _junit_report(cases, path, inputs)


def _as_dict(c: Comparison) -> dict:
    return {
        "golden": c.golden, "new": c.new, "ok": c.ok,
        "attributes": c.attributes, "ignored_attributes": c.ignored,
        "status_failures": c.status_failures,
        "datasets": [{"path": r.path, "status": r.status, "reason": r.reason,
                      "compared": r.compared, "failing": r.failing, "max_abs": r.max_abs,
                      "max_rel": r.max_rel, "where": r.where,
                      "rtol": r.tolerance.rtol if r.tolerance else None,
                      "atol": r.tolerance.atol if r.tolerance else None} for r in c.results],
        "summary": {"datasets": len(c.results), "failing": len(c.failures)},
    }


@click.command("compare")
@click.argument("golden", type=click.Path())
@click.argument("new", type=click.Path())
@click.option("--rtol", type=float, default=DEFAULT_RTOL, show_default=True,
              help="Relative tolerance: |new - golden| <= atol + rtol |golden|.")
@click.option("--atol", type=float, default=DEFAULT_ATOL, show_default=True,
              help="Absolute tolerance.")
@click.option("--tolerances", type=click.Path(dir_okay=False), default=None,
              help='TOML file of per-dataset tolerances: "robots/*/torque/*" = { rtol = 1e-6, '
                   'atol = 1e-9 } (the first matching pattern wins).')
@click.option("--include", multiple=True, metavar="GLOB", help="Compare only these datasets.")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip these datasets.")
@click.option("--max-report", type=int, default=20, show_default=True,
              help="Datasets shown in the table (failures first).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
@click.option("--junit-xml", type=click.Path(dir_okay=False), default=None,
              help="Write a JUnit XML report (one test case per dataset).")
@click.option("--html", "html_path", type=click.Path(), default=None,
              help="Write a self-contained HTML report: a figure per failing dataset and the "
                   "replay of both runs (needs matplotlib). Two folders: DIR/, a report per "
                   "differing log and an index.")
@click.option("--update", is_flag=True, help="Replace GOLDEN with NEW (after the comparison).")
@click.option("-q", "--quiet", is_flag=True, help="Only the summary line.")
@scheduler_options
def compare_command(golden, new, rtol, atol, tolerances, include, exclude, max_report, as_json,
                    junit_xml, html_path, update, quiet, jobs, scheduler):
    """Compare a NEW log against a GOLDEN one: structure (datasets, shapes, dtypes, names, the
    time axis), then values within tolerance. Two folders: every log pairwise by name, on Dask
    (--jobs 1: in this process); a missing or extra log is a failure.

    Exit codes: 0 within tolerance (or --update); 1 different; 2 unreadable input or usage."""
    from raisimcli.cli.main import report_errors, stdout

    @report_errors(json_output=as_json)
    def go():
        if os.path.isdir(golden) or os.path.isdir(new):
            return _compare_folders(golden, new, dict(rtol=rtol, atol=atol, include=tuple(include),
                                                      exclude=tuple(exclude)),
                                    tolerances, max_report, as_json, junit_xml, html_path,
                                    update, quiet, jobs, scheduler)
        if jobs is not None or scheduler is not None:
            raise UsageError("--jobs and --scheduler are for comparing two folders")
        from raisimcli.cli import entry
        entry.QUICK_EXIT = True  # two files, in this process (entry's docstring)
        inputs = (golden, new, tolerances)
        if junit_xml:  # every argument is checked before the comparison
            check_output(junit_xml, "--junit-xml", "JUnit report", marked, inputs)
        if html_path:
            check_output(html_path, "--html", "report", marked, inputs)
            import importlib.util
            if importlib.util.find_spec("matplotlib") is None:
                raise UsageError("--html needs matplotlib: pip install 'raisimcli[plot]'")
        rules = load_tolerances(tolerances) if tolerances else []
        c = compare_logs(golden, new, rtol=rtol, atol=atol, tolerances=rules,
                         include=tuple(include), exclude=tuple(exclude))
        if junit_xml:
            _junit(c, junit_xml, inputs)
        if html_path:
            from raisimcli.log.report import html_report
            html_report(c, html_path, inputs=inputs)
        summary = (f"{'OK' if c.ok else 'DIFFERENT'}: {len(c.results)} datasets compared, "
                   f"{len(c.failures)} failing, {len(c.attributes)} attributes differ"
                   + "".join(f", {m}" for m in c.status_failures) + " "
                   f"({len(c.ignored)} ignored: {', '.join(c.ignored) or 'none'})")
        if as_json:
            emit(json.dumps(_as_dict(c), indent=2))
        elif not quiet:
            shown = sorted(c.results, key=lambda r: r.ok)[:max_report]
            t = Table(title=escape(f"{golden} vs {new}"), title_justify="left")
            for col in ("dataset", "status", "max abs err", "max rel err", "failing", "where",
                        "tolerance / reason"):
                t.add_column(col, overflow="fold")
            for r in shown:
                style = "green" if r.ok else "red"
                tol = f"rtol {r.tolerance.rtol:g}, atol {r.tolerance.atol:g}" if r.tolerance else ""
                t.add_row(escape(r.path), f"[{style}]{r.status}[/]", f"{r.max_abs:.3g}",
                          f"{r.max_rel:.3g}", str(r.failing), escape(r.where),
                          escape(r.reason or tol))
            stdout.print(t)
            if len(c.results) > len(shown):
                stdout.print(f"... {len(c.results) - len(shown)} more datasets "
                             "(--max-report)")
            for a in c.attributes:
                stdout.print(f"[red]attribute differs:[/] {escape(a)}", highlight=False)
            for m in c.status_failures:
                stdout.print(f"[red]{escape(m)}[/]", highlight=False)
            if any(a.startswith("/:libm:") for a in c.attributes):
                stdout.print("(the logs do not name the same build of glibc's math functions, "
                             "and builds can differ in the last bits of sin, cos, exp, ...: the "
                             "raisimcli command always uses the baseline build; see "
                             "docs/physics.md, \"The same log on every machine\")",
                             highlight=False)
        if not as_json:
            click.echo(summary)
        if update:
            update_golden(golden, new)
            if not as_json:
                click.echo(f"updated: {golden} is now a copy of {new}")
            return
        if not c.ok:
            raise SystemExit(1)

    go()


def _compare_folders(golden, new, options, tolerances, max_report, as_json, junit_xml, html_path,
                     update, quiet, jobs, scheduler):
    """`compare GOLDEN_DIR NEW_DIR` (raisimcli.batch.compare_dirs)."""
    from raisimcli.batch.compare_dirs import compare_folders
    from raisimcli.batch.engine import Scheduler
    from raisimcli.cli.main import stdout
    for option, d in (("GOLDEN", golden), ("NEW", new)):
        if not os.path.isdir(d):
            raise UsageError(f"{option} {d}: not a folder; compare two folders or two logs")
    inputs = (tolerances,)
    if html_path:
        _check_report_folder(html_path)
    if junit_xml:
        check_output(junit_xml, "--junit-xml", "JUnit report", marked, inputs)
    options["tolerances"] = load_tolerances(tolerances) if tolerances else []
    sched = None if (jobs == 1 and not scheduler) else Scheduler.from_options(jobs, scheduler)
    fc = compare_folders(golden, new, scheduler=sched, **options)
    if junit_xml:
        _junit_folders(fc, junit_xml, inputs)
    if html_path:
        from raisimcli.log.report import folder_report
        folder_report(fc, html_path, inputs)
    n_fail = len(fc.failures)
    summary = (f"{'OK' if fc.ok else 'DIFFERENT'}: {len(fc.pairs)} logs, {n_fail} failing "
               f"({golden} vs {new})")
    if as_json:
        emit(json.dumps({"golden": golden, "new": new, "ok": fc.ok,
                         "logs": [{"name": p.name, "status": p.status, "reason": p.reason,
                                   "comparison": _as_dict(p.comparison) if p.comparison else None}
                                  for p in fc.pairs],
                         "summary": {"logs": len(fc.pairs), "failing": n_fail}}, indent=2))
    elif not quiet:
        t = Table(title=escape(f"{golden} vs {new}"), title_justify="left")
        for col in ("log", "status", "datasets", "failing", "worst dataset", "max rel err",
                    "reason"):
            t.add_column(col, overflow="fold")
        for p in sorted(fc.pairs, key=lambda p: p.ok)[:max_report]:
            style = "green" if p.ok else "red"
            c = p.comparison
            worst = max(c.failures, key=lambda r: r.max_rel, default=None) if c else None
            rel = max((r.max_rel for r in c.results), default=0.0) if c else None
            t.add_row(escape(p.name), f"[{style}]{p.status}[/]",
                      str(len(c.results)) if c else "-", str(len(c.failures)) if c else "-",
                      escape(worst.path) if worst else "-",
                      f"{rel:.3g}" if rel is not None else "-", escape(p.reason))
        stdout.print(t)
        if len(fc.pairs) > max_report:
            stdout.print(f"... {len(fc.pairs) - max_report} more logs (--max-report)")
    if not as_json:
        click.echo(summary)
    if update:
        for p in fc.pairs:
            if p.status in ("pass", "fail", "extra"):
                update_golden(os.path.join(golden, p.name + ".h5"), os.path.join(new, p.name + ".h5"))
        if not as_json:
            click.echo(f"updated: the logs of {golden} are now copies of those of {new}")
        return
    if not fc.ok:
        raise SystemExit(1)


def _check_report_folder(path: str) -> None:
    """--html DIR/ of a folder compare: a folder, or a name ending in / to create in one that
    exists (UsageError otherwise); matplotlib installed."""
    import importlib.util
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"--html {path}: comparing two folders writes a report per differing "
                         "log and an index into a folder; this is a file (give DIR/)")
    if not os.path.isdir(path):
        if not path.endswith(("/", os.sep)):
            raise UsageError(f"--html {path}: comparing two folders writes a report per "
                             "differing log and an index into a folder; end the name with / to "
                             "create it")
        parent = os.path.dirname(os.path.abspath(path.rstrip("/" + os.sep)))
        if not os.path.isdir(parent):
            raise UsageError(f"--html {path}: the folder {parent} does not exist")
    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError("--html needs matplotlib: pip install 'raisimcli[plot]'")


def _junit_folders(fc, path: str, inputs: tuple) -> None:
    """One test case per log; a failing one lists its differing datasets and attributes."""
    cases = []
    for p in fc.pairs:
        failure = None
        if not p.ok:
            lines = [p.reason]
            if p.comparison:
                lines += [f"{r.path}: {r.reason or r.status} (max abs error {r.max_abs:.6g}, "
                          f"max rel error {r.max_rel:.6g}{', worst at ' + r.where if r.where else ''})"
                          for r in p.comparison.failures]
                lines += [f"attribute {a}" for a in p.comparison.attributes]
            failure = (p.reason, p.status, "\n".join(lines))
        cases.append(("logs", p.name, failure))
    _junit_report(cases, path, inputs)
