"""The sweep file (TOML): a base scenario and what varies (docs/sweep.md).

    scenario = "../quadruped_stand.toml"      # relative to the sweep file
    set = { "world.duration" = 2.0 }           # applied to every case (optional)
    seeds = [0, 1]                             # every case once per seed (optional)

    [grid]                                     # the product of all the lists
    "robot.0.pd.kp" = [60.0, 80.0]
    "robot.0.pd.kd" = [1.0, 2.0]

    [[case]]                                   # explicit cases, after the grid's (optional)
    name = "soft"                              # optional; else made from the values
    "robot.0.pd.kp" = 20.0

Key paths are those of `raisimcli run --set`. A key path is checked against the scenario schema
here, so a misspelt key stops the sweep before anything runs (exit code 2); a value is checked
when its case is resolved, and a bad one fails that case alone.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from dataclasses import dataclass

import pydantic

from raisimcli.errors import ScenarioError, did_you_mean
from raisimcli.scenario import schema as S
from raisimcli.toml_file import read_toml

MAX_CASES = 100_000  # the cases of one sweep

TOP_LEVEL_KEYS = ("scenario", "set", "seeds", "grid", "case")
# characters kept in a case name as they are (file names on every system); others become "_"
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._=,+\-]")


@dataclass(frozen=True)
class Case:
    name: str                         # unique in the sweep; the log is NAME.h5
    overrides: tuple[str, ...]        # "key.path=TOML value", in the order they are applied
    parameters: tuple[tuple[str, object], ...]  # (key path, value) that vary, for the index


@dataclass(frozen=True)
class Sweep:
    path: str                         # the sweep file, absolute
    scenario: str                     # the base scenario, absolute
    cases: tuple[Case, ...]
    parameter_names: tuple[str, ...]  # every key path that varies, in first-seen order


def toml_value(v) -> str:
    """`v` as a TOML value that reads back as exactly `v` (floats by repr: no digit lost)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f'"{k}" = {toml_value(x)}' for k, x in v.items()) + " }"
    raise TypeError(f"not a TOML value: {v!r}")


def check_key_path(key: str) -> str | None:
    """Why `key` (e.g. `robot.0.pd.kp`) names no key of a scenario, or None when it does. Below
    a key whose value is not a table of known keys (a number, a per-joint table), any sub-key is
    left to the scenario's own validation."""
    cls: type[pydantic.BaseModel] | None = S.Scenario
    parts = key.split(".")
    for i, part in enumerate(parts):
        if cls is None:
            return None
        if part.isdigit():
            continue
        field = cls.model_fields.get(part)
        where = ".".join(parts[:i]) or "the top level"
        if field is None:
            return (f"unknown key {part!r} in {where}" + did_you_mean(part, cls.model_fields))
        models = [a for a in _walk(field.annotation)
                  if isinstance(a, type) and issubclass(a, pydantic.BaseModel)]
        cls = models[0] if len(models) == 1 else None
    return None


def _walk(a):
    import typing
    yield a
    for arg in typing.get_args(a):
        yield from _walk(arg)


def _flatten(table: dict, prefix: str = "") -> dict:
    """`{"robot": {"0": {"pd": {"kp": [..]}}}}` (TOML's dotted keys) -> `{"robot.0.pd.kp": [..]}`;
    a quoted key `"robot.0.pd.kp"` is already flat."""
    out = {}
    for k, v in table.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _short_names(keys) -> dict[str, str]:
    """Each key path's name in case names: its shortest tail that no other key path ends with
    (`robot.0.pd.kp` -> `kp`; `robot.0.pd.kp.slider` beside `robot.0.pd.kd.slider` -> `kp.slider`)."""
    out = {}
    for k in keys:
        parts = k.split(".")
        for n in range(1, len(parts) + 1):
            tail = ".".join(parts[-n:])
            if not any(o != k and (o == tail or o.endswith("." + tail)) for o in keys):
                break
        out[k] = tail
    return out


def _name_value(v) -> str:
    return toml_value(v).replace(" ", "").replace('"', "")


MAX_NAME = 200  # bytes of a case's name: its log's file name (with ".diverged.h5") stays < 255


def _fit(name: str) -> str:
    """`name` itself, or when longer than MAX_NAME its start and a digest of the whole (file
    systems refuse a file name over 255 bytes: the case's log and the index were lost)."""
    if len(name) <= MAX_NAME:  # (ASCII after _NAME_UNSAFE)
        return name
    import hashlib
    return name[:MAX_NAME - 17] + "~" + hashlib.sha256(name.encode()).hexdigest()[:16]


def case_name(values: list[tuple[str, object]], short: dict[str, str]) -> str:
    name = ",".join(f"{short.get(k, k)}={_name_value(v)}" for k, v in values) or "base"
    return _NAME_UNSAFE.sub("_", name)


