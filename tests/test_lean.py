"""World.integrate's lean whole step (raisimcli/physics/step/lean.py: robots apart, each stepped on
its own) against the general path (World.integrate1 then integrate2, with the robot-alone shortcut
of step/alone.py turned off too): the same bits, step by step, for every result a user reads."""

import os

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import SCENARIOS, robot
from raisimcli.cli.main import cli
from raisimcli.errors import RaisimcliError
from raisimcli.model import load_urdf_string
from raisimcli.physics import World
from raisimcli.physics.contact_world import ContactWorld
from raisimcli.physics.step import lean

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

# a floating 3 mm plate (a box thinner than collision.BOX_SMALLEST: coal's)
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


def _quadruped(w, height=0.6, name=None):
    w.add_ground()
    r = w.add_articulated_system(robot("quadruped.urdf"), name=name)
    q = r.get_generalized_coordinate()
    q[2], q[7:] = height, LEGS
    r.set_state(q, np.zeros(r.nv))
    r.set_pd_gains(np.full(r.nv, 300.0), np.full(r.nv, 10.0))
    r.set_pd_target(q, np.zeros(r.nv))
    return r


def _arm(w):
    r = w.add_articulated_system(robot("arm7.urdf"))
    q = r.get_generalized_coordinate()
    q[:] = np.linspace(-0.4, 0.4, r.nq)
    r.set_state(q, np.zeros(r.nv))
    r.set_pd_gains(np.full(r.nv, 300.0), np.full(r.nv, 10.0))
    r.set_pd_target(q, np.zeros(r.nv))
    return r


def _setup(case, w):
    if case in ("drop", "drop_with_inverse_dynamics", "drop_trapezoid", "drop_euler",
                "drop_rk4"):
        r = _quadruped(w)
        r.set_compute_inverse_dynamics(case == "drop_with_inverse_dynamics")
        r.set_integration_scheme({"drop_trapezoid": "TRAPEZOID", "drop_euler": "EULER",
                                  "drop_rk4": "RUNGE_KUTTA_4"}.get(case, "SEMI_IMPLICIT"))
    elif case == "arm_rk4":  # four stages, with inverse dynamics
        r = _arm(w)
        r.set_integration_scheme("RUNGE_KUTTA_4")
        r.set_compute_inverse_dynamics(True)
    elif case == "actuators_and_limits":  # motor regions, a coupled knee, friction, limits
        r = _quadruped(w, 0.45)
        r.set_actuator_torques(np.linspace(-3.0, 3.0, len(r.model.actuators)))
        q_ref = r.get_generalized_coordinate()
        q_ref[7:] = [0.0, 2.5, -2.9] * 4  # beyond the knees' and hips' limits
        r.set_pd_target(q_ref, np.zeros(r.nv))
    elif case == "arm":
        r = _arm(w)
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
        r = _arm(w)
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
        # collision.BOX_SMALLEST)
        w.add_ground()
        r = w.add_articulated_system(load_urdf_string(PLATE, path=robot("plate.urdf")))
        q = r.get_generalized_coordinate()
        q[2] = 0.0025  # (1 mm above the ground)
        r.set_state(q, np.zeros(r.nv))
    elif case == "three_apart":  # one robot each, detected apart; the third in the air
        r = _quadruped(w, name="first")
        for name, x, z in (("second", 2.0, 0.6), ("third", 4.0, 5.0)):
            other = _quadruped(w, name=name)
            q = other.get_generalized_coordinate()
            q[0], q[2] = x, z
            other.set_state(q, np.zeros(other.nv))
    elif case == "one_onto_another":  # apart, then one island of two (the general path's)
        r = _quadruped(w, 0.45, name="below")
        other = _quadruped(w, 0.95, name="above")
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
        other = _quadruped(w, 0.45, name="beside")
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
        r = _quadruped(w, 0.7)
        w.add_box("step", [0.5, 1.0, 0.1], position=(0.35, 0.0, 0.05))
    elif case == "self_collision":  # two fingers pushed into each other: contacts of one robot
        from test_contacts import _fingers_urdf
        w.set_gravity((0.0, 0.0, 0.0))
        r = w.add_articulated_system(load_urdf_string(_fingers_urdf()))
        w.configure_contacts(r, self_collision=True)
        r.set_generalized_force([1.0, 1.0])
    elif case == "quadruped_onto_gripper":  # an island of a robot with a mimic and another
        r = w.add_articulated_system(robot("gripper.urdf"))  # (its palm fixed at 0.5 m)
        _quadruped(w, 0.95, name="above")
    elif case == "spherical":  # a ball joint: its spring's and its PD's quaternion errors
        r = w.add_articulated_system(robot("spherical_chain.urdf"))
        q = r.get_generalized_coordinate()
        r.set_state(q, np.array([1.0, 0.5, 2.0, 0.0]))
        q_ref = q.copy()
        q_ref[:4] = [0.9, 0.1, -0.3, 0.2]  # (normalised by the setter)
        r.set_pd_gains(np.full(r.nv, 20.0), np.full(r.nv, 1.0))
        r.set_pd_target(q_ref, np.zeros(r.nv))
    elif case in ("arm_pushed", "drop_pushed"):  # loads set for some steps (_before_step)
        r = _arm(w) if case == "arm_pushed" else _quadruped(w)
        r.set_compute_inverse_dynamics(True)
    else:
        raise AssertionError(case)
    return r


