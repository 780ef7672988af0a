"""Reading logs from Python: arrays by name with their column names and units.

    from raisimcli.log import open_log
    with open_log("run.h5") as log:
        t = log.time
        q = log.robot("quadruped").signal("q")        # Signal: .data (T, nq), .names, .units
        tau = log.robot("quadruped").signal("torque/damping")
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass

import h5py
import numpy as np

from raisimcli.errors import LogError
from raisimcli.files import regular_file

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
        return [name for name, obj in objects(self.group)
                if isinstance(obj, h5py.Dataset) and obj.ndim >= 1 and
                obj.dims[0].label == "time"]

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


# what h5py raises on a damaged file while it is read: an unreadable block (OSError), a failed
# visit (RuntimeError), an object that will not open (KeyError), a bad value (ValueError), and an
# error inside a visit's callback (SystemError, h5py's lock handing one on)
DAMAGED = (OSError, RuntimeError, KeyError, ValueError, SystemError)


def objects(group: h5py.Group, links: bool = False) -> list:
    """(name, object) of everything below `group`, each object once under the first name HDF5's
    visit finds (h5py's visititems); with `links`, every link's name and link object (hard
    links, soft links) without opening their targets. The names are collected first and the
    objects opened after the visit: a damaged object that fails to open inside h5py's visit
    callback comes out as a SystemError of h5py's lock, here as the error itself (see
    `reading`)."""
    names: list[str] = []
    group.visit_links(names.append)
    if links:
        return [(n, group.get(n, getlink=True)) for n in names]
    out, seen = [], set()
    for n in names:  # each object once, under its first name (as h5py's visititems)
        if isinstance(group.get(n, getlink=True), h5py.HardLink):
            obj = group[n]
            if obj.id not in seen:
                seen.add(obj.id)
                out.append((n, obj))
    return out


@contextmanager
def reading(path: str):
    """Inside the block, an error HDF5 raises while reading the log at `path` is one LogError
    that names it (a damaged file: exit 2, no traceback)."""
    try:
        yield
    except LogError:
        raise
    except DAMAGED as e:
        raise LogError(f"{path}: the file is damaged ({_short(e.__cause__ or e)})") from None


_SIGNATURE = b"\x89HDF\r\n\x1a\n"
# HDF5's file consistency flags of a version 2 or 3 superblock, set while a writer has the file
# open and left set when the writer was killed: write access, SWMR write access
_OPEN_FOR_WRITING = 0x1 | 0x4


def _superblock(path: str, size: int) -> tuple[int, int]:
    """(the end-of-file address the superblock declares, its file consistency flags: 0 for
    versions 0 and 1) of an HDF5 file of `size` bytes, from its first bytes. HDF5 looks for the
    superblock at 0, 512, 1024, 2048, ... (after a user block). Raises LogError for a file that
    has none."""
    with open(path, "rb") as fh:
        at = 0
        while at + 48 <= size:
            fh.seek(at)
            head = fh.read(64)
            if head.startswith(_SIGNATURE):
                break
            at = 512 if at == 0 else 2 * at
        else:
            raise LogError(f"{path}: not a readable HDF5 file (no HDF5 signature)")
    version, width = head[8], head[13] if head[8] < 2 else head[9]
    if width not in (2, 4, 8):
        raise LogError(f"{path}: the file is damaged (its HDF5 superblock gives {width}-byte "
                       "addresses)")
    if version >= 2:  # signature, version, widths, flags, base, extension, end of file
        flags, base, eof_at = head[11], 12, 12 + 2 * width
    else:  # signature, versions, widths, K values, flags, [indexed K], base, free space, end
        flags, base = 0, 24 if version == 0 else 28
        eof_at = base + 2 * width
    if eof_at + width > len(head):
        raise LogError(f"{path}: the file is damaged (its HDF5 superblock is cut short)")
    declared = int.from_bytes(head[base:base + width], "little") + \
        int.from_bytes(head[eof_at:eof_at + width], "little")
    return declared, flags


# what check_structure's process runs: open the file as open_hdf5 would, then read its whole
# structure (every object, every attribute, every chunked dataset's chunk index), and refuse a
# dataset that declares more bytes than its file can hold: gzip (the best filter a log may use)
# packs at most 1032 bytes into one, so a reader never allocates what a hostile file only claims
_WALK = """
import os
import sys
import h5py
path, swmr = sys.argv[1], sys.argv[2] == "1"
most = max(1 << 28, 1100 * os.path.getsize(path))
try:
    f = h5py.File(path, "r")
except OSError:
    if not swmr:
        raise
    f = h5py.File(path, "r", swmr=True)
names = []
f.visit_links(names.append)
for k in f.attrs:
    f.attrs[k]
for n in names:
    if isinstance(f.get(n, getlink=True), h5py.HardLink):
        o = f[n]
        for k in o.attrs:
            o.attrs[k]
        if isinstance(o, h5py.Dataset):
            if o.size * o.dtype.itemsize > most:
                sys.exit(f"error: dataset {o.name} declares {o.size * o.dtype.itemsize} bytes, "
                         f"more than a file of {os.path.getsize(path)} bytes can hold")
            if o.chunks:
                o.id.get_num_chunks()
