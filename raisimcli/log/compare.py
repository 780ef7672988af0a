"""Comparing two logs, for CI: structure first, then values with per-dataset tolerances.

A value passes when |new - golden| <= atol + rtol |golden| (the golden file is the reference);
NaN equals NaN, and an infinity equals only the same infinity (the bound atol + rtol |inf| would
let anything pass). Datasets are read in blocks of rows, so memory stays bounded whatever the size.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

import h5py
import numpy as np

from raisimcli.errors import LogError, ScenarioError, UsageError
from raisimcli.log.reader import DAMAGED, _short, check_structure, objects, open_h5_log, \
    open_hdf5
from raisimcli.toml_file import read_toml

DEFAULT_RTOL = 1e-9
DEFAULT_ATOL = 1e-12
BLOCK_BYTES = 4 * 1024 * 1024  # per block of rows read from each file
# metadata that legitimately differs between two runs of the same scenario
IGNORED_ATTRIBUTES = ("/:created", "/:tool_version", "/robots/*:urdf_path")


@dataclass
class Tolerance:
    rtol: float
    atol: float
    pattern: str | None = None  # the rule that chose it


@dataclass
class DatasetResult:
    path: str
    status: str                  # pass | fail | missing | extra | structure
    reason: str = ""
    compared: int = 0
    failing: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    where: str = ""              # time and column of the worst entry
    tolerance: Tolerance | None = None
    first_time: float | None = None  # the time of the first row with an entry beyond tolerance

    @property
    def ok(self) -> bool:
        return self.status == "pass"


@dataclass
class Comparison:
    golden: str
    new: str
    results: list[DatasetResult] = field(default_factory=list)
    attributes: list[str] = field(default_factory=list)    # differing attributes
    ignored: list[str] = field(default_factory=list)       # differing but ignored
    status_failures: list[str] = field(default_factory=list)  # a run that did not complete
    names: set[str] = field(default_factory=set)          # every dataset and attribute path

    @property
    def ok(self) -> bool:
        return not self.attributes and not self.status_failures and \
            all(r.ok for r in self.results)

    @property
    def failures(self) -> list[DatasetResult]:
        return [r for r in self.results if not r.ok]

    @property
    def first_failing_time(self) -> float | None:
        """The earliest time at which a dataset over time has an entry beyond its tolerance."""
        times = [r.first_time for r in self.results if r.first_time is not None]
        return min(times) if times else None


def load_tolerances(path: str) -> list[tuple[str, Tolerance]]:
    """`"glob" = { rtol = ..., atol = ... }` lines of a TOML file, in file order (the first
    matching pattern wins)."""
    data = read_toml(path, "tolerance", ScenarioError).data
    out = []
    for pattern, spec in data.items():
        if not isinstance(spec, dict) or not set(spec) <= {"rtol", "atol"} or not spec:
            raise ScenarioError(f"{path}: {pattern}: expected {{ rtol = number, atol = number }}, "
                                f"got {spec!r}")
        for k, v in spec.items():
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v < np.inf:
                raise ScenarioError(f"{path}: {pattern}.{k}: expected a finite number >= 0, got "
                                    f"{v!r}")
        out.append((pattern.lstrip("/"), Tolerance(float(spec.get("rtol", DEFAULT_RTOL)),
                                                   float(spec.get("atol", DEFAULT_ATOL)),
                                                   pattern)))
    return out


def _open(path: str) -> h5py.File:
    f, partial = open_h5_log(path)  # (compare_logs has checked its structure)
    if partial:
        rows = f["time"].shape[0] if "time" in f else 0
        f.close()
        raise LogError(f"{path}: a partial log (its run was killed or is still running; {rows} "
                       "rows were flushed): compare needs the log of a finished run")
    return f


def _datasets(f: h5py.File, path: str) -> dict[str, h5py.Dataset]:
    """Every dataset by path. A dataset reachable by several links (the time axis and the name
    scales are linked into the groups that use them) is listed once, under its shortest path."""
    found: dict = {}
    try:
        for name, link in objects(f, links=True):
            if isinstance(link, h5py.HardLink):
                obj = f[name]
                if isinstance(obj, h5py.Dataset):
                    found.setdefault(obj.id, []).append(name)
    except DAMAGED as e:
        raise LogError(f"{path}: the file is damaged ({_short(e)})") from None
    out = {}
    for oid, names in found.items():
        name = min(names, key=lambda n: (n.count("/"), n))
        out[name] = f[name]
    return out


def _attributes(f: h5py.File, path: str) -> dict[str, object]:
    try:
        return _collect_attributes(f)
    except DAMAGED as e:
        raise LogError(f"{path}: the file is damaged ({_short(e)})") from None


def _collect_attributes(f: h5py.File) -> dict[str, object]:
    out = {}

    def collect(name, obj):
        for k, v in obj.attrs.items():
            if k in ("DIMENSION_LIST", "REFERENCE_LIST", "DIMENSION_LABELS", "CLASS", "NAME"):
                continue  # the dimension-scale machinery: compared through the structure
            out[f"/{name}:{k}" if name else f"/:{k}"] = v

    collect("", f)
    for name, obj in objects(f):
        collect(name, obj)
    return out


def _selected(path: str, include: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    """Datasets are selected by their path (`robots/dog/q`), attributes by `object:name`
    (`:status` on the root, `robots/dog:urdf_sha256`)."""
    if include and not any(fnmatch.fnmatchcase(path, g.lstrip("/")) for g in include):
        return False
    return not any(fnmatch.fnmatchcase(path, g.lstrip("/")) for g in exclude)


def _tolerance(path: str, rules, rtol: float, atol: float) -> Tolerance:
    for pattern, tol in rules:
        if fnmatch.fnmatchcase(path, pattern):
            return tol
    return Tolerance(rtol, atol)


def compare_logs(golden: str, new: str, *, rtol: float = DEFAULT_RTOL,
                 atol: float = DEFAULT_ATOL, tolerances=(), include: tuple[str, ...] = (),
                 exclude: tuple[str, ...] = (), check_patterns: bool = True) -> Comparison:
    """Compare two logs. Raises LogError (exit 2) for unreadable input, UsageError for a
    tolerance that is not a finite number >= 0 or (with `check_patterns`) an --include /
    --exclude pattern that matches nothing in either log; without it, the caller checks the
    patterns against the `names` of all its comparisons."""
    check_tolerances(rtol, atol)
    for path in (golden, new):  # missing, a folder, truncated: said before the slower check
        open_hdf5(path)[0].close()
    check_structure([golden, new])
    with _open(golden) as fg, _open(new) as fn:
        out = Comparison(golden, new)
        dg, dn = _datasets(fg, golden), _datasets(fn, new)
        # attributes: differences are failures, except the ones that legitimately differ
        ag, an = _attributes(fg, golden), _attributes(fn, new)
        for key in sorted(set(ag) | set(an)):
            same = key in ag and key in an and _equal_attr(ag[key], an[key])
            if same:
                continue
            if any(fnmatch.fnmatchcase(key, pat) for pat in IGNORED_ATTRIBUTES):
                out.ignored.append(key)
            elif _selected(key.lstrip("/"), include, exclude):
                out.attributes.append(f"{key}: {_fmt_attr(ag.get(key))} -> {_fmt_attr(an.get(key))}")
        # the runs' outcomes, whatever the filters: a diverged or interrupted run never passes
        for key in ("/:status",):
            for label, attrs in (("golden", ag), ("new", an)):
                status = attrs.get(key)
                status = status.decode() if isinstance(status, bytes) else status
                if status != "complete":
                    out.status_failures.append(f"the {label} log's run did not complete "
                                               f"(status {status!r})")
        everything = [k.lstrip("/") for k in set(ag) | set(an)] + list(set(dg) | set(dn))
        out.names = set(everything)
        if check_patterns:
            check_patterns_match(include, exclude, everything, f"{golden} or {new}")
        # to say when a difference happens (the time axis is linked into several groups, so it is
        # not always visited under its root name)
        time_g = _read_all(fg["time"] if "time" in fg else None, golden)
        for path in sorted(set(dg) | set(dn)):
            if not _selected(path, include, exclude):
                continue
            tol = _tolerance(path, tolerances, rtol, atol)
            if path not in dn:
                out.results.append(DatasetResult(path, "missing", "missing in the new log",
                                                 tolerance=tol))
                continue
            if path not in dg:
                out.results.append(DatasetResult(path, "extra", "not in the golden log",
                                                 tolerance=tol))
                continue
            out.results.append(_compare_dataset(path, dg[path], dn[path], tol, time_g, fg,
                                                golden, new))
        if not out.results and not out.attributes:
            raise UsageError(f"no dataset of {golden} or {new} is selected by --include / "
                             "--exclude: a comparison of nothing cannot pass")
        return out  # the time axis itself is compared as a dataset like any other


def check_tolerances(rtol: float, atol: float) -> None:
    for name, value in (("--rtol", rtol), ("--atol", atol)):
        if not 0 <= value < np.inf:
            raise UsageError(f"{name} must be a finite number >= 0, got {value!r}")


def check_patterns_match(include, exclude, names, where: str) -> None:
    """A UsageError for an --include / --exclude pattern that matches none of `names`: a typo
    there would compare nothing and pass."""
    for option, patterns in (("--include", include), ("--exclude", exclude)):
        for g in patterns:
            if not any(fnmatch.fnmatchcase(p, g.lstrip("/")) for p in names):
                raise UsageError(f"{option} {g!r} matches no dataset or attribute of {where}")


def _equal_attr(a, b) -> bool:
    try:
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype != b.dtype and (a.dtype.kind in "fiub" or b.dtype.kind in "fiub"):
            return False  # the same value in another type is a change
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    except Exception:  # noqa: BLE001  (attribute types that numpy cannot compare)
        return a == b


def _fmt_attr(v) -> str:
    if v is None:
        return "(absent)"
    if isinstance(v, bytes):
        v = v.decode(errors="replace")
    s = repr(v.item() if isinstance(v, np.generic) else v)
    return s if len(s) < 80 else s[:77] + "..."


def _read_all(ds, path):
    if ds is None:
        return None
    try:
        return ds[()]
    except DAMAGED as e:
        raise LogError(f"{path}: the file is damaged: cannot read {ds.name} ({_short(e)})") from None


def _read_block(ds: h5py.Dataset, sl: slice, path: str, raw: bool = False) -> np.ndarray:
    try:
        block = np.asarray(ds[sl] if ds.ndim else ds[()])
        return block if raw else block.astype(np.float64)
    except DAMAGED as e:
        raise LogError(f"{path}: the file is damaged: cannot read {ds.name} ({_short(e)})") from None


def _column_names(f: h5py.File, ds: h5py.Dataset) -> list[str] | None:
    ref = ds.attrs.get("names")
    if ref is None:
        return None
    if isinstance(ref, bytes):
        ref = ref.decode()
    if ref not in f:
        return None
    return [x.decode() if isinstance(x, bytes) else str(x) for x in f[ref][()]]


def _compare_dataset(path, g: h5py.Dataset, n: h5py.Dataset, tol: Tolerance, time, fg, gname,
                     nname) -> DatasetResult:
    res = DatasetResult(path, "pass", tolerance=tol)
    if g.shape != n.shape:
        res.status, res.reason = "structure", f"shape {g.shape} -> {n.shape}"
        return res
    numeric_g = g.dtype.kind in "fiub"
    numeric_n = n.dtype.kind in "fiub"
    if numeric_g != numeric_n or (numeric_g and g.dtype != n.dtype) or \
            (not numeric_g and g.dtype.kind != n.dtype.kind):
        res.status, res.reason = "structure", f"dtype {g.dtype} -> {n.dtype}"
        return res
    if not numeric_g:  # strings (names, URDF, scenario): equal or not
        a, b = _read_all(g, gname), _read_all(n, nname)
        if not np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object)):
            res.status = "fail"
            if path.endswith("_names"):
                ga = [x.decode() if isinstance(x, bytes) else x for x in np.atleast_1d(a)]
                nb = [x.decode() if isinstance(x, bytes) else x for x in np.atleast_1d(b)]
                diff = [f"{x} -> {y}" for x, y in zip(ga, nb) if x != y]
                res.reason = "renamed: " + ", ".join(diff[:5]) + (" ..." if len(diff) > 5 else "")
            else:
                res.reason = "text differs"
            res.failing = 1
        res.compared = 1
        return res
    # numbers, block by block along the first axis
    rows = g.shape[0] if g.ndim else 1
    row_bytes = max(1, int(np.prod(g.shape[1:])) * 8) if g.ndim else 8
    block = max(1, BLOCK_BYTES // row_bytes)
    worst = -np.inf
    worst_at = None
    for r0 in range(0, rows, block):
        sl = slice(r0, min(rows, r0 + block))
        exact = None  # integers (counts, indices) must be equal, beyond 2^53 too
        if g.dtype.kind in "iub":
            ai, bi = _read_block(g, sl, gname, raw=True), _read_block(n, sl, nname, raw=True)
            exact = ai != bi
            a, b = ai.astype(np.float64), bi.astype(np.float64)
        else:
            a = _read_block(g, sl, gname)
            b = _read_block(n, sl, nname)
        both_nan = np.isnan(a) & np.isnan(b)
        with np.errstate(invalid="ignore"):
            err = np.where(both_nan | (a == b), 0.0, np.abs(b - a))  # inf == inf: no error
        err = np.where(np.isnan(err), np.inf, err)  # NaN on one side only, or inf - inf
        finite_a = np.where(np.isfinite(a), a, 0.0)
        bound = tol.atol + tol.rtol * np.abs(finite_a)
        # an infinity on either side passes only when the other is the same infinity
        bad = (err > bound) | ((np.isinf(a) | np.isinf(b)) & (a != b))
        if exact is not None:
            bad = exact
            bound = np.zeros_like(err)
        res.compared += a.size
        res.failing += int(bad.sum())
        if res.first_time is None and bad.any() and time is not None and g.ndim >= 1 and \
                g.dims[0].label == "time":
            first = r0 + int(np.argmax(bad.reshape(len(bad), -1).any(axis=1)))
            res.first_time = float(time[first]) if first < len(time) else None
        if a.size:
            res.max_abs = max(res.max_abs, float(err.max()))
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = np.where(err == 0, 0.0, err / np.abs(a))
            res.max_rel = max(res.max_rel, float(np.nanmax(rel)))
            excess = np.where(bad, err - bound, -np.inf)
            k = int(np.argmax(excess if bad.any() else err))
            score = float(excess.flat[k]) if bad.any() else -np.inf
            if worst_at is None or score > worst:
                worst = score
                idx = np.unravel_index(k, a.shape)
                worst_at = (r0 + idx[0],) + tuple(idx[1:]) if g.ndim else ()
    if res.failing:
        res.status = "fail"
        res.reason = f"{res.failing} of {res.compared} entries beyond tolerance"
        res.where = _where(fg, g, worst_at, time)
    return res


def _where(f, ds, idx, time) -> str:
    if idx is None or idx == ():
        return ""
    parts = []
    if time is not None and ds.ndim >= 1 and ds.dims[0].label == "time" and idx[0] < len(time):
        parts.append(f"t = {time[idx[0]]:.6g} s")
    else:
        parts.append(f"row {idx[0]}")
    if len(idx) > 1:
        names = _column_names(f, ds)
        col = idx[1]
        parts.append(names[col] if names and col < len(names) else f"column {col}")
        if len(idx) > 2:
            parts.append("xyz"[idx[2]] if idx[2] < 3 else f"component {idx[2]}")
    return ", ".join(parts)


def update_golden(golden: str, new: str) -> None:
    """Replace GOLDEN with a copy of NEW, through raisimcli.writing.output_file: the golden log is
    replaced whole or not at all. GOLDEN, when it exists, must be a log of ours."""
    import shutil

    from raisimcli.log.writer import is_log
    from raisimcli.writing import output_file
    with output_file(golden, "--update", "log", is_log, inputs=(new,)) as tmp:
        shutil.copyfile(new, tmp)
