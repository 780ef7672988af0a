"""Comparing two 100 MB logs: wall time and peak memory of `raisimcli compare` (run as a child
process, so that its peak resident memory is its own).

    python benchmarks/compare_large.py
"""

import os
import resource
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

ROWS, COLS = 250_000, 25  # two (ROWS, COLS) float64 datasets: 100 MB per log


def write_log(path: str, seed: int, perturb: bool) -> None:
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "raisimcli-log"
        f.attrs["format_version"] = 1
        f.attrs["status"] = "complete"
        t = f.create_dataset("time", data=1e-3 * np.arange(1, ROWS + 1))
        t.make_scale("time")
        for name in ("q", "u"):
            ds = f.create_dataset(f"robots/big/{name}", shape=(ROWS, COLS), dtype=np.float64,
                                  chunks=(1024, COLS))
            ds.dims[0].attach_scale(t)
            ds.dims[0].label = "time"
            for r0 in range(0, ROWS, 50_000):
                block = np.cumsum(np.random.default_rng(r0).normal(size=(50_000, COLS)), axis=0)
                ds[r0:r0 + 50_000] = block
        if perturb:
            f["robots/big/u"][ROWS - 7, 3] += 1.0
    del rng


def main():
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "a.h5"), os.path.join(d, "b.h5")
        write_log(a, 0, False)
        write_log(b, 0, True)
        size = os.path.getsize(a) / 1e6
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "raisimcli", "compare", a, b, "-q"],
                              capture_output=True, text=True)
        wall = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"two logs of {size:.0f} MB: compare took {wall:.2f} s (exit {proc.returncode}, "
              f"expected 1: one entry differs), peak memory {peak:.0f} MB")
        print(proc.stderr.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
