"""The ros2_control tag and the controller manager's parameters of an arm (hri_sim.core.ros2_control)
and `hri sim ros2-control` writing them (no ROS needed: strings, dicts, files)."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
import yaml

from hri_runtime.config.tree import load_robot_config
from hri_sim.core.ros2_control import hardware_refusal, manager_parameters, ros2_control_xml


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
    assert sensor.get("name") == cfg["ros2_control"]["ft_sensor"] and len(sensor.findall("state_interface")) == 6
    mock = _tag(cfg, "mock")
    assert mock.find("hardware/plugin").text == "mock_components/GenericSystem" and mock.find("sensor") is None


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


def test_manager_parameters_name_the_controllers():
    cfg = load_robot_config("fr3")
    p = manager_parameters(cfg, {"model_file": "/m.mjb"}, 1000)
    cm = p["controller_manager"]["ros__parameters"]
    assert cm["update_rate"] == 1000
    assert cm["interaction_controller"]["type"] == "hri_controllers/InteractionController"
    assert p["interaction_controller"]["ros__parameters"]["model_file"] == "/m.mjb"


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
