"""What a system's state means in Pinocchio's terms: the kinematics adapter (the inputs, placements,
frames, Jacobians and momenta at the current state, cached for it) and the dynamics quantities
in our conventions (M, h, energies, momentum; docs/conventions.md). Contacts, collision, loop
constraints and inverse dynamics read a system through these methods only.

`PinocchioAdapter` is a part of ArticulatedSystem: its methods read the attributes that
ArticulatedSystem.__init__ makes (the Pinocchio model and data, the conventions, the cache of
what was computed at the current state)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pinocchio as pin

from raisimcli.errors import StateError
from raisimcli.linalg import Cholesky, matmul, quadratic_form
from raisimcli.physics.conventions import (_getter_coordinates, _getter_inputs, _getter_mass,
                                           _getter_rotated, _rotate_columns)
from raisimcli.physics.step.contact_rows import _point_jacobian


class PointJacobianViews(NamedTuple):
    """What the compiled point Jacobians read (raisimcli.physics.step.contact_rows), at the
    current state: `J_world` (6, nv), Pinocchio's data.J (every joint's motion subspace in the
    world frame, about the world origin); `origins` (njoints, 3), the bodies' world positions;
    `supports` (njoints, nv), True where a column moves the body; `block_u`, `R`: the rotation
    blocks of the velocity transform T (none when T = I). Views of Pinocchio's data: read them,
    never write them."""

    J_world: np.ndarray
    origins: np.ndarray
    supports: np.ndarray
    block_u: np.ndarray
    R: np.ndarray


class PinocchioAdapter:
    """The kinematics adapter and dynamics of an ArticulatedSystem (see the module)."""

    # ============================================================================================
    # kinematics (world frame). The kinematics adapter: what contacts, collision, constraints and
    # inverse dynamics read of a system (pinocchio_inputs, kinematics, pinocchio_data,
    # placement_views, body_placements, frame_placements, frame_of, point_jacobian_views,
    # body_of, point_jacobians, load_point_world, load_as_local_force, gravity)
    # ============================================================================================
    def pinocchio_inputs(self):
        """(q_pin, u_pin, R) at the current state: Pinocchio's coordinates and velocity, and the
        rotation blocks of the velocity transform T of :mod:`raisimcli.physics.conventions`
        (None when T = I). Read them, never write them, and do not keep them past their state:
        when Pinocchio's coordinates are ours in our order (a robot without a floating base or
        spherical joints whose joints Pinocchio orders as we do), q_pin is q itself, and the
        quick step's are views of two buffers it writes in turn (step/quick.py's
        QuickScratch)."""
        if "pin" not in self._cache:
            if self.conv.identity:
                self._cache["pin"] = (self.q if self._q_is_pin else
                                      self.q[self.pinocchio.q_to_pin], self.u, None)
            else:
                self._cache["pin"] = self.conv.pin_inputs(self.q, self.u,
                                                          self.pinocchio.q_to_pin)
        return self._cache["pin"]

    def kinematics(self):
        """Forward kinematics (placements and velocities) and frame placements at the current
        state, into pinocchio_data (once per state); returns pinocchio_inputs()."""
        if "kin" not in self._cache:
            q_pin, u_pin, _ = self.pinocchio_inputs()
            pin.forwardKinematics(self._pm, self._data, q_pin, u_pin)
            pin.updateFramePlacements(self._pm, self._data)
            self._cache["kin"] = True
        return self.pinocchio_inputs()

    @property
    def pinocchio_data(self):
        """Pinocchio's data of the step: kinematics() fills its placements and velocities, the
        step its M, h and joint Jacobians. Read it, never write it."""
        return self._data

    @property
    def placement_views(self):
        """(R, T): the views of body_placements as they are, without computing the kinematics
        (None when no views could be made)."""
        return self._placements

    @property
    def gravity(self) -> np.ndarray:
        """The gravity (3,) m/s^2 of the world the system is in."""
        return self._gravity

    def set_gravity(self, gravity: np.ndarray) -> None:
        """Set by the World the system is in (World.set_gravity)."""
        self._gravity = gravity
        self.touched()

    def body_placements(self):
        """(R (njoints, 3, 3), T (njoints, 3)): every body's world rotation and position at the
        current state, indexed by Pinocchio joint id. They are views of Pinocchio's data: read
        them, never write them, and read them again after the state changes. None when no views
        could be made (then read data.oMi). The joint Jacobians data.J are then those of the
        current state too (the quick step reads both)."""
        if self._placements is None:
            return None
        self._joint_jacobians()
        return self._placements

    def point_jacobian_views(self) -> PointJacobianViews:
        """The joint Jacobians and placements at the current state, for compiled point
        Jacobians (see PointJacobianViews)."""
        self._joint_jacobians()
        R = self.pinocchio_inputs()[2]
        J = self._J_view if self._J_view is not None else self._data.J.reshape(6, self.nv)
        origins = self._placements[1] if self._placements is not None else \
            np.array([self._data.oMi[k].translation for k in range(self._pm.njoints)])
        if R is None:
            return PointJacobianViews(J, origins, self._supports, self.conv.block_u[:0],
                                      self._no_blocks)
        return PointJacobianViews(J, origins, self._supports, self.conv.block_u, R)

    @property
    def has_jacobian_view(self) -> bool:
        """Whether the joint Jacobians (data.J) are read through a view made at load."""
        return self._J_view is not None

    def forget_joint_jacobians(self) -> None:
        """Compute the joint Jacobians again when next asked for (a step that computed them and
        then handed the step to another path, which computes them in its own order)."""
        self._cache.pop("jac", None)

    def jacobian_views_unread(self) -> PointJacobianViews:
        """Arrays of the kinds point_jacobian_views returns, for a compiled call that will not
        read them (no contact): nothing is computed, and their contents are not those of the
        current state."""
        J = self._J_view if self._J_view is not None else self._data.J.reshape(6, self.nv)
        origins = self._placements[1] if self._placements is not None else \
            np.zeros((self._pm.njoints, 3))
        return PointJacobianViews(J, origins, self._supports, self.conv.block_u[:0],
                                  self._no_blocks)

    def _joint_jacobians(self):
        """data.J and the placements data.oMi at the current state: from the placements of
        kinematics() when it has run; else, when a pass of crba or nonLinearEffects has run at
        this state ("pass": its joint placements data.liMi are this state's), the placements
        composed from those (updateGlobalPlacements) and data.J from them, the cheaper way;
        else computeJointJacobians computes both from q in one pass (the same operations as
        forwardKinematics for oMi; frames and velocities are left to kinematics()). The three
        give the same bits (tests/test_quick.py)."""
        cache = self._cache
        if "jac" not in cache:
            if "kin" in cache:
                pin.computeJointJacobians(self._pm, self._data)
            elif "pass" in cache:
                pin.updateGlobalPlacements(self._pm, self._data)
                pin.computeJointJacobians(self._pm, self._data)
            else:
                pin.computeJointJacobians(self._pm, self._data, self.pinocchio_inputs()[0])
            cache["jac"] = True

    def _frame(self, name: str) -> int:
        """Frame id of a link, or of a joint (its child link's frame)."""
        fid = self.pinocchio.link_frame.get(name)
        if fid is None:
            for j in self.model.joints:
                if j.name == name:
                    return self.pinocchio.link_frame[j.child]
            raise StateError(f"{self.name}: no link or joint named {name!r}")
        return fid

    def frame_of(self, name: str) -> int:
        """The index of a link's frame (a joint's: its child link's) in frame_placements()."""
        return self._frame(name)

    def frame_placements(self):
        """(R (nframes, 3, 3), T (nframes, 3)): every frame's world rotation and position at the
        current state, views of Pinocchio's data.oMf (read them, never write them, and read them
        again after the state changes); None when no views could be made (then use
        get_frame_position and get_frame_orientation)."""
        if self._frame_placements is None:
            return None
        self.kinematics()
        return self._frame_placements

    def body_of(self, link: str) -> int:
        """The Pinocchio joint id of the rigid body that `link` belongs to."""
        body = self._body_of.get(link)
        if body is None:
            body = self._body_of[link] = self._pm.frames[self._frame(link)].parentJoint
        return body

    def get_frame_position(self, name: str) -> np.ndarray:
        """World position (3,) of a link frame (or a joint's frame: its child link's frame)."""
        self.kinematics()
        if self._frame_placements is not None:
            return self._frame_placements[1][self._frame(name)].copy()
        return self._data.oMf[self._frame(name)].translation.copy()

    def get_frame_orientation(self, name: str) -> np.ndarray:
        """World rotation matrix (3, 3) of a link or joint frame."""
        self.kinematics()
        if self._frame_placements is not None:
            return self._frame_placements[0][self._frame(name)].copy()
        return self._data.oMf[self._frame(name)].rotation.copy()

    def get_frame_velocity(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(linear velocity of the frame origin, angular velocity), both (3,) in the world."""
        self.kinematics()
        v = pin.getFrameVelocity(self._pm, self._data, self._frame(name),
                                 pin.LOCAL_WORLD_ALIGNED)
        return v.linear.copy(), v.angular.copy()

    def get_body_position(self, link: str) -> np.ndarray:
        return self.get_frame_position(link)

    def get_body_orientation(self, link: str) -> np.ndarray:
        return self.get_frame_orientation(link)

    def point_jacobians(self, body: int, point_world) -> tuple[np.ndarray, np.ndarray]:
        """(J_lin, J_rot), (3, nv) each: the Jacobians of the world velocity of the world point
        `point_world` fixed to `body` and of the body's world angular velocity, at the current
        state, in our velocity coordinates."""
        if self._placements is not None and body > 0:  # one compiled loop (contact rows')
            v = self.point_jacobian_views()
            nv = self.nv
            jj, lin, J_lin, J_rot = (np.empty((6, nv)), np.empty((3, nv)), np.empty((3, nv)),
                                     np.empty((3, nv)))
            _point_jacobian(v.J_world, v.origins[body], v.supports[body],
                            np.ascontiguousarray(point_world, dtype=np.float64), v.block_u, v.R,
                            jj, lin, J_lin)
            _rotate_columns(jj[3:], v.block_u, v.R, J_rot)
            return J_lin, J_rot
        self._joint_jacobians()
        R = self.pinocchio_inputs()[2]
        Jj = pin.getJointJacobian(self._pm, self._data, body, pin.LOCAL_WORLD_ALIGNED)
        Jj = Jj.reshape(6, self.nv)  # eigenpy returns (6,) when nv == 1
        origin = self._data.oMi[body].translation
        r = point_world - origin
        J_lin = Jj[:3] - matmul(_skew(r), Jj[3:])   # v_point = v_origin + omega x r
        J_rot = Jj[3:]
        if R is not None:
            conv = self.conv
            J_lin, J_rot = conv.from_pin_columns(R, J_lin), conv.from_pin_columns(R, J_rot)
        return J_lin, J_rot

    def get_dense_jacobian(self, link: str, point=None) -> np.ndarray:
        """(3, nv) Jacobian of the world velocity of a point fixed to `link`'s body; `point` in the
        world frame (default: the link frame's origin)."""
        body = self.body_of(link)
        p = self.get_frame_position(link) if point is None else np.asarray(point, dtype=float)
        return self.point_jacobians(body, p)[0]

    def get_dense_rotational_jacobian(self, link: str) -> np.ndarray:
        """(3, nv) Jacobian of the world angular velocity of `link`'s body."""
        body = self.body_of(link)
        return self.point_jacobians(body, self.get_frame_position(link))[1]

    def get_center_of_mass(self) -> np.ndarray:
        """World position (3,) of the centre of mass of the moving bodies. Pinocchio composes
        it from the joints' placements data.liMi: those of a pass at this state (crba or
        nonLinearEffects: "pass"; kinematics(): "kin") when one has run, which are
        forwardKinematics' bit for bit (tests/test_quick.py), else of forwardKinematics from q
        (a log's potential energy follows its kinetic energy's crba)."""
        cache = self._cache
        if "com" not in cache:
            if "pass" in cache or "kin" in cache:
                com = pin.centerOfMass(self._pm, self._data, pin.KinematicLevel.POSITION, False)
            else:
                com = pin.centerOfMass(self._pm, self._data, self.pinocchio_inputs()[0], False)
            cache["com"] = com.copy()
        return cache["com"]

    def get_linear_momentum(self) -> np.ndarray:
        """(3,) world frame, kg m/s: sum of m v_com over the moving bodies."""
        q_pin, u_pin, _ = self.kinematics()
        pin.computeCentroidalMomentum(self._pm, self._data, q_pin, u_pin)
        return self._data.hg.linear.copy()

    def get_angular_momentum(self, point=None) -> np.ndarray:
        """(3,) world frame, about the world point `point` (default: the centre of mass). Rotor
        inertia is internal to the joints and not part of it."""
        q_pin, u_pin, _ = self.kinematics()
        pin.computeCentroidalMomentum(self._pm, self._data, q_pin, u_pin)
        L = self._data.hg.angular.copy()
        if point is not None:
            c = self._data.com[0]
            L += np.cross(c - np.asarray(point, dtype=float), self._data.hg.linear)
        return L

    # ============================================================================================
    # dynamics (our conventions)
    # ============================================================================================
    def pinocchio_dynamics(self) -> tuple:
        """Spec step 1's kinematics at the current state, for a step: (the upper triangle of
        Pinocchio's M, Pinocchio's h at the system's gravity, u_pin, R). M is the M_pin that
        get_mass_matrix has computed at this state (a log's kinetic energy, a controller's
        reads), h the h_pin of get_nonlinearities when T = I, else
        crba's and nonLinearEffects' run here: read them, never write them. Either way a pass
        of Pinocchio has run at this state, whose joint placements body_placements() composes
        (_joint_jacobians)."""
        cache = self._cache
        q_pin, u_pin, R = cache.get("pin") or self.pinocchio_inputs()
        upper = cache.get("M_pin")
        if upper is None:
            upper = pin.crba(self._pm, self._data, q_pin)
        g = self._gravity.tobytes()
        if g != self._pin_gravity:  # (sync_gravity)
            self.sync_gravity(self._gravity)
        cache["pass"] = True  # (this pass's, or that of the M and h it reuses)
        entry = cache.get("h_pin")
        if entry is not None and entry[0] == g:
            return upper, entry[1], u_pin, R
        return upper, pin.nonLinearEffects(self._pm, self._data, q_pin, u_pin), u_pin, R

    def get_mass_matrix(self) -> np.ndarray:
        """M (nv, nv), rotor inertia included on its diagonal."""
        cache = self._cache
        M = cache.get("M")
        if M is None:
            gs = self._getters
            if self._q_is_pin:
                M = pin.crba(self._pm, self._data, self.q)  # (the upper triangle, made M)
            else:  # (q_pin, and R for _getter_mass)
                _getter_coordinates(self.q, gs.table)
                M = pin.crba(*self._getter_crba)
            if not self._new_results:
                M = M.copy()
            _getter_mass(M, gs.table)
            # ("pass": crba's joint placements, which _joint_jacobians reads)
            cache["M_pin"], cache["M"], cache["pass"] = gs.M_pin, M, True
        return M

    def get_nonlinearities(self, gravity=None) -> np.ndarray:
        """h (nv,): gravity, Coriolis and centrifugal terms, tau = M du/dt + h. `gravity`
        defaults to the world's (or (0, 0, -9.81) for a system outside a world).

        Without a floating or spherical joint, h is Pinocchio's nonLinearEffects. With one, h =
        T (h_pin + M_pin c) (raisimcli.physics.conventions), computed here as T rnea(q_pin,
        u_pin, c): Pinocchio's inverse dynamics at the acceleration c, one pass without M. The
        step forms the same sum from nonLinearEffects and crba's M_pin (step/explicit.py's _stage);
        the two agree to rounding."""
        g = self._gravity if gravity is None else np.asarray(gravity, dtype=float)
        b = g.tobytes()  # (h's key in the cache: cheaper than a tuple of its three numbers)
        cache = self._cache
        h = cache.get(b)
        if h is not None:
            return h
        if b != self._pin_gravity:  # (sync_gravity)
            self.sync_gravity(g)
        gs = self._h_getters
        if gs is None:  # (T = I)
            q_pin, u_pin, _ = self.pinocchio_inputs()
            h = pin.nonLinearEffects(self._pm, self._data, q_pin, u_pin)  # (a new array)
            if b == self._gravity.tobytes():  # (the step's, reused by its Pinocchio pass)
                cache["h_pin"] = (b, h.copy())
        else:
            _getter_inputs(self.q, self.u, gs.table)
            h = pin.rnea(*self._getter_rnea)  # (at q_pin, u_pin, c; made h here)
            if not self._new_results:
                h = h.copy()
            _getter_rotated(h, gs.table)
        cache["pass"] = True  # (its joint placements: _joint_jacobians)
        cache[b] = h
        return h

    def sync_gravity(self, g: np.ndarray) -> None:
        """Give the Pinocchio model the gravity g (only when it changed)."""
        key = g.tobytes()
        if key != self._pin_gravity:
            self._pm.gravity = pin.Motion(np.asarray(g, dtype=float), np.zeros(3))
            self._pin_gravity = key

    def get_inverse_mass_matrix(self) -> np.ndarray:
        """M^-1 (nv, nv)."""
        return Cholesky(self.get_mass_matrix()).solve(np.eye(self.nv))

    def get_kinetic_energy(self) -> float:
        """1/2 u^T M u (rotor inertia included)."""
        return 0.5 * quadratic_form(self.get_mass_matrix(), self.u)

    def get_potential_energy(self, gravity=None) -> float:
        """Sum of -m g . p_com over the moving bodies (m g z for gravity (0, 0, -g))."""
        g = self._gravity if gravity is None else np.asarray(gravity, dtype=float)
        key = ("V", g.tobytes())
        if key not in self._cache:
            (g0, g1, g2), (c0, c1, c2) = g.reshape(-1).tolist(), self.get_center_of_mass().tolist()
            gc = 0.0  # dot(g, com) in Python floats: the products summed in index order from 0
            gc += g0 * c0
            gc += g1 * c1
            gc += g2 * c2
            self._cache[key] = -float(self._total_mass * gc)
        return self._cache[key]

    def get_generalized_momentum(self) -> np.ndarray:
        """M u (nv,)."""
        return matmul(self.get_mass_matrix(), self.u)

    _gravity = np.array([0.0, 0.0, -9.81])


def _skew(r) -> np.ndarray:
    x, y, z = r.tolist() if isinstance(r, np.ndarray) else r  # Python floats: faster to build
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
