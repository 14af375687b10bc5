"""The shipped arm models load (the FR3 with its meshes and the configured joint limits) and hold
a configured pose headless."""
from __future__ import annotations

import mujoco
import numpy as np
import pytest

from hri_runtime.config.tree import load_robot_config
from hri_sim.cli import step_arm
from hri_sim.models import ModelNotFoundError, fr3_model


def test_fr3_model_matches_the_config_joints():
    model = fr3_model()
    cfg = load_robot_config("fr3")
    assert model.nmesh > 0  # meshes resolved, not an empty skeleton
    for name, lo, hi in zip(cfg["joints"]["names"], cfg["joints"]["position_min_deg"],
                            cfg["joints"]["position_max_deg"]):
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        assert jid >= 0, name
        # Config limits (Franka's published FR3 values) agree with the MJCF ranges to 0.1 deg.
        assert np.degrees(model.jnt_range[jid]) == pytest.approx([lo, hi], abs=0.1)


def test_step_holds_home_pose_headless():
    result = step_arm("fr3", seconds=1.0, pose="home")
    assert result["sim_time_s"] == pytest.approx(1.0, abs=result["timestep_s"])
    assert result["max_joint_error_rad"] < 0.02


@pytest.mark.parametrize("robot", ["ur5e", "iiwa14"])
def test_every_wired_arm_holds_home(robot):
    result = step_arm(robot, seconds=0.5, pose="home")
    assert result["max_joint_error_rad"] < 0.02


def test_a_robot_without_an_arm_model_is_a_clear_error():
    with pytest.raises(ModelNotFoundError, match="no MuJoCo model wired"):
        step_arm("tino", seconds=0.1, pose="home")
