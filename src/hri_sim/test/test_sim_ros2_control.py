"""The ros2_control tag and the controller manager's parameters of an arm (hri_sim.core.ros2_control),
`hri sim ros2-control` writing them, the committed parameter file of every arm
(config/ros2_control/<arm>.yaml) being the generated one, and the robot_state node writing the
model file its tag names (no ROS needed: strings, dicts, files, the in-process context)."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from pathlib import Path

import pytest
import yaml

from hri_runtime.config.tree import list_arms, load_robot_config
from hri_sim.core.ros2_control import hardware_refusal, manager_parameters, ros2_control_xml

REPO = Path(__file__).resolve().parents[3]


def _tag(cfg, hw, model_file="/m.mjb"):
    return ET.fromstring(ros2_control_xml(cfg, hw, model_file))


@pytest.mark.parametrize("robot", ["fr3", "ur5e", "iiwa14"])
def test_every_joint_has_the_interfaces_the_controller_claims(robot):
    cfg = load_robot_config(robot)
    tag = _tag(cfg, "mujoco")
    assert tag.find("hardware/plugin").text == "hri_controllers/MujocoSystem"
    joints = tag.findall("joint")
    assert [j.get("name") for j in joints] == cfg["joints"]["names"]
    for j in joints:
        assert [c.get("name") for c in j.findall("command_interface")] == ["effort"]
        assert [s.get("name") for s in j.findall("state_interface")] == ["position", "velocity", "effort"]
    sensor = tag.find("sensor")
    assert sensor.get("name") == cfg["ros2_control"]["ft_sensor"]
    assert [s.get("name") for s in sensor.findall("state_interface")] == [
        "force.x", "force.y", "force.z", "torque.x", "torque.y", "torque.z"]
    assert tag.find("gpio").get("name") == cfg["ros2_control"]["push_gpio"]
    # mock: the same joints and sensor (its states start at 0: GenericSystem leaves NaN otherwise), no push
    mock = _tag(cfg, "mock")
    assert mock.find("hardware/plugin").text == "mock_components/GenericSystem" and mock.find("gpio") is None
    assert [s.find("param[@name='initial_value']").text for s in mock.findall("sensor/state_interface")] == ["0.0"] * 6
    assert [j.get("name") for j in mock.findall("joint")] == cfg["joints"]["names"]


def test_vendor_hardware_is_the_robots_own_and_needs_its_address():
    fr3 = load_robot_config("fr3", overrides=["ros2_control.robot_ip=172.16.0.2"])
    tag = _tag(fr3, "franka")
    assert tag.find("hardware/plugin").text == "franka_hardware/FrankaHardwareInterface"
    params = {p.get("name"): p.text for p in tag.findall("hardware/param")}
    assert params == {"robot_ip": "172.16.0.2", "arm_id": "fr3"}
    assert "ur5e has 'ur'" in hardware_refusal(load_robot_config("ur5e"), "franka")
    assert "robot_ip" in hardware_refusal(load_robot_config("fr3"), "franka")
    ur = _tag(load_robot_config("ur5e", overrides=["ros2_control.robot_ip=192.168.56.101"]), "ur")
    assert {p.get("name"): p.text for p in ur.findall("hardware/param")}["reverse_port"] == "50001"
    with pytest.raises(ValueError):
        ros2_control_xml(load_robot_config("iiwa14"), "ur")


def test_manager_parameters_name_the_controllers_and_the_sensor():
    cfg = load_robot_config("fr3")
    p = manager_parameters(cfg, {"model_file": "/m.mjb"}, 1000)
    cm = p["controller_manager"]["ros__parameters"]
    assert cm["update_rate"] == 1000
    assert cm["interaction_controller"]["type"] == "hri_controllers/InteractionController"
    ic = p["interaction_controller"]["ros__parameters"]
    assert ic["model_file"] == "/m.mjb" and ic["ft_sensor"] == {"name": cfg["ros2_control"]["ft_sensor"]}


@pytest.mark.parametrize("robot", list_arms())
def test_the_committed_parameter_file_of_every_arm_is_the_generated_one(robot, tmp_path):
    """launch/ros2_control.launch.yaml passes config/ros2_control/<arm>.yaml to the controller
    manager: the config tree's values, no machine path (model_file comes from the launch file)."""
    from hri_sim.cli import main, manager_parameter_values, parameter_file_text

    committed = REPO / "config" / "ros2_control" / f"{robot}.yaml"
    assert committed.is_file(), f"hri sim ros2-control --robot {robot} --parameter-file {committed.relative_to(REPO)}"
    assert committed.read_text() == parameter_file_text(robot), (
        f"regenerate: hri sim ros2-control --robot {robot} --parameter-file config/ros2_control/{robot}.yaml")
    values = yaml.safe_load(committed.read_text())
    assert values == manager_parameter_values(load_robot_config(robot))
    ic = values["interaction_controller"]["ros__parameters"]
    assert "model_file" not in ic and str(REPO) not in committed.read_text()
    assert ic["joints"]["names"] == load_robot_config(robot)["joints"]["names"]
    assert main(["ros2-control", "--robot", robot, "--parameter-file", str(tmp_path / "p.yaml")]) == 0
    assert (tmp_path / "p.yaml").read_text() == committed.read_text()


