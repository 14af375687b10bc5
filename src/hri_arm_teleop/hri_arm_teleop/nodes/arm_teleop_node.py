"""``arm_teleop``: the multi-rate teleop loop as a node (per input and per base tick:
:class:`hri_arm_teleop.core.cycle.TeleopCycle`; the arm: :mod:`hri_arm_teleop.nodes.robots`).

Output (``teleop.output``): ``cartesian`` (default) the EE pose reference on
``/interaction/reference`` for the ``interaction`` node (1 kHz torque control; the arm's state
from it), event-driven (``teleop.vr.event_driven``: each VR packet goes through clutch -> planner
-> reference on arrival); ``joint``: IK -> joint impedance, publishing ``/joint_states``, ``/ee_pose``
and ``/teleop/target_pose`` (the reference the IK tracks; none in HOLD). Always ``/teleop/mode``.
Inputs (``teleop.input``): ``vr`` controller pose packets (UDP, ``teleop.vr``;
:class:`hri_arm_teleop.vr_link.VrInput`); ``gamepad`` sensor_msgs/Joy on ``teleop.gamepad.topic``:
the clutch button + sticks as a virtual hand into the same clutch (core.gamepad.GamepadHand);
with every input, absolute targets on ``/ee_command`` (PoseStamped, e.g. ``keyboard_teleop``).
System stop (``hri_safety`` StopListener on ``/safety/stop``; docs/safety.md): while stopped, also before the
first heartbeat and once it is older than ``safety.stop.timeout_s``, the arm HOLDs at its current pose,
inputs are ignored and ``/teleop/mode`` reads ``STOP``.

Parameters: ``robot``, ``robot_id``, every ``teleop.*`` leaf (``teleop.vr.port``: 0 = any free port, once
bound the parameter reads it), ``frames.base``, ``joints.names`` (read-only), ``interaction.topics.*``,
``pulse.auth.*`` (docs/protocols.md "Authentication": off loopback without it, refused at startup, exit 2).
At run time: ``teleop.vr.enabled`` (closes / opens the receiver), ``teleop.clutch.position_scale``
and ``orientation_scale`` (from the next hand sample on). ``/diagnostics`` "hri_arm_teleop: vr
link": the link's health and counters (``rejected_<cause>``: ``bad_tag``, ``replayed``, ...).
"""
from __future__ import annotations

import logging
import threading
from typing import Optional

import numpy as np

from hri_arm_teleop.core.cycle import TeleopCycle
from hri_arm_teleop.nodes.robots import connect_robot
from hri_arm_teleop.parameters_gen import TeleopParams
from hri_arm_teleop.vr_link import VrInput
from hri_runtime import msgs
from hri_runtime.diagnostics import Updater
from hri_runtime.geometry import matrix_from_pose, pose_stamped_from_matrix, time_from_seconds
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config
from hri_runtime.qos import QOS_LATCHED
from hri_runtime.parameters_gen import FramesParams, JointsParams, RobotParams
from hri_safety.nodes.stop_listener import StopListener


class ArmTeleopNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("arm_teleop", **kw)
        self.cfg = declare_config(self, ("teleop", "pulse.auth", "frames.base", "joints.names", "interaction.topics"),
                                  cfg=cfg,
                                  on_set={"teleop.vr.enabled": lambda on: self.vr.set_enabled(on),
                                          "teleop.clutch.position_scale": self._on_scale("position_scale"),
                                          "teleop.clutch.orientation_scale": self._on_scale("orientation_scale")})
        t = self.params = TeleopParams.from_tree(self.cfg)     # the node's values
        self.log = logging.getLogger("hri_arm_teleop.arm_teleop")
        self.base_frame = FramesParams.from_tree(self.cfg).base
        self.joint_names = list(JointsParams.from_tree(self.cfg).names)
        self.clock = lambda: self.get_clock().now_s()
        self.output = t.output
        self._lock = threading.Lock()       # the VR reader thread and the base timer share the chain
        self.robot, self.pipe, self.lockstep = connect_robot(self, self.cfg, self.clock, self.log)
        self.gamepad = None
        if t.input == "gamepad":
            from hri_arm_teleop.core.gamepad import GamepadHand

            self.gamepad = GamepadHand(t.gamepad, self.clock())
            self.joy_sub = self.create_subscription("sensor_msgs/msg/Joy", t.gamepad.topic, self.on_joy, qos=10)
            self.get_logger().info(f"gamepad: Joy on {self.joy_sub.topic_name}, clutch button {t.gamepad.clutch_button}")
        if t.input == "keyboard":
            self.get_logger().info(f"input keyboard: targets on {t.topics.ee_command} from keyboard_teleop (own terminal)")
        self.cycle = TeleopCycle(self.pipe, self.clock, step=self.lockstep.step if self.lockstep else None,
                                 gamepad=self.gamepad,
                                 has_state=(lambda: True) if self.lockstep else (lambda: self.robot.has_state))
        self.vr = VrInput(self.cfg, self.clock, self._lock, logger=self.log, ready=lambda: self.robot.has_state,
                          event_driven=self.output == "cartesian" and t.vr.event_driven,
                          on_pose_now=self.cycle.on_hand_now, on_open=self._vr_opened)
        self.diag = Updater(self, RobotParams.from_tree(self.cfg).model, t.vr.diagnostics_period_s, timer=True,
                            prefix="hri_arm_teleop")
        self.diag.add("vr link", self.vr.diagnose)
        if t.vr.enabled and t.input == "vr":
            self.vr.open()
        self.create_subscription("geometry_msgs/msg/PoseStamped", t.topics.ee_command, self.on_ee_command, qos=10)
        self.pub_js = self.create_publisher("sensor_msgs/msg/JointState", t.topics.joint_states, qos=10)
        pose = lambda topic: self.create_publisher("geometry_msgs/msg/PoseStamped", topic, qos=10)  # noqa: E731
        self.pub_ee, self.pub_target = pose(t.topics.ee_pose), pose(t.topics.target_pose) if t.output == "joint" else None
        self.pub_mode = self.create_publisher("hri_interfaces/msg/TeleopMode", t.topics.mode, qos=QOS_LATCHED)
        self.stop = StopListener(self, on_change=self.on_stop)
        self.create_timer(self.pipe.params.base_period_s, self.tick)

    receiver = property(lambda self: self.vr.receiver, doc="the open VR receiver (None: closed)")
    vr_address = property(lambda self: self.vr.address, doc="the VR socket's address once bound")
    rejected_commands = property(lambda self: self.cycle.rejected_commands, doc="invalid /ee_command messages")

    def _vr_opened(self, address) -> None:
        if self.params.vr.port == 0:        # any free port: the parameter reads the one bound
            self.report_parameter_value("teleop.vr.port", int(address[1]))
        self.get_logger().info(f"VR controller poses on udp://{address[0]}:{address[1]}")

    def _on_scale(self, key: str):
        """``teleop.clutch.<key>`` at run time: from the next hand sample on (a stroke goes on)."""
        def apply(value: float) -> Optional[str]:
            with self._lock:
                self.pipe.clutch.set_scales(**{key: value})
        return apply

    def destroy_node(self):
        if self.vr.close():
            self.get_logger().info("VR receiver closed")
        return super().destroy_node()

    # ------------------------------------------------------------------ callbacks
    def on_joy(self, msg) -> None:
        with self._lock:
            if not self.cycle.on_joy(msg.axes, msg.buttons):
                self._reject(self.joy_sub.topic_name, "non_finite", "a Joy axis is NaN or infinite")

    def on_ee_command(self, msg) -> None:
        if self.cycle.on_ee_command(matrix_from_pose(msg)):
            self.get_logger().warning("invalid /ee_command (NaN or non-unit quaternion) ignored; counting")

    def on_stop(self, stopped: bool, reason: str) -> None:
        with self._lock:
            self.cycle.on_stop(stopped, reason)
            self._publish_mode()

    def tick(self) -> None:
        with self._lock:
            if self.cycle.tick(self.stop.stopped, self.stop.reason, self.vr.poll()):
                self.publish_state()

    def publish_state(self) -> None:
        if self.output == "joint":          # cartesian: the interaction node publishes the arm's state
            now, st = self.clock(), self.robot.get_state()
            self.pub_js.publish(msgs.new("sensor_msgs/msg/JointState", name=self.joint_names,
                                         header=msgs.new("std_msgs/msg/Header", stamp=time_from_seconds(now)),
                                         position=np.asarray(st.q, float), velocity=np.asarray(st.dq, float)))
            for pub, T in ((self.pub_ee, st.base_T_ee), (self.pub_target, self.pipe.target)):
                if T is not None:
                    pub.publish(pose_stamped_from_matrix(T, now, self.base_frame))
        self._publish_mode()

    def _publish_mode(self) -> None:
        change = self.cycle.mode_change()
        if change is not None:
            self.pub_mode.publish(msgs.new("hri_interfaces/msg/TeleopMode", mode=change[0], reason=change[1],
                                           stamp=time_from_seconds(self.get_clock().now_s())))


def main(argv=None):
    run_node(ArmTeleopNode, argv)
