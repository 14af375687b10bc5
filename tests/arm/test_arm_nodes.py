"""The arm nodes on the in-process runtime: VR packets over UDP and /ee_command drive the FR3."""
from __future__ import annotations

import socket

import numpy as np
import pytest



from hri_runtime import msgs  # noqa: E402
from hri_runtime.config.tree import load_robot_config  # noqa: E402
from hri_runtime.geometry import matrix_from_pose, pose_stamped_from_matrix  # noqa: E402
from hri_runtime.inproc import InprocContext  # noqa: E402
from hri_runtime.node import Node  # noqa: E402

from hri_arm_teleop.core import vr_packet as vp  # noqa: E402
from hri_arm_teleop.nodes.arm_teleop_node import ArmTeleopNode  # noqa: E402
from hri_arm_teleop.nodes.keyboard_node import KeyboardTeleopNode  # noqa: E402
from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode  # noqa: E402


class Probe(Node):
    def __init__(self, **kw):
        super().__init__("probe", **kw)
        self.ee, self.modes, self.js = [], [], []
        self.create_subscription("geometry_msgs/msg/PoseStamped", "/ee_pose", self.ee.append, qos=10)
        self.create_subscription("hri_interfaces/msg/TeleopMode", "/teleop/mode", lambda m: self.modes.append(m.mode), qos=10)
        self.create_subscription("sensor_msgs/msg/JointState", "/joint_states", self.js.append, qos=10)
        self.cmd = self.create_publisher("geometry_msgs/msg/PoseStamped", "/ee_command", qos=10)


def test_ee_command_moves_the_arm_then_stale_goes_to_hold():
    ctx = InprocContext()
    StopSupervisorNode(context=ctx)   # the stop authority (without it every actuator holds)
    cfg = load_robot_config("fr3", overrides=["teleop.output=joint"])   # today's IK path
    node = ArmTeleopNode(cfg=cfg, context=ctx, parameters={"teleop.vr.enabled": False})
    probe = Probe(context=ctx)
    ctx.spin_for(0.1)
    assert probe.ee and probe.js
    T0 = matrix_from_pose(probe.ee[-1])
    T1 = T0.copy()
    T1[2, 3] += 0.03
    for _ in range(10):  # 1 s of 10 Hz commands
        probe.cmd.publish(pose_stamped_from_matrix(T1, node.get_clock().now_s(), "fr3_base"))
        ctx.spin_for(0.1)
    ctx.spin_for(0.5)
    assert matrix_from_pose(probe.ee[-1])[2, 3] == pytest.approx(T1[2, 3], abs=0.002)
    assert probe.modes[:2] == ["HOLD", "TRACK"]  # HOLD until the first command
    ctx.spin_for(1.5)  # no command for > 1.0 s + horizon
    assert probe.modes[-1] == "HOLD"
    assert list(probe.js[-1].name) == cfg["joints"]["names"]


def test_vr_packets_over_udp_drive_the_clutch():
    ctx = InprocContext()
    StopSupervisorNode(context=ctx)   # the stop authority (without it every actuator holds)
    node = ArmTeleopNode(cfg=load_robot_config("fr3", overrides=["teleop.output=joint"]), context=ctx, parameters={"teleop.vr.port": 0})
    probe = Probe(context=ctx)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ctx.spin_for(0.1)
    z0 = matrix_from_pose(probe.ee[-1])[2, 3]
    for k in range(100):  # clutch held, hand rises 2 cm over 1 s (Unity +y)
        pkt = vp.ControllerPose(k, k * 0.01, (0.0, 1.2 + 0.02 * min(k / 80, 1.0), 0.4), (0, 0, 0, 1), clutch=True)
        tx.sendto(vp.encode(pkt), node.vr_address)
        ctx.spin_for(0.01)
    ctx.spin_for(0.3)
    assert matrix_from_pose(probe.ee[-1])[2, 3] - z0 == pytest.approx(0.02, abs=0.002)
    assert node.receiver.stats.accepted >= 95
    tx.close()


