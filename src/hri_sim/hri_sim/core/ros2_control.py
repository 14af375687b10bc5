"""The ros2_control side of an arm (docs/hardware.md): the URDF's ``<ros2_control>`` tag for the
chosen hardware and the controller manager's parameter file. Pure: in a merged robot config, out
strings and dicts; no middleware, no files (``hri sim ros2-control`` writes them).

Hardware (``ros2_control.hardware``), each exposing the interfaces the controller claims
(``<joint>/effort`` commanded, ``<joint>/position`` and ``<joint>/velocity`` read; with
``ros2_control.position_command`` ``measured`` also ``<joint>/position`` commanded, which the iiwa's
driver always exports and the MuJoCo and mock tags then export too):

- ``mujoco``: ``hri_controllers/MujocoSystem`` on the arm's MuJoCo model with torque motors
  (``model_file``, ``ee_site``, ``gravity_compensation``: it adds g(q) at the measured q to the
  effort command, as the vendors' drivers do, while ``ros2_control.gravity_compensation`` is
  ``hardware``), plus the EE force-torque sensor ``ros2_control.ft_sensor`` and the
  scripted-push GPIO ``ros2_control.push_gpio`` (simulation only);
- ``mock``: ``mock_components/GenericSystem`` (plumbing check: the states stay at their initial
  values, effort commands are mirrored), with the same F/T sensor reading zero;
- ``franka`` / ``ur`` / ``iiwa``: the vendor's plugin with its parameters named as in the vendor's
  own description (``ros2_control.<vendor>.*``, ``robot_ip``); only for a robot whose
  ``ros2_control.vendor`` is that vendor. The UR's tag has ur_robot_driver's F/T sensor
  (``ros2_control.ur.ft_sensor``); the iiwa's has what lbr_ros2_control's ``on_init`` reads: its
  joints' interfaces and limits, ``auxiliary_sensor``, ``estimated_ft_sensor``
  (``ros2_control.iiwa.ft_sensor``, the wrench estimate) and the GPIO ``wrench``; franka's none.

The initial joint positions are ``joints.named_positions_deg.home``.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional
from xml.sax.saxutils import quoteattr

__all__ = ["HARDWARE", "ros2_control_xml", "manager_parameters", "hardware_refusal", "files_dir", "description_tag",
           "MODEL_FILE",
           "hardware_compensates_gravity", "controller_gravity_compensation"]

HARDWARE = ("mujoco", "mock", "franka", "ur", "iiwa")
VENDORS = ("franka", "ur", "iiwa")
PLUGINS = {"mujoco": "hri_controllers/MujocoSystem", "mock": "mock_components/GenericSystem"}
MODEL_FILE = "model.mjb"   # in ros2_control.dir: the arm with torque motors at 1 / interaction.rate_hz
SIMULATED = ("mujoco", "mock")   # the hardware with the F/T sensor ros2_control.ft_sensor in its tag


def files_dir(cfg: dict, cwd: Optional[Path] = None) -> Path:
    """``ros2_control.dir`` (absolute), default ``build/ros2_control/<robot>`` under ``cwd``."""
    d = str(cfg["ros2_control"]["dir"]).strip()
    p = Path(d) if d else Path("build") / "ros2_control" / cfg["robot"]["model"]
    return (p if p.is_absolute() else (cwd or Path.cwd()) / p).resolve()


def hardware_refusal(cfg: dict, hardware: str) -> Optional[str]:
    """Why ``hardware`` cannot drive this robot, or None."""
    rc = cfg["ros2_control"]
    if hardware not in HARDWARE:
        return f"hardware {hardware!r}: one of {', '.join(HARDWARE)}"
    if hardware in VENDORS:
        if rc["vendor"] != hardware:
            return (f"hardware {hardware!r} drives a robot whose ros2_control.vendor is {hardware!r}; "
                    f"{cfg['robot']['model']} has {rc['vendor']!r}")
        if not str(rc["robot_ip"]).strip():
            return f"hardware {hardware!r} needs the robot's address (robot_ip)"
        if hardware == "iiwa" and rc["position_command"] != "measured":
            return ("hardware 'iiwa' discards the controller's torques while the joints' position commands are "
                    "unset (lbr_fri_ros2's torque command mode): set ros2_control.position_command to measured")
        if hardware in ("ur", "iiwa") and rc["ft_sensor"] != rc[hardware]["ft_sensor"]:
            return (f"hardware {hardware!r} exports its F/T sensor as {rc[hardware]['ft_sensor']!r} "
                    f"(ros2_control.{hardware}.ft_sensor); the controller reads ros2_control.ft_sensor "
                    f"{rc['ft_sensor']!r}: set it to the driver's name")
    if not cfg["joints"].get("names"):
        return f"{cfg['robot']['model']} has no joints.names"
    return None


def hardware_compensates_gravity(cfg: dict) -> bool:
    """``ros2_control.gravity_compensation`` is ``hardware``: the hardware interface adds g(q), as
    franka_hardware (libfranka), ur_robot_driver (direct torque) and lbr_ros2_control (FRI torque
    mode) do, and the MuJoCo system (hardware parameter ``gravity_compensation``) does as they do."""
    return cfg["ros2_control"]["gravity_compensation"] == "hardware"


def controller_gravity_compensation(cfg: dict) -> bool:
    """The interaction controller's ``interaction.gravity_compensation`` under ros2_control: false
    where the hardware compensates gravity (else the arm gets g(q) twice), else the config's."""
    return bool(cfg["interaction"]["gravity_compensation"]) and not hardware_compensates_gravity(cfg)


