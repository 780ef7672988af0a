"""The Pinocchio model of a :class:`RobotModel`, built programmatically.

We do not use Pinocchio's URDF parser: joint order, continuous joints with one coordinate,
spherical joints, rotor inertia and mimic handling are ours. Pinocchio joint i is our body i (body 0
is the world); every link gets a BODY frame named after it.

Coordinates differ from ours only in quaternion order (Pinocchio stores x, y, z, w); velocities
differ for floating and spherical joints (see :mod:`raisimcli.physics.conventions`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from raisimcli.linalg import matmul, norm, symmetric_eigen
from raisimcli.model.types import ModelWarning, RobotModel

_AXES = {(1, 0, 0): "X", (0, 1, 0): "Y", (0, 0, 1): "Z"}


@dataclass(frozen=True)
class PinocchioModel:
    """`model`: the pin.Model. `q_to_pin`: (nq,) index array with q_pin = q[q_to_pin];
    `q_from_pin` its inverse. `link_frame`: link name -> Pinocchio frame id.
    `body_joint`: per body, the Pinocchio joint id (the identity map, kept explicit)."""

    model: pin.Model
    q_to_pin: np.ndarray
    q_from_pin: np.ndarray
    link_frame: dict


def _se3(T: np.ndarray) -> pin.SE3:
    return pin.SE3(np.array(T[:3, :3]), np.array(T[:3, 3]))


def _joint_model(jtype: str, axis: np.ndarray):
    key = tuple(int(a) if float(a).is_integer() else None for a in axis)
    aligned = _AXES.get(key) if None not in key else None
    if jtype in ("revolute", "continuous"):
        return getattr(pin, f"JointModelR{aligned}")() if aligned else \
            pin.JointModelRevoluteUnaligned(np.array(axis, dtype=float))
    if jtype == "prismatic":
        return getattr(pin, f"JointModelP{aligned}")() if aligned else \
            pin.JointModelPrismaticUnaligned(np.array(axis, dtype=float))
    if jtype == "spherical":
        return pin.JointModelSpherical()
    if jtype == "floating":
        return pin.JointModelFreeFlyer()
    raise ValueError(jtype)


def build_pinocchio_model(robot: RobotModel) -> PinocchioModel:
    """Build the Pinocchio model of `robot` and check it against the RobotModel (nq, nv, mass)."""
    model = pin.Model()
    model.name = robot.name
    links = {link.name: link for link in robot.links}
    for j in robot.moving_joints:
        if j.parent is None:  # synthetic floating root
            parent_id, placement = 0, np.eye(4)
        else:
            parent = links[j.parent]
            parent_id, placement = parent.body, matmul(parent.body_T_link, j.origin)
        jid = model.addJoint(parent_id, _joint_model(j.type, j.axis), _se3(placement), j.name)
        assert jid == links[j.child].body, "body numbering must follow the joint order"
        if j.rotor_inertia:
            model.armature[j.u_slice] = j.rotor_inertia
    for link in robot.links:
        if link.inertial is not None and link.body > 0:
            ine = link.inertial
            model.appendBodyToJoint(link.body, pin.Inertia(ine.mass, np.array(ine.com),
                                                           np.array(ine.inertia)),
                                    _se3(link.body_T_link))
    link_frame = {}
    for link in robot.links:
        link_frame[link.name] = model.addFrame(
            pin.Frame(link.name, link.body, _se3(link.body_T_link), pin.FrameType.BODY))

    q_to_pin = np.arange(robot.nq)
    for j in robot.moving_joints:
        s = j.q_slice.start
        if j.type == "floating":  # ours x y z | w x y z  -> Pinocchio's x y z | x y z w
            q_to_pin[s + 3:s + 7] = [s + 4, s + 5, s + 6, s + 3]
        elif j.type == "spherical":
            q_to_pin[s:s + 4] = [s + 1, s + 2, s + 3, s]
    q_from_pin = np.argsort(q_to_pin)

    if model.nq != robot.nq or model.nv != robot.nv:
        raise AssertionError(f"Pinocchio model has nq={model.nq}, nv={model.nv}; "
                             f"expected {robot.nq}, {robot.nv}")
    if not np.isclose(pin.computeTotalMass(model), robot.moving_mass, rtol=1e-12, atol=0):
        raise AssertionError(f"Pinocchio model mass {pin.computeTotalMass(model)} differs from "
                             f"the moving links' mass {robot.moving_mass}")
    return PinocchioModel(model=model, q_to_pin=q_to_pin, q_from_pin=q_from_pin,
                          link_frame=link_frame)


def _nominal_mass_matrix(robot: RobotModel, model: pin.Model, q_to_pin: np.ndarray) -> np.ndarray:
    """M (Pinocchio's velocity, our DoF order for a tree without floating or spherical joints) at
    the nominal configuration."""
    q = robot.nominal_config if robot.nominal_config is not None else robot.neutral_configuration()
    q = np.array(q, dtype=float)
    for j in robot.moving_joints:  # nominal_config may carry unnormalised quaternions
        if j.type in ("floating", "spherical"):
            s = j.q_slice.start + (3 if j.type == "floating" else 0)
            n = norm(q[s:s + 4])
            q[s:s + 4] = q[s:s + 4] / n if n > 0 else [1, 0, 0, 0]
    M = pin.crba(model, model.createData(), q[q_to_pin])
    return np.triu(M) + np.triu(M, 1).T


def _may_be_singular(M: np.ndarray) -> bool:
    """False when LAPACK's eigenvalues of the symmetric positive semi-definite M show its
    smallest eigenvalue above 1e-8 times its largest: then the test below (1e-14, on the
    eigenvalues of symmetric_eigen's Jacobi rotations) cannot find it singular, whatever kernels
    OpenBLAS picks. Both methods' eigenvalues lie within a few n eps ||M|| of the exact ones
    (LAPACK Users' Guide, "Error Bounds for the Symmetric Eigenproblem",
    https://www.netlib.org/lapack/lug/node89.html; Demmel and Veselic, "Jacobi's method is more
    accurate than QR", SIAM J. Matrix Anal. Appl. 13, 1992), far below that gap for the sizes of
    a robot. So no warning depends on the processor, and a model that is far from singular (every
    robot we ship) does not wait for numba to compile the rotations' loop in a fresh
    environment's first run."""
    w = np.linalg.eigvalsh(M)
    return not w[0] > 1e-8 * w[-1]


def singular_pose_warnings(robot: RobotModel, pm: "PinocchioModel") -> list[ModelWarning]:
    """Warnings when M is singular at the nominal configuration: a joint that moves no mass or
    inertia at all (a massless end link, singular everywhere), or joints whose axes line up there
    with nothing of mass between them (iCub's neck). Pinocchio and RaiSim load such models; a
    step needs damping, PD gains, a spring or rotor inertia on those joints (M~ = M + diag(w) is
    then regular)."""
    if robot.nv == 0:
        return []
    M = _nominal_mass_matrix(robot, pm.model, pm.q_to_pin)
    scale = max(float(np.abs(np.diag(M)).max()), 1e-300)
    out = []
    for j in robot.moving_joints:
        if np.any(np.diag(M)[j.u_slice] <= 1e-12 * scale):
            out.append(ModelWarning(
                "massless-joint", f"joint {j.name!r} moves no mass or inertia: the mass matrix "
                "is singular; a step needs damping, PD gains, a spring or rotor_inertia on it "
                "(or give the links beyond it an <inertial>, or make it fixed)", robot.path,
                j.line, f'<joint name="{j.name}">'))
    if out:
        return out
    if not _may_be_singular(M):
        return []
    w, V = symmetric_eigen(M)
    if w[0] > 1e-14 * w[-1]:
        return []
    v = V[:, 0] if not robot.is_floating else V[:, 0]
    involved = [j for j in robot.moving_joints
                if np.abs(v[pm.model.joints[pm.model.getJointId(j.name)].idx_v:][:j.nv]).max() > 0.05]
    line = involved[0].line if involved else None
    names = ", ".join(repr(j.name) for j in involved) or "some joints"
    return [ModelWarning("singular-mass-matrix", f"the mass matrix is singular at the nominal "
                         f"configuration: {names} can move together without moving any mass; "
                         "give them damping, PD gains or rotor_inertia, or start elsewhere",
                         robot.path, line, None)]
