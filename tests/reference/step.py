"""One simulation step written from the specification, in plain numpy.

This is the readable reference the package's compiled step is compared with (at a tolerance, not
bit for bit). It follows the page "Dynamics and Control" of RaiSim's documentation as
docs/physics.md restates it: spec steps 1-6 of "Joint torque of a simulation step", the joint
rows of step 4, the contacts' rows and targets of docs/contacts.md, the loop and mimic
constraints of "Kinematic loops", and the four integration schemes. Dense matrices, obvious
loops, no caching, no speed concerns, and nothing imported from `raisimcli.physics`.

What it takes from elsewhere, and why that keeps it independent of the step:

- Pinocchio gives M, h and the Jacobians (the rigid-body algorithms, as in the package) in its own
  velocity coordinates; the change to ours (the floating base's velocity in the world frame, a
  spherical joint's in its parent's joint frame) is written out here from docs/conventions.md.
  The Pinocchio model is the package's `build_pinocchio_model` (the model, not the step; the
  test suite checks it against Pinocchio's own URDF reader).
- A step's contacts (points, frames, distances, materials) are the package's detection at the
  step's start: collision detection is coal's, checked against it elsewhere. Their rows, targets
  and impulses are computed here.
- The constraints are eliminated with the null-space form of the spec's "Why these are the
  reduced dynamics" (N (N^T M~ N)^-1 N^T) and a least-squares KKT solve, a second formulation of
  the package's Schur-complement elimination.
- The impulses are solved by block Gauss-Seidel to a tolerance far below the package's, with each
  contact's sliding solve done by a root search of its own (scipy's brentq). Where the problem's
  solution is unique (a Delassus matrix of full rank), both solvers find the same one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
from scipy.linalg import null_space
from scipy.optimize import brentq

from raisimcli.model.pinocchio_model import build_pinocchio_model

SOURCES = ("feedforward_pd", "damping", "actuators", "springs", "external", "joint_friction",
           "joint_limits", "contacts", "constraints")


# --- quaternions (w, x, y, z) and rotations ---------------------------------------------------
def quat_matrix(q) -> np.ndarray:
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def quat_mul(a, b) -> np.ndarray:
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
                     w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def quat_conj(q) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]])


def quat_exp(v) -> np.ndarray:
    """The unit quaternion of the rotation vector v."""
    angle = np.linalg.norm(v)
    if angle == 0:
        return np.array([1.0, 0.0, 0.0, 0.0])
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * np.asarray(v) / angle])


def quat_log(q) -> np.ndarray:
    """The rotation vector of the unit quaternion q, the shorter rotation (angle <= pi)."""
    q = np.asarray(q, dtype=float)
    if q[0] < 0:
        q = -q
    s = np.linalg.norm(q[1:])
    if s == 0:
        return np.zeros(3)
    return 2 * np.arctan2(s, q[0]) * q[1:] / s


def skew(r) -> np.ndarray:
    return np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])


def dexp_inverse(x, w) -> np.ndarray:
    """dexp^-1_x(w) of SO(3) in closed form: w - 1/2 x X w + c(|x|) x X (x X w), with
    c = (1 - (a/2) cot(a/2)) / a^2 (1/12 at a = 0)."""
    a = np.linalg.norm(x)
    c = 1 / 12 + a * a / 720 if a < 1e-4 else (1 - (a / 2) / np.tan(a / 2)) / (a * a)
    return w - 0.5 * np.cross(x, w) + c * np.cross(x, np.cross(x, w))


# --- the robot: Pinocchio's algorithms in our coordinates --------------------------------------
class Robot:
    """A RobotModel's joints, actuators and Pinocchio model; M, h and point Jacobians in our
    velocity coordinates (docs/conventions.md)."""

    def __init__(self, model):
        self.model = model
        self.nq, self.nv = model.nq, model.nv
        pm = build_pinocchio_model(model)
        self.pin, self.q_to_pin = pm.model, pm.q_to_pin
        self.data = self.pin.createData()
        self.link_frame = pm.link_frame
        self.joints = list(model.moving_joints)
        self.body = {link.name: link.body for link in model.links}

    # coordinates
    def to_pin(self, q, u):
        """(q_pin, v_pin, T): Pinocchio's coordinates and velocity v_pin = T^T u."""
        T = self.velocity_transform(q)
        return np.asarray(q)[self.q_to_pin], T.T @ u, T

    def velocity_transform(self, q) -> np.ndarray:
        """T (nv, nv): u = T v_pin. A floating joint: blockdiag(R, R) (Pinocchio's velocity is in
        the base frame, ours in the world frame); a spherical joint: R of the joint (Pinocchio's
        angular velocity is in the child frame, ours in the parent's joint frame)."""
        T = np.eye(self.nv)
        for j in self.joints:
            u0, q0 = j.u_slice.start, j.q_slice.start
            if j.type == "floating":
                R = quat_matrix(q[q0 + 3:q0 + 7])
                T[u0:u0 + 3, u0:u0 + 3] = R
                T[u0 + 3:u0 + 6, u0 + 3:u0 + 6] = R
            elif j.type == "spherical":
                T[u0:u0 + 3, u0:u0 + 3] = quat_matrix(q[q0:q0 + 4])
        return T

    def mass_matrix(self, q) -> np.ndarray:
        """M = T M_pin T^T, the rotor inertia on its diagonal."""
        q_pin, _, T = self.to_pin(q, np.zeros(self.nv))
        M_pin = pin.crba(self.pin, self.data, q_pin)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        return T @ M_pin @ T.T

    def nonlinear(self, q, u, gravity) -> np.ndarray:
        """h with tau = M du/dt + h in our coordinates: v_pin = T^T u gives
        dv_pin/dt = T^T du/dt + c with c = (d/dt T^T) u, so h = T rnea(q, v_pin, c)."""
        q_pin, v_pin, T = self.to_pin(q, u)
        c = np.zeros(self.nv)
        for j in self.joints:
            if j.type == "floating":  # d/dt (R^T v_world) = R^T dv/dt - omega_local x v_local
                s = j.u_slice.start
                c[s:s + 3] = -np.cross(v_pin[s + 3:s + 6], v_pin[s:s + 3])
            # a spherical joint: d/dt (R^T w) = R^T dw/dt, no correction
        self.pin.gravity.linear = np.asarray(gravity, dtype=float)
        return T @ pin.rnea(self.pin, self.data, q_pin, v_pin, c)

    def kinematics(self, q) -> None:
        q_pin = np.asarray(q)[self.q_to_pin]
        pin.forwardKinematics(self.pin, self.data, q_pin)
        pin.updateFramePlacements(self.pin, self.data)
        pin.computeJointJacobians(self.pin, self.data, q_pin)

    def point_jacobian(self, q, body: int, point) -> tuple[np.ndarray, np.ndarray]:
        """(J_v, J_w), (3, nv) each: the world velocity of the point of `body` at the world
        position `point`, and the body's world angular velocity, as functions of our u
        (call kinematics(q) first). Body 0 is the world: zeros."""
        if body == 0:
            return np.zeros((3, self.nv)), np.zeros((3, self.nv))
        J = pin.getJointJacobian(self.pin, self.data, body, pin.LOCAL_WORLD_ALIGNED)
        J = np.asarray(J).reshape(6, self.nv)
        o = self.data.oMi[body].translation
        J_v = J[:3] - skew(np.asarray(point) - o) @ J[3:]
        T = self.velocity_transform(q)
        return J_v @ T.T, J[3:] @ T.T

    def frame_placement(self, link: str):
        """(R, p) of a link frame in the world (call kinematics first)."""
        oMf = self.data.oMf[self.link_frame[link]]
        return oMf.rotation.copy(), oMf.translation.copy()

    def body_com(self, body: int) -> np.ndarray:
        oMi = self.data.oMi[body]
        return oMi.act(self.pin.inertias[body].lever)

    # differences and integration of coordinates (docs/conventions.md)
    def difference(self, q0, q1) -> np.ndarray:
        """q1 - q0 in the velocity space for the PD and spring errors: 1-DoF joints subtract; a
        spherical joint gives the rotation vector of q0^-1 q1 (shorter rotation) turned into its
        parent's joint frame (where u lives); a floating joint has no PD and no spring: 0."""
        d = np.zeros(self.nv)
        for j in self.joints:
            u0, q0_ = j.u_slice.start, j.q_slice.start
            if j.nv == 1:
                d[u0] = q1[q0_] - q0[q0_]
            elif j.type == "spherical":
                a, b = q0[q0_:q0_ + 4], q1[q0_:q0_ + 4]
                d[u0:u0 + 3] = quat_matrix(a) @ quat_log(quat_mul(quat_conj(a), b))
        return d

    def integrate(self, q, u_bar, dt) -> np.ndarray:
        """Spec step 6: q + dt u_bar; a quaternion turned by the rotation vector dt omega on the
        left (omega in the world frame for a floating base, in the parent's joint frame for a
        spherical joint), then normalised."""
        q = np.array(q, dtype=float)
        for j in self.joints:
            u0, q0 = j.u_slice.start, j.q_slice.start
            if j.nv == 1:
                q[q0] += dt * u_bar[u0]
            elif j.type == "floating":
                q[q0:q0 + 3] += dt * u_bar[u0:u0 + 3]
                r = quat_mul(quat_exp(dt * u_bar[u0 + 3:u0 + 6]), q[q0 + 3:q0 + 7])
                q[q0 + 3:q0 + 7] = r / np.linalg.norm(r)
            elif j.type == "spherical":
                r = quat_mul(quat_exp(dt * u_bar[u0:u0 + 3]), q[q0:q0 + 4])
                q[q0:q0 + 4] = r / np.linalg.norm(r)
        return q

    def rotation_blocks(self):
        """(u start of the angular velocity, q start of its quaternion) per floating or spherical
        joint."""
        out = []
        for j in self.joints:
            if j.type == "floating":
                out.append((j.u_slice.start + 3, j.q_slice.start + 3))
            elif j.type == "spherical":
                out.append((j.u_slice.start, j.q_slice.start))
        return out


