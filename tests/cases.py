"""Worlds of every kind the step handles, by name: robots alone and several, apart and touching,
the ground, static boxes, coal's shapes, self-collision, loops, mimics, spherical joints,
actuators, limits, friction, loads, and the four schemes (setup builds one; before_step applies
what a user sets for one step)."""

import numpy as np

from conftest import robot
from raisimcli.model import load_urdf_string

CASES = ["drop", "drop_with_inverse_dynamics", "drop_trapezoid", "drop_euler",
         "actuators_and_limits", "arm", "arm_torque_mode", "spring", "box_tilted", "can_tilted",
         "can_upright", "plate", "three_apart", "one_onto_another", "fourbar",
         "gripper_on_quadruped", "gripper_rk4", "fourbar_friction", "hand_on_ground",
         "fivebar_under_pd", "box_on_incline", "quadruped_onto_a_step", "self_collision",
         "arm_pushed", "drop_pushed", "drop_rk4", "arm_rk4", "spring_rk4",
         "quadruped_onto_gripper", "spherical", "gripper", "hand_in_air", "arm_on_ground"]

# a floating palm (a box) with two prismatic fingers, the second a mimic of the first
_INERTIA = '<inertia ixx="{0}" iyy="{0}" izz="{0}" ixy="0" ixz="0" iyz="0"/>'
HAND = f"""<robot name="hand">
  <link name="palm"><inertial><mass value="1.0"/>{_INERTIA.format(0.01)}</inertial>
    <collision><geometry><box size="0.2 0.2 0.05"/></geometry></collision></link>
  <joint name="f1" type="prismatic"><parent link="palm"/><child link="finger1"/>
    <origin xyz="0.05 0 0.05"/><axis xyz="1 0 0"/>
    <limit lower="-0.02" upper="0.02" effort="10" velocity="1"/></joint>
  <link name="finger1"><inertial><mass value="0.1"/>{_INERTIA.format(0.001)}</inertial></link>
  <joint name="f2" type="prismatic"><parent link="palm"/><child link="finger2"/>
    <origin xyz="-0.05 0 0.05"/><axis xyz="1 0 0"/>
    <limit lower="-0.02" upper="0.02" effort="10" velocity="1"/>
    <mimic joint="f1" multiplier="-1" offset="0"/></joint>
  <link name="finger2"><inertial><mass value="0.1"/>{_INERTIA.format(0.001)}</inertial></link>
</robot>"""

# a floating 3 mm plate (a box thinner than ground.BOX_SMALLEST: coal's)
PLATE = f"""<robot name="plate">
  <link name="body"><inertial><mass value="1.0"/>{_INERTIA.format(0.004)}</inertial>
    <collision><geometry><box size="0.3 0.3 0.003"/></geometry></collision></link>
</robot>"""

# a floating cylinder (a can)
CAN = f"""<robot name="can">
  <link name="body"><inertial><mass value="1.0"/>{_INERTIA.format(0.005)}</inertial>
    <collision><geometry><cylinder radius="0.05" length="0.2"/></geometry></collision></link>
</robot>"""

LEGS = [0.0, 0.6, -1.2] * 2 + [0.0, -0.6, 1.2] * 2


def quadruped(w, height=0.6, name=None):
    w.add_ground()
    r = w.add_articulated_system(robot("quadruped.urdf"), name=name)
    q = r.get_generalized_coordinate()
    q[2], q[7:] = height, LEGS
    r.set_state(q, np.zeros(r.nv))
    r.set_pd_gains(np.full(r.nv, 300.0), np.full(r.nv, 10.0))
    r.set_pd_target(q, np.zeros(r.nv))
    return r


def arm(w):
    r = w.add_articulated_system(robot("arm7.urdf"))
    q = r.get_generalized_coordinate()
    q[:] = np.linspace(-0.4, 0.4, r.nq)
    r.set_state(q, np.zeros(r.nv))
    r.set_pd_gains(np.full(r.nv, 300.0), np.full(r.nv, 10.0))
    r.set_pd_target(q, np.zeros(r.nv))
    return r