def _before_step(case, k, w):
    """What a user does before step k: loads set for that step only."""
    r = w.systems[0]
    if case == "arm_pushed" and 50 <= k < 250:
        r.set_external_force("link3", [0.0, 3.0, 5.0], point=[0.0, 0.02, 0.0])
        if k % 2:
            r.set_external_torque("link5", [0.5, 0.0, -0.2])
    if case == "drop_pushed" and 100 <= k < 350:  # pushed sideways through its impacts
        r.set_external_force("base", [20.0, -10.0, 0.0])


def _same(a, b):
    (wa, _), (wb, _) = a, b
    for ra, rb in zip(wa.systems, wb.systems, strict=True):
        _same_system(ra, rb)
    assert len(wa.contacts) == len(wb.contacts)
    if len(wa.contacts):
        for name in ("points", "frames", "distance", "params", "bodies_a", "impulse",
                     "impulse_contact", "velocity_contact", "target"):
            assert getattr(wa.contacts, name).tobytes() == getattr(wb.contacts, name).tobytes()
        assert wa.contacts.keys == wb.contacts.keys
        named = lambda c: ([(a.name, ba, la, b and b.name, bb, nb)  # noqa: E731
                            for a, ba, la, b, bb, nb in c.meta], c.alone and c.alone.name)
        assert named(wa.contacts) == named(wb.contacts)


def _same_system(ra, rb):
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


@pytest.mark.parametrize("case", ["drop", "drop_with_inverse_dynamics", "drop_trapezoid",
                                  "drop_euler", "actuators_and_limits", "arm",
                                  "arm_torque_mode", "spring", "box_tilted", "can_tilted",
                                  "can_upright", "plate", "three_apart", "one_onto_another",
                                  "fourbar",
                                  "gripper_on_quadruped",
                                  "gripper_rk4", "fourbar_friction", "hand_on_ground",
                                  "fivebar_under_pd", "box_on_incline", "quadruped_onto_a_step",
                                  "self_collision", "arm_pushed", "drop_pushed", "drop_rk4",
                                  "arm_rk4", "spring_rk4", "quadruped_onto_gripper",
                                  "spherical", "gripper", "hand_in_air", "arm_on_ground"])
