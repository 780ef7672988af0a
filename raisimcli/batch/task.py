"""One case of a batch as a self-contained task, and the function a worker runs on it.

A task holds the scenario's name, its overrides (the `--set` assignments of the case), the hash
of the resolved case and the bytes of every file the run reads (the scenario, URDFs and what
they include, meshes, CSV schedules, controllers), so that a worker on another machine needs
neither the checkout nor a shared file system. The worker writes the files into a private
folder that mirrors their absolute paths (see :mod:`raisimcli.files`), runs the case with the
library, exactly as `raisimcli run --set ...` would, and sends the log's bytes back.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

from raisimcli import files
from raisimcli.errors import ControllerError, RaisimcliError


@dataclass(frozen=True)
class Task:
    name: str
    scenario: str                    # absolute path on the client
    overrides: tuple[str, ...]
    duration: float | None
    resolved_sha256: str             # of the case as the client resolved it
    inputs: dict                     # absolute path on the client -> bytes
    environment: dict                # the client's package search path
    strict: bool = False
    ignore_warnings: tuple[str, ...] = ()


@dataclass
class CaseResult:
    name: str
    status: str                      # complete | diverged | error | cancelled
    message: str = ""
    steps: int = 0
    sim_time: float = 0.0
    wall_time: float = 0.0           # s, the run on the worker (closing the log included)
    log: bytes | None = None         # the HDF5 log, None when the case never ran
    figures: dict = field(default_factory=dict)
    worker: str = ""
    resolved_sha256: str = ""
    log_file: str | None = None      # its file name in the output folder, once stored
    libm: str = ""                   # the worker's build of glibc's math (raisimcli.libm)


def make_task(name: str, scn, overrides, duration=None, strict=False, ignore_warnings=()) -> Task:
    """The task of a case the client resolved (`scn`, a ResolvedScenario)."""
    data = {}
    for path in scn.inputs:
        with open(path, "rb") as f:
            data[path] = f.read()
    return Task(name=name, scenario=scn.path, overrides=tuple(overrides), duration=duration,
                resolved_sha256=scn.resolved_sha256, inputs=data,
                environment=files.package_environment(), strict=strict,
                ignore_warnings=tuple(ignore_warnings))


def run_task(task: Task) -> CaseResult:
    """Run one case in a private folder and return its log (the function a worker runs)."""
    import socket

    from raisimcli.libm import variant
    from raisimcli.scenario import load_scenario, run

    folder = tempfile.mkdtemp(prefix="raisimcli-case-")
    root = os.path.join(folder, "files")
    result = CaseResult(task.name, "error", worker=f"{socket.gethostname()}:{os.getpid()}",
                        libm=variant())
    try:
        for path, content in task.inputs.items():
            target = root + os.path.normpath(path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(content)
        log_path = os.path.join(folder, "log.h5")
        t0 = time.perf_counter()
        with files.mirrored(root, task.environment):
            try:
                scn = load_scenario(root + os.path.normpath(task.scenario), task.overrides,
                                    duration=task.duration, log_path=log_path,
                                    strict=task.strict, ignore_warnings=task.ignore_warnings)
                result.resolved_sha256 = scn.resolved_sha256
                r = run(scn)
                result.status, result.message, result.steps = r.status, r.message, r.steps
                result.sim_time, result.wall_time = r.sim_time, r.wall_time
                log_path = r.log_path
            except ControllerError as e:
                result.message = str(e)
                result.wall_time = time.perf_counter() - t0
                log_path = getattr(e, "log_path", None)
            except RaisimcliError as e:
                result.message = str(e)
                log_path = None
        if result.resolved_sha256 and result.resolved_sha256 != task.resolved_sha256:
            result.status = "error"
            result.message = ("the case resolved differently on the worker than on the client "
                              "(another raisimcli version?)")
        if log_path and os.path.isfile(log_path):
            result.figures = summary_figures(log_path)
            with open(log_path, "rb") as f:
                result.log = f.read()
        return result
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def summary_figures(log_path: str) -> dict:
    """The few figures of a log that the index shows: final energy (summed over robots),
    max |joint torque| by source (over the joints, a floating base's six forces left out), max
    contact force and max penetration (NaN when not logged)."""
    import h5py

    out: dict = {"kinetic_energy": float("nan"), "potential_energy": float("nan")}
    with h5py.File(log_path, "r") as f:
        rows = int(f.attrs.get("rows", 0))
        robots = f.get("robots", {})
        torques: dict[str, float] = {}
        ke = pe = 0.0
        have_energy = False
        for name in robots:
            g = robots[name]
            if "energy" in g and rows:
                ke += float(g["energy/kinetic"][rows - 1])
                pe += float(g["energy/potential"][rows - 1])
                have_energy = True
            if "torque" in g and rows:
                first = 6 if g.attrs.get("base") == "floating" else 0  # joints, not the base
                for source, ds in g["torque"].items():
                    if ds.dtype.kind != "f" or ds.ndim != 2:  # the dimension scales beside
                        continue
                    v = ds[:rows, first:]
                    m = float(np.max(np.abs(v))) if v.size else 0.0
                    torques[source] = max(torques.get(source, 0.0), m)
        if have_energy:
            out["kinetic_energy"], out["potential_energy"] = ke, pe
        for source, m in sorted(torques.items()):
            out[f"max_torque_{source}"] = m
        c = f.get("contacts")
        force = pen = float("nan")
        if c is not None and "force" in c:
            fv = c["force"][:]
            if len(fv):
                force = float(np.max(np.sqrt(np.sum(fv * fv, axis=1))))
                pen = float(np.max(c["penetration"][:]))
            else:
                force = pen = 0.0
        out["max_contact_force"], out["max_penetration"] = force, pen
    return out