def setup(case, w):
    """Case `case` of CASES built in world w; returns its first robot."""
    if case in ("drop", "drop_with_inverse_dynamics", "drop_trapezoid", "drop_euler",
                "drop_rk4"):
        r = quadruped(w)
        r.set_compute_inverse_dynamics(case == "drop_with_inverse_dynamics")
        r.set_integration_scheme({"drop_trapezoid": "TRAPEZOID", "drop_euler": "EULER",
                                  "drop_rk4": "RUNGE_KUTTA_4"}.get(case, "SEMI_IMPLICIT"))
    elif case == "arm_rk4":  # four stages, with inverse dynamics
        r = arm(w)
        r.set_integration_scheme("RUNGE_KUTTA_4")
        r.set_compute_inverse_dynamics(True)
    elif case == "actuators_and_limits":  # motor regions, a coupled knee, friction, limits
        r = quadruped(w, 0.45)
        r.set_actuator_torques(np.linspace(-3.0, 3.0, len(r.model.actuators)))
        q_ref = r.get_generalized_coordinate()
        q_ref[7:] = [0.0, 2.5, -2.9] * 4  # beyond the knees' and hips' limits
        r.set_pd_target(q_ref, np.zeros(r.nv))
    elif case == "arm":
        r = arm(w)
    elif case == "arm_on_ground":  # capsules on the ground (answered as the spheres are, in
        # one compiled loop): link1's from the start, the limp arm's falling onto the ground
        # near the end, with inverse dynamics (its contact loads)
        w.add_ground(0.049)
        r = w.add_articulated_system(robot("arm7.urdf"))
        q = r.get_generalized_coordinate()
        q[1], q[3] = 1.45, 0.3
        r.set_state(q, np.zeros(r.nv))
        r.set_pd_gains(np.zeros(r.nv), np.full(r.nv, 0.5))
        r.set_pd_target(q, np.zeros(r.nv))
        r.set_compute_inverse_dynamics(True)
    elif case == "arm_torque_mode":  # no PD: the feedforward torque alone
        r = arm(w)
        r.set_control_mode("FORCE_AND_TORQUE")
        r.set_generalized_force(np.linspace(-2.0, 2.0, r.nv))
    elif case in ("spring", "spring_rk4"):  # a spring, damping, no row at all
        r = w.add_articulated_system(robot("spring_joint.urdf"))
        if case == "spring_rk4":
            r.set_integration_scheme("RUNGE_KUTTA_4")
    elif case == "box_tilted":  # a box's corners, edges and faces: its contact patches of 1
        # to 4 corners, answered as coal answers them (ground._box_entries)
        w.add_ground()
        r = w.add_articulated_system(robot("box.urdf"))
        q = r.get_generalized_coordinate()
        q[2], q[3:7] = 0.2, [0.9, 0.3, 0.2, 0.1]  # (normalised by the setter)
        r.set_state(q, np.zeros(r.nv))
    elif case == "can_tilted":  # a cylinder landing on its rim, then its side: its contacts
        # as coal answers them (ground._cylinder_entries)
        w.add_ground()
        r = w.add_articulated_system(load_urdf_string(CAN, path=robot("can.urdf")))
        q = r.get_generalized_coordinate()
        q[2], q[3:7] = 0.15, [0.9, 0.3, 0.2, 0.1]
        r.set_state(q, np.zeros(r.nv))
    elif case == "can_upright":  # a cylinder standing on its face: its rim's samples
        w.add_ground()
        r = w.add_articulated_system(load_urdf_string(CAN, path=robot("can.urdf")))
        q = r.get_generalized_coordinate()
        q[2], q[3:7] = 0.101, [0.0, 0.0, 0.0, 1.0]  # (1 mm above the ground)
        r.set_state(q, np.zeros(r.nv))
    elif case == "plate":  # a 3 mm plate lying on the ground: coal's patch (thinner than
        # ground.BOX_SMALLEST)
        w.add_ground()
        r = w.add_articulated_system(load_urdf_string(PLATE, path=robot("plate.urdf")))
        q = r.get_generalized_coordinate()
        q[2] = 0.0025  # (1 mm above the ground)
        r.set_state(q, np.zeros(r.nv))
    elif case == "three_apart":  # one robot each, detected apart; the third in the air
        r = quadruped(w, name="first")
        for name, x, z in (("second", 2.0, 0.6), ("third", 4.0, 5.0)):
            other = quadruped(w, name=name)
            q = other.get_generalized_coordinate()
            q[0], q[2] = x, z
            other.set_state(q, np.zeros(other.nv))
    elif case == "one_onto_another":  # apart, then one island of two (one impulse problem)
        r = quadruped(w, 0.45, name="below")
        other = quadruped(w, 0.95, name="above")
        q = other.get_generalized_coordinate()
        q[0] = 0.1
        other.set_state(q, np.zeros(other.nv))
    elif case == "fourbar":  # a loop: the constraint eliminated before the rows
        r = w.add_articulated_system(robot("fourbar.urdf"))
        r.set_joint_damping(np.full(r.nv, 0.01))
    elif case == "gripper_on_quadruped":  # a mimic (fingers pushed against their limits)
        r = w.add_articulated_system(robot("gripper.urdf"))  # beside a quadruped on its feet
        r.set_control_mode("FORCE_AND_TORQUE")
        r.set_generalized_force(np.array([3.0, 0.0]))
        other = quadruped(w, 0.45, name="beside")
        q = other.get_generalized_coordinate()
        q[0] = 2.0
        other.set_state(q, np.zeros(other.nv))
    elif case == "gripper_rk4":  # a mimic, its fingers pushed against their limits, alone
        r = w.add_articulated_system(robot("gripper.urdf"))  # (step/alone.py's call with the
        r.set_control_mode("FORCE_AND_TORQUE")  # elimination: spec step 6 makes the scheme
        # SEMI_IMPLICIT while the robot has constraints)
        r.set_generalized_force(np.array([3.0, 0.0]))
        r.set_integration_scheme("RUNGE_KUTTA_4")
    elif case == "fourbar_friction":  # a loop beside the joints' friction rows; the loop's
        # forces as inverse dynamics' point loads
        with open(robot("fourbar.urdf")) as f:
            text = f.read().replace('<dynamics damping="0"/>',
                                    '<dynamics damping="0" friction="0.3"/>')
        r = w.add_articulated_system(load_urdf_string(text, path=robot("fourbar.urdf")))
        r.set_compute_inverse_dynamics(True)
    elif case == "hand_on_ground":  # a floating palm on the ground, its fingers a mimic pair
        # pushed against a limit: the elimination beside contact and limit rows
        r = w.add_articulated_system(load_urdf_string(HAND, path=robot("hand.urdf")))
        w.add_ground()
        q = r.get_generalized_coordinate()
        q[2] = 0.03
        r.set_state(q, np.zeros(r.nv))
        r.set_control_mode("FORCE_AND_TORQUE")
        tau = np.zeros(r.nv)
        tau[6] = 2.0
        r.set_generalized_force(tau)
    elif case == "gripper":  # a mimic alone, its fingers pushed against their limits: the
        # elimination beside limit and friction rows
        r = w.add_articulated_system(robot("gripper.urdf"))
        r.set_control_mode("FORCE_AND_TORQUE")
        r.set_generalized_force(np.array([3.0, 0.0]))
    elif case == "hand_in_air":  # a floating palm falling, its mimic fingers under PD within
        # their limits: the elimination without any row, under TRAPEZOID, inverse dynamics on
        r = w.add_articulated_system(load_urdf_string(HAND, path=robot("hand.urdf")))
        q_ref = r.get_generalized_coordinate()
        q_ref[7] = 0.015
        r.set_pd_gains(np.full(r.nv, 20.0), np.full(r.nv, 0.5))
        r.set_pd_target(q_ref, np.zeros(r.nv))
        r.set_integration_scheme("TRAPEZOID")
        r.set_compute_inverse_dynamics(True)
    elif case == "fivebar_under_pd":  # two loops, a joint under PD
        r = w.add_articulated_system(robot("fivebar_leg.urdf"))
        q_ref = r.get_generalized_coordinate()
        q_ref[0] += 0.3
        r.set_pd_gains(np.full(r.nv, 50.0), np.full(r.nv, 2.0))
        r.set_pd_target(q_ref, np.zeros(r.nv))
    elif case == "box_on_incline":  # a static box: the general detection, coal's patches
        w.add_box("incline", [10.0, 2.0, 1.0], position=(0.0, 0.0, -0.5), rpy=(0.0, 0.4, 0.0))
        w.set_default_material(0.3)
        r = w.add_articulated_system(robot("box.urdf"))
        q = r.get_generalized_coordinate()
        q[2] = 0.15
        r.set_state(q, np.zeros(r.nv))
    elif case == "quadruped_onto_a_step":  # its front feet onto a static box, the rest the ground
        r = quadruped(w, 0.7)
        w.add_box("step", [0.5, 1.0, 0.1], position=(0.35, 0.0, 0.05))
    elif case == "self_collision":  # two fingers pushed into each other: contacts of one robot
        from test_contacts import _fingers_urdf
        w.set_gravity((0.0, 0.0, 0.0))
        r = w.add_articulated_system(load_urdf_string(_fingers_urdf()))
        w.configure_contacts(r, self_collision=True)
        r.set_generalized_force([1.0, 1.0])
    elif case == "quadruped_onto_gripper":  # an island of a robot with a mimic and another
        r = w.add_articulated_system(robot("gripper.urdf"))  # (its palm fixed at 0.5 m)
        quadruped(w, 0.95, name="above")
    elif case == "spherical":  # a ball joint: its spring's and its PD's quaternion errors
        r = w.add_articulated_system(robot("spherical_chain.urdf"))
        q = r.get_generalized_coordinate()
        r.set_state(q, np.array([1.0, 0.5, 2.0, 0.0]))
        q_ref = q.copy()
        q_ref[:4] = [0.9, 0.1, -0.3, 0.2]  # (normalised by the setter)
        r.set_pd_gains(np.full(r.nv, 20.0), np.full(r.nv, 1.0))
        r.set_pd_target(q_ref, np.zeros(r.nv))
    elif case in ("arm_pushed", "drop_pushed"):  # loads set for some steps (_before_step)
        r = arm(w) if case == "arm_pushed" else quadruped(w)
        r.set_compute_inverse_dynamics(True)
    else:
        raise AssertionError(case)
    return r


