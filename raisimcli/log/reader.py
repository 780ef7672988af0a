"""Reading logs from Python: arrays by name with their column names and units.

    from raisimcli.log import open_log
    with open_log("run.h5") as log:
        t = log.time
        q = log.robot("quadruped").signal("q")        # Signal: .data (T, nq), .names, .units
        tau = log.robot("quadruped").signal("torque/damping")
"""

from __future__ import annotations

from dataclasses import dataclass

import h5py
import numpy as np

from raisimcli.errors import LogError

FORMAT = "raisimcli-log"
FORMAT_VERSION = 2


@dataclass
class Signal:
    """One logged dataset. `data`: (T,), (T, k) or (T, k, 3); `names`: the k column names (or
    None); `units`: one CF string, or one per column; `time`: (T,) s; `dims`: the axis names
    (`time`, then the names of the column scales, e.g. `dof_names`, `xyz`); `name`: its path
    in the robot's group."""

    data: np.ndarray
    names: list[str] | None
    units: str | list[str]
    time: np.ndarray | None = None
    dims: tuple = ("time",)
    name: str = ""
    description: str = ""

    def column(self, name: str) -> np.ndarray:
        if self.names is None or name not in self.names:
            raise KeyError(f"no column {name!r}; columns: {self.names}")
        return self.data[:, self.names.index(name)]

    def to_xarray(self):
        """An xarray.DataArray with labelled dimensions and the time coordinate (needs xarray)."""
        xr = _optional("xarray", "xarray")
        coords = {"time": self.time} if self.time is not None else {}
        if self.names is not None and len(self.dims) > 1:
            coords[self.dims[1]] = self.names
        if len(self.dims) > 2 and self.dims[2] == "xyz":
            coords["xyz"] = ["x", "y", "z"]
        attrs = {"units" if isinstance(self.units, str) else "column_units": self.units,
                 "description": self.description}
        return xr.DataArray(self.data, dims=self.dims, coords=coords, name=self.name, attrs=attrs)

    def to_pandas(self):
        """A pandas.DataFrame indexed by time (s), one column per name (for (T, k, 3) signals,
        columns `name.x`, `name.y`, `name.z`); needs pandas."""
        pd = _optional("pandas", "pandas")
        data = self.data
        if data.ndim == 1:
            columns = [self.name.rsplit("/", 1)[-1] or "value"]
            data = data[:, None]
        elif data.ndim == 2:
            columns = self.names or [f"{k}" for k in range(data.shape[1])]
        else:
            names = self.names or [f"{k}" for k in range(data.shape[1])]
            columns = [f"{n}.{c}" for n in names for c in "xyz"[:data.shape[2]]]
            data = data.reshape(data.shape[0], -1)
        index = pd.Index(self.time, name="time") if self.time is not None else None
        return pd.DataFrame(data, index=index, columns=columns)


def _optional(module: str, extra: str):
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        raise LogError(f"this needs {module}: pip install {extra}") from None


class RobotLog:
    def __init__(self, group: h5py.Group):
        self.group = group
        self.name = group.name.rsplit("/", 1)[1]

    def _strings(self, name: str) -> list[str]:
        return [s.decode() if isinstance(s, bytes) else str(s) for s in self.group[name][()]]

    @property
    def coordinate_names(self) -> list[str]:
        return self._strings("coordinate_names")

    @property
    def dof_names(self) -> list[str]:
        return self._strings("dof_names")

    def signals(self) -> list[str]:
        """Paths (relative to the robot) of every per-row dataset."""
        out = []

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and obj.ndim >= 1 and obj.dims[0].label == "time":
                out.append(name)

        self.group.visititems(visit)
        return out

    def constraints(self):
        """The loop and mimic constraints of the run as a pandas DataFrame, one row per
        constraint and step: time, constraint, impulse_x/y/z, error_x/y/z (needs pandas)."""
        return _constraints_table(self)

    def signal(self, path: str) -> Signal:
        if path not in self.group:
            raise LogError(f"robot {self.name!r} has no signal {path!r}; it has "
                           f"{', '.join(self.signals())}")
        ds = self.group[path]
        names = None
        if "names" in ds.attrs:
            names = [s.decode() if isinstance(s, bytes) else str(s)
                     for s in ds.file[_text(ds.attrs["names"])][()]]
        if "column_units" in ds.attrs:
            units = [_text(u) for u in ds.attrs["column_units"]]
        else:
            units = str(_text(ds.attrs.get("units", "")))
        dims = tuple(["time"] + [d[0].name.rsplit("/", 1)[-1] if len(d) else f"axis{k}"
                                 for k, d in enumerate(ds.dims) if k > 0])
        time = ds.file["time"][()] if "time" in ds.file else None
        return Signal(ds[()], names, units, time, dims, path,
                      str(_text(ds.attrs.get("description", ""))))


def _short(e: Exception) -> str:
    return str(e).split("(")[0].strip() or type(e).__name__


