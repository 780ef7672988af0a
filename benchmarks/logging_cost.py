"""The cost of logging every step, as a fraction of the step time, and the real-time factor:
`scenarios/quadruped_pd.toml` (in the air: the state, the torque table, the actuators, inverse
dynamics) and `scenarios/quadruped_stand.toml` (on the ground: the contacts too, and inverse
dynamics with the contact forces). Every variant of a scenario is timed in the same process,
alternated.

    python benchmarks/logging_cost.py
"""

import os
import tempfile

from common import ROBOTS  # noqa: F401  (puts the repository on sys.path)
from raisimcli.scenario import load_scenario, run

SCENARIOS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "scenarios")
SCENARIO = os.path.join(SCENARIOS, "quadruped_pd.toml")
STAND = os.path.join(SCENARIOS, "quadruped_stand.toml")


ALL = '["state", "energy", "torque", "generalized_force", "actuators", "solver"]'
ALL_CONTACTS = ALL[:-1] + ', "contacts"]'


def per_step(signals: str, out: str, scenario: str = SCENARIO,
             duration: float = 2.0) -> tuple[float, int]:
    scn = load_scenario(scenario, (f"log.signals={signals}",), duration=duration, log_path=out)
    res = run(scn)
    return res.wall_time / res.steps, res.steps


def measure(scenario: str, variants: list[tuple[str, str]], duration: float,
            repeat: int) -> tuple[dict, int]:
    """Each variant's best us a step over `repeat` alternated rounds."""
    best = {name: float("inf") for name, _ in variants}
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "log.h5")
        per_step("[]", out, scenario, duration)  # warm-up: numba's cache, imports
        for _ in range(repeat):
            for name, signals in variants:
                t, n = per_step(signals, out, scenario, duration)
                best[name] = min(best[name], t)
    return best, n


def main(repeat: int = 5):
    """Alternate the variants and keep each one's best, against this machine's noise."""
    for scenario, duration, variants in (
            (SCENARIO, 2.0, [("without logging", "[]"), ("with every signal", ALL)]),
            (STAND, 3.0, [("without logging", "[]"), ("the contacts only", '["contacts"]'),
                          ("with every signal", ALL_CONTACTS)])):
        best, n = measure(scenario, variants, duration, repeat)
        none, every = best["without logging"], best["with every signal"]
        print(f"{os.path.basename(scenario)}, {n} steps of 1 ms (inverse dynamics on: its "
              "wrenches are logged in every variant)")
        for name, t in best.items():
            print(f"  step {name:<22} {t * 1e6:8.1f} us")
        print(f"  logging cost           {100 * (every - none) / none:8.1f} % of the step")
        print(f"  real-time factor       {1e-3 / every:8.2f} (with every signal)")


if __name__ == "__main__":
    main()
