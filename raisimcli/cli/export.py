"""`raisimcli export LOG.h5 --format csv|parquet -o DIR`: a log as tables for spreadsheets and
dataframe tools."""

from __future__ import annotations

import importlib.util
import json
import os
import re

import click


MANIFEST = "export.json"
# a robot's or a signal's name as a file or folder name: letters, digits, "_", "." and "-", not
# starting with a dot (so never ".." or a hidden file), at most 128 characters
_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def _manifest(folder: str) -> dict | None:
    """The manifest an earlier export left in `folder` ({"generator", "log", "files"}), or None."""
    try:
        with open(os.path.join(folder, MANIFEST), encoding="utf-8") as f:
            m = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(m, dict) or m.get("generator") != "raisimcli export" or \
            not isinstance(m.get("files"), list):
        return None
    return m


def _relative(log_path: str, parts: list[str]) -> str:
    """A table's path under the folder from names read in the log, each checked to be a plain
    file or folder name (a hostile log's ".." never leaves the folder)."""
    from raisimcli.errors import LogError
    for p in parts:
        if not _SAFE.fullmatch(p):
            raise LogError(f"{log_path}: the log names {'/'.join(parts)!r}, which cannot be a "
                           f"file name ({p!r}: letters, digits, '_', '.' and '-', not starting "
                           "with '.')")
    return os.path.join(*parts)


