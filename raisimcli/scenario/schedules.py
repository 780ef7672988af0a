"""Schedules: a value as a function of the time t = k dt of a step's start."""

from __future__ import annotations

import csv
import math
import os
from typing import Callable

import numpy as np

from raisimcli import files
from raisimcli.errors import ScenarioError
from raisimcli.scenario import schema as S


def compile_schedule(spec, base_dir: str, where: str) -> tuple[Callable[[float], float], bool]:
    """(f, is_constant) for a schedule spec; `where` is the key path for messages."""
    if isinstance(spec, (int, float)):
        v = float(spec)
        return (lambda t: v), True
    if isinstance(spec, S.Constant):
        v = spec.value
        return (lambda t: v), True
    if isinstance(spec, S.Step):
        t0, a, b = spec.time, spec.before, spec.after
        return (lambda t: a if t < t0 else b), False
    if isinstance(spec, S.Ramp):
        t0, t1, a, b = spec.start, spec.stop, spec.start_value, spec.stop_value
        return (lambda t: a if t <= t0 else (b if t >= t1 else a + (b - a) * (t - t0) / (t1 - t0))), False
    if isinstance(spec, S.Sine):
        A, f, ph, c = spec.amplitude, spec.frequency, spec.phase, spec.offset
        return (lambda t: c + A * math.sin(2 * math.pi * f * t + ph)), False
    if isinstance(spec, S.Piecewise):
        return _interpolator(np.array(spec.times), np.array(spec.values)), len(spec.times) == 1
    if isinstance(spec, S.Csv):
        times, values = read_csv_column(spec, base_dir, where)
        return _interpolator(times, values), False
    raise ScenarioError(f"{where}: unknown schedule {spec!r}")


def _interpolator(times: np.ndarray, values: np.ndarray):
    times_l, values_l = times.tolist(), values.tolist()

    def f(t: float) -> float:
        return float(np.interp(t, times_l, values_l))

    return f


MAX_CSV_BYTES = 256 * 1024 * 1024  # a trajectory file larger than this is refused


def read_csv_column(spec: S.Csv, base_dir: str, where: str) -> tuple[np.ndarray, np.ndarray]:
    path = files.resolve(spec.file, base_dir)
    try:
        if not os.path.isfile(path) and os.path.exists(path):
            raise ScenarioError(f"{where}.file: {path} is not a CSV file (a folder or a device)")
        if os.path.getsize(path) > MAX_CSV_BYTES:
            raise ScenarioError(f"{where}.file: CSV file {path} is more than the "
                                f"{MAX_CSV_BYTES} bytes allowed")
        with open(path, newline="", encoding="utf-8-sig") as f:  # a spreadsheet's BOM
            rows = list(csv.reader(f))
    except FileNotFoundError:
        raise ScenarioError(f"{where}.file: CSV file {spec.file!r} not found (looked at "
                            f"{path})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(f"{where}.file: cannot read CSV file {path}: {e}") from None
    except csv.Error as e:  # a field over csv's limit (131,072 characters), a NUL byte, ...
        raise ScenarioError(f"{where}.file: CSV file {path} is not a table of numbers "
                            f"({e})") from None
    if not rows:
        raise ScenarioError(f"{where}.file: CSV file {path} is empty; expected a header row")
    header = [h.strip() for h in rows[0]]
    for col in (spec.time_column, spec.column):
        if col not in header:
            raise ScenarioError(f"{where}: CSV file {path} has no column {col!r} (columns: "
                                f"{', '.join(header)})")
    it, ic = header.index(spec.time_column), header.index(spec.column)
    times, values = [], []
    for n, row in enumerate(rows[1:], start=2):
        if not row or all(not c.strip() for c in row):
            continue
        try:
            if "_" in row[it] or "_" in row[ic]:  # float() reads "1_0" as 10; no CSV reader does
                raise ValueError(row)
            t, v = float(row[it]), float(row[ic])
        except (ValueError, IndexError):
            raise ScenarioError(f"{where}: CSV file {path}, line {n}: expected numbers in columns "
                                f"{spec.time_column!r} and {spec.column!r}, got {row!r}") from None
        if not (math.isfinite(t) and math.isfinite(v)):
            raise ScenarioError(f"{where}: CSV file {path}, line {n}: values must be finite")
        if times and t <= times[-1]:
            raise ScenarioError(f"{where}: CSV file {path}, line {n}: time {t} is not after the "
                                f"previous {times[-1]}; times must increase")
        times.append(t)
        values.append(v)
    if not times:
        raise ScenarioError(f"{where}: CSV file {path} has no data rows")
    return np.array(times), np.array(values)
