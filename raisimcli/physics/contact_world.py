"""The contact world: the static objects (a ground plane, boxes), the materials of each pair, the
robots' shapes, and detection, which lists the contacts of the current state as a ContactSet
(physics/contact_set.py): the broad phase, the compiled ground queries, and coal's narrow phase
and contact patches for the rest (docs/contacts.md).
"""

from __future__ import annotations

import math

import coal
import numpy as np

from raisimcli.errors import StateError
from raisimcli.jit import kernel
from raisimcli.physics.broad_phase import boxes_apart, sweep_and_prune
from raisimcli.physics.contact_set import DEFAULT_ERP, DEFAULT_MARGIN, \
    DEFAULT_RESTITUTION_THRESHOLD, DEFAULT_SLOP, EMPTY_CONTACTS, ContactSet, MaterialPair, \
    contact_params
from raisimcli.physics.ground import MAX_PATCH_POINTS, _kept_index
from raisimcli.physics.robot_shapes import RobotShapes
from raisimcli.physics.shapes import Shape, make_geometry, robot_shapes, transform

# m: a shape whose lowest point is this much above the ground's margin is not given to coal
# (a bound on the rounding of the lowest point, so that no contact coal would report is missed)
_GROUND_SLACK = 1e-9

# shapes with flat faces: their contacts with a face are patches of several points
_PATCH_KINDS = ("box", "cylinder", "mesh")


def _settle_coal() -> None:
    """Fix the state that coal (3.0) keeps across queries, the same in every process.

    coal's support function of a box keeps a static, set by the first query of the process
    that reaches it: `static const CoalScalar inflate = (dir.array() == 0).any() ? 1 + 1e-10
    : 1.;` (include/coal/narrowphase/support_functions.hxx, getShapeSupport(const Box*, ...)). A
    box resting flat on the ground then touches at -1e-11 m in a process whose first box query
    was along an axis, and at 0 in one whose first was tilted: the same scenario gave other
    bits after another scenario ran in the same process (a sweep's worker, a library user, the
    test suite). Queries along the axes at import make it 1 + 1e-10 in every process (what a
    fresh process running a box resting flat gets), for the halfspace's built-in algorithm, GJK's
    shapes and the contact patches."""
    request = coal.CollisionRequest()
    request.num_max_contacts = 8
    patch_request = coal.ContactPatchRequest()
    box, up = coal.Box(1.0, 1.0, 1.0), coal.Transform3s()
    up.setTransform(np.eye(3), np.array([0.0, 0.0, 0.4]))  # overlapping the origin's shapes
    for other in (coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0), coal.Box(1.0, 1.0, 1.0),
                  coal.Sphere(0.5), coal.Capsule(0.5, 1.0), coal.Cylinder(0.5, 1.0)):
        for a, b in ((box, other), (other, box)):
            result = coal.CollisionResult()
            if coal.collide(a, up, b, coal.Transform3s(), request, result):
                coal.computeContactPatch(a, up, b, coal.Transform3s(), result, patch_request,
                                         coal.ContactPatchResult(patch_request))
            coal.distance(a, up, b, coal.Transform3s(), coal.DistanceRequest(),
                          coal.DistanceResult())


_settle_coal()


@kernel
def _unit_frame(n_raw, out):
    """out (3, 3): columns t1, t2, n around the unit normal n = n_raw / |n_raw|, right-handed;
    t1 is the unit part of x (or of y when n is near x) orthogonal to n. Sums in index order,
    on scalars (no array inside: each costs numba compile time)."""
    x, y, z = n_raw[0], n_raw[1], n_raw[2]
    length = math.sqrt(0.0 + x * x + y * y + z * z)
    n0, n1, n2 = x / length, y / length, z / length
    a0, a1 = (1.0, 0.0) if abs(n0) < 0.9 else (0.0, 1.0)
    d = 0.0 + a0 * n0 + a1 * n1 + 0.0 * n2
    t0, t1, t2 = a0 - d * n0, a1 - d * n1, 0.0 - d * n2
    length = math.sqrt(0.0 + t0 * t0 + t1 * t1 + t2 * t2)
    t0, t1, t2 = t0 / length, t1 / length, t2 / length
    out[0, 0], out[1, 0], out[2, 0] = t0, t1, t2
    out[0, 1] = n1 * t2 - n2 * t1
    out[1, 1] = n2 * t0 - n0 * t2
    out[2, 1] = n0 * t1 - n1 * t0
    out[0, 2], out[1, 2], out[2, 2] = n0, n1, n2


