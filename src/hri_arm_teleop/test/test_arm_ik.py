"""IK on the FR3 (mink QP and hri_core DLS) with the FR3 keyboard teleop design's thresholds."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hri_core import se3
from hri_runtime.config.tree import load_robot_config, named_position
from hri_core.safety import arm_limits
from hri_sim.models import load_fr3
from hri_arm_teleop.core.ik import IKParams, make_ik, pose_error


def solvers():
    return ["mink", "dls"]


@pytest.fixture(scope="module")
def cfg():
    return load_robot_config("fr3")


def build(cfg, solver):
    params = dataclasses.replace(IKParams.from_config(cfg["teleop"]["ik"]), solver=solver)
    lim = arm_limits(cfg)
    q0 = named_position(cfg, "home")
    return make_ik(params, load_fr3(), cfg["joints"]["names"], lim.q_min, lim.q_max, q0,
                   kinematics_ik=cfg["kinematics"]["ik"]), q0, lim


def test_config_carries_the_design_thresholds(cfg):
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


def test_hri_core_poe_model_agrees_with_mujoco_kinematics(cfg):
    """The DLS solver runs on hri_core's POE model extracted from the MJCF: its FK and body
    Jacobian (rows (w, v)) equal MuJoCo's site pose and mj_jacSite at random configurations."""
    import mujoco
    from hri_core.kinematics import PoeModel

    model = load_fr3()
    names = cfg["joints"]["names"]
    site = cfg["teleop"]["ik"]["ee_site"]
    poe = PoeModel.from_mujoco(model, site, names)
    assert tuple(poe.joint_names) == tuple(names)
    data = mujoco.MjData(model)
    sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)
    vadr = [model.jnt_dofadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n)] for n in names]
    lim = arm_limits(cfg)
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = rng.uniform(lim.q_min, lim.q_max)
        data.qpos[list(poe.qpos_adr)] = q
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        R, p = data.site_xmat[sid].reshape(3, 3), data.site_xpos[sid]
        T = np.asarray(poe.fk(q))
        np.testing.assert_allclose(T[:3, :3], R, atol=1e-9)
        np.testing.assert_allclose(T[:3, 3], p, atol=1e-9)
        jp, jr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
        mujoco.mj_jacSite(model, data, jp, jr, sid)
        Jb = np.vstack([R.T @ jr[:, vadr], R.T @ jp[:, vadr]])
        np.testing.assert_allclose(np.asarray(poe.jacobian_body(q)), Jb, atol=1e-9)


def test_dls_uses_the_design_thresholds_and_the_core_gains(cfg):
    from hri_arm_teleop.core.ik import DlsIK

    ik, _, _ = build(cfg, "dls")
    assert isinstance(ik, DlsIK)
    p, k = ik.core_params, cfg["kinematics"]["ik"]
    assert (p.eps_v_m, p.eps_w_rad, p.max_iterations) == (1e-4, 1e-4, 20)
    assert (p.damping, p.nullspace_gain, p.step_max_rad) == (k["damping"], k["nullspace_gain"], k["step_max_rad"])
