"""The run loop of `raisimcli run`: a World built from a resolved scenario, stepped like a RaiSim
control loop (schedules, integrate1, controllers, integrate2), logged row by row."""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from raisimcli.errors import ControllerError, Interrupted, LogWriteError, ScenarioError, \
    take_interrupt
from raisimcli.linalg import first_beyond
from raisimcli.log.writer import LogWriter, is_log
from raisimcli.model.types import ModelWarning
from raisimcli.physics import World
from raisimcli.physics.articulated_system import ArticulatedSystem
from raisimcli.scenario.loader import ResolvedRobot, ResolvedScenario
from raisimcli.writing import check_replaceable

DIVERGENCE_LIMIT = 1e8  # |q| or |u| beyond this is an exploding state
IMPULSE_LIMIT = 1e6  # N s: a contact impulse beyond this in a diverging step is its cause


@dataclass
class RunResult:
    status: str                 # complete | diverged | interrupted | error
    steps: int                  # steps taken
    dt: float                   # s
    wall_time: float            # s
    log_path: str
    first_step_time: float = 0.0  # s of wall_time in the first step (numba compiles or loads it)
    message: str = ""
    final_energy: dict = field(default_factory=dict)   # robot -> (kinetic, potential)
    warnings: list = field(default_factory=list)
    kept: str | None = None     # a complete log at the requested path, left in place
    replaced: bool = False      # an earlier file at the log's path was replaced

    @property
    def sim_time(self) -> float:
        return self.dt * self.steps


class _RobotDriver:
    """Applies one robot's scenario commands before each step. `where`: the robot's place in
    its scenario file, for messages ("path: robot[0]")."""

    def __init__(self, spec: ResolvedRobot, system: ArticulatedSystem, where: str = ""):
        self.spec, self.system = spec, system
        self.warnings: list[ModelWarning] = []  # of its initial state (initial_state_warnings)
        s = system
        s.set_state(spec.q0, spec.u0)
        s.set_integration_scheme(spec.scheme)
        if spec.kp is not None:
            s.set_pd_gains(spec.kp, spec.kd)
            s.set_pd_target(s.q, np.zeros(s.nv))
        if spec.control_mode is not None:
            s.set_control_mode(spec.control_mode)
        if spec.damping:
            b = s.b_joint.copy()
            for i, v in spec.damping.items():
                b[i] = v
            s.set_joint_damping(b)
        for joint, k, rest in spec.springs:
            s.add_spring(joint, k, rest)
        for name, v in spec.bus_voltage.items():
            s.set_bus_voltage(v, name)
        s.set_motor_operating_region_enforced(spec.operating_region)
        self.q_ref = s.q_ref.copy()
        self.u_ref = s.u_ref.copy()
        self.tau_ff = np.zeros(s.nv)
        self.tau_a = np.zeros(len(s.model.actuators))
        self.has_targets = bool(spec.targets or spec.velocity_targets)
        m = s.model
        # each command's schedules: the constant ones written into its array here, once; the
        # others (index, f, key) evaluated before every step (the command itself is set every
        # step, over whatever a controller set in the last one). key: the schedule's key path
        self._varying = []
        for schedules, values, key, names in (
                (spec.targets, self.q_ref, "pd.target", m.coordinate_names),
                (spec.velocity_targets, self.u_ref, "pd.velocity_target", m.dof_names),
                (spec.feedforward, self.tau_ff, "feedforward", m.dof_names),
                (spec.actuator_torques, self.tau_a, "actuators.torque",
                 [a.name for a in m.actuators])):
            varying = []
            for i, f, constant in schedules:
                if constant:
                    values[i] = _finite(f, 0.0, f"{where}.{key}.{names[i]}")
                else:
                    varying.append((i, f, f"{where}.{key}.{names[i]}"))
            self._varying.append(varying)
        # Without a controller nothing but this driver sets the robot's commands: once the
        # setters have taken them (the first step), each step writes its schedules' values into
        # the system's command arrays directly. The arrays are those the setters would make
        # again, bit for bit: a target is a 1-DoF joint's coordinate (the loader's rule), never
        # an entry that set_pd_target normalises.
        self._direct = spec.controller is None
        self._set_once = False

    def apply(self, t: float) -> None:
        s, spec = self.system, self.spec
        if self._set_once:
            for values, i, f, key in self._direct_writes:
                values[i] = _finite(f, t, key)
            if spec.loads:
                self._loads(t)
            return
        self._set_once = self._direct
        # (the system's command arrays are views that no setter rebinds: commands.py)
        self._direct_writes = [(values, i, f, key) for values, schedules in zip(
            (s.q_ref, s.u_ref, s.tau_ff, s.tau_a), self._varying) for i, f, key in schedules]
        for values, schedules in zip((self.q_ref, self.u_ref, self.tau_ff, self.tau_a),
                                     self._varying):
            for i, f, key in schedules:
                values[i] = _finite(f, t, key)
        if self.has_targets:
            s.set_pd_target(self.q_ref, self.u_ref)
        if spec.feedforward:
            s.set_generalized_force(self.tau_ff)
        if spec.actuator_torques:
            s.set_actuator_torques(self.tau_a)
        self._loads(t)

    def _loads(self, t: float) -> None:
        s = self.system
        for ld in self.spec.loads:
            if ld.start <= t < ld.stop:
                if ld.is_torque:
                    s.set_external_torque(ld.link, ld.vector)
                else:
                    s.set_external_force(ld.link, ld.vector, ld.point)