@kernel
def _unit_frames(normals, out):
    """out[c] = the frame of _unit_frame around normals[c], for each contact."""
    for c in range(normals.shape[0]):
        _unit_frame(normals[c], out[c])


def contact_frame(n) -> np.ndarray:
    """(3, 3) columns t1, t2, n: a right-handed frame around the direction n (normalised)."""
    out = np.empty((3, 3))
    _unit_frame(np.ascontiguousarray(n, dtype=np.float64), out)
    return out


def reduce_patch(points, normal) -> list:
    """At most four points of a contact patch (a convex polygon in the plane of `normal`), in
    their order: all of them when there are four or fewer (a box's face), else the
    quadrilateral that spans it: the first corner p0, the corner p1 farthest from it, and on
    each side of the line p0 p1 the corner farthest from it. The quadrilateral carries every
    wrench whose centre of pressure lies inside it (for a regular polygon at least 2/pi of its
    area, reaching across its widest extent); the other corners would add rows (a 10-corner foot
    sole: 30 rows for a 6-dimensional wrench) that slow the impulse solver's convergence.
    `points`: (k, 3), an array or a list of 3-vectors; the kept ones are its rows."""
    if len(points) <= MAX_PATCH_POINTS:
        return points
    keep = np.empty(MAX_PATCH_POINTS, dtype=np.int64)
    k = _kept_index(np.asarray(points, dtype=np.float64), np.asarray(normal, dtype=np.float64),
                    np.empty(3, dtype=np.int64), keep)
    return [points[i] for i in keep[:k].tolist()]


