"""A step's contacts (ContactSet: arrays of points, frames, distances, material params, bodies,
and after the solve their impulses and velocities), the materials, and what each contact
contributes to the impulse problem of spec step 4 (docs/contacts.md). Detection, which makes
the set, is physics/contact_world.py.

A contact ties body A of a robot to B (the ground, a static box, or another robot's body). Its
frame has the normal n pointing from B to A (the direction A may move freely) and two tangents;
its rows are [t1, t2, n]^T (J_A(p) - J_B(p)) at the contact point p. Its normal velocity must reach
the target of :meth:`Contact.target_normal_velocity`:

- separated by d > 0 (within the detection margin): v_n >= -d / dt, so the bodies can close the gap
  within the step but not pass through (no tunnelling, no bounce with restitution 0);
- penetrating by -d > slop: v_n >= erp (-d - slop) / dt, removing a fraction erp of the
  penetration beyond the slop per step (the error feedback);
- approaching faster than the restitution threshold, with restitution e: v_n >= -e v_n(t).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

DEFAULT_FRICTION = 0.8
DEFAULT_RESTITUTION = 0.0
DEFAULT_RESTITUTION_THRESHOLD = 0.01  # m/s
DEFAULT_MARGIN = 0.005                # m: detection distance
DEFAULT_ERP = 0.2                     # fraction of the penetration removed per step
DEFAULT_SLOP = 1e-5                   # m: penetration left alone


@dataclass(frozen=True)
class MaterialPair:
    friction: float = DEFAULT_FRICTION
    restitution: float = DEFAULT_RESTITUTION
    restitution_threshold: float = DEFAULT_RESTITUTION_THRESHOLD


def contact_params(pair: MaterialPair, erp: float, slop: float) -> tuple:
    """A contact's params (friction, restitution, threshold, erp, slop): a row of the
    contact set's `params`, of the ground's table (ContactWorld._ground_params) and of a pair's
    contacts (_Found.params_of)."""
    return (pair.friction, pair.restitution, pair.restitution_threshold, erp, slop)


def _read_only(view: np.ndarray) -> np.ndarray:
    """The view, made read-only (a Contact's arrays are its set's rows: writing one would change
    the step's record that the log and get_contacts() read)."""
    view.setflags(write=False)
    return view


class Contact:
    """One contact point of a step: a view of its row in the step's :class:`ContactSet`.
    `system_a`/`body_a`/`link_a`: the robot body; `system_b` (None for the static world),
    `body_b`, `name_b` (a link, "ground" or a box's name). `position` (3,) world; `frame` (3, 3):
    columns t1, t2, n (n from B to A); `distance`: signed, negative when penetrating; `mu`,
    `restitution`, `threshold`, `erp`, `slop`: its material pair and error feedback; `key`: its
    identity across steps (the warm start). After the step: `impulse` (3,) on A in the world
    frame (B receives the opposite), `impulse_contact` (t1, t2, n), and `velocity_contact`
    (t1, t2, n), A's velocity relative to B at the point at the step's end, with the normal
    `target` it had to reach. The arrays are read-only views of the set's (copy to change)."""

    __slots__ = ("_set", "_i")

    def __init__(self, contact_set: "ContactSet", i: int):
        self._set, self._i = contact_set, i

    system_a = property(lambda self: self._set.meta[self._i][0])
    body_a = property(lambda self: self._set.meta[self._i][1])
    link_a = property(lambda self: self._set.meta[self._i][2])
    system_b = property(lambda self: self._set.meta[self._i][3])
    body_b = property(lambda self: self._set.meta[self._i][4])
    name_b = property(lambda self: self._set.meta[self._i][5])
    key = property(lambda self: self._set.keys[self._i])
    position = property(lambda self: _read_only(self._set.points[self._i]))
    frame = property(lambda self: _read_only(self._set.frames[self._i]))
    normal = property(lambda self: _read_only(self._set.frames[self._i, :, 2]))
    distance = property(lambda self: float(self._set.distance[self._i]))
    mu = property(lambda self: float(self._set.params[self._i, 0]))
    restitution = property(lambda self: float(self._set.params[self._i, 1]))
    threshold = property(lambda self: float(self._set.params[self._i, 2]))
    erp = property(lambda self: float(self._set.params[self._i, 3]))
    slop = property(lambda self: float(self._set.params[self._i, 4]))
    impulse = property(lambda self: _read_only(self._set.impulse[self._i]))
    impulse_contact = property(lambda self: _read_only(self._set.impulse_contact[self._i]))
    velocity_contact = property(lambda self: _read_only(self._set.velocity_contact[self._i]))
    target = property(lambda self: float(self._set.target[self._i]))

    @property
    def penetration(self) -> float:
        return max(0.0, -self.distance)

    def target_normal_velocity(self, dt: float, vn_now: float) -> float:
        d = self.distance
        if d > 0:
            target = -d / dt
        else:
            target = self.erp * max(0.0, -d - self.slop) / dt
        if self.restitution > 0 and vn_now < -self.threshold and d <= -vn_now * dt:
            target = max(target, -self.restitution * vn_now)
        return target

    def touches(self, system) -> bool:
        return self.system_a is system or self.system_b is system

    def loads_on(self, system, dt: float) -> list:
        """The contact force (impulse / dt) as point loads on `system`'s bodies, for inverse
        dynamics."""
        from raisimcli.physics.loads import PointLoad
        out = []
        if self.system_a is system:
            out.append(PointLoad(self.link_a, self.impulse / dt, None, False,
                                 world_point=self.position))
        if self.system_b is system:
            out.append(PointLoad(self.name_b, -self.impulse / dt, None, False,
                                 world_point=self.position))
        return out

    def __repr__(self) -> str:
        return (f"Contact({self.link_a!r} on {self.name_b!r}, position={self.position}, "
                f"distance={self.distance:.3g}, impulse={self.impulse})")


class ContactLoads(NamedTuple):
    """The contact forces on one system's bodies, as point loads at world points, in contact
    order (inverse dynamics reads them): `links` (n,) names, `bodies` (n,) their Pinocchio joint
    ids, `points` (n, 3) world, `vectors` (n, 3) world forces, N."""

    links: tuple
    bodies: np.ndarray
    points: np.ndarray
    vectors: np.ndarray

    def as_point_loads(self) -> list:
        """The same loads one object each (ArticulatedSystem's point loads)."""
        from raisimcli.physics.loads import PointLoad
        return [PointLoad(link, self.vectors[k], None, False, world_point=self.points[k])
                for k, link in enumerate(self.links)]


class ContactSet(Sequence):
    """The contacts of a step as arrays, one row per contact (what the compiled loops of the
    impulse problem read and write), read as a sequence of :class:`Contact` views.

    `meta`: (system_a, body_a, link_a, system_b, body_b, name_b) per contact; `keys`; `points`
    (n, 3); `frames` (n, 3, 3); `distance` (n,); `params` (n, 5): mu, restitution, threshold, erp,
    slop; the step's results `impulse`, `impulse_contact`, `velocity_contact` (n, 3) and `target`
    (n,). `alone`: the system when every contact is between one system's body and the static
    world (the common case: its rows need no per-contact bookkeeping), else None. `bodies_a`
    (n,): each contact's body A (made from `meta` when not given)."""

    def __init__(self, meta: list, keys: list, points, frames, distance, params,
                 alone: object | None = None, bodies_a: np.ndarray | None = None,
                 results: bool = True):
        self.meta, self.keys = meta, keys
        self.points, self.frames, self.distance, self.params = points, frames, distance, params
        n = len(meta)
        if results:  # (span() gives views of another set's instead)
            self.impulse, self.impulse_contact = np.zeros((n, 3)), np.zeros((n, 3))
            self.velocity_contact, self.target = np.zeros((n, 3)), np.zeros(n)
        if alone is None and n:
            first = meta[0][0]
            if all(m[0] is first and m[3] is None for m in meta):
                alone = first
        self.alone = alone
        self.bodies_a = np.array([m[1] for m in meta], dtype=np.int64) if bodies_a is None \
            else bodies_a

    @classmethod
    def joined(cls, parts: list) -> "ContactSet":
        """The contacts of `parts` (sets, results included) one after the other in one set: what
        detection's one set of them all would be after the step. Its arrays are joined when
        first read (a world stepped robot by robot, whose set nobody reads, never joins them)."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return EMPTY_CONTACTS
        if len(parts) == 1:
            return parts[0]
        return _JoinedContacts(parts)

    @classmethod
    def empty(cls) -> "ContactSet":
        return cls([], [], np.zeros((0, 3)), np.zeros((0, 3, 3)), np.zeros(0), np.zeros((0, 5)))

    def __len__(self) -> int:
        return len(self.meta)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [Contact(self, k) for k in range(*i.indices(len(self.meta)))]
        n = len(self.meta)
        if not -n <= i < n:
            raise IndexError(f"contact {i} of {n}")
        return Contact(self, i % n)

    def log_key(self):
        """A hashable key of which bodies the contacts join, contact by contact: sets with equal
        keys have equal `meta` (a log names the bodies once per key)."""
        return tuple(self.meta)

    def log_arrays(self) -> tuple:
        """What a log row reads of the contacts: (points, normals, impulse, impulse_contact,
        distance), the normals the frames' third columns (views; read them, never write them)."""
        return self.points, self.frames[:, :, 2], self.impulse, self.impulse_contact, \
            self.distance

    def log_block(self):
        """None, or the contacts' log arrays packed as one array of the step's results that no
        later step writes, with the function that unpacks them: (block, unpack), where
        unpack(blocks, n) gives log_arrays' five arrays (copies) of several such steps' blocks
        of n contacts each stacked as rows, the steps one after the other (PackedContacts)."""
        return None

    def touches(self, system) -> bool:
        """Whether any contact involves `system`."""
        if self.alone is not None:
            return self.alone is system
        return any(m[0] is system or m[3] is system for m in self.meta)

    def loads_on(self, system, dt: float) -> ContactLoads | None:
        """The contact forces (impulse / dt) on `system`'s bodies, per contact its side A then
        its side B (which receives the opposite), as Contact.loads_on lists them; None when no
        contact touches it."""
        if self.alone is system:
            return ContactLoads(tuple(m[2] for m in self.meta), self.bodies_a, self.points,
                                self.impulse / dt)
        links, bodies, rows, signs = [], [], [], []
        for i, (sa, ba, la, sb, bb, nb) in enumerate(self.meta):
            if sa is system:
                links.append(la), bodies.append(ba), rows.append(i), signs.append(1.0)
            if sb is system:
                links.append(nb), bodies.append(bb), rows.append(i), signs.append(-1.0)
        if not rows:
            return None
        vectors = self.impulse[rows] * np.array(signs)[:, None] / dt  # -x / dt: exact sign
        return ContactLoads(tuple(links), np.array(bodies, dtype=np.int64), self.points[rows],
                            vectors)

    def take(self, indices) -> "ContactSet":
        """The contacts `indices` (in that order) as a set of their own (an island's)."""
        idx = np.asarray(indices, dtype=np.int64)
        return ContactSet([self.meta[i] for i in indices], [self.keys[i] for i in indices],
                          self.points[idx], self.frames[idx], self.distance[idx],
                          self.params[idx])

    def span(self, first: int, stop: int) -> "ContactSet":
        """The contacts first, ..., stop - 1 as a set of their own whose arrays are views of
        this set's, results included: what a step writes into it is written here."""
        part = ContactSet(self.meta[first:stop], self.keys[first:stop], self.points[first:stop],
                          self.frames[first:stop], self.distance[first:stop],
                          self.params[first:stop], bodies_a=self.bodies_a[first:stop],
                          results=False)
        part.impulse, part.impulse_contact = self.impulse[first:stop], \
            self.impulse_contact[first:stop]
        part.velocity_contact, part.target = self.velocity_contact[first:stop], \
            self.target[first:stop]
        return part

    def put_results(self, indices, part: "ContactSet") -> None:
        """The step's results of `part` (made by take(indices)) into this set."""
        idx = np.asarray(indices, dtype=np.int64)
        for name in ("impulse", "impulse_contact", "velocity_contact", "target"):
            getattr(self, name)[idx] = getattr(part, name)


class _JoinedContacts(ContactSet):
    """ContactSet.joined's set of several parts: the attributes of a ContactSet, made from the
    parts' on the first read of any of them (each part's rows in order, its results as the step
    wrote them)."""

    _JOINED = frozenset(("meta", "keys", "points", "frames", "distance", "params", "bodies_a",
                         "impulse", "impulse_contact", "velocity_contact", "target", "alone"))

    def __init__(self, parts: list):  # (no ContactSet.__init__: __getattr__ makes its fields)
        self._parts = parts
        self._n = sum(len(p) for p in parts)

    def __getattr__(self, name):
        if name not in self._JOINED or "_parts" not in self.__dict__:
            raise AttributeError(name)
        parts = self._parts
        ContactSet.__init__(
            self, [m for p in parts for m in p.meta], [k for p in parts for k in p.keys],
            *(np.concatenate([getattr(p, f) for p in parts])
              for f in ("points", "frames", "distance", "params")),
            bodies_a=np.concatenate([p.bodies_a for p in parts]), results=False)
        for f in ("impulse", "impulse_contact", "velocity_contact", "target"):
            setattr(self, f, np.concatenate([getattr(p, f) for p in parts]))
        return getattr(self, name)

    def __len__(self) -> int:
        return self._n


EMPTY_CONTACTS = ContactSet.empty()