def _finite(f, t: float, key: str) -> float:
    """The value of schedule f at time t, which must be finite (a ramp or a sine of huge values
    can overflow)."""
    v = f(t)
    if not math.isfinite(v):
        raise ScenarioError(f"{key}: the schedule gives {v} at t = {t:.6g} s; expected a finite "
                            "number (its values overflow)")
    return v


def build_world(scn: ResolvedScenario) -> tuple[World, list[_RobotDriver]]:
    ws = scn.spec.world
    w = World(scn.dt, ws.gravity)
    if ws.ground is not None:
        w.add_ground(ws.ground.height, ws.ground.material)
    for b in ws.box:
        w.add_box(b.name, b.size, b.position, b.rpy, b.material)
    d = ws.default_material
    w.set_default_material(d.friction, d.restitution, d.restitution_threshold)
    for p in ws.material_pair:
        w.set_material_pair(p.materials[0], p.materials[1], p.friction, p.restitution,
                            p.restitution_threshold)
    cs = ws.contact_solver
    w.contact_world.margin, w.contact_world.erp, w.contact_world.slop = cs.margin, cs.erp, cs.slop
    drivers = []
    for r in scn.robots:
        system = w.add_articulated_system(r.model, name=r.name)
        system.solver_max_iterations, system.solver_tolerance = cs.max_iterations, cs.tolerance
        system.constraint_erp = ws.erp
        if r.materials or r.self_collision:
            w.configure_contacts(system, r.materials, r.self_collision, r.self_collision_exclude)
        drivers.append(_RobotDriver(r, system, f"{scn.path}: robot[{len(drivers)}]"))
    if any(r.self_collision for r in scn.robots) or len(drivers) > 1:
        _check_overlaps(w, scn, drivers)
    for i, d in enumerate(drivers):
        d.warnings = [m for m in initial_state_warnings(w, scn, i, d.system)
                      if m.code not in scn.ignore_warnings]
        if scn.strict and d.warnings:
            first = d.warnings[0]
            raise ScenarioError(f"{first} [{first.code}] (--strict: warnings are errors)")
    return w, drivers


# a floating robot whose lowest shape starts between these heights above the ground drops onto
# it in its first steps, which is seldom meant; a larger gap is a drop meant (quadruped_drop's)
ABOVE_GROUND = (0.002, 0.05)  # m
IN_GROUND = 0.001  # m: a shape deeper in the ground at the start than this


