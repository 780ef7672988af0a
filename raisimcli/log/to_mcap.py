"""A log as an MCAP file (https://mcap.dev) for Foxglove and the ROS 2 tools: `raisimcli export
run.h5 --format mcap -o run.mcap` (docs/cli.md). Messages are JSON with a JSON Schema each; the
links' poses use Foxglove's `foxglove.FrameTransforms` schema, which Foxglove's 3D panel reads
as a transform tree. Needs the `mcap` package (the extra `[mcap]`).

Topics, one message per log row at the row's time (ns since the start of the run):

- `/tf`: every link of every robot in the world frame (`foxglove.FrameTransforms`): frame ids
  are the URDF's link names (`robot/link` when the log holds several robots), the parent
  `world`; poses from Pinocchio's forward kinematics of the logged q (the replay's).
- `/<robot>/joint_states`: the DoFs' names, q (one number per 1-DoF joint, a floating base's
  and spherical joints' coordinates by their coordinate names), u, and the total torque.
- `/<robot>/torque`: the torque table by source (`torque/<source>`).
- `/<robot>/joint_wrenches`: inverse dynamics' force and torque at each joint (when logged).
- `/contacts`: each contact's bodies, point and force (when logged).
- `/<robot>/robot_description`: the URDF text once, at time 0 (`std_msgs/msg/String`'s one
  field `data`); the file also holds it as an attachment `<robot>.urdf`.

A number that is not finite (a diverged run's last row) is written as null: JSON has no NaN.
"""

from __future__ import annotations

import json

import numpy as np

from raisimcli.errors import LogError, UsageError
from raisimcli.log.reader import LogFile, _text, reading


def _schema(name: str, properties: dict) -> tuple[str, bytes]:
    return name, json.dumps({"title": name, "type": "object",
                             "properties": properties}).encode()


_TIME = {"type": "object", "properties": {"sec": {"type": "integer"},
                                          "nsec": {"type": "integer"}}}
_NUMBERS = {"type": "array", "items": {"type": "number"}}
_STRINGS = {"type": "array", "items": {"type": "string"}}
_XYZ = {"type": "object", "properties": {c: {"type": "number"} for c in "xyz"}}
_QUATERNION = {"type": "object", "properties": {c: {"type": "number"} for c in "xyzw"}}
# Foxglove's FrameTransforms (https://docs.foxglove.dev/docs/sdk/schemas/frame-transforms)
FRAME_TRANSFORMS = _schema("foxglove.FrameTransforms", {"transforms": {
    "type": "array", "items": {"type": "object", "properties": {
        "timestamp": _TIME, "parent_frame_id": {"type": "string"},
        "child_frame_id": {"type": "string"}, "translation": _XYZ, "rotation": _QUATERNION}}}})
JOINT_STATE = _schema("raisimcli.JointState", {
    "timestamp": _TIME, "coordinate_names": _STRINGS, "position": _NUMBERS,
    "dof_names": _STRINGS, "velocity": _NUMBERS, "effort": _NUMBERS})
TORQUE = _schema("raisimcli.TorqueBySource", {
    "timestamp": _TIME, "dof_names": _STRINGS,
    "sources": {"type": "object", "additionalProperties": _NUMBERS}})
WRENCHES = _schema("raisimcli.JointWrenches", {
    "timestamp": _TIME, "joint_names": _STRINGS,
    "force_world": {"type": "array", "items": _XYZ},
    "torque_world": {"type": "array", "items": _XYZ}})
CONTACTS = _schema("raisimcli.Contacts", {
    "timestamp": _TIME, "contacts": {"type": "array", "items": {"type": "object", "properties": {
        "body_a": {"type": "string"}, "body_b": {"type": "string"}, "position": _XYZ,
        "force": _XYZ}}}})
STRING = _schema("std_msgs/msg/String", {"data": {"type": "string"}})


def _json(message: dict) -> bytes:
    """The message as strict JSON: a number that is not finite (a diverged run's last row)
    becomes null, since JSON has no NaN or infinity."""
    try:
        return json.dumps(message, allow_nan=False).encode()
    except ValueError:
        return json.dumps(_finite(message), allow_nan=False).encode()


