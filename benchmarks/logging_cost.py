"""The cost of logging every step, as a fraction of the step time, and the real-time factor of the
quadruped scenario. Both runs are timed here, in the same process.

    python benchmarks/logging_cost.py
"""

import os
import tempfile

from common import ROBOTS  # noqa: F401  (puts the repository on sys.path)
from raisimcli.scenario import load_scenario, run

SCENARIO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "scenarios", "quadruped_pd.toml")


ALL = '["state", "energy", "torque", "generalized_force", "actuators", "solver"]'


def per_step(signals: str, out: str) -> tuple[float, int]:
    scn = load_scenario(SCENARIO, (f"log.signals={signals}",), duration=2.0, log_path=out)
    res = run(scn)
    return res.wall_time / res.steps, res.steps


def main(repeat: int = 5):
    """Alternate the two variants and keep each one's best, against this machine's noise."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "log.h5")
        per_step("[]", out)  # warm-up: numba's cache, imports
        t_none = t_all = float("inf")
        for _ in range(repeat):
            t, n = per_step("[]", out)
            t_none = min(t_none, t)
            t_all = min(t_all, per_step(ALL, out)[0])
    print(f"quadruped_pd.toml, {n} steps of 1 ms")
    print(f"  step without logging   {t_none * 1e6:8.1f} us")
    print(f"  step with every signal {t_all * 1e6:8.1f} us")
    print(f"  logging cost           {100 * (t_all - t_none) / t_none:8.1f} % of the step")
    print(f"  real-time factor       {1e-3 / t_all:8.2f} (with logging)")


if __name__ == "__main__":
    main()