def load_sweep(path: str) -> Sweep:
    """Read and check a sweep file; every error is a ScenarioError naming the file and key."""
    path = os.path.abspath(os.fspath(path))
    data = read_toml(path, "sweep", ScenarioError).data
    errors: list[str] = []

    def err(where: str, msg: str) -> None:
        errors.append(f"{path}: {where}: {msg}")

    if "scenario" not in data and ("world" in data or "robot" in data):
        raise ScenarioError(f"{path}: this is a scenario file (it has [world] / [[robot]]), not "
                            "a sweep file: run it with `raisimcli run`, or write a sweep file "
                            "that names it with scenario = \"...\" (docs/sweep.md)")
    for k in data:
        if k not in TOP_LEVEL_KEYS:
            err(k, f"unknown key; expected one of {', '.join(TOP_LEVEL_KEYS)}"
                + did_you_mean(k, TOP_LEVEL_KEYS))
    scenario = data.get("scenario")
    if not isinstance(scenario, str) or not scenario:
        err("scenario", f"expected the base scenario's path (a string), got {scenario!r}")
        scenario = ""
    else:
        scenario = os.path.join(os.path.dirname(path), scenario)
        if not os.path.isfile(scenario):
            err("scenario", f"scenario file {data['scenario']!r} not found (looked at {scenario})")

    def table(key):
        v = data.get(key, {})
        if not isinstance(v, dict):
            err(key, f"expected a table of key paths, got {type(v).__name__}")
            return {}
        return _flatten(v)

    common, grid = table("set"), table("grid")
    for key in list(common) + list(grid):
        why = check_key_path(key)
        if why:
            err(f"{'grid' if key in grid else 'set'}.{key!r}", why)
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            err(f"grid.{key!r}", f"expected a non-empty list of values, got {values!r}")
    seeds = data.get("seeds", [])
    if not isinstance(seeds, list) or not all(isinstance(s, int) and not isinstance(s, bool)
                                              for s in seeds):
        err("seeds", f"expected a list of integers, got {seeds!r}")
        seeds = []
    explicit = data.get("case", [])
    if not isinstance(explicit, list) or not all(isinstance(c, dict) for c in explicit):
        err("case", "expected [[case]] tables")
        explicit = []
    cases_values: list[tuple[str | None, list[tuple[str, object]]]] = []
    grid_keys = [k for k, v in grid.items() if isinstance(v, list) and v]
    count = math.prod(len(grid[k]) for k in grid_keys) if grid_keys else 0
    count = (count + len(explicit)) * max(1, len(seeds))
    if count > MAX_CASES:
        sizes = " x ".join(str(len(grid[k])) for k in grid_keys) or "0"
        raise ScenarioError(f"{path}: the sweep has {count} cases (grid {sizes}, "
                            f"{len(explicit)} [[case]], {max(1, len(seeds))} seeds), more than "
                            f"the {MAX_CASES} a sweep may run; split it into several sweeps")
    if grid_keys:
        for combo in itertools.product(*(grid[k] for k in grid_keys)):
            cases_values.append((None, list(zip(grid_keys, combo))))
    for n, c in enumerate(explicit):
        c = dict(c)
        name = c.pop("name", None)
        if name is not None and (not isinstance(name, str) or not name.strip()):
            err(f"case[{n}].name", f"expected a non-empty string, got {name!r}")
            name = None
        values = list(_flatten(c).items())
        for key, _ in values:
            why = check_key_path(key)
            if why:
                err(f"case[{n}].{key!r}", why)
        cases_values.append((name, values))
    if not cases_values:
        cases_values.append((None, []))  # seeds alone, or the base scenario once
    if errors:
        raise ScenarioError("\n".join(errors))

    keys = list(dict.fromkeys(k for _, vs in cases_values for k, _ in vs))
    short = _short_names(keys + (["seed"] if seeds else []))
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for n, (name, values) in enumerate(cases_values):
        for seed in (seeds or [None]):
            vals = values + ([("seed", seed)] if seed is not None else [])
            cname = _NAME_UNSAFE.sub("_", name) if name else case_name(vals, short)
            if name and seed is not None:
                cname += f",seed={seed}"
            cname = _fit(cname)
            if cname in seen:
                raise ScenarioError(f"{path}: case {cname!r} is defined twice (cases {seen[cname]} "
                                    f"and {len(cases)}); give one of them a name = \"...\"")
            seen[cname] = len(cases)
            overrides = tuple(f"{k}={toml_value(v)}" for k, v in list(common.items()) + vals)
            cases.append(Case(cname, overrides, tuple(vals)))
    names = tuple(dict.fromkeys(keys + (["seed"] if seeds else [])))
    return Sweep(path=path, scenario=os.path.abspath(scenario), cases=tuple(cases),
                 parameter_names=names)
