"""What a replay shows, read from a log: each robot's shapes, their links' poses at the replay's
frames (Pinocchio's forward kinematics of the logged q through the robot's model, the model
the run simulated), the ground and static boxes of the scenario, the contacts' points and
forces, and the torque table, all at the frames' rows.

The result (`Scene.data`) is plain JSON: numbers, strings, and arrays as base64 of their
little-endian bytes (`{"f64": ...}`, `{"f32": ...}`, `{"u32": ...}`), which the page decodes.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from raisimcli.errors import LogError, ModelError
from raisimcli.linalg import symmetric_eigen
from raisimcli.log.reader import LogFile, _text, reading
from raisimcli.model.pinocchio_model import build_pinocchio_model
from raisimcli.model.types import Geometry, RobotModel
from raisimcli.model.urdf import load_urdf_string, visual_shapes
from raisimcli.model.xml import rpy_to_matrix

FPS = 60  # the most frames a replay shows per second of simulated time
ARROW = 0.25  # m: the length of the largest contact force's arrow
_MIN_BOX = 0.01  # m: the thinnest side of a link's inertia box


@dataclass
class Scene:
    """`data`: the replay's JSON (the module's docstring); `warnings`: what could not be drawn
    as the URDF says (a mesh that cannot be read, a visual left out), one line each; `frames`:
    the number of frames; `meshes`: the mesh files drawn."""

    data: dict
    warnings: list[str] = field(default_factory=list)
    frames: int = 0
    meshes: list[str] = field(default_factory=list)


def _b64(a: np.ndarray, kind: str) -> dict:
    dtype = {"f64": "<f8", "f32": "<f4", "u32": "<u4"}[kind]
    return {kind: base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode()}


def frame_rows(time: np.ndarray, fps: float = FPS) -> np.ndarray:
    """The log rows a replay shows: the first row in each 1/fps of simulated time (from t = 0),
    and the last row."""
    if len(time) == 0:
        return np.zeros(0, dtype=int)
    slots = np.floor(np.asarray(time) * fps + 1e-9).astype(np.int64)
    rows = np.flatnonzero(np.diff(slots, prepend=slots[0] - 1))
    if rows[-1] != len(time) - 1:
        rows = np.append(rows, len(time) - 1)
    return rows


def read_scene(path: str, fps: float = FPS, *, ghost: str | None = None,
               start: float = 0.0) -> Scene:
    """The scene of the log at `path` (LogError for a log that cannot be replayed). `ghost`:
    another log (a golden one) whose robots are shown too, translucent, each at its row at or
    before each frame's time; `start`: the time the page opens at."""
    with LogFile(path, check=True) as log, reading(path):
        scene = _scene(log, path, fps)
    scene.data["start"] = float(start)
    if ghost is not None:
        time = _decode_f64(scene.data["time"])
        with LogFile(ghost, check=True) as log, reading(ghost):
            scene.data["robots"] += _ghosts(log, ghost, time, scene)
        scene.data["ghost_file"] = os.path.basename(ghost)
    return scene


def _decode_f64(packed: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(packed["f64"]), dtype="<f8")


def _ghosts(log: LogFile, path: str, frame_time: np.ndarray, scene: Scene) -> list[dict]:
    """The robots of the log at `path`, at its rows at or before the frames' times (the first
    row before its first row's time), named `name (golden)`."""
    time = log.time
    if not log.robot_names or len(time) == 0:
        raise LogError(f"{path}: the log holds no robot or no row: nothing to replay")
    rows = np.clip(np.searchsorted(time, frame_time[1:] + 1e-12, side="right") - 1, 0, None)
    robots = []
    for name in log.robot_names:
        r = _robot(log, path, name, rows, scene.data["meshes"], scene)
        r.update(name=f"{name} (golden)", ghost=True)
        robots.append(r)
    scene.meshes = list(scene.data["meshes"])
    return robots


def _scene(log: LogFile, path: str, fps: float) -> Scene:
    names = log.robot_names
    if not names:
        raise LogError(f"{path}: the log holds no robot (no group under /robots): nothing to "
                       "replay")
    time = log.time
    if len(time) == 0:
        raise LogError(f"{path}: the log has no rows (the run stopped before its first step): "
                       "nothing to replay")
    rows = frame_rows(time, fps)
    frame_time = np.concatenate([[0.0], time[rows]])  # frame 0: the initial state
    config = json.loads(_text(log.f["meta/config"][()])) if "meta/config" in log.f else {}
    scene = Scene(data={}, frames=len(frame_time))
    meshes: dict[str, dict] = {}
    robots = [_robot(log, path, name, rows, meshes, scene) for name in names]
    scene.data = {
        "title": str(_text(log.attrs.get("scenario_name", "")) or os.path.basename(path)),
        "file": os.path.basename(path),
        "status": log.status,
        "time": _b64(frame_time, "f64"),
        "frames": len(frame_time),
        "robots": robots,
        "meshes": meshes,
        "world": _world(config),
        "contacts": _contacts(log, rows),
    }
    scene.meshes = list(meshes)
    return scene


