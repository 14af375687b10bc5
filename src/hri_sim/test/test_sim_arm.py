"""FR3 model variants (MjSpec edits) and the lockstep arm simulator."""
from __future__ import annotations

import mujoco
import numpy as np
import pytest

from hri_runtime.config.tree import load_robot_config, named_position
from hri_sim.arm_sim import ArmSim, ArmSimParams
from hri_sim.models import FR3_ARM_JOINTS, load_arm, load_fr3, ModelNotFoundError


def test_load_fr3_adds_sites_and_keeps_position_servos():
    m = load_fr3()
    assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "attachment_site") >= 0
    assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "tcp") >= 0
    assert m.nu == 8 and m.actuator_gainprm[0, 0] == 4500


def test_torque_variant_has_motors_with_the_torque_limits_and_ft_sensor():
    m = load_fr3("torque", add_ft_sensor=True, gravity_compensation=True, timestep_s=0.001)
    assert m.opt.timestep == 0.001
    for name, limit in zip(FR3_ARM_JOINTS, [87, 87, 87, 87, 12, 12, 12]):
        a = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, name)
        assert m.actuator_gainprm[a, 0] == 1 and m.actuator_biastype[a] == 0
        np.testing.assert_allclose(m.actuator_ctrlrange[a], [-limit, limit])
    assert m.nsensor == 2 and m.sensor_dim.sum() == 6
    assert np.all(m.body_gravcomp[1:] == 1)
    # gravity compensated: with zero torque the arm stays put
    d = mujoco.MjData(m)
    d.qpos[:7] = named_position(load_robot_config("fr3"), "home")
    q0 = d.qpos[:7].copy()
    for _ in range(500):
        mujoco.mj_step(m, d)
    assert np.max(np.abs(d.qpos[:7] - q0)) < 0.01


def test_bad_actuation_and_unknown_arm_are_clear_errors():
    with pytest.raises(ValueError, match="actuation"):
        load_fr3("velocity")
    with pytest.raises(ModelNotFoundError, match="no MuJoCo model wired for arm 'tino'"):
        load_arm("tino")


def test_robosuite_arms_get_config_joint_names_and_the_flange_site():
    from hri_sim.models import robosuite_xml_path

    for robot in ("ur5e", "iiwa14"):
        robosuite_xml_path(robot)   # robosuite's wheel is installed by `make`: missing = a failure
        cfg = load_robot_config(robot)
        m = load_arm(robot, "torque")
        for name in cfg["joints"]["names"]:
            assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name) >= 0, name
        assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "attachment_site") >= 0
        assert m.nu == cfg["robot"]["dof"] and np.all(m.dof_armature[: m.nu] > 0)


@pytest.mark.parametrize("actuation", ["impedance", "position"])
def test_arm_sim_holds_and_follows_a_ramp(actuation):
    cfg = load_robot_config("fr3", overrides=[f"sim.arm.actuation={actuation}"])
    q0 = named_position(cfg, "home")
    sim = ArmSim("fr3", cfg["joints"]["names"], ArmSimParams.from_config(cfg["sim"]["arm"]), q0,
                 interpolation_s=0.01)
    sim.advance(1.0)
    assert sim.time_s == pytest.approx(1.0)
    assert np.max(np.abs(sim.q - q0)) < 1e-3
    # 0.2 rad/s ramp on joint 1 commanded at 100 Hz
    lag = []
    for k in range(100):
        q = q0.copy()
        q[0] += 0.002 * (k + 1)
        sim.command(q)
        sim.advance(0.01)
        lag.append(abs(sim.q[0] - q[0]))
    # impedance with velocity feed-forward tracks a ramp with a fraction of a mrad; the MJCF's
    # position servos (kv/kp = 0.1 s) lag ~ 0.1 s x 0.2 rad/s = 20 mrad
    bound = 1e-3 if actuation == "impedance" else 0.03
    assert max(lag[20:]) < bound


def test_command_must_be_finite():
    cfg = load_robot_config("fr3")
    sim = ArmSim("fr3", cfg["joints"]["names"], ArmSimParams.from_config(cfg["sim"]["arm"]),
                 named_position(cfg, "home"))
    with pytest.raises(ValueError):
        sim.command(np.full(7, np.nan))


def test_instability_is_an_error_not_a_silent_reset(tmp_path, monkeypatch):
    from hri_sim.arm_sim import SimulationUnstable

    monkeypatch.chdir(tmp_path)  # MuJoCo writes MUJOCO_LOG.TXT into the working directory

    cfg = load_robot_config("fr3")
    sim = ArmSim("fr3", cfg["joints"]["names"], ArmSimParams.from_config(cfg["sim"]["arm"]),
                 named_position(cfg, "home"))
    sim.data.qvel[0] = float("nan")  # what a diverging integration produces
    with pytest.raises(SimulationUnstable):
        sim.advance(0.01)