"""
STRUCTURE_SECONDS = 10.0  # check_structure's time for a file, plus 1 s per 10 MB


def _walk_forked(path: str, swmr: str):
    """_WALK in a forked copy of this process (h5py already imported: no start-up to pay): (the
    child's pid, the read end of a pipe that gets its error message)."""
    import sys
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: walk, report, and leave without running the parent's exit code
        code, message = 0, b""
        try:
            sys.argv = ["walk", path, swmr]
            exec(_WALK, {"__name__": "__walk__"})
        except SystemExit as e:
            code, message = (3, str(e.code).encode()) if e.code else (0, b"")
        except BaseException as e:  # noqa: BLE001  (whatever HDF5 raised: the file is damaged)
            code, message = 3, f"{type(e).__name__}: {e}".encode()
        try:
            os.write(write, message[-2000:])
        finally:
            os._exit(code)
    os.close(write)
    return pid, read


def check_structure(paths: list[str]) -> None:
    """Read the whole structure of each HDF5 file (open_hdf5's checks passed) in a process of
    its own, all at once, and raise LogError for the first that fails or does not finish in
    time. HDF5 can loop without end on damaged metadata (a block of zeros in an object header
    has kept it turning at full CPU, in C, where neither Ctrl-C nor a Python thread reaches it):
    a process can be stopped. The process is a fork of this one when this one runs a single
    thread (a fork of a process with other threads could inherit a lock one of them holds), else
    a new Python with h5py."""
    import signal
    import subprocess
    import sys
    import threading
    fork = hasattr(os, "fork") and threading.active_count() == 1
    procs = []
    for path in paths:
        _, flags = _superblock(path, os.path.getsize(path))
        swmr = "1" if flags & _OPEN_FOR_WRITING else "0"
        if fork:
            procs.append((path, _walk_forked(path, swmr)))
        else:
            procs.append((path, subprocess.Popen(
                [sys.executable, "-c", _WALK, path, swmr], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)))
    failure = None
    start = time.monotonic()
    for path, proc in procs:
        budget = STRUCTURE_SECONDS + os.path.getsize(path) / 1e7
        left = lambda: budget - (time.monotonic() - start)  # noqa: E731
        if fork:
            pid, read = proc
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done or left() <= 0:
                    break
                time.sleep(0.002)
            if not done:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            with os.fdopen(read, "rb") as r:
                err = r.read().decode(errors="replace")
            code = os.waitstatus_to_exitcode(status) if done else None
        else:
            try:
                err = proc.communicate(timeout=max(0.0, left()))[1]
                code = proc.returncode
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                code = None
        if code is None:
            failure = failure or LogError(f"{path}: the file is damaged (HDF5 did not finish "
                                          f"reading its structure within {budget:.0f} s)")
        elif code != 0 and failure is None:
            last = (err or "").strip().splitlines()
            why = last[-1].split(": ", 1)[-1] if last else f"exit code {code}"
            failure = LogError(f"{path}: the file is damaged ({_short(Exception(why))})")
    if failure is not None:
        raise failure


def open_hdf5(path: str, check: bool = False) -> tuple[h5py.File, bool]:
    """(the open file, whether a writer left it open): an HDF5 file opened for reading in bounded
    time. A file shorter than its superblock declares (a copy cut short) is refused before HDF5
    reads it. A file whose writer never closed it (killed, or still running) is opened in HDF5's
    SWMR read mode, and only then: in that mode HDF5 retries a metadata block whose checksum
    fails, sleeping in between, so that a damaged file would keep the command (and Ctrl-C) waiting
    without end. With `check`, its structure is read first in a process of its own
    (check_structure), for the commands. Raises LogError, naming the file."""
    st = regular_file(path, "log", LogError)
    try:
        declared, flags = _superblock(path, st.st_size)
    except OSError as e:
        raise LogError(f"{path}: cannot read the file ({e.strerror})") from None
    if declared > st.st_size:
        raise LogError(f"{path}: the file is truncated: it has {st.st_size} bytes of the "
                       f"{declared} its HDF5 header declares (a copy cut short?)")
    if check:
        check_structure([path])
    try:
        return h5py.File(path, "r"), False
    except OSError as e:
        if not flags & _OPEN_FOR_WRITING:
            raise LogError(f"{path}: not a readable HDF5 file ({_short(e)})") from None
        try:  # a writer that never closed it (killed, or still running): SWMR read
            return h5py.File(path, "r", swmr=True), True
        except OSError:
            raise LogError(f"{path}: not a readable HDF5 file ({_short(e)})") from None


def open_h5_log(path: str, check: bool = False) -> tuple[h5py.File, bool]:
    """(the open file, partial): a raisimcli log opened for reading (open_hdf5). `partial` is
    True for the file of a run that is under way or was killed (status `running`): it holds the
    rows up to its last flush. Raises LogError for anything that is not a readable raisimcli
    log."""
    f, partial = open_hdf5(path, check)
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

    def __init__(self, path: str, check: bool = False):
        self.path = path
        self.f, self.partial = open_h5_log(path, check)

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


def open_log(path: str, check: bool = False) -> LogFile:
    """Open a raisimcli log for reading (a context manager). `check`: read its structure in a
    process of its own first (check_structure), so that a damaged file on which HDF5 would
    loop is refused in bounded time; the commands check every log they read."""
    return LogFile(path, check)
