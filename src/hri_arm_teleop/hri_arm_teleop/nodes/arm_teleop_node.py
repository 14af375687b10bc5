"""``arm_teleop``: the multi-rate teleop loop as a node.

Output (``teleop.output``): ``cartesian`` (default) publishes the EE pose reference on
``/interaction/reference`` for the ``interaction`` node (1 kHz torque control), event-driven
(``teleop.vr.event_driven``): a reader thread takes each VR packet through clutch -> planner ->
reference on arrival; the arm's
state comes from the interaction node (``/interaction/joint_states``, ``/ee_pose``). ``joint``:
IK -> joint impedance as described below.

Inputs (``teleop.input``): ``vr`` VR controller pose packets (UDP, ``teleop.vr``; validated,
sequence-checked); ``gamepad`` sensor_msgs/Joy on ``teleop.gamepad.topic`` (the joy node, or
hri_pulse's joy_evdev): the clutch button + sticks as a virtual hand into the same clutch
(core.gamepad.GamepadHand, advanced every base tick; a Joy with a NaN axis is rejected and
counted); with every input, absolute targets on ``/ee_command`` (PoseStamped, e.g. from
``keyboard_teleop``, ``keyboard``). The VR receiver opens only for ``vr``. Robot: the MuJoCo FR3
in lockstep with this node's base timer (``teleop.robot.interface: mujoco``; the chain runs on
simulated time advanced one base period per tick, so it runs the same on the in-process runtime
with a fake clock), or a real robot through ros2_control topics (``ros2``). Outputs:
``/joint_states``, ``/ee_pose``, ``/teleop/mode`` (hri_interfaces/TeleopMode).
System stop (``hri_safety`` StopListener on ``/safety/stop``; docs/safety.md): while stopped, also
before the first heartbeat and once it is older than ``safety.stop.timeout_s``, the arm HOLDs at
its current pose, inputs are ignored and ``/teleop/mode`` reads ``STOP``.

Parameters: ``robot``, ``robot_id``, every ``teleop.*`` leaf (declared from
``hri_arm_teleop/parameters.yaml``; e.g. ``teleop.output``, ``teleop.vr.port``: 0 = any free
port; once bound, the parameter reads the port), the robot description it reads (``frames.base``, ``joints.names``, read-only) and
``interaction.topics.*``, ``pulse.auth.*`` (the headset links' authentication, shared with
hri_pulse: docs/protocols.md "Authentication"; a ``teleop.vr.bind_address`` off loopback without it
is refused at startup, one line, exit 2). ``teleop.vr.enabled`` is applied at run time: false
closes the VR receiver, true opens it; so are ``teleop.clutch.position_scale`` and
``orientation_scale`` (the teleop scale: from the next hand sample on, an engaged stroke going on
from where it is). ``/diagnostics`` "hri_arm_teleop: vr link": the link's
health and counters (``rejected_<cause>``: forged ``bad_tag``, unknown ``bad_key_id``, ``replayed``, ...).
"""
from __future__ import annotations

import logging
import threading
from typing import Optional

import numpy as np

