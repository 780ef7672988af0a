"""The ground queries of a robot's shapes in compiled loops: the shapes' world poses and lowest
points, and the contacts of spheres, capsules, boxes (not under 2 mm), cylinders and convex meshes
with the ground plane, answered as coal answers them (`coal.collide` and its contact patch, reduced
to at most four corners) without a coal query (`_ground_entries`; tests/test_contacts.py compares
them with coal's).
"""

from __future__ import annotations

import math

import coal
import numpy as np

from raisimcli.jit import carve, kernel, span
from raisimcli.physics.broad_phase import _robot_bounds
from raisimcli.physics.shapes import BOX, CAPSULE, CYLINDER, OTHER, SPHERE


@kernel
def _homogeneous(R, T, b, i, p):
    """Entry (i, p) of body b's homogeneous placement [[R, T], [0, 1]]."""
    if i == 3:
        return 1.0 if p == 3 else 0.0
    return T[b, i] if p == 3 else R[b, i, p]


@kernel
def _world_poses(R, T, bodies, placements, out):
    """out[s] = oMi[bodies[s]] placements[s] as (4, 4) products summed in index order (the bits
    of linalg.matmul of the homogeneous matrices)."""
    for s in range(bodies.shape[0]):
        b = bodies[s]
        for i in range(4):
            for j in range(4):
                acc = 0.0
                for p in range(4):
                    acc += _homogeneous(R, T, b, i, p) * placements[s, p, j]
                out[s, i, j] = acc


@kernel
def _lowest(poses, kind, extent, hull, points, out):
    """Each shape's lowest height: the z of its support point along -z. A convex mesh's is its
    lowest vertex (`hull`, `points`: RobotShapes.hull and hull_points), found by walking down
    the hull's edges from the vertex the last call ended on: on a convex polytope a vertex
    with no lower neighbour is the lowest (the walk's start changes how far it walks, not where
    it ends, to within the rounding of the heights). Another shape of kind OTHER: its bounding
    sphere's lowest point."""
    first, neighbours_at, neighbours, support = hull[0], hull[1], hull[2], hull[3]
    for s in range(kind.shape[0]):
        z = poses[s, 2, 3]
        k = kind[s]
        if k == SPHERE:
            out[s] = z - extent[s, 0]
        elif k == OTHER:
            if hull[first + s] == hull[first + s + 1]:  # no vertices: the bounding sphere
                out[s] = z - extent[s, 0]
                continue
            r0, r1, r2 = poses[s, 2, 0], poses[s, 2, 1], poses[s, 2, 2]
            v = hull[support + s]
            best = r0 * points[v, 0] + r1 * points[v, 1] + r2 * points[v, 2]
            moved = True
            while moved:
                moved = False
                for e in range(hull[neighbours_at + v], hull[neighbours_at + v + 1]):
                    w = hull[neighbours + e]
                    height = r0 * points[w, 0] + r1 * points[w, 1] + r2 * points[w, 2]
                    if height < best:
                        best, v, moved = height, w, True
            hull[support + s] = v
            out[s] = z + best
        elif k == CAPSULE:
            out[s] = z - abs(poses[s, 2, 2]) * extent[s, 1] - extent[s, 0]
        elif k == CYLINDER:
            radial = math.sqrt(poses[s, 2, 0] ** 2 + poses[s, 2, 1] ** 2)
            out[s] = z - abs(poses[s, 2, 2]) * extent[s, 1] - extent[s, 0] * radial
        else:
            out[s] = z - (abs(poses[s, 2, 0]) * extent[s, 0] + abs(poses[s, 2, 1]) *
                          extent[s, 1] + abs(poses[s, 2, 2]) * extent[s, 2])


# |cos| of a capsule's axis with the ground's normal below which coal takes the capsule as
# lying flat and its contact at its centre's sphere, not at its lower end's (coal 3.0's
# capsule-halfspace test; tests/test_contacts.py finds the same switch)
CAPSULE_FLAT = 1e-12

