"""The ros2_control tag and the controller manager's parameters of an arm (hri_sim.core.ros2_control),
`hri sim ros2-control` writing them, the committed parameter file of every arm
(config/ros2_control/<arm>.yaml) being the generated one, and the robot_state node writing the
model file its tag names (no ROS needed: strings, dicts, files, the in-process context)."""
from __future__ import annotations

import math
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
    # the commands the controller claims: effort, and position where the arm's driver needs it (the iiwa's)
    commands = ["position", "effort"] if cfg["ros2_control"]["position_command"] == "measured" else ["effort"]
    assert commands == (["position", "effort"] if robot == "iiwa14" else ["effort"])
    for j in joints:
        assert [c.get("name") for c in j.findall("command_interface")] == commands
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
    for j in mock.findall("joint"):
        assert [c.get("name") for c in j.findall("command_interface")] == commands


def test_the_controller_writes_the_iiwas_position_commands_and_the_iiwa_needs_it():
    """lbr_fri_ros2's torque command mode discards the torques while a joint's position command is
    NaN: the iiwa14's controller claims <joint>/position (ros2_control.position_command measured, a
    parameter of the controller), the other arms' default stays effort only, and hardware iiwa is
    refused for a controller that would not write them (one sentence)."""
    from hri_sim.cli import manager_parameter_values

    def position_command(cfg) -> str:
        return manager_parameter_values(cfg)["interaction_controller"]["ros__parameters"]["ros2_control"][
            "position_command"]

    assert position_command(load_robot_config("iiwa14")) == "measured"
    assert [position_command(load_robot_config(r)) for r in ("fr3", "ur5e")] == ["none", "none"]
    assert hardware_refusal(load_robot_config("iiwa14", overrides=[f"ros2_control.robot_ip={IIWA_IP}"]), "iiwa") is None
    off = load_robot_config("iiwa14", overrides=[f"ros2_control.robot_ip={IIWA_IP}", "ros2_control.position_command=none"])
    why = hardware_refusal(off, "iiwa")
    assert "ros2_control.position_command" in why and "measured" in why and "\n" not in why
    with pytest.raises(ValueError, match="position_command"):
        ros2_control_xml(off, "iiwa")
    # the simulated tags follow the parameter: an arm whose driver took position commands gets them in sim
    fr3 = load_robot_config("fr3", overrides=["ros2_control.position_command=measured"])
    for hw in ("mujoco", "mock"):
        assert [c.get("name") for c in _tag(fr3, hw).find("joint").findall("command_interface")] == ["position",
                                                                                                   "effort"]


def test_vendor_hardware_is_the_robots_own_and_needs_its_address():
    fr3 = load_robot_config("fr3", overrides=["ros2_control.robot_ip=172.16.0.2"])
    tag = _tag(fr3, "franka")
    assert tag.find("hardware/plugin").text == "franka_hardware/FrankaHardwareInterface"
    params = {p.get("name"): p.text for p in tag.findall("hardware/param")}
    assert params == {"robot_ip": "172.16.0.2", "arm_id": "fr3"}
    assert "ur5e has 'ur'" in hardware_refusal(load_robot_config("ur5e"), "franka")
    assert "robot_ip" in hardware_refusal(load_robot_config("fr3"), "franka")
    ur5e = load_robot_config("ur5e", overrides=["ros2_control.robot_ip=192.168.56.101"])
    ur = _tag(ur5e, "ur")
    assert {p.get("name"): p.text for p in ur.findall("hardware/param")}["reverse_port"] == "50001"
    # ur_robot_driver exports tcp_fts_sensor only when the tag names it (ur_description's ur_sensors.xacro);
    # the ur5e's simulated systems name their sensor the same, so the one parameter file fits all three
    assert [s.get("name") for s in ur.findall("sensor")] == ["tcp_fts_sensor"] == [ur5e["ros2_control"]["ft_sensor"]]
    assert [s.get("name") for s in ur.find("sensor").findall("state_interface")] == [
        f"{a}.{x}" for a in ("force", "torque") for x in "xyz"]
    assert ur5e["ros2_control"]["ft_frame"] == "tool"     # the driver rotates actual_TCP_force into the TCP frame
    other = load_robot_config("ur5e", overrides=["ros2_control.robot_ip=192.168.56.101", "ros2_control.ft_sensor=ee_ft"])
    assert "'tcp_fts_sensor'" in hardware_refusal(other, "ur") and "'ee_ft'" in hardware_refusal(other, "ur")
    assert _tag(fr3, "franka").find("sensor") is None          # franka_hardware exports no F/T interface
    with pytest.raises(ValueError):
        ros2_control_xml(load_robot_config("iiwa14"), "ur")