def test_the_whole_step_is_the_general_path(case, monkeypatch):
    import raisimcli.physics.step.world_step as world_step
    taken, apart = [], []
    real = lean.step
    monkeypatch.setattr(lean, "step", lambda *a: taken.append(1) or real(*a))
    general = []  # the lean step's robots that the general path's impulse problem solves
    real_systems = lean.integrate2_systems
    monkeypatch.setattr(lean, "integrate2_systems",
                        lambda systems, *a, **k: general.append(
                            ("stages" in k, bool(systems[0].constraints))) or
                        real_systems(systems, *a, **k))
    eliminated = []  # step/alone.py's call of a robot with constraints
    real_alone = lean.integrate2_alone

    def alone(s, st, *args):
        if st.elimination is not None:
            eliminated.append(1)
        return real_alone(s, st, *args)
    monkeypatch.setattr(lean, "integrate2_alone", alone)
    without_rows = []  # the steps of a robot whose constraints are its only rows
    real_without = lean._without_rows

    def without(s, st, dt):
        if st.elimination is not None:
            without_rows.append(1)
        return real_without(s, st, dt)
    monkeypatch.setattr(lean, "_without_rows", without)
    real_apart = ContactWorld.detect_apart
    monkeypatch.setattr(ContactWorld, "detect_apart",
                        lambda self: (lambda out: apart.append(out is not None) or out)(
                            real_apart(self)))
    worlds = []
    for use in (True, False):
        w = World(0.001)
        w.lean = use
        w.quick = False  # (tests/test_quick.py compares step/quick.py's call with this path)
        worlds.append((w, _setup(case, w)))
    (wa, _), (wb, _) = worlds
    robots_touched, most_contacts = False, 0
    for k in range(400):
        for w, _ in worlds:
            _before_step(case, k, w)
        wa.integrate()
        robots_touched |= any(c.system_b is not None for c in wa.get_contacts())
        most_contacts = max(most_contacts, len(wa.contacts))
        with monkeypatch.context() as m:
            m.setattr(world_step, "can_go_alone", lambda *a: False)
            wb.integrate()
        _same(*worlds)
        if k == 200:  # a restored state (the warm start by key) continues the same
            for w, _ in worlds:
                w.set_state(w.get_state())
    assert len(taken) == 400
    if case.startswith("drop"):
        assert len(wa.contacts) == 4  # standing after the impacts
    if case == "box_tilted":  # landed on an edge or a face: patches of several corners
        assert most_contacts >= 2
    if case == "can_tilted":  # landed on its rim, then on its side: a line of two contacts
        assert most_contacts >= 2
    if case in ("can_upright", "plate"):  # on a face: four kept points of its patch
        assert most_contacts == 4
    if case == "one_onto_another":  # the robots touched: the general path solved them together
        assert robots_touched and not any(apart)  # (always near: the general detection)
    staged = [constrained for from_stage, constrained in general if from_stage]
    if case in ("fourbar", "fivebar_under_pd", "hand_in_air"):  # no row besides the
        # constraints': no problem
        assert len(without_rows) == 400 and not staged and not eliminated
    elif case in ("gripper_on_quadruped", "gripper_rk4", "fourbar_friction",
                  "hand_on_ground", "gripper"):  # the joints' rows too (the fingers' limits, the
        # friction), and the contacts: step/alone.py's call with the elimination, every step
        assert len(eliminated) == 400 and not staged and not without_rows
    elif case == "self_collision":  # once the fingers touch: the general path's problem
        assert len(wa.contacts) and 100 < len(staged) < 400 and not any(staged)
    elif case == "one_onto_another":  # the island of the two, from their lean stages
        assert staged and not any(staged)
    elif case == "quadruped_onto_gripper":  # the gripper alone (step/alone.py's call with
        # the elimination), then with the quadruped (the general path's problem of the two)
        assert robots_touched and staged and all(staged) and eliminated
        assert len(staged) + len(eliminated) == 400
    else:
        assert not staged
    if case == "box_on_incline":
        assert most_contacts >= 2
    if case == "hand_on_ground":  # resting on its palm, the fingers' mimic pressed
        assert len(wa.contacts) >= 3 and wa.systems[0].constraint_impulses[0, 0] != 0.0
    if case == "quadruped_onto_a_step":  # feet on the box and on the ground
        assert {c.name_b for c in wa.get_contacts()} >= {"step", "ground"}
    if case == "gripper_on_quadruped":  # apart: the quadruped by step/alone.py's call
        assert all(apart) and len(wa.contacts) == 4
    if case == "three_apart":  # each robot on its own every step
        assert len(apart) == 400 and all(apart) and len(wa.contacts) == 8


