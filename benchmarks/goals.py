"""Every speed goal of the compiled step at once: each measured against its reference in this run,
with the goal beside it and whether it is met. The other scripts of this folder say more about
each row; this one is the scoreboard.

    python benchmarks/goals.py [--first-run]

--first-run also times the first run of a fresh copy of the package on the standing quadruped,
which the table otherwise leaves out: with the machine code the package ships
(raisimcli/precompiled.py), and compiling every loop without it.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import mujoco

from common import ROBOTS, per_call_us, pinocchio_floor_us
from contacts_vs_mujoco import drop_seconds, ours, theirs
from logging_cost import ALL, SCENARIO, per_step
from raisimcli.physics import World
from raisimcli.scenario import load_scenario
from raisimcli.scenario.runner import build_world
from scaling import quadruped, step_us
from step import setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COMMAND = ["run", os.path.join(ROOT, "scenarios", "quadruped_stand.toml"), "--duration", "0.01",
           "-q"]
# the README's main command: a robot in the air, which compiles the step without the contacts'
# code (docs/physics.md)
AIR = ["run", os.path.join(ROOT, "scenarios", "quadruped_pd.toml"), "--duration", "0.01", "-q"]


def alternated(ours_, reference, number: int, ref_number: int, rounds: int = 5) -> tuple:
    """(best us a call of `ours_`, best of `reference`), the two measured in turn `rounds` times:
    a slow minute of this VM then weighs on both, not on one side of a ratio."""
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        best[0] = min(best[0], per_call_us(ours_, repeat=1, number=number))
        best[1] = min(best[1], per_call_us(reference, repeat=1, number=ref_number))
    return best[0], best[1]


def standing(same: bool = True) -> tuple:
    """(our step, mj_step) of the standing quadruped; `same`: MuJoCo's model with the joints'
    damping, friction and limits (the same model), else without (contacts_vs_mujoco's
    bodies_only: the reference before 2026-12-05)."""
    w, _ = ours()
    m, d = theirs(same=same)
    return alternated(w.integrate, lambda: mujoco.mj_step(m, d), 300, 2000)


def drop() -> tuple:
    t, t_mj = drop_seconds()
    return t * 1e3, t_mj * 1e3  # us a step (the first 1000 steps)


def under_pd(name: str) -> tuple:
    w, r = setup(name)
    for _ in range(200):
        w.integrate()
    best = [float("inf"), float("inf")]
    for _ in range(5):  # (alternated, as alternated() does)
        best[0] = min(best[0], per_call_us(w.integrate, repeat=1, number=1000))
        best[1] = min(best[1], pinocchio_floor_us(r, repeat=1, number=2000))
    return best[0], best[1]


def inverse_dynamics(name: str) -> tuple:
    """(step with inverse dynamics, plain step), alternated, each one's best."""
    w, r = setup(name)
    for _ in range(200):
        w.integrate()
    t_id = t_plain = float("inf")
    for _ in range(5):
        r.set_compute_inverse_dynamics(True)
        t_id = min(t_id, per_call_us(w.integrate, repeat=1, number=500))
        r.set_compute_inverse_dynamics(False)
        t_plain = min(t_plain, per_call_us(w.integrate, repeat=1, number=500))
    return t_id, t_plain


def getter(which: str) -> tuple:
    import pinocchio as pin
    import numpy as np
    w = World()
    s = w.add_articulated_system(f"{ROBOTS}/quadruped.urdf")
    rng = np.random.default_rng(0)
    q = s.get_generalized_coordinate()
    q[s.conv.one_dof_q] = rng.uniform(-0.5, 0.5, len(s.conv.one_dof_q))
    s.set_state(q, rng.normal(size=s.nv))
    pm, pd = s.pinocchio.model, s.pinocchio.model.createData()
    q_pin, u_pin, _ = s.pinocchio_inputs()
    if which == "M":
        def ours_():
            s.invalidate()
            s.get_mass_matrix()
        return alternated(ours_, lambda: pin.crba(pm, pd, q_pin), 2000, 2000, rounds=7)

    def ours_h():
        s.invalidate()
        s.get_nonlinearities()
    return alternated(ours_h, lambda: pin.nonLinearEffects(pm, pd, q_pin, u_pin), 2000, 2000,
                      rounds=7)


