"""The HDF5 log of a run (layout in docs/log.md).

Rows are buffered in memory and written a chunk at a time. The file is written under a temporary
name in the target folder, `NAME.h5.partial-PID`, and renamed when closed, so a killed run never
leaves a corrupt file under the final name, and an interrupted or diverged run still leaves a
readable file that says so. Row k describes the step that ended at time[k] = (k + 1) dt: the state
at its end and what the step applied.

Nothing already written is lost:
- The file is in HDF5's single-writer/multiple-reader mode (SWMR) from the first row on, and is
  flushed to disk after every chunk and at least every FLUSH_SECONDS of wall time: after a SIGKILL
  or a power cut the partial file is readable up to the last flush (`open_log` and `compare`
  report it as partial). The next run to the same path removes such leftovers of dead runs.
- A run that does not complete never replaces a complete log: its log goes beside it, as
  `NAME.interrupted.h5` (or `.diverged.h5`, `.error.h5`).
- A write that fails (a full disk, a file-size limit) stops the run with one LogWriteError; the
  temporary file is removed and an earlier log at the path is left as it was.

Appending a row only keeps references to the step's result arrays (the step makes new ones every
time, it never writes into the old); a chunk is stacked and written at once. With gzip, a helper
process compresses the full chunks while the run goes on (raisimcli/log/deflate.py), and their
rows are written, in order, once it has: the file only ever holds whole, compressed rows.
"""

from __future__ import annotations

import collections
import datetime
import glob
import hashlib
import os
import time
from dataclasses import dataclass
from typing import Callable

import h5py
import numpy as np

from raisimcli import __version__, files
from raisimcli.errors import LogError, LogWriteError
from raisimcli.libm import variant as libm_variant
from raisimcli.physics.step.decomposition import SOURCES

FORMAT = "raisimcli-log"
FORMAT_VERSION = 2  # 2: every axis has a dimension scale; units are CF strings (docs/log.md)
STATUSES = ("running", "complete", "diverged", "interrupted", "error")
FLUSH_SECONDS = 2.0   # wall time between two flushes to disk, at most (and after every chunk)
# the share of a last chunk's bytes not yet compressed that the helper takes when it has nothing
# left to do (_compress_alongside): about what it compresses while the run's process does the
# rest, since it is slower while both work (measured on the 2-core development VM)
_HELPER_SHARE = 0.4
PARTIAL = ".partial-"  # NAME.h5.partial-PID: the file of a run under way (or killed)
_STR = h5py.string_dtype()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_partials(path: str) -> list[str]:
    """Remove the `PATH.partial-PID` files of runs that are no longer alive; returns them."""
    removed = []
    for p in glob.glob(glob.escape(path) + PARTIAL + "*"):
        pid = p.rsplit(PARTIAL, 1)[1]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            try:
                os.remove(p)
                removed.append(p)
            except OSError:
                pass
    return removed


def is_log(path: str) -> bool:
    """True when `path` is a raisimcli log (any status: an earlier run's, complete or not)."""
    try:
        with h5py.File(path, "r") as f:
            fmt = f.attrs.get("format")
    except (OSError, ValueError):
        return False
    return (fmt.decode() if isinstance(fmt, bytes) else fmt) == FORMAT


def is_complete_log(path: str) -> bool:
    """True when `path` is a raisimcli log whose run completed."""
    try:
        with h5py.File(path, "r") as f:
            status = f.attrs.get("status")
            fmt = f.attrs.get("format")
    except (OSError, ValueError):
        return False
    as_str = [x.decode() if isinstance(x, bytes) else x for x in (status, fmt)]
    return as_str == ["complete", FORMAT]


def sidecar_path(path: str, status: str) -> str:
    """Where a run with `status` writes its log when a complete one is already at `path`."""
    stem, ext = os.path.splitext(path)
    return f"{stem}.{status}{ext or '.h5'}"


@dataclass
class Channel:
    """One logged dataset: `path` in the file, `shape` of one row (() for a scalar), `read()`
    returns the row. `dims`: the dimension-scale datasets of the row's axes (the first axis is
    always `/time`); `units`: one CF/UDUNITS string, or one per column of the first row axis;
    `description`: prose; `record`: the key of the row in its `system`'s step record
    (ArticulatedSystem.step_record), which the writer copies from there when it can; `derived`:
    which of the entries of the system's log_energies_and_force the row is ("kinetic",
    "potential", "generalized_force"), which the writer reads in one call when it logs all
    three; `wrench`: which part of the system's JointWrenches the row is (0 force, 1 torque, 2
    actuation), which the writer copies from their packed array when it logs all three."""

    path: str
    shape: tuple
    read: Callable[[], np.ndarray | float]
    units: str | list[str]
    description: str = ""
    dtype: type = np.float64
    dims: tuple = ()
    record: str | None = None
    system: object = None
    derived: str | None = None
    wrench: int | None = None

    @property
    def names(self) -> str | None:
        """Path of the dataset naming the columns (the first row axis' scale)."""
        return self.dims[0].lstrip("/") if self.dims else None


def _units_of_coordinates(model) -> list[str]:
    out = []
    for j in model.moving_joints:
        if j.type == "floating":
            out += ["m", "m", "m", "1", "1", "1", "1"]
        elif j.type == "spherical":
            out += ["1"] * 4
        else:
            out.append("m" if j.type == "prismatic" else "rad")
    return out


def _units_of_joints(model, linear: str, angular: str, other: str = "1") -> list[str]:
    """One unit per joint of the model (fixed joints included), by its type."""
    return [linear if j.type == "prismatic" else angular if j.type in ("revolute", "continuous")
            else other for j in model.joints]


def _set_units(ds, units) -> None:
    """CF units: one `units` string, or `column_units` (one per column) where columns differ."""
    if isinstance(units, str) or len(set(units)) == 1:
        ds.attrs["units"] = units if isinstance(units, str) else units[0]
    else:
        ds.attrs["column_units"] = list(units)


def _units_of_dofs(model, linear: str, angular: str) -> list[str]:
    out = []
    for j in model.moving_joints:
        if j.type == "floating":
            out += [linear] * 3 + [angular] * 3
        elif j.type == "spherical":
            out += [angular] * 3
        else:
            out.append(linear if j.type == "prismatic" else angular)
    return out


