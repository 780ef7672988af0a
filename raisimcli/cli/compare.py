"""`raisimcli compare GOLDEN NEW`: the regression check for CI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import click
from rich.markup import escape
from rich.table import Table

from raisimcli.cli.output import check_writable, emit
from raisimcli.errors import UsageError
from raisimcli.log.compare import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    Comparison,
    compare_logs,
    load_tolerances,
    update_golden,
)


def _junit(c: Comparison, path: str) -> None:
    """One test case per dataset (and one for the attributes), standard JUnit XML."""
    suite = ET.Element("testsuite", name="raisimcli compare", tests=str(len(c.results) + 1),
                       failures=str(len(c.failures) + (1 if c.attributes else 0)))
    case = ET.SubElement(suite, "testcase", classname="attributes", name="attributes")
    if c.attributes:
        f = ET.SubElement(case, "failure", message=f"{len(c.attributes)} attributes differ")
        f.text = "\n".join(c.attributes)
    for r in c.results:
        case = ET.SubElement(suite, "testcase", classname="datasets", name=r.path)
        if not r.ok:
            f = ET.SubElement(case, "failure", message=r.reason, type=r.status)
            f.text = (f"{r.reason}\nmax abs error {r.max_abs:.6g}, max rel error {r.max_rel:.6g}"
                      + (f"\nworst at {r.where}" if r.where else ""))
    ET.ElementTree(ET.Element("testsuites", name="raisimcli")).getroot().append(suite)
    root = ET.Element("testsuites", name="raisimcli")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def _as_dict(c: Comparison) -> dict:
    return {
        "golden": c.golden, "new": c.new, "ok": c.ok,
        "attributes": c.attributes, "ignored_attributes": c.ignored,
        "datasets": [{"path": r.path, "status": r.status, "reason": r.reason,
                      "compared": r.compared, "failing": r.failing, "max_abs": r.max_abs,
                      "max_rel": r.max_rel, "where": r.where,
                      "rtol": r.tolerance.rtol if r.tolerance else None,
                      "atol": r.tolerance.atol if r.tolerance else None} for r in c.results],
        "summary": {"datasets": len(c.results), "failing": len(c.failures)},
    }


@click.command("compare")
@click.argument("golden", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
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
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Write a self-contained HTML report with a figure per failing dataset "
                   "(needs matplotlib).")
@click.option("--update", is_flag=True, help="Replace GOLDEN with NEW (after the comparison).")
@click.option("-q", "--quiet", is_flag=True, help="Only the summary line.")
def compare_command(golden, new, rtol, atol, tolerances, include, exclude, max_report, as_json,
                    junit_xml, html_path, update, quiet):
    """Compare a NEW log against a GOLDEN one: structure (datasets, shapes, dtypes, names, the
    time axis), then values within tolerance.

    Exit codes: 0 within tolerance (or --update); 1 different; 2 unreadable input or usage."""
    from raisimcli.cli.main import report_errors, stdout

    @report_errors(json_output=as_json)
    def go():
        if junit_xml:  # every argument is checked before the comparison
            check_writable(junit_xml, "--junit-xml")
        if html_path:
            check_writable(html_path, "--html")
            import importlib.util
            if importlib.util.find_spec("matplotlib") is None:
                raise UsageError("--html needs matplotlib: pip install 'raisimcli[plot]'")
        rules = load_tolerances(tolerances) if tolerances else []
        c = compare_logs(golden, new, rtol=rtol, atol=atol, tolerances=rules,
                         include=tuple(include), exclude=tuple(exclude))
        if junit_xml:
            _junit(c, junit_xml)
        if html_path:
            from raisimcli.log.report import html_report
            html_report(c, html_path)
        summary = (f"{'OK' if c.ok else 'DIFFERENT'}: {len(c.results)} datasets compared, "
                   f"{len(c.failures)} failing, {len(c.attributes)} attributes differ "
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
