"""Lockstep MuJoCo harness: an arm with torque motors, one controller tick per physics step,
driven by the one lockstep runner (``hri_runtime.lockstep.Lockstep``: :class:`LockstepLoop`).

- model: ``hri_sim.models.load_arm(robot, actuation="torque")`` (any arm of config/robots; a
  flange F/T sensor pair where its ``sim.model.ft_sensor`` says so) with the physics step = 1 / ``interaction.rate_hz`` (1 ms);
- state for the controller (frames as in :mod:`hri_interaction.core.controller`):
  world_T_ee of the site, J_b = [Rᵀ J_ω; Rᵀ J_v] (from ``mj_jacSite``, world-aligned at the site),
  V_b = J_b q̇, g(q) = ``mj_rne`` at q̇ = 0, c = ``qfrc_bias`` − g, M(q) from ``mj_fullM``;
- external "human" wrench: ``push(force_world, torque_world)`` sets ``xfrc_applied`` on the
  body of the site so that the force acts *at the site point* (moment r × f added);
- the wrench the controller sees is that applied wrench in the EE frame (an ideal, tared wrist
  F/T sensor); ``ft_sensor()`` returns the raw MuJoCo force/torque sensor for comparison.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from hri_interaction.core.controller import ArmState, InteractionController, InteractionParams


class ArmTorqueSim:
    """Any configured arm (``hri_sim.models.load_arm``: a file of config/robots) with torque motors,
    physics step = 1 / ``rate_hz``; the robot's read/write interface for the 1 kHz loop:
    ``state()`` reads, ``step(tau)`` writes one torque command and advances one step."""

    def __init__(self, robot: str, rate_hz: float, q0_rad: Sequence[float],
                 ee_site: str = "attachment_site", joint_names: Optional[Sequence[str]] = None):
        import mujoco
        from hri_sim.models import load_arm, model_config

        self.mj = mujoco
        self.robot = robot
        self.model = load_arm(robot, actuation="torque", timestep_s=1.0 / rate_hz)
        self.data = mujoco.MjData(self.model)
        names = tuple(joint_names or model_config(robot)[1])
        jids = [mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in names]
        if min(jids) < 0:
            raise ValueError(f"joints not in the {robot} model: "
                             f"{[n for n, j in zip(names, jids) if j < 0]}")
        self.qadr = np.array([self.model.jnt_qposadr[j] for j in jids])
        self.vadr = np.array([self.model.jnt_dofadr[j] for j in jids])
        aids = [mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_ACTUATOR, n) for n in names]
        if min(aids) < 0:   # actuators named after their joints (FR3); else by transmission
            aids = [int(np.flatnonzero(self.model.actuator_trnid[:, 0] == j)[0]) for j in jids]
        self.aadr = np.array(aids)
        self.site = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, ee_site)
        if self.site < 0:
            raise ValueError(f"site {ee_site!r} not in the {robot} model")
        self.body = int(self.model.site_bodyid[self.site])
        self.n = len(names)
        self.data.qpos[self.qadr] = np.asarray(q0_rad, float)
        mujoco.mj_forward(self.model, self.data)
        self._jacp = np.zeros((3, self.model.nv))
        self._jacr = np.zeros((3, self.model.nv))
        self._g = np.zeros(self.model.nv)
        self._M = np.zeros((self.model.nv, self.model.nv))
        self.applied_force_world = np.zeros(3)
        self.applied_torque_world = np.zeros(3)

    @property
    def time_s(self) -> float:
        return float(self.data.time)

    def ee_pose(self) -> np.ndarray:
        T = np.eye(4)
        T[:3, :3] = self.data.site_xmat[self.site].reshape(3, 3)
        T[:3, 3] = self.data.site_xpos[self.site]
        return T

    def state(self) -> ArmState:
        mj, m, d = self.mj, self.model, self.data
        T = self.ee_pose()
        R = T[:3, :3]
        mj.mj_jacSite(m, d, self._jacp, self._jacr, self.site)
        Jb = np.vstack([R.T @ self._jacr[:, self.vadr], R.T @ self._jacp[:, self.vadr]])
        dq = d.qvel[self.vadr].copy()
        saved = d.qvel.copy()
        d.qvel[:] = 0.0
        mj.mj_rne(m, d, 0, self._g)
        d.qvel[:] = saved
        g = self._g[self.vadr].copy()
        mj.mj_fullM(m, d, self._M)
        return ArmState(q=d.qpos[self.qadr].copy(), dq=dq, world_T_ee=T, body_twist=Jb @ dq,
                        body_jacobian=Jb, gravity=g, coriolis=d.qfrc_bias[self.vadr] - g,
                        mass_matrix=self._M[np.ix_(self.vadr, self.vadr)])

    def push(self, force_world=(0, 0, 0), torque_world=(0, 0, 0)) -> None:
        """External wrench on the EE acting at the site point (world frame)."""
        self.applied_force_world = np.asarray(force_world, float)
        self.applied_torque_world = np.asarray(torque_world, float)

    def wrench_body(self) -> np.ndarray:
        """The applied wrench in the EE frame, (moment, force) — the ideal tared F/T reading."""
        R = self.data.site_xmat[self.site].reshape(3, 3)
        return np.r_[R.T @ self.applied_torque_world, R.T @ self.applied_force_world]

    def set_joint_state(self, q, dq) -> None:
        """Put the arm at the measured (q, q̇) (the topic driver: the model at the robot's state,
        never stepped)."""
        self.data.qpos[self.qadr] = np.asarray(q, float)
        self.data.qvel[self.vadr] = np.asarray(dq, float)
        self.mj.mj_forward(self.model, self.data)

    def ft_sensor(self) -> np.ndarray:
        return self.data.sensordata[:6].copy()

    def step(self, tau: np.ndarray) -> None:
        d = self.data
        r = d.site_xpos[self.site] - d.xipos[self.body]
        d.xfrc_applied[self.body, :3] = self.applied_force_world
        d.xfrc_applied[self.body, 3:] = self.applied_torque_world + np.cross(r, self.applied_force_world)
        d.ctrl[self.aadr] = tau
        self.mj.mj_step(self.model, d)


class Fr3Sim(ArmTorqueSim):
    """The FR3 (with the flange F/T sensor pair)."""

    def __init__(self, rate_hz: float, q0_rad: Sequence[float], ee_site: str = "attachment_site",
                 joint_names: Optional[Sequence[str]] = None):
        super().__init__("fr3", rate_hz, q0_rad, ee_site, joint_names)


class LockstepLoop:
    """One controller tick per physics step on the one lockstep runner (``hri_runtime.lockstep``:
    ``self.lockstep``, its ``SimClock`` ``self.clock``): the tick is its every-step task, the arm
    step is part of it (the command of the tick is what the arm applies). ``wrench_source``:
    ``"applied"`` feeds the sim's applied wrench to the controller each tick (an ideal tared F/T
    sensor); anything else leaves ``ctrl.set_wrench`` to the caller. ``step_arm`` False: the arm
    is only the robot model at the state the caller sets (``sim.set_joint_state``). ``ctrl``: the controller
    (default the engine, ``InteractionController``, with ``law`` (None: ``interaction.law``), ``safety`` and the per-joint
    clamp ``torque_max_nm``)."""

    def __init__(self, params: InteractionParams, q0_rad, ee_site="attachment_site", law=None,
                 wrench_source: str = "applied", safety=None, *, robot: str = "fr3",
                 joint_names: Optional[Sequence[str]] = None, ctrl=None, logger=None,
                 step_arm: bool = True, torque_max_nm=None):
        from hri_runtime.lockstep import Lockstep

        self.sim = ArmTorqueSim(robot, params.rate_hz, q0_rad, ee_site, joint_names)
        self.dt = 1.0 / params.rate_hz
        self.ctrl = ctrl if ctrl is not None else InteractionController(
            params, self.sim.ee_pose(), self.sim.n, law=law, logger=logger, safety=safety,
            torque_max_nm=torque_max_nm)
        self.wrench_source = wrench_source
        self.step_arm = step_arm          # False: the arm is a model at a measured state (topic driver)
        self.last = None
        self._each = None
        self.lockstep = Lockstep(self.dt)
        self.clock = self.lockstep.clock
        self.lockstep.every(self._task)

    def tick(self):
        """Read the arm, one controller tick, the arm applies its torque for one step."""
        st = self.sim.state()
        if self.wrench_source == "applied":
            self.ctrl.set_wrench(self.sim.wrench_body())
        res = self.ctrl.tick(st, self.dt)
        if self.step_arm:
            self.sim.step(res.tau)
        self.last = res
        return res

    def _task(self, _t: float) -> None:
        res = self.tick()
        if self._each is not None:
            self._each(self, res)

    def run(self, seconds: float, each=None) -> int:
        """``round(seconds / dt)`` lockstep steps; ``each(loop, result)`` after every tick."""
        self._each = each
        try:
            return self.lockstep.run_for(seconds)
        finally:
            self._each = None