def open_h5_log(path: str) -> tuple[h5py.File, bool]:
    """(the open file, partial): a raisimcli log opened for reading. `partial` is True for the
    file of a run that is under way or was killed (status `running`): it holds the rows up to its
    last flush, and is opened in HDF5's SWMR read mode when the writer did not close it. Raises
    LogError for anything that is not a readable raisimcli log."""
    partial = False
    try:
        f = h5py.File(path, "r")
    except FileNotFoundError:
        raise LogError(f"{path}: log file not found") from None
    except IsADirectoryError:
        raise LogError(f"{path}: expected a log file, got a directory") from None
    except OSError as e:
        try:  # a writer that never closed it (killed, or still running): SWMR read
            f = h5py.File(path, "r", swmr=True)
            partial = True
        except OSError:
            raise LogError(f"{path}: not a readable HDF5 file ({_short(e)})") from None
    try:
        return _check_log(f, path, partial)
    except LogError:
        f.close()
        raise
    except (OSError, RuntimeError, KeyError, ValueError) as e:
        f.close()
        raise LogError(f"{path}: the file is damaged ({_short(e)})") from None


def _check_log(f: h5py.File, path: str, partial: bool) -> tuple[h5py.File, bool]:
    fmt = _text(f.attrs.get("format"))
    if fmt != FORMAT:
        raise LogError(f"{path}: not a raisimcli log (attribute format is {fmt!r}, expected "
                       f"{FORMAT!r})")
    version = f.attrs.get("format_version")
    if isinstance(version, (bool, np.bool_)) or not isinstance(version, (int, np.integer)):
        raise LogError(f"{path}: not a raisimcli log (attribute format_version is {version!r}, "
                       "expected an integer)")
    if version > FORMAT_VERSION:
        raise LogError(f"{path}: log format version {version} is newer than this raisimcli reads "
                       f"({FORMAT_VERSION}); upgrade raisimcli")
    if _text(f.attrs.get("status")) == "running":
        partial = True
    return f, partial


def _text(v):
    return v.decode(errors="replace") if isinstance(v, bytes) else v


def _constraints_table(robot: "RobotLog"):
    pd = _optional("pandas", "pandas")
    if "constraints" not in robot.group:
        raise LogError(f"robot {robot.name!r} has no constraints logged")
    names = robot._strings("constraint_names")
    impulse = robot.group["constraints/impulse"][()]
    error = robot.group["constraints/error"][()]
    time = robot.group.file["time"][()]
    T, n = impulse.shape[:2]
    table = {"time": np.repeat(time, n), "constraint": np.tile(names, T)}
    for label, data in (("impulse", impulse), ("error", error)):
        for k, c in enumerate("xyz"):
            table[f"{label}_{c}"] = data[:, :, k].reshape(-1)
    return pd.DataFrame(table)


class LogFile:
    """A log opened for reading. `partial`: the run that wrote it was killed (or is still
    running); its rows end at the last flush."""

    def __init__(self, path: str):
        self.path = path
        self.f, self.partial = open_h5_log(path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self.f.close()

    @property
    def status(self) -> str:
        """complete | diverged | interrupted | error, or `partial` for a killed run's file."""
        return "partial" if self.partial else str(_text(self.f.attrs["status"]))

    @property
    def attrs(self) -> dict:
        return dict(self.f.attrs)

    @property
    def time(self) -> np.ndarray:
        return self.f["time"][()]

    @property
    def robot_names(self) -> list[str]:
        return list(self.f["robots"].keys()) if "robots" in self.f else []

    def robot(self, name: str) -> RobotLog:
        if name not in self.robot_names:
            raise LogError(f"{self.path}: no robot {name!r}; robots: {', '.join(self.robot_names)}")
        return RobotLog(self.f[f"robots/{name}"])

    def contacts_at(self, row: int) -> dict[str, np.ndarray]:
        """The contacts of one row (the step that ended at time[row]): arrays by field name
        (`position` (k, 3), `force` (k, 3), `penetration` (k,), `body_a` names, ...)."""
        g = self._contacts_group()
        start, count = int(g["start"][row]), int(g["count"][row])
        bodies = [_text(b) for b in g["body_names"][()]]
        out = {}
        for name in ("position", "normal", "impulse_world", "impulse_contact", "force",
                     "penetration"):
            out[name] = g[name][start:start + count]
        for name in ("body_a", "body_b"):
            out[name] = np.array([bodies[i] for i in g[name][start:start + count]], dtype=object)
        return out

    def contacts(self):
        """Every contact of the run as a pandas DataFrame, one row per contact and step: time,
        row, body_a, body_b, position_x/y/z, normal_x/y/z, force_x/y/z, impulse_x/y/z (world),
        penetration (needs pandas)."""
        pd = _optional("pandas", "pandas")
        g = self._contacts_group()
        count = g["count"][()]
        rows = np.repeat(np.arange(len(count)), count)
        bodies = np.array([_text(b) for b in g["body_names"][()]], dtype=object)
        table = {"time": self.time[rows], "row": rows,
                 "body_a": bodies[g["body_a"][()]], "body_b": bodies[g["body_b"][()]]}
        for label, name in (("position", "position"), ("normal", "normal"), ("force", "force"),
                            ("impulse", "impulse_world")):
            data = g[name][()]
            for k, c in enumerate("xyz"):
                table[f"{label}_{c}"] = data[:, k]
        table["penetration"] = g["penetration"][()]
        return pd.DataFrame(table)

    def _contacts_group(self):
        if "contacts" not in self.f:
            raise LogError(f"{self.path}: no contacts were logged (the world has no ground, box "
                           "or second robot, or the scenario's log.signals leaves them out)")
        return self.f["contacts"]


def open_log(path: str) -> LogFile:
    """Open a raisimcli log for reading (a context manager)."""
    return LogFile(path)