from hri_arm_teleop.lockstep import build_pipeline, sim_lockstep
from hri_arm_teleop.parameters_gen import TeleopParams
from hri_arm_teleop.vr_link import ArmVrReceiver, VrReader, bind_vr_receiver
from hri_runtime import msgs
from hri_runtime.clock import SimClock
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
                                  on_set={"teleop.vr.enabled": self._on_vr_enabled,
                                          "teleop.clutch.position_scale": self._on_scale("position_scale"),
                                          "teleop.clutch.orientation_scale": self._on_scale("orientation_scale")})
        t = self.params = TeleopParams.from_tree(self.cfg)     # the node's values
        self.log = logging.getLogger("hri_arm_teleop.arm_teleop")
        self.base_frame = FramesParams.from_tree(self.cfg).base
        self.joint_names = list(JointsParams.from_tree(self.cfg).names)
        self.clock = lambda: self.get_clock().now_s()
        self.output = t.output
        self.lockstep = None                # the simulated arm (joint output, interface mujoco)
        self._lock = threading.Lock()       # the VR reader thread and the base timer share the chain
        if self.output == "cartesian":
            from hri_arm_teleop.nodes.interaction_robot import InteractionRobot

            js = None if t.robot.interface == "mujoco" else t.robot.ros2.joint_states_topic
            self.robot = InteractionRobot(self, self.cfg, joint_states_topic=js)
            self.pipe = build_pipeline(self.cfg, self.robot, self.clock, self.log, output="cartesian")
        elif t.robot.interface == "mujoco":
            from hri_arm_teleop.sim_robot import SimRobot

            self.robot = SimRobot.from_config(self.cfg)
            # the chain runs on simulated time advanced one period per tick: a late or bunched
            # timer tick in a loaded process never looks like a speed/acceleration jump to the
            # planner and the safety checker (the robot sees exactly one period per tick)
            self.pipe = build_pipeline(self.cfg, self.robot, SimClock(self.clock()), self.log, output="joint")
            self.lockstep = sim_lockstep(self.pipe, self.robot)
        else:
            from hri_arm_teleop.nodes.ros2_robot import Ros2Robot

            self.robot = Ros2Robot(self, self.joint_names, t.robot.ros2)
            self.pipe = build_pipeline(self.cfg, self.robot, self.clock, self.log, output="joint")
            self.robot.fk = self.pipe.controller.ik.fk
        self.receiver: Optional[ArmVrReceiver] = None
        # in-process context (simulated clock): no reader thread; the lockstep runner's script
        # hands the packets it sent over with receive_vr (event-driven all the same)
        self.lockstep_vr = getattr(self.context, "kind", "") == "inproc"
        self.vr_address = None
        self._reader: Optional[VrReader] = None
        # /diagnostics "hri_arm_teleop: vr link": link health and every counter (dropped packets by cause)
        self.diag = Updater(self, RobotParams.from_tree(self.cfg).model, t.vr.diagnostics_period_s, timer=True,
                            prefix="hri_arm_teleop")
        self.diag.add("vr link", self._diagnose)
        self.gamepad = None
        if t.input == "gamepad":
            from hri_arm_teleop.core.gamepad import GamepadHand

            self.gamepad = GamepadHand(t.gamepad, self.clock())
            self.joy_sub = self.create_subscription("sensor_msgs/msg/Joy", t.gamepad.topic, self.on_joy, qos=10)
            self.get_logger().info(f"gamepad: Joy on {self.joy_sub.topic_name}, clutch button {t.gamepad.clutch_button}")
        if t.input == "keyboard":
            self.get_logger().info(f"input keyboard: absolute targets on {t.topics.ee_command}; run the keyboard in a "
                                   "terminal: ros2 run hri_arm_teleop keyboard_teleop (or hri run ...)")
        if t.vr.enabled and t.input == "vr":
            self._open_vr()
        self.create_subscription("geometry_msgs/msg/PoseStamped", t.topics.ee_command, self.on_ee_command, qos=10)
        self.pub_js = self.create_publisher("sensor_msgs/msg/JointState", t.topics.joint_states, qos=10)
        self.pub_ee = self.create_publisher("geometry_msgs/msg/PoseStamped", t.topics.ee_pose, qos=10)
        self.pub_mode = self.create_publisher("hri_interfaces/msg/TeleopMode", t.topics.mode, qos=QOS_LATCHED)
        self.rejected_commands = 0
        self._last_mode = None
        self.stop = StopListener(self, on_change=self.on_stop)
        self.create_timer(self.pipe.params.base_period_s, self.tick)

    # ------------------------------------------------------------------ VR receiver
    def _open_vr(self) -> None:
        """Bind the VR socket (``teleop.vr``; errors: :func:`hri_arm_teleop.vr_link.bind_vr_receiver`)
        and start receiving: on the base tick, or event-driven by a reader thread (cartesian output)."""
        vr = self.params.vr
        receiver = bind_vr_receiver(self.cfg, self.clock, logger=self.log)
        self.vr_address = receiver.address
        if vr.port == 0:                    # any free port: the parameter reads the one bound (hri arm-emulate --namespace)
            self.report_parameter_value("teleop.vr.port", int(self.vr_address[1]))
        with self._lock:
            self.receiver = receiver
        if self.output == "cartesian" and vr.event_driven and not self.lockstep_vr:
            # each packet goes through clutch -> planner -> /interaction/reference on arrival
            self._reader = VrReader(receiver, self._lock, lambda: self.robot.has_state, self._on_hand_now,
                                    name="arm_teleop_vr").start()
        self.get_logger().info(f"VR controller poses on udp://{self.vr_address[0]}:{self.vr_address[1]}")

    def _close_vr(self) -> None:
        if self._reader is not None:
            self._reader.stop()
            self._reader = None
        with self._lock:
            receiver, self.receiver = self.receiver, None
        if receiver is not None:
            receiver.close()
            self.get_logger().info("VR receiver closed")

    def _on_scale(self, key: str):
        """The applier of ``teleop.clutch.<key>`` (a scale) set at run time: the clutch maps the
        hand with it from the next packet on (an engaged stroke goes on from where it is)."""
        def apply(value: float) -> Optional[str]:
            with self._lock:
                self.pipe.clutch.set_scales(**{key: value})
            return None
        return apply

    def _on_vr_enabled(self, enabled: bool) -> Optional[str]:
        """``teleop.vr.enabled`` set at run time: open or close the receiver (the reason if the
        port cannot be bound; the parameter keeps its value then)."""
        if enabled and self.receiver is None:
            try:
                self._open_vr()
            except (RuntimeError, ValueError) as exc:
                return str(exc)
        if not enabled and self.receiver is not None:
            self._close_vr()
        return None

    def _diagnose(self, stat) -> None:
        with self._lock:
            if self.receiver is None:
                stat.summary(0, "VR receiver closed (teleop.vr.enabled false)")
                return
            self.receiver.diagnose(stat)

    def destroy_node(self):
        self._close_vr()
        return super().destroy_node()

    # ------------------------------------------------------------------ callbacks
    def _on_hand(self, p) -> None:
        self.pipe.on_hand(p.position, p.quat_xyzw, p.clutch, source_stamp=p.stamp_s, valid=p.tracking_valid)

    def _on_hand_now(self, p) -> None:
        self._on_hand(p)
        self.pipe.process_input()
        self._publish_mode()

    def receive_vr(self, expected: int, timeout_s: float) -> int:
        """Lockstep on an in-process context: take the ``expected`` packets just sent on loopback
        (waiting at most ``timeout_s`` of wall time), each handled on arrival as the reader thread
        does (``teleop.vr.event_driven``; before the arm's first state only the hand is kept).
        Returns how many did not arrive."""
        with self._lock:
            if self.receiver is None:
                return expected
            on_pose = self._on_hand_now if (self._reader is None and self.output == "cartesian"
                                            and self.params.vr.event_driven and self.robot.has_state) \
                else self._on_hand
            return self.receiver.receive(expected, timeout_s, on_pose)

    def on_joy(self, msg) -> None:
        with self._lock:
            if not self.gamepad.on_joy(list(msg.axes), list(msg.buttons), self.clock()):
                self._reject(self.joy_sub.topic_name, "non_finite", "a Joy axis is NaN or infinite")

    def on_ee_command(self, msg) -> None:
        T = matrix_from_pose(msg)
        if T is None:
            self.rejected_commands += 1
            if self.rejected_commands == 1:
                self.get_logger().warning("invalid /ee_command (NaN or non-unit quaternion) ignored; counting")
            return
        self.pipe.submit_ee_command(T)

    def on_stop(self, stopped: bool, reason: str) -> None:
        with self._lock:
            if stopped:
                self.pipe.stop(reason)
            else:
                self.pipe.release()
            self._publish_mode()

    def tick(self) -> None:
        with self._lock:
            self._tick()

    def _tick(self) -> None:
        if self.stop.stopped:
            self.pipe.stop(self.stop.reason)     # also before the first heartbeat (no on_change then)
        if self.receiver is not None and self._reader is None:
            for p in self.receiver.poll():
                self._on_hand(p)
        if self.gamepad is not None:
            now = self.clock()
            base_T_hand, clutch = self.gamepad.step(now)
            self.pipe.on_hand_pose(base_T_hand, clutch, source_stamp=now)
        if self.lockstep is None and not self.robot.has_state:
            return  # a real robot that has not published its joint state yet
        if self.output == "cartesian":
            self.pipe.tick()
            self._publish_mode()            # on change, at once (also after an event-driven packet)
            return
        io_tick = self.pipe.loop.tick_count % self.pipe.params.io_decimation == 0
        if self.lockstep is not None:
            self.lockstep.step()
        else:
            self.pipe.tick()
        if io_tick:
            self.publish_state()

    def publish_state(self) -> None:
        if self.output == "cartesian":      # the interaction node publishes the arm's state
            self._publish_mode()
            return
        now = self.clock()
        st = self.robot.get_state()
        self.pub_js.publish(msgs.new(
            "sensor_msgs/msg/JointState",
            header=msgs.new("std_msgs/msg/Header", frame_id="", stamp=time_from_seconds(now)),
            name=self.joint_names, position=np.asarray(st.q, float),
            velocity=np.asarray(st.dq, float), effort=np.zeros(0)))
        if st.base_T_ee is not None:
            self.pub_ee.publish(pose_stamped_from_matrix(st.base_T_ee, now, self.base_frame))
        self._publish_mode()

    def _publish_mode(self) -> None:
        mode, reason = self.pipe.mode, self.pipe.mode_reason
        if (mode, reason) != self._last_mode:
            self._last_mode = (mode, reason)
            self.pub_mode.publish(msgs.new("hri_interfaces/msg/TeleopMode", mode=mode, reason=reason,
                                           stamp=time_from_seconds(self.get_clock().now_s())))


def main(argv=None):
    run_node(ArmTeleopNode, argv)
