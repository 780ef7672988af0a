"""The written state (raisimcli.physics.state): a state saved mid-run and restored in a fresh world
built from the same scenario continues bit for bit like the run it was taken from: same q, u,
torque table, solver iterations and contact impulses at every later step."""

import dataclasses
import os
import pickle

import numpy as np
import pytest

from conftest import SCENARIOS
from raisimcli.errors import StateError
from raisimcli.scenario import load_scenario
from raisimcli.scenario.runner import build_world

CASES = [  # scenario, step of the save, steps after it
    ("quadruped_drop", 380, 150),     # in the impacts: contacts, warm start, had_contact
    ("quadruped_stand", 100, 100),
    ("arm7_pd", 990, 150),            # friction rows, a CSV target, the push at 1 s
    ("spring_joint", 100, 100),
    ("fivebar_leg", 100, 100),        # two loops
    ("gripper", 100, 100),            # a mimic joint
    ("double_pendulum", 100, 100),    # RUNGE_KUTTA_4
    ("box_incline", 100, 100),
    ("cartpole", 900, 200),           # the effort clamp, a piecewise target
]


def _world(name, tmp_path):
    scn = load_scenario(os.path.join(SCENARIOS, f"{name}.toml"), log_path=tmp_path / "x.h5")
    assert all(r.controller is None for r in scn.robots)
    return build_world(scn)


def _steps(w, drivers, k0, n):
    out = []
    for k in range(k0, k0 + n):
        for d in drivers:
            d.apply(k * w.dt)
        w.integrate1()
        w.integrate2()
        snap = []
        for s in w.systems:
            snap += [s.q.copy(), s.u.copy(), np.array([s.solver_iterations])]
            snap += [s.torque[key].copy() for key in sorted(s.torque)]
        snap += [np.concatenate([c.impulse for c in w.contacts])] if w.contacts else []
        out.append(snap)
    return out


def _identical(a, b) -> bool:
    return len(a) == len(b) and all(
        len(x) == len(y) and all(np.array_equal(u, v) and u.tobytes() == v.tobytes()
                                 for u, v in zip(x, y)) for x, y in zip(a, b))


@pytest.mark.parametrize("name,k,n", CASES)
def test_a_restored_state_continues_bit_identically(tmp_path, name, k, n):
    w, drivers = _world(name, tmp_path)
    _steps(w, drivers, 0, k)
    state = pickle.loads(pickle.dumps(w.get_state()))  # a state survives being written out
    reference = _steps(w, drivers, k, n)
    fresh, fresh_drivers = _world(name, tmp_path)
    fresh.set_state(state)
    assert fresh.time == k * fresh.dt
    assert _identical(_steps(fresh, fresh_drivers, k, n), reference)


def test_the_state_is_complete_the_warm_start_and_had_contact_matter(tmp_path):
    """Leaving a part out of the state changes the continuation: the test above can fail."""
    w, drivers = _world("quadruped_drop", tmp_path)
    _steps(w, drivers, 0, 380)
    state = w.get_state()
    reference = _steps(w, drivers, 380, 150)
    assert any(st.had_contact for st in state.systems) and state.warm_start
    for changed in (dataclasses.replace(state, warm_start={}),):
        fresh, fresh_drivers = _world("quadruped_drop", tmp_path)
        fresh.set_state(changed)
        assert not _identical(_steps(fresh, fresh_drivers, 380, 150), reference)


def test_a_state_of_another_world_is_refused(tmp_path):
    w, _ = _world("cartpole", tmp_path)
    other, _ = _world("arm7_pd", tmp_path)
    with pytest.raises(StateError, match="systems"):
        other.set_state(w.get_state())