IIWA_IP = "172.31.1.147"
# lbr_ros2_control's SystemInterface::on_init (lbr_fri_ros2_stack, branch rolling: system_interface.cpp
# parse_parameters_ / verify_*; lbr_description's lbr_system_interface.xacro), named here one by one
LBR_HARDWARE_PARAMS = ["fri_client_sdk_major_version", "fri_client_sdk_minor_version", "client_command_mode", "port_id",
                       "remote_host", "rt_prio", "pid_p", "pid_i", "pid_d", "pid_i_max", "pid_i_min", "pid_antiwindup",
                       "command_guard_variant", "external_torque_cutoff_frequency",
                       "measured_torque_cutoff_frequency", "open_loop"]
LBR_AUXILIARY_STATES = ["sample_time", "session_state", "connection_quality", "safety_state", "operation_mode",
                        "drive_state", "client_command_mode", "overlay_type", "control_mode", "time_stamp_sec",
                        "time_stamp_nano_sec", "tracking_performance"]
LBR_FT_PARAMS = ["enabled", "update_rate", "rt_prio", "chain_root", "chain_tip", "damping", "force_x_th", "force_y_th",
                 "force_z_th", "torque_x_th", "torque_y_th", "torque_z_th"]
LBR_WRENCH = ["force.x", "force.y", "force.z", "torque.x", "torque.y", "torque.z"]


def _params_of(elem) -> dict:
    return {p.get("name"): p.text for p in elem.findall("param")}


