"""How a sweep scales over local Dask workers, and what the engine costs per case.

16 cases of the standing quadruped (kp varies), each `--duration` long, on 1, 2, ... N workers
of a LocalCluster (N: the number of cores, or --max-workers): wall time of the whole sweep (the
cluster's start-up included, as a user waits for it), speed-up over one worker and parallel
efficiency (speed-up / workers). The reference is the same 16 cases run one after the other in
this process with the library (`raisimcli.scenario.run`), measured in the same run. The
engine's overhead comes first: sweeps of 16 and 48 cases of 10 steps, whose physics is
negligible, separate the fixed cost of a sweep from the cost per case; "without start-up" is the
efficiency with the fixed cost taken out, and "vs the machine" the sweep against N plain
processes that run their share of the cases at once without Dask (what the machine's cores
give when they run together).

    .venv/bin/python benchmarks/sweep.py [--duration 2.0] [--max-workers N]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
SCENARIO = os.path.join(ROOT, "scenarios", "quadruped_stand.toml")
GAINS = [200.0 + 10.0 * i for i in range(16)]  # the cases of the serial reference


def sweep_file(folder: str, duration: float, steps: int | None = None, cases: int = 16) -> str:
    path = os.path.join(folder, f"sweep-{duration}-{steps}-{cases}.toml")
    extra = f"\"world.duration\" = {steps * 0.001!r}" if steps else f"\"world.duration\" = {duration}"
    gains = [200.0 + 10.0 * i for i in range(cases)]
    with open(path, "w") as f:
        f.write(f'scenario = "{SCENARIO}"\nset = {{ {extra} }}\n[grid]\n'
                f'"robot.0.pd.kp" = {gains}\n')
    return path


def sweep_wall(path: str, out: str, workers: int) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "raisimcli", "sweep", path, "-o", out, "-j",
                        str(workers), "-q"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"the sweep failed:\n{r.stderr}")
    return wall


def serial_wall(duration: float, gains=GAINS) -> float:
    from raisimcli.scenario import load_scenario, run
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        for kp in gains:
            scn = load_scenario(SCENARIO, (f"robot.0.pd.kp={kp!r}",
                                           f"world.duration={duration!r}"),
                                log_path=os.path.join(d, f"{kp}.h5"))
            run(scn)
        return time.perf_counter() - t0


def machine_wall(duration: float, n: int) -> float:
    """The machine's own ceiling: n plain processes at once, each running its share of the 16
    cases serially (no Dask). Cores that share caches, memory bandwidth or a hypervisor's time
    make this longer than serial / n."""
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, __file__, "--share", str(k), str(n),
                               "--duration", str(duration)]) for k in range(n)]
    for p in procs:
        p.wait()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=2.0, help="simulated seconds per case")
    ap.add_argument("--max-workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--share", type=int, nargs=2, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.share:  # one process of machine_wall
        serial_wall(0.01)
        serial_wall(a.duration, GAINS[a.share[0]::a.share[1]])
        return
    with tempfile.TemporaryDirectory() as d:
        # the engine's cost: cases of 10 steps (a few ms of physics each) on one worker; 16 and
        # 48 of them, so that the fixed cost of a sweep and the cost per case separate
        w16 = min(sweep_wall(sweep_file(d, 0, steps=10, cases=16), os.path.join(d, f"s16-{k}"), 1)
                  for k in range(2))
        w48 = min(sweep_wall(sweep_file(d, 0, steps=10, cases=48), os.path.join(d, f"s48-{k}"), 1)
                  for k in range(2))
        per_case = (w48 - w16) / 32
        fixed = w16 - 16 * per_case
        serial_wall(0.01)  # numba's cache and the imports warm, as in a worker's second case
        serial = serial_wall(a.duration)
        print(f"16 cases of {a.duration} s, the standing quadruped; this machine has "
              f"{os.cpu_count()} cores")
        print(f"{'':>22} {'wall s':>8} {'speed-up':>9} {'efficiency':>11} "
              f"{'without start-up':>17} {'vs the machine':>15}")
        print(f"{'serial, in-process':>22} {serial:8.2f} {1.0:9.2f}")
        for n in range(1, a.max_workers + 1):
            ceiling = machine_wall(a.duration, n)
            print(f"{f'{n} plain processes':>22} {ceiling:8.2f} {serial / ceiling:9.2f} "
                  f"{serial / ceiling / n:11.2f}")
            wall = sweep_wall(sweep_file(d, a.duration), os.path.join(d, f"out{n}"), n)
            print(f"{f'sweep, {n} workers':>22} {wall:8.2f} {serial / wall:9.2f} "
                  f"{serial / wall / n:11.2f} {serial / max(wall - fixed, 1e-9) / n:17.2f} "
                  f"{ceiling / wall:15.2f}")
        print(f"engine overhead per case (resolve, ship the files, run 10 steps, send the log "
              f"back, write it): {per_case * 1e3:.0f} ms; fixed cost of a sweep (the command's "
              f"start-up, the cluster's, the workers' imports): {fixed:.2f} s")


if __name__ == "__main__":
    main()