# A box against the ground: coal's contact patch (computeContactPatch with a default
# ContactPatchRequest) is the box's corners whose height is within the request's patch
# tolerance of the lowest corner's, in coal's order of them (_box_entries). Its slots: the most
# corners such a patch has when the box's smallest half side is at least BOX_SMALLEST (4: a
# face; a smaller box goes to coal, whose patch of it may take corners of two faces).
BOX_SLOTS = 4
# RobotShapes.patch_shapes of a robot with no box, no cylinder and no mesh
NO_PATCHES = (None, None, None)
PATCH_TOLERANCE = coal.ContactPatchRequest().getPatchTolerance()  # m (coal's: 1e-3)
BOX_SMALLEST = 2 * PATCH_TOLERANCE
# the corners' signs of the half sides, in the order of coal 3.0's support set of a box
# (getShapeSupportSet(const Box*, ...) in src/narrowphase/support_functions.cpp)
_CORNERS = np.array([[1, 1, 1], [-1, 1, 1], [-1, -1, 1], [1, -1, 1], [1, 1, -1], [-1, 1, -1],
                     [-1, -1, -1], [1, -1, -1]], dtype=np.float64)
_DUMMY_PRECISION = 1e-12  # Eigen's NumTraits<double>::dummy_precision(), coal's hull's test


@kernel
def _corner(poses, s, extent, k):
    """(x, y, z) of box s's corner k (_CORNERS) in the world. (Each coordinate i is the same
    sum; a loop over i would take i as a literal argument, and numba compiles a function
    once for each literal value it is called with.)"""
    a, b, c = _CORNERS[k, 0] * extent[s, 0], _CORNERS[k, 1] * extent[s, 1], \
        _CORNERS[k, 2] * extent[s, 2]
    return (poses[s, 0, 3] + ((poses[s, 0, 0] * a + poses[s, 0, 1] * b) + poses[s, 0, 2] * c),
            poses[s, 1, 3] + ((poses[s, 1, 0] * a + poses[s, 1, 1] * b) + poses[s, 1, 2] * c),
            poses[s, 2, 3] + ((poses[s, 2, 0] * a + poses[s, 2, 1] * b) + poses[s, 2, 2] * c))


@kernel
def _box_entries(poses, s, extent, h, margin, point, distance, n, cloud, ints):
    """The contacts of box s with the ground at height h, as coal 3.0 answers them (coal.collide,
    then computeContactPatch with the default request), into rows n, n + 1, ... of `point`
    and `distance`; returns how many (0 when the lowest corner is farther than `margin`). The
    patch: the corners whose height is within PATCH_TOLERANCE of the lowest corner's (the
    box's smallest half side at least BOX_SMALLEST: 1 to 4 corners of one face), each at its
    x, y and at the height midway between the lowest corner and the ground, all at the
    lowest corner's signed distance, in the order of coal's convex hull of them in its patch
    frame (_hull_2d of the corners in the order of _CORNERS: one or two as they are, three or
    four from the corner of the largest y, clockwise seen from above). coal takes the box a
    little larger (its support function's factor 1 + 1e-10 of the half sides), so its points
    and distances are off ours by up to 1e-10 times the half sides; tests/test_contacts.py
    compares the two. `cloud`, `ints`: _mesh_entries' scratch."""
    zmin = np.inf
    for k in range(8):
        z = _corner(poses, s, extent, k)[2]
        if z < zmin:
            zmin = z
    d = zmin - h
    if not d <= margin:
        return 0
    m = np.int64(0)  # (not a literal 0: see _ground_entries)
    for k in range(8):  # (at most four: a face's, by BOX_SMALLEST)
        x, y, z = _corner(poses, s, extent, k)
        if z - zmin < PATCH_TOLERANCE:  # (coal's test)
            cloud[m, 0] = x
            cloud[m, 1] = -y  # (coal's patch frame: x, -y)
            m += 1
    vmax = (ints.shape[0] - 7) // 4
    out = ints[3 * vmax:4 * vmax]
    c = _hull_2d(cloud, m, ints[2 * vmax:3 * vmax], out)
    middle = (zmin + h) / 2
    for i in range(c):
        point[n + i, 0], point[n + i, 1], point[n + i, 2] = cloud[out[i], 0], -cloud[out[i], 1], \
            middle
        distance[n + i] = d
    return c


# A cylinder against the ground: coal's contact patch (as for a box, above) has one point
# where the cylinder stands on its rim, two along a line of its side when it lies within the
# patch tolerance of flat (a wheel), and its rim sampled at RIM_SAMPLES points when it stands on
# a face, of which reduce_patch keeps four (_cylinder_entries).
CYLINDER_SLOTS = 4
RIM_SAMPLES = coal.ContactPatchRequest().getNumSamplesCurvedShapes()  # (coal's: 12)