def _param(name: str, value: Any) -> str:
    if isinstance(value, bool):
        value = "true" if value else "false"
    return f"      <param name={quoteattr(name)}>{value}</param>"


def _hardware_params(cfg: dict, hardware: str, model_file: Optional[str]) -> list[tuple[str, Any]]:
    rc = cfg["ros2_control"]
    if hardware == "mujoco":
        if not model_file:
            raise ValueError("hardware mujoco needs the model file (hri sim ros2-control writes it)")
        return [("model_file", model_file), ("ee_site", cfg["interaction"]["ee_site"]),
                ("gravity_compensation", hardware_compensates_gravity(cfg))]
    if hardware == "mock":
        return [("mock_sensor_commands", False)]
    ip = rc["robot_ip"]
    if hardware == "franka":
        return [("robot_ip", ip), ("arm_id", rc["franka"]["arm_id"])]
    if hardware == "ur":
        u = rc["ur"]
        return [("robot_ip", ip), ("headless_mode", u["headless_mode"]), ("reverse_port", u["reverse_port"]),
                ("script_sender_port", u["script_sender_port"]), ("trajectory_port", u["trajectory_port"]),
                ("script_command_port", u["script_command_port"]), ("tf_prefix", "")]
    k = rc["iiwa"]
    return [("fri_client_sdk_major_version", k["fri_client_sdk_major_version"]),
            ("fri_client_sdk_minor_version", k["fri_client_sdk_minor_version"]),
            ("client_command_mode", k["client_command_mode"]), ("port_id", k["port_id"]),
            ("remote_host", ip or k["remote_host"]), ("rt_prio", k["rt_prio"])] + [
        (n, k[n]) for n in IIWA_HARDWARE_PARAMS]


# lbr_ros2_control's SystemInterface::on_init (lbr_fri_ros2_stack, lbr_description's
# lbr_system_interface.xacro): besides the six above, these hardware parameters; per joint the
# command guard's limits; the joints' interfaces; two sensors, exactly in this order and with these
# names (auxiliary_sensor: the FRI state, estimated_ft_sensor: the wrench estimate), and the GPIO
# ``wrench`` (the FRI Cartesian impedance mode's command). Names fixed by the driver's code.
IIWA_HARDWARE_PARAMS = ("pid_p", "pid_i", "pid_d", "pid_i_max", "pid_i_min", "pid_antiwindup", "command_guard_variant",
                        "external_torque_cutoff_frequency", "measured_torque_cutoff_frequency", "open_loop")
IIWA_AUXILIARY_SENSOR = "auxiliary_sensor"
IIWA_AUXILIARY_STATES = ("sample_time", "session_state", "connection_quality", "safety_state", "operation_mode",
                         "drive_state", "client_command_mode", "overlay_type", "control_mode", "time_stamp_sec",
                         "time_stamp_nano_sec", "tracking_performance")
IIWA_FT_PARAMS = ("enabled", "update_rate", "rt_prio", "chain_root", "chain_tip", "damping", "force_x_th", "force_y_th",
                  "force_z_th", "torque_x_th", "torque_y_th", "torque_z_th")
IIWA_WRENCH_GPIO = "wrench"
WRENCH = tuple(f"{a}.{x}" for a in ("force", "torque") for x in "xyz")