def test_the_iiwa_tag_has_what_lbr_ros2_control_on_init_reads():
    """on_init reads every hardware parameter (``at`` or ``std::stod`` of it: a missing one is an
    exception), each joint's min/max_position, max_velocity, max_torque, and refuses a tag whose joints
    have other than position + effort commands and (FRI client SDK 1.x) 7 state interfaces, whose
    sensors are not exactly auxiliary_sensor (12 states) then estimated_ft_sensor (its 12 parameters;
    6 states when enabled), or whose GPIOs are not exactly ``wrench`` (6 commands)."""
    cfg = load_robot_config("iiwa14", overrides=[f"ros2_control.robot_ip={IIWA_IP}"])
    tag = _tag(cfg, "iiwa")
    assert tag.find("hardware/plugin").text == "lbr_ros2_control/SystemInterface"
    hw = {p.get("name"): p.text for p in tag.findall("hardware/param")}
    assert sorted(hw) == sorted(LBR_HARDWARE_PARAMS)
    assert hw["client_command_mode"] == "torque" and hw["remote_host"] == IIWA_IP
    assert 30200 <= int(hw["port_id"]) <= 30209                          # on_init's port check
    assert hw["open_loop"] == "false"      # true: the position states would be the commanded positions
    assert hw["command_guard_variant"] in ("default", "safe_stop")
    for n in ("pid_p", "pid_i", "pid_d", "pid_i_max", "pid_i_min", "external_torque_cutoff_frequency",
              "measured_torque_cutoff_frequency"):
        float(hw[n])                                                      # std::stod parses it
    # the joints: as lbr_ros2_control exports them, with the command guard's limits from the config tree
    j = cfg["joints"]
    joints = tag.findall("joint")
    assert [x.get("name") for x in joints] == j["names"] and len(joints) == 7
    for i, x in enumerate(joints):
        assert [c.get("name") for c in x.findall("command_interface")] == ["position", "effort"]
        assert [s.get("name") for s in x.findall("state_interface")] == [
            "position", "velocity", "effort", "commanded_joint_position", "commanded_torque", "external_torque",
            "ipo_joint_position"]
        lim = {k: float(v) for k, v in _params_of(x).items()}
        assert lim == pytest.approx({"min_position": math.radians(j["position_min_deg"][i]),
                                     "max_position": math.radians(j["position_max_deg"][i]),
                                     "max_velocity": math.radians(j["velocity_max_deg_s"][i]),
                                     "max_torque": j["torque_max_nm"][i]})
        effort = x.find("command_interface[@name='effort']")
        assert float(_params_of(effort)["max"]) == -float(_params_of(effort)["min"]) == j["torque_max_nm"][i]
    # the sensors, in on_init's order (info_.sensors[0], [1])
    sensors = tag.findall("sensor")
    assert [s.get("name") for s in sensors] == ["auxiliary_sensor", "estimated_ft_sensor"]
    assert [s.get("name") for s in sensors[0].findall("state_interface")] == LBR_AUXILIARY_STATES
    assert _params_of(sensors[0]) == {}
    ft = _params_of(sensors[1])
    assert list(ft) == LBR_FT_PARAMS
    k = cfg["ros2_control"]["iiwa"]["estimated_ft_sensor"]
    assert ft["enabled"] == "true" and ft["update_rate"] == "100" and ft["rt_prio"] == "30"
    assert (ft["chain_root"], ft["chain_tip"]) == (cfg["frames"]["base"], cfg["frames"]["ee"])
    assert {n: float(ft[n]) for n in LBR_FT_PARAMS[5:]} == {n: float(k[n]) for n in LBR_FT_PARAMS[5:]}
    assert [s.get("name") for s in sensors[1].findall("state_interface")] == LBR_WRENCH
    gpios = tag.findall("gpio")
    assert [g.get("name") for g in gpios] == ["wrench"]
    assert [c.get("name") for c in gpios[0].findall("command_interface")] == LBR_WRENCH
    # the controller reads the estimate: named as the driver names it, in the tool frame (chain_tip)
    assert cfg["ros2_control"]["ft_sensor"] == "estimated_ft_sensor" and cfg["ros2_control"]["ft_frame"] == "tool"
    ic = manager_parameters(cfg, {}, 1000)["interaction_controller"]["ros__parameters"]
    assert ic["ft_sensor"] == {"name": "estimated_ft_sensor", "frame": "tool"}
    assert _tag(cfg, "mujoco").find("sensor").get("name") == "estimated_ft_sensor"   # same interfaces in sim


def test_the_iiwa_tag_follows_the_fri_version_and_the_estimate_switch():
    fri2 = _tag(load_robot_config("iiwa14", overrides=[
        f"ros2_control.robot_ip={IIWA_IP}", "ros2_control.iiwa.fri_client_sdk_major_version=2",
        "ros2_control.iiwa.fri_client_sdk_minor_version=5"]), "iiwa")
    for x in fri2.findall("joint"):    # FRI 2.x has no commanded joint position: 6 state interfaces
        assert [s.get("name") for s in x.findall("state_interface")] == [
            "position", "velocity", "effort", "commanded_torque", "external_torque", "ipo_joint_position"]
    off = _tag(load_robot_config("iiwa14", overrides=[
        f"ros2_control.robot_ip={IIWA_IP}", "ros2_control.iiwa.estimated_ft_sensor.enabled=false"]), "iiwa")
    sensor = off.findall("sensor")[1]
    assert sensor.get("name") == "estimated_ft_sensor" and list(_params_of(sensor)) == LBR_FT_PARAMS
    assert _params_of(sensor)["enabled"] == "false" and sensor.findall("state_interface") == []
    other = load_robot_config("iiwa14", overrides=[f"ros2_control.robot_ip={IIWA_IP}", "ros2_control.ft_sensor=ee_ft"])
    why = hardware_refusal(other, "iiwa")
    assert "'estimated_ft_sensor'" in why and "'ee_ft'" in why
    assert "robot_ip" in hardware_refusal(load_robot_config("iiwa14"), "iiwa")


