"""hri_core.kinematics.PoeModel against MuJoCo's own FK / mj_jacSite on the FR3, and IK."""
from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest

from hri_core import se3
from hri_core.kinematics import IkParams, PoeModel
from hri_runtime.config.tree import load_robot_config


def table_b1() -> IkParams:
    """``kinematics.ik`` of the FR3 config (table B.1)."""
    return IkParams.from_config(load_robot_config("fr3")["kinematics"]["ik"])


@pytest.fixture(scope="module")
def fr3():
    from hri_sim.models import load_fr3

    model = load_fr3()
    return model, PoeModel.from_mujoco(model, "tcp")


def random_q(model, poe, rng, n):
    lo = model.jnt_range[[model.joint(j).id for j in poe.joint_names], 0]
    hi = model.jnt_range[[model.joint(j).id for j in poe.joint_names], 1]
    return lo + (hi - lo) * rng.uniform(size=(n, len(lo)))


def test_chain_is_the_seven_arm_joints(fr3):
    model, poe = fr3
    assert poe.dof == 7
    assert poe.joint_names == tuple(f"fr3_joint{i}" for i in range(1, 8))
    assert poe.screws.shape == (7, 6)
    assert np.allclose(np.linalg.norm(poe.screws[:, :3], axis=1), 1.0)


def test_fk_and_body_jacobian_match_mujoco_at_1000_configurations(fr3):
    model, poe = fr3
    data = mujoco.MjData(model)
    sid = model.site("tcp").id
    rng = np.random.default_rng(0)
    Q = random_q(model, poe, rng, 1000)
    T_batch = poe.fk(Q)
    jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    dofs = [model.jnt_dofadr[model.joint(j).id] for j in poe.joint_names]
    worst_p = worst_r = worst_j = 0.0
    for q, T in zip(Q, T_batch):
        data.qpos[:] = 0.0
        data.qpos[list(poe.qpos_adr)] = q
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        R_mj = data.site_xmat[sid].reshape(3, 3)
        worst_p = max(worst_p, np.abs(T[:3, 3] - data.site_xpos[sid]).max())
        worst_r = max(worst_r, np.linalg.norm(se3.so3_log(R_mj.T @ T[:3, :3])))
        mujoco.mj_jacSite(model, data, jacp, jacr, sid)
        Jb_mj = np.vstack([R_mj.T @ jacr[:, dofs], R_mj.T @ jacp[:, dofs]])
        Tq, Jb = poe.fk_jacobian_body(q)
        assert np.array_equal(Tq, T)
        worst_j = max(worst_j, np.abs(Jb - Jb_mj).max())
    assert worst_p < 1e-9, worst_p
    assert worst_r < 1e-9, worst_r
    assert worst_j < 1e-9, worst_j


def test_space_and_body_jacobians_relate_and_match_finite_differences(fr3):
    _, poe = fr3
    rng = np.random.default_rng(1)
    q = rng.uniform(-1, 1, size=7)
    T = poe.fk(q)
    Js, Jb = poe.jacobian_space(q), poe.jacobian_body(q)
    assert np.allclose(Jb, se3.adjoint(se3.inverse(T)) @ Js, atol=1e-14)
    h = 1e-6
    for i in range(7):
        dq = np.zeros(7)
        dq[i] = h
        fd = (se3.log(poe.fk(q + dq) @ se3.inverse(T)) - se3.log(poe.fk(q - dq) @ se3.inverse(T))) / (2 * h)
        assert np.abs(fd - Js[:, i]).max() < 1e-8
    assert poe.jacobian_space(np.stack([q, q])).shape == (2, 6, 7)


def test_manipulability_and_condition_number(fr3):
    _, poe = fr3
    q = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    J = poe.jacobian_body(q)
    assert poe.manipulability(q) == pytest.approx(np.sqrt(np.linalg.det(J @ J.T)), rel=1e-10)
    s = np.linalg.svd(J, compute_uv=False)
    assert poe.condition_number(q) == pytest.approx(s[0] / s[-1], rel=1e-8)
    # the zero configuration is singular (Chang 2026: FR3 rank 5/6)
    assert poe.manipulability(np.zeros(7)) < 1e-6
    assert poe.condition_number(np.zeros(7)) > 1e6


def test_ik_params_come_from_config_table_b1():
    p = table_b1()
    assert (p.eps_w_rad, p.eps_v_m, p.damping, p.max_iterations) == (1e-3, 1e-4, 0.01, 50)