class LogWriter:
    def __init__(self, path: str, *, scenario_text: str, scenario_sha256: str, config_json: str,
                 dt: float, decimation: int, compression: str, chunk_rows: int = 512,
                 scenario_name: str = "", resolved_sha256: str = "", gzip_level: int = 4,
                 shuffle: bool = True, deflate_helper: bool | None = None):
        """`compression`: "gzip" (at `gzip_level`), "lzf" or "none", after HDF5's byte
        `shuffle`; the defaults (gzip 4, shuffle, 512-row chunks) are chosen from the table of
        docs/log.md. `deflate_helper`: gzip whole chunks in a helper process (log/deflate.py);
        None: when this process may run on more than one CPU, unless the environment variable
        RAISIMCLI_DEFLATE_HELPER is 0."""
        self.path = os.path.abspath(path)
        folder = os.path.dirname(self.path)
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            raise LogError(f"cannot create the log folder {folder}: {e.strerror}") from None
        self.stale_removed = remove_stale_partials(self.path)
        self.tmp_path = f"{self.path}{PARTIAL}{os.getpid()}"
        self.failed = False
        self.replaced = None  # the complete log kept at the path, when this run did not complete
        self.overwrote = False  # a file was at the final path and was replaced
        try:
            # the 1.10 file format, no newer: SWMR needs 1.10 (see the module's docstring), and
            # "latest" would write the format of the HDF5 h5py ships (2.0 today), which tools
            # built on HDF5 1.10-1.14 cannot open; rdcc_nbytes 0: whole chunks are written at
            # once, so HDF5's chunk cache would only grow the memory
            self.f = h5py.File(self.tmp_path, "w", track_order=True, libver=("v110", "v110"),
                               rdcc_nbytes=0)
        except OSError as e:
            raise LogError(f"cannot write the log {self.tmp_path}: {_reason(e)}") from None
        self.dt = dt
        self.decimation = decimation
        self.chunk_rows = chunk_rows
        self.compression = None if compression == "none" else compression
        self._gzip_level, self._shuffle = gzip_level, shuffle
        self._use_helper = self.compression == "gzip" and (
            _helper_by_default() if deflate_helper is None else deflate_helper)
        self._helper = None  # a DeflateHelper, from start() on
        # without the helper, whole chunks are compressed here the same way (log/deflate.py);
        # only a chunk's rows written in two parts (a timed flush) go through HDF5's filters
        self._deflate_here = self.compression == "gzip"
        self._jobs: collections.deque[_Rows] = collections.deque()  # rows out in the helper
        self._filters = {} if self.compression is None else \
            {"compression": self.compression, "shuffle": shuffle,
             **({"compression_opts": gzip_level} if self.compression == "gzip" else {})}
        f = self.f
        f.attrs["format"] = FORMAT
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["tool_version"] = __version__
        f.attrs["created"] = datetime.datetime.now(datetime.timezone.utc).isoformat()
        f.attrs["status"] = "running"
        f.attrs["message"] = ""
        f.attrs["scenario_sha256"] = scenario_sha256
        f.attrs["resolved_sha256"] = resolved_sha256
        f.attrs["scenario_name"] = scenario_name
        f.attrs["dt"] = dt
        f.attrs["decimation"] = decimation
        f.attrs["libm"] = libm_variant()  # the build of glibc's math functions (raisimcli.libm)
        meta = f.create_group("meta")
        meta.create_dataset("scenario", data=scenario_text, dtype=_STR)
        meta.create_dataset("config", data=config_json, dtype=_STR)
        self.channels: list[Channel] = []
        self._world = None  # the World whose contacts are logged (add_contacts)
        self.rows = 0  # rows written to the file
        self._taken = 0  # rows taken from the buffers: written, or out in the helper
        # per channel, a chunk's rows: filled row by row (_fill of them) until taken
        self._buffers: list[np.ndarray] = []
        self._row_array = None  # the float64 channels' columns of those rows (_plan_rows)
        self._slot = None  # the helper's slot that holds _row_array (_next_buffers)
        self._fill = 0
        self.time_ds = f.create_dataset("time", shape=(0,), maxshape=(None,), dtype=np.float64,
                                        chunks=(chunk_rows,), track_times=False)
        self.time_ds.attrs["units"] = "s"
        self.time_ds.make_scale("time")
        self.xyz = f.create_dataset("xyz", data=["x", "y", "z"], dtype=_STR)
        self.xyz.attrs["description"] = "the components of a vector in the world frame"
        self.xyz.make_scale("xyz")
        self.closed = False

    # --- layout ---------------------------------------------------------------------------------
    def add_robot(self, name: str, system, signals: list[str]) -> None:
        """Declare the datasets of one robot (`system`: an ArticulatedSystem)."""
        m = system.model
        g = self.f.create_group(f"robots/{name}")
        g.attrs["model_name"] = m.name
        g.attrs["urdf_path"] = files.original(m.path)  # a batch worker's: the client's path
        g.attrs["urdf_sha256"] = hashlib.sha256(m.urdf_text.encode()).hexdigest()
        g.attrs["base"] = m.base
        g.create_dataset("urdf", data=m.urdf_text, dtype=_STR)
        p = f"robots/{name}"
        coord = self._scale(g, "coordinate_names", m.coordinate_names, "the coordinates q")
        dof = self._scale(g, "dof_names", m.dof_names, "the degrees of freedom (u, forces)")
        joint = self._scale(g, "joint_names", [j.name for j in m.joints],
                            "every joint of the model, fixed ones included")
        for ds_name, data, scale in (
                ("coordinate_units", _units_of_coordinates(m), coord),
                ("force_units", _units_of_dofs(m, "N", "N m"), dof)):
            d = g.create_dataset(ds_name, data=data, dtype=_STR)
            d.dims[0].attach_scale(scale)
        for ds_name, data, scale, units in (("initial_q", system.q, coord, _units_of_coordinates(m)),
                                            ("initial_u", system.u, dof,
                                             _units_of_dofs(m, "m s-1", "rad s-1"))):
            d = g.create_dataset(ds_name, data=data.copy())
            d.dims[0].attach_scale(scale)
            _set_units(d, units)
        self._limits(g, m, dof)
        nq, nv = m.nq, m.nv
        forces = _units_of_dofs(m, "N", "N m")
        ch = self.channels
        if "state" in signals:
            ch.append(Channel(f"{p}/q", (nq,), lambda: system.q, _units_of_coordinates(m),
                              "generalized coordinates (quaternions w x y z)",
                              dims=(coord.name,), record="q", system=system))
            ch.append(Channel(f"{p}/u", (nv,), lambda: system.u,
                              _units_of_dofs(m, "m s-1", "rad s-1"),
                              "generalized velocities (world frame for a floating base)",
                              dims=(dof.name,), record="u", system=system))
        if "energy" in signals:
            ch.append(Channel(f"{p}/energy/kinetic", (), system.get_kinetic_energy, "J",
                              "1/2 u^T M u", system=system, derived="kinetic"))
            ch.append(Channel(f"{p}/energy/potential", (), system.get_potential_energy, "J",
                              "sum of m g z of the moving bodies", system=system,
                              derived="potential"))
        if "torque" in signals:
            for source in SOURCES + ("total",):
                ch.append(Channel(f"{p}/torque/{source}", (nv,),
                                  (lambda s=source: system.torque[s]), forces,
                                  f"the joint torque of the step from {source} (docs/log.md)",
                                  dims=(dof.name,), record=f"torque/{source}", system=system))
        if "generalized_force" in signals:
            ch.append(Channel(f"{p}/generalized_force", (nv,), system.get_generalized_force,
                              forces, "get_generalized_force(): tau_cmd + tau_act",
                              dims=(dof.name,), system=system, derived="generalized_force"))
        if "actuators" in signals and m.actuators:
            act = self._scale(g, "actuator_names", [a.name for a in m.actuators], "the actuators")
            n = len(m.actuators)
            for field_, units in (("motor_speed", "rad s-1"), ("tau_min", "N m"),
                                  ("tau_max", "N m"), ("commanded", "N m"), ("applied", "N m")):
                ch.append(Channel(f"{p}/actuators/{field_}", (n,),
                                  (lambda fl=field_: getattr(system.actuator_state, fl)),
                                  units, f"{field_.replace('_', ' ')}, motor side",
                                  dims=(act.name,), record=f"actuators/{field_}",
                                  system=system))
        if "inverse_dynamics" in signals:
            nj = len(m.joints)
            ch.append(Channel(f"{p}/inverse_dynamics/force_world", (nj, 3),
                              lambda: system.joint_wrenches.force, "N",
                              "world frame: the force of the parent on the child through the "
                              "joint", dims=(joint.name, self.xyz.name), system=system,
                              wrench=0))
            ch.append(Channel(f"{p}/inverse_dynamics/torque_world", (nj, 3),
                              lambda: system.joint_wrenches.torque, "N m",
                              "world frame, about the joint's position at the step's start",
                              dims=(joint.name, self.xyz.name), system=system, wrench=1))
            ch.append(Channel(f"{p}/inverse_dynamics/actuation", (nj,),
                              lambda: system.joint_wrenches.actuation,
                              _units_of_joints(m, "N", "N m"),
                              "along the joint axis (NaN: not a 1-DoF joint)", dims=(joint.name,),
                              system=system, wrench=2))
        if "constraints" in signals and system.constraints:
            con = self._scale(g, "constraint_names", [c.name for c in system.constraints],
                              "the loop and mimic constraints")
            nc = len(system.constraints)
            kinds = [_constraint_units(m, c) for c in system.constraints]
            ch.append(Channel(f"{p}/constraints/impulse", (nc, 3),
                              lambda: system.constraint_impulses, [k[0] for k in kinds],
                              "loops: on body1 in the world frame (body2 gets the opposite); "
                              "mimic: the follower's generalized impulse in entry 0",
                              dims=(con.name, self.xyz.name)))
            ch.append(Channel(f"{p}/constraints/error", (nc, 3),
                              lambda: system.constraint_errors, [k[1] for k in kinds],
                              "at the step's start: pin p1 - p2 (world), equality "
                              "a_i . (p1 - p2), mimic q_f - m q_l - c in entry 0",
                              dims=(con.name, self.xyz.name)))
        if "solver" in signals:
            ch.append(Channel(f"{p}/solver/iterations", (), lambda: system.solver_iterations,
                              "1", "sweeps of the impulse solver", dtype=np.int32))

    def _limits(self, g, m, dof) -> None:
        """The joint limits per DoF (limits/lower, upper, velocity, effort; NaN where a DoF has
        none: floating, spherical, or unlimited), so that a plot of the log needs only the log."""
        lower, upper, vmax, effort = (np.full(m.nv, np.nan) for _ in range(4))
        for j in m.moving_joints:
            if j.nv != 1:
                continue
            k = j.u_slice.start
            if j.has_position_limits:
                lower[k], upper[k] = j.lower, j.upper
            vmax[k] = j.velocity if np.isfinite(j.velocity) else np.nan
            effort[k] = j.effort if np.isfinite(j.effort) else np.nan
        lim = g.create_group("limits")
        coord_units = _units_of_dofs(m, "m", "rad")
        for name, data, units, description in (
                ("lower", lower, coord_units, "position limit (revolute, prismatic)"),
                ("upper", upper, coord_units, "position limit (revolute, prismatic)"),
                ("velocity", vmax, _units_of_dofs(m, "m s-1", "rad s-1"), "velocity limit"),
                ("effort", effort, _units_of_dofs(m, "N", "N m"), "actuation limit")):
            d = lim.create_dataset(name, data=np.where(np.isinf(data), np.nan, data))
            d.dims[0].attach_scale(dof)
            _set_units(d, units)
            d.attrs["description"] = description + "; NaN: none"
        lim["dof_names"] = dof

    def _scale(self, group, name: str, values, description: str) -> h5py.Dataset:
        """A dataset of names that is the dimension scale of an axis (netCDF's dimension)."""
        d = group.create_dataset(name, data=list(values) or [""], dtype=_STR)
        d.attrs["description"] = description
        d.make_scale(name)
        return d

    def add_contacts(self, world) -> None:
        """Log the world's contacts: per row a count and the offset of its first contact, and flat
        arrays with one entry per contact (docs/log.md)."""
        self._world = world
        self._contact_rows: list[tuple] = []  # per row: _contact_columns
        self._contact_total = 0
        self._body_names: dict[str, int] = {}
        self._pair_rows: dict = {}  # a step's ContactSet.log_key -> its body indices

    def _contact_columns(self, cs) -> tuple:
        """What the contact datasets take of a step's contacts (a ContactSet): (their number,
        the two bodies' name indices, the arrays, whether they are a log_block). The arrays: the
        set's log_block when it has one (a quick step's results, copied now and unpacked for a
        chunk's rows at once: a view would hold the step's result arrays until the chunk is
        written, and the next steps could not reuse them, step/quick.py's pool), else position,
        normal, the impulses and the distance (_plan_contacts makes the force and the
        penetration of a chunk's rows at once), the geometry as it is (detection makes new
        arrays each step), the results copied (a second integrate2 without integrate1 would
        write them again)."""
        key = cs.log_key()  # the same contacts as a step before (a robot standing): a lookup
        bodies = self._pair_rows.get(key)
        if bodies is None:
            if len(self._pair_rows) >= 1024:
                self._pair_rows.clear()
            name, meta = self._contact_name, cs.meta
            bodies = self._pair_rows[key] = np.array(
                [(name(sa, la), name(sb, nb)) for sa, _, la, sb, _, nb in meta],
                dtype=np.int32).reshape(len(meta), 2)  # (read, never written)
        packed = cs.log_block()
        if packed is not None:  # (the step's own results)
            return len(bodies), bodies, (packed[0].copy(), packed[1]), True
        points, normals, impulse, impulse_contact, distance = cs.log_arrays()
        return len(bodies), bodies, (points, normals, impulse.copy(), impulse_contact.copy(),
                                     distance), False

    def _contact_name(self, system, link: str) -> int:
        name = link if system is None else f"{system.name}/{link}"
        if name not in self._body_names:
            self._body_names[name] = len(self._body_names)
        return self._body_names[name]

    def _create_contact_datasets(self) -> None:
        g = self.f.create_group("contacts")
        kw = self._filters
        # one entry per contact along the axis `contact`; `start` and `count` index it per row
        self._contact_index = g.create_dataset("contact", shape=(0,), maxshape=(None,),
                                               dtype=np.int64, chunks=(self.chunk_rows,),
                                               track_times=False)
        self._contact_index.attrs["description"] = "contact number, from 0"
        self._contact_index.make_scale("contact")
        g["time"] = self.time_ds  # the time coordinate of count and start (a hard link)
        g["xyz"] = self.xyz
        spec = {"count": ((), np.int32, "1", "contacts of the row"),
                "start": ((), np.int64, "1", "index of the row's first contact"),
                "position": ((3,), np.float64, "m", "world frame"),
                "normal": ((3,), np.float64, "1", "world frame, from B to A"),
                "impulse_world": ((3,), np.float64, "N s",
                                  "on A, world frame (B gets the opposite)"),
                "impulse_contact": ((3,), np.float64, "N s",
                                    "on A in the contact frame (t1, t2, n)"),
                "force": ((3,), np.float64, "N", "on A, world frame: impulse / dt"),
                "penetration": ((), np.float64, "m", "depth, 0 when apart"),
                "body_a": ((), np.int32, "1", "index into body_names"),
                "body_b": ((), np.int32, "1", "index into body_names")}
        self._contact_ds = {}
        for name, (shape, dtype, units, description) in spec.items():
            per_row = name in ("count", "start")
            ds = g.create_dataset(name, shape=(0,) + shape, maxshape=(None,) + shape, dtype=dtype,
                                  chunks=(self.chunk_rows,) + shape, track_times=False, **kw)
            ds.attrs["units"] = units
            ds.attrs["description"] = description
            ds.dims[0].attach_scale(self.time_ds if per_row else self._contact_index)
            ds.dims[0].label = "time" if per_row else "contact"
            if shape:
                ds.dims[1].attach_scale(self.xyz)
            self._contact_ds[name] = ds
        # with gzip, whole chunks written directly, compressed in the helper or here
        # (_ChunkAppender, _plan_contacts)
        self._contact_appenders = {name: _ChunkAppender(ds, self._deflate)
                                   for name, ds in self._contact_ds.items()} \
            if self._deflate_here else None

    def start(self) -> None:
        """Create the datasets declared so far; no more channels after this."""
        kw = self._filters
        self._datasets: list[h5py.Dataset] = []
        for c in self.channels:
            shape = (0,) + c.shape
            # (an axis of length 0, a robot without DoFs: HDF5 chunks it by 1, which a maximum
            # of 0 would refuse)
            maxshape = (None,) + tuple(n if n else None for n in c.shape)
            chunks = (self.chunk_rows,) + tuple(max(n, 1) for n in c.shape)
            ds = self.f.create_dataset(c.path, shape=shape, maxshape=maxshape, dtype=c.dtype,
                                       chunks=chunks, track_times=False, **kw)
            _set_units(ds, c.units)
            if c.description:
                ds.attrs["description"] = c.description
            if c.names:
                ds.attrs["names"] = c.names  # path of the dataset naming the columns
            ds.dims[0].attach_scale(self.time_ds)
            ds.dims[0].label = "time"
            for axis, scale in enumerate(c.dims, start=1):
                ds.dims[axis].attach_scale(self.f[scale])
            # every coordinate of the dataset also in its own group (hard links, no copies), so
            # that a netCDF reader opening the group alone sees the time values and the names
            for scale in (self.time_ds.name,) + tuple(c.dims):
                base = scale.rsplit("/", 1)[-1]
                if base not in ds.parent:
                    ds.parent[base] = self.f[scale]
            self._datasets.append(ds)
        # each dataset's low-level id and the offset of a chunk's columns, for _write (h5py's
        # Dataset.id and .ndim each cost some microseconds a call, at every chunk written)
        self._ids = [(ds.id, (0,) * len(c.shape)) for ds, c in zip(self._datasets, self.channels)]
        self._plan_rows()
        self._step_indices = np.empty(self.chunk_rows, dtype=np.int64)
        if self._world is not None:
            self._create_contact_datasets()
            # created now, filled at close: no dataset may be created once readers may look
            self._body_names_ds = self.f["contacts"].create_dataset(
                "body_names", shape=(0,), maxshape=(None,), chunks=(64,), dtype=_STR)
            self._body_names_ds.attrs["description"] = ("the bodies in contact: robot/link, "
                                                        "'ground' or a static box's name")
            self._body_names_ds.make_scale("body_names")
        self._guard(self._start_swmr)
        if self._use_helper:
            self._start_helper()
        self._next_buffers()
        self._last_flush = time.monotonic()

    def _plan_rows(self) -> None:
        """Where each channel's rows go: the float64 channels are column ranges of one array of
        a chunk's rows (_next_buffers), each robot's channels of its step record first and side by
        side, so that append copies them in one operation; other channels have their own
        array."""
        self._records: list[_RecordColumns] = []
        by_system: dict[int, _RecordColumns] = {}
        self._plain = []  # the other channels, which append reads one by one
        for i, c in enumerate(self.channels):
            if c.record is None or c.dtype != np.float64:
                self._plain.append(i)
                continue
            r = by_system.get(id(c.system))
            if r is None:
                r = by_system[id(c.system)] = _RecordColumns(c.system)
                self._records.append(r)
            r.add(i, c.record)
        # the columns: each robot's record channels side by side, then the other float64 ones
        order = [i for r in self._records for i in r.channels] + \
            [i for i in self._plain if self.channels[i].dtype == np.float64]
        self._columns, width = [None] * len(self.channels), 0
        for i in order:
            self._columns[i] = (width, width + int(np.prod(self.channels[i].shape)))
            width = self._columns[i][1]
        for r in self._records:
            r.start, r.stop = self._columns[r.channels[0]][0], self._columns[r.channels[-1]][1]
        # a robot's kinetic and potential energies and generalized force, side by side: one
        # call (ArticulatedSystem.log_energies_and_force) writes them into the row
        self._derived = self._side_by_side("derived", ("kinetic", "potential",
                                                       "generalized_force"))
        # a robot's joint wrenches (force, torque, actuation), side by side: one copy of their
        # packed array (JointWrenches.packed) into the row
        self._wrenches = self._side_by_side("wrench", (0, 1, 2))
        self._width = width
        self._reads = [c.read for c in self.channels]
        # the other channels' rows, in arrays of their own, used again for every chunk (the
        # helper gets a copy, and rows written here are written before the next row comes)
        self._own = {i: np.empty((self.chunk_rows,) + c.shape, dtype=c.dtype)
                     for i, (c, cols) in enumerate(zip(self.channels, self._columns))
                     if cols is None}

    def _side_by_side(self, field: str, parts: tuple) -> list[tuple]:
        """[(system, start, stop)]: for each robot whose channels of _plain name, in the
        attribute `field`, every one of `parts`, in that order in adjacent columns of the row,
        those columns' range; these channels leave _plain (append writes them at once)."""
        found: dict[int, dict] = {}
        for i in self._plain:
            c = self.channels[i]
            part = getattr(c, field)
            if part is not None:
                found.setdefault(id(c.system), {})[part] = i
        groups = []
        for of_system in found.values():
            group = [of_system.get(k) for k in parts]
            if None in group:
                continue
            cols = [self._columns[i] for i in group]
            if all(a[1] == b[0] for a, b in zip(cols, cols[1:])):
                groups.append((self.channels[group[0]].system, cols[0][0], cols[-1][1]))
                self._plain = [i for i in self._plain if i not in group]
        return groups

    def _next_buffers(self) -> None:
        """The buffers of the next chunk's rows (_plan_rows): views of one float64 array
        (_row_array), and arrays of their own. With the helper, that array lies in one of its
        slots (waiting for its oldest job when none is free), so that a full chunk goes to it
        without a copy (_in_place); without, the same array serves again (the rows in it are
        written)."""
        n, helper = self.chunk_rows, self._helper
        if helper is not None:
            while not helper.has_free_slot:
                self._write_done(True, 1)
            self._slot = helper.take_slot()
            self._row_array = helper.input_array(self._slot, np.float64, (n, self._width))
        elif self._row_array is None:
            self._row_array = np.empty((n, self._width))
        else:
            return
        rows = self._row_array
        self._buffers = [self._own[i] if cols is None
                         else rows[:, cols[0]:cols[1]].reshape((n,) + c.shape)
                         for i, (c, cols) in enumerate(zip(self.channels, self._columns))]

    def _in_place(self, rows: _Rows) -> tuple[list, list]:
        """For DeflateHelper.submit, each channel's whole chunk of `rows` (taken with their
        slot): its columns of the slot's row array as a segment there (offset, length, element
        size, stride, piece), or its own array (padded to a whole chunk), which submit copies;
        and each whole chunk as an array (for _deflate). The rows of a partial chunk past its
        end are zeroed first: HDF5 pads a dataset's last chunk with zeros, and the log's bytes
        do not depend on what the slot held before."""
        n, width = self.chunk_rows, self._width
        array = self._helper.input_array(rows.slot, np.float64, (n, width))
        if rows.n < n:
            array[rows.n:] = 0.0
        parts, wholes, stride = [], [], width * 8
        for i, (c, cols) in enumerate(zip(self.channels, self._columns)):
            if cols is None:
                wholes.append(_padded(rows.arrays[i], n))
                parts.append(wholes[-1])
                continue
            piece = (cols[1] - cols[0]) * 8
            wholes.append(array[:, cols[0]:cols[1]].reshape((n,) + c.shape))
            parts.append((cols[0] * 8, n * piece, 8 if self._shuffle else 1,
                          0 if piece in (0, stride) else stride, piece))  # (0: no column)
        return parts, wholes

    def _release(self, rows: _Rows) -> None:
        """Give the helper back the slot of rows that were written here."""
        if rows.slot is not None:
            self._helper.release(rows.slot)
            rows.slot = None

    def _start_helper(self) -> None:
        """The helper compresses every channel's chunks; without one (no channel, or it could
        not start), they are compressed here, the same way (_deflate)."""
        from raisimcli.log.deflate import DeflateHelper, chunk_bound
        sizes = [self.chunk_rows * int(np.prod(c.shape)) * np.dtype(c.dtype).itemsize
                 for c in self.channels]
        if sizes and self._world is not None and self._contact_appenders is not None:
            sizes += self._contact_budget()
        if sizes:
            try:
                self._helper = DeflateHelper(sum(sizes), sum(chunk_bound(n) for n in sizes),
                                             slots=3)
            except OSError:
                pass

    def _contact_budget(self) -> list:
        """Room in each of the helper's jobs for the contact datasets' chunks of a chunk of rows
        (_chunk): their bytes with up to CONTACTS_IN_HELPER contacts a row and the partial chunk
        written again; a chunk of rows with more contacts has them compressed here."""
        c = self.chunk_rows
        sizes = []
        for name, ds in self._contact_ds.items():
            per_row = 1 if name in ("count", "start") else CONTACTS_IN_HELPER
            entries = -(-(c * per_row + c - 1) // c) * c  # (whole chunks, with the kept ones)
            sizes.append(entries * int(np.prod(ds.shape[1:])) * ds.dtype.itemsize)
        return sizes

    def _start_swmr(self) -> None:
        self.f.swmr_mode = True

    def _guard(self, fn, *args):
        """Run a write; on failure remove the temporary file and raise one LogWriteError."""
        if self.failed:
            raise LogWriteError(f"the log {self.path} could not be written")
        try:
            return fn(*args)
        except (OSError, RuntimeError, ValueError) as e:
            self._fail()
            raise LogWriteError(f"cannot write the log {self.path}: {_reason(e)}; the run stopped, "
                                "its temporary file was removed and any earlier log there is "
                                "untouched") from None

    def _stop_helper(self) -> None:
        self._jobs.clear()
        if self._helper is not None:
            # (the buffers are views of the helper's map: no more rows after this)
            self._buffers, self._row_array, self._slot = [], None, None
            self._helper.close()
            self._helper = None

    def _fail(self) -> None:
        self.failed = True
        self.closed = True
        self._stop_helper()
        try:
            self.f.close()
        except Exception:  # noqa: BLE001 - the file is being discarded
            pass
        try:
            os.remove(self.tmp_path)
        except OSError:
            pass

    # --- rows -----------------------------------------------------------------------------------
    def append(self, step_index: int) -> None:
        """Log the step that ended at (step_index + 1) dt, if the decimation keeps it."""
        if (step_index + 1) % self.decimation:
            return
        fill = self._fill  # the row is copied into the chunk's buffers now, while it is in
        # the CPU's cache; a row cut short by an exception is left out (fill does not move)
        reads, buffers = self._reads, self._buffers
        for r in self._records:  # a robot's step record, else its getters
            record = r.system.step_record()
            if record is None:
                for i in r.channels:
                    buffers[i][fill] = reads[i]()
                continue
            array, layout = record
            self._row_array[fill, r.start:r.stop] = array[r.index(layout)]
        if self._derived or self._wrenches:
            row = self._row_array[fill]
            for system, a, b in self._derived:
                system.log_energies_and_force(row[a:b])
            for system, a, b in self._wrenches:
                jw = system.joint_wrenches
                packed = jw.packed
                row[a:b] = packed if packed is not None else \
                    np.concatenate((jw.force.ravel(), jw.torque.ravel(), jw.actuation))
        for i in self._plain:
            buffers[i][fill] = reads[i]()
        self._step_indices[fill] = step_index + 1
        if self._world is not None:
            self._contact_rows.append(self._contact_columns(self._world.contacts))
        self._fill = fill + 1
        if (self._taken + self._fill) % self.chunk_rows == 0:  # a chunk is full
            self._guard(self._chunk)
        elif time.monotonic() - self._last_flush > FLUSH_SECONDS:
            self.flush()
        elif self._jobs and not self._fill % 16 and self._helper.ready():
            self._guard(self._write_done, False)

    def flush(self) -> None:
        """Write every buffered row (waiting for the chunks out in the helper) and flush the
        file to disk."""
        self._guard(self._flush)

    def _flush(self) -> None:
        rows = self._take()
        if rows is not None and rows.r0 % self.chunk_rows == 0:
            if self._helper is not None:  # (while the helper ends the chunks it has)
                self._compress_alongside(rows)
            elif self._deflate_here:
                rows.compressed = [self._deflate(a) for a in self._padded(rows)]
        self._write_done(True)  # (the rows before these first)
        if rows is not None:
            self._write(rows)
            self._release(rows)
            self._next_buffers()
        self._flushed()

    def _padded(self, rows: _Rows) -> list:
        """Each channel's rows as a whole chunk: a partial chunk padded with zeros to the
        chunk's rows, as HDF5 pads the chunks at a dataset's end (the rows past its extent are
        never read)."""
        return [_padded(a, self.chunk_rows) for a in rows.arrays]

    def _deflate(self, a: np.ndarray):
        """One channel's whole chunk as the log stores it (log/deflate.py), here."""
        from raisimcli.log.deflate import deflate
        return deflate(np.ascontiguousarray(a), a.itemsize if self._shuffle else 1,
                       self._gzip_level)

    def _flushed(self) -> None:
        """Flush the file to disk, and note when (FLUSH_SECONDS)."""
        self.f.flush()
        self._last_flush = time.monotonic()

    def _compress_alongside(self, rows: _Rows) -> None:
        """Compress a chunk's rows now (a last or a timed flush, whose writing waits for it),
        here and in the helper at the same time. A partial chunk is padded with zeros to the
        chunk's rows, as HDF5 pads the chunks at a dataset's end (the rows past its extent are
        never read).

        The helper may still be compressing the chunks before (at the end of a run it is
        often one chunk behind). The channels are compressed here one after the other from the
        first, and each time the helper has nothing left to do it takes a share of those not
        begun from the last (_HELPER_SHARE of their bytes, each job its own part of the slot's
        output area); the chunks before are written as they come back. Where each channel is
        compressed does not change its bytes (log/deflate.py)."""
        from raisimcli.log.deflate import chunk_bound
        helper = self._helper
        parts, wholes = self._in_place(rows)
        # the channels whose rows lie in the slot (segments) may go to the helper; the others
        # (their own arrays) are compressed here, first
        own = [k for k, p in enumerate(parts) if not isinstance(p, tuple)]
        order = own + [k for k, p in enumerate(parts) if isinstance(p, tuple)]
        out = [None] * len(parts)
        first, end = 0, len(order)  # here from `first`, the helper's from `end` down
        given = collections.deque()  # the helper's jobs of these rows: their channels
        out_at = 0  # where the next job's output goes in the slot's output area
        while True:
            self._write_done(False)  # (the chunks before, as the helper ends them)
            while given and helper.ready():
                for k, c in zip(given.popleft(), helper.result(self._gzip_level)):
                    out[k] = c
            lowest = max(first, len(own))  # (the segments not begun)
            if lowest < end and not self._jobs and not given and helper.alive:
                left = sum(parts[order[x]][1] for x in range(lowest, end))
                share, start = 0, end
                while start > lowest and (start == end or share + parts[order[start - 1]][1] <=
                                          _HELPER_SHARE * left):
                    start -= 1
                    share += parts[order[start]][1]
                job = order[start:end]  # (one segment at least)
                helper.submit([parts[k] for k in job], self._gzip_level, self._shuffle,
                              slot=rows.slot, out_at=out_at, keep_slot=True)
                out_at += sum(chunk_bound(parts[k][1]) for k in job)
                given.append(job)
                end = start
            if first < end:
                k = order[first]
                out[k] = self._deflate(wholes[k])
                first += 1
            elif not given:
                break
            else:  # (nothing left here: wait for the helper)
                for k, c in zip(given.popleft(), helper.result(self._gzip_level)):
                    out[k] = c
        rows.compressed = out

    def _take(self) -> _Rows | None:
        """The buffered rows as arrays (None when there are none); the buffers are emptied."""
        n = self._fill  # (a row cut short never reached _contact_rows: it is appended last)
        self._fill = 0
        if n == 0:
            return None
        # the filled buffers leave with the rows, and their slot of the helper (which keeps it
        # until their job is done); the caller writes them or hands them to the helper, then
        # takes the next rows' (_next_buffers)
        buffers = self._buffers
        taken = _Rows(self._taken, n, self._step_indices[:n].astype(np.float64) * self.dt,
                      buffers if n == self.chunk_rows else [b[:n] for b in buffers],
                      self._plan_contacts(self._contact_rows) if self._world is not None
                      else None, slot=self._slot)
        self._slot = None
        self._contact_rows = []
        self._taken += n
        return taken

    def _chunk(self) -> None:
        """A full chunk: to the helper when it is aligned with the datasets' chunks, else
        written here."""
        rows = self._take()
        if self._helper is None or rows.n != self.chunk_rows or rows.r0 % self.chunk_rows:
            self._write_done(True)
            if self._deflate_here and rows.n == self.chunk_rows and not rows.r0 % self.chunk_rows:
                rows.compressed = [self._deflate(a) for a in rows.arrays]
            self._write(rows)
            self._release(rows)
            self._flushed()
            self._next_buffers()
            return
        parts = self._in_place(rows)[0]  # (the rows in the slot as they are; the rest copied)
        if rows.contacts is not None:  # the contacts' chunks too, when they fit in its slot
            extra = rows.contacts.chunk_arrays()
            if sum(a.nbytes for a in rows.arrays) + sum(a.nbytes for a in extra) <= \
                    self._helper.slot_in:
                parts += extra
                rows.contacts.in_helper = True
        self._helper.submit(parts, self._gzip_level, self._shuffle, slot=rows.slot,
                            at=self.chunk_rows * self._width * 8)
        rows.slot = None  # (result gives it back)
        self._jobs.append(rows)
        self._write_done(False)
        self._next_buffers()  # (waiting for the helper's oldest job when it is behind)

    def _write_done(self, wait: bool, most: int = -1) -> None:
        """Write the rows of the helper's finished jobs, in order (all of them if `wait`, or at
        most `most`), and flush the file when any was written."""
        written = False
        while self._jobs and most and (wait or self._helper.ready()):
            rows = self._jobs.popleft()
            rows.compressed = self._helper.result(self._gzip_level)
            if rows.contacts is not None and rows.contacts.in_helper:
                rows.contacts.compressed = rows.compressed[len(rows.arrays):]
            self._write(rows)
            written, most = True, most - 1
        if written:
            self._flushed()

    def _write(self, rows: _Rows) -> None:
        """Write taken rows at the end of the datasets (their chunks already compressed, or
        through HDF5's filters)."""
        r0, n = self.rows, rows.n
        assert r0 == rows.r0
        # the extents through HDF5's own call (h5py's resize checks and reads the shape again)
        self.time_ds.id.set_extent((r0 + n,))
        if r0 % self.chunk_rows:  # (rows after a timed flush: HDF5 completes their chunk)
            self.time_ds[r0:] = rows.time  # t = k dt
        else:  # a chunk of its own, unfiltered: its bytes as they are (not a slice write)
            self.time_ds.id.write_direct_chunk((r0,), _padded(rows.time, self.chunk_rows))
        for i, ((ds_id, columns), values) in enumerate(zip(self._ids, rows.arrays)):
            ds_id.set_extent((r0 + n,) + values.shape[1:])
            if values.size == 0:  # (a robot without DoFs: rows of no column, nothing to write)
                continue
            if rows.compressed is not None:
                ds_id.write_direct_chunk((r0,) + columns, rows.compressed[i])
            else:
                self._datasets[i][r0:r0 + n] = values
        if self._world is not None:
            self._write_contacts(r0, rows.contacts)
        self.rows += n

    def _plan_contacts(self, contact_rows: list) -> _ContactPlan:
        """The contact datasets' new entries for a chunk's taken rows (their _contact_columns),
        with the contact index's: per row its count and the index of its first contact, then
        the contacts' columns; with gzip, each dataset's whole chunks to write
        (_ChunkAppender.plan), else its entries. Made when the rows are taken, in their order,
        and written with them (_write_contacts)."""
        counts = np.array([row[0] for row in contact_rows], dtype=np.int64)
        starts = self._contact_total + np.concatenate([[0], np.cumsum(counts)[:-1]])
        k0, k = self._contact_total, int(counts.sum())
        self._contact_total += k
        entries = [("count", counts), ("start", starts)]
        if k:
            steps = [row for row in contact_rows if row[0]]
            points, normals, impulse, impulse_contact, distance = _contact_arrays(steps)
            bodies = np.concatenate([row[1] for row in steps])
            depth = -distance  # (the force and the penetration entry by entry, as row by row)
            columns = [points, normals, impulse, impulse_contact, impulse / self.dt,
                       np.where(depth > 0.0, depth, 0.0), bodies[:, 0], bodies[:, 1]]
            entries += zip(("position", "normal", "impulse_world", "impulse_contact", "force",
                            "penetration", "body_a", "body_b"), columns)
        appenders = self._contact_appenders
        if appenders is not None:
            entries = [(name, appenders[name].plan(values)) for name, values in entries]
        return _ContactPlan(k0, k, entries, appenders is not None)

    def _write_contacts(self, r0: int, plan: _ContactPlan) -> None:
        """Write a chunk's contacts (_plan_contacts), compressed in the helper with the rows
        or here."""
        ds = self._contact_ds
        k0, k = plan.k0, plan.k
        if k:
            self._contact_index.id.set_extent((k0 + k,))
            self._contact_index[k0:] = np.arange(k0, k0 + k)
        compressed = plan.compressed
        for name, entries in plan.entries:
            if plan.chunked:
                done = compressed[:len(entries[1])] if compressed is not None else None
                self._contact_appenders[name].write(entries, done)
                if compressed is not None:
                    compressed = compressed[len(entries[1]):]
                continue
            d, at = ds[name], (r0 if name in ("count", "start") else k0)
            d.id.set_extent((at + len(entries),) + d.shape[1:])
            d[at:] = np.asarray(entries, dtype=d.dtype)

    def close(self, status: str, message: str = "") -> str:
        """Flush, write the status last, close and rename to the final name (beside a complete
        log already there when `status` is not complete). Returns the path written."""
        if self.closed:
            return self.path
        assert status in STATUSES
        self.flush()
        self._stop_helper()
        self._guard(self._finish, status, message)
        if status != "complete" and is_complete_log(self.path):
            self.replaced = self.path
            self.path = sidecar_path(self.path, status)
        self.overwrote = os.path.exists(self.path)
        self._guard(os.replace, self.tmp_path, self.path)
        self.closed = True
        return self.path

    def _finish(self, status: str, message: str) -> None:
        if self._world is not None:
            names = list(self._body_names) or [""]
            self._body_names_ds.resize((len(names),))
            self._body_names_ds[:] = names
        self.f.attrs["message"] = message
        self.f.attrs["rows"] = self.rows
        self.f.attrs["status"] = status
        self.f.close()

    def abandon(self) -> None:
        """Close and delete the temporary file (a run that never started)."""
        if not self.closed:
            self._fail()
            self.failed = False


def _contact_arrays(steps: list) -> tuple:
    """The contact datasets' (points, normals, impulse, impulse_contact, distance) of the rows
    `steps` (_contact_columns: (n, bodies, log_arrays' five or a log_block, which of the two)),
    the contacts in row order. Consecutive rows whose blocks unpack alike and have as many
    contacts are unpacked at once."""
    parts, i = [], 0
    while i < len(steps):
        n, _, data, block = steps[i]
        if not block:
            parts.append(data)
            i += 1
            continue
        unpack, j = data[1], i + 1
        while j < len(steps) and steps[j][0] == n and steps[j][3] and steps[j][2][1] is unpack:
            j += 1
        parts.append(unpack(np.stack([row[2][0] for row in steps[i:j]]), n))
        i = j
    return tuple(np.concatenate([part[k] for part in parts]) for k in range(5))


def _padded(a: np.ndarray, rows: int) -> np.ndarray:
    """`a` as a whole chunk of `rows` along its first axis: padded with zeros, as HDF5 pads the
    chunks at a dataset's end (the entries past its extent are never read)."""
    if len(a) >= rows:
        return a
    padded = np.zeros((rows,) + a.shape[1:], dtype=a.dtype)
    padded[:len(a)] = a
    return padded


class _ChunkAppender:
    """Appends entries along the first axis of an empty chunked dataset that nothing else
    writes: plan() cuts every chunk that the new entries touch, the last one padded with zeros
    (as HDF5 pads a dataset's last chunk); write() writes them whole with HDF5's direct chunk
    write, compressed by the helper or by `deflate` (LogWriter._deflate: libdeflate). The
    entries of the last, partial chunk are kept, and its chunk is written again, whole, with the
    next entries: HDF5's own filters would read it back, decompress, merge and compress it again
    with zlib, several times slower."""

    def __init__(self, ds: h5py.Dataset, deflate):
        self.ds, self.deflate = ds, deflate
        self.chunk = ds.chunks[0]
        self.size = 0  # entries written
        self.tail = np.empty((0,) + ds.shape[1:], dtype=ds.dtype)  # the last chunk's entries

    def plan(self, values) -> tuple:
        """The chunks that appending `values` writes: (the dataset's new size, [(the chunk's
        first entry, its entries padded to a whole chunk)]), for write() in the order of the
        plans (the kept entries move on at once)."""
        values = np.asarray(values, dtype=self.ds.dtype)
        if not len(values):
            return self.size, []
        first = self.size - len(self.tail)  # (the tail's chunk starts there)
        data = np.concatenate([self.tail, values]) if len(self.tail) else values
        self.size += len(values)
        c = self.chunk
        chunks = [(first + at, np.ascontiguousarray(_padded(data[at:at + c], c)))
                  for at in range(0, len(data), c)]
        whole = len(data) - len(data) % c
        self.tail = data[whole:].copy()
        return self.size, chunks

    def write(self, plan: tuple, compressed: list | None = None) -> None:
        """Write a plan's chunks: `compressed` (each chunk as deflate makes it, from the
        helper), or compressed here."""
        size, chunks = plan
        if not chunks:
            return
        self.ds.id.set_extent((size,) + self.tail.shape[1:])  # (HDF5's own call: _write's)
        zeros = (0,) * (self.ds.ndim - 1)
        for i, (at, part) in enumerate(chunks):
            self.ds.id.write_direct_chunk((at,) + zeros, self.deflate(part) if compressed is None
                                          else compressed[i])


class _RecordColumns:
    """One robot's channels found in its step record (ArticulatedSystem.step_record): their
    indices in the writer's channels, their keys in the record, and the columns start:stop of
    the writer's row array they fill, side by side in that order."""

    __slots__ = ("system", "channels", "keys", "start", "stop", "_layout", "_index")

    def __init__(self, system):
        self.system, self.channels, self.keys = system, [], []
        self.start = self.stop = 0
        self._layout = self._index = None

    def add(self, channel: int, key: str) -> None:
        self.channels.append(channel)
        self.keys.append(key)

    def index(self, layout: dict) -> np.ndarray:
        """The record's entries of the channels, in their order, for `layout` (made again only
        when the record's layout object changes)."""
        if layout is not self._layout:
            self._index = np.concatenate([np.arange(*layout[key]) for key in self.keys])
            self._layout = layout
        return self._index


@dataclass
class _ContactPlan:
    """A chunk's contacts to write (LogWriter._plan_contacts): the contact index's first entry
    and count, each dataset's entries (`chunked`: its _ChunkAppender.plan), and the chunks as
    the helper compressed them (None: compressed when written)."""

    k0: int
    k: int
    entries: list
    chunked: bool
    compressed: list | None = None
    in_helper: bool = False

    def chunk_arrays(self) -> list:
        """The plan's chunks, in order, for the helper (none without gzip)."""
        return [part for _, (_, chunks) in self.entries for _, part in chunks] \
            if self.chunked else []


@dataclass
class _Rows:
    """Rows taken from the writer's buffers: `r0` their first row in the file, `n` of them, their
    `time` values, one array per channel, their contacts to write (or None), and the chunk of
    each channel as compressed by the helper or by _deflate (None: HDF5's filters compress
    them)."""

    r0: int
    n: int
    time: np.ndarray
    arrays: list
    contacts: _ContactPlan | None
    compressed: list | None = None
    slot: int | None = None  # the helper's slot that holds their row array, until submitted


# the contacts a row for which the helper's jobs have room (_contact_budget): a quadruped's feet
# and a biped's soles, with room to spare
CONTACTS_IN_HELPER = 8


def _helper_by_default() -> bool:
    """Deflate in a helper process when this process may run on more than one CPU (with one,
    the helper would only take turns with the run), unless RAISIMCLI_DEFLATE_HELPER=0."""
    if os.environ.get("RAISIMCLI_DEFLATE_HELPER", "").strip() == "0":
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return cpus > 1 and os.name == "posix"


def _reason(e: BaseException) -> str:
    """The operating system's words for a failed write ("No space left on device"), without
    HDF5's stack of internal messages."""
    import errno as _errno
    text = str(e)
    for code in (_errno.ENOSPC, _errno.EFBIG, _errno.EDQUOT, _errno.EACCES, _errno.EROFS):
        words = os.strerror(code)
        if words.lower() in text.lower() or getattr(e, "errno", None) == code:
            return words
    if "errno = 28" in text:
        return os.strerror(_errno.ENOSPC)
    if "errno = 27" in text:
        return os.strerror(_errno.EFBIG)
    return text.split("\n")[0][:200] or type(e).__name__


def _constraint_units(model, c) -> tuple[str, str]:
    """(impulse units, error units) of a constraint: a loop's are N s and m; a mimic's are the
    follower's generalized impulse and coordinate (N m s and rad for a revolute joint)."""
    follower = getattr(c, "follower", None)
    if follower is None:
        return "N s", "m"
    prismatic = model.joint(follower).type == "prismatic"
    return ("N s", "m") if prismatic else ("N m s", "rad")

