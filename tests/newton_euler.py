"""Newton-Euler on every body of a robot, for inverse-dynamics tests: the joint wrenches, gravity
and the other loads on a body sum to the rate of change of its momentum, taken by finite
differences of its velocity over one (tiny) step."""

import numpy as np

from conftest import assert_close


def body_momenta(r) -> dict:
    """Per moving body: (mass, COM, linear momentum, angular momentum about the COM), world frame,
    from the links' inertials and the API's frame kinematics."""
    m = r.model
    links = {link.name: link for link in m.links}
    out = {}
    for b, names in enumerate(m.bodies):
        if b == 0:
            continue
        parts, mass, mc = [], 0.0, np.zeros(3)
        for name in names:
            ine = links[name].inertial
            if ine is None:
                continue
            R = r.get_frame_orientation(name)
            c = r.get_frame_position(name) + R @ ine.com
            v, w = r.get_frame_velocity(name)
            parts.append((ine.mass, c, v + np.cross(w, R @ ine.com), R @ ine.inertia @ R.T, w))
            mass += ine.mass
            mc += ine.mass * c
        com = mc / mass
        P = sum(p[0] * p[2] for p in parts)
        L = sum(p[3] @ p[4] + p[0] * np.cross(p[1] - com, p[2]) for p in parts)
        out[b] = (mass, com, P, L)
    return out


def check_newton_euler(r, before, after, dt, joint_pos, gravity, loads) -> None:
    """`before`/`after`: body_momenta around the step; `joint_pos`: joint positions at the step's
    start; `loads(b, com)` -> (force, torque about com) of the other loads on body b."""
    m = r.model
    links = {link.name: link for link in m.links}
    parent = {links[j.child].body: j for j in m.joints if j.type != "fixed"}
    for b, (mass, com, P0, L0) in before.items():
        dP, dL = (after[b][2] - P0) / dt, (after[b][3] - L0) / dt
        j = parent[b]
        F = r.get_force_at_joint_in_world_frame(j.name)
        T = r.get_torque_at_joint_in_world_frame(j.name) + np.cross(joint_pos[j.name] - com, F)
        for c in m.joints:
            if c.type != "fixed" and c.parent in m.bodies[b]:
                Fc = r.get_force_at_joint_in_world_frame(c.name)
                F = F - Fc
                T = T - r.get_torque_at_joint_in_world_frame(c.name) - np.cross(
                    joint_pos[c.name] - com, Fc)
        Fl, Tl = loads(b, com)
        F = F + mass * np.asarray(gravity) + Fl
        T = T + Tl
        scale = max(1.0, np.abs(dP).max(), np.abs(F).max())
        assert_close(F, dP, rtol=1e-6, atol=1e-6 * scale, what=f"force on body {b}")
        assert_close(T, dL, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(dL).max()),
                     what=f"torque on body {b}")
