"""Collision shapes: a robot's shapes (its links' collision geometry, after merging) and the static
world's, as coal objects (coal ships with Pinocchio), and their poses.

Narrow phase is coal's: `coal.collide` and its contact patches (a face resting on a face gives its
corner points). Meshes collide as their convex hull. Against the ground, most shapes are answered
by compiled loops instead (physics/ground.py); the broad phase is physics/broad_phase.py; a robot's
shapes packed for both are physics/robot_shapes.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import coal
import numpy as np
import pinocchio as pin

from raisimcli.errors import ModelError
from raisimcli.linalg import matmul, norm


@dataclass
class Shape:
    """One collision shape. `body`: the Pinocchio joint id of its rigid body (static shapes: -1);
    `placement`: (4, 4) pose in the body frame (static: in the world); `radius`: a bounding
    sphere's radius about the placement's origin."""

    geometry: object
    kind: str
    link: str
    body: int
    placement: np.ndarray
    radius: float
    material: str = "default"
    index: int = 0


def make_geometry(kind: str, size, mesh: str | None = None, scale=(1.0, 1.0, 1.0)):
    """(coal geometry, bounding radius) for a URDF-style shape."""
    if kind == "box":
        return coal.Box(*map(float, size)), 0.5 * norm(size)
    if kind == "sphere":
        return coal.Sphere(float(size[0])), float(size[0])
    if kind == "cylinder":
        r, length = map(float, size)
        return coal.Cylinder(r, length), float(np.hypot(r, 0.5 * length))
    if kind == "capsule":
        r, length = map(float, size)
        return coal.Capsule(r, length), r + 0.5 * length
    if kind == "mesh":
        import trimesh
        try:
            m = trimesh.load(mesh, force="mesh")
        except Exception as e:  # noqa: BLE001  (trimesh raises many kinds)
            # random bytes make trimesh look for a text-encoding detector it may not have
            detail = "unrecognised content" if isinstance(e, ImportError) else str(e)
            raise ModelError(f"cannot read the mesh {mesh}: not a mesh file trimesh can parse "
                             f"({detail})") from None
        vertices = np.asarray(getattr(m, "vertices", np.zeros((0, 3))), dtype=float)
        if len(vertices) < 4:
            raise ModelError(f"the mesh {mesh} has {len(vertices)} vertices: no volume to "
                             "collide with") from None
        try:
            hull = trimesh.Trimesh(vertices * np.asarray(scale)).convex_hull
        except Exception as e:  # noqa: BLE001  (qhull's errors)
            raise ModelError(f"the convex hull of the mesh {mesh} cannot be built (the points "
                             f"lie on one line or one point: {str(e).splitlines()[0]})") from None
        hull = _fewer_neighbours(hull, mesh)
        verts = coal.StdVec_Vec3s()
        for v in hull.vertices:
            verts.append(np.array(v, dtype=float))
        tris = coal.StdVec_Triangle()
        for f in hull.faces:
            tris.append(coal.Triangle(int(f[0]), int(f[1]), int(f[2])))
        return coal.Convex(verts, tris), max(norm(v) for v in hull.vertices)
    raise ModelError(f"unknown collision shape {kind!r}")


# coal's Convex counts each vertex's neighbours in a byte: it refuses a vertex on 255 edges or more
COAL_MAX_NEIGHBOURS = 254


def _fewer_neighbours(hull, mesh: str):
    """The convex hull `hull` (a trimesh), or, when a vertex of it has more neighbours than coal
    takes (a fine fan: a cone's apex over a round rim; centauro's pelvis has a vertex on 566
    edges), the hull of its vertices snapped to a grid of 1/1000 of its largest extent, then
    1/300 and 1/100, the first that coal takes: the surface moves by less than the grid's
    half-diagonal (0.09 % of the extent on the first grid)."""
    import trimesh
    extent = float(np.max(hull.extents))
    for cells in (None, 1000, 300, 100):
        if cells is not None:
            step = extent / cells
            hull = trimesh.Trimesh(np.unique(np.round(hull.vertices / step) * step,
                                             axis=0)).convex_hull
        if np.bincount(hull.edges_unique.ravel()).max() <= COAL_MAX_NEIGHBOURS:
            return hull
    raise ModelError(f"the convex hull of the mesh {mesh} has a vertex with more than "
                     f"{COAL_MAX_NEIGHBOURS} neighbours even on a grid of 1/100 of its size, "
                     "more than coal takes: simplify the mesh, or give the link a primitive "
                     "collision shape")


def link_geometry(model, g):
    """(coal geometry, bounding radius) of a collision of the model; a ModelError names the
    URDF's file and line."""
    try:
        return make_geometry(g.kind, g.size, g.mesh, g.scale)
    except ModelError as e:
        raise ModelError(e.detail, file=model.path, line=g.line, element=f"<{g.kind}>") from None


def check_geometry(model) -> None:
    """Build every collision shape of the model, as a run with contacts does: what a run would
    refuse (an unreadable or flat mesh), `inspect` refuses first."""
    for link in model.links:
        for g in link.collisions:
            link_geometry(model, g)


def robot_shapes(model, materials: dict[str, str] | None = None) -> list[Shape]:
    """The collision shapes of a RobotModel, per body after merging."""
    materials = materials or {}
    out = []
    for link in model.links:
        if link.body == 0 and model.root_link == "world":
            continue  # welded to the world: static, never moves, not simulated as a contact body
        for g in link.collisions:
            geom, radius = link_geometry(model, g)
            placement = matmul(link.body_T_link, g.origin)
            out.append(Shape(geom, g.kind, link.name, link.body, placement, radius,
                             materials.get(link.name, materials.get("*", "default"))))
    for i, s in enumerate(out):
        s.index = i
    return out


# shape kinds in the compiled loops
SPHERE, CAPSULE, CYLINDER, BOX, OTHER = 0, 1, 2, 3, 4



def transform(T: np.ndarray) -> coal.Transform3s:
    return coal.Transform3s(np.ascontiguousarray(T[:3, :3]), np.ascontiguousarray(T[:3, 3]))


def shape_poses(system, shapes: list[Shape]) -> list[np.ndarray]:
    """World poses (4, 4) of a system's shapes at its current state."""
    system.kinematics()
    data = system.pinocchio_data
    out = []
    for s in shapes:
        oMb = data.oMi[s.body].homogeneous
        out.append(matmul(oMb, s.placement))
    return out


def rpy_pose(position, rpy) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = pin.rpy.rpyToMatrix(*map(float, rpy))
    T[:3, 3] = position
    return T
