"""Inverse kinematics for the controller task, selectable in config ``teleop.ik.solver``.

- ``mink``: differential IK as a QP (the library the FR3 keyboard teleop design uses): a ``FrameTask`` on the EE site
  (position and orientation cost 1), a ``PostureTask`` (cost 0.01) towards the *seed*
  configuration (the previous command: a minimal-displacement regulariser; a fixed home posture
  biases the fixed point by ~cost x distance and then the 1e-4 thresholds are never met),
  ``ConfigurationLimit`` (joint limits as QP constraints), Levenberg-Marquardt damping 1e-3,
  QP solver DAQP. Iterated up to ``max_iters`` (20) until the position error <= 1e-4 m and the
  orientation error <= 1e-4 rad.
- ``dls``: ``hri_core``'s damped least squares on its POE model (``PoeModel.from_mujoco``,
  ``PoeModel.ik_dls``; see ``DlsIK``), clamped to the joint limits; same thresholds.

Both take the seed configuration (the previous command) and return an ``IKResult``. The result
is always inside the joint limits (mink by constraint, dls by clamping).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from hri_core import se3
from hri_arm_teleop.parameters_gen import TeleopIkParams


#: Config ``teleop.ik``, typed from its declaration (hri_arm_teleop/parameters.yaml).
IKParams = TeleopIkParams


@dataclass
class IKResult:
    q: np.ndarray
    converged: bool
    iters: int
    pos_err_m: float
    ori_err_rad: float


def pose_error(T: np.ndarray, T_target: np.ndarray) -> tuple[float, float]:
    """(position error [m], rotation angle error [rad]) between two 4x4 poses."""
    dp = float(np.linalg.norm(T_target[:3, 3] - T[:3, 3]))
    dr = float(np.linalg.norm(se3.so3_log(T[:3, :3].T @ T_target[:3, :3])))
    return dp, dr


class MinkIK:
    def __init__(self, model, joint_names: Sequence[str], params: IKParams,
                 q_posture: Optional[np.ndarray] = None, q_min=None, q_max=None):
        import mink
        import mujoco

        self._mink = mink
        self.params = params
        self.model = model
        jids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in joint_names]
        if q_min is not None and q_max is not None:
            # the config's limits are the authority: narrow the IK model's ranges to them
            for j, lo, hi in zip(jids, q_min, q_max):
                model.jnt_range[j] = [max(model.jnt_range[j][0], lo), min(model.jnt_range[j][1], hi)]
        self.config = mink.Configuration(model)
        self.qadr = np.array([model.jnt_qposadr[j] for j in jids])
        self.task = mink.FrameTask(frame_name=params.ee_site, frame_type="site",
                                   position_cost=1.0, orientation_cost=1.0)
        self.posture = mink.PostureTask(model, cost=params.posture_cost)
        q_full = self.config.q.copy()
        if q_posture is not None:
            q_full[self.qadr] = q_posture
        self.posture.set_target(q_full)
        self.limits = [mink.ConfigurationLimit(model)]
        self._q_full = q_full

    def fk(self, q: np.ndarray) -> np.ndarray:
        qf = self._q_full.copy()
        qf[self.qadr] = q
        self.config.update(qf)
        return self.config.get_transform_frame_to_world(self.params.ee_site, "site").as_matrix()

    def solve(self, T_target: np.ndarray, q_seed: np.ndarray) -> IKResult:
        mink, p = self._mink, self.params
        qf = self._q_full.copy()
        qf[self.qadr] = q_seed
        self.config.update(qf)
        self.posture.set_target(qf)
        self.task.set_target(mink.SE3.from_matrix(np.asarray(T_target, dtype=float)))
        tasks = [self.task, self.posture]
        it = 0
        dp, dr = pose_error(self.config.get_transform_frame_to_world(p.ee_site, "site").as_matrix(), T_target)
        while it < p.max_iters and (dp > p.pos_threshold_m or dr > p.ori_threshold_rad):
            vel = mink.solve_ik(self.config, tasks, p.dt_s, p.qp_solver, damping=p.damping,
                                limits=self.limits)
            self.config.integrate_inplace(vel, p.dt_s)
            it += 1
            dp, dr = pose_error(self.config.get_transform_frame_to_world(p.ee_site, "site").as_matrix(),
                                T_target)
        q = self.config.q[self.qadr].copy()
        return IKResult(q, dp <= p.pos_threshold_m and dr <= p.ori_threshold_rad, it, dp, dr)


class DlsIK:
    """``hri_core.kinematics.PoeModel.ik_dls`` (C++) on the POE model extracted from the MuJoCo
    model: space-frame error xi = log(T_d T^-1), damped least squares with adaptive
    (Levenberg-Marquardt) damping plus a null-space pull towards the posture, every iterate clamped
    to the joint limits. Thresholds and
    iterations from ``teleop.ik`` (the FR3 keyboard teleop design: 1e-4 m, 1e-4 rad, 20); damping, null-space gain and
    step limit from the core's ``kinematics.ik`` section."""

    def __init__(self, model, joint_names: Sequence[str], params: IKParams, q_min: np.ndarray,
                 q_max: np.ndarray, q_posture: Optional[np.ndarray] = None, poe=None,
                 kinematics_ik: Optional[dict] = None):
        from hri_core.kinematics import IkParams, PoeModel

        if kinematics_ik is None:
            raise ValueError("teleop.ik.solver dls needs the config's kinematics.ik section (kinematics_ik)")
        self.params = params
        self.poe = poe if poe is not None else PoeModel.from_mujoco(model, params.ee_site, list(joint_names))
        base = IkParams.from_config(kinematics_ik)
        self.core_params = dataclasses.replace(base, eps_w_rad=params.ori_threshold_rad,
                                               eps_v_m=params.pos_threshold_m, max_iterations=params.max_iters)
        self.q_min, self.q_max = np.asarray(q_min, float), np.asarray(q_max, float)
        self.q_posture = None if q_posture is None else np.asarray(q_posture, float)

    def fk(self, q: np.ndarray) -> np.ndarray:
        return np.asarray(self.poe.fk(np.asarray(q, float)))

    def solve(self, T_target: np.ndarray, q_seed: np.ndarray) -> IKResult:
        q0 = np.clip(np.asarray(q_seed, float), self.q_min, self.q_max)
        r = self.poe.ik_dls(np.asarray(T_target, float), q0, self.core_params, q_posture=self.q_posture,
                            q_min=self.q_min, q_max=self.q_max)
        q = np.asarray(r.q, float)
        dp, dr = pose_error(self.fk(q), T_target)
        return IKResult(q, dp <= self.params.pos_threshold_m and dr <= self.params.ori_threshold_rad,
                        int(r.iterations), dp, dr)


def make_ik(params: IKParams, model, joint_names: Sequence[str], q_min, q_max,
            q_posture: Optional[np.ndarray] = None, kinematics_ik: Optional[dict] = None):
    """The configured solver (``teleop.ik.solver``: mink | dls) on its own copy of the robot model
    (never the simulator's data)."""
    if params.solver == "mink":
        return MinkIK(model, joint_names, params, q_posture, q_min, q_max)
    return DlsIK(model, joint_names, params, q_min, q_max, q_posture, kinematics_ik=kinematics_ik)
