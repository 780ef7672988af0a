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


class LogFile:
    def __init__(self, path: str):
        self.path = path
        try:
            self.f = h5py.File(path, "r")
        except FileNotFoundError:
            raise LogError(f"{path}: log file not found") from None
        except OSError as e:
            raise LogError(f"{path}: not a readable HDF5 file ({e})") from None
        fmt = self.f.attrs.get("format")
        if fmt != FORMAT:
            self.f.close()
            raise LogError(f"{path}: not a raisimcli log (attribute format is {fmt!r}, expected "
                           f"{FORMAT!r})")
        version = int(self.f.attrs.get("format_version", -1))
        if version > FORMAT_VERSION:
            self.f.close()
            raise LogError(f"{path}: log format version {version} is newer than this raisimcli "
                           f"reads ({FORMAT_VERSION}); upgrade raisimcli")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self.f.close()

    @property
    def status(self) -> str:
        return str(self.f.attrs["status"])

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
