"""control:=ros2_control of an arm's launch file (docs/hardware.md), read without ROS: the
controller manager and its spawners replace the interaction node, arm_teleop reads /joint_states,
robot_state publishes the <ros2_control> tag of the chosen hardware; control:=rt (the default) is
the stack as before."""
from __future__ import annotations

from pathlib import Path

import pytest

from hri_runtime.launch.frontend import LaunchError, parse_launch_file
from hri_sim.cli import write_ros2_control

REPO = Path(__file__).resolve().parents[2]


def _nodes(robot: str, **args):
    # without ROS, controller_manager is not installed: the file is read, not run
    desc = parse_launch_file(str(REPO / "launch" / f"{robot}.launch.yaml"), {k: str(v) for k, v in args.items()},
                             check_executables=False)
    return {n.node_name: n for n in desc.nodes}


def _params(node) -> dict:
    return {k: str(v) for k, v in node.params.items()}


@pytest.mark.parametrize("robot", ["fr3", "ur5e", "iiwa14"])
def test_ros2_control_replaces_the_interaction_node(robot, tmp_path):
    write_ros2_control(robot, "mujoco", tmp_path)
    rt = _nodes(robot, vr_port=0)
    assert "interaction" in rt and "controller_manager" not in rt
    rc = _nodes(robot, vr_port=0, control="ros2_control", ros2_control_dir=tmp_path)
    assert "interaction" not in rc
    cm = rc["controller_manager"]
    assert (cm.pkg, cm.exec) == ("controller_manager", "ros2_control_node")
    assert [Path(f).resolve() for f in cm.params_files] == [(tmp_path / "controllers.yaml").resolve()]
    assert ("~/robot_description", "robot_description") in cm.remaps
    spawned = " ".join(" ".join(map(str, n.cmd)) for name, n in rc.items() if name.startswith("spawner_"))
    assert "interaction_controller" in spawned and "joint_state_broadcaster" in spawned
    assert _params(rc["arm_teleop"]).get("teleop.robot.interface") == "ros2"
    st = _params(rc["robot_state"])
    assert st.get("ros2_control.control") == "ros2_control" and st.get("ros2_control.hardware") == "mujoco"


def test_the_parameter_file_must_be_written_first(tmp_path):
    with pytest.raises(LaunchError, match="params file not found"):
        _nodes("fr3", vr_port=0, control="ros2_control", ros2_control_dir=tmp_path / "nothing")