def test_keyboard_node_publishes_from_the_current_pose_at_10_hz():
    ctx = InprocContext()
    StopSupervisorNode(context=ctx)   # the stop authority (without it every actuator holds)
    cfg = load_robot_config("fr3", overrides=["teleop.output=joint"])
    ArmTeleopNode(cfg=cfg, context=ctx, parameters={"teleop.vr.enabled": False})
    kb = KeyboardTeleopNode(cfg=cfg, context=ctx, use_terminal=False)
    got = []
    probe = Probe(context=ctx)
    probe.create_subscription("geometry_msgs/msg/PoseStamped", "/ee_command", got.append, qos=10)
    ctx.spin_for(0.25)
    n0 = len(got)
    kb.feed(b"\x1b[A\x1b[A")  # two presses of Up: +16 mm along x
    ctx.spin_for(1.0)
    assert 9 <= len(got) - n0 <= 11
    p0 = matrix_from_pose(got[n0 - 1] if n0 else got[0])[:3, 3]
    np.testing.assert_allclose(matrix_from_pose(got[-1])[:3, 3] - p0, [0.016, 0, 0], atol=1e-9)


def test_out_of_workspace_command_shows_safety_hold_on_the_mode_topic():
    ctx = InprocContext()
    StopSupervisorNode(context=ctx)   # the stop authority (without it every actuator holds)
    cfg = load_robot_config("fr3", overrides=["safety.workspace_max_m=[0.85,0.6,0.62]", "teleop.output=joint"])
    node = ArmTeleopNode(cfg=cfg, context=ctx, parameters={"teleop.vr.enabled": False})
    probe = Probe(context=ctx)
    ctx.spin_for(0.1)
    T1 = matrix_from_pose(probe.ee[-1])
    T1[2, 3] = 0.70   # 8 cm above the box
    for _ in range(10):
        probe.cmd.publish(pose_stamped_from_matrix(T1, node.get_clock().now_s(), "fr3_base"))
        ctx.spin_for(0.1)
    assert probe.modes[-1] == "SAFETY_HOLD" and "TRACK" in probe.modes
    assert matrix_from_pose(probe.ee[-1])[2, 3] <= 0.62 + 0.002
    assert node.pipe.gate.flags.get("workspace", 0) >= 1


def test_a_busy_vr_port_is_one_clear_error():
    busy = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    busy.bind(("127.0.0.1", 0))
    try:
        with pytest.raises(RuntimeError, match="cannot receive VR packets .* teleop.vr.port"):
            ArmTeleopNode(cfg=load_robot_config("fr3"), context=InprocContext(),
                          parameters={"teleop.vr.port": busy.getsockname()[1]})
    finally:
        busy.close()


def test_vr_enabled_is_applied_at_run_time():
    """teleop.vr.enabled false closes the receiver (the port is free again), true opens it;
    teleop.vr.port itself is read-only (a restart changes it)."""
    from hri_runtime.parameter import Parameter

    ctx = InprocContext()
    node = ArmTeleopNode(cfg=load_robot_config("fr3"), context=ctx, parameters={"teleop.vr.port": 0})
    try:
        addr = node.vr_address
        assert node.receiver is not None and node.get_parameter("teleop.vr.enabled").value is True
        [r] = node.set_parameters([Parameter("teleop.vr.enabled", False)])
        assert r.successful and node.receiver is None
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(addr)                                  # released
        [r] = node.set_parameters([Parameter("teleop.vr.enabled", True)])
        assert r.successful and node.receiver is not None
        [r] = node.set_parameters([Parameter("teleop.vr.port", 1234)])
        assert not r.successful and "read-only" in r.reason
    finally:
        node.destroy_node()