# --- what one step of one system reads -----------------------------------------------------------
@dataclass
class Inputs:
    """The state and commands of one system at a step's start (the user's inputs)."""

    q: np.ndarray
    u: np.ndarray
    pd_mode: bool
    kp: np.ndarray
    kd: np.ndarray
    q_ref: np.ndarray
    u_ref: np.ndarray
    tau_ff: np.ndarray
    tau_lower: np.ndarray
    tau_upper: np.ndarray
    b_joint: np.ndarray
    k_s: np.ndarray
    q_s: np.ndarray
    tau_a: np.ndarray
    bus_voltage: np.ndarray
    region_enforced: bool
    loads: list              # (link, vector (3,) world, point in the link frame or None, torque?)
    scheme: str
    had_contact: bool
    constraints: list        # ("loop", link1, link2, anchor1, anchor2, axes or None) / ("mimic", ...)
    erp: float


def inputs_of(system) -> Inputs:
    """A system's inputs, read through its public attributes before a step."""
    from raisimcli.physics import PD_PLUS_FEEDFORWARD_TORQUE
    constraints = []
    for c in system.constraints:
        if hasattr(c, "anchor1"):
            constraints.append(("loop", c.kind, c.link1, c.link2, np.array(c.anchor1),
                                np.array(c.anchor2), np.array(c.axes)))
        else:
            constraints.append(("mimic", c.follower, c.leader, c.multiplier, c.offset))
    copy = lambda a: np.array(a, dtype=float)  # noqa: E731
    return Inputs(
        q=copy(system.q), u=copy(system.u),
        pd_mode=system.control_mode == PD_PLUS_FEEDFORWARD_TORQUE,
        kp=copy(system.kp), kd=copy(system.kd), q_ref=copy(system.q_ref), u_ref=copy(system.u_ref),
        tau_ff=copy(system.tau_ff), tau_lower=copy(system.tau_lower),
        tau_upper=copy(system.tau_upper), b_joint=copy(system.b_joint), k_s=copy(system.k_s),
        q_s=copy(system.spring_rest), tau_a=copy(system.tau_a),
        bus_voltage=copy(system.transmission.bus_voltage),
        region_enforced=bool(system.motor_region_enforced),
        loads=[(ld.link, copy(ld.vector), None if ld.point is None else copy(ld.point),
                bool(ld.is_torque)) for ld in system.pending_loads],
        scheme=system.scheme, had_contact=bool(system.had_contact), constraints=constraints,
        erp=float(system.constraint_erp))


