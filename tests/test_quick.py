"""The quick step (raisimcli/physics/step/quick.py: a robot alone, its step in one compiled call):
what it hands on (the contact set, the result arrays, the step record, Pinocchio's inputs), what
reaches it (setters between steps), and real robots and mimics taking it, against the reference
step of tests/reference/."""

import os

import numpy as np
import pytest

from cases import before_step as _before_step, same_results as _same, setup as _setup
from raisimcli.physics import World
from raisimcli.physics.step import quick
from reference.compare import SideBySide
from test_real_urdfs import ERD

def _taken(monkeypatch) -> list:
    """A list that gets, at each step offered to the quick step (a world of one robot: step;
    of several: step_apart), whether it took it."""
    done = []
    for name in ("step", "step_apart"):
        real = getattr(quick, name)
        monkeypatch.setattr(quick, name, lambda *a, real=real: (
            lambda out: done.append(out is not None) or out)(real(*a)))
    return done


def test_a_held_contact_set_keeps_its_step():
    """The contacts of a step stay as they were after the next steps (each step writes new
    arrays), and read as the other paths' set."""
    w = World(0.001)
    _setup("drop", w)
    for _ in range(350):  # landed, standing
        w.integrate()
    held = w.contacts
    assert isinstance(held, quick.PackedContacts)
    copies = {name: getattr(held, name).copy() for name in
              ("points", "frames", "distance", "params", "bodies_a", "impulse",
               "impulse_contact", "velocity_contact", "target")}
    keys = list(held.keys)
    for _ in range(20):
        w.integrate()
    for name, value in copies.items():
        assert np.array_equal(getattr(held, name), value), name
    assert held.keys == keys and len(held) == 4
    assert [c.name_b for c in held] == ["ground"] * 4
    assert held[0].impulse[2] > 0  # a foot pushed up by the ground


def test_a_steps_results_are_written_over_only_once_nothing_holds_them():
    """The quick step reuses its result arrays (QuickScratch.results): a step's results that
    anything still holds (the state's q and u kept by the user, a view of them, the torque
    table, the actuators' states, the PD error, the contact set) keep their values through the
    next steps, while results nobody holds are written over: the robot's steps then take
    their arrays from a pool of at most quick._POOL sets."""
    w = World(0.001)
    _setup("drop", w)
    s = w.systems[0]
    for _ in range(350):  # landed, standing
        w.integrate()
    held = {"q": s.q, "u": s.u, "part of q": s.q[2:5], "total": s.torque["total"],
            "pd_error": s.pd_error, "contacts": w.contacts.points,
            **{f"torque/{k}": v for k, v in s.torque.items()}}
    values = {k: v.copy() for k, v in held.items()}
    pool = s.step_scratch["quick"].pool
    for _ in range(60):
        w.integrate()
        assert any(s.step_record()[0] is r.OF for r in pool)  # (not a new one: the pool's)
    for name, value in values.items():
        assert held[name].tobytes() == value.tobytes(), name
    assert len(pool) <= quick._POOL


def test_pinocchio_inputs_a_quick_step_leaves_are_those_of_its_state():
    """The quick step hands its next state's Pinocchio inputs over in two buffers used in turn
    (QuickScratch's slots): after every step of the drop (the floating base: T is not I) they
    are, bit for bit, those Conventions.pin_inputs makes from q and u, they alternate between
    the two slots, and the last state's stay intact through the next step (its slot is written
    at the step after)."""
    w = World(0.001)
    _setup("drop", w)
    s = w.systems[0]
    seen, last = set(), None
    for k in range(400):
        w.integrate()
        q_pin, u_pin, R = s.pinocchio_inputs()
        ref = s.conv.pin_inputs(s.q, s.u, s.pinocchio.q_to_pin)
        for a, b in zip((q_pin, u_pin, R), ref):
            assert a.tobytes() == b.tobytes()
        seen.add(q_pin.__array_interface__["data"][0])
        if last is not None:  # the last step's inputs, in the other slot: not yet written over
            for a, b in zip(last[0], last[1]):
                assert a.tobytes() == b.tobytes()
        last = ((q_pin, u_pin, R), tuple(x.copy() for x in (q_pin, u_pin, R)))
    assert len(seen) == 2 and isinstance(w.contacts, quick.PackedContacts)


