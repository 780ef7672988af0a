"""The first run of every robot of example-robot-data in a fresh environment: what it compiles.

For each robot (the first URDF of each folder), `raisimcli run` of a scenario of it (PD, inverse
dynamics, 0.4 s) in a fresh copy of the package without any numba cache, then again in the same
copy: the first run's wall time, the second's (the reference: everything cached), their ratio, and
the compiled loops the first run saved to numba's cache (numba's NUMBA_DEBUG_CACHE log, "data
saved"). With the package's shipped machine code (raisimcli/precompiled.py) no robot should
compile anything: a robot that does needs argument types that no shipped scenario has.

    python benchmarks/first_run_robots.py [--ground fall|stand|air] [--robots go2,panda]

--ground: `fall` (default) puts a ground 0.6 m below the robot's origin (the floating ones fall
onto it), `stand` at the lowest point of its collision shapes (it starts touching), `air` none.
About 2-4 s a robot, 2-3 min for all of them.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ERD = os.path.join(sys.prefix, "lib", f"python{sys.version_info.major}.{sys.version_info.minor}",
                   "site-packages", "cmeel.prefix", "share", "example-robot-data", "robots")

SCENARIO = """schema_version = 1
[world]
dt = 0.001
duration = 0.4
{ground}
[[robot]]
name = "robot"
urdf = "{urdf}"
inverse_dynamics = true
[robot.pd]
kp = 100.0
kd = 5.0
"""


def robots() -> dict:
    """{name: the first URDF of each folder of example-robot-data}."""
    out = {}
    for folder in sorted(glob.glob(os.path.join(ERD, "*", ""))):
        found = sorted(glob.glob(os.path.join(folder, "urdf", "*.urdf"))) + \
            sorted(glob.glob(os.path.join(folder, "robots", "*.urdf")))
        if found:
            out[os.path.basename(os.path.dirname(folder)).replace("_description", "")] = found[0]
    return out


def lowest_point(urdf: str) -> float | None:
    """The lowest point of the robot's collision shapes at its initial configuration."""
    from raisimcli.physics import World
    w = World()
    w.add_ground(-100.0)
    w.add_articulated_system(urdf)
    rs = w.contact_world.robots[0]
    rs.update()
    return float(rs.lowest.min()) if rs.lowest.size else None


def first_run(scenario: str, d: str) -> tuple:
    """(first run's seconds, second's, the loops the first compiled, exit code), in a fresh
    copy of the package in `d`."""
    copy = os.path.join(d, "copy")
    shutil.copytree(os.path.join(ROOT, "raisimcli"), os.path.join(copy, "raisimcli"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(PYTHONPATH=copy, NUMBA_DEBUG_CACHE="1")
    times, compiled, code = [], [], 0
    for _ in range(2):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "raisimcli", "run", scenario, "-q",
                               "-o", os.path.join(d, "log.h5")], cwd=d, env=env,
                              capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        code = code or done.returncode
        if len(times) == 1:
            compiled = sorted({line.rsplit("/", 1)[-1].split("-")[0]
                               for line in done.stdout.splitlines() if "data saved" in line})
    return times[0], times[1], compiled, code


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ground", choices=("fall", "stand", "air"), default="fall")
    ap.add_argument("--robots", help="comma-separated names (default: all)")
    args = ap.parse_args()
    chosen = robots()
    if args.robots:
        chosen = {k: v for k, v in chosen.items() if k in args.robots.split(",")}
    print(f"{'robot':18s} {'first s':>8s} {'second s':>9s} {'ratio':>6s}  compiled")
    compiling = ran = 0
    for name, urdf in chosen.items():
        ground = ""
        if args.ground == "fall":
            ground = "[world.ground]\nheight = -0.6"
        elif args.ground == "stand":
            low = lowest_point(urdf)
            if low is None:
                print(f"{name:18s} (no collision shapes: skipped)")
                continue
            ground = f"[world.ground]\nheight = {low + 0.0005!r}"
        with tempfile.TemporaryDirectory() as d:
            scenario = os.path.join(d, f"{name}.toml")
            with open(scenario, "w", encoding="utf-8") as f:
                f.write(SCENARIO.format(ground=ground, urdf=urdf))
            first, second, compiled, code = first_run(scenario, d)
        compiling += bool(compiled)
        ran += 1
        status = "" if code == 0 else f" (exit {code})"
        print(f"{name:18s} {first:8.2f} {second:9.2f} {first / second:6.2f}  "
              f"{', '.join(compiled) or '-'}{status}", flush=True)
    print(f"{compiling} of {ran} robots compiled something on their first run")


if __name__ == "__main__":
    main()