def initial_state_warnings(w: World, scn: ResolvedScenario, i: int, s) -> list[ModelWarning]:
    """What looks wrong in robot i's initial state (codes in docs/scenario.md, "The initial
    state"): a joint outside its position limits (the limit rows push it back at once), a
    shape more than IN_GROUND into the ground (the contacts push it out at once), a floating
    robot between ABOVE_GROUND above the ground (it drops onto it)."""
    where = f"robot[{i}].initial"
    found = []
    for j in s.model.moving_joints:
        if j.nv != 1 or not j.has_position_limits:
            continue
        q = float(s.q[j.q_slice.start])
        if not j.lower - 1e-12 <= q <= j.upper + 1e-12:
            found.append(ModelWarning(
                "initial-outside-limits", f"{s.name}: {j.name} starts at {q:g}, outside its "
                f"limits [{j.lower:g}, {j.upper:g}] ({s.model.path}"
                f"{'' if j.line is None else f':{j.line}'}): the joint-limit rows push it back "
                "from the first step", scn.path, element=where))
    cw = w.contact_world
    rs = next((r for r in cw.robots if r.system is s), None)
    lowest = None if rs is None or cw.ground_height is None else rs.lowest_shape(cw.ground_height)
    if lowest is not None:
        height, link = lowest
        if height < -IN_GROUND:
            found.append(ModelWarning(
                "initial-in-ground", f"{s.name}: a shape of link {link!r} starts "
                f"{-height * 1e3:.3g} mm into the ground: the contacts push it out in the first "
                "steps", scn.path, element=where))
        elif s.model.is_floating and ABOVE_GROUND[0] < height <= ABOVE_GROUND[1]:
            found.append(ModelWarning(
                "initial-above-ground", f"{s.name}: its lowest shape (link {link!r}) starts "
                f"{height * 1e3:.3g} mm above the ground: the robot drops onto it in the first "
                "steps (lower its root.z to start standing)", scn.path, element=where))
    return found


def _check_overlaps(w: World, scn: ResolvedScenario, drivers: list) -> None:
    """Robots whose links overlap at their initial states, each other's or one robot's own
    with self-collision: an error naming them, with the exclusions to add or the robots to
    move (ContactWorld.overlaps: such contacts cannot be solved)."""
    overlaps = w.contact_world.overlaps()
    if not overlaps:
        return
    index = {id(d.system): i for i, d in enumerate(drivers)}
    sa, _, sb, _, _ = overlaps[0]  # (the deepest pair's robots: their pairs, deepest first)
    pairs = [(la, lb, depth) for a, la, b, lb, depth in overlaps if a is sa and b is sb]
    i, j, n = index[id(sa)], index[id(sb)], len(pairs)
    shown = "; ".join(f"{a!r} and {b!r} ({depth * 1e3:.3g} mm)" for a, b, depth in pairs[:8])
    more = f"; and {n - 8} more" if n > 8 else ""
    if sa is sb:
        r = scn.robots[i]
        lines = [list(p) for p in r.self_collision_exclude] + [[a, b] for a, b, _ in pairs]
        exclude = "[" + ", ".join(f'["{a}", "{b}"]' for a, b in lines) + "]"
        raise ScenarioError(
            f"{scn.path}: robot[{i}].self_collision: {n} pair{'s' if n > 1 else ''} of links "
            f"of robot {sa.name!r} overlap at its initial state: {shown}{more}. A contact cannot "
            "part shapes that start inside each other (the run would jolt or diverge); leave "
            f"them out with self_collision_exclude = {exclude}, or start where they are apart")
    raise ScenarioError(
        f"{scn.path}: robot[{j}].initial: robots {sa.name!r} (robot[{i}]) and {sb.name!r} "
        f"overlap at their initial states, {n} pair{'s' if n > 1 else ''} of links ({sa.name} "
        f"first): {shown}{more}. A contact cannot part shapes that start inside each other "
        "(the run would jolt or diverge); start them apart (their [robot.initial] q)")