def command_vs_library() -> tuple:
    """(the CLI's cost a step of quadruped_pd.toml with every signal logged, the library step
    of the same world on the same trajectory), each the best of three whole 2 s runs, alternated.

    The library's run is what a program using the library pays to run the scenario without a
    log: the schedules' setters (the runner's, which write the command arrays directly) and
    World.integrate at every step, timed as one loop. Until 2026-12-06 the reference was
    World.integrate alone with the targets left where they were after 200 steps: a robot holding
    still, whose contact solve takes 3 sweeps a step instead of the scenario's 11.4 (its joint
    friction rows while the sine moves the hips), about 1 us a step cheaper than the steps the
    command takes."""
    scn = load_scenario(SCENARIO, (), duration=2.0)

    def library_run() -> float:
        w, drivers = build_world(scn)
        for d in drivers:
            d.system.set_compute_inverse_dynamics(d.spec.inverse_dynamics)
        dt, steps = scn.dt, scn.steps
        t0 = time.perf_counter()
        for k in range(steps):
            t = k * dt
            for d in drivers:
                d.apply(t)
            w.integrate()
        return (time.perf_counter() - t0) / steps * 1e6

    best = [float("inf"), float("inf")]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "log.h5")
        per_step(ALL, out)  # warm-up
        library_run()
        for _ in range(3):
            best[0] = min(best[0], per_step(ALL, out)[0] * 1e6)
            best[1] = min(best[1], library_run())
    return best[0], best[1]


def many_robots() -> tuple:
    """(8 standing quadrupeds' step / 8, one's step): the two worlds alternated five times,
    each one's best of 300 steps (one short run each was within this VM's noise of the goal)."""
    worlds = []
    for n in (1, 8):
        w = World()
        w.add_ground()
        for k in range(n):
            quadruped(w, x=2.0 * k)
        step_us(w, number=100)  # (settled, compiled)
        worlds.append((w, n))
    best = [float("inf"), float("inf")]
    for _ in range(5):
        for i, (w, n) in enumerate(worlds):
            best[i] = min(best[i], per_call_us(w.integrate, repeat=1, number=300) / n)
    return best[1], best[0]


def startup() -> tuple:
    def best(cmd):
        out = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            out = min(out, time.perf_counter() - t0)
        return out
    return best([sys.executable, "-m", "raisimcli", "--help"]), \
        best([sys.executable, "-c", "pass"])


def whole_command() -> tuple:
    """(the process of `raisimcli run scenarios/quadruped_pd.toml`, start to exit, the wall time
    it reports: its simulation and its log), seconds, best of five: what a command costs beyond
    its run (the interpreter, the imports, loading the compiled loops, the exit)."""
    import json
    best_process = best_wall = float("inf")
    with tempfile.TemporaryDirectory() as d:
        for _ in range(5):
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "raisimcli", "run", SCENARIO, "--json",
                                  "-o", os.path.join(d, "log.h5")], check=True,
                                 capture_output=True, cwd=ROOT).stdout
            best_process = min(best_process, time.perf_counter() - t0)
            best_wall = min(best_wall, json.loads(out)["wall_time"])
    return best_process, best_wall


# the copy's package, not the checkout's (which `python -m raisimcli` from here would import)
FIRST_RUN = """
import os, sys
import raisimcli
here = os.path.dirname(os.path.abspath(raisimcli.__file__))
assert here == os.path.join(sys.argv[1], "raisimcli"), here
from raisimcli.cli.entry import main
sys.argv = ["raisimcli"] + sys.argv[2:]
main()
"""