# --- spec steps 1-4 without impulses ------------------------------------------------------------
@dataclass
class Explicit:
    """Steps 1-4 of one system at one state, without impulses. Vectors (nv,)."""

    M: np.ndarray
    h: np.ndarray
    tau_cmd: np.ndarray
    tau_act: np.ndarray
    motor: dict
    b: np.ndarray            # b_joint + b_out
    spring: np.ndarray       # k_s (q_s - q_t)
    tau_ext: np.ndarray
    tau_exp: np.ndarray
    kp: np.ndarray
    kd: np.ndarray
    w: np.ndarray
    M_tilde: np.ndarray
    u_star: np.ndarray


def actuators(robot: Robot, x: Inputs, u) -> tuple[np.ndarray, dict]:
    """Spec step 2: each actuator's motor torque clipped to its operating region, mapped to the
    joints through its gear ratio and couplings."""
    tau_act = np.zeros(robot.nv)
    state = {k: [] for k in ("motor_speed", "tau_min", "tau_max", "commanded", "applied")}
    u_of = {j.name: j.u_slice.start for j in robot.joints}
    for a, act in enumerate(robot.model.actuators):
        G, m = act.gear_ratio, act.motor
        stall = m.torque_constant * x.bus_voltage[a] / m.resistance
        b = m.torque_constant / (m.resistance * m.velocity_constant)
        w_m = G * u[u_of[act.joint]] + sum(r * u[u_of[c]] for c, r in act.couplings)
        lo = min(max(-stall - b * w_m, -m.peak_torque), m.peak_torque)
        hi = min(max(stall - b * w_m, -m.peak_torque), m.peak_torque)
        tau_m = x.tau_a[a] / G
        if x.region_enforced:
            tau_m = min(max(tau_m, lo), hi)
        tau_act[u_of[act.joint]] += G * tau_m
        for c, r in act.couplings:
            tau_act[u_of[c]] += r * tau_m
        for k, v in zip(state, (w_m, lo, hi, x.tau_a[a] / G, tau_m)):
            state[k].append(v)
    return tau_act, {k: np.array(v) for k, v in state.items()}