@kernel
def _cylinder_entries(poses, s, extent, h, margin, point, distance, n, cloud, ints):
    """The contacts of cylinder s (radius extent[s, 0], half length extent[s, 1], its axis the
    pose's z) with the ground at height h, as coal 3.0 answers them (coal.collide, then
    computeContactPatch with the default request), into rows n, ... (up to four) of `point` and
    `distance`; returns how many (0 when its lowest point is farther than `margin`). With d the
    direction -z in the cylinder's frame, its lowest point is on the rim of the end cap towards
    d, at the radius along d's (x, y); coal's support set then holds the points (r d_x, r d_y,
    -+h_l) of the two caps whose height (along d) is within the patch tolerance of the lowest
    (coal's points: at r times d's (x, y), which are a little inside the rim when the axis is
    not level), or the two points (+-r d_x, +-r d_y) of the lower cap when both are (a face).
    Two such points are the contacts (the lower cap's first), each at its x, y and at the height
    midway between the lowest point and the ground; with one, the contact is the lowest point
    itself, at that height. On a face, coal's patch is the face's rim at RIM_SAMPLES angles
    i 2 pi / RIM_SAMPLES from the cylinder's x axis, in that order, of which reduce_patch keeps
    four (_kept_index). Each has the lowest point's signed distance. Within coal's rounding and its
    cylinder taken larger by 1e-10 of its size (tests/test_contacts.py compares the two).
    `cloud`, `ints`: _mesh_entries' scratch."""
    r, hl = extent[s, 0], extent[s, 1]
    d0, d1, d2 = -poses[s, 2, 0], -poses[s, 2, 1], -poses[s, 2, 2]  # (R^T (0, 0, -1))
    nxy = math.sqrt(d0 * d0 + d1 * d1)
    zs = hl if d2 > 0.0 else -hl
    sx, sy = r, 0.0  # the lowest point, in the cylinder's frame (its axis vertical: any)
    if nxy > 0.0:
        sx, sy = r * (d0 / nxy), r * (d1 / nxy)
    top = (sx * d0 + sy * d1) + zs * d2  # (its height along d)
    low = poses[s, 2, 3] + ((poses[s, 2, 0] * sx + poses[s, 2, 1] * sy) + poses[s, 2, 2] * zs)
    d = low - h
    if not d <= margin:
        return 0
    middle = (low + h) / 2
    zc = -hl if d2 <= 0.0 else hl
    across = r * d0 * d0 + r * d1 * d1
    if nxy == 0.0 or (top - (across + zc * d2) <= PATCH_TOLERANCE and
                      top - (-across + zc * d2) <= PATCH_TOLERANCE):  # on a face: its rim
        vmax = (ints.shape[0] - 7) // 4
        P = cloud[vmax:vmax + RIM_SAMPLES]
        step = 2.0 * math.pi / RIM_SAMPLES
        for k in range(RIM_SAMPLES):
            x, y = r * math.cos(k * step), r * math.sin(k * step)
            for i in range(2):
                P[k, i] = poses[s, i, 3] + ((poses[s, i, 0] * x + poses[s, i, 1] * y) +
                                            poses[s, i, 2] * zc)
            P[k, 2] = middle
        kept = ints[4 * vmax + 3:4 * vmax + 7]
        c = _kept_index(P, _UP_NORMAL, ints[4 * vmax:4 * vmax + 3], kept)
        for i in range(c):
            point[n + i, 0], point[n + i, 1] = P[kept[i], 0], P[kept[i], 1]
            point[n + i, 2], distance[n + i] = middle, d
        return c
    c = 0
    for end in range(2):  # the lower cap's point first (-h_l), then the upper's
        z = -hl if end == 0 else hl
        if top - (across + z * d2) <= PATCH_TOLERANCE:
            for i in range(2):
                point[n + c, i] = poses[s, i, 3] + ((poses[s, i, 0] * (r * d0) +
                                                     poses[s, i, 1] * (r * d1)) +
                                                    poses[s, i, 2] * z)
            c += 1
    if c < 2:  # (coal's contact point: the lowest point)
        c = 1
        for i in range(2):
            point[n, i] = poses[s, i, 3] + ((poses[s, i, 0] * sx + poses[s, i, 1] * sy) +
                                            poses[s, i, 2] * zs)
    for e in range(n, n + c):
        point[e, 2] = middle
        distance[e] = d
    return c