def _signal_units(sig, n_columns: int) -> list[str]:
    """The unit of each of a signal's table columns (to_pandas': one per name, or name.x .y .z),
    then of its index (time, s)."""
    units = sig.units
    if isinstance(units, str):
        per = [units] * n_columns
    elif len(units) == n_columns:
        per = list(units)
    else:  # (a unit per name, its x y z columns sharing it)
        per = [u for u in units for _ in range(n_columns // max(len(units), 1))]
    return per + ["s"]


def _table_units(df, group) -> list[str]:
    """The unit of each column of a long table (contacts, constraints) as the log's datasets
    give them: `force_x` is the unit of `force`, `impulse_x` of `impulse_world` or `impulse`,
    text columns none."""
    from pandas.api.types import is_numeric_dtype

    from raisimcli.log.reader import _text
    units = []
    for column in df.columns:
        if not is_numeric_dtype(df[column]):  # (names: no unit)
            units.append("")
            continue
        base = column.rsplit("_", 1)[0] if column[-2:] in ("_x", "_y", "_z") else column
        for name in (base, f"{base}_world"):
            if name in group and "units" in group[name].attrs:
                units.append(str(_text(group[name].attrs["units"])))
                break
        else:
            units.append("s" if column == "time" else "")
    return units


def _with_units(df, units: list[str], index: bool):
    """A copy of table df whose column names (and index name) carry their units, `name [unit]`
    (a column without a unit, such as a body's name, keeps its name)."""
    out = df.copy()
    out.columns = [f"{c} [{u}]" if u else str(c) for c, u in zip(df.columns, units)]
    if index and df.index.name:
        out.index = out.index.rename(f"{df.index.name} [{units[-1]}]")
    return out


def _parquet(df, units: list[str], index: bool) -> bytes:
    """Table df as Parquet bytes with each column's unit in its field's metadata (`units`), where
    pyarrow and Parquet readers keep it."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pa.Table.from_pandas(df, preserve_index=index)
    unit_of = dict(zip(df.columns, units))
    if index and df.index.name:
        unit_of[df.index.name] = units[-1]
    fields = [f.with_metadata({"units": unit_of[f.name]}) if unit_of.get(f.name) else f
              for f in table.schema]
    table = table.cast(pa.schema(fields, metadata=table.schema.metadata))
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def export_log(log_path: str, folder: str, fmt: str) -> tuple[list[str], str]:
    """Write every per-row signal of every robot as a table (time, then one column per name),
    the contacts and the constraints as long tables; returns (the files written, the log's
    status).

    Layout: FOLDER/<robot>/<signal>.<ext> (`torque/damping` becomes `torque/damping.csv`),
    FOLDER/<robot>/constraints.<ext>, FOLDER/contacts.<ext>, and FOLDER/export.json, the list of
    files, written last. Everything is read before anything is written; each file is written
    whole or not at all (raisimcli.writing), and a file already in the folder is replaced only
    when an earlier export listed it."""
    from raisimcli.errors import UsageError
    from raisimcli.log import open_log
    from raisimcli.log.reader import _optional, reading
    from raisimcli.writing import check_replaceable, write_bytes
    _optional("pandas", "pandas")
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:  # pandas' parquet engine
        raise UsageError("--format parquet needs pyarrow: pip install pyarrow")
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UsageError(f"-o {folder}: is a file; expected a folder")
    ext = "csv" if fmt == "csv" else "parquet"
    tables = []  # (relative path, frame, index, the unit of each column and of the index)
    with open_log(log_path, check=True) as log, reading(log_path):
        status = log.status
        for name in log.robot_names:
            robot = log.robot(name)
            for signal in robot.signals():
                rel = _relative(log_path, [name] + f"{signal}.{ext}".split("/"))
                sig = robot.signal(signal)
                df = sig.to_pandas()
                tables.append((rel, df, True, _signal_units(sig, len(df.columns))))
            if "constraints" in robot.group:
                df = robot.constraints()
                tables.append((_relative(log_path, [name, f"constraints.{ext}"]), df, False,
                               _table_units(df, robot.group["constraints"])))
        if "contacts" in log.f:
            df = log.contacts()
            tables.append((f"contacts.{ext}", df, False, _table_units(df, log.f["contacts"])))
    earlier = _manifest(folder) or {"files": []}
    listed = {os.path.normpath(f) for f in earlier["files"] if isinstance(f, str)}

    def ours(path: str) -> bool:
        return os.path.normpath(os.path.relpath(path, folder)) in listed

    inputs = (log_path,)
    for rel, *_ in tables:  # every target checked before anything is written
        check_replaceable(os.path.join(folder, rel), "-o", "table", ours, inputs)
    written: list[str] = []
    for rel, df, index, units in tables:
        path = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if fmt == "csv":
            data = _with_units(df, units, index).to_csv(index=index,
                                                        float_format="%.17g").encode()
        else:
            data = _parquet(df, units, index)
        write_bytes(path, data, "-o", "table", ours, inputs)
        written.append(path)
    manifest = json.dumps({"generator": "raisimcli export", "log": os.path.abspath(log_path),
                           "files": sorted(set(os.path.relpath(p, folder) for p in written) |
                                           {f for f in listed
                                            if os.path.isfile(os.path.join(folder, f))})},
                          indent=2).encode()
    write_bytes(os.path.join(folder, MANIFEST), manifest, "-o", "export manifest",
                lambda p: _manifest(folder) is not None, inputs)
    return written, status


@click.command("export")
@click.argument("log", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet", "mcap"]), default="csv",
              show_default=True,
              help="csv or parquet: tables into a folder (parquet needs pyarrow); mcap: one MCAP "
                   "file for Foxglove and ROS 2 tools (needs mcap).")
@click.option("-o", "--output", "folder", type=click.Path(), required=True,
              help="The folder to write the tables into (created if needed); with --format "
                   "mcap, the file.")
@click.option("--json", "as_json", is_flag=True, help="Print the files written as JSON on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="No summary.")
def export_command(log, fmt, folder, as_json, quiet):
    """Write a log's signals, contacts and constraints as CSV or Parquet tables, one file per
    signal with a time column (needs pandas: pip install pandas), or as one MCAP file with the
    links' transforms, joint states, torque by source, joint wrenches and contacts.

    Exit codes: 0 written; 2 unreadable log, or pandas / pyarrow / mcap missing."""
    from raisimcli.cli.main import report_errors, stdout
    from raisimcli.cli.output import emit

    @report_errors(json_output=as_json)
    def go():
        if fmt == "mcap":
            files, status, what = _mcap(log, folder)
        else:
            if os.path.isfile(folder):
                from raisimcli.errors import UsageError
                raise UsageError(f"-o {folder}: is a file; expected a folder")
            files, status = export_log(log, folder, fmt)
            what = f"{len(files)} {fmt} files into {folder}"
        if as_json:
            emit(json.dumps({"log": log, "format": fmt, "status": status, "files": files},
                            indent=2))
        elif not quiet:
            stdout.print(f"wrote {what}", markup=False)
        if status != "complete" and not as_json:
            click.echo(f"warning: {log}: the log's run did not complete (status {status}): "
                       "its tables end where it stopped", err=True)

    go()


def _mcap(log: str, path: str) -> tuple[list[str], str, str]:
    """--format mcap: the file at `path`, written whole or not at all."""
    from raisimcli.log.reader import open_log
    from raisimcli.log.to_mcap import write_mcap
    from raisimcli.writing import output_file

    def ours(p: str) -> bool:
        with open(p, "rb") as f:
            head = f.read(4096)
        return head.startswith(b"\x89MCAP") and b"raisimcli" in head

    with output_file(path, "-o", "MCAP file", ours, inputs=(log,)) as tmp:
        counts = write_mcap(log, tmp)
    with open_log(log) as lg:
        status = lg.status
    return [path], status, f"{path} ({sum(counts.values())} messages on {len(counts)} topics)"