class ContactWorld:
    """The static objects, the materials, and the robots' shapes; `detect()` lists the contacts of
    the current state."""

    def __init__(self):
        self.static: list[tuple[str, Shape]] = []
        self.ground_height: float | None = None
        self.ground_material = "default"
        self.default_pair = MaterialPair()
        self.pairs: dict[frozenset, MaterialPair] = {}
        self.margin = DEFAULT_MARGIN
        self.erp = DEFAULT_ERP
        self.slop = DEFAULT_SLOP
        self.robots: list[RobotShapes] = []
        self._request = coal.CollisionRequest()
        self._request.num_max_contacts = 8
        self._patch_request = coal.ContactPatchRequest()
        self._patch_result = coal.ContactPatchResult(self._patch_request)
        # _kept_index's scratch and answer
        self._corners, self._kept = np.empty(3, dtype=np.int64), np.empty(4, dtype=np.int64)
        self._result = coal.CollisionResult()  # one result, cleared before each query
        self._broad = None  # see _broad_phase_entries
        self._pairs_version = 0  # set_material_pair's changes, for _ground_params
        self._robots_version = 0  # add_robot's and remove_robot's changes, for structure()
        # id(RobotShapes) -> (it, its slots, meta, keys): _answered_on_ground's last lists
        self._last_answered = {}

    # --- set-up ---------------------------------------------------------------------------------
    def set_ground(self, height: float = 0.0, material: str = "default") -> None:
        self.ground_height = float(height)
        self.ground_material = material
        self._ground = coal.Halfspace(np.array([0.0, 0.0, 1.0]), self.ground_height)
        self._identity = coal.Transform3s()

    def add_box(self, name: str, size, pose: np.ndarray, material: str = "default") -> None:
        geom, radius = make_geometry("box", size)
        self.static.append((name, Shape(geom, "box", name, -1, np.array(pose, dtype=float),
                                        radius, material)))

    def set_material_pair(self, a: str, b: str, friction: float, restitution: float = 0.0,
                          threshold: float = DEFAULT_RESTITUTION_THRESHOLD) -> None:
        self.pairs[frozenset((a, b))] = MaterialPair(friction, restitution, threshold)
        self._pairs_version += 1

    def material_pair(self, a: str, b: str) -> MaterialPair:
        return self.pairs.get(frozenset((a, b)), self.default_pair)

    def add_robot(self, system, materials: dict[str, str] | None = None,
                  self_collision: bool = False, excluded_pairs=()) -> None:
        """Register a robot's shapes. Self-collision (opt-in) skips bodies joined by a joint and
        the `excluded_pairs` of link names."""
        shapes = robot_shapes(system.model, materials)
        excluded = {frozenset(p) for p in excluded_pairs}
        links = {link.name: link for link in system.model.links}
        for j in system.model.joints:  # adjacent bodies never collide
            if j.parent is not None and j.parent in links:
                excluded.add(frozenset((links[j.parent].body, links[j.child].body)))
        self.robots.append(RobotShapes(system, shapes, self_collision, excluded))
        self._robots_version += 1

    def overlaps(self) -> list[tuple]:
        """The pairs of robots' links that collide (two robots, or one robot's own with
        self-collision on and the pair not excluded) and whose shapes overlap at the current
        state: (system, link, other system, its link, the deepest overlap in m), deepest first;
        a robot before the robots added after it, and one robot's own links in name order.

        A contact cannot part two shapes that start inside each other: its target pushes them
        apart at once, and where the robots can hardly move them apart, or several such points
        pull against each other, the impulses grow without bound. Of the 35 robots of
        example-robot-data standing with self-collision, 14 diverged in their first 0.11 s, and
        none once these pairs were left out (Kinova's also needed a pair that only touches,
        5e-15 m in, which diverged at its third step); two ANYmal C started 0.2 and 0.6 m apart
        diverged at 0.15 and 0.055 s. Real robots' collision meshes overlap at rest (neighbours
        of neighbours: a thigh's hull and the base's), so such pairs of one robot are usually
        left out (self-collision's `excluded_pairs`)."""
        order = {id(rs.system): k for k, rs in enumerate(self.robots)}
        deepest: dict[tuple, float] = {}
        found = self.detect()
        for m, d in zip(found.meta, found.distance.tolist()):
            if m[3] is None or not d < 0.0:  # (the ground, a static box; apart)
                continue
            a, b = (m[0], m[2]), (m[3], m[5])
            if (order[id(a[0])], a[1]) > (order[id(b[0])], b[1]):
                a, b = b, a
            key = (*a, *b)
            deepest[key] = max(deepest.get(key, 0.0), -d)
        return sorted(((*k, d) for k, d in deepest.items()),
                      key=lambda x: (-x[4], order[id(x[0])], x[1], order[id(x[2])], x[3]))

    def self_overlaps(self, system) -> list[tuple[str, str, float]]:
        """overlaps() of `system`'s own links: (link, link, the deepest overlap in m)."""
        return [(la, lb, d) for sa, la, sb, lb, d in self.overlaps()
                if sa is system and sb is system]

    def remove_robot(self, system) -> None:
        self.robots = [r for r in self.robots if r.system is not system]
        self._robots_version += 1

    def structure(self) -> tuple:
        """What detection depends on besides the robots' states: the ground, the static boxes,
        the robots' shapes (added, removed, configured again), the materials, the margin and the
        contact parameters (World.integrate2 compares it with integrate1's)."""
        return (self.ground_height, self.ground_material, len(self.static), self._robots_version,
                self._pairs_version, id(self.default_pair), self.margin, self.erp, self.slop)

    @property
    def active(self) -> bool:
        return bool(self.robots) and (self.ground_height is not None or bool(self.static) or
                                      len(self.robots) > 1 or
                                      any(r.self_collision for r in self.robots))

    # --- detection ------------------------------------------------------------------------------
    def detect(self) -> ContactSet:
        """Contacts of the current state (within the margin)."""
        self._request.security_margin = self.margin
        near = None  # (n, others, ground params) of the one robot's update_near_ground
        if self.ground_height is not None and len(self.robots) == 1 and not self.static and \
                not self.robots[0].self_collision:
            rs = self.robots[0]
            h, margin = self.ground_height, self.margin
            params = self._ground_params(rs)
            near = (*rs.update_near_ground(h, margin, h + margin, _GROUND_SLACK, params), params)
            if not near[1]:  # no shape near the ground for coal, or none near it
                return self._answered_on_ground(rs, near[0])
        contacts = _Found(self.erp, self.slop)
        if self.ground_height is None:
            for rs in self.robots:
                rs.update()
        else:
            h, margin = self.ground_height, self.margin
            for rs in self.robots:
                if near is not None:
                    n, others, params = near
                else:  # (the ground params: of every shape's material)
                    params = self._ground_params(rs)
                    n, others = rs.update_near_ground(h, margin, h + margin, _GROUND_SLACK,
                                                      params)
                if not n:
                    continue
                if not others:  # no entry for coal: the contacts as they are
                    contacts.add_ground_entries(rs, 0, n)
                    continue
                answered = 0  # the first of the answered entries not added yet
                for e in np.flatnonzero(np.isnan(rs.entry_distance[:n])).tolist():
                    k = int(rs.entry_shape[e])  # coal's, after the answered entries before it
                    contacts.add_ground_entries(rs, answered, e)
                    self._ground_contacts(rs.system, rs.shapes[k], rs.transform(k),
                                          params[rs.material_index[k]], contacts)
                    answered = e + 1
                contacts.add_ground_entries(rs, answered, n)
        # pairs of shapes: only when two of them can touch (two robots, a static box, or a robot
        # with self-collision); one robot alone on the ground has none to test
        pairs_possible = len(self.robots) > 1 or bool(self.static) or \
            any(r.self_collision for r in self.robots)
        if not pairs_possible:  # then every contact is the one robot's with the ground
            return contacts.contact_set(self.robots[0].system if self.robots else None)
        owners, group, self_pairs = self._broad_phase_entries()
        centers = np.concatenate([rs.poses[:, :3, 3] for rs in self.robots] +
                                 [self._static_centers])
        radii = np.concatenate([rs.radii for rs in self.robots] + [self._static_radii])
        for i, j in sweep_and_prune(centers, radii, self.margin, group, self_pairs).tolist():
            (ra, a, ka), (rb, b, kb) = owners[i], owners[j]
            if ra is None:  # static never first (two static shapes are no pair)
                (ra, a, ka), (rb, b, kb) = (rb, b, kb), (ra, a, ka)
            if rb is ra and (a.body == b.body or frozenset((a.body, b.body)) in ra.excluded or
                             frozenset((a.link, b.link)) in ra.excluded):
                continue  # self-collision (the only same-robot pairs): not these bodies
            self._pair_contacts(ra.system, a, ra.transform(ka),
                                rb.system if rb is not None else None, b,
                                rb.transform(kb) if rb is not None else transform(b.placement),
                                contacts)
        return contacts.contact_set()

    def _broad_phase_entries(self) -> tuple[list, np.ndarray, np.ndarray]:
        """(owners, group, self_pairs) of the broad phase's entries, every robot's shapes then
        the static ones: owners[e] = (RobotShapes or None, shape, its index in the robot's
        shapes), group[e] the robot's index (-1: static), self_pairs[r] robot r's
        self-collision. Made again when the robots or the static shapes change (it holds the
        RobotShapes, so their ids in its key stay theirs)."""
        key = (tuple((id(rs), rs.self_collision, len(rs.shapes)) for rs in self.robots),
               len(self.static))
        if self._broad is None or self._broad[0] != key:
            owners = [(rs, shape, k) for rs in self.robots for k, shape in enumerate(rs.shapes)] \
                + [(None, shape, -1) for _, shape in self.static]
            group = np.array([r for r, rs in enumerate(self.robots) for _ in rs.shapes] +
                             [-1] * len(self.static), dtype=np.int64)
            self_pairs = np.array([rs.self_collision for rs in self.robots] + [False],
                                  dtype=np.bool_)
            self._static_centers = np.array([shape.placement[:3, 3] for _, shape in self.static],
                                            dtype=np.float64).reshape(-1, 3)
            self._static_radii = np.array([shape.radius for _, shape in self.static],
                                          dtype=np.float64)
            self._broad = (key, owners, group, self_pairs)
        return self._broad[1:]

    def _collide(self, ga, Ta, gb, Tb, patches: bool) -> tuple[list, list]:
        """coal's contacts of shape a (its geometry ga at the coal transform Ta) with shape b, as
        (patches, points), one of them empty: with `patches` (two shapes with faces), each
        contact patch's (points (k, 3): the corners reduce_patch keeps, normal (3,), depth);
        else, and when coal finds no patch, each contact's (point, normal, depth). Normals
        point from b to a."""
        res = self._result
        res.clear()
        if not coal.collide(ga, Ta, gb, Tb, self._request, res):
            return [], []
        if patches:
            # (one result, reused: computeContactPatch clears it first)
            pres = self._patch_result
            coal.computeContactPatch(ga, Ta, gb, Tb, res, self._patch_request, pres)
            found = []
            for k in range(pres.numContactPatches()):
                patch = pres.getContactPatch(k)
                normal = -np.asarray(patch.getNormal())  # coal: from shape 1 to 2; ours: B to A
                point = patch.getPoint  # (each a new array: np.array stacks copies of them, 3.8
                # us for Solo12's ten points against 5.1 written row by row into np.empty)
                points = np.array([point(i) for i in range(patch.size())]).reshape(-1, 3)
                if points.shape[0] > MAX_PATCH_POINTS:  # reduce_patch's corners
                    kept = self._kept
                    points = points[kept[:_kept_index(points, normal, self._corners, kept)]]
                if points.shape[0]:
                    found.append((points, normal, float(patch.penetration_depth)))
            if found:
                return found, []
        # (res.getContact(i), not iteration over res.getContacts(), which is slower; pos and
        # normal are copies, they outlive the next query)
        contacts = [res.getContact(i) for i in range(res.numContacts())]
        if not patches:  # a sphere or a capsule touches in one point
            return [], [(c.pos, -c.normal, c.penetration_depth) for c in contacts]
        return [], [(np.asarray(c.pos), -np.asarray(c.normal), float(c.penetration_depth))
                    for c in contacts]

    def _ground_contacts(self, system, shape, placement, params, contacts: "_Found") -> None:
        """The contacts of `shape` (at the coal.Transform3s `placement`) with the ground;
        `params`: its material's row of _ground_params."""
        found, points = self._collide(shape.geometry, placement, self._ground, self._identity,
                                      shape.kind in _PATCH_KINDS)
        if not (found or points):
            return
        k = 0
        for ps, n, d in found:
            keys = [(system.name, shape.index, "ground", k + i) for i in range(ps.shape[0])]
            contacts.add_patch(system, shape, None, -1, "ground", ps, n, d, params, keys)
            k += ps.shape[0]
        for k, (p, n, d) in enumerate(points):
            contacts.add(system, shape, None, -1, "ground", p, n, d, params,
                         (system.name, shape.index, "ground", k))

    def _answered_on_ground(self, rs: RobotShapes, n: int) -> ContactSet:
        """The contacts of a robot alone on the ground whose shapes near it are all answered
        without coal (spheres, capsules, boxes, cylinders, meshes): entries [0, n) of its
        update_near_ground, as _Found's add_ground_entries and contact_set make them (the same
        set), without their lists and blocks. The lists of the contacts' meta and keys are
        those of the last call when the same slots touch (nobody writes into them)."""
        if not n:
            return EMPTY_CONTACTS
        slots = rs.entry_slot[:n].tobytes()
        last = self._last_answered.get(id(rs))
        if last is None or last[0] is not rs or last[1] != slots:
            if len(self._last_answered) > len(self.robots):  # (robots removed since)
                self._last_answered.clear()
            ks = rs.entry_slot[:n].tolist()
            last = self._last_answered[id(rs)] = (rs, slots, [rs.ground_meta[k] for k in ks],
                                                  [rs.ground_key[k] for k in ks])
        frames = np.empty((n, 3, 3))
        frames[:] = _UP_FRAME
        return ContactSet(last[2], last[3], rs.entry_point[:n].copy(), frames,
                          rs.entry_distance[:n].copy(), rs.entry_params[:n].copy(), rs.system,
                          bodies_a=rs.entry_bodies[:n].copy())

    def detect_apart(self) -> list | None:
        """detect() for several robots on the ground that touch nothing but it, as one contact
        set per robot (in the order of `robots`; joined, ContactSet.joined, they are detect()'s
        set): when there is no static box and no self-collision, every shape near the ground is
        answered without coal (a sphere, capsule, box, cylinder or mesh), and no two robots'
        shapes are within the margin (the robots' boxes of their shapes' boxes are apart, or
        else the broad phase of the shapes finds no pair). None otherwise (then call detect())."""
        if self.ground_height is None or self.static or len(self.robots) < 2 or \
                any(rs.self_collision for rs in self.robots):
            return None
        self._request.security_margin = self.margin
        h, margin = self.ground_height, self.margin
        counts = []
        bounds = np.empty((len(self.robots), 6))  # each robot's box of its shapes' boxes
        for k, rs in enumerate(self.robots):
            n, others = rs.update_near_ground(h, margin, h + margin, _GROUND_SLACK,
                                              self._ground_params(rs), bounds, k)
            if others:
                return None
            counts.append(n)
        if not self.robots_apart(bounds):
            return None
        return [self._answered_on_ground(rs, n) for rs, n in zip(self.robots, counts)]

    def robots_apart(self, bounds: np.ndarray) -> bool:
        """Whether no two robots' shapes are within the margin, from each robot's box of its
        shapes' boxes (`bounds`, a row per robot in the order of `robots`) and, when two boxes
        meet, the broad phase of the shapes at their last poses."""
        if boxes_apart(bounds):
            return True
        owners, group, self_pairs = self._broad_phase_entries()
        centers = np.concatenate([rs.poses[:, :3, 3] for rs in self.robots] +
                                 [self._static_centers])
        radii = np.concatenate([rs.radii for rs in self.robots] + [self._static_radii])
        return not len(sweep_and_prune(centers, radii, self.margin, group, self_pairs))

    def ground_contact_params(self, rs: RobotShapes) -> np.ndarray:
        """_ground_params: the contact params of each of the robot's materials with the ground
        (read them, never write them)."""
        return self._ground_params(rs)

    def _ground_params(self, rs: RobotShapes) -> np.ndarray:
        """(len(rs.materials), 5): the contact params (friction, restitution, threshold, erp,
        slop) of each of the robot's materials with the ground, kept until one of them changes."""
        key = (self.ground_material, self.default_pair, self._pairs_version, self.erp,
               self.slop)
        if rs.ground_params is None or rs.ground_params[0] != key:
            table = np.empty((len(rs.materials), 5))
            for m, material in enumerate(rs.materials):
                table[m] = contact_params(self.material_pair(material, self.ground_material),
                                          self.erp, self.slop)
            rs.ground_params = (key, table)
        return rs.ground_params[1]

    def _pair_contacts(self, sa, a, Ta, sb, b, Tb, contacts: "_Found") -> None:
        """The contacts of shape a (of system sa, at the coal transform Ta) with shape b."""
        found, points = self._collide(a.geometry, Ta, b.geometry, Tb,
                                      a.kind in _PATCH_KINDS and b.kind in _PATCH_KINDS)
        if not (found or points):
            return
        params = contacts.params_of(self.material_pair(a.material, b.material))
        name_b, name_sb = b.link, sb.name if sb is not None else None
        k = 0
        for ps, n, d in found:
            if not (n[0] * n[0] + n[1] * n[1] + n[2] * n[2] > 0.0):
                raise _no_direction(sa, a, sb, b)
            keys = [(sa.name, a.index, name_sb, b.index, k + i) for i in range(ps.shape[0])]
            contacts.add_patch(sa, a, sb, b.body, name_b, ps, n, d, params, keys)
            k += ps.shape[0]
        for k, (p, n, d) in enumerate(points):
            if not (n[0] * n[0] + n[1] * n[1] + n[2] * n[2] > 0.0):
                raise _no_direction(sa, a, sb, b)
            contacts.add(sa, a, sb, b.body, name_b, p, n, d, params,
                         (sa.name, a.index, name_sb, b.index, k))


