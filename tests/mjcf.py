"""Test-only: write a RobotModel as MJCF for MuJoCo, the independent dynamics oracle.

The MJCF body tree mirrors the URDF link tree one link per body (a fixed joint is a body without a
joint, so MuJoCo does its own merging). Conventions (documented conversion):

- free joint: qpos [position, quaternion w x y z], qvel [world linear velocity, LOCAL angular
  velocity]; ours has the world angular velocity: u_mj = S u with S = blockdiag(I, R^T).
- ball joint: qvel is the child's angular velocity in the child frame; ours is in the parent's
  joint frame: S = R_j^T.
Then M = S^T M_mj S and h = S^T (h_mj + M_mj dS/dt u) with dS/dt u = 0 for both joint kinds
(-omega_local x omega_local = 0).
"""

import numpy as np
import pinocchio as pin


def _quat(R):
    x, y, z, w = pin.Quaternion(R).coeffs()
    return f"{float(w)!r} {float(x)!r} {float(y)!r} {float(z)!r}"


def to_mjcf(model, gravity=(0, 0, -9.81), timestep=1e-3, integrator="RK4") -> str:
    links = {link.name: link for link in model.links}
    children = {}
    for j in model.joints:
        children.setdefault(j.parent, []).append(j)

    def inertial(link):
        ine = link.inertial
        if ine is None or ine.mass == 0:
            return ""
        I = ine.inertia
        c = ine.com
        if not np.any(I):  # a point mass: MuJoCo refuses zero inertia; 1e-13 kg m^2 is far below
            # the tests' tolerances
            return (f'<inertial pos="{float(c[0])!r} {float(c[1])!r} {float(c[2])!r}" '
                    f'mass="{float(ine.mass)!r}" diaginertia="1e-13 1e-13 1e-13"/>')
        return (f'<inertial pos="{float(c[0])!r} {float(c[1])!r} {float(c[2])!r}" mass="{float(ine.mass)!r}" '
                f'fullinertia="{float(I[0, 0])!r} {float(I[1, 1])!r} {float(I[2, 2])!r} {float(I[0, 1])!r} {float(I[0, 2])!r} '
                f'{float(I[1, 2])!r}"/>')

    def body(j, depth):
        T = j.origin
        p = T[:3, 3]
        out = [f'<body name="{j.child}" pos="{float(p[0])!r} {float(p[1])!r} {float(p[2])!r}" quat="{_quat(T[:3, :3])}">']
        a = j.axis
        if j.type in ("revolute", "continuous"):
            out.append(f'<joint name="{j.name}" type="hinge" axis="{float(a[0])!r} {float(a[1])!r} {float(a[2])!r}" '
                       f'armature="{float(j.rotor_inertia)!r}"/>')
        elif j.type == "prismatic":
            out.append(f'<joint name="{j.name}" type="slide" axis="{float(a[0])!r} {float(a[1])!r} {float(a[2])!r}" '
                       f'armature="{float(j.rotor_inertia)!r}"/>')
        elif j.type == "spherical":
            out.append(f'<joint name="{j.name}" type="ball" armature="{float(j.rotor_inertia)!r}"/>')
        elif j.type == "floating":
            out.append(f'<freejoint name="{j.name}"/>')
        out.append(inertial(links[j.child]))
        for c in children.get(j.child, []):
            out.append(body(c, depth + 1))
        out.append("</body>")
        return "\n".join(out)

    world = []
    if model.root_link == "world":
        for j in children.get("world", []):
            world.append(body(j, 0))
    elif model.base == "floating":
        world.append(body(model.joints[0], 0))
    else:  # fixed base, root link welded to the world
        root = links[model.root_link]
        world.append(f'<body name="{root.name}">{inertial(root)}')
        for j in children.get(root.name, []):
            world.append(body(j, 1))
        world.append("</body>")
    g = gravity
    return (f'<mujoco><compiler angle="radian" inertiafromgeom="false"/>'
            f'<option gravity="{g[0]} {g[1]} {g[2]}" timestep="{timestep}" integrator="{integrator}">'
            f'<flag contact="disable"/></option>'
            f'<worldbody>{"".join(world)}</worldbody></mujoco>')


class MujocoOracle:
    """M and h of a RobotModel computed by MuJoCo, converted to our conventions."""

    def __init__(self, model, gravity=(0, 0, -9.81), timestep=1e-3):
        import mujoco
        self.mj = mujoco
        self.robot = model
        self.m = mujoco.MjModel.from_xml_string(to_mjcf(model, gravity, timestep))
        self.d = mujoco.MjData(self.m)
        assert self.m.nq == model.nq and self.m.nv == model.nv

    def set_state(self, q, u):
        self.d.qpos[:] = q
        self.d.qvel[:] = self.S(q) @ u

    def S(self, q):
        """u_mj = S u."""
        from raisimcli.physics.conventions import quat_to_matrix
        S = np.eye(self.robot.nv)
        for j in self.robot.moving_joints:
            us, qs = j.u_slice.start, j.q_slice.start
            if j.type == "floating":
                S[us + 3:us + 6, us + 3:us + 6] = quat_to_matrix(q[qs + 3:qs + 7]).T
            elif j.type == "spherical":
                S[us:us + 3, us:us + 3] = quat_to_matrix(q[qs:qs + 4]).T
        return S

    def our_velocity(self):
        """The current MuJoCo velocity in our convention."""
        return np.linalg.solve(self.S(self.d.qpos), self.d.qvel)

    def mass_and_bias(self, q, u):
        self.set_state(q, u)
        self.mj.mj_forward(self.m, self.d)
        M = np.zeros((self.m.nv, self.m.nv))
        self.mj.mj_fullM(self.m, self.d, M)
        S = self.S(q)
        return S.T @ M @ S, S.T @ self.d.qfrc_bias
