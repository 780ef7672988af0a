"""A plain-data summary of a :class:`RobotModel`: what `raisimcli inspect` shows, as JSON or as
tables. The schema is documented in docs/cli.md (`raisimcli-inspect`, version 2)."""

from __future__ import annotations

import math
import os

import numpy as np

from raisimcli.model.types import RobotModel

SCHEMA = "raisimcli-inspect"
SCHEMA_VERSION = 2


def _num(x):
    """JSON number, or None for +-inf (no limit)."""
    x = float(x)
    return x if math.isfinite(x) else None


def _vec(v):
    return None if v is None else [float(x) for x in np.asarray(v).ravel()]


def outside_model_folder(model: RobotModel, g) -> bool:
    """A mesh given by an absolute or file:// path that lies outside the URDF's folder."""
    if g.mesh is None or g.uri is None or g.uri.startswith("package://"):
        return False
    if not (g.uri.startswith("file://") or os.path.isabs(g.uri)):
        return False
    folder = os.path.dirname(os.path.realpath(model.path))
    return os.path.commonpath([folder, os.path.realpath(g.mesh)]) != folder


def summarize(model: RobotModel) -> dict:
    parent_joint = {j.child: j.name for j in model.joints}
    links = []
    for link in model.links:
        ine = link.inertial
        links.append({
            "name": link.name,
            "body": link.body,
            "parent_joint": parent_joint.get(link.name),
            "mass": ine.mass if ine else 0.0,
            "com": _vec(ine.com) if ine else None,
            "inertia": [_vec(r) for r in ine.inertia] if ine else None,
            "collisions": [{"kind": g.kind, "size": list(g.size), "mesh": g.mesh,
                            "outside_model_folder": outside_model_folder(model, g),
                            "origin_xyz": _vec(g.origin[:3, 3])} for g in link.collisions],
        })
    joints = []
    for j in model.joints:
        joints.append({
            "name": j.name, "type": j.type, "parent": j.parent, "child": j.child,
            "q": [j.q_slice.start, j.q_slice.stop], "u": [j.u_slice.start, j.u_slice.stop],
            "axis": _vec(j.axis) if j.nv == 1 else None,
            "origin_xyz": _vec(j.origin[:3, 3]),
            "lower": _num(j.lower), "upper": _num(j.upper), "effort": _num(j.effort),
            "velocity": _num(j.velocity), "damping": j.damping, "friction": j.friction,
            "rotor_inertia": j.rotor_inertia, "stiffness": j.stiffness,
            "spring_mount": _vec(j.spring_mount) if j.stiffness else None,
            "mimic": None if j.mimic is None else {"joint": j.mimic.joint,
                                                   "multiplier": j.mimic.multiplier,
                                                   "offset": j.mimic.offset},
        })
    actuators = []
    for a in model.actuators:
        m = a.motor
        actuators.append({
            "name": a.name, "joint": a.joint, "gear_ratio": a.gear_ratio,
            "output_damping": a.output_damping, "output_friction": a.output_friction,
            "couplings": [{"joint": c, "ratio": r} for c, r in a.couplings],
            "motor": {"resistance": m.resistance, "torque_constant": m.torque_constant,
                      "velocity_constant": m.velocity_constant, "bus_voltage": m.bus_voltage,
                      "peak_torque": _num(m.peak_torque), "stall_torque": m.stall_torque,
                      "back_emf_damping": m.back_emf_damping, "no_load_speed": m.no_load_speed},
            "joint_stall_torque": min(m.stall_torque, m.peak_torque) * a.gear_ratio,
            "joint_no_load_speed": m.no_load_speed / a.gear_ratio,
        })
    constraints = [{"kind": c.kind, "body1": c.body1, "body2": c.body2, "anchor": _vec(c.anchor),
                    "axes": [_vec(a) for a in c.axes]} for c in model.constraints]
    return {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION,
        "file": model.path, "name": model.name, "base": model.base, "root_link": model.root_link,
        "nq": model.nq, "nv": model.nv, "total_mass": model.total_mass,
        "moving_mass": model.moving_mass,
        "coordinates": list(model.coordinate_names), "dofs": list(model.dof_names),
        "bodies": [list(b) for b in model.bodies],
        "links": links, "joints": joints, "actuators": actuators, "constraints": constraints,
        "nominal_config": _vec(model.nominal_config),
        "files": list(model.files),
        "warnings": [{"code": w.code, "file": w.file, "line": w.line, "element": w.element,
                      "message": w.message} for w in model.warnings],
    }
