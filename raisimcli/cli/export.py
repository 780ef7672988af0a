"""`raisimcli export LOG.h5 --format csv|parquet -o DIR`: a log as tables for spreadsheets and
dataframe tools."""

from __future__ import annotations

import importlib.util
import json
import os

import click


def export_log(log_path: str, folder: str, fmt: str) -> list[str]:
    """Write every per-row signal of every robot as a table (time, then one column per name),
    the contacts and the constraints as long tables; returns the files written.

    Layout: FOLDER/<robot>/<signal>.<ext> (`torque/damping` becomes `torque/damping.csv`),
    FOLDER/<robot>/constraints.<ext>, FOLDER/contacts.<ext>."""
    from raisimcli.errors import UsageError
    from raisimcli.log import open_log
    from raisimcli.log.reader import _optional
    _optional("pandas", "pandas")
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:  # pandas' parquet engine
        raise UsageError("--format parquet needs pyarrow: pip install pyarrow")
    ext = "csv" if fmt == "csv" else "parquet"
    written: list[str] = []

    def save(df, path: str, index: bool) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if fmt == "csv":
            df.to_csv(path, index=index, float_format="%.17g")
        else:
            df.to_parquet(path, index=index)
        written.append(path)

    with open_log(log_path) as log:
        for name in log.robot_names:
            robot = log.robot(name)
            for signal in robot.signals():
                df = robot.signal(signal).to_pandas()
                save(df, os.path.join(folder, name, f"{signal}.{ext}"), index=True)
            if "constraints" in robot.group:
                save(robot.constraints(), os.path.join(folder, name, f"constraints.{ext}"),
                     index=False)
        if "contacts" in log.f:
            save(log.contacts(), os.path.join(folder, f"contacts.{ext}"), index=False)
    return written


@click.command("export")
@click.argument("log", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet"]), default="csv",
              show_default=True, help="Table format (parquet needs pyarrow).")
@click.option("-o", "--output", "folder", type=click.Path(file_okay=False), required=True,
              help="Folder to write the tables into (created if needed).")
@click.option("--json", "as_json", is_flag=True, help="Print the files written as JSON on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="No summary.")
def export_command(log, fmt, folder, as_json, quiet):
    """Write a log's signals, contacts and constraints as CSV or Parquet tables, one file per
    signal with a time column (needs pandas: pip install pandas).

    Exit codes: 0 written; 2 unreadable log, or pandas / pyarrow missing."""
    from raisimcli.cli.main import report_errors, stdout
    from raisimcli.cli.output import emit

    @report_errors(json_output=as_json)
    def go():
        files = export_log(log, folder, fmt)
        if as_json:
            emit(json.dumps({"log": log, "format": fmt, "files": files}, indent=2))
        elif not quiet:
            stdout.print(f"wrote {len(files)} {fmt} files into {folder}", markup=False)

    go()
