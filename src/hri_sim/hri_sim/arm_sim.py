"""The one simulated arm: a MuJoCo model stepped in lockstep with simulated time, in one of three
modes (docs/realtime.md "The simulated arm").

- ``mode="torque"`` (the 1 kHz interaction loop): the C++ ``hri_core.rt.MujocoRobot`` behind
  ``RobotInterface`` reads and writes the arm (``self.robot``; the same object ``hri_core.rt.RtLoop``
  steps on its thread). :meth:`state` = ``read()``: q, q̇, world_T_ee of the site,
  J_b = [Rᵀ J_ω; Rᵀ J_v], V_b = J_b q̇, g(q) (``mj_rne`` at q̇ = 0), c = ``qfrc_bias`` − g,
  M(q) (the joints' rows and columns of ``mj_fullM``: the law lie_osd);
  :meth:`step` = ``write(tau)``: one physics step with the torques and the scripted push
  (:meth:`push`, a world wrench acting at the site point); :meth:`wrench_body` is that push in the
  EE frame (an ideal, tared wrist F/T sensor), :meth:`ft_sensor` MuJoCo's own flange sensor pair.
  :meth:`set_joint_state` puts the model at a measured (q, q̇) without stepping (the topic driver).
- ``mode="position"`` (the teleop arm): a joint reference (:meth:`command`) followed by the robot's
  internal joint controller at every physics step (:meth:`advance`), ``params.actuation``:
  ``position`` = the MJCF's position servos get the interpolated reference q_r(t) (gravity
  cancelled by ``gravcomp``); ``impedance`` = torque motors with

      tau = K (q_r - q) + D (dq_r - dq) + c(q, dq) + g(q)        (clipped to the torque limits)

  (c + g = ``qfrc_bias``; the gravity part only with ``gravity_compensation``). A command arriving
  at t_k is reached by linear interpolation over ``interpolation_s``:
  q_r(t) = q_r(t_k) + clip((t - t_k)/T, 0, 1) (q_des - q_r(t_k)), dq_r = that slope (or dq_des).
- ``mode="pid"`` (the PID tuning plants): efforts (N·m, or what the actuator takes) per joint,
  clipped to ``effort_max``, held for ``control_period_s`` (whole physics steps, zero-order hold),
  the measured angles :attr:`q_rad` ``measurement_delay_s`` late (whole control periods; the
  thesis's remote PIDs see the pose with latency), NaN once MuJoCo diverged (``diverged``).
  :meth:`joint` is one joint as a ``JointPlant`` with the others held by their own PIDs.

Torque mode steps through the C++ core (``mj_step2`` then ``mj_step1``: every read sees the state
it reads); position and pid modes run their per-step joint law in Python around the core's
``mj_step``, which holds the GIL (docs/realtime.md "Stepping from Python") (their
models — the humanoid arm, Tino's leg, servo actuators — and laws are not the loop's; see the
page). Models come from ``hri_sim.models`` (:meth:`of_robot`) or the PID plant builders.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from hri_sim.models import core_mujoco
from hri_sim.parameters_gen import SimArmParams

MODES = ("torque", "position", "pid")

#: Config ``sim.arm``, typed from its declaration (hri_sim/parameters.yaml).
ArmSimParams = SimArmParams


class SimulationUnstable(RuntimeError):
    """MuJoCo hit NaN/Inf/huge accelerations (and reset its state): the gains or the model are wrong."""


class ArmSim:
    """One simulated arm (see the module doc). ``model``: a compiled ``mujoco.MjModel`` with one
    actuator per joint (named like the joint, else ``actuator_names``, else found by its joint
    transmission); ``q0_rad``: the start (pid: base) pose of ``joint_names``."""

    def __init__(self, model, joint_names: Sequence[str], q0_rad: Sequence[float], mode: str = "torque", *,
                 ee_site: Optional[str] = "attachment_site", actuator_names: Optional[Sequence[str]] = None,
                 params: Optional[ArmSimParams] = None, interpolation_s: float = 0.0,
                 effort_max: Optional[Sequence[float]] = None, control_period_s: Optional[float] = None,
                 measurement_delay_s: float = 0.0):
        import mujoco

        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self._mj = mujoco
        self._rt = core_mujoco()          # mj_step (holding the GIL), MujocoRobot
        self.mode = mode
        self.model = model
        self.data = mujoco.MjData(model)
        self.joint_names = tuple(joint_names)
        self.n = len(self.joint_names)
        jids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in self.joint_names]
        if not jids or min(jids) < 0:
            raise ValueError(f"joints not in the model: {[n for n, j in zip(self.joint_names, jids) if j < 0]}")
        self.qadr = np.array([model.jnt_qposadr[j] for j in jids])
        self.vadr = np.array([model.jnt_dofadr[j] for j in jids])
        self.q_min = np.array([model.jnt_range[j][0] for j in jids])
        self.q_max = np.array([model.jnt_range[j][1] for j in jids])
        acts = list(actuator_names) if actuator_names is not None else list(self.joint_names)
        aids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, a) for a in acts]
        if len(aids) != self.n:
            raise ValueError("one actuator per joint")
        if min(aids) < 0 and actuator_names is None:   # not named after their joints: by transmission
            aids = [int(next(iter(np.flatnonzero(model.actuator_trnid[:, 0] == j)), -1)) for j in jids]
        if min(aids) < 0:
            raise ValueError("every joint needs an actuator (named like the joint, by actuator_names, "
                             "or with the joint as its transmission)")
        self.aadr = np.array(aids)
        self.site_id = -1
        if ee_site is not None:
            self.site_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, ee_site)
            if self.site_id < 0:
                raise ValueError(f"site {ee_site!r} not in the model")
        q0 = np.asarray(q0_rad, dtype=float)
        self.base_pose_rad = q0.copy()
        self.data.qpos[self.qadr] = q0
        mujoco.mj_forward(model, self.data)
        self.robot = None
        getattr(self, f"_init_{mode}")(params=params, interpolation_s=interpolation_s, effort_max=effort_max,
                                       control_period_s=control_period_s, measurement_delay_s=measurement_delay_s)

    @classmethod
    def of_robot(cls, robot: str, q0_rad: Sequence[float], mode: str = "torque", *,
                 joint_names: Optional[Sequence[str]] = None, timestep_s: Optional[float] = None,
                 params: Optional[ArmSimParams] = None, add_ft_sensor: Optional[bool] = None,
                 **kw) -> "ArmSim":
        """The configured arm ``robot`` (``hri_sim.models.load_arm``; its ``joints.names`` unless
        ``joint_names``): torque motors for ``torque`` (physics step ``timestep_s``); for
        ``position`` the actuators and the step ``params`` (``sim.arm``) ask for."""
        from hri_sim.models import load_arm, model_config

        names = tuple(joint_names or model_config(robot)[1])
        if mode == "position":
            if params is None:
                raise ValueError("mode position needs params (sim.arm)")
            impedance = params.actuation == "impedance"
            model = load_arm(robot, actuation="torque" if impedance else "position", add_ft_sensor=add_ft_sensor,
                             gravity_compensation=params.gravity_compensation and not impedance,
                             timestep_s=params.timestep_s if timestep_s is None else timestep_s)
        else:
            model = load_arm(robot, actuation="torque", add_ft_sensor=add_ft_sensor, timestep_s=timestep_s)
        return cls(model, names, q0_rad, mode, params=params, **kw)

    # ------------------------------------------------------------------ common state
    @property
    def t_s(self) -> float:
        return float(self.data.time)

    @property
    def q(self) -> np.ndarray:
        return self.data.qpos[self.qadr].copy()

    @property
    def dq(self) -> np.ndarray:
        return self.data.qvel[self.vadr].copy()

    @property
    def tau(self) -> np.ndarray:
        """The actuators' forces of the last step."""
        return self.data.actuator_force[self.aadr].copy()

    @property
    def timestep_s(self) -> float:
        return float(self.model.opt.timestep)

    def ee_pose(self) -> np.ndarray:
        """``world_T_ee`` (4x4) of the site (the model's world is the robot base)."""
        T = np.eye(4)
        T[:3, :3] = self.data.site_xmat[self.site_id].reshape(3, 3)
        T[:3, 3] = self.data.site_xpos[self.site_id]
        return T

    def _instabilities(self) -> int:
        """MuJoCo's count of NaN/Inf/huge positions, velocities, accelerations (each of which it
        answers by resetting the state)."""
        W = self._mj.mjtWarning
        return sum(self.data.warning[w].number for w in (W.mjWARN_BADQPOS, W.mjWARN_BADQVEL, W.mjWARN_BADQACC))

    def _require(self, *modes: str) -> None:
        if self.mode not in modes:
            raise RuntimeError(f"ArmSim in mode {self.mode}: this needs mode {' or '.join(modes)}")

    # ------------------------------------------------------------------ torque (C++ robot)
    def _init_torque(self, **_) -> None:
        if self.site_id < 0:
            raise ValueError("mode torque needs ee_site")
        self.robot = self._rt.MujocoRobot(self.model, self.data, list(self.joint_names),
                                    self.model.site(self.site_id).name)

    def state(self):
        """One ``read()`` of the C++ robot: an ``hri_core.rt.RobotState`` (the attributes of a
        controller's ``ArmState``, frames as ``hri_interaction.core.controller``, + ``wrench_body``,
        ``time_s``)."""
        self._require("torque")
        return self.robot.read()

    def step(self, u) -> None:
        """torque: ``write(tau)``, one physics step. pid: efforts clipped to ±effort_max, held for
        ``control_period_s``; the measured angles shift by one control period."""
        if self.mode == "torque":
            self.robot.write(np.asarray(u, dtype=float))
            return
        self._require("pid")
        self._step_pid(u)

    def push(self, force_world=(0.0, 0.0, 0.0), torque_world=(0.0, 0.0, 0.0)) -> bool:
        """External wrench on the EE, acting at the site point (world frame), from the next step
        on; a non-finite one is refused (False) and the last one kept."""
        self._require("torque")
        return self.robot.set_external_wrench(np.asarray(force_world, dtype=float),
                                              np.asarray(torque_world, dtype=float))

    def wrench_body(self) -> np.ndarray:
        """The applied wrench in the EE frame, (moment, force): the ideal tared F/T reading."""
        return self.state().wrench_body

    def set_joint_state(self, q, dq) -> None:
        """Put the arm at the measured (q, q̇) (the topic driver: the model at the robot's state,
        never stepped)."""
        self._require("torque")
        self.robot.set_state(np.asarray(q, dtype=float), np.asarray(dq, dtype=float))

    def ft_sensor(self) -> np.ndarray:
        """MuJoCo's flange force/torque sensor pair (``add_ft_sensor``)."""
        return self.data.sensordata[:6].copy()

    # ------------------------------------------------------------------ position
    def _init_position(self, params: Optional[ArmSimParams], interpolation_s: float, **_) -> None:
        if params is None:
            raise ValueError("mode position needs params (sim.arm)")
        self.params = params
        if params.actuation == "impedance":
            if params.impedance_stiffness_nm_rad is None or params.impedance_damping_nms_rad is None:
                raise ValueError("sim.arm.impedance_stiffness_nm_rad / impedance_damping_nms_rad "
                                 "are required for actuation impedance")
            self.K = np.asarray(params.impedance_stiffness_nm_rad, dtype=float)
            self.D = np.asarray(params.impedance_damping_nms_rad, dtype=float)
            if self.K.shape != (self.n,) or self.D.shape != (self.n,):
                raise ValueError(f"impedance gains need {self.n} values")
        self.interpolation_s = float(interpolation_s)
        self._ref_from = self.base_pose_rad.copy()
        self._ref_to = self.base_pose_rad.copy()
        self._ref_t0 = 0.0
        self._dq_des: Optional[np.ndarray] = None
        self.steps = 0
        self._apply(self.data.time)

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

    def command(self, q_des, dq_des=None) -> None:
        """New joint position (and optional velocity) reference from now on."""
        self._require("position")
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

    def advance(self, dt: float) -> int:
        """Step physics by ``round(dt / timestep)`` steps, the joint controller before each;
        returns the number of steps. SimulationUnstable when MuJoCo diverged."""
        self._require("position")
        n = int(round(dt / self.model.opt.timestep))
        before = self._instabilities()
        for _ in range(n):
            self._apply(self.data.time)
            self._rt.mj_step(self.model, self.data)
        self.steps += n
        if self._instabilities() != before:
            raise SimulationUnstable(
                f"simulation unstable at t={self.data.time:.3f} s (NaN/Inf/huge acceleration); "
                "check sim.arm impedance gains and timestep")
        return n

    # ------------------------------------------------------------------ pid
    def _init_pid(self, effort_max, control_period_s, measurement_delay_s: float, **_) -> None:
        if effort_max is None or control_period_s is None:
            raise ValueError("mode pid needs effort_max and control_period_s")
        self.effort_max = np.asarray(effort_max, dtype=float)
        if self.effort_max.shape != (self.n,):
            raise ValueError(f"effort_max needs {self.n} values")
        self.substeps = max(1, int(round(control_period_s / self.model.opt.timestep)))
        self.dt_s = self.substeps * self.model.opt.timestep
        self.delay_steps = int(round(measurement_delay_s / self.dt_s))
        self._buf: deque = deque(maxlen=self.delay_steps + 1)
        self.reset(self.base_pose_rad)

    @property
    def q_rad(self) -> np.ndarray:
        """Measured joint angles (pid: ``measurement_delay_s`` late; NaN once diverged)."""
        if self.mode != "pid":
            return self.q
        if self.diverged:
            return np.full(self.n, np.nan)
        return self._buf[0]

    def reset(self, q_rad: Sequence[float]) -> None:
        """pid: the model at rest at ``q_rad`` (time 0, the delay line filled with it)."""
        self._require("pid")
        mj = self._mj
        mj.mj_resetData(self.model, self.data)
        self.diverged = False
        self.data.qpos[self.qadr] = np.asarray(q_rad, dtype=float)
        mj.mj_forward(self.model, self.data)
        q = self.q
        self._buf.clear()
        for _ in range(self.delay_steps + 1):
            self._buf.append(q.copy())

    def _step_pid(self, efforts) -> None:
        self.data.ctrl[self.aadr] = np.clip(np.asarray(efforts, dtype=float), -self.effort_max, self.effort_max)
        if self.diverged:
            return
        before, t_before = self._instabilities(), self.data.time
        self._rt.mj_step(self.model, self.data, self.substeps)
        # MuJoCo resets the state (time back to 0) when the simulation becomes unstable
        if self._instabilities() != before or self.data.time < t_before:
            self.diverged = True
        self._buf.append(self.q)

    def joint(self, name: str, hold_gains: Mapping[str, Any], pid_params):
        """pid: joint ``name`` as a ``JointPlant`` (``hri_sim.pid_plants.JointView``), the others
        held at the base pose by PIDs with ``hold_gains``."""
        from hri_sim.pid_plants import JointView

        self._require("pid")
        return JointView(self, self.joint_names.index(name), hold_gains, pid_params)