# The most points a contact patch keeps (the quadrilateral that spans it: contacts.reduce_patch)
MAX_PATCH_POINTS = 4


@kernel
def _kept_index(P, normal, corners, out) -> int:
    """The rows of P (k > 4, 3) that reduce_patch keeps, in order, into out (4,): row 0 and the
    corners of _patch_corners, each once; returns how many (`corners` (3,): scratch)."""
    _patch_corners(P, normal, corners)
    n = 0
    for i in range(P.shape[0]):
        if i == 0 or i == corners[0] or i == corners[1] or i == corners[2]:
            out[n] = i
            n += 1
    return n


@kernel
def _patch_corners(P, normal, out):
    """reduce_patch's corners of P (k, 3) into out: the farthest from P[0], then the farthest on
    each side of the line P[0] P[out[0]] (the largest and the smallest (P[out[0]] - P[0]) x
    (P[i] - P[0]) . normal); each the first of equals (numpy's argmax and argmin). The sums run in
    index order, with no BLAS kernel whose choice could move a near tie from one corner to
    another."""
    k = P.shape[0]
    far, best = 0, -1.0
    for i in range(k):
        d0, d1, d2 = P[i, 0] - P[0, 0], P[i, 1] - P[0, 1], P[i, 2] - P[0, 2]
        s = d0 * d0 + d1 * d1 + d2 * d2
        if s > best:
            far, best = i, s
    a0, a1, a2 = P[far, 0] - P[0, 0], P[far, 1] - P[0, 1], P[far, 2] - P[0, 2]
    hi, lo, s_hi, s_lo = 0, 0, 0.0, 0.0
    for i in range(k):
        d0, d1, d2 = P[i, 0] - P[0, 0], P[i, 1] - P[0, 1], P[i, 2] - P[0, 2]
        s = (a1 * d2 - a2 * d1) * normal[0] + (a2 * d0 - a0 * d2) * normal[1] + \
            (a0 * d1 - a1 * d0) * normal[2]
        if i == 0 or s > s_hi:
            hi, s_hi = i, s
        if i == 0 or s < s_lo:
            lo, s_lo = i, s
    out[0], out[1], out[2] = far, hi, lo


# A convex mesh against the ground: coal's contact patch is the convex hull (in the patch
# frame) of its vertices whose height is within PATCH_TOLERANCE of the lowest, each at its x,
# y, and contacts.reduce_patch keeps four of a larger one (_mesh_entries). Its slots: those
# four.
MESH_SLOTS = MAX_PATCH_POINTS
# coal's support set of a mesh with more vertices scans them from its lowest along the hull's
# edges (its order: from the lowest); of one with no more, in the vertices' order
# (ConvexBase's num_vertices_large_convex_threshold)
LARGE_MESH = 32
_EPSILON = 2.220446049250313e-16  # Eigen's NumTraits<double>::epsilon(), coal's hull's test
_UP_NORMAL = np.array([0.0, 0.0, 1.0])  # the ground's normal, reduce_patch's argument


