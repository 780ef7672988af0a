"""Scenario file -> a resolved scenario: validated, URDFs loaded, every per-joint value a vector.

Every error is a :class:`ScenarioError` naming the scenario file, the key path (e.g.
`robot[0].pd.kp`) and what was expected versus what was found.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pydantic

from raisimcli import files
from raisimcli.errors import MAX_ERRORS, ScenarioError, did_you_mean
from raisimcli.model import RobotModel, load_urdf
from raisimcli.model.types import ROBOT_NAME, ROBOT_NAME_RULE
from raisimcli.model.urdf import DEFAULT_MAX_JOINTS
from raisimcli.scenario import schema as S
from raisimcli.scenario.schedules import compile_schedule
from raisimcli.toml_file import MAX_BYTES, parse_toml, read_toml

MAX_STEPS = 10 ** 9  # the steps one run may take (11.6 days of simulated time at dt = 1 ms)


@dataclass
class ResolvedLoad:
    link: str
    vector: np.ndarray
    point: np.ndarray | None
    is_torque: bool
    start: float
    stop: float


@dataclass
class ResolvedRobot:
    """One robot of a scenario, with every per-joint value resolved to our layout."""

    name: str
    model: RobotModel
    q0: np.ndarray
    u0: np.ndarray
    scheme: str
    control_mode: str | None
    kp: np.ndarray | None
    kd: np.ndarray | None
    targets: list = field(default_factory=list)           # (q index, f(t), f is constant)
    velocity_targets: list = field(default_factory=list)  # (u index, f(t), f is constant)
    feedforward: list = field(default_factory=list)       # (u index, f(t), f is constant)
    actuator_torques: list = field(default_factory=list)  # (actuator index, f(t), constant)
    bus_voltage: dict = field(default_factory=dict)       # actuator name (None: all) -> V
    operating_region: bool = True
    damping: dict = field(default_factory=dict)           # u index -> b
    springs: list = field(default_factory=list)           # (joint, stiffness, rest)
    loads: list = field(default_factory=list)
    controller: Callable | None = None
    controller_name: str | None = None
    inputs: list = field(default_factory=list)            # files read: CSV, the controller
    inverse_dynamics: bool = False
    materials: dict = field(default_factory=dict)
    self_collision: bool = False
    self_collision_exclude: list = field(default_factory=list)


@dataclass
class ResolvedScenario:
    path: str
    text: str
    sha256: str
    spec: S.Scenario
    robots: list[ResolvedRobot]
    steps: int
    log_path: str
    strict: bool = False              # warnings are errors (the initial state's too)
    ignore_warnings: tuple = ()       # warning codes not reported

    @property
    def inputs(self) -> list[str]:
        """Every file the run reads: the scenario, the URDFs and what they load, CSV
        trajectories, controllers (absolute paths)."""
        paths = [self.path]
        for r in self.robots:
            paths += list(r.model.files) + r.inputs
        return list(dict.fromkeys(os.path.abspath(f) for f in paths))

    @property
    def resolved_sha256(self) -> str:
        """A hash of everything the run depends on: the resolved configuration (after --set and
        --duration) and the bytes of every input file, each named relative to the scenario's
        folder (so the hash does not depend on where the files are). The log stores it; `sweep
        --resume` skips a case whose complete log has the same one."""
        h = hashlib.sha256(self.config_json().encode())
        base = os.path.dirname(self.path)
        for f in self.inputs:
            with open(f, "rb") as fh:
                content = hashlib.sha256(fh.read()).hexdigest()
            h.update(f"\n{os.path.relpath(f, base)}\0{content}".encode())
        return h.hexdigest()

    @property
    def dt(self) -> float:
        return self.spec.world.dt

    def config_json(self) -> str:
        """The resolved configuration (after --set and --duration), as JSON. The log's own path is
        left out, so that the same scenario gives the same log wherever it is written."""
        d = self.spec.model_dump(mode="json")
        base = os.path.dirname(self.path)
        d["resolved"] = {"steps": self.steps,  # paths relative to the scenario: portable
                         "robots": [{"name": r.name, "urdf": os.path.relpath(r.model.path, base),
                                     "nq": r.model.nq, "nv": r.model.nv} for r in self.robots]}
        return json.dumps(d, indent=2, sort_keys=True)


def _loc(loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def format_validation_error(path: str, err: pydantic.ValidationError) -> str:
    """Every independent error of the file (up to MAX_ERRORS), one line each: the scenario file,
    the key path, what was expected and what was found, and for an unknown key the closest known
    one. A value of several accepted forms fails once per form; of those, the one shown is the
    form the user evidently meant: an unknown key first (usually a typo), then a table whose
    `type` names no known form (it lists the forms, where the others would only say "a number"),
    then the deepest location (a schedule table rather than a number)."""
    errors = err.errors(include_url=False)
    by_loc: dict[str, list] = {}
    for e in errors:
        key = _loc([p for p in _value_loc(e) if not _is_tag(p)])
        by_loc.setdefault(key, []).append(e)
    lines = []
    for key, group in by_loc.items():
        e = max(group, key=lambda x: (x["type"] == "extra_forbidden",
                                      x["type"] in ("union_tag_invalid", "union_tag_not_found"),
                                      len(x["loc"]), -group.index(x)))
        lines.append(_error_line(path, e))
    lines = list(dict.fromkeys(lines))
    return "\n".join(lines[:MAX_ERRORS])


def _value_loc(e) -> tuple:
    """The location of the value an error is about: for the members of a union, the union's
    own location (so that its forms' errors count as one)."""
    loc = list(e["loc"])
    for i, p in enumerate(loc):
        if _is_tag(p):
            return tuple(loc[:i])
    return tuple(loc)


def _error_line(path: str, e) -> str:
    loc = _loc([p for p in e["loc"] if not _is_tag(p)])
    got = e.get("input")
    msg = e["msg"]
    if e["type"] == "extra_forbidden":
        msg = "unknown key" + did_you_mean(e["loc"][-1], _known_keys(e["loc"][:-1]))
    elif e["type"] == "missing":
        msg = "missing required key"
    elif msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    text = f"{path}: {loc or '(top level)'}: {msg}"
    if e["type"] not in ("missing", "extra_forbidden") and not isinstance(got, dict):
        text += f", got {got!r}"
    return text


def _known_keys(loc) -> list[str]:
    """The keys of the scenario table at `loc` (a pydantic location), for "did you mean"."""
    import typing
    cls = S.Scenario
    for part in loc:
        if isinstance(part, int) or _is_tag(part):
            continue
        field = cls.model_fields.get(part)
        if field is None:
            return []
        models = [a for a in _walk_annotation(field.annotation)
                  if isinstance(a, type) and issubclass(a, pydantic.BaseModel)]
        if not models:
            return []
        cls = models[0]
    del typing
    return list(cls.model_fields)


def _walk_annotation(a):
    import typing
    yield a
    for arg in typing.get_args(a):
        yield from _walk_annotation(arg)


def _is_tag(p) -> bool:
    """pydantic puts union member names (e.g. 'list[float]', 'constant') into locations."""
    return isinstance(p, str) and (p in ("constant", "step", "ramp", "sine", "piecewise", "csv")
                                   or "[" in p or p in ("float", "int", "str", "bool")
                                   or p.startswith("function-") or p.startswith("tagged-union"))


def apply_override(data: dict, assignment: str, path: str) -> None:
    """`--set key.path=value`: value read as a TOML value (a bare word is a string); a numeric
    path part indexes a list (`robot.0.pd.kp=50`)."""
    if "=" not in assignment:
        raise ScenarioError(f"--set {assignment!r}: expected key.path=value")
    key, raw = assignment.split("=", 1)
    if len(raw) > MAX_BYTES:
        raise ScenarioError(f"--set {key.strip()}: the value is more than {MAX_BYTES} bytes")
    try:
        value = parse_toml(f"v = {raw}", f"--set {key.strip()}", ScenarioError)["v"]
    except ScenarioError as e:
        if "nested" in str(e):
            raise
        value = raw
    parts = key.strip().split(".")
    node = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ScenarioError(f"--set {key}: {'.'.join(parts[:i]) or part!r} has "
                                    f"{len(node)} entries; expected an index below that, got {part!r}")
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
        else:
            raise ScenarioError(f"--set {key}: {'.'.join(parts[:i])} is not a table")


def load_scenario(path: str, overrides: tuple[str, ...] = (), duration: float | None = None,
                  log_path: str | None = None, strict: bool = False,
                  max_joints: int = DEFAULT_MAX_JOINTS, ignore_warnings=()) -> ResolvedScenario:
    """Read, validate and resolve a scenario file. `strict`: the robots' URDF warnings are
    errors (see docs/urdf.md, Warnings); `max_joints`: the largest model accepted;
    `ignore_warnings`: URDF warning codes to drop. The log path is checked too (it may not be one
    of the run's inputs), before anything runs."""
    path = os.fspath(path)
    log_path = os.fspath(log_path) if log_path is not None else None
    data, text, raw = read_toml(path, "scenario", ScenarioError)
    for o in overrides:
        apply_override(data, o, path)
    if duration is not None:
        w = data.setdefault("world", {})
        w.pop("steps", None)
        w["duration"] = duration
    try:
        spec = S.Scenario.model_validate(data)
    except pydantic.ValidationError as e:
        raise ScenarioError(format_validation_error(path, e)) from None
    base = os.path.dirname(os.path.abspath(path))
    robots = []
    for i, r in enumerate(spec.robot):
        robots.append(_resolve_robot(path, base, i, r, spec, strict, max_joints,
                                     tuple(ignore_warnings)))
    names = [r.name for r in robots]
    for i, n in enumerate(names):
        if names.count(n) > 1:
            raise ScenarioError(f"{path}: robot[{i}].name: robot name {n!r} is used twice; give "
                                "each robot a unique name")
    w = spec.world
    ratio = float(w.steps) if w.steps is not None else w.duration / w.dt
    if not ratio <= MAX_STEPS:  # (inf and NaN too: dt = 5e-324)
        key = "world.steps" if w.steps is not None else "world.duration / world.dt"
        raise ScenarioError(f"{path}: {key}: {ratio:.4g} steps, more than the {MAX_STEPS:.0e} a "
                            "run may take; shorten the run or lengthen dt")
    steps = w.steps if w.steps is not None else int(round(ratio))
    if steps < 1:
        raise ScenarioError(f"{path}: world.duration: shorter than one step of {w.dt} s")
    option = "-o"
    if log_path is None:
        option = "log.path"
        log_path = spec.log.path or os.path.splitext(os.path.basename(path))[0] + ".h5"
        if spec.log.path is not None and not os.path.isabs(log_path):
            log_path = os.path.join(base, log_path)
    scn = ResolvedScenario(path=os.path.abspath(path), text=text,
                           sha256=hashlib.sha256(raw).hexdigest(), spec=spec, robots=robots,
                           steps=steps, log_path=_check_log_path(log_path, option),
                           strict=strict, ignore_warnings=tuple(ignore_warnings))
    real = os.path.realpath(scn.log_path)
    for f in scn.inputs:
        if os.path.realpath(f) == real:
            raise ScenarioError(f"{option} {log_path}: that is {f}, an input of this run; the log "
                                "would replace it. Choose another log path")
    return scn


def _check_log_path(log_path: str, option: str) -> str:
    """The absolute log path, refused (before anything runs) when it is empty or a folder."""
    if not log_path or not log_path.strip():
        raise ScenarioError(f"{option}: the log path is empty")
    if os.path.isdir(log_path) or log_path.endswith(("/", os.sep)):
        raise ScenarioError(f"{option} {log_path}: is a folder; expected a log file name")
    return os.path.abspath(log_path)


def _per_joint(value, names: tuple[str, ...], where: str, what: str) -> np.ndarray:
    """A scalar, a full list or a table by name -> (len(names),)."""
    n = len(names)
    if isinstance(value, (int, float)):
        return np.full(n, float(value))
    if isinstance(value, list):
        if len(value) != n:
            raise ScenarioError(f"{where}: expected {n} numbers (one per {what}: "
                                f"{', '.join(names)}), got {len(value)}")
        return np.array(value, dtype=float)
    out = np.zeros(n)
    for k, v in value.items():
        if k not in names:
            raise ScenarioError(f"{where}.{k}: unknown {what} {k!r}{did_you_mean(k, names)}; "
                                f"expected one of {', '.join(names)}")
        out[names.index(k)] = v
    return out


def _resolve_robot(path, base, i, r: S.Robot, spec: S.Scenario, strict: bool,
                   max_joints: int = DEFAULT_MAX_JOINTS, ignore_warnings=()) -> ResolvedRobot:
    where = f"{path}: robot[{i}]"
    urdf = files.resolve(r.urdf, base)
    if not os.path.isfile(urdf):
        raise ScenarioError(f"{where}.urdf: URDF file {r.urdf!r} not found (looked at {urdf})")
    if r.xacro_args and not urdf.endswith(".xacro"):
        raise ScenarioError(f"{where}.xacro_args: {r.urdf!r} is not a .xacro file")
    # a ModelError names the URDF file and element
    model = load_urdf(urdf, base=r.base, strict=strict, xacro_args=r.xacro_args or None,
                      max_joints=max_joints, ignore_warnings=ignore_warnings)
    name = r.name if r.name is not None else model.name
    if not ROBOT_NAME.fullmatch(name):
        source = "" if r.name else f" (the URDF's robot name; set robot[{i}].name)"
        raise ScenarioError(f"{where}.name: {name!r}{source} is not a valid robot name: "
                            f"{ROBOT_NAME_RULE}")
    one_dof = [j for j in model.moving_joints if j.nv == 1]
    one_names = tuple(j.name for j in one_dof)
    q0 = model.nominal_config.copy() if model.nominal_config is not None else \
        model.neutral_configuration()
    if r.initial.q is not None:
        if isinstance(r.initial.q, list):
            if len(r.initial.q) != model.nq:
                raise ScenarioError(f"{where}.initial.q: expected {model.nq} numbers (q of "
                                    f"{model.name}: {', '.join(model.coordinate_names)}), got "
                                    f"{len(r.initial.q)}")
            q0 = np.array(r.initial.q, dtype=float)
        else:
            for k, v in r.initial.q.items():
                if k not in model.coordinate_names:
                    raise ScenarioError(f"{where}.initial.q.{k}: unknown coordinate {k!r}"
                                        f"{did_you_mean(k, model.coordinate_names)}; expected one "
                                        f"of {', '.join(model.coordinate_names)}")
                q0[model.coordinate_names.index(k)] = v
    for j in model.moving_joints:  # a zero quaternion is no orientation
        if j.type in ("floating", "spherical"):
            s0 = j.q_slice.start + (3 if j.type == "floating" else 0)
            if not np.any(q0[s0:s0 + 4]):
                raise ScenarioError(f"{where}.initial.q: the quaternion of joint {j.name!r} "
                                    f"({', '.join(model.coordinate_names[s0:s0 + 4])}) is zero; "
                                    "give a rotation (1 0 0 0 is none)")
    u0 = np.zeros(model.nv)
    if r.initial.u is not None:
        u0 = _per_joint(r.initial.u, model.dof_names, f"{where}.initial.u", "DoF")
    out = ResolvedRobot(name=name, model=model, q0=q0, u0=u0,
                        scheme=r.integration_scheme or spec.world.integration_scheme,
                        control_mode=r.control_mode, kp=None, kd=None,
                        inverse_dynamics=r.inverse_dynamics)
    if r.pd is not None:
        out.kp = _per_joint(r.pd.kp, model.dof_names, f"{where}.pd.kp", "DoF")
        out.kd = _per_joint(r.pd.kd, model.dof_names, f"{where}.pd.kd", "DoF")
        for label, gains in (("kp", out.kp), ("kd", out.kd)):
            if np.any(gains < 0):
                k = int(np.argmax(gains < 0))
                raise ScenarioError(f"{where}.pd.{label}: gains must be >= 0, got "
                                    f"{gains[k]:g} for {model.dof_names[k]!r}")
        for label, table, dest, index in (
                ("target", r.pd.target, out.targets, lambda j: j.q_slice.start),
                ("velocity_target", r.pd.velocity_target, out.velocity_targets,
                 lambda j: j.u_slice.start)):
            for k, sched in table.items():
                if k not in one_names:
                    raise ScenarioError(f"{where}.pd.{label}.{k}: unknown joint {k!r}"
                                        f"{did_you_mean(k, one_names)}; expected one of the 1-DoF "
                                        f"joints {', '.join(one_names)}")
                f, constant = compile_schedule(sched, base, f"{where}.pd.{label}.{k}")
                dest.append((index(one_dof[one_names.index(k)]), f, constant))
    for k, sched in r.feedforward.items():
        if k not in model.dof_names:
            raise ScenarioError(f"{where}.feedforward.{k}: unknown DoF {k!r}"
                                f"{did_you_mean(k, model.dof_names)}; expected one of "
                                f"{', '.join(model.dof_names)}")
        f, constant = compile_schedule(sched, base, f"{where}.feedforward.{k}")
        out.feedforward.append((model.dof_names.index(k), f, constant))
    act_names = tuple(a.name for a in model.actuators)
    for k, sched in r.actuators.torque.items():
        if k not in act_names:
            raise ScenarioError(f"{where}.actuators.torque.{k}: unknown actuator {k!r}; expected "
                                f"one of {', '.join(act_names) or '(this robot has none)'}")
        f, constant = compile_schedule(sched, base, f"{where}.actuators.torque.{k}")
        out.actuator_torques.append((act_names.index(k), f, constant))
    bv = r.actuators.bus_voltage
    if bv is not None:
        if not act_names:
            raise ScenarioError(f"{where}.actuators.bus_voltage: this robot has no actuators")
        if isinstance(bv, dict):
            for k, v in bv.items():
                if k not in act_names:
                    raise ScenarioError(f"{where}.actuators.bus_voltage.{k}: unknown actuator "
                                        f"{k!r}; expected one of {', '.join(act_names)}")
                if v < 0:
                    raise ScenarioError(f"{where}.actuators.bus_voltage.{k}: expected >= 0, "
                                        f"got {v}")
                out.bus_voltage[k] = v
        else:
            if bv < 0:
                raise ScenarioError(f"{where}.actuators.bus_voltage: expected >= 0, got {bv}")
            out.bus_voltage[None] = bv
    out.operating_region = r.actuators.operating_region
    for k, b in r.damping.items():
        j = next((j for j in model.moving_joints if j.name == k), None)
        if j is None or j.type == "floating":
            raise ScenarioError(f"{where}.damping.{k}: unknown joint {k!r}; expected one of "
                                f"{', '.join(j.name for j in model.moving_joints if j.type != 'floating')}")
        for idx in range(j.u_slice.start, j.u_slice.stop):
            out.damping[idx] = b
    for n, sp in enumerate(r.spring):
        j = next((j for j in model.moving_joints if j.name == sp.joint), None)
        if j is None or j.type not in ("revolute", "continuous", "prismatic", "spherical"):
            raise ScenarioError(f"{where}.spring[{n}].joint: expected a revolute, prismatic or "
                                f"spherical joint of {model.name}, got {sp.joint!r}")
        rest = np.atleast_1d(np.array(sp.rest, dtype=float))
        if rest.size != j.nq:
            raise ScenarioError(f"{where}.spring[{n}].rest: expected {j.nq} number"
                                f"{'s' if j.nq > 1 else ''} for {j.type} joint {j.name!r}, got "
                                f"{rest.size}")
        out.springs.append((sp.joint, sp.stiffness, rest))
    links = tuple(link.name for link in model.links)
    for n, ld in enumerate(r.external):
        if ld.link not in links:
            raise ScenarioError(f"{where}.external[{n}].link: unknown link {ld.link!r}"
                                f"{did_you_mean(ld.link, links)}; expected one of "
                                f"{', '.join(links)}")
        if model.link(ld.link).body == 0:
            raise ScenarioError(f"{where}.external[{n}].link: link {ld.link!r} is welded to the "
                                "world; a load on it does nothing")
        out.loads.append(ResolvedLoad(
            link=ld.link, vector=np.array(ld.force if ld.force is not None else ld.torque),
            point=None if ld.point is None else np.array(ld.point), is_torque=ld.torque is not None,
            start=ld.start, stop=np.inf if ld.stop is None else ld.stop))
    for k in r.materials:
        if k != "*" and k not in links:
            raise ScenarioError(f"{where}.materials.{k}: unknown link {k!r}; expected one of "
                                f"{', '.join(links)} or '*'")
    out.materials = dict(r.materials)
    out.self_collision = r.self_collision
    for n, pair in enumerate(r.self_collision_exclude):
        for k in pair:
            if k not in links:
                raise ScenarioError(f"{where}.self_collision_exclude[{n}]: unknown link {k!r}")
    out.self_collision_exclude = [tuple(p) for p in r.self_collision_exclude]
    if r.controller is not None:
        out.controller, out.controller_name = _load_controller(r.controller, base,
                                                               f"{where}.controller")
        file = r.controller.rsplit(":", 1)[0]
        out.inputs.append(files.resolve(file, base))
    out.inputs += [files.resolve(c.file, base) for c in _csv_schedules(r)]
    return out


def _csv_schedules(node) -> list:
    """Every CSV schedule in a part of the scenario."""
    if isinstance(node, S.Csv):
        return [node]
    if isinstance(node, pydantic.BaseModel):
        return [c for name in type(node).model_fields for c in _csv_schedules(getattr(node, name))]
    if isinstance(node, dict):
        return [c for v in node.values() for c in _csv_schedules(v)]
    if isinstance(node, (list, tuple)):
        return [c for v in node for c in _csv_schedules(v)]
    return []


def _load_controller(spec: str, base: str, where: str):
    file, func = spec.rsplit(":", 1)
    fpath = files.resolve(file, base)
    if not os.path.isfile(fpath):
        raise ScenarioError(f"{where}: controller file {file!r} not found (looked at {fpath})")
    name = f"raisimcli_controller_{hashlib.sha1(fpath.encode()).hexdigest()[:12]}"
    mod_spec = importlib.util.spec_from_file_location(name, fpath)
    module = importlib.util.module_from_spec(mod_spec)
    try:
        mod_spec.loader.exec_module(module)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # the user's code (SystemExit too): their error, their traceback
        from raisimcli.errors import ControllerError
        raise ControllerError(f"{where}: importing {fpath} raised {type(e).__name__}: {e}",
                              exc=e, file=fpath) from None
    fn = getattr(module, func, None)
    if not callable(fn):
        raise ScenarioError(f"{where}: {file!r} has no function {func!r}")
    sys.modules.setdefault(name, module)
    return fn, spec