def _controller(w, k):
    """A controller between integrate1 and integrate2: it reads the step's M, h and contacts
    and sets torques, now and then gains and loads; returns what it read."""
    seen = []
    for r in w.systems:
        if k % 3 == 1:  # Coriolis alone first: Pinocchio's gravity set to another
            seen.append(r.get_nonlinearities(gravity=(0.0, 0.0, 0.0)).tobytes())
        M, h = r.get_mass_matrix(), r.get_nonlinearities()
        seen += [M.tobytes(), h.tobytes()]
        r.set_generalized_force(0.01 * h + 0.001 * M.sum(axis=1))
        if k % 40 == 20:
            r.set_pd_gains(np.full(r.nv, 100.0 + k), np.full(r.nv, 5.0))
        if k % 30 < 5:
            r.set_external_force(r.model.links[-1].name, [0.0, 2.0, 1.0])
    if k % 2:  # (else the routed step's own query is the only one: integrate1's never runs)
        seen.append(sorted(c.key for c in w.get_contacts()))
    return seen


@pytest.mark.parametrize("case", ["drop", "drop_with_inverse_dynamics", "drop_trapezoid", "arm",
                                  "arm_torque_mode", "spring", "box_tilted", "three_apart",
                                  "one_onto_another", "fourbar", "box_on_incline",
                                  "self_collision", "drop_rk4", "arm_rk4", "spherical"])
def test_integrate2_after_integrate1_is_the_general_path(case, monkeypatch):
    """World.integrate2 after integrate1, a controller between them (step/lean.py's whole step
    when nothing but commands changed), against the general path: the same bits, step by
    step, and the controller reads the same M, h and contacts."""
    taken = []
    real = lean.step
    monkeypatch.setattr(lean, "step", lambda *a: taken.append(1) or real(*a))
    worlds = []
    for use in (True, False):
        w = World(0.001)
        w.lean = use
        worlds.append((w, _setup(case, w)))
    (wa, _), (wb, _) = worlds
    for k in range(250):
        seen = []
        for w, _ in worlds:
            _before_step(case, k, w)
            w.integrate1()
            seen.append(_controller(w, k))
            w.integrate2()
        assert seen[0] == seen[1]
        _same(*worlds)
        if k == 120:  # a restored state continues the same
            for w, _ in worlds:
                w.set_state(w.get_state())
    assert len(taken) == 250


def test_integrate2_takes_the_general_path_after_a_change_since_integrate1(monkeypatch):
    """Commands set between integrate1 and integrate2 keep the whole step; a state set, a time
    step, gravity or a contact set-up changed since integrate1 send integrate2 to the general
    path (whose contacts are integrate1's)."""
    taken = []
    real = lean.step
    monkeypatch.setattr(lean, "step", lambda *a: taken.append(1) or real(*a))
    w = World(0.001)
    r = _arm(w)
    w.integrate()
    assert len(taken) == 1
    w.integrate1()
    r.set_generalized_force(np.full(r.nv, 0.1))
    r.set_pd_target(r.get_generalized_coordinate(), np.zeros(r.nv))
    w.integrate2()
    assert len(taken) == 2
    changes = [lambda: r.set_state(r.get_generalized_coordinate(), r.get_generalized_velocity()),
               lambda: w.set_time_step(0.002),
               lambda: w.set_gravity([0.0, 0.0, -9.0]),
               lambda: w.add_ground(-1.0),
               lambda: w.add_box("b", [0.1, 0.1, 0.1], position=[3.0, 0.0, 0.0]),
               lambda: w.set_material_pair("default", "steel", 0.5),
               lambda: w.set_default_material(0.7),
               lambda: w.configure_contacts(r, materials={"*": "steel"})]
    for change in changes:
        w.integrate1()
        change()
        w.integrate2()
        assert len(taken) == 2
        assert not r.integrate1_pending
    w.integrate1()
    w.integrate2()
    assert len(taken) == 3