@kernel
def _hull_2d(cloud, m, order, out) -> int:
    """coal 3.0's convex hull of the points cloud[0:m, 0:2] (computePolygonConvexHull in
    src/contact_patch/polygon_convex_hull.cpp): their indices into out, counter-clockwise;
    returns how many. Up to two points: as they are; three: the lowest y first (the first of
    equal ones, by its swaps), then counter-clockwise; more: Graham's scan from the first
    point of the lowest y, the others sorted stably by their angle about it (the nearer first
    on one line), turns of at most _DUMMY_PRECISION dropped. `order`: scratch (m)."""
    for i in range(m):
        order[i] = i
    if m <= 2:
        for i in range(m):
            out[i] = i
        return m
    if m == 3:
        if cloud[order[0], 1] > cloud[order[1], 1]:
            order[0], order[1] = order[1], order[0]
        if cloud[order[0], 1] > cloud[order[2], 1]:
            order[0], order[2] = order[2], order[0]
        a, b, c = order[0], order[1], order[2]
        if (cloud[b, 0] - cloud[a, 0]) * (cloud[c, 1] - cloud[a, 1]) - \
                (cloud[b, 1] - cloud[a, 1]) * (cloud[c, 0] - cloud[a, 0]) < 0.0:
            order[1], order[2] = order[2], order[1]
        for i in range(3):
            out[i] = order[i]
        return 3
    k0 = 0
    for i in range(1, m):
        if cloud[i, 1] < cloud[k0, 1]:
            k0 = i
    order[0], order[k0] = order[k0], order[0]
    v = order[0]
    for i in range(2, m):  # (insertion sort, stable: a point moves before earlier ones only)
        j = i
        while j > 1:
            p, q = order[j], order[j - 1]
            det = (cloud[p, 0] - cloud[v, 0]) * (cloud[q, 1] - cloud[v, 1]) - \
                (cloud[p, 1] - cloud[v, 1]) * (cloud[q, 0] - cloud[v, 0])
            if abs(det) <= _DUMMY_PRECISION:
                before = (cloud[p, 0] - cloud[v, 0]) ** 2 + (cloud[p, 1] - cloud[v, 1]) ** 2 <= \
                    (cloud[q, 0] - cloud[v, 0]) ** 2 + (cloud[q, 1] - cloud[v, 1]) ** 2
            else:
                before = det > 0.0
            if not before:
                break
            order[j], order[j - 1] = q, p
            j -= 1
    out[0] = v
    k = 1
    b = 1
    while k < 3 and b < m:  # the first three distinct points
        p, q = out[k - 1], order[b]
        if (cloud[p, 0] - cloud[q, 0]) ** 2 + (cloud[p, 1] - cloud[q, 1]) ** 2 > _EPSILON:
            out[k] = q
            k += 1
        b += 1
    for i in range(b, m):  # left turns only
        q = order[i]
        while k > 1:
            p1, p2 = out[k - 2], out[k - 1]
            if (cloud[p2, 0] - cloud[p1, 0]) * (cloud[q, 1] - cloud[p1, 1]) - \
                    (cloud[p2, 1] - cloud[p1, 1]) * (cloud[q, 0] - cloud[p1, 0]) > \
                    _DUMMY_PRECISION:
                break
            k -= 1
        out[k] = q
        k += 1
    return k


@kernel
def _mesh_entries(poses, s, hull, points, h, margin, point, distance, n, cloud, ints):
    """The contacts of convex mesh s (its hull's vertices and edges: RobotShapes.hull and
    hull_points, the vertex of its last _lowest walk the lowest) with the ground at height h,
    as coal 3.0 answers them (coal.collide, then computeContactPatch with the default request,
    then contacts.reduce_patch), into rows n, ... of `point` and `distance`; returns how many
    (0 when its lowest vertex is farther than `margin`). The patch: the vertices whose height
    is within PATCH_TOLERANCE of the lowest (found from the lowest along the hull's edges:
    they are connected, the hull being convex), their convex hull in coal's patch frame (x,
    -y; _hull_2d), each at its x, y and at the height midway between the lowest vertex and
    the ground, all at the lowest vertex's signed distance; one point: the lowest vertex
    itself; more than four: reduce_patch's four. `cloud` (2 V, 3) and `ints` (4 V + 7): scratch
    (V: the most vertices of a mesh of the robot, at least 8)."""
    first, neighbours_at, neighbours, support = hull[0], hull[1], hull[2], hull[3]
    f0 = hull[first + s]
    nv = hull[first + s + 1] - f0
    vmax = (ints.shape[0] - 7) // 4
    visited, queue = ints[0:vmax], ints[vmax:2 * vmax]
    order, out = ints[2 * vmax:3 * vmax], ints[3 * vmax:4 * vmax]
    corners, kept = ints[4 * vmax:4 * vmax + 3], ints[4 * vmax + 3:4 * vmax + 7]
    r0, r1, r2 = poses[s, 2, 0], poses[s, 2, 1], poses[s, 2, 2]
    v0 = hull[support + s]
    best = r0 * points[v0, 0] + r1 * points[v0, 1] + r2 * points[v0, 2]  # (as _lowest's)
    low = poses[s, 2, 3] + best
    d = low - h
    if not d <= margin:
        return 0
    # the vertices within the tolerance: from the lowest along the edges (in coal's order for
    # a mesh of more than LARGE_MESH vertices; else in the vertices' order, below)
    m = np.int64(1)  # (not a literal 1: see _ground_entries)
    queue[0] = v0
    visited[v0 - f0] = 1
    i = 0
    while i < m:
        v = queue[i]
        i += 1
        for e in range(hull[neighbours_at + v], hull[neighbours_at + v + 1]):
            w = hull[neighbours + e]
            if visited[w - f0] == 0:
                visited[w - f0] = 1
                if (r0 * points[w, 0] + r1 * points[w, 1] + r2 * points[w, 2]) - best <= \
                        PATCH_TOLERANCE:
                    queue[m] = w
                    m += 1
                else:
                    visited[w - f0] = 2  # (seen, not in)
    # (the marks back to 0: those of the vertices in, and of their neighbours)
    for i in range(m):
        v = queue[i]
        visited[v - f0] = 0
        for e in range(hull[neighbours_at + v], hull[neighbours_at + v + 1]):
            visited[hull[neighbours + e] - f0] = 0
    if nv <= LARGE_MESH:  # coal scans them in the vertices' order
        for i in range(1, m):
            j = i
            while j > 0 and queue[j] < queue[j - 1]:
                queue[j], queue[j - 1] = queue[j - 1], queue[j]
                j -= 1
    for i in range(m):
        v = queue[i]
        for a in range(2):
            cloud[i, a] = poses[s, a, 3] + ((poses[s, a, 0] * points[v, 0] +
                                             poses[s, a, 1] * points[v, 1]) +
                                            poses[s, a, 2] * points[v, 2])
        cloud[i, 1] = -cloud[i, 1]  # (coal's patch frame: x, -y)
    middle = (low + h) / 2
    k = _hull_2d(cloud, m, order, out) if m > 1 else 1
    if k <= 1:  # (coal's contact point: the lowest vertex)
        point[n, 0], point[n, 1] = cloud[0, 0], -cloud[0, 1]
        point[n, 2], distance[n] = middle, d
        return 1
    P = cloud[vmax:vmax + k]
    for i in range(k):
        P[i, 0], P[i, 1], P[i, 2] = cloud[out[i], 0], -cloud[out[i], 1], middle
    c = k
    if k > MAX_PATCH_POINTS:
        c = _kept_index(P, _UP_NORMAL, corners, kept)
    for i in range(c):
        j = kept[i] if k > MAX_PATCH_POINTS else i
        point[n + i, 0], point[n + i, 1], point[n + i, 2] = P[j, 0], P[j, 1], middle
        distance[n + i] = d
    return c


