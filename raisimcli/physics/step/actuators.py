"""Spec step 2: actuator torques clipped to the motor operating regions, mapped to the joints."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raisimcli.jit import kernel
from raisimcli.linalg import _mv
from raisimcli.model.types import RobotModel


@dataclass
class Transmission:
    """The actuators of one robot as vectors, built once at load time.

    `T`: (n_act, nv) transmission matrix, motor speeds w_m = T u and joint torques T^T tau_m (row a
    holds G at the driven joint and r_c at each coupled joint). `gear`, `stall`, `b`, `peak`:
    (n_act,) gear ratio, stall torque K_t V_bus / R, back-EMF damping K_t / (R K_v) and peak torque
    (motor side). `output_damping`, `output_friction`: (nv,) b_out and tau_c,out of each actuated
    joint. `T`, `gear`, `peak`, `output_damping`, `output_friction` and the back-EMF damping are
    never written after loading: the steps keep copies of them (step/explicit.py's
    StageScratch, step/quick.py's QuickScratch); whatever changes them must call the system's
    `invalidate()`, which drops those copies. The stall torques change with the bus voltage
    (set_bus_voltage makes them again): the steps read them as they are at each step."""

    names: tuple
    T: np.ndarray
    gear: np.ndarray
    torque_constant: np.ndarray
    resistance: np.ndarray
    velocity_constant: np.ndarray
    bus_voltage: np.ndarray
    peak: np.ndarray
    output_damping: np.ndarray
    output_friction: np.ndarray

    @classmethod
    def from_model(cls, model: RobotModel) -> "Transmission":
        n, nv = len(model.actuators), model.nv
        T = np.zeros((n, nv))
        out_b = np.zeros(nv)
        out_f = np.zeros(nv)
        u_of = {j.name: j.u_slice.start for j in model.moving_joints}
        for a, act in enumerate(model.actuators):
            T[a, u_of[act.joint]] = act.gear_ratio
            for joint, ratio in act.couplings:
                T[a, u_of[joint]] += ratio
            out_b[u_of[act.joint]] += act.output_damping
            out_f[u_of[act.joint]] += act.output_friction
        m = [act.motor for act in model.actuators]
        return cls(
            names=tuple(act.name for act in model.actuators), T=T,
            gear=np.array([act.gear_ratio for act in model.actuators]),
            torque_constant=np.array([x.torque_constant for x in m]),
            resistance=np.array([x.resistance for x in m]),
            velocity_constant=np.array([x.velocity_constant for x in m]),
            bus_voltage=np.array([x.bus_voltage for x in m]),
            peak=np.array([x.peak_torque for x in m]),
            output_damping=out_b, output_friction=out_f)

    def __post_init__(self):
        self.back_emf = self.torque_constant / (self.resistance * self.velocity_constant)
        self.set_bus_voltage(self.bus_voltage)
        # what actuator_torques gives without actuators, made once (nobody writes into it)
        self.none_acting = (np.zeros(self.T.shape[1]), ActuatorState(*(_NO_ACTUATORS,) * 5)) \
            if self.T.shape[0] == 0 else None

    def set_bus_voltage(self, volts: np.ndarray) -> None:
        """Bus voltages (n_act,), and the stall torques they give."""
        self.bus_voltage = np.array(volts, dtype=float)
        self.stall = self.torque_constant * self.bus_voltage / self.resistance


_NO_ACTUATORS = np.empty(0)  # the state arrays of a system without actuators (read-only)
_NO_ACTUATORS.setflags(write=False)


@dataclass
class ActuatorState:
    """Per actuator, (n_act,) each: motor speed, operating-region bounds, commanded motor torque
    tau_a / G and the applied motor torque tau_m (motor side, N m and rad/s)."""

    motor_speed: np.ndarray
    tau_min: np.ndarray
    tau_max: np.ndarray
    commanded: np.ndarray
    applied: np.ndarray


@kernel
def _clamp(x, lo, hi):
    """np.minimum(np.maximum(x, lo), hi) for one element: a NaN propagates, of two equal values
    the first is kept."""
    if not (x >= lo or x != x):
        x = lo
    if not (x <= hi or x != x):
        x = hi
    return x


@kernel
def _actuators(T, u, stall, back_emf, peak, tau_a, gear, enforce, w_m, lo, hi, commanded,
               applied, tau_act):
    """The loop form of actuator_torques' equations, the products T u and T^T tau_m with
    linalg's own loop (summed in index order: the bits of linalg.matmul). T^T tau_m is that
    loop written out over T's columns: _mv of the transposed view would be compiled once more,
    for its Fortran layout."""
    _mv(T, u, w_m)
    for a in range(T.shape[0]):
        emf = back_emf[a] * w_m[a]
        lo[a] = _clamp(-stall[a] - emf, -peak[a], peak[a])
        hi[a] = _clamp(stall[a] - emf, -peak[a], peak[a])
        commanded[a] = tau_a[a] / gear[a]
        applied[a] = _clamp(commanded[a], lo[a], hi[a]) if enforce else commanded[a]
    for i in range(tau_act.shape[0]):  # _mv(T.T, applied, tau_act)
        s = 0.0
        for p in range(T.shape[0]):
            s += T[p, i] * applied[p]
        tau_act[i] = s


def actuator_torques(tr: Transmission, tau_a: np.ndarray, u: np.ndarray,
                     enforce_region: bool) -> tuple[np.ndarray, ActuatorState]:
    """tau_act (nv,) and the actuator states, spec step 2:

        w_m = G u_j + sum_c r_c u_c
        tau_m,min = clamp(-tau_stall - b w_m, -tau_peak, tau_peak)
        tau_m,max = clamp( tau_stall - b w_m, -tau_peak, tau_peak)
        tau_m = clamp(tau_a / G, tau_m,min, tau_m,max)     (tau_a / G without the region)
        tau_act = T^T tau_m

    in one compiled loop (_actuators). Without actuators, tau_act is zero (the empty sums of
    T^T tau_m) and every state array is empty, without the loop."""
    n_act, nv = tr.T.shape
    if n_act == 0:
        return tr.none_acting
    w_m, lo, hi = np.empty(n_act), np.empty(n_act), np.empty(n_act)
    commanded, applied, tau_act = np.empty(n_act), np.empty(n_act), np.empty(nv)
    _actuators(tr.T, np.ascontiguousarray(u, dtype=np.float64), tr.stall, tr.back_emf, tr.peak,
               np.ascontiguousarray(tau_a, dtype=np.float64), tr.gear, bool(enforce_region),
               w_m, lo, hi, commanded, applied, tau_act)
    return tau_act, ActuatorState(w_m, lo, hi, commanded, applied)
