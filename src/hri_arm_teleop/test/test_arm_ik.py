"""IK on the FR3 (mink QP and hri_core DLS) with seed 003's thresholds."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("hri_core.se3", reason="hri_core (cpp/, issue 4) is not built yet")

from hri_core import se3
from hri_runtime.config import arm_limits, load_robot_config, named_position
from hri_sim.models import load_fr3
from hri_arm_teleop.core.ik import IKParams, make_ik, pose_error


def solvers():
    out = ["mink"]
    try:
        import hri_core.kinematics  # noqa: F401
        out.append("dls")
    except ImportError:
        pass
    return out


@pytest.fixture(scope="module")
def cfg():
    return load_robot_config("fr3")


def build(cfg, solver):
    params = dataclasses.replace(IKParams.from_config(cfg["teleop"]["ik"]), solver=solver)
    lim = arm_limits(cfg)
    q0 = named_position(cfg, "home")
    return make_ik(params, load_fr3(), cfg["joints"]["names"], lim.q_min, lim.q_max, q0), q0, lim


def test_config_carries_the_seed_thresholds(cfg):
    p = IKParams.from_config(cfg["teleop"]["ik"])
    assert (p.pos_threshold_m, p.ori_threshold_rad, p.max_iters) == (1e-4, 1e-4, 20)
    assert p.solver in ("mink", "dls") and p.qp_solver == "daqp"


@pytest.mark.parametrize("solver", solvers())
def test_small_steps_converge_below_the_thresholds(cfg, solver):
    ik, q0, lim = build(cfg, solver)
    T0 = ik.fk(q0)
    q = q0
    rng = np.random.default_rng(1)
    for k in range(50):  # a 5 cm/s, 0.3 rad/s motion sampled at 100 Hz
        T = T0.copy()
        T[:3, 3] += np.array([0.0, -0.0005, 0.0003]) * k
        T[:3, :3] = se3.so3_exp(np.array([0.0, 0.0, 0.003 * k])) @ T0[:3, :3]
        r = ik.solve(T, q)
        assert r.converged, (k, r)
        assert r.pos_err_m <= 1e-4 and r.ori_err_rad <= 1e-4
        dp, dr = pose_error(ik.fk(r.q), T)
        assert dp <= 1e-4 and dr <= 1e-4
        q = r.q
    assert np.all(q >= lim.q_min) and np.all(q <= lim.q_max)


@pytest.mark.parametrize("solver", solvers())
def test_unreachable_target_stays_within_joint_limits(cfg, solver):
    ik, q0, lim = build(cfg, solver)
    T = ik.fk(q0)
    T[:3, 3] = [1.5, 0.0, 0.5]  # beyond the 855 mm reach
    q = q0
    for _ in range(20):
        r = ik.solve(T, q)
        q = r.q
        assert np.all(q >= lim.q_min - 1e-9) and np.all(q <= lim.q_max + 1e-9)
    assert not r.converged and r.iters == 20


class MujocoKinematics:
    """Test stand-in with the PoeModel interface, from MuJoCo's own kinematics: fk = site pose,
    jacobian_body = mj_jacSite rotated into the site frame, rows (w, v)."""

    def __init__(self, model, site, joint_names):
        import mujoco

        self.mj, self.m = mujoco, model
        self.d = mujoco.MjData(model)
        self.sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)
        jids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in joint_names]
        self.qadr = [model.jnt_qposadr[j] for j in jids]
        self.vadr = [model.jnt_dofadr[j] for j in jids]

    def _set(self, q):
        self.d.qpos[self.qadr] = q
        self.mj.mj_kinematics(self.m, self.d)
        self.mj.mj_comPos(self.m, self.d)

    def fk(self, q):
        self._set(q)
        T = np.eye(4)
        T[:3, :3] = self.d.site_xmat[self.sid].reshape(3, 3)
        T[:3, 3] = self.d.site_xpos[self.sid]
        return T

    def jacobian_body(self, q):
        T = self.fk(q)
        jp, jr = np.zeros((3, self.m.nv)), np.zeros((3, self.m.nv))
        self.mj.mj_jacSite(self.m, self.d, jp, jr, self.sid)
        R = T[:3, :3]
        return np.vstack([R.T @ jr[:, self.vadr], R.T @ jp[:, self.vadr]])


def test_dls_iteration_on_a_stand_in_kinematics(cfg):
    """The DLS loop itself (body error log(T^-1 T*), (w, v) rows, null space, clamping), before and
    independently of hri_core.kinematics."""
    from hri_arm_teleop.core.ik import DlsIK

    params = dataclasses.replace(IKParams.from_config(cfg["teleop"]["ik"]), solver="dls")
    lim = arm_limits(cfg)
    q0 = named_position(cfg, "home")
    model = load_fr3()
    kin = MujocoKinematics(model, params.ee_site, cfg["joints"]["names"])
    ik = DlsIK(model, cfg["joints"]["names"], params, lim.q_min, lim.q_max, q0, poe=kin)
    T0 = ik.fk(q0)
    q = q0
    for k in range(1, 30):
        T = T0.copy()
        T[:3, 3] += np.array([0.0, -0.0005, 0.0003]) * k
        T[:3, :3] = se3.so3_exp(np.array([0.0, 0.0, 0.003 * k])) @ T0[:3, :3]
        r = ik.solve(T, q)
        assert r.converged and r.iters <= 5, (k, r)
        q = r.q
    far = T0.copy()
    far[:3, 3] = [1.5, 0.0, 0.5]
    r = ik.solve(far, q)
    assert not r.converged and np.all(r.q >= lim.q_min) and np.all(r.q <= lim.q_max)
