"""Product-of-exponentials kinematics (compiled; math in cpp/include/hri_core/kinematics.hpp).

    base_T_ee(q) = exp([S_1] q_1) ... exp([S_n] q_n) M          S_i = (w_i, v_i), rows (w, v)
    J_s column i = Ad(exp([S_1]q_1)...exp([S_{i-1}]q_{i-1})) S_i,   J_b = Ad(T^-1) J_s
    IK (Chang 2026 app. B, table B.1, with adaptive damping): xi = log(T_d T^-1), E = |xi|^2 / 2,
        dq = (J_s^T J_s + mu (E + lambda^2) I)^-1 J_s^T xi (+ (I - J^+ J) k_null (q_posture - q) for
        n > 6); a step that does not lower E is rejected and mu grows (Levenberg-Marquardt); joints
        on a limit pushed outwards leave the step (active set); until |xi_w| < eps_w and |xi_v| < eps_v.

Build a model from MuJoCo (``PoeModel.from_mujoco(model, "attachment_site")``: joint axes and
anchors at qpos = 0, the site pose at qpos = 0 as M; q = the chain's qpos) or from config
(``PoeModel.from_config(cfg["kinematics"])`` with ``poe.screws`` (n x 6) and ``poe.home`` (4 x 4)).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._hri_core.kinematics import IkResult, _PoeModel
from .parameters_gen import KinematicsIkParams

__all__ = ["IkParams", "IkResult", "PoeModel"]


@dataclass(frozen=True)
class IkParams(KinematicsIkParams):
    """DLS IK parameters: the keys of ``kinematics.ik`` (defaults = Chang 2026 table B.1 in the
    declaration; fields, types and ``from_config`` generated into ``hri_core.parameters_gen``).
    step_max_rad <= 0: unlimited; lm_increase > 1 / lm_decrease in (0, 1]: the adaptive damping
    after a rejected / accepted step."""


class PoeModel(_PoeModel):
    """POE model: ``PoeModel(screws (n, 6), home (4, 4))``.

    fk(q) -> (4, 4) | (N, 4, 4); jacobian_space(q), jacobian_body(q) -> (6, n) | (N, 6, n);
    fk_jacobian_body(q) -> (T, J_b); manipulability(q); condition_number(q); ik_dls(...).
    ``joint_names`` (tuple) and ``qpos_adr`` (MuJoCo qpos addresses) are set by ``from_mujoco``.
    """

    joint_names: tuple = ()
    qpos_adr: tuple = ()

    def __init__(self, screws: Any, home: Any):
        super().__init__(np.asarray(screws, dtype=float), np.asarray(home, dtype=float))

    @classmethod
    def from_config(cls, section: dict) -> "PoeModel":
        """``section`` = ``cfg["kinematics"]``: uses ``poe.screws`` (n x 6, rows (w, v)) and ``poe.home``."""
        poe = section["poe"]
        if poe.get("screws") is None or poe.get("home") is None:
            raise ValueError("kinematics.poe.screws / kinematics.poe.home are not set for this robot; "
                             "use PoeModel.from_mujoco(model, site)")
        return cls(poe["screws"], poe["home"])

    @classmethod
    def from_mujoco(cls, model: Any, site: str, joints: list[str] | None = None) -> "PoeModel":
        """Screws and home pose from a ``mujoco.MjModel`` at qpos = 0.

        The chain is every hinge/slide joint on the path from ``site``'s body to the world (or the
        given ``joints``, in that order).  Hinge: S = (w, -w x p) with w the world axis and p the
        anchor; slide: S = (0, w).  M = the site's world pose.  q of the model = those joints' qpos.
        """
        import mujoco

        sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)
        if sid < 0:
            raise ValueError(f"site {site!r} not in the model")
        data = mujoco.MjData(model)
        data.qpos[:] = 0.0
        mujoco.mj_kinematics(model, data)
        if joints is None:
            chain = []
            body = int(model.site_bodyid[sid])
            while body > 0:
                adr, num = int(model.body_jntadr[body]), int(model.body_jntnum[body])
                chain.extend(range(adr + num - 1, adr - 1, -1))
                body = int(model.body_parentid[body])
            jids = list(reversed(chain))
        else:
            jids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in joints]
            if min(jids) < 0:
                raise ValueError(f"unknown joint in {joints}")
        screws = []
        for j in jids:
            jt = int(model.jnt_type[j])
            w = np.array(data.xaxis[j])
            if jt == mujoco.mjtJoint.mjJNT_HINGE:
                screws.append(np.r_[w, -np.cross(w, data.xanchor[j])])
            elif jt == mujoco.mjtJoint.mjJNT_SLIDE:
                screws.append(np.r_[np.zeros(3), w])
            else:
                raise ValueError("only hinge and slide joints are supported in the chain")
        M = np.eye(4)
        M[:3, :3] = data.site_xmat[sid].reshape(3, 3)
        M[:3, 3] = data.site_xpos[sid]
        out = cls(np.array(screws), M)
        out.joint_names = tuple(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in jids)
        out.qpos_adr = tuple(int(model.jnt_qposadr[j]) for j in jids)
        return out

    def ik_dls(self, target: Any, q0: Any, params: IkParams, *,
               q_posture: Any = None, q_min: Any = None, q_max: Any = None) -> IkResult:
        """Damped-least-squares IK to ``target`` (base_T_ee, (4, 4)) from ``q0``.

        ``params``: e.g. ``IkParams.from_config(cfg["kinematics"]["ik"])`` (table B.1).
        ``q_posture`` enables the null-space posture task for n > 6; ``q_min``/``q_max`` clamp
        every iterate. Returns IkResult(q, success, iterations, err_w, err_v).
        """
        p = params
        return super().ik_dls(np.asarray(target, dtype=float), np.asarray(q0, dtype=float),
                              eps_w=p.eps_w_rad, eps_v=p.eps_v_m, damping=p.damping,
                              max_iterations=p.max_iterations, nullspace_gain=p.nullspace_gain,
                              step_max=p.step_max_rad, lm_increase=p.lm_increase, lm_decrease=p.lm_decrease,
                              q_posture=q_posture, q_min=q_min, q_max=q_max)