def _contact_arrays(contacts):
    names = ("points", "frames", "distance", "params", "bodies_a")
    return [getattr(contacts, name).tobytes() for name in names] + [list(contacts.keys)]


def test_integrate1_s_contacts_are_those_of_its_state_when_read_later():
    """World.integrate1's collision query runs when its contacts are first read: a state set
    before that, or a change of the contact set-up, still gives the contacts of integrate1's
    state and set-up (its query run at once, directly, is the reference)."""
    w = World(0.001)
    r = _quadruped(w, 0.45)
    for _ in range(300):  # standing on its four feet
        w.integrate()
    lifted = r.get_generalized_coordinate()
    lifted[2] += 0.3  # nothing near the ground there
    for change in (lambda: r.set_state(lifted, r.get_generalized_velocity()),
                   lambda: r.set_generalized_coordinate(lifted),
                   lambda: w.add_box("far", [0.1, 0.1, 0.1], position=[5.0, 0.0, 0.0]),
                   lambda: w.set_default_material(0.3),
                   lambda: w.configure_contacts(r, materials={"*": "rubber"})):
        q, u = r.get_generalized_coordinate(), r.get_generalized_velocity()
        w.integrate1()
        reference = _contact_arrays(w.contact_world.detect())
        assert len(reference[-1]) == 4
        change()
        assert _contact_arrays(w.contacts) == reference
        w.integrate2()  # (the general path, from those contacts)
        r.set_state(q, u)


def test_a_mass_matrix_that_is_not_positive_definite_raises_the_same_error(tmp_path):
    # a massless bob: its hinge moves no mass, and nothing implicit adds to M~'s diagonal
    urdf = tmp_path / "massless.urdf"
    with open(robot("pendulum.urdf")) as f:
        urdf.write_text(f.read().replace('<mass value="1"/>', '<mass value="0"/>'))
    messages = []
    for use in (True, False):
        w = World(0.001)
        w.lean = use
        w.add_articulated_system(str(urdf))
        with pytest.raises(RaisimcliError) as e:
            w.integrate()
        messages.append(str(e.value))
    assert messages[0] == messages[1] and "not positive definite" in messages[0]


@pytest.mark.parametrize("name", ["quadruped_pd", "quadruped_drop", "arm7_pd", "spring_joint",
                                  "pendulum", "block_slide", "fourbar", "gripper",
                                  "fivebar_leg", "parallelogram", "box_incline",
                                  "double_pendulum", "spherical_chain", "arm7_gravity_comp"])
def test_a_scenario_logs_the_same_bits_on_either_path(tmp_path, monkeypatch, name):
    """(arm7_gravity_comp: a controller between integrate1 and integrate2, whose integrate2
    takes the whole step of step/lean.py)"""
    scenario = os.path.join(SCENARIOS, f"{name}.toml")
    taken = []
    real = lean.step
    monkeypatch.setattr(lean, "step", lambda *a: taken.append(1) or real(*a))
    logs = []
    for use in (True, False):
        if not use:  # every world of the run without step/lean.py: the general path
            real_init = World.__init__
            monkeypatch.setattr(World, "__init__", lambda self, *a, **k: (
                real_init(self, *a, **k), setattr(self, "lean", False))[0])
        out = tmp_path / f"{use}.h5"
        duration = "1.2" if name == "arm7_pd" else "0.3"  # (arm7_pd: its push at 1.0-1.1 s)
        r = CliRunner().invoke(cli, ["run", scenario, "-q", "--duration", duration, "-o",
                                     str(out)])
        assert r.exit_code == 0, r.output
        logs.append(str(out))
        if use:
            lean_steps = len(taken)
    assert lean_steps >= 300 and len(taken) == lean_steps  # (every step of the lean run's, and
    # none of the general run's)
    r = CliRunner().invoke(cli, ["compare", *logs, "--rtol", "0", "--atol", "0"])
    assert r.exit_code == 0, r.output
