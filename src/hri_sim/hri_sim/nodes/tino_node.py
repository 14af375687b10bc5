"""``tino_sim``: the MuJoCo Tino (hri_sim.tino) as a node, stepped in lockstep with the node clock.

Subscribes ``atomic.topics.leg_rpm`` (std_msgs/Float64, motor RPM), ``cmd_vel`` (Twist) and
``head`` (geometry_msgs/Vector3: x pitch, y pan, z tilt, rad; the model's joint ranges bound it) and
``audio`` (Vector3: x volume, y orientation rad; kept in ``sim.audio``: no speaker in the model), the
topics the atomic node's serial driver sends to the MCU; publishes ``leg_state``
(sensor_msgs/JointState: ``leg`` position = ticks, velocity = measured motor RPM;
``leg_home_switch`` position 0/1) and ``odom`` (nav_msgs/Odometry, frame ``odom`` ->
``{robot}_base``) every ``atomic.node.period_s``; ``joint_states`` (sensor_msgs/JointState, every
joint of ``joints.names`` with position, velocity, effort) at ``atomic.sim.joint_state_rate_hz``.
A non-finite command is rejected, counted and logged; the last one is kept.
Parameters: ``robot`` (default tino), ``robot_id`` and the ``atomic.sim`` and ``atomic.topics``
keys (declared in hri_atomic_motion/parameters.yaml), ``joints.names``.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
from hri_runtime import msgs
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config, params_type   # atomic.*: hri_atomic_motion's (it depends on us)
from hri_runtime.parameters_gen import FramesParams
from hri_runtime.geometry import time_from_seconds

from hri_sim.tino import TINO_XML, TinoSim, TinoSimParams


class TinoSimNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("tino_sim", **kw)
        self.cfg = declare_config(self, ("atomic.sim", "atomic.topics", "atomic.node.period_s", "frames.base",
                                                  "joints.names"), cfg=cfg,
                                  robot="tino")
        T = self.topics = params_type("atomic.topics").from_tree(self.cfg)
        period_s = params_type("atomic.node").from_tree(self.cfg).period_s
        self.base_frame = FramesParams.from_tree(self.cfg).base
        self.sim = TinoSim(TinoSimParams.from_tree(self.cfg))
        self._offset = self.get_clock().now_s() - self.sim.t_s
        self.pub_leg = self.create_publisher("sensor_msgs/msg/JointState", T.leg_state, qos=10)
        self.pub_odom = self.create_publisher("nav_msgs/msg/Odometry", T.odom, qos=10)
        self.create_subscription("std_msgs/msg/Float64", T.leg_rpm, self.on_rpm, qos=10)
        self.create_subscription("geometry_msgs/msg/Twist", T.cmd_vel, self.on_twist, qos=10)
        self.create_subscription("geometry_msgs/msg/Vector3", T.head, self.on_head, qos=10)
        self.create_subscription("geometry_msgs/msg/Vector3", T.audio, self.on_audio, qos=10)
        self.joint_names = list(self.cfg["joints"]["names"] or [])
        self.pub_js = self.create_publisher("sensor_msgs/msg/JointState", T.joint_states, qos=10)
        self.create_timer(period_s, self.tick)
        self.create_timer(1.0 / self.sim.p.joint_state_rate_hz, self.publish_joint_states)
        self.get_logger().info(f"simulating {TINO_XML} every {period_s} s")

    def _ok(self, topic: str, *vals) -> bool:
        """Finite values; else counted in the node's ``rejected[(topic, "non_finite")]`` and logged
        (rate limited)."""
        if all(math.isfinite(float(v)) for v in vals):
            return True
        self._reject(topic, "non_finite", f"non-finite command rejected: {vals}")
        return False

    def on_rpm(self, msg) -> None:
        if self._ok(self.topics.leg_rpm, msg.data):
            self.sim.set_leg_rpm(float(msg.data))

    def on_twist(self, msg) -> None:
        if self._ok(self.topics.cmd_vel, msg.linear.x, msg.angular.z):
            self.sim.set_twist(float(msg.linear.x), float(msg.angular.z))

    def on_head(self, msg) -> None:
        if self._ok(self.topics.head, msg.x, msg.y, msg.z):
            self.sim.set_head(float(msg.y), float(msg.z), float(msg.x))

    def on_audio(self, msg) -> None:
        if self._ok(self.topics.audio, msg.x, msg.y):
            self.sim.set_audio(float(msg.x), float(msg.y))

    def _advance(self) -> float:
        """Step the simulation up to the node clock (lockstep); the node time."""
        t = self.get_clock().now_s()
        self.sim.advance_to(t - self._offset)
        return t

    def publish_joint_states(self) -> None:
        t = self._advance()
        q, dq, tau = self.sim.joint_state(self.joint_names)
        self.pub_js.publish(msgs.new(
            "sensor_msgs/msg/JointState",
            header=msgs.new("std_msgs/msg/Header", stamp=time_from_seconds(t), frame_id=""),
            name=self.joint_names, position=q, velocity=dq, effort=tau))

    def tick(self) -> None:
        t = self._advance()
        stamp = time_from_seconds(t)
        self.pub_leg.publish(msgs.new(
            "sensor_msgs/msg/JointState", header=msgs.new("std_msgs/msg/Header", stamp=stamp, frame_id=""),
            name=["leg", "leg_home_switch"],
            position=np.array([float(self.sim.leg_ticks()), float(self.sim.home_pressed())]),
            velocity=np.array([self.sim.leg_motor_rpm(), 0.0]), effort=np.zeros(0)))
        x, y, yaw = self.sim.base_pose()
        v, w = self.sim.base_twist()
        V3, P = "geometry_msgs/msg/Vector3", "geometry_msgs/msg/Point"
        self.pub_odom.publish(msgs.new(
            "nav_msgs/msg/Odometry", header=msgs.new("std_msgs/msg/Header", stamp=stamp, frame_id="odom"),
            child_frame_id=self.base_frame,
            pose=msgs.new("geometry_msgs/msg/PoseWithCovariance", covariance=np.zeros(36), pose=msgs.new(
                "geometry_msgs/msg/Pose", position=msgs.new(P, x=x, y=y, z=self.sim.base_height()),
                orientation=msgs.new("geometry_msgs/msg/Quaternion", z=math.sin(yaw / 2), w=math.cos(yaw / 2)))),
            twist=msgs.new("geometry_msgs/msg/TwistWithCovariance", covariance=np.zeros(36), twist=msgs.new(
                "geometry_msgs/msg/Twist", linear=msgs.new(V3, x=v), angular=msgs.new(V3, z=w)))))


def main(argv=None):
    run_node(TinoSimNode, argv)