def test_the_logs_contact_columns_of_blocks_and_of_arrays_mixed_in_a_chunk():
    """The log writer stacks consecutive quick steps' contact blocks (ContactSet.log_block) and
    unpacks them at once, and takes any other set's arrays row by row (log_arrays). A chunk whose
    rows mix the two, with contact counts changing as the feet land, gives every
    contact's values as each row's own log_arrays give them, in row order."""
    from raisimcli.log.writer import _contact_arrays
    w = World(0.001)
    _setup("actuators_and_limits", w)  # (two, three, then four feet on the ground)
    rows, reference, counts = [], [], set()
    for k in range(600):
        _before_step("actuators_and_limits", k, w)
        w.integrate()
        cs = w.contacts
        if not len(cs):
            continue
        counts.add(len(cs))
        own = tuple(np.array(a) for a in cs.log_arrays())  # (copies)
        reference.append(own)
        block = cs.log_block()
        if block is None or k % 3 == 0:  # as the writer takes a set without a block
            rows.append((len(cs), None, own, False))
        else:
            rows.append((len(cs), None, block, True))
    got = _contact_arrays(rows)
    for i in range(5):
        assert got[i].tobytes() == np.concatenate([r[i] for r in reference]).tobytes()
    assert len(counts) > 1 and sum(not r[3] for r in rows) and sum(r[3] for r in rows)


def test_a_step_it_declines_changes_nothing(monkeypatch):
    """When the compiled call hands the step to pipeline.step (a plate thinner than 2 mm near the
    ground, coal's), the state is untouched and the next steps go to pipeline.step for a while."""
    w = World(0.001)
    _setup("plate", w)
    s = w.systems[0]
    q, u = s.q.copy(), s.u.copy()
    assert quick.step(w, s, w._warm_start) is None
    assert np.array_equal(s.q, q) and np.array_equal(s.u, u)
    assert s.step_scratch["quick"].back_off == quick._BACK_OFF


def test_a_setter_between_steps_reaches_the_quick_step(monkeypatch):
    """What the setters change between steps (the bus voltage, whose stall torques the
    transmission makes again; gains, limits, damping) is read by the next quick step: the
    steps after each change step as the reference."""
    done = _taken(monkeypatch)
    w = World(0.001)
    s = _setup("actuators_and_limits", w)
    side = SideBySide(w)
    compared = 0
    for k in range(300):
        if k == 100:
            s.set_bus_voltage(6.0)  # (the motors' stall torques fall: their regions bind)
        if k == 150:
            s.set_pd_gains(np.full(s.nv, 120.0), np.full(s.nv, 4.0))
            s.set_joint_damping(np.r_[np.zeros(6), np.full(s.nv - 6, 0.3)])
            s.set_actuation_limits(np.full(s.nv, 40.0), np.full(s.nv, -40.0))
        inputs = side.inputs() if k in (100, 101, 150, 151) or k % 50 == 0 else None
        w.integrate()
        if inputs is not None:
            compared += side.check(inputs, f"step {k}")
    assert sum(done[100:]) >= 150 and compared >= 7  # (the quick step's, after the setters)


@pytest.mark.parametrize("path", ["a1_description/urdf/a1.urdf",
                                  "anymal_b_simple_description/robots/anymal.urdf",
                                  "go2_description/urdf/go2.urdf",
                                  "solo_description/robots/solo12.urdf",
                                  "ur_description/urdf/ur5_robot.urdf"])