def _diverged(drivers, t) -> str | None:
    for d in drivers:
        s = d.system
        i, j = first_beyond(s.q, DIVERGENCE_LIMIT), first_beyond(s.u, DIVERGENCE_LIMIT)
        if i >= 0 or j >= 0:
            label, v, names, k = ("q", s.q, s.coordinate_names, i) if i >= 0 else \
                ("u", s.u, s.dof_names, j)
            return (f"robot {s.name!r} diverged at t = {t:.6g} s: {label}[{names[k]}] = "
                    f"{float(v[k]):.6g}")
    return None


def _unbounded_impulses(contacts) -> str:
    """When the diverging step's contact impulses are beyond any physical one (IMPULSE_LIMIT),
    the largest with its two links, to add to the divergence's message: where to look."""
    if not len(contacts):
        return ""
    impulse = contacts.impulse
    with np.errstate(over="ignore"):  # (an impulse past 1e154 squares to inf: still beyond)
        sizes = np.sqrt((np.where(np.isfinite(impulse), impulse, np.inf) ** 2).sum(axis=1))
    k = int(np.argmax(sizes))
    if not sizes[k] > IMPULSE_LIMIT:
        return ""
    system, _, link, other, _, name = contacts.meta[k]
    if other is system:
        where = f"links {link!r} and {name!r} of robot {system.name!r}"
    else:
        where = f"link {link!r} of robot {system.name!r} and " + (
            f"link {name!r} of robot {other.name!r}" if other is not None else
            "the ground" if name == "ground" else f"the box {name!r}")
    return (f"; the step's contact impulses were unbounded, the largest {sizes[k]:.3g} N s "
            f"between {where}")


class _StopRequest:
    """SIGINT, SIGTERM and SIGHUP set a flag that the run loop reads between steps, so that an
    interrupt never lands in the middle of a step, of a log row or of closing the log (in the
    main thread; elsewhere the signals keep their handlers and a KeyboardInterrupt is handled as
    it comes)."""

    SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP")
                    if hasattr(signal, n))

    def __init__(self):
        # a signal of the start-up whose exception Python ignored (see errors.take_interrupt)
        # stops the run before its first step
        earlier = take_interrupt()
        self.requested = earlier is not None
        self.signal_name = earlier or ""
        self._saved = {}
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._saved[sig] = signal.signal(sig, self._request)

    in_controller = False  # a controller is running: a signal stops it where it is

    def _request(self, signum, frame):
        self.requested = True
        self.signal_name = self.signal_name or signal.Signals(signum).name
        if self.in_controller:  # (one stuck in a loop would never reach the next step)
            raise Interrupted(self.signal_name)

    def restore(self) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)
        self._saved.clear()


def run(scn: ResolvedScenario, progress: Callable[[int, int, float], None] | None = None,
        progress_every: int = 200) -> RunResult:
    """Run a resolved scenario and write its log. `progress(step, steps, wall)` is called every
    `progress_every` steps. SIGINT or SIGTERM stops the run after the current step: the log is
    closed as `interrupted` and Interrupted (a KeyboardInterrupt) raised; a controller exception
    (SystemExit included) closes it as `error` and raises ControllerError. Either exception
    carries `log_path`, where the log went (beside a complete log already at the path, see
    LogWriter.close). A failed write raises LogWriteError, with no log written."""
    stop = _StopRequest()  # from here on a signal stops the run at the next step
    try:
        return _run(scn, progress, progress_every, stop)
    finally:
        stop.restore()


