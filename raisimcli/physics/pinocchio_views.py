"""Zero-copy numpy views of Pinocchio's per-joint buffers, for compiled loops over all joints.

`data.oMi` (placements) and `data.f` (spatial forces) are C++ std::vectors of fixed-size Eigen
objects, allocated once by `model.createData()`. Reading them element by element from Python
costs about a microsecond per access (a new wrapper each time); a compiled kernel needs them as
arrays. eigenpy hands out each element's rotation, translation, linear and angular parts as
numpy arrays over the vector's own memory, at a constant stride: from the addresses of elements
0 and 1 we build one strided view of all of them. The views are checked against the accessors
(every element, every entry, after a forward pass at a random configuration) when they are made;
if eigenpy ever returned copies or the layout differed, `placement_views` and `force_views`
return None and the callers keep their element-by-element path.

The views stay valid as long as the data object lives (the vectors are never resized after
`createData`); keep a reference to it beside them.
"""

from __future__ import annotations

import ctypes
import types

import numpy as np
import pinocchio as pin


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _view(base: int, count: int, stride: int, shape: tuple, strides: tuple,
          span: int) -> np.ndarray:
    buf = (ctypes.c_char * (stride * (count - 1) + span)).from_address(base)
    return np.ndarray((count,) + shape, dtype=np.float64, buffer=buf,
                      strides=(stride,) + strides)


def placement_views(data, n: int, name: str = "oMi"):
    """(rotation (n, 3, 3), translation (n, 3)) views of data.oMi (or another vector of SE3), or
    None."""
    if n < 2:
        return None
    vec = getattr(data, name)
    r0, r1 = vec[0].rotation, vec[1].rotation
    t0 = vec[0].translation
    if r0.flags["OWNDATA"] or r0.strides != (8, 24) or t0.strides != (8,):
        return None
    stride = _address(r1) - _address(r0)
    R = _view(_address(r0), n, stride, (3, 3), (8, 24), 72)
    T = _view(_address(t0), n, stride, (3,), (8,), 24)
    return R, T


def force_views(data, n: int, name: str = "f"):
    """(linear (n, 3), angular (n, 3)) views of data.f (or another vector of spatial forces or
    motions: data.v, data.a_gf), or None."""
    if n < 2:
        return None
    vec = getattr(data, name)
    l0, l1, a0 = vec[0].linear, vec[1].linear, vec[0].angular
    if l0.flags["OWNDATA"] or l0.strides != (8,) or a0.strides != (8,):
        return None
    stride = _address(l1) - _address(l0)
    return (_view(_address(l0), n, stride, (3,), (8,), 24),
            _view(_address(a0), n, stride, (3,), (8,), 24))


def checked_force_vector(forces) -> tuple[np.ndarray, np.ndarray] | None:
    """(linear (n, 3), angular (n, 3)) views of a pin.StdVec_Force (the external forces given
    to rnea), checked both ways: values written through the accessors are read in the views,
    and values written in the views are read by the accessors; the vector is zero afterwards.
    None if anything differs."""
    n = len(forces)
    views = force_views(types.SimpleNamespace(f=forces), n)
    if views is None:
        return None
    L, A = views
    rng = np.random.default_rng(11)
    ok = True
    for k in range(n):
        lin, ang = rng.standard_normal(3), rng.standard_normal(3)
        forces[k] = pin.Force(lin, ang)
        ok = ok and np.array_equal(L[k], lin) and np.array_equal(A[k], ang)
    L[:] = rng.standard_normal((n, 3))
    A[:] = rng.standard_normal((n, 3))
    for k in range(n):
        ok = ok and np.array_equal(forces[k].linear, L[k]) and \
            np.array_equal(forces[k].angular, A[k])
        forces[k] = pin.Force.Zero()
    return views if ok and not L.any() and not A.any() else None


def checked_views(model, data):
    """Views of `data` (of `model`): (R, T) of oMi, (L, A) of f, checked entry by entry against
    the accessors after a forward pass and an RNEA at a random configuration; None if anything
    differs. extra_views(data) gives liMi, v and a_gf, checked the same way by this call."""
    n = model.njoints
    placements, forces = placement_views(data, n), force_views(data, n)
    if placements is None or forces is None or extra_views(data, n) is None:
        return None
    rng = np.random.default_rng(7)
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    v, a = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    pin.forwardKinematics(model, data, q)
    pin.rnea(model, data, q, v, a)
    R, T = placements
    L, A = forces
    (lR, lT), (vL, vA), (aL, aA) = extra_views(data, n)
    for k in range(n):
        if not (np.array_equal(R[k], data.oMi[k].rotation) and
                np.array_equal(T[k], data.oMi[k].translation) and
                np.array_equal(L[k], data.f[k].linear) and
                np.array_equal(A[k], data.f[k].angular) and
                np.array_equal(lR[k], data.liMi[k].rotation) and
                np.array_equal(lT[k], data.liMi[k].translation) and
                np.array_equal(vL[k], data.v[k].linear) and
                np.array_equal(vA[k], data.v[k].angular) and
                np.array_equal(aL[k], data.a_gf[k].linear) and
                np.array_equal(aA[k], data.a_gf[k].angular)):
            return None
    return R, T, L, A


def checked_placements(model, data, name: str = "oMi"):
    """(R, T) views of data.oMi, the bodies' world placements (or of data.oMf, the frames', with
    `name` "oMf"), checked entry by entry against the accessors after a forward pass (and
    updateFramePlacements) at a random configuration; None if they cannot be made or differ."""
    n = model.nframes if name == "oMf" else model.njoints
    views = placement_views(data, n, name)
    if views is None:
        return None
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    pin.forwardKinematics(model, data, q)
    if name == "oMf":
        pin.updateFramePlacements(model, data)
    R, T = views
    vec = getattr(data, name)
    for k in range(n):
        if not (np.array_equal(R[k], vec[k].rotation) and
                np.array_equal(T[k], vec[k].translation)):
            return None
    return views


def extra_views(data, n: int):
    """((R, T) of liMi, (linear, angular) of v, (linear, angular) of a_gf), or None."""
    views = (placement_views(data, n, "liMi"), force_views(data, n, "v"),
             force_views(data, n, "a_gf"))
    return None if any(v is None for v in views) else views