@kernel
def _ground_entries(poses, radii, extent, lowest, kind, first_slot, reach, slack, h, margin,
                    shape, slot, point, distance, boxes, cylinders, meshes, hull, hull_points,
                    cloud, ints):
    """The entries of RobotShapes.ground_entries; returns (entries, entries for coal). A sphere
    of radius r centred at (x, y, z) is at the signed distance d = (z - h) - r from the ground
    at height h; its contact point is midway between its lowest point and the ground below its
    centre, (x, y, ((z - r) + h) / 2), its normal +z. A capsule's contact is that of the sphere
    of its radius at the lower end of its axis, or at its centre when the axis lies flat (|cos|
    below CAPSULE_FLAT), as coal answers it: one contact. This is coal's contact to within
    coal's rounding of the shape's rotation, which cannot matter (a test compares the two). A
    box's are _box_entries', a cylinder's _cylinder_entries', a convex mesh's _mesh_entries',
    in its slots in order (a box under BOX_SMALLEST is coal's). `boxes`, `cylinders`,
    `meshes`: RobotShapes.patch_shapes (one None: the robot has no such shape, and numba
    compiles this loop without its code).

    The counts passed to compiled calls start as np.int64(0), not 0: numba types a call whose
    argument is still the literal 0 at that point of its type inference, compiles the callee
    for Literal[int](0), then again for int64 once the count is known to vary (twice the
    compile time of _box_entries and the others in a first run)."""
    n = np.int64(0)
    others = 0
    for s in range(radii.shape[0]):
        if not (poses[s, 2, 3] - radii[s] <= reach and lowest[s] <= reach + slack):
            continue  # not near the ground
        k = kind[s]
        if k == SPHERE or k == CAPSULE:
            x, y, z, r = poses[s, 0, 3], poses[s, 1, 3], poses[s, 2, 3], radii[s]
            if k == CAPSULE:
                r = extent[s, 0]  # (radii: its bounding sphere's)
                cosa = poses[s, 2, 2]  # (the axis, column 2, along the ground's normal +z)
                if cosa > CAPSULE_FLAT or cosa < -CAPSULE_FLAT:
                    hl = extent[s, 1] if cosa > 0.0 else -extent[s, 1]  # (towards the ground)
                    x, y, z = x - poses[s, 0, 2] * hl, y - poses[s, 1, 2] * hl, \
                        z - poses[s, 2, 2] * hl
            d = (z - h) - r
            if not d <= margin:
                continue
            point[n, 0], point[n, 1], point[n, 2] = x, y, ((z - r) + h) / 2
            distance[n] = d
        else:
            c = -1  # (coal's)
            if k == BOX:
                if boxes is not None and \
                        min(extent[s, 0], extent[s, 1], extent[s, 2]) >= BOX_SMALLEST:
                    c = _box_entries(poses, s, extent, h, margin, point, distance, n, cloud,
                                     ints)
            elif k == CYLINDER:
                if cylinders is not None:
                    c = _cylinder_entries(poses, s, extent, h, margin, point, distance, n,
                                          cloud, ints)
            elif k == OTHER:
                if meshes is not None and hull[hull[0] + s] < hull[hull[0] + s + 1]:  # (a mesh)
                    c = _mesh_entries(poses, s, hull, hull_points, h, margin, point, distance,
                                      n, cloud, ints)
            if c >= 0:
                for i in range(c):
                    shape[n + i], slot[n + i] = s, first_slot[s] + i
                n += c
                continue
            distance[n] = np.nan
            others += 1
        shape[n], slot[n] = s, first_slot[s]
        n += 1
    return n, others


