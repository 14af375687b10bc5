"""The plant interface the tuning core drives (a joint of a simulated or real robot), and the
closed-loop step simulation used by heuristics comparison, optimiser and bench.

A :class:`JointPlant` is one actuated joint, advanced in fixed steps of ``dt_s`` of *its* time
(simulated time for MuJoCo; the core never reads a wall clock). Angles in rad, effort in the
actuator's unit (N·m for revolute joints).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, runtime_checkable

import numpy as np

from hri_core.pid import PID, PIDGains, PIDParams


@runtime_checkable
class JointPlant(Protocol):
    dt_s: float
    effort_max: float
    q_min_rad: float
    q_max_rad: float

    @property
    def t_s(self) -> float: ...

    @property
    def q_rad(self) -> float: ...

    def reset(self, q_rad: float) -> None: ...

    def step(self, effort: float) -> None: ...


@dataclass
class Trace:
    """Samples of one closed-loop run (rad, effort units, s)."""

    t_s: np.ndarray
    setpoint_rad: np.ndarray
    measured_rad: np.ndarray
    effort: np.ndarray
    aborted: str | None = None

    @property
    def desired_deg(self) -> np.ndarray:
        return np.degrees(self.setpoint_rad)

    @property
    def measured_deg(self) -> np.ndarray:
        return np.degrees(self.measured_rad)


def simulate_closed_loop(plant: JointPlant, gains: PIDGains, setpoint_rad: Callable[[float], float],
                         duration_s: float, q0_rad: float | None = None, *,
                         pid_params: PIDParams, sample_every: int = 1,
                         divergence_rad: float | None = None) -> Trace:
    """Reset the plant to ``q0_rad`` (default: the set-point at t=0), run a PID (output limited
    to ±``plant.effort_max``) for ``duration_s`` of plant time, return every
    ``sample_every``-th sample. Stops early (``aborted='divergence'``) when |e| exceeds
    ``divergence_rad`` or the state is not finite."""
    from dataclasses import replace
    params = replace(pid_params, output_min=-plant.effort_max, output_max=plant.effort_max)
    pid = PID(gains, params)
    plant.reset(setpoint_rad(0.0) if q0_rad is None else q0_rad)
    # a live joint (hri_pid_tuning.live) reports the effort that holds it: bumpless start, the
    # integral term carries the static load instead of the joint sagging at t = 0
    u0 = getattr(plant, "effort", None)
    if u0 is not None and np.isfinite(u0):
        pid.reset(integral=float(u0) - gains.kp * (setpoint_rad(0.0) - plant.q_rad))
    t0 = plant.t_s
    n = int(round(duration_s / plant.dt_s))
    m = n // sample_every + 1
    ts = np.empty(m); rs = np.empty(m); ys = np.empty(m); us = np.empty(m)
    j = 0
    aborted = None
    for k in range(n):
        t = plant.t_s - t0
        r = setpoint_rad(t)
        y = plant.q_rad
        u = pid.update(r, y, t)
        if k % sample_every == 0:
            ts[j], rs[j], ys[j], us[j] = t, r, y, u
            j += 1
        if not np.isfinite(y) or (divergence_rad is not None and abs(r - y) > divergence_rad):
            aborted = "divergence"
            break
        plant.step(u)
    return Trace(ts[:j], rs[:j], ys[:j], us[:j], aborted)
