"""Spec step 3: the explicit torque, everything evaluated at the beginning of the step, not
clamped."""

from __future__ import annotations

import numpy as np


def explicit_torque(tau_cmd, b_joint, b_out, u, tau_act, k_s, spring_error, tau_ext) -> np.ndarray:
    """tau_exp = tau_cmd - (b_joint + b_out) u_t + tau_act + k_s (q_s - q_t) + J^T F_ext, (nv,).
    `spring_error` is q_s - q_t in the velocity space."""
    return tau_cmd - (b_joint + b_out) * u + tau_act + k_s * spring_error + tau_ext