def test_real_robots_take_the_quick_step_as_the_reference(path, monkeypatch):
    """Robots of example-robot-data dropped onto the ground under PD (their feet spheres, or
    meshes: their patches answered in the compiled loop too) and an arm fixed at the ground's
    height: the compiled call takes all 300 steps, and every 20th steps as the reference."""
    done = _taken(monkeypatch)
    w = World(0.001)
    w.add_ground()
    s = w.add_articulated_system(os.path.join(ERD, path))
    q = s.get_generalized_coordinate()
    if s.nq > s.nv:  # (a floating base: dropped from 0.6 m higher)
        q[2] += 0.6
    s.set_state(q, np.zeros(s.nv))
    s.set_pd_gains(np.full(s.nv, 40.0), np.full(s.nv, 1.0))
    s.set_pd_target(q, np.zeros(s.nv))
    side = SideBySide(w, every_step=False)  # (Go2's 16 foot contacts: the solver at its cap)
    touched = compared = 0
    for k in range(300):
        inputs = side.inputs() if k % 20 == 0 else None
        w.integrate()
        if inputs is not None:
            compared += side.check(inputs, f"step {k}")
        touched += bool(len(w.contacts))
    if s.nq > s.nv:
        assert touched >= 30  # (landed)
    assert len(done) == 300 and all(done) and compared >= 10


@pytest.mark.parametrize("case", ["drop", "actuators_and_limits", "arm", "three_apart",
                                  "gripper", "hand_in_air"])
def test_the_step_record_holds_what_the_getters_read(case, monkeypatch):
    """ArticulatedSystem.step_record (what the log copies a row from): every entry of its layout
    is, bit for bit, the value a user reads (q, u, torque[source], actuator_state's fields), at
    every step the quick step takes; a state set since the step leaves no record."""
    done = _taken(monkeypatch)
    w = World(0.001)
    _setup(case, w)
    seen = set()
    for k in range(300):
        _before_step(case, k, w)
        w.integrate()
        for s in w.systems:
            record = s.step_record()
            if done[-1]:
                assert record is not None
            if record is None:
                continue
            array, layout = record
            for key, (a, b) in layout.items():
                kind, _, name = key.partition("/")
                value = {"q": s.q, "u": s.u}.get(kind)
                if kind == "torque":
                    value = s.torque[name]
                elif kind == "actuators":
                    value = getattr(s.actuator_state, name)
                assert array[a:b].tobytes() == np.asarray(value).tobytes(), (k, key)
                seen.add(kind)
    assert sum(done) >= 250
    assert seen >= {"q", "u", "torque"}
    if case == "actuators_and_limits":
        assert "actuators" in seen
    s = w.systems[0]
    s.set_state(s.q, s.u)
    assert s.step_record() is None


def _link(s) -> str:
    return s.model.joints[-1].child  # (a leg's last link: a foot of the quadruped)


# what a user's loop reads between two steps (each read alone: a read may leave Pinocchio's data
# in a state the next one would hide)
READS = {
    "get_frame_position": lambda s: s.get_frame_position(_link(s)),
    "get_frame_orientation": lambda s: s.get_frame_orientation(_link(s)),
    "get_frame_velocity": lambda s: s.get_frame_velocity(_link(s)),
    "frame_placements": lambda s: s.frame_placements(),
    "body_placements": lambda s: s.body_placements(),
    "get_dense_jacobian": lambda s: s.get_dense_jacobian(_link(s)),
    "get_center_of_mass": lambda s: s.get_center_of_mass(),
    "get_linear_momentum": lambda s: s.get_linear_momentum(),
    "get_angular_momentum": lambda s: s.get_angular_momentum(),
    "get_mass_matrix": lambda s: s.get_mass_matrix(),
    "get_nonlinearities": lambda s: s.get_nonlinearities(),
    "get_inverse_mass_matrix": lambda s: s.get_inverse_mass_matrix(),
    "get_potential_energy": lambda s: s.get_potential_energy(),
    "get_generalized_force": lambda s: s.get_generalized_force(),
    # M and h cached too: the quick step then reads its placements through body_placements()
    "get_frame_position_M_and_h": lambda s: (s.get_mass_matrix(), s.get_nonlinearities(),
                                             s.get_frame_position(_link(s))),
}


@pytest.mark.parametrize("case", ["drop", "three_apart", "box_tilted", "one_onto_another",
                                  "fourbar", "drop_rk4", "gripper_on_quadruped"])
