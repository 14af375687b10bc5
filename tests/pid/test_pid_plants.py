"""MuJoCo plants of the PID tuning: the humanoid arm in S1–S4, the FR3, the social robot's leg."""
import dataclasses
import math

import mujoco
import numpy as np
import pytest

from hri_core.pid import PIDGains, PIDParams
from hri_pid_tuning.core.relay import RelayParams, relay_tune
from hri_pid_tuning.session import TuningSession
from hri_sim.pid_plants_mujoco import load_pid_config
from hri_sim.pid_plants_mujoco import HUMANOID_ARM_JOINTS, ArmSetup, build_humanoid_arm, humanoid_arm_model


@pytest.fixture(scope="module")
def pt():
    return load_pid_config("humanoid_arm")["pid_tuning"]


@pytest.mark.parametrize("name", ["s1", "s2", "s3", "s4"])
def test_setups_build_with_config_values(pt, name):
    st = ArmSetup.from_config(name, pt["setups"][name])
    m = humanoid_arm_model(st)
    assert m.nu == 5 and m.njnt == 5
    assert m.opt.gravity[2] == pytest.approx(-st.gravity_m_s2)
    hand = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "hand")
    assert m.body_mass[hand] == pytest.approx(st.masses_kg.hand)
    for i, j in enumerate(HUMANOID_ARM_JOINTS):
        a = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, j)
        assert m.actuator_ctrlrange[a][1] == pytest.approx(st.effort_max_nm[i])
        jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j)
        assert m.dof_frictionloss[m.jnt_dofadr[jid]] == pytest.approx(st.frictionloss_nm[i])
    elbow = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "elbow")
    assert m.jnt_range[elbow][0] == pytest.approx(0.0)      # elbows never go negative


def test_setup_differences_match_the_thesis(pt):
    s = {k: ArmSetup.from_config(k, v) for k, v in pt["setups"].items()}
    assert s["s1"].gravity_m_s2 == 0 and max(s["s1"].frictionloss_nm) == 0
    assert s["s2"].gravity_m_s2 > 0 and min(s["s2"].frictionloss_nm) > 0
    assert all(a < b for a, b in zip(s["s2"].effort_max_nm, s["s1"].effort_max_nm))
    assert all(a < b for a, b in zip(s["s3"].effort_max_nm, s["s2"].effort_max_nm))
    assert all(a < b for a, b in zip(s["s3"].frictionloss_nm, s["s2"].frictionloss_nm))
    assert s["s4"].masses_kg.hand == 10.0 and s["s4"].effort_max_nm == s["s2"].effort_max_nm


def test_gravity_pulls_an_unactuated_arm_down_only_with_gravity(pt):
    for name, moves in (("s1", False), ("s2", True)):
        plant = build_humanoid_arm(ArmSetup.from_config(name, pt["setups"][name]))
        q0 = plant.base_pose_rad.copy()
        q0[1] = math.radians(60)     # shoulder_y raised
        plant.reset(q0)
        for _ in range(200):
            plant.step(np.zeros(5))
        assert (abs(plant.q[1] - q0[1]) > 0.05) == moves


def test_joint_view_holds_the_other_joints(pt):
    plant = build_humanoid_arm(ArmSetup.from_config("s2", pt["setups"]["s2"]))
    ig = pt["initial_gains"]
    holds = {j: PIDGains(kp, ki, kd) for j, kp, ki, kd in zip(HUMANOID_ARM_JOINTS, ig["kp"], ig["ki"], ig["kd"])}
    jv = plant.joint("elbow", holds, PIDParams.from_config(pt["pid"]))
    jv.reset(jv.plant.base_pose_rad[3])
    for _ in range(500):
        jv.step(5.0)          # push the elbow
    q = plant.q
    assert q[3] > plant.base_pose_rad[3] + 0.2
    shoulders = [0, 1, 2]
    assert np.max(np.abs(q[shoulders] - plant.base_pose_rad[shoulders])) < math.radians(3)
    assert abs(q[4] - plant.base_pose_rad[4]) < math.radians(20)   # the light hand lags the elbow's reaction


