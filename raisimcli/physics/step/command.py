"""Spec step 1: the command, clamped to the actuation limits."""

from __future__ import annotations

import numpy as np


def pd_torque(kp: np.ndarray, kd: np.ndarray, q_error: np.ndarray, u_ref: np.ndarray,
              u: np.ndarray) -> np.ndarray:
    """tau_PD = kp (q_ref - q_t) + kd (u_ref - u_t), (nv,). `q_error` is q_ref - q_t in the
    velocity space (a rotation vector for quaternions)."""
    return kp * q_error + kd * (u_ref - u)


def clamped_command(tau_ff: np.ndarray, tau_pd: np.ndarray, lower: np.ndarray,
                    upper: np.ndarray) -> np.ndarray:
    """tau_cmd = clamp(tau_ff + tau_PD, tau_lower, tau_upper), (nv,); +-inf where a joint has no
    actuation limit."""
    return np.minimum(np.maximum(tau_ff + tau_pd, lower), upper)
