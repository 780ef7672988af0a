"""A robot's collision shapes packed for the compiled ground queries and the broad phase: their
bodies, placements, kinds and extents, the meshes' hulls, the world poses of each step, and the
coal objects of the shapes that coal answers.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import coal
import numpy as np

from raisimcli.physics.broad_phase import _robot_bounds
from raisimcli.physics.ground import BOX_SLOTS, CYLINDER_SLOTS, MESH_SLOTS, RIM_SAMPLES, \
    _ground_entries, _lowest, _near_ground, _world_poses
from raisimcli.physics.shapes import BOX, CAPSULE, CYLINDER, OTHER, SPHERE, shape_poses


_KIND = {"sphere": SPHERE, "capsule": CAPSULE, "cylinder": CYLINDER, "box": BOX}


def _hull_walk(shapes, kind) -> tuple[np.ndarray, np.ndarray]:
    """(hull, points): the vertices of the shapes that are coal.Convex meshes, (V, 3) in their
    shapes' frames, and for _lowest's walk one int64 array that starts with the starts of its
    four sections: per shape its first vertex (n + 1 entries: shape k's vertices are
    first[k]:first[k + 1], none for the others), per vertex its first neighbour (V + 1), the
    neighbours (the vertices it shares an edge of the hull's triangles with), and per shape the
    vertex its last walk ended on (the walk's state: it moves from call to call). A mesh with a
    vertex on no triangle gets no vertices (its bounding sphere then)."""
    points, first, neighbours = [], [0], []
    for k, s in enumerate(shapes):
        g = s.geometry
        adjacent = None
        if kind[k] == OTHER and isinstance(g, coal.Convex):
            P = np.asarray(g.points(), dtype=np.float64).reshape(-1, 3)
            adjacent = [set() for _ in range(P.shape[0])]
            for i in range(g.num_polygons):
                t = g.polygons(i)
                a, b, c = int(t[0]), int(t[1]), int(t[2])
                adjacent[a].update((b, c))
                adjacent[b].update((a, c))
                adjacent[c].update((a, b))
            if not all(adjacent):
                adjacent = None
        if adjacent is None:
            first.append(first[-1])
            continue
        base = first[-1]
        points.append(P)
        neighbours.extend([base + w for w in sorted(x)] for x in adjacent)
        first.append(base + P.shape[0])
    at = np.cumsum([0] + [len(x) for x in neighbours])
    sections = [np.array(first), at, np.array([w for x in neighbours for w in x]),
                np.array(first[:-1])]
    starts = 4 + np.cumsum([0] + [len(x) for x in sections[:-1]])
    hull = np.concatenate([starts] + sections).astype(np.int64)
    return hull, (np.concatenate(points) if points else np.zeros((0, 3)))


_TOKENS = itertools.count()  # RobotShapes.token


@dataclass
class RobotShapes:
    """A robot's shapes in the contact world, with what the compiled loops need: `bodies` (n,),
    `placements` (n, 4, 4) in the body frames, `kind` (n,) and `extent` (n, 3) (sphere: r;
    capsule and cylinder: r, half length; box: half sides; other: the bounding radius),
    `hull` and `hull_points`, the convex meshes' vertices and edges (_hull_walk), and `poses`
    (n, 4, 4) and `lowest` (n,), the world poses and each shape's lowest height, filled by
    :meth:`update`. Each shape has slots for its contacts with the ground: a box BOX_SLOTS (the
    corners of a face), a cylinder CYLINDER_SLOTS and a convex mesh MESH_SLOTS (a patch's kept
    corners), any other shape one; shape k's are
    first_slot[k]:first_slot[k + 1], and ground_meta and ground_key are per slot (the key of a
    shape's i-th contact ends in i, as those of coal's contact patches do)."""

    system: object
    shapes: list
    self_collision: bool = False
    excluded: set = field(default_factory=set)

    def __post_init__(self):
        n = len(self.shapes)
        self.token = next(_TOKENS)  # this set of shapes' own number in the process
        self.bodies = np.array([s.body for s in self.shapes], dtype=np.int64)
        self.placements = np.array([s.placement for s in self.shapes],
                                   dtype=np.float64).reshape(n, 4, 4)
        self.kind = np.array([_KIND.get(s.kind, OTHER) for s in self.shapes], dtype=np.int64)
        self.extent = np.zeros((n, 3))
        for k, s in enumerate(self.shapes):
            g = s.geometry
            if s.kind == "sphere":
                self.extent[k, 0] = g.radius
            elif s.kind in ("capsule", "cylinder"):
                self.extent[k, :2] = g.radius, g.halfLength
            elif s.kind == "box":
                self.extent[k] = g.halfSide
            else:
                self.extent[k, 0] = s.radius
        self.radii = np.array([s.radius for s in self.shapes], dtype=np.float64)
        self.hull, self.hull_points = _hull_walk(self.shapes, self.kind)
        self.poses = np.zeros((n, 4, 4))
        self.lowest = np.zeros(n)
        self._transforms = [coal.Transform3s() for _ in range(n)]
        self._poses_version = 0  # bumped by each update of the poses
        self._transform_version = [-1] * n  # the version each transform was set at
        # what the contact of each shape with the ground says of it (ContactSet's meta and
        # key), and ground_entries' results
        name = self.system.name
        # (per slot: a box's, a cylinder's and a mesh's contacts, any other shape's one)
        vertices = np.diff(self.hull[self.hull[0]:self.hull[0] + n + 1])  # (a mesh's; else 0)
        mesh = (self.kind == OTHER) & (vertices > 0)
        slots = [BOX_SLOTS if k == BOX else CYLINDER_SLOTS if k == CYLINDER else
                 MESH_SLOTS if is_mesh else 1 for k, is_mesh in zip(self.kind.tolist(), mesh)]
        self.first_slot = np.cumsum([0] + slots).astype(np.int64)  # shape k's: [k]:[k + 1]
        # (the boxes' shape indices, the cylinders', the meshes'), each None when the robot
        # has none: the compiled loops' argument `patches`, whose Nones leave the code of
        # those shapes out of what numba compiles (a robot's first run: a quadruped whose
        # base is a box compiles neither the cylinders' code nor the meshes')
        self.patch_shapes = tuple(
            x if x.size else None for x in (np.flatnonzero(self.kind == BOX),
                                            np.flatnonzero(self.kind == CYLINDER),
                                            np.flatnonzero(mesh)))
        # _mesh_entries', _box_entries' and _cylinder_entries' scratch (V: the most vertices
        # of a mesh, at least a box's 8 corners and a cylinder's RIM_SAMPLES)
        v = max(int(vertices.max()), 8, RIM_SAMPLES) \
            if any(x is not None for x in self.patch_shapes) else 0
        self.patch_ints = np.zeros(4 * v + 7, dtype=np.int64)
        self.patch_floats = np.zeros((2 * v, 3))
        self.ground_meta = [(self.system, s.body, s.link, None, -1, "ground")
                            for s, count in zip(self.shapes, slots) for _ in range(count)]
        self.ground_key = [(name, s.index, "ground", i)
                           for s, count in zip(self.shapes, slots) for i in range(count)]
        self.materials = list(dict.fromkeys(s.material for s in self.shapes))
        self.material_index = np.array([self.materials.index(s.material) for s in self.shapes],
                                       dtype=np.int64)
        self.ground_params = None  # (key, table) of ContactWorld._ground_params
        e = int(self.first_slot[-1])  # (the most entries: every slot one)
        self.entry_shape = np.zeros(e, dtype=np.int64)
        self.entry_slot = np.zeros(e, dtype=np.int64)
        self.entry_point = np.zeros((e, 3))
        self.entry_distance = np.zeros(e)
        self.entry_params = np.zeros((e, 5))
        self.entry_bodies = np.zeros(e, dtype=np.int64)
        self.bounds = np.zeros((1, 6))  # update_near_ground's box of all shapes, when not given
        self.links_of_entries: dict = {}  # the link names of entries by their slots' bytes
        self._pack()

    def _pack(self) -> None:
        """The integer and float arrays above end to end in two arrays (_near_ground's I and F,
        its docstring gives the layout), each attribute a view of its part: a compiled call
        then takes two arguments for them (each array passed costs numba an unboxing).
        Write into these attributes; never bind them to other arrays (the compiled call would
        not see those)."""
        ints = ("bodies", "kind", "material_index", "hull", "first_slot", "entry_shape",
                "entry_slot", "entry_bodies", "patch_ints")
        floats = ("placements", "extent", "hull_points", "radii", "poses", "lowest",
                  "entry_point", "entry_distance", "entry_params", "patch_floats")
        head = [self.bodies.size, self.hull.size, self.hull_points.shape[0],
                self.entry_shape.size, self.patch_ints.size]
        self._I = np.concatenate([np.array(head, dtype=np.int64)] +
                                 [getattr(self, a).reshape(-1) for a in ints]).astype(np.int64)
        self._F = np.concatenate([getattr(self, a).reshape(-1) for a in floats]) \
            .astype(np.float64)
        for buffer, names, a in ((self._I, ints, len(head)), (self._F, floats, 0)):
            for name in names:
                old = getattr(self, name)
                setattr(self, name, buffer[a:a + old.size].reshape(old.shape))
                a += old.size

    @property
    def packed_I(self) -> np.ndarray:
        """The integer arrays end to end (_pack; _near_ground's I)."""
        return self._I

    @property
    def packed_F(self) -> np.ndarray:
        """The float arrays end to end (_pack; _near_ground's F)."""
        return self._F

    def poses_written(self) -> None:
        """Say that a compiled call has written the poses (as _near_ground does): the coal
        transforms of the last ones are stale."""
        self._poses_version += 1

    def update(self) -> None:
        """The shapes' world poses and lowest heights at the system's current state."""
        views = self.system.body_placements()
        if views is None:
            if self.shapes:  # (a robot without moving shapes has no pose to fill in)
                self.poses[:] = shape_poses(self.system, self.shapes)
        else:
            _world_poses(views[0], views[1], self.bodies, self.placements, self.poses)
        _lowest(self.poses, self.kind, self.extent, self.hull, self.hull_points, self.lowest)
        self._poses_version += 1

    def lowest_shape(self, ground: float) -> tuple[float, str] | None:
        """The height of the lowest shape above the ground at height `ground`, at the system's
        current state (below zero: into it), and that shape's link; None without shapes. It
        leaves the arrays as it found them (the poses, and where each mesh's walk to its lowest
        vertex starts), so that a step after it gives the same bits as without it."""
        if not self.shapes:
            return None
        kept = self.hull.copy(), self.poses.copy(), self.lowest.copy()
        try:
            self.update()
            k = int(np.argmin(self.lowest))
            return float(self.lowest[k]) - ground, self.shapes[k].link
        finally:
            self.hull[:], self.poses[:], self.lowest[:] = kept
            self.poses_written()

    def update_near_ground(self, height: float, margin: float, reach: float, slack: float,
                           params: np.ndarray, bounds: np.ndarray | None = None,
                           row: int = 0) -> tuple[int, int]:
        """update() then ground_entries(...) in one compiled call, which also gives each entry
        its contact params (`params`: a row per material, see ContactWorld._ground_params) and
        its body: entry_params[:n], entry_bodies[:n]. Row `row` of `bounds` (k, 6) (default:
        self.bounds) receives the box of the shapes' broad-phase boxes (_robot_bounds)."""
        if bounds is None:
            bounds, row = self.bounds, 0
        views = self.system.body_placements()
        if views is None:
            self.update()
            n, others = self.ground_entries(height, margin, reach, slack)
            entries = self.entry_shape[:n]  # (their shapes)
            self.entry_params[:n] = params[self.material_index[entries]]
            self.entry_bodies[:n] = self.bodies[entries]
            _robot_bounds(self.poses, self.radii, margin, bounds, row)
            return n, others  # (update() bumped the poses' version)
        n, others = _near_ground(views[0], views[1], self._I, self._F, reach, slack, height,
                                 margin, params, bounds, row, self.patch_shapes)
        self._poses_version += 1
        return int(n), int(others)

    def ground_entries(self, height: float, margin: float, reach: float, slack: float) -> \
            tuple[int, int]:
        """The shapes near the ground (whose bounding sphere reaches down to `reach` and whose
        lowest point, of the last update, is within `reach` + `slack`), in order, as entries
        entry_shape[:n] (the shape), entry_slot[:n] (its slot), entry_point[:n],
        entry_distance[:n]: a sphere, capsule, box, cylinder or convex mesh within `margin` of
        the ground at `height` gives its contacts (see _ground_entries; a box, a cylinder or a
        mesh up to four, one after the other), one farther away none; any other shape (a box
        under 2 mm, a mesh without its hull's edges) is one entry of distance NaN (at its
        first slot) for coal to answer. Returns (n, how many entries are coal's)."""
        n, others = _ground_entries(self.poses, self.radii, self.extent, self.lowest,
                                    self.kind, self.first_slot, reach, slack, height, margin,
                                    self.entry_shape, self.entry_slot, self.entry_point,
                                    self.entry_distance, *self.patch_shapes, self.hull,
                                    self.hull_points, self.patch_floats, self.patch_ints)
        return int(n), int(others)

    def transform(self, k: int) -> coal.Transform3s:
        """Shape k's pose of the last update as a coal transform (one object per shape, set
        once after each update: a shape in several pairs is converted once)."""
        T = self._transforms[k]
        if self._transform_version[k] != self._poses_version:
            pose = self.poses[k]
            T.setTransform(pose[:3, :3], pose[:3, 3])
            self._transform_version[k] = self._poses_version
        return T
