"""raisimcli: a URDF-driven, headless simulator with RaiSim's step semantics.

The library is organised as the data flows:

- :mod:`raisimcli.model` reads a URDF into a frozen :class:`~raisimcli.model.RobotModel`;
- :mod:`raisimcli.physics` simulates it (:class:`~raisimcli.physics.World`,
  :class:`~raisimcli.physics.ArticulatedSystem`);
- :mod:`raisimcli.cli` is the thin command-line layer over both.
"""

__version__ = "0.1.0"

from raisimcli.errors import LogError, ModelError, RaisimcliError, ScenarioError

__all__ = ["__version__", "RaisimcliError", "ModelError", "ScenarioError", "LogError"]
