"""Single-joint plants for PID tuning (used by hri_pid_tuning).

Every plant satisfies ``hri_pid_tuning.core.plant.JointPlant``: ``dt_s``, ``effort_max``,
``q_min_rad``, ``q_max_rad``, ``t_s``, ``q_rad``, ``reset(q_rad)``, ``step(effort)``.

* :class:`LinearPlant` – a SISO transfer function G(s) = num(s)/den(s) from effort to angle,
  discretised exactly (zero-order hold) with ``scipy.signal.cont2discrete``. Used for plants with
  known ultimate gain/period, e.g. 1/(s+1)³ (Ku = 8, Tu = 2π/√3).
* :class:`PlantJoint` – one joint of a multi-joint plant or robot as a ``JointPlant`` (the common
  part of the simulated view, :class:`JointView`, and the live one,
  ``hri_pid_tuning.live.LiveJointView``).
* :class:`JointView` – one joint of the simulated arm (``hri_sim.arm_sim.ArmSim``, mode pid), the
  others held by their own PIDs.
* The MuJoCo plants (models and setups) are built in :mod:`hri_sim.pid_plants_mujoco`.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Mapping

import numpy as np
from scipy import signal


class LinearPlant:
    """x[k+1] = Ad x[k] + Bd u[k], y = C x + D u, with y the joint angle (rad).

    ``reset(q)`` puts the plant at rest with output q (the steady state of an input that holds
    q when the DC gain is finite, otherwise the state with y = q and zero derivatives), and
    ``noise_std_rad`` adds white measurement noise (seeded) to ``q_rad``."""

    def __init__(self, num, den, dt_s: float = 1e-3, effort_max: float = math.inf,
                 q_min_rad: float = -math.inf, q_max_rad: float = math.inf,
                 noise_std_rad: float = 0.0, seed: int = 0, load: float = 0.0):
        A, B, C, D = signal.tf2ss(num, den)
        Ad, Bd, Cd, Dd, _ = signal.cont2discrete((A, B, C, D), dt_s, method="zoh")
        self.A, self.B, self.C, self.D = A, B, C, D
        self.Ad, self.Bd, self.Cd, self.Dd = Ad, Bd.ravel(), Cd.ravel(), float(Dd.ravel()[0])
        self.dt_s = dt_s
        self.effort_max = effort_max
        self.q_min_rad = q_min_rad
        self.q_max_rad = q_max_rad
        self.noise_std_rad = noise_std_rad
        self.load = load                 # constant input disturbance (e.g. gravity), effort units
        self._rng = np.random.default_rng(seed)
        self._seed = seed
        self.x = np.zeros(A.shape[0])
        self._t = 0.0
        self._u = 0.0

    @property
    def t_s(self) -> float:
        return self._t

    @property
    def q_rad(self) -> float:
        y = float(self.Cd @ self.x + self.Dd * self._u)
        if self.noise_std_rad:
            y += float(self._rng.normal(0.0, self.noise_std_rad))
        return y

    def reset(self, q_rad: float) -> None:
        self._rng = np.random.default_rng(self._seed)
        self._t = 0.0
        self._u = 0.0
        n = self.A.shape[0]
        # steady state for input u0: 0 = A x + B u0 → x = -A⁻¹ B u0, y = (D - C A⁻¹ B) u0
        try:
            xs = -np.linalg.solve(self.A, self.B).ravel()
            g0 = float(self.C.ravel() @ xs + self.D.ravel()[0])
        except np.linalg.LinAlgError:
            g0 = math.inf
        if math.isfinite(g0) and abs(g0) > 1e-12:
            self.x = xs * (q_rad / g0)
        else:
            # integrating plant: choose the state that gives y = q with the least norm
            c = self.C.ravel()
            self.x = c * (q_rad / float(c @ c)) if c @ c > 0 else np.zeros(n)

    def step(self, effort: float) -> None:
        u = max(-self.effort_max, min(self.effort_max, float(effort))) + self.load
        self.x = self.Ad @ self.x + self.Bd * u
        self._u = u
        self._t += self.dt_s


class PlantJoint:
    """One joint (``index``) of a multi-joint plant (``joint_names``, ``dt_s``, ``effort_max``,
    ``q_min``, ``q_max``, ``base_pose_rad``, ``t_s``, ``q_rad``) as a ``JointPlant``
    (hri_pid_tuning.core.plant); subclasses add ``reset`` / ``step``."""

    def __init__(self, plant, index: int):
        self.plant, self.index = plant, index
        self.name = plant.joint_names[index]
        self.dt_s = plant.dt_s
        self.effort_max = float(plant.effort_max[index])
        self.q_min_rad = float(plant.q_min[index])
        self.q_max_rad = float(plant.q_max[index])

    @property
    def t_s(self) -> float:
        return self.plant.t_s

    @property
    def q_rad(self) -> float:
        return float(self.plant.q_rad[self.index])

    def pose_with(self, q_rad: float) -> np.ndarray:
        """The plant's base pose with this joint at ``q_rad``."""
        q = np.array(self.plant.base_pose_rad, dtype=float)
        q[self.index] = q_rad
        return q


class JointView(PlantJoint):
    """One joint of a simulated plant (``hri_sim.arm_sim.ArmSim`` in mode pid: ``ArmSim.joint``) as
    a ``JointPlant``; the other joints are held at the base pose by PIDs with ``hold_gains[joint]``
    (``PIDGains``) and output limits ±effort_max."""

    def __init__(self, plant, index: int, hold_gains: Mapping[str, Any], pid_params):
        from hri_core.pid import PID

        super().__init__(plant, index)
        base = pid_params
        self._holds = []
        for i, jn in enumerate(plant.joint_names):
            if i == index:
                continue
            p = replace(base, output_min=-float(plant.effort_max[i]), output_max=float(plant.effort_max[i]))
            self._holds.append((i, PID(hold_gains[jn], p)))
        self._u = np.zeros(plant.n)

    def reset(self, q_rad: float) -> None:
        self.plant.reset(self.pose_with(q_rad))
        for _, pid in self._holds:
            pid.reset()

    def step(self, effort: float) -> None:
        q = self.plant.q_rad
        t = self.plant.t_s
        for i, pid in self._holds:
            self._u[i] = pid.update(self.plant.base_pose_rad[i], q[i], t)
        self._u[self.index] = effort
        self.plant.step(self._u)
