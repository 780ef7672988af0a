"""This checkout against another revision of the project, on the same machine, alternated: the step
of the standing quadruped (`contacts_vs_mujoco.py`'s world), of the quadruped under PD without and
with inverse dynamics (`step.py`'s), of the 7-DoF arm under PD and RUNGE_KUTTA_4, of a four-bar
with its loop (`constraints_cost.py`'s), and the wall time of the README's main command
(`raisimcli run scenarios/quadruped_pd.toml`, what it reports). The other revision is checked out
in a temporary git worktree (with its own numba cache, compiled in a first round that is not
counted). Each round measures both trees, one after the other, each in fresh processes; the table
gives each tree's best and median over the rounds and the ratio of the bests. On a noisy machine
the medians say more than any single run.

    python benchmarks/versus.py REV [--rounds 5]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MEASURES = ("standing quadruped, us a step", "quadruped under PD, us a step",
            "the same with inverse dynamics, us a step", "arm7 under RUNGE_KUTTA_4, us a step",
            "four-bar with its loop, us a step",
            "raisimcli run quadruped_pd.toml, s")


def measure(tree: str) -> list[float]:
    """The step measurements of the package in `tree` (this file's benchmark worlds, built
    through the public API); run in a process of its own."""
    sys.path.insert(0, tree)
    import raisimcli
    assert os.path.dirname(os.path.dirname(os.path.abspath(raisimcli.__file__))) == tree
    sys.path.insert(0, HERE)  # (raisimcli is imported already: from `tree`)
    from common import per_call_us
    from contacts_vs_mujoco import ours
    from step import setup
    w, _ = ours()
    stand = per_call_us(w.integrate, repeat=5, number=1000)
    w, r = setup("quadruped")
    for _ in range(200):
        w.integrate()
    pd = per_call_us(w.integrate, repeat=5, number=1000)
    r.set_compute_inverse_dynamics(True)
    pd_id = per_call_us(w.integrate, repeat=5, number=1000)
    w, r = setup("arm7")
    r.set_integration_scheme("RUNGE_KUTTA_4")
    for _ in range(200):
        w.integrate()
    rk4 = per_call_us(w.integrate, repeat=5, number=1000)
    from constraints_cost import ROBOTS, fourbars, load_urdf_string, World
    w = World(0.001)
    w.add_articulated_system(load_urdf_string(fourbars(1), path=f"{ROBOTS}/x.urdf"))
    loop = per_call_us(w.integrate, repeat=5, number=1000)
    return [stand, pd, pd_id, rk4, loop]


def run_command(tree: str, out: str) -> float:
    """The wall time that `raisimcli run scenarios/quadruped_pd.toml --json` of `tree` reports."""
    env = dict(os.environ, PYTHONPATH=tree)
    p = subprocess.run([sys.executable, "-m", "raisimcli", "run", "scenarios/quadruped_pd.toml",
                        "-o", out, "--json"], cwd=tree, env=env, capture_output=True, text=True,
                       check=True)
    text = p.stdout
    return float(json.loads(text[text.index("{"):text.rindex("}") + 1])["wall_time"])


def one_round(tree: str, out: str) -> list[float]:
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure", tree],
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1]) + [run_command(tree, out)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev", nargs="?", help="the revision to compare this checkout with")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--measure", metavar="TREE", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return
    if not args.rev:
        ap.error("give the revision to compare with, e.g. HEAD~3 or a commit")
    with tempfile.TemporaryDirectory() as tmp:
        other = os.path.join(tmp, "other")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", other, args.rev],
                       check=True, capture_output=True)
        try:
            out = os.path.join(tmp, "log.h5")
            trees = {args.rev: other, "this checkout": ROOT}
            figures = {name: [] for name in trees}
            for k in range(args.rounds + 1):  # round 0 compiles the other tree's loops
                for name, tree in trees.items():
                    row = one_round(tree, out)
                    if k:
                        figures[name].append(row)
                print(f"round {k} of {args.rounds} done", file=sys.stderr)
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", other],
                           check=False, capture_output=True)
    a, b = (list(zip(*figures[name])) for name in trees)
    print(f"{'measurement':<44} {args.rev[:12]:>12} best/median  {'this':>8} best/median  "
          "this/other (bests)")
    for i, label in enumerate(MEASURES):
        print(f"{label:<44} {min(a[i]):9.4g} / {statistics.median(a[i]):<9.4g} "
              f"{min(b[i]):9.4g} / {statistics.median(b[i]):<9.4g} {min(b[i]) / min(a[i]):8.2f}")


if __name__ == "__main__":
    main()