def robot_model(log: LogFile, path: str, name: str) -> tuple[RobotModel, np.ndarray]:
    """The model of robot `name` of the log at `path`, read again from the URDF text the log
    holds (as the run read it: its base, mesh paths from its URDF's folder), and its logged q
    (T, nq); LogError when either is missing or they do not fit."""
    g = log.f[f"robots/{name}"]
    where = f"{path}: robots/{name}"
    if "urdf" not in g:
        raise LogError(f"{where}/urdf is missing: the log does not hold the robot's URDF text, "
                       "so its links cannot be placed")
    if "q" not in g:
        raise LogError(f"{where}/q is missing: the log does not hold the robot's state")
    text = _text(g["urdf"][()])
    urdf_path = str(_text(g.attrs.get("urdf_path", f"{name}.urdf")))
    try:
        model = load_urdf_string(text, path=urdf_path, base=_text(g.attrs.get("base")))
    except ModelError as e:
        raise LogError(f"{where}/urdf cannot be read again ({e})") from None
    q_all = g["q"][()]
    if q_all.shape[1] != model.nq:
        raise LogError(f"{where}/q has {q_all.shape[1]} columns, but the robot's URDF gives "
                       f"nq = {model.nq}")
    return model, q_all


def _robot(log: LogFile, path: str, name: str, rows, meshes: dict, scene: Scene) -> dict:
    g = log.f[f"robots/{name}"]
    model, q_all = robot_model(log, path, name)
    q = np.concatenate([g["initial_q"][()][None], q_all[rows]]) if "initial_q" in g else \
        np.concatenate([q_all[rows[:1]], q_all[rows]])
    pm = build_pinocchio_model(model)
    visuals, warnings = visual_shapes(model)
    scene.warnings += [str(w) for w in warnings]
    links, frames = [], []
    inertia_boxes = not any(visuals.values())  # (a robot drawn from its collision shapes)
    for link in model.links:
        shapes = _link_shapes(link, visuals.get(link.name, ()), meshes, scene, inertia_boxes)
        if shapes:
            links.append({"name": link.name, "shapes": shapes})
            frames.append(pm.link_frame[link.name])
    pos, quat = link_poses(pm, q, frames)
    return {
        "name": name,
        "base": model.root_link,
        "root_joint": model.joints[0].name if model.joints and model.joints[0].parent is None
        else "",
        "links": links,
        "position": _b64(pos, "f64"),
        "quaternion": _b64(quat, "f32"),
        "torque": _torque(g, rows, model),
        "ghost": False,
    }