def output_terms(robot: Robot) -> tuple[np.ndarray, np.ndarray]:
    """(b_out, tau_c,out) (nv,): the actuators' output damping and friction on their joints."""
    b_out, f_out = np.zeros(robot.nv), np.zeros(robot.nv)
    u_of = {j.name: j.u_slice.start for j in robot.joints}
    for act in robot.model.actuators:
        b_out[u_of[act.joint]] += act.output_damping
        f_out[u_of[act.joint]] += act.output_friction
    return b_out, f_out


def external(robot: Robot, x: Inputs, q) -> np.ndarray:
    """J^T F_ext of the loads: a force at its point (link frame; the body's COM when none), a
    torque through the rotational Jacobian."""
    tau = np.zeros(robot.nv)
    robot.kinematics(q)
    for link, vector, point, is_torque in x.loads:
        body = robot.body[link]
        if is_torque:
            _, J_w = robot.point_jacobian(q, body, np.zeros(3))
            tau += J_w.T @ vector
            continue
        if point is None:
            p = robot.body_com(body)
        else:
            R, o = robot.frame_placement(link)
            p = o + R @ point
        J_v, _ = robot.point_jacobian(q, body, p)
        tau += J_v.T @ vector
    return tau


def explicit(robot: Robot, x: Inputs, q, u, dt, gravity) -> Explicit:
    """Spec steps 1-4 at the state (q, u), without impulses."""
    kp = x.kp if x.pd_mode else np.zeros(robot.nv)  # FORCE_AND_TORQUE: kp = kd = 0
    kd = x.kd if x.pd_mode else np.zeros(robot.nv)
    # step 1
    tau_pd = kp * robot.difference(q, x.q_ref) + kd * (x.u_ref - u)
    tau_cmd = np.clip(x.tau_ff + tau_pd, x.tau_lower, x.tau_upper)
    # step 2
    tau_act, motor = actuators(robot, x, u)
    # step 3
    b_out, _ = output_terms(robot)
    b = x.b_joint + b_out
    spring = x.k_s * robot.difference(q, x.q_s)
    tau_ext = external(robot, x, q)
    tau_exp = tau_cmd - b * u + tau_act + spring + tau_ext
    # step 4
    w = dt / 2 * (b + kd) + dt * dt / 4 * (kp + x.k_s)
    M = robot.mass_matrix(q)
    h = robot.nonlinear(q, u, gravity)
    M_tilde = M + np.diag(w)
    u_star = u + dt * np.linalg.solve(M_tilde, tau_exp - h)
    return Explicit(M, h, tau_cmd, tau_act, motor, b, spring, tau_ext, tau_exp, kp, kd, w,
                    M_tilde, u_star)


# --- the rows of step 4 ---------------------------------------------------------------------------
@dataclass
class Row:
    """One row (or a contact's three rows) of the impulse problem over the world's stacked u."""

    J: np.ndarray            # (1, N) or (3, N) for a contact [t1, t2, n]
    source: str
    target: float = 0.0      # the normal's target for a contact
    lo: float = -np.inf
    hi: float = np.inf
    mu: float = 0.0
    contact: int | None = None