@pytest.mark.parametrize("split", [False, True], ids=["between_steps", "as_a_controller"])
def test_reading_a_getter_between_steps_changes_no_step(case, split, monkeypatch):
    """A getter read between two steps changes nothing the steps compute: the same bits with
    and without it, through the impacts of the drop (a robot alone) and of three robots apart
    (the quick step), and on the other paths: coal's contacts (the tilted box), robots touching
    each other, a loop, RK4, a gripper on a quadruped. (A frame getter once left the quick step
    reading the last step's joint Jacobians for its contact rows.) `split`: read between
    integrate1 and integrate2, as a controller does, instead of between two integrate(). Each
    read in a world of its own, all beside one world that reads nothing."""
    done = _taken(monkeypatch)
    worlds = []
    for read in [None, *sorted(READS)]:
        w = World(0.001)
        worlds.append((w, _setup(case, w), read))
    for k in range(400):
        for w, _, read in worlds:
            _before_step(case, k, w)
            if split:
                w.integrate1()
            if read is not None:
                for s in w.systems:
                    READS[read](s)
            if split:
                w.integrate2()
            else:
                w.integrate()
        base = worlds[0][:2]
        for w, s, read in worlds[1:]:
            try:
                _same(base, (w, s))
            except AssertionError as e:
                raise AssertionError(f"{read}, step {k}: {e}") from None
    if case in ("drop", "three_apart") and not split:
        assert sum(done) >= 400 * len(worlds)  # (the quick step's, in every world)


@pytest.mark.parametrize("case", ["drop", "actuators_and_limits", "arm_rk4", "arm_torque_mode",
                                  "three_apart", "gripper_on_quadruped", "fourbar", "spherical"])
def test_a_logs_energies_and_force_are_the_getters_bit_for_bit(case):
    """log_energies_and_force (a log's row: the kinetic and potential energies and the
    generalized force in one compiled call) gives the bits of the three getters after every
    step, on every path (the quick step, RK4, a loop, a mimic beside a robot, actuators and
    limits, a spherical joint), and so do the getters read after it (it keeps M and the centre
    of mass as they keep them); read after get_mass_matrix it gives the getters' values too.
    The steps of a world read this way keep the bits of one read through the getters (the next
    step reuses the crba). With actuators, the setters change between steps what the call
    reads: the stall torques (the bus voltage), the gains and limits, then the motors' regions
    are no longer enforced."""
    worlds = []
    for way in ("fused", "getters"):
        w = World(0.001)
        worlds.append((w, _setup(case, w), way))
    for k in range(300):
        rows = []
        for w, s, way in worlds:
            _before_step(case, k, w)
            if case == "actuators_and_limits" and k in (100, 150, 200):
                if k == 100:
                    s.set_bus_voltage(6.0)
                elif k == 150:
                    s.set_pd_gains(np.full(s.nv, 120.0), np.full(s.nv, 4.0))
                    s.set_actuation_limits(np.full(s.nv, 40.0), np.full(s.nv, -40.0))
                else:
                    s.set_motor_operating_region_enforced(False)
            w.integrate()
            for s in w.systems:
                if way == "getters":
                    rows.append(np.concatenate([[s.get_kinetic_energy()],
                                                [s.get_potential_energy()],
                                                s.get_generalized_force()]))
                    continue
                out = np.empty(2 + s.nv)
                if k % 50 == 7:  # (M kept already: the getters give it)
                    s.get_mass_matrix()
                s.log_energies_and_force(out)
                again = np.concatenate([[s.get_kinetic_energy()], [s.get_potential_energy()],
                                        s.get_generalized_force()])
                assert again.tobytes() == out.tobytes(), (case, k, s.name)
                rows.append(out)
        half = len(rows) // 2
        for a, b in zip(rows[:half], rows[half:]):
            assert a.tobytes() == b.tobytes(), (case, k)
    _same(*[(w, s) for w, s, _ in worlds])


