"""Inverse dynamics (spec: "Inverse Dynamics"): the force and torque at every joint, in the world
frame, after a step.

Pinocchio's RNEA runs at the step's start (q_t, u_t) with the step's actual acceleration
a = (u_{t+1} - u_t) / dt and the step's external loads; its joint forces f_i are the wrenches the
parent body transmits to body i through joint i, so they carry every load of the step: gravity,
external forces, and (through the acceleration) the actuation, damping, springs, friction, limit,
contact and constraint impulses. Rotor inertia sits on the parent side: S^T f_i is the generalized
force on the joint minus rotor_inertia * a_i.

A fixed joint's wrench is what the links welded beyond it need: their inertial wrench, less their
external loads, plus the wrenches of the moving joints below them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from raisimcli.linalg import dot, matmul


@dataclass
class JointWrenches:
    """Per joint of the model (our joint order, fixed joints included): `force`, `torque`
    (n_joints, 3) in the world frame, the torque about the joint's position at the step's start;
    `actuation` (n_joints,): axis . torque (revolute, continuous) or axis . force (prismatic),
    NaN for other joint types."""

    force: np.ndarray
    torque: np.ndarray
    actuation: np.ndarray


class InverseDynamics:
    """Precomputed structure of one robot for :meth:`compute`."""

    def __init__(self, system):
        model = system.model
        self.system = system
        links = {link.name: link for link in model.links}
        children: dict[str, list] = {}
        for j in model.joints:
            children.setdefault(j.parent, []).append(j)
        self.joints = model.joints
        self.n = len(model.joints)
        # per fixed joint: its body, its frame, the links welded beyond it, the moving joints
        # hanging from those links
        self.fixed = []
        for k, j in enumerate(model.joints):
            if j.type != "fixed":
                continue
            body = links[j.child].body
            welded, hanging, stack = [], [], [j.child]
            while stack:
                name = stack.pop()
                welded.append(name)
                for c in children.get(name, []):
                    (stack.append(c.child) if c.type == "fixed" else hanging.append(c))
            inertias = []
            for name in welded:
                ine = links[name].inertial
                if ine is not None and ine.mass > 0:
                    placement = pin.SE3(links[name].body_T_link[:3, :3].copy(),
                                        links[name].body_T_link[:3, 3].copy())
                    inertias.append(placement.act(pin.Inertia(ine.mass, np.array(ine.com),
                                                              np.array(ine.inertia))))
            origin = links[j.child].body_T_link[:3, 3].copy()  # the joint's position in the body
            self.fixed.append((k, j, body, origin, set(welded), inertias,
                               [links[c.child].body for c in hanging]))
        self.moving = [(k, links[j.child].body, j) for k, j in enumerate(model.joints)
                       if j.type != "fixed"]
        self._fext = pin.StdVec_Force()
        for _ in range(system._pm.njoints):
            self._fext.append(pin.Force.Zero())
        self._loaded: list[int] = []  # bodies whose entry of _fext is not zero

    def compute(self, q, u, a, loads) -> JointWrenches:
        """Wrenches of a step that started at (q, u) (ours) with acceleration a (nv,); `loads`:
        the step's point loads (see ArticulatedSystem)."""
        s = self.system
        pm, data = s._pm, s._idyn_data
        s._sync_gravity(s._gravity)
        conv = s.conv
        q_pin = q[s.pinocchio.q_to_pin]
        if conv.identity:
            u_pin, a_pin = u, a
        else:
            T = conv.velocity_transform(q)
            u_pin = matmul(T.T, u)
            a_pin = matmul(T.T, a) + conv.bias_correction(u_pin)  # d/dt (T^T u)
        # external loads as spatial forces in each body's local frame (the step's kinematics)
        fext = self._fext
        for body in self._loaded:
            fext[body] = pin.Force.Zero()
        self._loaded = []
        per_link = []
        if loads:
            s._kinematics()
            for ld in loads:
                body, f_local = s._load_as_local_force(ld, s._data)
                fext[body] = fext[body] + f_local
                per_link.append((ld.link, body, f_local))
                self._loaded.append(body)
        pin.forwardKinematics(pm, data, q_pin)  # data.oMi: rnea works in local frames
        pin.rnea(pm, data, q_pin, u_pin, a_pin, fext)

        # every wrench about the world origin first, then moved to its joint's position at once
        force = np.zeros((self.n, 3))
        moment = np.zeros((self.n, 3))
        point = np.zeros((self.n, 3))
        actuation = np.full(self.n, np.nan)
        for k, body, j in self.moving:
            oMb = data.oMi[body]
            f_world = oMb.act(data.f[body])
            force[k], moment[k], point[k] = f_world.linear, f_world.angular, oMb.translation
            if j.nv == 1:
                actuation[k] = -1.0  # marks a 1-DoF joint; filled in below
        for k, j, body, frame, welded, inertias, hanging in self.fixed:
            v, acc = data.v[body], data.a_gf[body]  # a_gf[0] = -gravity: the world's own
            w = pin.Force.Zero()
            for I in inertias:
                w = w + I * acc + v.cross(I * v)
            for link, b, f_local in per_link:
                if link in welded:
                    w = w - f_local
            for c in hanging:
                w = w + data.liMi[c].act(data.f[c])
            oMb = data.oMi[body]
            f_world = oMb.act(w)
            force[k], moment[k], point[k] = f_world.linear, f_world.angular, oMb.act(frame)
        torque = moment - _cross_rows(point, force)
        for k, body, j in self.moving:
            if j.nv == 1:
                axis = matmul(data.oMi[body].rotation, j.axis)
                actuation[k] = dot(axis, force[k] if j.type == "prismatic" else torque[k])
        return JointWrenches(force, torque, actuation)


def _cross_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise a x b of (n, 3) arrays (np.cross is slow on small arrays)."""
    return np.stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1],
                     a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                     a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], axis=1)