def test_the_warm_start_by_row_order_is_the_warm_start_by_key(tmp_path):
    """A step whose rows have the last step's keys in the same order takes its impulses as they
    are (WarmStart.start); one whose rows differ looks each key up. Both must give what the
    lookup by key gives: the drop (contacts appearing and vanishing) stepped with the warm start
    turned into a plain dict after every step (the lookup each time) is bit-identical."""
    from raisimcli.physics.step.world_step import WarmStart
    runs = []
    for by_key in (False, True):
        w, drivers = _world("quadruped_drop", tmp_path)
        out = []
        for k in range(530):
            out += _steps(w, drivers, k, 1)
            if by_key:
                assert isinstance(w._warm_start, WarmStart)
                w._warm_start = dict(w._warm_start)
        runs.append(out)
    assert _identical(runs[0], runs[1])
    keys = [(("dog", 3, "ground", 0), 0), (("dog", 3, "ground", 0), 1), (("dog", "LF_KFE"), 0)]
    ws = WarmStart(keys, np.array([0.5, -0.25, 2.0]))
    assert dict(ws) == dict(zip(keys, [0.5, -0.25, 2.0])) and bool(ws)
    assert not WarmStart([], ws.impulses[:0])
    same = [(tuple(list(a)), j) for a, j in keys]  # equal keys, new tuples
    start = ws.start(same)
    assert np.array_equal(start, ws.impulses) and start is not ws.impulses
    other = [keys[2], (("dog", 9, "ground", 0), 2), keys[0]]  # reordered, one key new
    assert np.array_equal(ws.start(other), [2.0, 0.0, 0.5])
    # the WarmStart of islands' parts: joined when read as a whole, a part's rows as they are
    a, b = WarmStart(keys[:2], np.array([0.5, -0.25])), WarmStart(keys[2:], np.array([2.0]))
    empty = WarmStart([], np.zeros(0))
    assert not WarmStart.of_parts([empty, empty]) and bool(WarmStart.of_parts([empty, b]))
    both = WarmStart.of_parts([a, empty, b])
    assert np.array_equal(both.start(keys[2:]), [2.0]) and both._keys is None  # (b's own)
    assert np.array_equal(both.start(keys), [0.5, -0.25, 2.0])  # the whole
    assert both.keys_list == keys and np.array_equal(both.impulses, [0.5, -0.25, 2.0])
    assert np.array_equal(both.start(other), [2.0, 0.0, 0.5]) and dict(both) == dict(ws)


def test_the_commands_are_views_of_one_array_and_assigning_copies_in(tmp_path):
    """Each command attribute (raisimcli.physics.commands) is a view of `commands`; assigning
    copies the values in (the caller's array stays its own), another shape is refused, and the
    step reads what was written into a view in place as it reads a setter's values: the
    quadruped standing, its gains and targets written in place at step 50, against the same run
    with the setters (the scenario runner's schedules write the views so)."""
    from raisimcli.physics.commands import COMMANDS
    runs = []
    for how in ("setters", "in place", "unchanged"):
        w, drivers = _world("quadruped_stand", tmp_path)
        s = w.systems[0]
        for name, _ in COMMANDS[:-1]:
            view = getattr(s, name)
            assert view.base is s.commands and np.shares_memory(view, s.commands), name
        out = _steps(w, drivers, 0, 50)
        kp, kd = s.kp * 0.8, s.kd * 1.5
        q_ref = s.q_ref.copy()
        q_ref[7:] += 0.05
        if how == "in place":
            s.kp[:], s.kd[:] = kp, kd
            s.q_ref[7:] = q_ref[7:]
        elif how == "setters":
            s.set_pd_gains(kp, kd)
            s.set_pd_target(q_ref, s.u_ref)
        kp[:] = 0.0  # (the caller's arrays: the system keeps its copies)
        assert s.kp.any() and s.kp.base is s.commands
        out += _steps(w, [], 50, 100)  # (the stand's drivers set the targets once: not again)
        runs.append(out)
    assert _identical(runs[0], runs[1])
    assert not _identical(runs[0], runs[2])  # (the change of gains and targets acts)
    with pytest.raises(StateError, match="kp must have the shape"):
        s.kp = np.zeros(s.nv + 1)
    s.tau_ff = np.arange(float(s.nv))
    a = s.command_layout["tau_ff"][0]
    assert np.array_equal(s.commands[a:a + s.nv], np.arange(s.nv))