def joint_rows(robot: Robot, x: Inputs, u_star, dt, col0: int, N: int) -> list[Row]:
    """Spec step 4's last paragraph: a position-limit row on a joint outside its range (a hard
    stop: it may stop the joint, not push it back), a velocity-limit row on a joint whose u*
    exceeds its limit (unless a position-limit row acts on it), and a friction row on every 1-DoF
    joint with friction, bounded by (tau_c,joint + tau_c,out) dt (docs/physics.md)."""
    _, f_out = output_terms(robot)
    limits, speeds, friction = [], [], []
    for j in robot.joints:
        if j.nv != 1:
            continue
        i, qi = j.u_slice.start, j.q_slice.start
        e = np.zeros((1, N))
        e[0, col0 + i] = 1.0
        below = j.has_position_limits and x.q[qi] < j.lower
        above = j.has_position_limits and x.q[qi] > j.upper
        if below:
            limits.append(Row(e, "joint_limits", 0.0, 0.0, np.inf))
        elif above:
            limits.append(Row(e, "joint_limits", 0.0, -np.inf, 0.0))
        elif u_star[i] > j.velocity:
            speeds.append(Row(e, "joint_limits", j.velocity, -np.inf, 0.0))
        elif u_star[i] < -j.velocity:
            speeds.append(Row(e, "joint_limits", -j.velocity, 0.0, np.inf))
        bound = (j.friction + f_out[i]) * dt
        if bound > 0:
            friction.append(Row(e, "joint_friction", 0.0, -bound, bound))
    return limits + speeds + friction


def normal_target(distance, params, vn, dt) -> float:
    """docs/contacts.md, "The rows and their targets": a gap closes within the step, never
    beyond; a penetration beyond the slop is removed at the rate erp; restitution above the
    threshold when the surface is reached within the step."""
    _, e, threshold, erp, slop = params
    t = -distance / dt if distance > 0 else erp * max(0.0, -distance - slop) / dt
    if e > 0 and vn < -threshold and distance <= -vn * dt:
        t = max(t, -e * vn)
    return t


# --- the impulse solver ----------------------------------------------------------------------------
def solve_contact(G, v0, tn, mu) -> np.ndarray:
    """One contact's impulse given the others (Hwangbo et al. 2018, docs/contacts.md): none if it
    separates; the sticking impulse if it lies in the cone; else the impulse on the cone's surface
    that meets the normal target with the tangential velocity opposite its tangential part. A
    contact whose tangential directions the mechanism cannot move along (G singular: two
    sliders pressed together) sticks with the least-norm impulse."""
    if v0[2] >= tn:
        return np.zeros(3)
    try:
        lam = np.linalg.solve(G, np.array([0.0, 0.0, tn]) - v0)
    except np.linalg.LinAlgError:
        lam = np.linalg.lstsq(G, np.array([0.0, 0.0, tn]) - v0, rcond=None)[0]
    if lam[2] >= 0 and np.hypot(lam[0], lam[1]) <= mu * lam[2]:
        return lam

    def sliding(th):
        d = np.array([mu * np.cos(th), mu * np.sin(th), 1.0])
        ln = (tn - v0[2]) / (G[2] @ d)
        v = v0 + ln * (G @ d)
        return ln * d, v

    def residual(th):  # the tangential velocity's component across the direction th
        _, v = sliding(th)
        return np.cos(th) * v[1] - np.sin(th) * v[0]

    best = None
    # the whole circle, starting along the tangential velocity: the answer, roughly opposite to
    # it, lies inside the scan, not at its ends
    start = np.arctan2(v0[1], v0[0])
    grid = np.linspace(start, start + 2 * np.pi, 721)
    d = np.stack([mu * np.cos(grid), mu * np.sin(grid), np.ones_like(grid)])  # (3, n)
    den = G[2] @ d  # the normal velocity per unit normal impulse along d
    with np.errstate(divide="ignore", invalid="ignore"):
        v = v0[:, None] + (tn - v0[2]) / den * (G @ d)
    r = np.cos(grid) * v[1] - np.sin(grid) * v[0]  # residual() over the grid
    for a, b, ra, rb, da, db in zip(grid[:-1], grid[1:], r[:-1], r[1:], den[:-1], den[1:]):
        if not da * db > 0:  # a pole of the residual (no normal response along d), not a root:
            continue         # there the impulse along d would be infinite
        if ra == 0 or ra * rb < 0:
            th = a if ra == 0 else brentq(residual, a, b, xtol=1e-15, rtol=1e-15, maxiter=200)
            lam, v = sliding(th)
            opposes = np.cos(th) * v[0] + np.sin(th) * v[1] <= 0
            if lam[2] >= 0 and opposes and (best is None or lam[2] < best[2]):
                best = lam
    assert best is not None, "no sliding impulse found"
    return best


class NotConverged(AssertionError):
    """The reference's solver stopped at its sweep cap: its impulses are not an answer."""


