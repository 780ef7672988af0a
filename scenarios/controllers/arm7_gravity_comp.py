"""Gravity (and Coriolis) compensation plus PD for the 7-DoF arm: the controller of
scenarios/arm7_gravity_comp.toml, and the example of docs/controllers.md.

tau = h(q, u) + kp (q_target - q) - kd u, sent as the feedforward force. h is the nonlinear term
at the step's start (gravity, Coriolis, centrifugal), so the PD only has to correct the error:
the arm holds its target without the sag a PD of these gains shows alone.
"""

import numpy as np

KP = np.array([60.0, 60.0, 40.0, 40.0, 20.0, 10.0, 5.0])   # N m / rad
KD = np.array([6.0, 6.0, 4.0, 4.0, 2.0, 1.0, 0.5])          # N m s / rad
TARGET = np.array([0.0, 0.5, 0.0, -1.0, 0.0, 0.5, 0.0])     # rad


def control(t, robot):
    """Called every step between integrate1 and integrate2 with the step's start time t (s)."""
    q = robot.get_generalized_coordinate()
    u = robot.get_generalized_velocity()
    h = robot.get_nonlinearities()
    robot.set_generalized_force(h + KP * (TARGET - q) - KD * u)
