"""Inverse kinematics for the controller task, selectable in config ``teleop.ik.solver``.

- ``mink``: differential IK as a QP (the library seed 003 uses): a ``FrameTask`` on the EE site
  (position and orientation cost 1), a ``PostureTask`` (cost 0.01) towards the *seed*
  configuration (the previous command: a minimal-displacement regulariser; a fixed home posture
  biases the fixed point by ~cost x distance and then the 1e-4 thresholds are never met),
  ``ConfigurationLimit`` (joint limits as QP constraints), Levenberg-Marquardt damping 1e-3,
  QP solver DAQP. Iterated up to ``max_iters`` (20) until the position error <= 1e-4 m and the
  orientation error <= 1e-4 rad.
- ``dls``: damped least squares on the ``hri_core`` POE model, body-frame error
  e = log(T(q)^-1 T_target) (twist order (w, v)), step dq = J_b^T (J_b J_b^T + lambda^2 I)^-1 e
  plus a null-space pull towards the posture, clamped to the joint limits; same thresholds.

Both take the seed configuration (the previous command) and return an ``IKResult``. The result
is always inside the joint limits (mink by constraint, dls by clamping).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from hri_core import se3


@dataclass(frozen=True)
class IKParams:
    solver: str = "mink"
    ee_site: str = "attachment_site"
    pos_threshold_m: float = 1e-4
    ori_threshold_rad: float = 1e-4
    max_iters: int = 20
    qp_solver: str = "daqp"
    posture_cost: float = 0.01
    damping: float = 1e-3
    dt_s: float = 0.01

    @classmethod
    def from_config(cls, section: dict) -> "IKParams":
        return cls(**{k: section[k] for k in cls.__dataclass_fields__})


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
    """Damped least squares on ``hri_core.kinematics.PoeModel`` (see module doc)."""

    def __init__(self, model, joint_names: Sequence[str], params: IKParams, q_min: np.ndarray,
                 q_max: np.ndarray, q_posture: Optional[np.ndarray] = None, poe=None):
        """``poe``: any object with ``fk(q) -> (4,4)`` and ``jacobian_body(q) -> (6,n)`` rows
        (w, v); by default ``hri_core.kinematics.PoeModel`` extracted from the MuJoCo model."""
        self.params = params
        if poe is None:
            from hri_core.kinematics import PoeModel

            poe = PoeModel.from_mujoco(model, site=params.ee_site, joints=list(joint_names))
        self.poe = poe
        self.q_min, self.q_max = np.asarray(q_min, float), np.asarray(q_max, float)
        self.q_posture = None if q_posture is None else np.asarray(q_posture, float)

    def fk(self, q: np.ndarray) -> np.ndarray:
        return np.asarray(self.poe.fk(np.asarray(q, float)))

    def solve(self, T_target: np.ndarray, q_seed: np.ndarray) -> IKResult:
        p = self.params
        q = np.clip(np.asarray(q_seed, float), self.q_min, self.q_max)
        lam2 = p.damping ** 2 if p.damping > 0 else 0.0
        lam2 = max(lam2, 1e-6)  # keep the step finite near singularities
        it = 0
        T = self.fk(q)
        dp, dr = pose_error(T, T_target)
        while it < p.max_iters and (dp > p.pos_threshold_m or dr > p.ori_threshold_rad):
            e = np.asarray(se3.log(se3.inverse(T) @ T_target))           # body twist (w, v)
            J = np.asarray(self.poe.jacobian_body(q))                    # (6, n), rows (w, v)
            JJt = J @ J.T + lam2 * np.eye(6)
            dq = J.T @ np.linalg.solve(JJt, e)
            if self.q_posture is not None and p.posture_cost > 0:
                N = np.eye(len(q)) - J.T @ np.linalg.solve(JJt, J)
                dq += N @ (p.posture_cost * (self.q_posture - q))
            q = np.clip(q + dq, self.q_min, self.q_max)
            it += 1
            T = self.fk(q)
            dp, dr = pose_error(T, T_target)
        return IKResult(q, dp <= p.pos_threshold_m and dr <= p.ori_threshold_rad, it, dp, dr)


def make_ik(params: IKParams, model, joint_names: Sequence[str], q_min, q_max,
            q_posture: Optional[np.ndarray] = None):
    """The configured solver on its own copy of the robot model (never the simulator's data)."""
    if params.solver == "mink":
        return MinkIK(model, joint_names, params, q_posture, q_min, q_max)
    if params.solver == "dls":
        return DlsIK(model, joint_names, params, q_min, q_max, q_posture)
    raise ValueError(f"teleop.ik.solver must be mink|dls, got {params.solver!r}")