def test_robot_state_writes_the_model_file_its_tag_names(tmp_path):
    """control:=ros2_control: the robot_state node writes the arm's model (torque motors, 1 /
    interaction.rate_hz) into ros2_control.dir before it publishes the description naming it, so
    nothing has to be generated before the launch; control:=rt writes nothing."""
    import xml.etree.ElementTree as ET

    import mujoco

    from hri_runtime.inproc import InprocContext
    from hri_sim.nodes.robot_state_node import RobotStateNode

    node = RobotStateNode(context=InprocContext(), parameters={
        "robot": "fr3", "ros2_control.control": "ros2_control", "ros2_control.dir": str(tmp_path / "rc")})
    tag = ET.fromstring(node.urdf).find("ros2_control")
    model_file = tag.find("hardware/param[@name='model_file']").text
    assert Path(model_file) == (tmp_path / "rc" / "model.mjb").resolve()
    model = mujoco.MjModel.from_binary_path(model_file)
    assert model.opt.timestep == pytest.approx(1.0 / node.cfg["interaction"]["rate_hz"]) and model.nu >= 7
    assert [p.name for p in (tmp_path / "rc").iterdir()] == ["model.mjb"]       # no temporary file left
    rt = RobotStateNode(context=InprocContext(), parameters={"robot": "fr3", "ros2_control.dir": str(tmp_path / "rt")})
    assert "<ros2_control" not in rt.urdf and not (tmp_path / "rt").exists()


def test_hri_sim_ros2_control_writes_model_urdf_and_parameters(tmp_path):
    import mujoco

    from hri_sim.cli import main

    assert main(["ros2-control", "--robot", "fr3", "--dir", str(tmp_path)]) == 0
    model = mujoco.MjModel.from_binary_path(str(tmp_path / "model.mjb"))
    assert model.opt.timestep == pytest.approx(1e-3) and model.nu >= 7
    urdf = ET.parse(tmp_path / "robot.urdf").getroot()
    assert urdf.find("ros2_control/hardware/param[@name='model_file']").text == str((tmp_path / "model.mjb").resolve())
    params = yaml.safe_load((tmp_path / "controllers.yaml").read_text())
    ic = params["interaction_controller"]["ros__parameters"]
    assert ic["joints"]["names"] == load_robot_config("fr3")["joints"]["names"]
    assert ic["interaction"]["impedance"]["stiffness_diag"] == load_robot_config("fr3")["interaction"]["impedance"]["stiffness_diag"]
    assert main(["ros2-control", "--robot", "ur5e", "--hardware", "franka", "--dir", str(tmp_path / "x")]) == 2