def _no_direction(sa, a, sb, b) -> StateError:
    """The error of a contact to which coal gives no normal: two shapes with the same centre."""
    def name(system, shape):
        return f"link {shape.link!r} of robot {system.name!r}" if system is not None else \
            f"the static box {shape.link!r}"
    return StateError(f"{name(sa, a)} and {name(sb, b)} overlap with the same centre: their "
                      "contact has no direction. Robots of one URDF start at the same place: "
                      "place them apart (a floating base: its initial root coordinates; a fixed "
                      "base: the origin of its URDF's joint to the world)")


_UP = (0.0, 0.0, 1.0)  # the ground's normal


class _Found:
    """The contacts found by one detection, made a ContactSet at its end, in the order they
    come: one by one (coal's points), a contact patch's kept corners at once, or a robot's
    spheres, capsules, boxes, cylinders and meshes on the ground as arrays (no Python object per
    contact). Their points, normals, distances, params and bodies are written into arrays that
    grow as needed, and the set gets copies of the rows filled. The frames of normals other than
    the ground's are made in one compiled loop."""

    def __init__(self, erp: float, slop: float, capacity: int = 32):
        self.erp, self.slop = erp, slop
        self.meta, self.keys = [], []
        self.n = 0  # rows filled
        self._points, self._normals = np.empty((capacity, 3)), np.empty((capacity, 3))
        self._distance, self._params = np.empty(capacity), np.empty((capacity, 5))
        self._bodies = np.empty(capacity, dtype=np.int64)
        self._all_up = True  # every normal so far the ground's +z: one frame for all

    def _rows(self, k: int) -> int:
        """Room for k more rows (the arrays doubled when full); returns the first."""
        i = self.n
        if i + k > self._distance.shape[0]:
            capacity = max(2 * self._distance.shape[0], i + k)
            for name in ("_points", "_normals", "_distance", "_params", "_bodies"):
                old = getattr(self, name)
                grown = np.empty((capacity,) + old.shape[1:], dtype=old.dtype)
                grown[:i] = old[:i]
                setattr(self, name, grown)
        self.n = i + k
        return i

    def params_of(self, pair) -> tuple:
        """contact_params of a material pair with this detection's erp and slop: what add and
        add_patch take (for the ground, a row of ContactWorld._ground_params: the same numbers)."""
        return contact_params(pair, self.erp, self.slop)

    def add(self, system, shape, system_b, body_b, name_b, p, n, d, params, key) -> None:
        self.meta.append((system, shape.body, shape.link, system_b, body_b, name_b))
        self.keys.append(key)
        i = self._rows(1)
        self._points[i], self._normals[i], self._distance[i] = p, n, d
        self._params[i], self._bodies[i] = params, shape.body
        self._all_up = False

    def add_patch(self, system, shape, system_b, body_b, name_b, points, normal, depth, params,
                  keys) -> None:
        """The kept corners `points` (k, 3) of one contact patch, each a contact with the
        patch's `normal` and `depth` and the contact `params` (params_of): what add would make
        of them one by one."""
        k = points.shape[0]
        self.meta.extend([(system, shape.body, shape.link, system_b, body_b, name_b)] * k)
        self.keys.extend(keys)
        i = self._rows(k)
        self._points[i:i + k], self._normals[i:i + k], self._distance[i:i + k] = \
            points, normal, depth
        self._params[i:i + k], self._bodies[i:i + k] = params, shape.body
        self._all_up = False

    def add_ground_entries(self, rs: RobotShapes, first: int, stop: int) -> None:
        """Entries first, ..., stop - 1 of rs.update_near_ground, none of them coal's (each a
        contact with the ground, normal +z, with its params and body)."""
        if stop <= first:
            return
        slots = rs.entry_slot[first:stop].tolist()
        self.meta.extend([rs.ground_meta[k] for k in slots])
        self.keys.extend([rs.ground_key[k] for k in slots])
        i = self._rows(stop - first)
        j = self.n
        self._points[i:j], self._normals[i:j] = rs.entry_point[first:stop], _UP
        self._distance[i:j] = rs.entry_distance[first:stop]
        self._params[i:j] = rs.entry_params[first:stop]
        self._bodies[i:j] = rs.entry_bodies[first:stop]

    def contact_set(self, alone=None) -> ContactSet:
        """The contacts found, in order; `alone`: the system when every contact is between one
        system's body and the static world, if the caller knows it (else ContactSet finds
        out)."""
        n = self.n
        if not n:
            return EMPTY_CONTACTS
        frames = np.empty((n, 3, 3))
        if self._all_up:  # answered on the ground: one frame
            frames[:] = _UP_FRAME
        else:
            _unit_frames(self._normals[:n], frames)
        return ContactSet(self.meta, self.keys, self._points[:n].copy(), frames,
                          self._distance[:n].copy(), self._params[:n].copy(), alone,
                          bodies_a=self._bodies[:n].copy())


_UP_FRAME = contact_frame(np.array(_UP))
