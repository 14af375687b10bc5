"""Headless MuJoCo simulation of a serial arm, stepped in lockstep with simulated time.

``ArmSim`` owns one ``MjModel``/``MjData`` and a joint-level controller that runs at every physics
step (as a robot's internal 1 kHz loop does):

- ``actuation="position"``: the MJCF's position servos get the interpolated reference q_r(t)
  (tau = kp (q_r - q) - kv dq inside MuJoCo); gravity is cancelled by ``gravcomp`` on the bodies.
- ``actuation="impedance"``: torque motors with a joint impedance law plus model feed-forward

      tau = K (q_r - q) + D (dq_r - dq) + c(q, dq) + g(q)        (clipped to the torque limits)

  where c + g = ``qfrc_bias`` (Coriolis/centrifugal + gravity; the gravity part only when
  ``gravity_compensation``). K, D per joint from config ``sim.arm``.

A command (q_des, dq_des) arriving at time t_k is reached by linear interpolation over
``interpolation_s`` (the sender's period), so a 100 Hz command stream drives a 500 Hz physics loop
without steps: q_r(t) = q_r(t_k) + clip((t - t_k)/T, 0, 1) (q_des - q_r(t_k)), dq_r = that slope
(or dq_des when given).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from hri_sim.models import load_arm
from hri_sim.parameters_gen import SimArmParams


#: Config ``sim.arm``, typed from its declaration (hri_sim/parameters.yaml).
ArmSimParams = SimArmParams


class SimulationUnstable(RuntimeError):
    """MuJoCo hit NaN/Inf/huge accelerations (and reset its state): the gains or the model are wrong."""


class ArmSim:
    """One simulated arm; ``advance(dt)`` steps physics by whole timesteps (lockstep)."""

    def __init__(self, robot: str, joint_names: Sequence[str], params: ArmSimParams,
                 q0: np.ndarray, ee_site: str = "attachment_site", interpolation_s: float = 0.0,
                 model=None):
        import mujoco

        self._mj = mujoco
        self.params = params
        if model is None:
            model = load_arm(robot, actuation="torque" if params.actuation == "impedance" else "position",
                             gravity_compensation=params.gravity_compensation and params.actuation == "position",
                             timestep_s=params.timestep_s)
        self.model = model
        self.data = mujoco.MjData(model)
        self.joint_names = tuple(joint_names)
        jids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in joint_names]
        if min(jids) < 0:
            raise ValueError(f"joints not in the model: {[n for n, j in zip(joint_names, jids) if j < 0]}")
        self.qadr = np.array([model.jnt_qposadr[j] for j in jids])
        self.vadr = np.array([model.jnt_dofadr[j] for j in jids])
        self.q_min = np.array([model.jnt_range[j][0] for j in jids])
        self.q_max = np.array([model.jnt_range[j][1] for j in jids])
        aids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, n) for n in joint_names]
        if min(aids) < 0:  # actuators named after their joints (FR3); else by transmission
            aids = [int(np.flatnonzero(model.actuator_trnid[:, 0] == j)[0]) for j in jids]
        self.aadr = np.array(aids)
        self.site_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, ee_site)
        if self.site_id < 0:
            raise ValueError(f"site '{ee_site}' not in the model")
        n = len(jids)
        if params.actuation == "impedance":
            if params.impedance_stiffness_nm_rad is None or params.impedance_damping_nms_rad is None:
                raise ValueError("sim.arm.impedance_stiffness_nm_rad / impedance_damping_nms_rad "
                                 "are required for actuation impedance")
            self.K = np.asarray(params.impedance_stiffness_nm_rad, dtype=float)
            self.D = np.asarray(params.impedance_damping_nms_rad, dtype=float)
            if self.K.shape != (n,) or self.D.shape != (n,):
                raise ValueError(f"impedance gains need {n} values")
        self.interpolation_s = float(interpolation_s)
        q0 = np.asarray(q0, dtype=float)
        self.data.qpos[self.qadr] = q0
        mujoco.mj_forward(model, self.data)
        self._ref_from = q0.copy()
        self._ref_to = q0.copy()
        self._ref_t0 = 0.0
        self._dq_des: Optional[np.ndarray] = None
        self.steps = 0
        self._apply(self.data.time)

    # ------------------------------------------------------------------ state
    @property
    def time_s(self) -> float:
        return float(self.data.time)

    @property
    def q(self) -> np.ndarray:
        return self.data.qpos[self.qadr].copy()

    @property
    def dq(self) -> np.ndarray:
        return self.data.qvel[self.vadr].copy()

    @property
    def tau(self) -> np.ndarray:
        return self.data.actuator_force[self.aadr].copy()

    def ee_pose(self) -> np.ndarray:
        """``base_T_ee`` (4x4) of the controlled site (the model's world is the robot base)."""
        T = np.eye(4)
        T[:3, :3] = self.data.site_xmat[self.site_id].reshape(3, 3)
        T[:3, 3] = self.data.site_xpos[self.site_id]
        return T

    # ------------------------------------------------------------------ command
    def _reference(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        T = self.interpolation_s
        delta = self._ref_to - self._ref_from
        if T <= 0.0:
            s, slope = 1.0, np.zeros_like(delta)
        else:
            s = min(max((t - self._ref_t0) / T, 0.0), 1.0)
            slope = delta / T if s < 1.0 else np.zeros_like(delta)
        q_r = self._ref_from + s * delta
        dq_r = self._dq_des if self._dq_des is not None else slope
        return q_r, dq_r

    def command(self, q_des: np.ndarray, dq_des: Optional[np.ndarray] = None) -> None:
        """New joint position (and optional velocity) reference from now on."""
        q_des = np.asarray(q_des, dtype=float)
        if q_des.shape != self._ref_to.shape or not np.all(np.isfinite(q_des)):
            raise ValueError("joint command must be finite and of the arm's size")
        q_now_ref, _ = self._reference(self.data.time)
        self._ref_from = q_now_ref
        self._ref_to = q_des.copy()
        self._ref_t0 = float(self.data.time)
        self._dq_des = None if dq_des is None else np.asarray(dq_des, dtype=float)

    def _apply(self, t: float) -> None:
        q_r, dq_r = self._reference(t)
        if self.params.actuation == "position":
            self.data.ctrl[self.aadr] = q_r
            return
        d = self.data
        tau = self.K * (q_r - d.qpos[self.qadr]) + self.D * (dq_r - d.qvel[self.vadr])
        bias = d.qfrc_bias[self.vadr]
        if not self.params.gravity_compensation:
            bias = bias - self._gravity_only()
        d.ctrl[self.aadr] = tau + bias

    def _gravity_only(self) -> np.ndarray:
        # bias at zero velocity = gravity torque; only used when compensation is off
        d = self.data
        saved = d.qvel.copy()
        d.qvel[:] = 0.0
        self._mj.mj_rne(self.model, d, 0, d.qfrc_inverse)
        d.qvel[:] = saved
        return d.qfrc_inverse[self.vadr].copy()

    # ------------------------------------------------------------------ stepping
    def advance(self, dt: float) -> int:
        """Step physics by ``round(dt / timestep)`` steps; returns the number of steps."""
        n = int(round(dt / self.model.opt.timestep))
        W = self._mj.mjtWarning
        bad = (W.mjWARN_BADQPOS, W.mjWARN_BADQVEL, W.mjWARN_BADQACC)
        before = sum(self.data.warning[w].number for w in bad)
        for _ in range(n):
            self._apply(self.data.time)
            self._mj.mj_step(self.model, self.data)
        self.steps += n
        if sum(self.data.warning[w].number for w in bad) != before:
            raise SimulationUnstable(
                f"simulation unstable at t={self.data.time:.3f} s (NaN/Inf/huge acceleration); "
                "check sim.arm impedance gains and timestep")
        return n
