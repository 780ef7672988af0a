"""Spec step 5: the applied joint torque over the step, term by term.

With du = u_{t+1} - u_t, moving the implicit part to the right-hand side gives the equation of
motion of the step, M du/dt + h = sum of the rows below (for the one-stage schemes).
"""

from __future__ import annotations

import numpy as np

SOURCES = ("feedforward_pd", "damping", "actuators", "springs", "external", "joint_friction",
           "joint_limits", "contacts", "constraints")


def torque_table(dt: float, du: np.ndarray, u: np.ndarray, u_next: np.ndarray,
                 tau_cmd: np.ndarray, kp: np.ndarray, kd: np.ndarray, b: np.ndarray,
                 tau_act: np.ndarray, k_s: np.ndarray, spring_error: np.ndarray,
                 tau_ext: np.ndarray, impulse_by_source: dict[str, np.ndarray]) -> dict:
    """One (nv,) vector per source, and their "total":

    feedforward_pd  tau_cmd - (kd/2 + dt/4 kp) du
    damping         -1/2 (b_joint + b_out) (u_t + u_{t+1})       (trapezoidal rule)
    actuators       tau_act
    springs         k_s (q_s - q_t) - dt/4 k_s du
    external        J^T F_ext
    joint_friction  lambda_f / dt
    joint_limits    the limits' share of J_c^T lambda_c / dt
    contacts        the contacts' share of J_c^T lambda_c / dt
    constraints     J^T lambda / dt of the loop and mimic constraints (their term of the step's
                    equation of motion, see "Equations of motion of a step")
    """
    out = {
        "feedforward_pd": tau_cmd - (0.5 * kd + 0.25 * dt * kp) * du,
        "damping": -0.5 * b * (u + u_next),
        "actuators": tau_act,
        "springs": k_s * spring_error - 0.25 * dt * k_s * du,
        "external": tau_ext,
    }
    zero = np.zeros_like(u)
    for source, generalized_impulse in impulse_by_source.items():
        out[source] = generalized_impulse / dt
    for source in SOURCES:
        out.setdefault(source, zero)
    out["total"] = sum(out[s] for s in out)
    return out