def _finite(value):
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _stamp(ns: int) -> dict:
    return {"sec": ns // 1_000_000_000, "nsec": ns % 1_000_000_000}


def _xyz(v) -> dict:
    return {"x": float(v[0]), "y": float(v[1]), "z": float(v[2])}


def _names(ds) -> list[str]:
    return [str(_text(x)) for x in ds[()]]


def write_mcap(log_path: str, out_path: str) -> dict:
    """Write the log at `log_path` as MCAP into the open binary file or path `out_path`;
    returns {topic: number of messages}."""
    try:
        from mcap.writer import Writer
    except ImportError:
        raise UsageError("--format mcap needs the mcap package: pip install "
                         "'raisimcli[mcap]' (or pip install mcap)") from None
    from raisimcli.model.pinocchio_model import build_pinocchio_model
    from raisimcli.replay.scene import link_poses, robot_model
    counts: dict[str, int] = {}
    with LogFile(log_path, check=True) as log, reading(log_path):
        names = log.robot_names
        if not names:
            raise LogError(f"{log_path}: the log holds no robot (no group under /robots)")
        time = log.time
        stamps = np.round(time * 1e9).astype(np.int64)
        own = open(out_path, "wb") if isinstance(out_path, str) else None
        try:
            writer = Writer(own or out_path)
            writer.start(profile="", library="raisimcli")
            schema_ids = {}

            def channel(topic: str, schema: tuple[str, bytes]) -> int:
                if schema[0] not in schema_ids:
                    schema_ids[schema[0]] = writer.register_schema(schema[0], "jsonschema",
                                                                   schema[1])
                counts[topic] = 0
                return writer.register_channel(topic, "json", schema_ids[schema[0]])

            def put(channel_id: int, topic: str, ns: int, message: dict) -> None:
                writer.add_message(channel_id, int(ns), _json(message), int(ns), counts[topic])
                counts[topic] += 1

            tf = channel("/tf", FRAME_TRANSFORMS)
            frames_of = {}
            for name in names:
                model, q = robot_model(log, log_path, name)
                pm = build_pinocchio_model(model)
                links = [link.name for link in model.links]
                pos, quat = link_poses(pm, q, [pm.link_frame[n] for n in links])
                prefix = "" if len(names) == 1 else f"{name}/"
                frames_of[name] = ([prefix + n for n in links], pos, quat)
                g = log.f[f"robots/{name}"]
                writer.add_attachment(0, 0, f"{name}.urdf", "application/xml",
                                      str(_text(g["urdf"][()])).encode())
                topic = f"/{name}/robot_description"
                put(channel(topic, STRING), topic, 0, {"data": str(_text(g["urdf"][()]))})
            for k, ns in enumerate(stamps):
                transforms = []
                for frame_ids, pos, quat in frames_of.values():
                    for j, child in enumerate(frame_ids):
                        x, y, z, w = (float(c) for c in quat[k, j])
                        transforms.append({"timestamp": _stamp(int(ns)),
                                           "parent_frame_id": "world", "child_frame_id": child,
                                           "translation": _xyz(pos[k, j]),
                                           "rotation": {"x": x, "y": y, "z": z, "w": w}})
                put(tf, "/tf", ns, {"transforms": transforms})
            for name in names:
                _robot_topics(log, name, stamps, channel, put)
            if "contacts" in log.f:
                _contact_topic(log, stamps, channel, put)
            writer.finish()
        finally:
            if own is not None:
                own.close()
    return counts


def _robot_topics(log: LogFile, name: str, stamps, channel, put) -> None:
    g = log.f[f"robots/{name}"]
    coords, dofs = _names(g["coordinate_names"]), _names(g["dof_names"])
    q, u = g["q"][()], g["u"][()]
    total = g["torque/total"][()] if "torque/total" in g else np.full(u.shape, np.nan)
    topic = f"/{name}/joint_states"
    cid = channel(topic, JOINT_STATE)
    for k, ns in enumerate(stamps):
        put(cid, topic, ns, {"timestamp": _stamp(int(ns)), "coordinate_names": coords,
                             "position": q[k].tolist(), "dof_names": dofs,
                             "velocity": u[k].tolist(), "effort": total[k].tolist()})
    if "torque" in g:
        sources = {s: ds[()] for s, ds in g["torque"].items()
                   if ds.ndim == 2 and ds.shape[1] == len(dofs) and "CLASS" not in ds.attrs}
        topic = f"/{name}/torque"
        cid = channel(topic, TORQUE)
        for k, ns in enumerate(stamps):
            put(cid, topic, ns, {"timestamp": _stamp(int(ns)), "dof_names": dofs,
                                 "sources": {s: v[k].tolist() for s, v in sources.items()}})
    if "inverse_dynamics/force_world" in g:
        joints = _names(g["joint_names"])
        force = g["inverse_dynamics/force_world"][()]
        torque = g["inverse_dynamics/torque_world"][()]
        topic = f"/{name}/joint_wrenches"
        cid = channel(topic, WRENCHES)
        for k, ns in enumerate(stamps):
            put(cid, topic, ns, {"timestamp": _stamp(int(ns)), "joint_names": joints,
                                 "force_world": [_xyz(f) for f in force[k]],
                                 "torque_world": [_xyz(t) for t in torque[k]]})


def _contact_topic(log: LogFile, stamps, channel, put) -> None:
    c = log.f["contacts"]
    start, count = c["start"][()], c["count"][()]
    position, force = c["position"][()], c["force"][()]
    bodies = _names(c["body_names"])
    a, b = c["body_a"][()], c["body_b"][()]
    cid = channel("/contacts", CONTACTS)
    for k, ns in enumerate(stamps):
        rows = range(int(start[k]), int(start[k] + count[k]))
        put(cid, "/contacts", ns, {"timestamp": _stamp(int(ns)), "contacts": [
            {"body_a": bodies[a[i]], "body_b": bodies[b[i]], "position": _xyz(position[i]),
             "force": _xyz(force[i])} for i in rows]})