def test_a_logs_energies_with_a_gravity_of_another_shape_are_the_getters():
    """A gravity set as a (3, 1) array (World.set_gravity keeps the shape it is given): the
    getters read it flattened, and log_energies_and_force gives their values."""
    from conftest import ROBOTS
    w = World(0.001)
    s = w.add_articulated_system(os.path.join(ROBOTS, "quadruped.urdf"))
    w.set_gravity(np.array([[0.0], [0.0], [-9.81]]))
    for _ in range(3):
        w.integrate()
    out = np.empty(2 + s.nv)
    s.log_energies_and_force(out)
    expected = np.concatenate([[s.get_kinetic_energy()], [s.get_potential_energy()],
                               s.get_generalized_force()])
    assert out.tobytes() == expected.tobytes() and out[1] < 0.0


@pytest.mark.parametrize("first_pass", ["crba", "nonLinearEffects", "kinematics", "step"])
def test_centre_of_mass_after_a_pass_is_its_own_pass_bit_for_bit(rng, first_pass, monkeypatch):
    """get_center_of_mass after a pass at the state (get_mass_matrix's crba; nonLinearEffects
    after it; kinematics(); a step's, then the kinetic energy's crba as a log reads it) composes
    the centre of mass from that pass's joint placements, without a pass of its own: the bits
    of Pinocchio's centerOfMass from q on a fresh data, for every shipped robot and four real
    ones; and with no pass at the state, its own from q."""
    import pinocchio as pin
    from conftest import SHIPPED
    from states import random_state
    own = []
    real_com = pin.centerOfMass
    monkeypatch.setattr(pin, "centerOfMass",
                        lambda m, d, level_or_q, *a: own.append(
                            not isinstance(level_or_q, pin.KinematicLevel)) or
                        real_com(m, d, level_or_q, *a))
    real = [os.path.join(ERD, p) for p in ("a1_description/urdf/a1.urdf",
                                           "anymal_b_simple_description/robots/anymal.urdf",
                                           "go2_description/urdf/go2.urdf",
                                           "ur_description/urdf/ur5_robot.urdf")]
    for path in SHIPPED + real:
        w = World(0.001)
        s = w.add_articulated_system(path)
        m = s.pinocchio.model
        for k in range(4):
            s.set_state(*random_state(s.model, rng))
            if first_pass == "step":
                w.integrate()
                s.get_kinetic_energy()  # (crba at the step's result, as the log's row)
            elif first_pass == "kinematics":
                s.kinematics()
            else:
                s.get_mass_matrix()  # crba
                if first_pass == "nonLinearEffects":
                    s.pinocchio_dynamics()  # (M as get_mass_matrix left it; nonLinearEffects)
            own.clear()
            com = s.get_center_of_mass().copy()
            assert own == [False], path  # (composed from the pass: no q given)
            q_pin = s.pinocchio_inputs()[0]
            reference = real_com(m, m.createData(), q_pin, False)
            assert com.tobytes() == reference.tobytes(), path
            s.set_state(s.q.copy(), s.u.copy())  # no pass at this state: its own, from q
            own.clear()
            reference = real_com(m, m.createData(), s.pinocchio_inputs()[0], False)
            assert s.get_center_of_mass().tobytes() == reference.tobytes(), path
            assert own == [True], path