def _iiwa_joint(cfg: dict, i: int, name: str, q0: float) -> list[str]:
    """A joint as lbr_ros2_control exports it: position and effort commands (bounded), position,
    velocity, effort and the FRI states (commanded_joint_position only with FRI client SDK 1.x), and
    the command guard's limits (min/max_position, max_velocity [rad, rad/s], max_torque [N·m])."""
    j, k = cfg["joints"], cfg["ros2_control"]["iiwa"]
    lo, hi = math.radians(float(j["position_min_deg"][i])), math.radians(float(j["position_max_deg"][i]))
    vmax, tmax = math.radians(float(j["velocity_max_deg_s"][i])), float(j["torque_max_nm"][i])
    out = [f"    <joint name={quoteattr(name)}>"]
    for ci, (cmin, cmax) in (("position", (lo, hi)), ("effort", (-tmax, tmax))):
        out += [f'      <command_interface name="{ci}">', "  " + _param("min", repr(cmin)),
                "  " + _param("max", repr(cmax)), "      </command_interface>"]
    out += ['      <state_interface name="position">', f'        <param name="initial_value">{q0!r}</param>',
            "      </state_interface>", '      <state_interface name="velocity"/>', '      <state_interface name="effort"/>']
    fri = (["commanded_joint_position"] if int(k["fri_client_sdk_major_version"]) == 1 else []) + [
        "commanded_torque", "external_torque", "ipo_joint_position"]
    out += [f'      <state_interface name="{s}"/>' for s in fri]
    out += [_param(n, repr(v)) for n, v in (("min_position", lo), ("max_position", hi), ("max_velocity", vmax),
                                             ("max_torque", tmax))]
    return out + ["    </joint>"]


def _iiwa_sensors(cfg: dict) -> list[str]:
    """auxiliary_sensor, estimated_ft_sensor (its parameters; the chain from the URDF's root link
    ``frames.base`` to its EE link ``frames.ee``, the frame the estimate is rotated into) and the
    GPIO ``wrench``, as lbr_description's lbr_system_interface.xacro writes them."""
    rc = cfg["ros2_control"]
    ft = dict(rc["iiwa"]["estimated_ft_sensor"], chain_root=cfg["frames"]["base"], chain_tip=cfg["frames"]["ee"])
    out = [f"    <sensor name={quoteattr(IIWA_AUXILIARY_SENSOR)}>"]
    out += [f'      <state_interface name="{s}"/>' for s in IIWA_AUXILIARY_STATES]
    out += ["    </sensor>", f"    <sensor name={quoteattr(rc['iiwa']['ft_sensor'])}>"]
    out += [_param(n, ft[n]) for n in IIWA_FT_PARAMS]
    if ft["enabled"]:      # the driver exports the six interfaces only when the estimate is enabled
        out += [f'      <state_interface name="{w}"/>' for w in WRENCH]
    out += ["    </sensor>", f"    <gpio name={quoteattr(IIWA_WRENCH_GPIO)}>"]
    out += [f'      <command_interface name="{w}"/>' for w in WRENCH]
    return out + ["    </gpio>"]