def test_ros2_robot_reorders_joint_states_and_sends_one_point_trajectories():
    """The real-robot interface: a driver's joint state in any joint order (and with other joints)
    is read by name, its stamp to the nanosecond; a trajectory command reaches q_des after
    ``trajectory_time_from_start_s``."""
    import dataclasses

    from hri_arm_teleop.core.types import JointCommand
    from hri_arm_teleop.nodes.ros2_robot import Ros2Params, Ros2Robot

    cfg = load_robot_config("fr3")
    ros2 = dataclasses.replace(Ros2Params.from_config(cfg["teleop"]["robot"]["ros2"]), command_mode="trajectory")
    names = list(cfg["joints"]["names"])
    ctx = InprocContext()
    node = Node("robot_if", context=ctx)
    robot = Ros2Robot(node, names, ros2)
    got = []
    node.create_subscription("trajectory_msgs/msg/JointTrajectory", ros2.trajectory_topic, got.append, qos=10)
    driver = node.create_publisher("sensor_msgs/msg/JointState", ros2.joint_states_topic, qos=10)
    order = ["gripper"] + names[::-1]
    driver.publish(msgs.new("sensor_msgs/msg/JointState",
                            header=msgs.new("std_msgs/msg/Header", stamp=msgs.new(
                                "builtin_interfaces/msg/Time", sec=1, nanosec=999_999_999)),
                            name=order, position=np.arange(len(order), dtype=float),
                            velocity=np.zeros(len(order)), effort=np.zeros(0)))
    ctx.spin_for(0.01)
    st = robot.get_state()
    assert st.stamp == pytest.approx(1.999999999, abs=1e-12)
    np.testing.assert_array_equal(st.q, [order.index(n) for n in names])
    robot.send_command(JointCommand(0.0, np.full(len(names), 0.1)))
    ctx.spin_for(0.01)
    point = got[-1].points[0]
    assert list(got[-1].joint_names) == names and np.allclose(point.positions, 0.1)
    t = point.time_from_start
    assert t.sec + 1e-9 * t.nanosec == pytest.approx(ros2.trajectory_time_from_start_s, abs=1e-9)


@pytest.mark.parametrize("inp", ["gamepad", "keyboard"])
def test_gamepad_and_keyboard_inputs_open_no_vr_receiver(inp):
    ctx = InprocContext()
    node = ArmTeleopNode(cfg=load_robot_config("fr3", overrides=["teleop.output=joint"]), context=ctx,
                         parameters={"teleop.input": inp, "teleop.vr.port": 0})
    assert node.receiver is None and node.vr_address is None
    assert (node.gamepad is not None) == (inp == "gamepad")
    node.destroy_node()


def test_keyboard_input_follows_ee_command():
    """input:=keyboard: keyboard_teleop's /ee_command (run in a terminal of its own) drives the arm."""
    ctx = InprocContext()
    StopSupervisorNode(context=ctx)
    cfg = load_robot_config("fr3", overrides=["teleop.output=joint"])
    node = ArmTeleopNode(cfg=cfg, context=ctx, parameters={"teleop.input": "keyboard"})
    probe = Probe(context=ctx)
    ctx.spin_for(0.1)
    T1 = matrix_from_pose(probe.ee[-1])
    T1[2, 3] += 0.02
    for _ in range(10):          # keyboard_teleop's /ee_command (10 Hz)
        probe.cmd.publish(pose_stamped_from_matrix(T1, node.get_clock().now_s(), "fr3_base"))
        ctx.spin_for(0.1)
    ctx.spin_for(0.5)
    assert matrix_from_pose(probe.ee[-1])[2, 3] == pytest.approx(T1[2, 3], abs=0.002)
    node.destroy_node()


def test_gamepad_input_rejects_a_nan_joy_and_an_unknown_input_is_refused():
    from hri_runtime.parameter import ParameterError

    ctx = InprocContext()
    node = ArmTeleopNode(cfg=load_robot_config("fr3", overrides=["teleop.output=joint"]), context=ctx,
                         parameters={"teleop.input": "gamepad"})
    joy = Node("joy_probe", context=ctx).create_publisher("sensor_msgs/msg/Joy", "/joy", qos=10)
    joy.publish(msgs.new("sensor_msgs/msg/Joy", axes=[float("nan")] * 8, buttons=[1] * 11))
    ctx.spin_for(0.05)
    assert node.rejected_count("/joy", "non_finite") == 1 and node.gamepad.rejected == 1
    node.destroy_node()
    with pytest.raises(ParameterError, match="teleop.input"):
        ArmTeleopNode(cfg=load_robot_config("fr3"), context=InprocContext(), parameters={"teleop.input": "mouse"})