def solve_rows(rows: list[Row], u_free, response, tolerance=1e-14, max_sweeps=5000,
               start=None):
    """Block Gauss-Seidel over the rows until no row's velocity changes by more than
    `tolerance` times the largest row velocity or target (at least 1): (impulses per row,
    u_next). A row that cannot move (its diagonal of the Delassus matrix at most 1e-20 of the
    largest; for a contact its normal's) gets none. `start`: the impulses to start from, per
    row (zeros by default)."""
    if not rows:
        return [], u_free.copy()
    J = np.vstack([r.J for r in rows])
    starts = np.cumsum([0] + [r.J.shape[0] for r in rows])
    G = J @ response
    v_free = J @ u_free
    tolerance *= max(1.0, np.max(np.abs(v_free)), max(abs(r.target) for r in rows))
    lam = np.zeros(J.shape[0]) if start is None else np.concatenate(start).astype(float)
    scale = np.max(np.diag(G))
    for _ in range(max_sweeps):
        change = 0.0
        for k, r in enumerate(rows):
            s = slice(starts[k], starts[k + 1])
            v = v_free + G @ lam
            if r.contact is None:
                i = starts[k]
                if G[i, i] <= 1e-20 * scale:
                    new = 0.0
                else:
                    new = np.clip(lam[i] + (r.target - v[i]) / G[i, i], r.lo, r.hi)
                new = np.array([new])
            else:
                i = starts[k] + 2
                v0 = v[s] - G[s, s] @ lam[s]
                new = np.zeros(3) if G[i, i] <= 1e-20 * scale else \
                    solve_contact(G[s, s], v0, r.target, r.mu)
            change = max(change, np.max(np.abs(G[:, s] @ (new - lam[s]))))
            lam[s] = new
        if change <= tolerance:
            break
    else:
        raise NotConverged(f"the reference solver did not converge in {max_sweeps} sweeps")
    return [lam[starts[k]:starts[k + 1]] for k in range(len(rows))], u_free + response @ lam


# --- loop and mimic constraints ---------------------------------------------------------------------
def constraint_rows(robot: Robot, x: Inputs, q):
    """(J (k, nv), e (k,)) of the system's loop and mimic constraints at q ("The constraint and
    its rate"): a pin's three world axes at each body's own anchor; an equality's axes fixed in
    body1, body1's material point taken at body2's anchor (the exact rate); a mimic
    e = q_f - m q_l - c."""
    rows, errors = [], []
    robot.kinematics(q)
    for c in x.constraints:
        if c[0] == "mimic":
            _, follower, leader, m, offset = c
            f, l_ = robot.model.joint(follower), robot.model.joint(leader)
            row = np.zeros(robot.nv)
            row[f.u_slice.start] += 1.0
            row[l_.u_slice.start] -= m
            rows.append(row)
            errors.append(q[f.q_slice.start] - m * q[l_.q_slice.start] - offset)
            continue
        _, kind, link1, link2, anchor1, anchor2, axes_local = c
        R1, o1 = robot.frame_placement(link1)
        R2, o2 = robot.frame_placement(link2)
        p1, p2 = o1 + R1 @ anchor1, o2 + R2 @ anchor2
        axes = np.eye(3) if kind == "pin" else (R1 @ np.atleast_2d(axes_local).T).T
        at1 = p1 if kind == "pin" else p2
        J1, _ = robot.point_jacobian(q, robot.body[link1], at1)
        J2, _ = robot.point_jacobian(q, robot.body[link2], p2)
        for a in axes:
            rows.append(a @ (J1 - J2))
            errors.append(a @ (p1 - p2))
    return np.array(rows).reshape(-1, robot.nv), np.array(errors)


# --- the step -----------------------------------------------------------------------------------------
@dataclass
class SystemResult:
    q: np.ndarray
    u: np.ndarray
    torque: dict
    scheme: str
    motor: dict
    constraint_impulse: np.ndarray | None = None   # J^T lambda of the constraints (nv,)


@dataclass
class WorldResult:
    systems: list
    contact_impulses: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))  # world frame
    # whether the rows' impulses are unique: their Delassus matrix has full rank (else only
    # their sum J_c^T lambda_c, and so the velocity, is)
    unique_impulses: bool = True


def effective_scheme(x: Inputs) -> str:
    """Spec step 6's replacement rules."""
    if x.pd_mode and x.had_contact and x.scheme in ("EULER", "RUNGE_KUTTA_4"):
        return "SEMI_IMPLICIT"
    if x.scheme == "RUNGE_KUTTA_4" and x.constraints:
        return "SEMI_IMPLICIT"
    return x.scheme