def first_run(command: list = COMMAND, shipped: bool = True) -> tuple:
    """(the first run of a fresh copy of the package, the second), seconds, of `command` (the
    standing quadruped's); `shipped`: with the package's machine code (raisimcli/precompiled.py),
    else compiling."""
    with tempfile.TemporaryDirectory() as d:
        shutil.copytree(os.path.join(ROOT, "raisimcli"), os.path.join(d, "raisimcli"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        env = {**os.environ, "PYTHONPATH": d, "RAISIMCLI_PRECOMPILED": "1" if shipped else "0"}
        out = os.path.join(d, "log.h5")
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", FIRST_RUN, d, *command, "-o", out], check=True,
                           cwd=d, env=env, capture_output=True)
            times.append(time.perf_counter() - t0)
    return times[0], times[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--first-run", action="store_true",
                    help="also time a fresh copy's first run (with the shipped machine code, "
                         "and compiling without it)")
    args = ap.parse_args()
    rows = []  # (goal, ours, reference, unit, ratio, kind, limit)

    def ratio(goal, ours_, ref, unit, limit, kind="x"):
        value = ours_ / ref if kind == "x" else 100 * (ours_ / ref - 1)
        rows.append((goal, ours_, ref, unit, value, kind, limit))

    ratio("standing quadruped vs MuJoCo mj_step", *standing(), "us", 2.0)
    ratio("  the same, MuJoCo without joint terms (rep.)", *standing(same=False), "us", None)
    ratio("drop from 0.5 m vs mj_step (reported)", *drop(), "us", None)
    ratio("arm7 under PD vs the Pinocchio floor", *under_pd("arm7"), "us", 3.0)
    ratio("quadruped under PD vs the Pinocchio floor", *under_pd("quadruped"), "us", 3.0)
    ratio("inverse dynamics on, quadruped: extra", *inverse_dynamics("quadruped"), "us", 15.0,
          "%")
    ratio("get_mass_matrix vs crba", *getter("M"), "us", 1.5)
    ratio("get_nonlinearities vs nonLinearEffects", *getter("h"), "us", 1.5)
    ratio("raisimcli run, every signal, vs library step", *command_vs_library(), "us", 1.1)
    ratio("8 robots in a world, a robot's share vs one", *many_robots(), "us", 1.1)
    ratio("raisimcli --help vs the bare interpreter", *startup(), "s", None)
    ratio("raisimcli run, the process vs its wall time", *whole_command(), "s", None)
    if args.first_run:
        ratio("first run in a fresh copy vs cached", *first_run(), "s", None)
        ratio("  the README's command (in the air), reported", *first_run(command=AIR), "s", None)
        ratio("  compiling (without the shipped code)", *first_run(shipped=False), "s", None)
    print(f"{'goal':<46} {'ours':>9} {'reference':>10} {'':<3} {'ratio':>8} {'goal':>7}  met")
    for goal, o, ref, unit, value, kind, limit in rows:
        shown = f"{value:7.2f}x" if kind == "x" else f"{value:+7.0f}%"
        target = "" if limit is None else (f"{limit:.1f}x" if kind == "x" else f"+{limit:.0f}%")
        met = "" if limit is None else ("yes" if value <= limit else "no")
        print(f"{goal:<46} {o:9.2f} {ref:10.2f} {unit:<3} {shown:>8} {target:>7}  {met}")
    startup_s = next(r[1] for r in rows if r[0].startswith("raisimcli --help"))
    print(f"\nraisimcli --help: {startup_s:.2f} s (goal 0.3 s: "
          f"{'met' if startup_s <= 0.3 else 'not met'})")
    if args.first_run:
        first = next(r[1] for r in rows if r[0].startswith("first run"))
        print(f"first run in a fresh copy: {first:.1f} s (goal 5 s: "
              f"{'met' if first <= 5.0 else 'not met'})")


if __name__ == "__main__":
    main()