def link_poses(pm, q: np.ndarray, frames: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(F, L, 3) positions and (F, L, 4) quaternions (x, y, z, w) of the frames `frames` at
    each q (our coordinates; Pinocchio's through q_to_pin)."""
    model = pm.model
    data = model.createData()
    pos = np.zeros((len(q), len(frames), 3))
    quat = np.zeros((len(q), len(frames), 4))
    for k, qk in enumerate(q):
        pin.framesForwardKinematics(model, data, np.asarray(qk, dtype=float)[pm.q_to_pin])
        for j, fid in enumerate(frames):
            M = data.oMf[fid]
            pos[k, j] = M.translation
            quat[k, j] = pin.Quaternion(M.rotation).coeffs()
    return pos, quat


def _link_shapes(link, visuals: tuple[Geometry | None, ...], meshes: dict, scene: Scene,
                 inertia_box: bool) -> list:
    """A link's shapes as drawn: its visuals; where it has none, its collision shapes; where it
    has neither, the box of its inertia when `inertia_box` (a robot without any visual). A link
    whose visuals cannot be drawn (None: not read; a mesh that cannot be read) gets its
    collision shapes, or else the box of its inertia, with a warning."""
    drawn = [d for d in (_shape(g, "visual", meshes, scene) for g in visuals if g is not None)
             if d is not None]
    if drawn:
        return drawn
    collisions = [d for d in (_shape(g, "collision", meshes, scene) for g in link.collisions)
                  if d is not None]
    box = _inertia_box(link) if not collisions and (visuals or inertia_box) else None
    if visuals:
        instead = "its collision shapes are" if collisions else \
            "the box of its inertia is" if box is not None else "nothing is"
        scene.warnings.append(f"link {link.name!r}: its <visual> cannot be drawn; {instead} "
                              "drawn instead")
    return collisions or ([box] if box is not None else [])


def _origin(T: np.ndarray) -> dict:
    return {"position": [float(x) for x in T[:3, 3]],
            "quaternion": [float(x) for x in pin.Quaternion(np.array(T[:3, :3])).coeffs()]}


def _shape(g: Geometry, kind: str, meshes: dict, scene: Scene) -> dict | None:
    d = {"kind": g.kind, "source": kind, **_origin(g.origin),
         "rgba": None if g.rgba is None else list(g.rgba)}
    if g.kind == "mesh":
        if g.mesh not in meshes:
            try:
                meshes[g.mesh] = _mesh(g.mesh)
            except ModelError as e:
                scene.warnings.append(str(e))
                meshes[g.mesh] = None
        if meshes[g.mesh] is None:
            return None
        d.update(mesh=g.mesh, scale=list(g.scale))
    else:
        d["size"] = list(g.size)
    return d


def _mesh(path: str) -> dict:
    """A mesh file's triangles (trimesh reads STL, OBJ, DAE; a scene of several meshes is
    joined), or ModelError."""
    import trimesh
    try:
        # the scene's meshes placed in its frame and joined here: trimesh's own join
        # (force="mesh") copies them again, twice as slow on DAE files
        parts = [g for g in trimesh.load(path, force="scene")
                 .dump(concatenate=False) if len(getattr(g, "faces", ())) > 0]
        offsets = np.cumsum([0] + [len(g.vertices) for g in parts])
        vertices = np.concatenate([np.asarray(g.vertices, dtype=float) for g in parts] or
                                  [np.zeros((0, 3))])
        faces = np.concatenate([np.asarray(g.faces, dtype=np.int64) + k
                                for g, k in zip(parts, offsets)] or [np.zeros((0, 3), int)])
    except Exception as e:  # noqa: BLE001  (trimesh raises many kinds)
        detail = "unrecognised content" if isinstance(e, ImportError) else \
            str(e) or type(e).__name__
        raise ModelError(f"cannot draw the mesh {path}: trimesh cannot read it ({detail})") \
            from None
    if len(faces) == 0:
        raise ModelError(f"cannot draw the mesh {path}: it has no triangle")
    return {"vertices": _b64(vertices.ravel(), "f32"), "faces": _b64(faces.ravel(), "u32")}


def _inertia_box(link) -> dict | None:
    """The uniform box with the link's mass and inertia (sides from the principal moments),
    at its centre of mass along its principal axes; None for a link without mass."""
    ine = link.inertial
    if ine is None or ine.mass <= 0:
        return None
    eig, axes = symmetric_eigen(ine.inertia)
    i1, i2, i3 = eig
    sides = np.sqrt(np.maximum(6.0 / ine.mass * np.array([i2 + i3 - i1, i1 + i3 - i2,
                                                          i1 + i2 - i3]), 0.0))
    if np.linalg.det(axes) < 0:
        axes[:, 2] *= -1
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = axes, ine.com
    return {"kind": "box", "source": "inertia", **_origin(T), "rgba": None,
            "size": [float(max(s, _MIN_BOX)) for s in sides]}


def _torque(g, rows, model: RobotModel) -> dict:
    """The torque table at the frames: per source (F, nv), frame 0 (the initial state) NaN."""
    if "torque" not in g:
        return {"dofs": list(model.dof_names), "units": [], "sources": {}}
    units = [str(_text(u)) for u in g["force_units"][()]] if "force_units" in g else []
    sources = {}
    for source, ds in g["torque"].items():
        if ds.ndim != 2 or ds.shape[1] != model.nv or "CLASS" in ds.attrs:  # (its scales)
            continue
        data = ds[()][rows]
        first = np.full((1, data.shape[1]), np.nan)
        sources[source] = _b64(np.concatenate([first, data]), "f32")
    return {"dofs": list(model.dof_names), "units": units, "sources": sources}


def _world(config: dict) -> dict:
    world = config.get("world") or {}
    ground = world.get("ground")
    return {
        "ground": None if ground is None else float(ground.get("height", 0.0)),
        "boxes": [{"name": b["name"], "size": list(b["size"]),
                   **_origin(_pose(b.get("position", [0, 0, 0]), b.get("rpy", [0, 0, 0])))}
                  for b in world.get("box") or []],
    }


def _pose(position, rpy) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = rpy_to_matrix(rpy), position
    return T


def _contacts(log: LogFile, rows) -> dict | None:
    """Each frame's contact points and forces (on body A), and the arrows' scale (m per N)."""
    if "contacts" not in log.f:
        return None
    c = log.f["contacts"]
    start, count = c["start"][()][rows], c["count"][()][rows]
    index = np.concatenate([np.arange(s, s + n) for s, n in zip(start, count)] + [[]]) \
        .astype(np.int64)
    position = c["position"][()][index] if len(index) else np.zeros((0, 3))
    force = c["force"][()][index] if len(index) else np.zeros((0, 3))
    norms = np.linalg.norm(force, axis=1)
    norms = norms[np.isfinite(norms)]  # (a diverged run's last row)
    largest = float(norms.max()) if len(norms) else 0.0
    return {"count": _b64(np.concatenate([[0], count]), "u32"),
            "position": _b64(position, "f32"), "force": _b64(force, "f32"),
            "scale": ARROW / largest if largest > 0 else 0.0, "largest": largest}