@kernel
def _near_ground(R, T, I, F, reach, slack, h, margin, params, bounds, row,  # noqa: E741
                 patches):
    """_world_poses, _lowest and _ground_entries of RobotShapes.update_near_ground, then each
    entry's params (the row of its shape's material) and body, and _robot_bounds into row `row`
    of `bounds`; returns (entries, entries for coal); `patches`: RobotShapes.patch_shapes, a
    tuple whose items _ground_entries takes as three arguments (see there). The robot's arrays
    come packed (RobotShapes._pack): I holds n (the shapes), the length of hull, the number of
    hull points, e (the slots) and the length of patch_ints (4 V + 7), then bodies, kind,
    material_index, hull, first_slot (n + 1), entry_shape, entry_slot, entry_bodies (e each),
    patch_ints; F placements (n, 4, 4), extent (n, 3), hull_points (., 3), radii, poses (n, 4,
    4), lowest, entry_point (e, 3), entry_distance (e), entry_params (e, 5), patch_floats (2 V,
    3)."""
    m, nh, npts, ne, nw = I[0], I[1], I[2], I[3], I[4]  # (m shapes, ne slots)
    a = 5
    bodies, kind = span(I, a, a + m), span(I, a + m, a + 2 * m)
    material_index = span(I, a + 2 * m, a + 3 * m)
    a += 3 * m
    hull = span(I, a, a + nh)
    a += nh
    first_slot = span(I, a, a + m + 1)
    a += m + 1
    shape, slot = span(I, a, a + ne), span(I, a + ne, a + 2 * ne)
    entry_bodies = span(I, a + 2 * ne, a + 3 * ne)
    patch_ints = span(I, a + 3 * ne, a + 3 * ne + nw)
    placements = carve(F, 0, (m, 4, 4))
    a = 16 * m
    extent = carve(F, a, (m, 3))
    a += 3 * m
    hull_points = carve(F, a, (npts, 3))
    a += 3 * npts
    radii = span(F, a, a + m)
    a += m
    poses = carve(F, a, (m, 4, 4))
    a += 16 * m
    lowest = span(F, a, a + m)
    a += m
    point = carve(F, a, (ne, 3))
    a += 3 * ne
    distance = span(F, a, a + ne)
    entry_params = carve(F, a + ne, (ne, 5))
    a += 6 * ne
    patch_floats = carve(F, a, ((nw - 7) // 2, 3))  # (2 V rows: nw = 4 V + 7)
    _world_poses(R, T, bodies, placements, poses)
    _lowest(poses, kind, extent, hull, hull_points, lowest)
    n, others = _ground_entries(poses, radii, extent, lowest, kind, first_slot, reach, slack, h,
                                margin, shape, slot, point, distance, patches[0], patches[1],
                                patches[2], hull, hull_points, patch_floats, patch_ints)
    for e in range(n):
        for i in range(5):
            entry_params[e, i] = params[material_index[shape[e]], i]
        entry_bodies[e] = bodies[shape[e]]
    _robot_bounds(poses, radii, margin, bounds, row)
    return n, others