def before_step(case, k, w):
    """What a user does before step k: loads set for that step only."""
    r = w.systems[0]
    if case == "arm_pushed" and 50 <= k < 250:
        r.set_external_force("link3", [0.0, 3.0, 5.0], point=[0.0, 0.02, 0.0])
        if k % 2:
            r.set_external_torque("link5", [0.5, 0.0, -0.2])
    if case == "drop_pushed" and 100 <= k < 350:  # pushed sideways through its impacts
        r.set_external_force("base", [20.0, -10.0, 0.0])


def same_results(a, b):
    """The two (world, robot) pairs a and b hold the same bits in every result a user reads."""
    (wa, _), (wb, _) = a, b
    for ra, rb in zip(wa.systems, wb.systems, strict=True):
        same_system(ra, rb)
    assert len(wa.contacts) == len(wb.contacts)
    if len(wa.contacts):
        for name in ("points", "frames", "distance", "params", "bodies_a", "impulse",
                     "impulse_contact", "velocity_contact", "target"):
            assert getattr(wa.contacts, name).tobytes() == getattr(wb.contacts, name).tobytes()
        assert wa.contacts.keys == wb.contacts.keys
        named = lambda c: ([(a.name, ba, la, b and b.name, bb, nb)  # noqa: E731
                            for a, ba, la, b, bb, nb in c.meta], c.alone and c.alone.name)
        assert named(wa.contacts) == named(wb.contacts)