def test_measurement_delay(pt):
    plant = build_humanoid_arm(ArmSetup.from_config("s1", pt["setups"]["s1"]))
    assert plant.delay_steps == round(0.005 / 0.002)
    plant.reset(plant.base_pose_rad)
    u = np.zeros(5)
    u[3] = 50.0
    true_after = []
    for _ in range(plant.delay_steps):
        plant.step(u)
        true_after.append(plant.q[3])
    assert plant.q_rad[3] == pytest.approx(plant.base_pose_rad[3])    # not yet seen
    assert plant.q[3] > plant.base_pose_rad[3]
    plant.step(u)                                                     # one more: step 1's state arrives
    assert plant.q_rad[3] == pytest.approx(true_after[0], abs=1e-12)
    assert plant.q_rad[3] > plant.base_pose_rad[3]


def test_relay_on_the_arm_finds_an_oscillation(pt):
    s = TuningSession.create("humanoid_arm", "s2")
    data = s.autotuner.tune_single_joint("elbow")
    assert data.relay.ok and len(data.relay.peaks) >= 6
    assert data.relay.ku > 0 and 0.01 < data.relay.tu_s < 2.0
    assert data.applied == pt["humanoid_arm"]["heuristics"]["default"]      # the arm's own default


def test_fr3_plant():
    s = TuningSession.create("fr3", None)
    assert s.plant.joint_names[3] == "fr3_joint4" and s.plant.n == 7
    run = s.runner.play(s.step_motion("fr3_joint4"))
    ev = run.joint_evaluations["fr3_joint4"]
    assert ev.setpoint_changes == 2 and ev.avg_absolute_error < 20.0


def test_tino_leg_relay_and_heuristics(pt):
    """The social robot's leg (speed-controlled DC motor: the PID output is the motor speed
    command): relay finds an oscillation, every heuristic holds a 30° step without offset (I rules)."""
    from hri_pid_tuning.core.heuristics import HeuristicsParams, compute_all
    from hri_pid_tuning.core.metrics import EvaluationParams, evaluate_joint
    from hri_pid_tuning.core.plant import simulate_closed_loop
    from hri_sim.pid_plants_mujoco import build_tino_leg

    pid_params = PIDParams.from_config(pt["pid"])

    leg = build_tino_leg(["leg"], [100.0], [30.0], control_period_s=0.002).joint("leg", {}, pid_params)
    rp = dataclasses.replace(RelayParams.from_config(pt["relay"]), amplitude=30.0, start_angle_deg=35.0,
                             target_angle_deg=30.0, warmup_s=1.0, duration_s=2.0, hysteresis_deg=0.05)
    res = relay_tune(leg, rp)
    assert res.ok and len(res.peaks) >= 6 and res.ku > 0 and 0 < res.tu_s < 1.0
    hp = HeuristicsParams.from_config(pt["heuristics"])
    for name, g in compute_all(res.ku, res.tu_s, hp).items():
        tr = simulate_closed_loop(leg, g, lambda t: math.radians(30.0 if t < 0.3 else 60.0), 1.5,
                                  pid_params=pid_params)
        ev = evaluate_joint(tr.t_s, tr.desired_deg, tr.measured_deg, EvaluationParams.from_config(pt["evaluation"]))
        assert tr.aborted is None, name
        assert ev.settling(5.0) is not None and ev.settling(5.0) < 0.5, name
        if g.ki > 0:
            assert abs(ev.avg_steady_state_error) < 0.1, name


def test_tino_leg_model_absent_is_reported(monkeypatch, tmp_path):
    import hri_sim.pid_plants_mujoco as ppm
    import hri_sim.tino
    monkeypatch.setattr(hri_sim.tino, "TINO_XML", tmp_path / "missing.xml")
    with pytest.raises(FileNotFoundError):
        ppm.build_tino_leg(["leg"], [1.0], [0.0])
    monkeypatch.undo()
    with pytest.raises(ValueError):
        ppm.build_tino_leg(["leg"], [1.0, 2.0], [0.0])
