"""Spec step 1 for one DoF: the command, clamped to the actuation limits.

This is the one place of the PD law. Every loop that needs a command calls it: the step's explicit
pass (step/explicit.py) and get_generalized_force (readings.py).
"""

from __future__ import annotations

from raisimcli.jit import kernel


@kernel
def pd_command(kp, kd, q_err, u_ref, u, tau_ff, lower, upper):
    """tau_cmd = clamp(tau_ff + tau_PD, tau_lower, tau_upper), with tau_PD = kp (q_ref - q_t) +
    kd (u_ref - u_t). `q_err` is q_ref - q_t in the velocity space (a rotation vector for a
    quaternion); the gains are 0 outside PD mode; a limit is +-inf where a joint has none. A NaN
    command stays NaN (numpy's maximum and minimum: a NaN propagates)."""
    c = tau_ff + (kp * q_err + kd * (u_ref - u))
    if not (c >= lower or c != c):  # max(c, lower)
        c = lower
    if not (c <= upper or c != c):  # min(c, upper)
        c = upper
    return c