def _run(scn: ResolvedScenario, progress, progress_every: int, stop: _StopRequest) -> RunResult:
    # an earlier log of ours may be replaced, nothing else, and never an input of the run
    check_replaceable(scn.log_path, "the log path", "log", is_log, tuple(scn.inputs))
    w, drivers = build_world(scn)
    spec = scn.spec
    writer = LogWriter(scn.log_path, scenario_text=scn.text, scenario_sha256=scn.sha256,
                       config_json=scn.config_json(), dt=scn.dt,
                       decimation=spec.log.decimation, compression=spec.log.compression,
                       scenario_name=os.path.splitext(os.path.basename(scn.path))[0],
                       resolved_sha256=scn.resolved_sha256)
    try:
        for d in drivers:
            signals = list(spec.log.signals)
            if d.spec.inverse_dynamics:
                d.system.set_compute_inverse_dynamics(True)
                signals.append("inverse_dynamics")
            writer.add_robot(d.system.name, d.system, signals)
        if "contacts" in spec.log.signals and w.contact_world.active:
            writer.add_contacts(w)
        writer.start()
    except BaseException:
        writer.abandon()
        raise
    warnings = [f"{d.system.name}: {m}" for d in drivers for m in d.system.model.warnings] + \
        [str(m) for d in drivers for m in d.warnings]
    controllers = [(d, d.spec.controller) for d in drivers if d.spec.controller is not None]
    dt = scn.dt
    t0 = time.perf_counter()
    k, first = 0, 0.0
    status, message = "complete", ""
    try:
        for k in range(scn.steps):
            if stop.requested:  # a signal: stop between two steps, the log whole
                raise Interrupted(stop.signal_name)
            t = k * dt
            for d in drivers:
                d.apply(t)
            if not controllers:  # (integrate1 then integrate2, in one call)
                w.integrate()
            else:  # the controllers run between them, at the step's M, h and contacts
                w.integrate1()
                for d, fn in controllers:
                    stop.in_controller, exit_ = True, os._exit
                    os._exit = _no_exit  # a controller cannot end the process as a success
                    try:
                        fn(t, d.system)
                    except Interrupted:
                        raise
                    except BaseException as e:  # SystemExit too: a controller cannot end the run
                        raise ControllerError(
                            f"the controller {d.spec.controller_name} of robot {d.system.name!r} "
                            f"raised {type(e).__name__} at t = {t:.6g} s: {e}", exc=e,
                            file=fn.__code__.co_filename) from None
                    finally:
                        stop.in_controller, os._exit = False, exit_
                w.integrate2()
            msg = _diverged(drivers, t + dt)
            if msg is not None:
                msg += _unbounded_impulses(w.contacts)
                writer.append(k)
                status, message = "diverged", msg
                k += 1
                break
            writer.append(k)
            if k == 0:  # the first call of each compiled loop compiles it (or loads the cache)
                first = time.perf_counter() - t0
            if progress is not None and (k + 1) % progress_every == 0:
                progress(k + 1, scn.steps, time.perf_counter() - t0)
        else:
            k = scn.steps
        writer.close(status, message)
        wall = time.perf_counter() - t0  # closing the log included
    except LogWriteError:
        raise  # the writer removed its file
    except KeyboardInterrupt as e:
        name = getattr(e, "signal_name", "") or stop.signal_name or "SIGINT"
        writer.close("interrupted", f"interrupted by {name} at t = {k * dt:.6g} s")
        raise _with_log(Interrupted(name), writer) from None
    except ControllerError as e:
        writer.close("error", str(e))
        raise _with_log(e, writer)
    except BaseException as e:
        writer.close("error", f"{type(e).__name__}: {e}")
        raise
    result = RunResult(status=status, steps=k, dt=dt, wall_time=wall, log_path=writer.path,
                       message=message, warnings=warnings, kept=writer.replaced,
                       replaced=writer.overwrote, first_step_time=first)
    for d in drivers:
        s = d.system
        result.final_energy[s.name] = (s.get_kinetic_energy(), s.get_potential_energy())
    return result


def _no_exit(code=0):
    """os._exit while a controller runs: an exception the run reports, not an exit."""
    raise SystemExit(f"os._exit({code}) (a controller cannot end the process)")


def _with_log(e: BaseException, writer: LogWriter) -> BaseException:
    """`e` with the path its run's log was written to, and the complete log it left alone."""
    e.log_path = writer.path
    e.kept = writer.replaced
    return e