@pytest.mark.parametrize("first_pass", ["crba", "nonLinearEffects"])
def test_placements_after_a_pass_are_compute_joint_jacobians_bit_for_bit(rng, first_pass,
                                                                         monkeypatch):
    """After a pass of crba or nonLinearEffects at the state (get_mass_matrix; pinocchio_dynamics
    after it, whose nonLinearEffects is then the last pass), body_placements() composes the
    bodies' placements from the pass's joint placements (updateGlobalPlacements) and the joint
    Jacobians from those (ArticulatedSystem._joint_jacobians): the bits of computeJointJacobians'
    own pass from q, for every shipped robot and four real ones."""
    import pinocchio as pin
    from conftest import SHIPPED
    from states import random_state
    composed = []
    real_update = pin.updateGlobalPlacements
    monkeypatch.setattr(pin, "updateGlobalPlacements",
                        lambda *a: composed.append(1) or real_update(*a))
    real = [os.path.join(ERD, p) for p in ("a1_description/urdf/a1.urdf",
                                           "anymal_b_simple_description/robots/anymal.urdf",
                                           "go2_description/urdf/go2.urdf",
                                           "ur_description/urdf/ur5_robot.urdf")]
    for path in SHIPPED + real:
        s = World().add_articulated_system(path)
        m = s.pinocchio.model
        for _ in range(5):
            s.set_state(*random_state(s.model, rng))
            q_pin, u_pin, _ = s.pinocchio_inputs()
            s.get_mass_matrix()  # crba
            if first_pass == "nonLinearEffects":
                s.pinocchio_dynamics()  # (M as get_mass_matrix left it; nonLinearEffects)
            n = len(composed)
            s.body_placements()
            assert len(composed) == n + 1  # (composed from the pass, not a pass from q)
            reference = m.createData()
            pin.computeJointJacobians(m, reference, q_pin)
            assert s.pinocchio_data.J.tobytes() == reference.J.tobytes(), path
            for k in range(m.njoints):
                assert s.pinocchio_data.oMi[k].homogeneous.tobytes() == \
                    reference.oMi[k].homogeneous.tobytes(), path


@pytest.mark.parametrize("path", ["panda_description/urdf/panda.urdf",
                                  "talos_data/robots/talos_full_v2.urdf"])
def test_robots_with_mimic_joints_take_the_quick_step_as_the_reference(path, monkeypatch):
    """Panda (its fingers one mimic pair) and Talos (twelve mimics in its grippers) under PD,
    in the air: 300 steps, every one the quick step's (the elimination of the mimics beside the
    joints' limit rows), every 30th as the reference."""
    done = _taken(monkeypatch)
    w = World(0.001)
    s = w.add_articulated_system(os.path.join(ERD, path))
    q = s.get_generalized_coordinate()
    s.set_pd_gains(np.full(s.nv, 40.0), np.full(s.nv, 1.0))
    s.set_pd_target(q + 0.05, np.zeros(s.nv))  # (Panda's joint 4 starts past its limit)
    side = SideBySide(w)
    compared = 0
    for k in range(300):
        inputs = side.inputs() if k % 30 == 0 else None
        w.integrate()
        if inputs is not None:
            compared += side.check(inputs, f"step {k}")
    assert sum(done) == 300 and s.constraint_impulses.shape == (len(s.constraints), 3)
    assert np.any(s.constraint_impulses[:, 0] != 0.0) and "constraints" in s.torque
    assert compared >= 7


def test_held_constraint_impulses_keep_their_step():
    """A mimic robot's constraint_impulses and constraint_errors (views of a quick step's
    results) keep their values while held through later steps; the steps then take other
    result arrays, and those nobody holds are reused (the pool stays at most quick._POOL)."""
    w = World(0.001)
    _setup("gripper", w)
    s = w.systems[0]
    for _ in range(100):
        w.integrate()
    held = (s.constraint_impulses, s.constraint_errors)
    values = [a.copy() for a in held]
    assert values[0][0, 0] != 0.0
    for _ in range(60):
        w.integrate()
        assert s.constraint_impulses is not held[0]
    for a, v in zip(held, values):
        assert a.tobytes() == v.tobytes()
    assert len(s.step_scratch["quick"].pool) <= quick._POOL


def test_a_mimic_robot_s_error_rate_changed_between_steps_reaches_the_quick_step(monkeypatch):
    """constraint_erp (the mimics' beta) set between steps is read by the next quick step: the
    steps after each change step as the reference, every step the quick step's. The fingers
    start apart by 1 cm, so that the error, and its correction at rate beta, is not 0."""
    done = _taken(monkeypatch)
    w = World(0.001)
    s = _setup("gripper", w)
    s.set_state(np.array([0.01, 0.02]), np.zeros(2))
    side = SideBySide(w)
    compared = 0
    for k in range(200):
        if k == 50:
            s.constraint_erp = 0.4
        if k == 120:
            s.constraint_erp = 3.0
        inputs = side.inputs() if k in (0, 50, 51, 120, 121, 199) else None
        w.integrate()
        if inputs is not None:
            compared += side.check(inputs, f"step {k}")
    assert sum(done) == 200 and s.constraint_errors[0, 0] != 0.0 and compared >= 4