def step(robots: list[Robot], inputs: list[Inputs], dt: float, gravity, contacts=(),
         start=None) -> WorldResult:
    """One step of a world: spec steps 1-6 for each system, their joint rows, constraints and
    the contacts solved as one impulse problem over the stacked velocities.

    `contacts`: per contact (system index A, body A, system index B or None, body B, point (3,),
    frame (3, 3) with columns t1, t2, n (n from B to A), distance, params (mu, restitution,
    threshold, erp, slop)), as detected at the step's start. `start`: each contact's impulse
    (world frame) that the solver starts from, zeros by default: a solution is a fixed point of
    the sweep, so a start at the answer costs one sweep, and a start away from it converges to
    the same answer (the velocity, and the impulses when unique) as from zero."""
    offsets = np.cumsum([0] + [r.nv for r in robots])
    N = offsets[-1]
    parts = [explicit(r, x, x.q, x.u, dt, gravity) for r, x in zip(robots, inputs)]

    # the constraints: u_0 (u* moved onto them) and the constrained response N (N^T M~ N)^-1 N^T
    u_free, A_inv, J_cons = np.zeros(N), np.zeros((N, N)), []
    for k, (r, x, s) in enumerate(zip(robots, inputs, parts)):
        cols = slice(offsets[k], offsets[k + 1])
        Jk, e = constraint_rows(r, x, x.q)
        J_cons.append(Jk)
        if Jk.shape[0] == 0:
            u_free[cols] = s.u_star
            A_inv[cols, cols] = np.linalg.inv(s.M_tilde)
            continue
        beta = min(max(0.2 * x.erp, 0.0), 0.3) / dt
        n, m = r.nv, Jk.shape[0]
        # Gauss's principle: the velocity closest to u* in M~ with J u_0 = -beta e (least squares
        # on the KKT system, so that dependent rows are allowed)
        K = np.block([[s.M_tilde, -Jk.T], [Jk, np.zeros((m, m))]])
        rhs = np.concatenate([s.M_tilde @ s.u_star, -beta * e])
        u_free[cols] = np.linalg.lstsq(K, rhs, rcond=None)[0][:n]
        Nb = null_space(Jk, rcond=1e-10)
        A_inv[cols, cols] = Nb @ np.linalg.solve(Nb.T @ s.M_tilde @ Nb, Nb.T)

    rows = []
    for k, (r, x, s) in enumerate(zip(robots, inputs, parts)):
        rows += joint_rows(r, x, s.u_star, dt, offsets[k], N)
    u_now = np.concatenate([x.u for x in inputs])
    for c, (sa, ba, sb, bb, p, frame, distance, params) in enumerate(contacts):
        Jc = np.zeros((3, N))
        for sys_i, body, sign in ((sa, ba, 1.0), (sb, bb, -1.0)):
            if sys_i is None:
                continue
            robots[sys_i].kinematics(inputs[sys_i].q)
            J_v, _ = robots[sys_i].point_jacobian(inputs[sys_i].q, body, p)
            Jc[:, offsets[sys_i]:offsets[sys_i + 1]] += sign * (frame.T @ J_v)
        vn = (Jc @ u_now)[2]
        rows.append(Row(Jc, "contacts", normal_target(distance, params, vn, dt), mu=params[0],
                        contact=c))
    J_rows = np.vstack([r.J for r in rows]) if rows else np.zeros((0, N))
    response = A_inv @ J_rows.T
    row_start = None if start is None else [
        np.zeros(r.J.shape[0]) if r.contact is None else contacts[r.contact][5].T @ start[r.contact]
        for r in rows]
    impulses, u_solved = solve_rows(rows, u_free, response, start=row_start)
    G = J_rows @ response
    unique = not rows or np.linalg.matrix_rank(G, tol=1e-9 * np.max(np.abs(G))) == len(G)

    contact_impulses = np.array([contacts[r.contact][5] @ lam for r, lam in zip(rows, impulses)
                                 if r.contact is not None]).reshape(-1, 3)
    results = []
    for k, (r, x, s) in enumerate(zip(robots, inputs, parts)):
        cols = slice(offsets[k], offsets[k + 1])
        by_source = {src: np.zeros(r.nv) for src in ("joint_friction", "joint_limits",
                                                     "contacts")}
        for row, lam in zip(rows, impulses):
            by_source[row.source] += row.J[:, cols].T @ lam
        # the constraints' generalized impulse: what M~ (u_{t+1} - u*) leaves of the others'
        u_next = u_solved[cols]
        g_cons = s.M_tilde @ (u_next - s.u_star) - sum(by_source.values())
        by_source["constraints"] = g_cons if J_cons[k].shape[0] else np.zeros(r.nv)
        scheme = effective_scheme(x)
        if scheme == "RUNGE_KUTTA_4":
            q_next, u_next, table, motor = runge_kutta_4(r, x, dt, gravity,
                                                         x.u + (u_next - s.u_star), by_source)
        else:
            u_bar = {"SEMI_IMPLICIT": u_next, "TRAPEZOID": 0.5 * (x.u + u_next),
                     "EULER": x.u}[scheme]
            q_next = r.integrate(x.q, u_bar, dt)
            table = torque_table(s, x, dt, u_next, by_source)
            motor = s.motor
        results.append(SystemResult(q_next, u_next, table, scheme, motor,
                                    by_source["constraints"]))
    return WorldResult(results, contact_impulses, unique)


