"""``arm_teleop``: the multi-rate teleop loop as a node.

Output (config ``teleop.output``): ``cartesian`` (default) publishes the EE pose reference on
``/interaction/reference`` for the ``interaction`` node (1 kHz torque control), event-driven: a
reader thread takes each VR packet through clutch -> planner -> reference on arrival; the arm's
state comes from the interaction node (``/interaction/joint_states``, ``/ee_pose``). ``joint``:
IK -> joint impedance as described below.

Inputs: VR controller pose packets (UDP, ``teleop.vr``; validated, sequence-checked) and absolute
targets on ``/ee_command`` (PoseStamped, e.g. from ``keyboard_teleop``). Robot: the MuJoCo FR3
stepped by this node's base timer (``teleop.robot.interface: mujoco``; lockstep with the node
clock, so it runs the same on the in-process runtime with a fake clock), or a real robot through
ros2_control topics (``ros2``). Outputs: ``/joint_states``, ``/ee_pose``, ``/teleop/mode``
(hri_interfaces/TeleopMode).
System stop (``hri_safety`` StopListener on ``/safety/stop``; docs/safety.md): while stopped, also
before the first heartbeat and once it is older than ``safety.stop.timeout_s``, the arm HOLDs at
its current pose, inputs are ignored and ``/teleop/mode`` reads ``STOP``.

Parameters: ``robot`` (config name, default fr3), ``vr_enabled`` (bool), ``vr_port`` (int, 0 =
config value... -1 = any free port), ``output`` (cartesian | joint; "" = ``teleop.output``).
"""
from __future__ import annotations

import socket
import threading
from typing import Optional

import numpy as np

from hri_arm_teleop.lockstep import build_pipeline
from hri_arm_teleop.vr_link import ArmVrReceiver
from hri_runtime import msgs
from hri_runtime.config import load_robot_config
from hri_runtime.geometry import matrix_from_pose, pose_stamped_from_matrix, time_from_seconds
from hri_runtime.node import Node, run_node
from hri_safety.nodes.stop_listener import StopListener


def _value(param):
    """A declared parameter's value (rclpy returns a Parameter, other backends the value)."""
    return getattr(param, "value", param)


def _as_bool(v) -> bool:
    """Launch files pass strings: "false" must be False."""
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


class ArmTeleopNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("arm_teleop", **kw)
        robot_name = str(_value(self.declare_parameter("robot", "fr3")))
        vr_enabled = _as_bool(_value(self.declare_parameter("vr_enabled", True)))
        vr_port = int(_value(self.declare_parameter("vr_port", 0)))
        output = str(_value(self.declare_parameter("output", "")))
        self.cfg = cfg if cfg is not None else load_robot_config(robot_name)
        t = self.cfg["teleop"]
        self.base_frame = self.cfg["frames"]["base"]
        self.clock = lambda: self.get_clock().now_s()
        self.period_s = 1.0 / t["loop"]["base_rate_hz"]
        self.sim = None
        self.output = output or t["output"]
        if self.output not in ("cartesian", "joint"):
            raise ValueError(f"output must be cartesian or joint, got {self.output!r}")
        self._lock = threading.Lock()       # the VR reader thread and the base timer share the chain
        if self.output == "cartesian":
            from hri_arm_teleop.core.pipeline import ArmTeleopPipeline
            from hri_arm_teleop.core.safety import SafetyGate
            from hri_arm_teleop.nodes.interaction_robot import InteractionRobot

            js = None if t["robot"]["interface"] == "mujoco" else t["robot"]["ros2"]["joint_states_topic"]
            robot = InteractionRobot(self, self.cfg, joint_states_topic=js)
            chain_clock = self.clock
            gate = SafetyGate(self.cfg, fk=None,
                              control_period_s=t["loop"]["controller_decimation"] * self.period_s)
            self.robot = robot
            self.pipe = ArmTeleopPipeline(self.cfg, robot, None, chain_clock, safety=gate,
                                          logger=self._std_logger(), output="cartesian")
        elif t["robot"]["interface"] == "mujoco":
            from hri_arm_teleop.robot_mujoco import MujocoRobot

            ctrl_period = t["loop"]["controller_decimation"] * self.period_s
            robot = MujocoRobot.from_config(self.cfg, interpolation_s=ctrl_period)
            self.sim = robot.sim
            self._sim_offset = self.clock() - self.sim.time_s
            # the chain runs on the simulator's time (advanced one period per tick): a late or
            # bunched timer tick in a loaded process never looks like a speed/acceleration jump
            # to the planner and the safety checker (the robot sees exactly one period per tick)
            chain_clock = lambda: self.sim.time_s + self._sim_offset  # noqa: E731
        else:
            from hri_arm_teleop.nodes.ros2_robot import Ros2Robot

            robot = Ros2Robot(self, self.cfg["joints"]["names"], t["robot"]["ros2"])
            chain_clock = self.clock
        if self.output != "cartesian":
            self.robot = robot
            self.pipe = build_pipeline(self.cfg, robot, chain_clock, logger=self._std_logger())
            if t["robot"]["interface"] == "ros2":
                robot.fk = self.pipe.controller.ik.fk
        self.receiver = None
        if vr_enabled:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            port = t["vr"]["port"] if vr_port == 0 else (0 if vr_port < 0 else vr_port)
            try:
                sock.bind((t["vr"]["bind_address"], port))
            except OSError as exc:
                sock.close()
                raise RuntimeError(f"arm_teleop: cannot receive VR packets on udp://{t['vr']['bind_address']}:"
                                   f"{port} ({exc}); another receiver there? set the parameter vr_port "
                                   f"(-1: any free port) or teleop.vr.port") from exc
            self.vr_address = sock.getsockname()
            self.receiver = ArmVrReceiver(sock, self.clock, self.cfg, logger=self._std_logger())
            self._vr_sock = sock
            self.get_logger().info(f"VR controller poses on udp://{self.vr_address[0]}:{self.vr_address[1]}")
        self.create_subscription("geometry_msgs/msg/PoseStamped", t["topics"]["ee_command"],
                                 self.on_ee_command, qos=10)
        self.pub_js = self.create_publisher("sensor_msgs/msg/JointState", t["topics"]["joint_states"], qos=10)
        self.pub_ee = self.create_publisher("geometry_msgs/msg/PoseStamped", t["topics"]["ee_pose"], qos=10)
        self.pub_mode = self.create_publisher("hri_interfaces/msg/TeleopMode", t["topics"]["mode"], qos=10)
        self.rejected_commands = 0
        self._last_mode = None
        self._ticks = 0
        self.stop = StopListener(self, on_change=self.on_stop)
        self.create_timer(self.period_s, self.tick)
        self._reader = None
        self._closing = threading.Event()
        if self.output == "cartesian" and self.receiver is not None:
            # event-driven input (docs/arm-teleop.md "Rate structure"): each packet goes through
            # clutch -> planner -> /interaction/reference on arrival, not at the next base tick
            self._reader = threading.Thread(target=self._read_vr, name="arm_teleop_vr", daemon=True)
            self._reader.start()

    def _read_vr(self) -> None:
        import select

        sock = self._vr_sock
        while not self._closing.is_set():
            try:
                ready, _, _ = select.select([sock], [], [], 0.1)
            except (OSError, ValueError):
                return                      # socket closed
            if not ready:
                continue
            with self._lock:
                if not self.robot.has_state:
                    continue                # the packet stays queued until the arm is there
                for p in self.receiver.poll():
                    self.pipe.on_hand(p.position, p.quat_xyzw, p.clutch, source_stamp=p.stamp_s,
                                      valid=p.tracking_valid)
                    self.pipe.process_input()

    def destroy_node(self):
        self._closing.set()
        if self._reader is not None:
            self._reader.join(timeout=1.0)
        return super().destroy_node()

    def _std_logger(self):
        import logging

        return logging.getLogger(f"hri_arm_teleop.{self.get_name() if hasattr(self, 'get_name') else 'arm_teleop'}")

    # ------------------------------------------------------------------ callbacks
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
        if self.stop.stopped and self.pipe.system_stop is None:
            self.pipe.stop(self.stop.reason)     # before the first heartbeat (no on_change then)
        if self.receiver is not None and self._reader is None:
            for p in self.receiver.poll():
                self.pipe.on_hand(p.position, p.quat_xyzw, p.clutch, source_stamp=p.stamp_s,
                                  valid=p.tracking_valid)
        if self.sim is None and not self.robot.has_state:
            return  # a real robot that has not published its joint state yet
        io_tick = self.pipe.loop.tick_count % self.pipe.params.io_decimation == 0
        self.pipe.tick()
        if self.sim is not None:
            self.sim.advance(self.period_s)
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
            name=list(self.cfg["joints"]["names"]), position=np.asarray(st.q, float),
            velocity=np.asarray(st.dq, float), effort=np.zeros(0)))
        if st.base_T_ee is not None:
            self.pub_ee.publish(pose_stamped_from_matrix(st.base_T_ee, now, self.base_frame))
        self._publish_mode()

    def _publish_mode(self) -> None:
        mode = self.pipe.mode
        if mode != self._last_mode:
            self._last_mode = mode
            reason = self.pipe.system_stop if mode == "STOP" else (self.pipe.safety_hold or "")
            self.pub_mode.publish(msgs.new("hri_interfaces/msg/TeleopMode", mode=mode, reason=str(reason or ""),
                                           stamp=time_from_seconds(self.get_clock().now_s())))


def main(argv=None):
    run_node(ArmTeleopNode, argv)
