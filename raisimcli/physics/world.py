"""World: gravity, the time step, and the articulated systems it steps."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack

import numpy as np

from raisimcli.errors import StateError
from raisimcli.model import RobotModel, load_urdf
from raisimcli.model.types import ROBOT_NAME, ROBOT_NAME_RULE
from raisimcli.physics.articulated_system import ArticulatedSystem
from raisimcli.physics.contact_set import EMPTY_CONTACTS
from raisimcli.physics.contact_world import ContactWorld
from raisimcli.physics.step import pipeline


class World:
    """`dt` in s, `gravity` (3,) in m/s^2. Time lives on an integer grid: t = k dt."""

    def __init__(self, dt: float = 0.001, gravity=(0.0, 0.0, -9.81)):
        self.set_time_step(dt)
        self.gravity = np.array(gravity, dtype=float)
        self.systems: list[ArticulatedSystem] = []
        self.step_count = 0
        self.contact_world = ContactWorld()
        self._contacts = EMPTY_CONTACTS  # the step's ContactSet (the `contacts` property)
        self._detect_at = None  # integrate1's coordinates, until its contacts are detected
        self._warm_start: Mapping = {}  # the last step's impulses by row key (WarmStart)
        self._integrate1_at = None  # _structure() when integrate1 ran (see integrate2)

    @property
    def contacts(self):
        """The step's ContactSet: detected at integrate1's state (when first read after it, see
        integrate1), solved by integrate2."""
        if self._detect_at is not None:
            self._detect_pending()
        return self._contacts

    @contacts.setter
    def contacts(self, contacts) -> None:
        self._detect_at = None
        self._contacts = contacts

    def _detect_before_change(self) -> None:
        """integrate1's pending collision query, before the set-up it depends on changes."""
        if self._detect_at is not None:
            self._detect_pending()

    def _detect_pending(self) -> None:
        """integrate1's collision query, at integrate1's coordinates: the systems whose state was
        set since are put back at them for the query."""
        at, self._detect_at = self._detect_at, None
        moved = [(s, q) for s, q in at if s.q is not q]
        if not moved:
            self._contacts = self.contact_world.detect()
            return
        with ExitStack() as stack:
            for s, q in moved:
                stack.enter_context(s.coordinates(q))
            self._contacts = self.contact_world.detect()

    @property
    def time(self) -> float:
        return self.step_count * self.dt

    def set_time_step(self, dt: float) -> None:
        if not (dt > 0 and np.isfinite(dt)):
            raise StateError(f"time step must be a positive number, got {dt}")
        self.dt = float(dt)

    def set_gravity(self, gravity) -> None:
        self.gravity = np.array(gravity, dtype=float)
        for s in self.systems:
            s.set_gravity(self.gravity)

    def get_gravity(self) -> np.ndarray:
        return self.gravity.copy()

    def add_articulated_system(self, model: RobotModel | str, name: str | None = None,
                               base: str | None = None) -> ArticulatedSystem:
        """Add a robot from a RobotModel or a URDF path."""
        self._detect_before_change()
        if not isinstance(model, RobotModel):
            model = load_urdf(model, base=base)
        if not ROBOT_NAME.fullmatch(name or model.name):
            raise StateError(f"{name or model.name!r} is not a valid robot name: "
                             f"{ROBOT_NAME_RULE} (pass name=...)")
        system = ArticulatedSystem(model, name=name)
        system.set_gravity(self.gravity)
        if any(s.name == system.name for s in self.systems):
            raise StateError(f"a system named {system.name!r} is already in the world")
        self.systems.append(system)
        self.contact_world.add_robot(system)
        return system

    # --- the static world and contacts (docs/contacts.md) ---------------------------------------
    def add_ground(self, height: float = 0.0, material: str = "default") -> None:
        """An infinite ground plane z = height."""
        self._detect_before_change()
        self.contact_world.set_ground(height, material)

    def add_box(self, name: str, size, position=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0),
                material: str = "default") -> None:
        """A static box (full side lengths `size`) at a world pose."""
        self._detect_before_change()
        from raisimcli.physics.shapes import rpy_pose
        self.contact_world.add_box(name, size, rpy_pose(position, rpy), material)

    def set_material_pair(self, a: str, b: str, friction: float, restitution: float = 0.0,
                          restitution_threshold: float = 0.01) -> None:
        self._detect_before_change()
        self.contact_world.set_material_pair(a, b, friction, restitution, restitution_threshold)

    def set_default_material(self, friction: float, restitution: float = 0.0,
                             restitution_threshold: float = 0.01) -> None:
        self._detect_before_change()
        from raisimcli.physics.contact_set import MaterialPair
        self.contact_world.default_pair = MaterialPair(friction, restitution,
                                                       restitution_threshold)

    def configure_contacts(self, system: ArticulatedSystem, materials: dict | None = None,
                           self_collision: bool = False, excluded_pairs=()) -> None:
        """Materials of a robot's links (by link name, "*" for the rest), and opt-in
        self-collision between non-adjacent bodies with link-pair exclusions."""
        self._detect_before_change()
        cw = self.contact_world
        cw.remove_robot(system)
        cw.add_robot(system, materials, self_collision, excluded_pairs)

    def get_contacts(self) -> list:
        """The contacts of the last step, with their impulses."""
        return list(self.contacts)

    # --- the state (raisimcli.physics.state, docs/physics.md) ---------------------------------
    def get_state(self):
        """Everything the next step depends on, as a WorldState of copies: restore it with
        set_state into a world of the same structure and the steps that follow are
        bit-identical."""
        from raisimcli.physics.state import WorldState, system_state
        return WorldState(self.step_count, self.dt, self.gravity.copy(),
                          tuple(system_state(s) for s in self.systems), dict(self._warm_start))

    def set_state(self, state) -> None:
        """Put a WorldState (from get_state of a world with the same robots) into this world."""
        from raisimcli.physics.state import restore_system
        names = [s.name for s in self.systems]
        if [st.name for st in state.systems] != names:
            raise StateError(f"the state is of a world with the systems "
                             f"{[st.name for st in state.systems]}; this one has {names}")
        self.set_time_step(state.dt)
        self.set_gravity(state.gravity)
        for s, st in zip(self.systems, state.systems):
            restore_system(s, st)
        self.step_count = int(state.step_count)
        self._warm_start = dict(state.warm_start)
        self.contacts = EMPTY_CONTACTS
        for s in self.systems:
            s.last_contacts = EMPTY_CONTACTS

    def integrate1(self) -> None:
        """Integration Steps 1-6 of every system, then collision detection: its query runs when
        `contacts` is first read (by the user, or by integrate2 after a change), at the
        coordinates of now. A controller that reads no contact, followed by integrate2's whole
        step (which detects them in its own query), does not pay for it. A system whose state
        was set since is put back at these coordinates for the query, and the World's set-up
        methods (a robot, a ground, a box, materials, a robot's contacts) run it before they
        change anything; a change made to `contact_world`'s attributes directly in between acts
        on it. An error of the query (two shapes with the same centre) is raised where it runs."""
        for s in self.systems:
            s.integrate1(self.dt)
        if self.contact_world.active:
            self._contacts, self._detect_at = None, [(s, s.q) for s in self.systems]
        else:
            self.contacts = EMPTY_CONTACTS
        self._integrate1_at = self._structure()

    def integrate2(self) -> None:
        """Integration Steps 7-12: the systems' rows and the contacts, one impulse problem per
        island of robots in contact with each other.

        When nothing but the commands changed since integrate1 (a controller between them sets
        torques, targets, gains, loads; it may read anything), the step is integrate()'s, with
        the M and h read at integrate1's state; its detection finds integrate1's contacts again.
        When a state, the time step, gravity or a contact set-up changed since integrate1, the
        step starts from the systems' current state with the contacts detected at integrate1's
        coordinates (`contacts`)."""
        at, self._integrate1_at = self._integrate1_at, None
        unchanged = at is not None and at == self._structure()
        for s in self.systems:
            s.end_integrate1()
        if self.systems and unchanged:
            self.integrate()
            return
        contacts = self.contacts
        self._warm_start = pipeline.step_with(self, contacts, self._warm_start)
        for s in self.systems:
            s.last_contacts = contacts
        self.step_count += 1

    def integrate(self) -> None:
        """One step: integrate1 then integrate2, taken as one (raisimcli.physics.step.pipeline)
        unless the user's integrate1 has run."""
        done = pipeline.step(self, self._warm_start)  # (None while an integrate1 is pending)
        if done is None:
            self.integrate1()
            self.integrate2()
            return
        contacts, self._warm_start = done
        self._contacts, self._detect_at = contacts, None  # (the `contacts` setter's)
        self._integrate1_at = None
        for s in self.systems:
            s.last_contacts = contacts
        self.step_count += 1

    def _structure(self) -> tuple:
        """What integrate1's results depend on besides the commands: the time step, gravity,
        each system's state and integrate1's mark, the contact world's set-up."""
        return (self.dt, self.gravity.tobytes(), [s.integrate1_mark for s in self.systems],
                self.contact_world.structure())