def same_system(ra, rb):
    """Robots ra and rb hold the same bits in every result a user reads."""
    assert ra.q.tobytes() == rb.q.tobytes() and ra.u.tobytes() == rb.u.tobytes()
    assert ra.solver_iterations == rb.solver_iterations
    assert list(ra.torque) == list(rb.torque)
    for source in ra.torque:
        assert ra.torque[source].tobytes() == rb.torque[source].tobytes(), source
    assert ra.pd_error.tobytes() == rb.pd_error.tobytes()
    for field in ("motor_speed", "tau_min", "tau_max", "commanded", "applied"):
        x, y = getattr(ra.actuator_state, field), getattr(rb.actuator_state, field)
        assert x.tobytes() == y.tobytes(), field
    assert ra.had_contact == rb.had_contact
    if ra.compute_inverse_dynamics:
        assert ra.joint_wrenches.force.tobytes() == rb.joint_wrenches.force.tobytes()
        assert ra.joint_wrenches.torque.tobytes() == rb.joint_wrenches.torque.tobytes()
    assert ra.get_kinetic_energy() == rb.get_kinetic_energy()  # the caches of the new state
    if ra.constraints:
        assert ra.constraint_impulses.tobytes() == rb.constraint_impulses.tobytes()
        assert ra.constraint_errors.tobytes() == rb.constraint_errors.tobytes()
