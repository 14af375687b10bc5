"""MuJoCo simulation of Tino, the social robot (the Tino VR design): ``mjcf/tino.xml``.

* Leg motor: a speed-controlled DC motor, ``act' = (u - act)/τ`` (driver lag), motor torque
  ``kv (act - N q̇)`` limited to ``motor_torque_max_nm``, joint torque ``N ·`` motor torque
  (gear ratio N). The command ``u`` [rad/s] is the RPM command times the direction efficiency
  (``forward_efficiency`` < 1: extending lifts the leg, ``backward_efficiency`` > 1: returning is
  helped by gravity) – the mechanical asymmetry the controller's ×1.15 / ×0.85 compensates.
* Encoder: ``ticks = round(q · ticks_per_rev / 2π) + neutral_ticks`` (absolute, leg output shaft).
* Home switch: closed when ``ticks <= neutral_ticks + home_switch_ticks``.
* Base: planar (x, y, yaw) with the rolling-without-slip constraint imposed every step from the
  wheel speeds (differential-drive kinematics, no wheel slip modelled); differential drive, ``ω_R = (v + ω b/2)/r``, ``ω_L = (v − ω b/2)/r`` into wheel velocity
  servos, ramped at ``wheel_accel_max_rad_s2`` (a motor driver's acceleration limit).

Lockstep: :meth:`TinoSim.step` advances simulated time only; nothing reads the wall clock.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from hri_runtime.parameter_library.typed import params_type
from hri_sim.models import core_mujoco

TINO_XML = Path(__file__).resolve().parent / "mjcf" / "tino.xml"
RPM_TO_RAD_S = 2.0 * math.pi / 60.0


#: Config ``atomic.sim`` (the simulated robot) and ``atomic.leg`` (its encoder), typed from their
#: declarations (hri_atomic_motion/parameters.yaml).
SimParams = params_type("atomic.sim")
LegParams = params_type("atomic.leg")


@dataclass(frozen=True)
class TinoSimParams:
    """The simulator's part of config ``atomic``: the robot (``sim``) and the leg encoder (``leg``)."""

    sim: SimParams
    leg: LegParams

    @classmethod
    def from_config(cls, atomic: Mapping[str, Any]) -> "TinoSimParams":
        """``atomic`` = ``cfg['atomic']``."""
        return cls(SimParams.from_config(atomic["sim"]), LegParams.from_config(atomic["leg"]))

    @classmethod
    def from_tree(cls, cfg: Mapping[str, Any]) -> "TinoSimParams":
        """From a whole config tree (its ``atomic.sim`` and ``atomic.leg``)."""
        return cls(SimParams.from_tree(cfg), LegParams.from_tree(cfg))


def tino_model(params: TinoSimParams):
    """The compiled MuJoCo Tino as the simulation steps it: ``mjcf/tino.xml`` with the config's
    timestep, motor and wheel values applied (the one model of the simulator and the URDF)."""
    import mujoco

    p = params.sim
    m = mujoco.MjModel.from_xml_path(str(TINO_XML))
    m.opt.timestep = p.timestep_s
    a = m.actuator("leg_motor").id
    m.actuator_gear[a, 0] = p.leg_gear_ratio
    m.actuator_dynprm[a, 0] = p.motor_time_constant_s
    m.actuator_gainprm[a, 0] = p.motor_kv_nm_s_rad
    m.actuator_biasprm[a, 2] = -p.motor_kv_nm_s_rad
    m.actuator_forcerange[a] = (-p.motor_torque_max_nm, p.motor_torque_max_nm)
    for name in ("wheel_left", "wheel_right"):
        w = m.actuator(name).id
        m.actuator_gainprm[w, 0] = p.wheel_kv_nm_s_rad
        m.actuator_biasprm[w, 2] = -p.wheel_kv_nm_s_rad
    for g in ("wheel_left", "wheel_right"):
        m.geom_size[m.geom(g).id, 0] = p.wheel_radius_m
    m.body_pos[m.body("wheel_left").id, 1] = p.wheel_base_m / 2
    m.body_pos[m.body("wheel_right").id, 1] = -p.wheel_base_m / 2
    base_mass = float(m.body_subtreemass[m.body("base").id])
    for n in ("wheel_left", "wheel_right"):   # reflected base mass, m r^2 / 2 per wheel
        m.dof_armature[m.joint(n).dofadr[0]] = base_mass * p.wheel_radius_m ** 2 / 2
    return m


