"""control:=ros2_control of an arm's launch file (docs/hardware.md), read without ROS: the
controller manager (the committed parameter file config/ros2_control/<arm>.yaml) and its spawners
replace the interaction node, the controller gets the model file robot_state writes through the
spawner, arm_teleop reads /joint_states, robot_state publishes the <ros2_control> tag of the chosen
hardware; nothing has to be generated first. control:=rt (the default) is the stack as before."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from hri_runtime.launch.frontend import parse_launch_file

REPO = Path(__file__).resolve().parents[2]


def _nodes(robot: str, **args):
    # without ROS, controller_manager is not installed: the file is read, not run
    desc = parse_launch_file(str(REPO / "launch" / f"{robot}.launch.yaml"), {k: str(v) for k, v in args.items()},
                             check_executables=False)
    return {n.node_name: n for n in desc.nodes}


def _params(node) -> dict:
    return {k: str(v) for k, v in node.params.items()}


@pytest.mark.parametrize("robot", ["fr3", "ur5e", "iiwa14"])
@pytest.mark.parametrize("hardware", ["mujoco", "mock"])
def test_ros2_control_replaces_the_interaction_node(robot, hardware, tmp_path):
    rt = _nodes(robot, vr_port=0)
    assert "interaction" in rt and "controller_manager" not in rt
    rc = _nodes(robot, vr_port=0, control="ros2_control", hardware=hardware, ros2_control_dir=tmp_path)
    assert "interaction" not in rc
    cm = rc["controller_manager"]
    assert (cm.pkg, cm.exec) == ("controller_manager", "ros2_control_node")
    assert [Path(f).resolve() for f in cm.params_files] == [(REPO / "config" / "ros2_control" / f"{robot}.yaml").resolve()]
    assert ("~/robot_description", "robot_description") in cm.remaps
    jsb = [str(a) for a in rc["spawner_joint_state_broadcaster"].cmd]
    assert "joint_state_broadcaster" in jsb
    ic = [str(a) for a in rc["spawner_interaction_controller"].cmd]
    # the model file as ONE argument of --controller-ros-args (the spawner splits it, as ros2 launch passes it)
    k = ic.index("--controller-ros-args")
    assert "interaction_controller" in ic[:k]
    assert shlex.split(ic[k + 1]) == ["--param", f"model_file:={tmp_path}/model.mjb"]
    assert _params(rc["arm_teleop"]).get("teleop.robot.interface") == "ros2"
    st = _params(rc["robot_state"])
    assert st.get("ros2_control.control") == "ros2_control" and st.get("ros2_control.hardware") == hardware
    assert st.get("ros2_control.dir") == str(tmp_path)
    assert not list(tmp_path.iterdir())     # reading the launch file generates nothing
