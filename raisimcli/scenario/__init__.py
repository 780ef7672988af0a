"""Scenarios: the TOML schema, its resolution against the robots, and the run loop."""

from raisimcli.scenario.loader import ResolvedScenario, load_scenario
from raisimcli.scenario.runner import RunResult, run

__all__ = ["ResolvedScenario", "RunResult", "load_scenario", "run"]