class TinoSim:
    def __init__(self, params: TinoSimParams):
        import mujoco

        self._mj = mujoco
        self._step = core_mujoco().mj_step    # holds the GIL: docs/realtime.md "Stepping from Python"
        self.p = params.sim
        self.leg = params.leg
        m = tino_model(params)
        a = m.actuator("leg_motor").id
        self.model = m
        self.data = mujoco.MjData(m)
        self._leg_q = m.joint("leg").qposadr[0]
        self._leg_v = m.joint("leg").dofadr[0]
        self._act_leg = a
        self._act_wl = m.actuator("wheel_left").id
        self._act_wr = m.actuator("wheel_right").id
        self._base_q = [m.joint(n).qposadr[0] for n in ("base_x", "base_y", "base_yaw")]
        self._base_v = [m.joint(n).dofadr[0] for n in ("base_x", "base_y", "base_yaw")]
        self._wheel_v = [m.joint(n).dofadr[0] for n in ("wheel_left", "wheel_right")]
        self._act_head = [m.actuator(n).id for n in ("head_pan", "head_tilt", "head_pitch")]
        self.audio: tuple[float, float] | None = None   # (volume, orientation rad): set_audio
        mujoco.mj_forward(m, self.data)
        self.leg_rpm_cmd = 0.0
        self.twist_cmd = (0.0, 0.0)
        self._wheel_target = np.zeros(2)     # left, right rad/s

    # ------------------------------------------------------------------ time
    @property
    def t_s(self) -> float:
        return float(self.data.time)

    def step(self, n: int = 1) -> None:
        dw = self.p.wheel_accel_max_rad_s2 * self.model.opt.timestep
        for _ in range(n):
            for a, target in ((self._act_wl, self._wheel_target[0]), (self._act_wr, self._wheel_target[1])):
                c = self.data.ctrl[a]
                self.data.ctrl[a] = c + min(max(target - c, -dw), dw)   # wheel driver speed ramp
            self._impose_rolling()
            self._step(self.model, self.data)

    def step_for(self, duration_s: float) -> None:
        self.step(int(round(duration_s / self.model.opt.timestep)))

    def advance_to(self, t_s: float) -> None:
        """Whole physics steps up to simulated time ``t_s`` (lockstep with a node's clock: ``t_s``
        = the clock minus its offset at start); nothing when ``t_s`` is not ahead."""
        n = int(round((t_s - self.t_s) / self.model.opt.timestep))
        if n > 0:
            self.step(n)

    # ------------------------------------------------------------------ leg
    @property
    def leg_angle_rad(self) -> float:
        return float(self.data.qpos[self._leg_q])

    def set_leg_angle(self, q_rad: float) -> None:
        self.data.qpos[self._leg_q] = q_rad
        self._mj.mj_forward(self.model, self.data)

    def ticks_to_rad(self, ticks: float) -> float:
        return (ticks - self.leg.neutral_ticks) * 2.0 * math.pi / self.leg.encoder_ticks_per_rev

    def leg_ticks(self) -> int:
        return int(round(self.leg_angle_rad * self.leg.encoder_ticks_per_rev / (2.0 * math.pi))) + self.leg.neutral_ticks

    def home_pressed(self) -> bool:
        return self.leg_ticks() <= self.leg.neutral_ticks + self.p.home_switch_ticks

    def leg_motor_rpm(self) -> float:
        """Measured motor speed, RPM (gear · leg speed)."""
        return float(self.data.qvel[self._leg_v]) * self.p.leg_gear_ratio / RPM_TO_RAD_S

    def set_leg_rpm(self, rpm: float) -> None:
        self.leg_rpm_cmd = float(rpm)
        eff = self.p.forward_efficiency if rpm >= 0 else self.p.backward_efficiency
        self.data.ctrl[self._act_leg] = rpm * RPM_TO_RAD_S * eff

    # ------------------------------------------------------------------ base
    def set_twist(self, linear_m_s: float, angular_rad_s: float) -> None:
        self.twist_cmd = (float(linear_m_s), float(angular_rad_s))
        r, b = self.p.wheel_radius_m, self.p.wheel_base_m
        self._wheel_target[:] = ((linear_m_s - angular_rad_s * b / 2) / r, (linear_m_s + angular_rad_s * b / 2) / r)

    def base_twist(self) -> tuple[float, float]:
        """(v m/s, ω rad/s) from the wheel speeds: v = r(ω_R+ω_L)/2, ω = r(ω_R−ω_L)/b."""
        wl, wr = (float(self.data.qvel[i]) for i in self._wheel_v)
        r, b = self.p.wheel_radius_m, self.p.wheel_base_m
        return r * (wr + wl) / 2, r * (wr - wl) / b

    def _impose_rolling(self) -> None:
        v, w = self.base_twist()
        yaw = self.data.qpos[self._base_q[2]]
        qv = self.data.qvel
        qv[self._base_v[0]], qv[self._base_v[1]], qv[self._base_v[2]] = v * math.cos(yaw), v * math.sin(yaw), w

    def base_pose(self) -> tuple[float, float, float]:
        """(x m, y m, yaw rad) of the base in the world."""
        q = self.data.qpos
        return tuple(float(q[i]) for i in self._base_q)  # type: ignore[return-value]

    def base_height(self) -> float:
        """Height of the base frame above the floor (m; the URDF's root link in ``odom``)."""
        return float(self.data.xpos[self.model.body("base").id][2])

    # ------------------------------------------------------------------ head
    def set_head(self, pan_rad: float, tilt_rad: float, pitch_rad: float) -> None:
        for a, v in zip(self._act_head, (pan_rad, tilt_rad, pitch_rad)):
            self.data.ctrl[a] = v

    def set_audio(self, volume: float, orientation_rad: float) -> None:
        """The audio command (no speaker in the model: kept in ``audio`` for what reads it)."""
        self.audio = (float(volume), float(orientation_rad))

    def joint_state(self, names) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(position, velocity, effort) of the named hinge joints: rad, rad/s and the actuator's
        joint torque N·m (MuJoCo's ``qfrc_actuator``, the gear applied)."""
        m, d = self.model, self.data
        j = [m.joint(n) for n in names]
        return (np.array([d.qpos[x.qposadr[0]] for x in j], float),
                np.array([d.qvel[x.dofadr[0]] for x in j], float),
                np.array([d.qfrc_actuator[x.dofadr[0]] for x in j], float))

    def head(self) -> np.ndarray:
        return np.array([self.data.qpos[self.model.joint(n).qposadr[0]] for n in ("head_pan", "head_tilt", "head_pitch")])
