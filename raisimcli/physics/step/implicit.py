"""Spec step 4, first part: the implicit weight w of a DoF and the factorisation of
M~ = M + diag(w)."""

from __future__ import annotations

import numpy as np
from raisimcli.errors import RaisimcliError
from raisimcli.jit import kernel
from raisimcli.linalg import Cholesky


@kernel
def implicit_weight(dt, b, kd, kp, k_s):
    """One DoF's entry of the implicit diagonal: w = dt/2 (b + k_d) + dt^2/4 (k_p + k_s), with
    b = b_joint + b_out; the gains are 0 outside PD mode. The one place of this rule: the step's
    loops call it."""
    return 0.5 * dt * (b + kd) + 0.25 * dt * dt * (kp + k_s)


# the names of a floating joint's linear DoFs end so (RobotModel.dof_names; a spherical joint has
# only the angular ".wx", ".wy", ".wz")
_FLOATING = (".vx", ".vy", ".vz")


class Factorized:
    """One Cholesky factorisation of M~ (nv, nv), reused for every solve of the step (our
    fixed-order loops, not LAPACK: see raisimcli.linalg)."""

    def __init__(self, M_tilde: np.ndarray, dof_names=None, factor: Cholesky | None = None):
        """`factor`: the Cholesky factorisation of M_tilde when it has been computed already."""
        self.matrix = M_tilde
        self._c = Cholesky(M_tilde) if factor is None else factor
        if self._c.info != 0:
            k = self._c.info - 1
            dof = f"DoF {dof_names[k]!r}" if dof_names is not None else f"DoF {k}"
            fix = "give it damping, PD gains, a spring or rotor_inertia"
            if dof_names is not None and dof_names[k].endswith(_FLOATING):
                # (PyBullet's URDFs write mass 0 for a body that never moves)
                fix = ("a floating base that moves no mass: a static object wants a fixed base, "
                       "base = \"fixed\" in the scenario's [[robot]] or base=\"fixed\" when "
                       "loading; or give its links an <inertial> with mass")
            raise RaisimcliError(f"the mass matrix with the implicit terms is not positive "
                                 f"definite at {dof}: it moves no mass ({fix}) or the state is "
                                 "not finite")

    @property
    def lower(self) -> np.ndarray:
        """L of M~ = L L^T (nv, nv), for compiled solves (read it, never write it)."""
        return self._c.L

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """M~^-1 rhs, for a (nv,) vector or an (nv, k) matrix."""
        return self._c.solve(rhs)

    def solve_rows_into(self, J: np.ndarray, col0: int, out: np.ndarray, row0: int) -> None:
        """out[row0 : row0 + nv] = M~^-1 J[:, col0 : col0 + nv]^T (J and out C-contiguous)."""
        self._c.solve_rows_into(J, col0, out, row0)