def _called_after_pruning(fn, none_args: tuple) -> set:
    """The global names that `fn`'s code still refers to once numba's dead-branch pruning (the
    pass that runs before typing) has taken the argument types: `none_args` None, the others
    arrays. numba types and compiles only what is left; a function whose name is not left is not
    compiled for this call nor part of its machine code."""
    from numba.core import analysis, compiler, ir, types

    func_ir = compiler.run_frontend(fn.py_func)
    names = fn.py_func.__code__.co_varnames[:fn.py_func.__code__.co_argcount]
    array = types.Array(types.float64, 1, "C")
    analysis.dead_branch_prune(func_ir, [types.none if n in none_args else array for n in names])
    dead = analysis.compute_cfg_from_blocks(func_ir.blocks).dead_nodes()
    return {stmt.value.name for label, block in func_ir.blocks.items() if label not in dead
            for stmt in block.body
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Global)}


def test_a_robot_without_mimics_or_contacts_compiles_none_of_their_code():
    """The quick call of a robot without mimics (MI, MF None) and the impulse step of a robot
    without constraints (EF, EI None) leave out the constraints' functions, which took about a
    fifth of a fresh environment's first run; with them, they keep
    them. So for the contacts' code, for a robot with no ground to query (bounds None)."""
    from raisimcli.physics.step import alone

    mimics = {"_eliminate_mimics", "_advance_constrained", "_mimic_report"}
    assert not mimics & _called_after_pruning(quick._quick, ("MI", "MF"))
    assert mimics <= _called_after_pruning(quick._quick, ())
    constrained = {"_response", "_recovered"}
    assert not constrained & _called_after_pruning(alone._impulse_step, ("EF", "EI"))
    assert constrained <= _called_after_pruning(alone._impulse_step, ())
    # no ground to query (bounds None): no ground query, no contact code in the impulse step
    # (frames None) nor in the sweeps (block_mu None)
    from raisimcli.physics.step import contact_solver
    assert "_near_ground" not in _called_after_pruning(quick._quick, ("bounds",))
    assert "_near_ground" in _called_after_pruning(quick._quick, ())
    contact = {"_add_rows", "_targets", "_report"}
    assert not contact & _called_after_pruning(alone._impulse_step, ("frames",))
    assert contact <= _called_after_pruning(alone._impulse_step, ())
    assert "solve_contact" not in _called_after_pruning(contact_solver.block_gauss_seidel,
                                                        ("block_mu",))
    assert "solve_contact" in _called_after_pruning(contact_solver.block_gauss_seidel, ())
    # the quick call hands the impulse step None for both, not numba's Optional type (which
    # would keep their code): _elimination_of's two implementations, chosen by MI's type; and
    # jit.present, which hands on frames and block_mu, None by the marker's type. (The types
    # numba gives the results, read from its typing of two small loops; compiled without
    # numba's reference counts, as the package's loops are: these functions return views.)
    from numba import njit, types

    from raisimcli.jit import present

    @njit(_nrt=False)
    def slots(MI, MF):
        EF, EI = quick._elimination_of(MI, MF, 3)
        return EF is None

    @njit(_nrt=False)
    def handed(marker, value):
        x = present(marker, value)
        return x is None

    assert slots(None, None) and not slots(np.array([1, 0, 0, 0, 0, 0, 0, 0]), np.zeros(20))
    assert handed(None, np.zeros(2)) and not handed(np.zeros(1), np.zeros(2))
    typed = [slots.overloads[sig].type_annotation.typemap for sig in slots.signatures]
    assert typed[0]["EF"] == typed[0]["EI"] == types.none
    assert isinstance(typed[1]["EF"], types.Array) and isinstance(typed[1]["EI"], types.Array)
    typed = [handed.overloads[sig].type_annotation.typemap for sig in handed.signatures]
    assert typed[0]["x"] == types.none and isinstance(typed[1]["x"], types.Array)
    assert present(None, 1.0) is None and present(0, 1.0) == 1.0