def ros2_control_xml(cfg: dict, hardware: str, model_file: Optional[str] = None) -> str:
    """The ``<ros2_control>`` tag (indented for a ``<robot>``) of the robot on ``hardware``;
    ValueError with :func:`hardware_refusal`'s sentence when it cannot."""
    why = hardware_refusal(cfg, hardware)
    if why:
        raise ValueError(why)
    rc = cfg["ros2_control"]
    plugin = PLUGINS.get(hardware) or rc[hardware]["plugin"]
    names = cfg["joints"]["names"]
    home = cfg["joints"]["named_positions_deg"].get("home") or [0.0] * len(names)
    out = [f'  <ros2_control name={quoteattr(cfg["robot"]["model"] + "_" + hardware)} type="system">',
           "    <hardware>", f"      <plugin>{plugin}</plugin>"]
    out += [_param(k, v) for k, v in _hardware_params(cfg, hardware, model_file)]
    out.append("    </hardware>")
    position = rc["position_command"] != "none"     # the simulated tags: the commands the controller claims
    for i, (name, q0) in enumerate(zip(names, home)):
        if hardware == "iiwa":
            out += _iiwa_joint(cfg, i, name, math.radians(float(q0)))
            continue
        out += [f"    <joint name={quoteattr(name)}>"] + (['      <command_interface name="position"/>'] if position else [])
        out += ['      <command_interface name="effort"/>',
                '      <state_interface name="position">',
                f'        <param name="initial_value">{math.radians(float(q0))!r}</param>',
                "      </state_interface>", '      <state_interface name="velocity"/>',
                '      <state_interface name="effort"/>', "    </joint>"]
    if hardware in SIMULATED:
        out.append(f"    <sensor name={quoteattr(rc['ft_sensor'])}>")
        for a in ("force", "torque"):
            for x in "xyz":      # GenericSystem's sensor states are NaN without an initial value
                out += [f'      <state_interface name="{a}.{x}">', '        <param name="initial_value">0.0</param>',
                        "      </state_interface>"]
        out.append("    </sensor>")
    elif hardware == "ur":       # ur_description's ur_sensors.xacro: the driver exports what the tag names
        out.append(f"    <sensor name={quoteattr(rc['ur']['ft_sensor'])}>")
        out += [f'      <state_interface name="{a}.{x}"/>' for a in ("force", "torque") for x in "xyz"]
        out.append("    </sensor>")
    elif hardware == "iiwa":
        out += _iiwa_sensors(cfg)
    if hardware == "mujoco":
        out.append(f"    <gpio name={quoteattr(rc['push_gpio'])}>")
        out += [f'      <command_interface name="force.{x}"/>' for x in "xyz"]
        out.append("    </gpio>")
    out.append("  </ros2_control>")
    return "\n".join(out) + "\n"


def description_tag(cfg: dict, model_file: Optional[str]) -> Optional[str]:
    """The ``<ros2_control>`` tag the ``robot_state`` node puts into ``/robot_description``, where
    the controller manager reads it: that of ``ros2_control.hardware`` (MuJoCo: on ``model_file``)
    when ``ros2_control.control`` is ``ros2_control``, else ``None`` (docs/hardware.md)."""
    sec = cfg["ros2_control"]
    if sec["control"] != "ros2_control":
        return None
    return ros2_control_xml(cfg, sec["hardware"], model_file)


def _interaction_values(cfg: dict, controller_values: dict) -> dict:
    """``interaction`` of ``controller_values`` with ``gravity_compensation`` as
    :func:`controller_gravity_compensation` (the hardware's compensation decides it)."""
    if "interaction" not in controller_values:
        return {}
    return {"interaction": {**controller_values["interaction"],
                            "gravity_compensation": controller_gravity_compensation(cfg)}}


def manager_parameters(cfg: dict, controller_values: dict, update_rate_hz: int) -> dict:
    """The ros2_control_node parameter file: the controller manager (update rate, the controller
    types) and the interaction controller's parameters ``controller_values`` (with
    ``interaction.gravity_compensation`` false where the hardware compensates gravity:
    :func:`controller_gravity_compensation`; the generated
    library's names: hri_runtime.parameter_library.gpl.parameter_values; ``ft_sensor.name`` is
    ``ros2_control.ft_sensor``, read where the hardware has it, ``ft_sensor.frame`` its frame
    ``ros2_control.ft_frame``); besides it the standard
    controllers: joint_state_broadcaster, effort_controller (a JointGroupEffortController on the
    same joints, for a switch) and push_controller (the MuJoCo system's scripted push)."""
    rc = cfg["ros2_control"]
    names = cfg["joints"]["names"]
    return {
        "controller_manager": {"ros__parameters": {
            "update_rate": int(update_rate_hz),
            rc["controller"]: {"type": "hri_controllers/InteractionController"},
            rc["joint_state_broadcaster"]: {"type": "joint_state_broadcaster/JointStateBroadcaster"},
            "effort_controller": {"type": "effort_controllers/JointGroupEffortController"},
            "push_controller": {"type": "forward_command_controller/MultiInterfaceForwardCommandController"},
        }},
        rc["controller"]: {"ros__parameters": {**controller_values, **_interaction_values(cfg, controller_values),
                                                  "ft_sensor": {"name": rc["ft_sensor"], "frame": rc["ft_frame"]}}},
        rc["joint_state_broadcaster"]: {"ros__parameters": {"joints": list(names),
                                                             "interfaces": ["position", "velocity", "effort"]}},
        "effort_controller": {"ros__parameters": {"joints": list(names)}},
        # the scripted EE push of the MuJoCo system (GPIO ros2_control.push_gpio, world frame, N)
        "push_controller": {"ros__parameters": {"joint": rc["push_gpio"],
                                                "interface_names": [f"force.{a}" for a in "xyz"]}},
    }