def test_ik_dls_reaches_reachable_targets_with_nullspace_posture(fr3):
    model, poe = fr3
    rng = np.random.default_rng(2)
    lo = model.jnt_range[:7, 0]
    hi = model.jnt_range[:7, 1]
    tight = dataclasses.replace(table_b1(), eps_w_rad=1e-9, eps_v_m=1e-9, max_iterations=200)
    q_home = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    ok = 0
    for _ in range(20):
        q_goal = np.clip(q_home + rng.uniform(-0.4, 0.4, 7), lo, hi)
        target = poe.fk(q_goal)
        r = poe.ik_dls(target, q_home, tight, q_posture=q_home, q_min=lo, q_max=hi)
        if r.success:
            ok += 1
            assert r.err_w < 1e-9 and r.err_v < 1e-9
            assert np.abs(se3.minus(poe.fk(r.q), target)).max() < 1e-8
            assert np.all(r.q >= lo) and np.all(r.q <= hi)
    assert ok >= 18
    # table B.1 tolerances
    r = poe.ik_dls(poe.fk(q_home + 0.1), q_home, table_b1())
    assert r.success and r.err_w < 1e-3 and r.err_v < 1e-4 and r.iterations <= 50


def test_ik_rejects_bad_input(fr3):
    _, poe = fr3
    with pytest.raises(ValueError):
        poe.ik_dls(np.full((4, 4), np.nan), np.zeros(7), table_b1())
    with pytest.raises(ValueError):
        poe.fk(np.zeros(6))


def test_model_from_config_matches_mujoco_extraction(fr3):
    _, poe = fr3
    section = {"poe": {"screws": poe.screws.tolist(), "home": poe.home.tolist()}}
    m2 = PoeModel.from_config(section)
    q = np.linspace(-1, 1, 7)
    assert np.array_equal(m2.fk(q), poe.fk(q))
    with pytest.raises(ValueError):
        PoeModel.from_config({"poe": {"screws": None, "home": None}})


def test_fast_and_general_paths_agree(fr3):
    _, poe = fr3
    q = np.linspace(-0.5, 0.5, 7)
    T, Jb = poe.fk_jacobian_body(q)
    assert np.array_equal(poe.fk(list(q)), T)
    assert np.array_equal(poe.fk(q=q), T)
    assert np.array_equal(poe.jacobian_body(q=q), Jb)
    q32 = q.astype(np.float32)
    assert np.array_equal(poe.jacobian_body(q32), poe.jacobian_body(q32.astype(float)))
    T2, Js = poe.fk_jacobian_space(q)
    assert np.array_equal(T2, T) and np.array_equal(poe.jacobian_space(list(q)), Js)
    with pytest.raises(ValueError):
        poe.jacobian_body(np.zeros(3))
    with pytest.raises(TypeError):
        poe.fk()


# the near-singular joint of each arm (0-based) and the value it is pushed to (within 0.02 rad):
# elbow straight / wrist axes aligned (FR3: joint 4 at its -0.07 rad stop, joint 6 at 0)
NEAR_SINGULAR = {"fr3": ((3, -0.07), (5, 0.0)), "ur5e": ((2, 0.0), (4, 0.0)), "iiwa14": ((3, 0.0), (5, 0.0))}


@pytest.mark.parametrize("robot", ["fr3", "ur5e", "iiwa14"])
def test_ik_reaches_99_percent_of_random_reachable_targets_near_singular_ones_included(robot):
    """Seeded: 300 targets fk(q_goal), q_goal uniform in the config's joint limits, every third one
    near a singularity; the dissertation q0 = q_goal + N(0, 0.3 rad) (a teleop step from a nearby pose).
    Within the configured budget (kinematics.ik: 50 iterations, 1e-3 rad / 1e-4 m)."""
    from hri_core.safety import arm_limits
    from hri_sim.models import load_arm

    cfg = load_robot_config(robot)
    lim = arm_limits(cfg)
    lo, hi = np.maximum(lim.q_min, -2 * np.pi), np.minimum(lim.q_max, 2 * np.pi)
    poe = PoeModel.from_mujoco(load_arm(robot, actuation="position"), "attachment_site", cfg["joints"]["names"])
    p = IkParams.from_config(cfg["kinematics"]["ik"])
    rng = np.random.default_rng(0)
    ok, near_ok, near = 0, 0, 0
    for k in range(300):
        q = lo + (hi - lo) * rng.uniform(size=len(lo))
        if k % 3 == 0:
            j, v = NEAR_SINGULAR[robot][rng.integers(2)]
            q[j] = v + rng.uniform(-0.02, 0.02)
            q = np.clip(q, lo, hi)
        q0 = np.clip(q + rng.normal(0.0, 0.3, len(q)), lo, hi)
        target = poe.fk(q)
        r = poe.ik_dls(target, q0, p, q_min=lo, q_max=hi)
        ok += r.success
        if k % 3 == 0:
            near += 1
            near_ok += r.success
        if r.success:
            assert r.iterations <= p.max_iterations and np.all(r.q >= lo) and np.all(r.q <= hi)
            xi = se3.log(target @ se3.inverse(poe.fk(r.q)))
            assert np.linalg.norm(xi[:3]) < p.eps_w_rad and np.linalg.norm(xi[3:]) < p.eps_v_m
    assert ok >= 297 and near_ok >= 0.97 * near