def test_the_estimate_chain_runs_through_the_iiwa_urdf(tmp_path):
    """The estimate's KDL chain (lbr_fri_ros2 Kinematics, on the URDF the controller manager reads)
    runs from chain_root to chain_tip through the seven joints."""
    from hri_sim.cli import main

    assert main(["ros2-control", "--robot", "iiwa14", "--hardware", "iiwa", "--robot-ip", IIWA_IP,
                 "--dir", str(tmp_path)]) == 0
    urdf = ET.parse(tmp_path / "robot.urdf").getroot()
    ft = _params_of(urdf.find("ros2_control/sensor[@name='estimated_ft_sensor']"))
    parent = {x.find("child").get("link"): (x.find("parent").get("link"), x.get("name"), x.get("type"))
              for x in urdf.findall("joint")}
    link, moving = ft["chain_tip"], []
    while link in parent:
        link, name, kind = parent[link]
        if kind != "fixed":
            moving.append(name)
    assert link == ft["chain_root"] == urdf.find("link").get("name")
    assert moving[::-1] == load_robot_config("iiwa14")["joints"]["names"]


def test_manager_parameters_name_the_controllers_and_the_sensor():
    cfg = load_robot_config("fr3")
    p = manager_parameters(cfg, {"model_file": "/m.mjb"}, 1000)
    cm = p["controller_manager"]["ros__parameters"]
    assert cm["update_rate"] == 1000
    assert cm["interaction_controller"]["type"] == "hri_controllers/InteractionController"
    ic = p["interaction_controller"]["ros__parameters"]
    assert ic["model_file"] == "/m.mjb" and ic["ft_sensor"] == {"name": cfg["ros2_control"]["ft_sensor"], "frame": "tool"}
    base = manager_parameters(load_robot_config("fr3", overrides=["ros2_control.ft_frame=base"]), {}, 1000)
    assert base["interaction_controller"]["ros__parameters"]["ft_sensor"]["frame"] == "base"


@pytest.mark.parametrize("robot", list_arms())
def test_under_ros2_control_the_hardware_compensates_gravity_and_the_controller_does_not(robot):
    """The arms' drivers add g(q) themselves (libfranka's torques are "without gravity and friction",
    UR direct torque's "after gravity compensation", KUKA FRI's torque mode superposed on the
    robot's gravity compensation: docs/hardware.md), and so does the MuJoCo system, as they do: the
    committed parameter file of every arm has the controller's interaction.gravity_compensation
    false and the MuJoCo tag's gravity_compensation true, while the config (our rt loop, whose
    MuJoCo arm has no vendor's compensation) keeps it true. With ros2_control.gravity_compensation
    controller (a hardware taking the full joint torque) the two swap: g(q) is added exactly once."""
    cfg = load_robot_config(robot)
    assert cfg["interaction"]["gravity_compensation"] is True          # the rt loop's
    assert cfg["ros2_control"]["gravity_compensation"] == "hardware"
    committed = yaml.safe_load((REPO / "config" / "ros2_control" / f"{robot}.yaml").read_text())
    assert committed["interaction_controller"]["ros__parameters"]["interaction"]["gravity_compensation"] is False
    assert _tag(cfg, "mujoco").find("hardware/param[@name='gravity_compensation']").text == "true"
    if cfg["ros2_control"]["vendor"] != "none":     # the vendor's tag: its driver compensates, no such parameter
        vendor = _tag(load_robot_config(robot, overrides=["ros2_control.robot_ip=192.168.1.10"]), cfg["ros2_control"]["vendor"])
        assert vendor.find("hardware/param[@name='gravity_compensation']") is None
    full = load_robot_config(robot, overrides=["ros2_control.gravity_compensation=controller"])
    values = {"interaction": {"gravity_compensation": True}}
    ic = manager_parameters(full, values, 1000)["interaction_controller"]["ros__parameters"]
    assert ic["interaction"]["gravity_compensation"] is True
    assert _tag(full, "mujoco").find("hardware/param[@name='gravity_compensation']").text == "false"
    off = load_robot_config(robot, overrides=["ros2_control.gravity_compensation=controller",
                                              "interaction.gravity_compensation=false"])
    assert manager_parameters(off, values, 1000)["interaction_controller"]["ros__parameters"]["interaction"][
        "gravity_compensation"] is False


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