def torque_table(s: Explicit, x: Inputs, dt, u_next, by_source) -> dict:
    """Spec step 5, term by term."""
    du = u_next - x.u
    table = {
        "feedforward_pd": s.tau_cmd - (0.5 * s.kd + dt / 4 * s.kp) * du,
        "damping": -0.5 * s.b * (x.u + u_next),
        "actuators": s.tau_act,
        "springs": s.spring - dt / 4 * x.k_s * du,
        "external": s.tau_ext,
    }
    for src in ("joint_friction", "joint_limits", "contacts", "constraints"):
        table[src] = by_source[src] / dt
    table["total"] = sum(table[k] for k in SOURCES)
    return table


def runge_kutta_4(robot: Robot, x: Inputs, dt, gravity, u_start, by_source):
    """Spec step 6, RUNGE_KUTTA_4: the solver's velocity change applied at the step's start, then
    steps 1-4 without impulses at each of four stages. docs/physics.md: the classical tableau on
    the Lie group (Munthe-Kaas's RKMK4) in the variables q = q_0 exp(theta) with each rotation's
    angular velocity in its own body's frame; here with the closed-form dexp^-1. The torque rows
    are the stages' explicit rows averaged with the RK4 weights."""
    blocks = robot.rotation_blocks()

    def local(q, u):  # angular velocities of quaternions in their bodies' frames
        out = np.array(u, dtype=float)
        for us, qs in blocks:
            out[us:us + 3] = quat_matrix(q[qs:qs + 4]).T @ u[us:us + 3]
        return out

    def world(q, y):
        out = np.array(y, dtype=float)
        for us, qs in blocks:
            out[us:us + 3] = quat_matrix(q[qs:qs + 4]) @ y[us:us + 3]
        return out

    def rate(theta, y):  # d theta / dt: dexp^-1_-theta(omega) on rotations, y elsewhere
        k = np.array(y, dtype=float)
        for us, _ in blocks:
            k[us:us + 3] = dexp_inverse(-theta[us:us + 3], y[us:us + 3])
        return k

    def advance(q0, r, h):  # q_0 exp(h r): rotations turned on the right, the rest added
        q = np.array(q0, dtype=float)
        for j in robot.joints:
            if j.nv == 1:
                q[j.q_slice.start] += h * r[j.u_slice.start]
            elif j.type == "floating":
                q[j.q_slice.start:j.q_slice.start + 3] += h * r[j.u_slice.start:j.u_slice.start + 3]
        for us, qs in blocks:
            quat = quat_mul(q0[qs:qs + 4], quat_exp(h * r[us:us + 3]))
            q[qs:qs + 4] = quat / np.linalg.norm(quat)
        return q

    weights, c = (1 / 6, 1 / 3, 1 / 3, 1 / 6), (0.0, 0.5, 0.5, 1.0)
    q0, y0 = x.q, local(x.q, u_start)
    q_k, y_k, theta = q0, y0, np.zeros(robot.nv)
    rates, accels, stages, velocities = [], [], [], []
    for k in range(4):
        u_k = world(q_k, y_k)
        s = explicit(robot, x, q_k, u_k, dt, gravity)
        a = local(q_k, (s.u_star - u_k) / dt)
        r = rate(theta, y_k)
        rates.append(r), accels.append(a), stages.append(s), velocities.append(u_k)
        if k < 3:
            h = c[k + 1] * dt
            theta = h * r
            q_k, y_k = advance(q0, r, h), y0 + h * a
    q_next = advance(q0, sum(w * r for w, r in zip(weights, rates)), dt)
    u_next = world(q_next, y0 + dt * sum(w * a for w, a in zip(weights, accels)))
    avg = lambda f: sum(w * f(s) for w, s in zip(weights, stages))  # noqa: E731
    table = {
        "feedforward_pd": avg(lambda s: s.tau_cmd),
        "damping": -sum(w * s.b * v for w, s, v in zip(weights, stages, velocities)),
        "actuators": avg(lambda s: s.tau_act),
        "springs": avg(lambda s: s.spring),
        "external": avg(lambda s: s.tau_ext),
    }
    for src in ("joint_friction", "joint_limits", "contacts", "constraints"):
        table[src] = by_source[src] / dt
    table["total"] = sum(table[k] for k in SOURCES)
    return q_next, u_next, table, stages[-1].motor
