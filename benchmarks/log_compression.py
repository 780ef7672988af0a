"""The log's compression settings: cost per step and file size of `scenarios/quadruped_pd.toml`
(2 s by default, every signal) for gzip levels (libdeflate's, raisimcli/log/deflate.py), HDF5's
shuffle filter, lzf and no compression, and chunk sizes, with gzip in the writing process or in
the log's helper process (on by default where the run may use two CPUs); the reference is the
same scenario without signals, timed in the same run. Each setting keeps its best of `--repeat`
alternated runs (this machine's noise). The default must stay readable by plain h5py and
h5dump, without plugins: gzip or none (lzf needs h5py's plugin).

    python benchmarks/log_compression.py [--repeat 4] [--duration 2]
"""

import argparse
import functools
import os
import tempfile

from common import ROBOTS  # noqa: F401  (puts the repository on sys.path)
from raisimcli.log.writer import LogWriter
from raisimcli.scenario import load_scenario, run
from raisimcli.scenario import runner

SCENARIO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "scenarios", "quadruped_pd.toml")
ALL = '["state", "energy", "torque", "generalized_force", "actuators", "solver"]'
# (compression, gzip level, shuffle, chunk rows, helper); the first row is the default
SETTINGS = [("gzip", 4, True, 512, True), ("gzip", 4, True, 1024, True),
            ("gzip", 4, True, 256, True), ("gzip", 4, True, 2048, True),
            ("gzip", 1, True, 512, True), ("gzip", 2, True, 512, True),
            ("gzip", 6, True, 512, True), ("gzip", 9, True, 512, True),
            ("gzip", 4, False, 512, True), ("gzip", 4, True, 512, False),
            ("gzip", 4, True, 1024, False), ("gzip", 1, True, 512, False),
            ("gzip", 9, True, 512, False), ("lzf", 0, True, 512, False),
            ("none", 0, False, 512, False)]
NONE = ("none", 0, False, 512, False)


def per_step(out: str, signals: str, compression="gzip", level=4, shuffle=True, chunk=512,
             helper=False, duration=2.0):
    """(us per step, file bytes) of one run with these settings."""
    runner.LogWriter = functools.partial(LogWriter, gzip_level=level, shuffle=shuffle,
                                         chunk_rows=chunk, deflate_helper=helper)
    try:
        scn = load_scenario(SCENARIO, (f"log.signals={signals}",
                                       f'log.compression="{compression}"'),
                            duration=duration, log_path=out)
        res = run(scn)
    finally:
        runner.LogWriter = LogWriter
    return res.wall_time / res.steps * 1e6, os.path.getsize(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=4)
    ap.add_argument("--duration", type=float, default=2.0, help="simulated seconds (1 ms steps)")
    args = ap.parse_args()
    run_ = functools.partial(per_step, duration=args.duration)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "log.h5")
        run_(out, "[]")  # warm-up: numba's cache, imports
        base = float("inf")
        best = {s: (float("inf"), 0) for s in SETTINGS}
        for _ in range(args.repeat):
            base = min(base, run_(out, "[]")[0])
            for s in SETTINGS:
                t, size = run_(out, ALL, *s)
                best[s] = min(best[s], (t, size))
    raw = best[NONE][1]
    print(f"quadruped_pd.toml, {round(args.duration * 1000)} steps; without signals "
          f"{base:.1f} us/step")
    print(f"{'compression':<12} {'level':>5} {'shuffle':>7} {'chunk':>6} {'helper':>6} "
          f"{'us/step':>8} {'logging us':>10} {'MB':>6} {'of none':>7}")
    for (comp, level, shuffle, chunk, helper), (t, size) in best.items():
        lv = str(level) if comp == "gzip" else "-"
        print(f"{comp:<12} {lv:>5} {'yes' if shuffle else 'no':>7} {chunk:>6} "
              f"{'yes' if helper else 'no':>6} {t:8.1f} {t - base:10.1f} {size / 1e6:6.2f} "
              f"{size / raw:7.2f}")


if __name__ == "__main__":
    main()
