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
FORMAT_VERSION = 1


@dataclass
class Signal:
    """`data`: (T,) or (T, k) array; `names`: the k column names (or None); `units`."""

    data: np.ndarray
    names: list[str] | None
    units: str

    def column(self, name: str) -> np.ndarray:
        if self.names is None or name not in self.names:
            raise KeyError(f"no column {name!r}; columns: {self.names}")
        return self.data[:, self.names.index(name)]


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

    def signal(self, path: str) -> Signal:
        if path not in self.group:
            raise LogError(f"robot {self.name!r} has no signal {path!r}; it has "
                           f"{', '.join(self.signals())}")
        ds = self.group[path]
        names = None
        if "names" in ds.attrs:
            names = [s.decode() if isinstance(s, bytes) else str(s)
                     for s in ds.file[ds.attrs["names"]][()]]
        return Signal(ds[()], names, str(ds.attrs.get("units", "")))


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


def open_log(path: str) -> LogFile:
    """Open a raisimcli log for reading (a context manager)."""
    return LogFile(path)
