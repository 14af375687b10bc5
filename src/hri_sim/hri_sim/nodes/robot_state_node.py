"""``robot_state``: /robot_description, /tf_static and /tf of a robot, as robot_state_publisher does
(topics, frames, meshes, Tino's odometry: docs/ros2-interop.md "Robot description and TF").

Wiring only; the logic is :mod:`hri_sim.core.urdf` (URDF of the MuJoCo model the simulation
loads) and :mod:`hri_sim.core.robot_state` (URDF -> transforms). A joint state with mismatched
lengths, a NaN position or no known joint, and a bad reference / modified pose, are rejected and
counted (the node's ``rejected_count``, one log line), never published. With
``ros2_control.control: ros2_control`` the URDF has the ``<ros2_control>`` tag, published after the
model file it names is written (docs/hardware.md).
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from hri_runtime import msgs
from hri_runtime.geometry import matrix_from_pose, time_from_seconds
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config
from hri_runtime.qos import QOS_LATCHED

from ..core.robot_state import UrdfTree, transform_tuple
from ..core.urdf import mesh_uri_function, urdf_from_mujoco


def transform_stamped(parent: str, child: str, t: np.ndarray, stamp):
    (x, y, z), (qx, qy, qz, qw) = transform_tuple(t)
    return msgs.new("geometry_msgs/msg/TransformStamped",
                    header=msgs.new("std_msgs/msg/Header", frame_id=parent, stamp=stamp), child_frame_id=child,
                    transform=msgs.new("geometry_msgs/msg/Transform",
                                       translation=msgs.new("geometry_msgs/msg/Vector3", x=x, y=y, z=z),
                                       rotation=msgs.new("geometry_msgs/msg/Quaternion", x=qx, y=qy, z=qz, w=qw)))


class RobotStateNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("robot_state", **kw)
        from ..core.ros2_control import description_tag
        from ..models import arm_asset_root, load_arm, write_ros2_control_model

        self.cfg = declare_config(self, ("robot_state", "frames", "joints.names", "joints.velocity_max_deg_s",
                                         "joints.torque_max_nm", "ros2_control"), cfg=cfg)
        sec = self.cfg["robot_state"]
        robot = self.cfg["robot"]["model"]
        kind = self.cfg["robot"].get("kind")
        j = self.cfg["joints"]
        if not j.get("names"):
            raise ValueError(f"robot_state: {robot} has no joints.names; no URDF is generated for it")
        movable = {n: (math.radians(v), float(e)) for n, v, e in
                   zip(j["names"], j["velocity_max_deg_s"], j["torque_max_nm"])}
        if kind == "social":
            from ..tino import TinoSimParams, tino_model

            self.cfg = declare_config(self, ("atomic.sim", "atomic.leg", "atomic.topics.odom"), cfg=self.cfg)
            self.urdf = urdf_from_mujoco(tino_model(TinoSimParams.from_tree(self.cfg)), robot_name=robot,
                                         root_link=self.cfg["frames"]["base"], root_body="base", ee_site=None,
                                         ee_link=self.cfg["frames"]["ee"], movable=movable, mesh_uri=str)
        else:   # control:=ros2_control: the tag names the model file, written here before it is published
            tag = description_tag(self.cfg, str(write_ros2_control_model(self.cfg))
                                  if self.cfg["ros2_control"]["control"] == "ros2_control" else None)
            self.urdf = urdf_from_mujoco(load_arm(robot, actuation="torque"), robot_name=robot,
                                         root_link=self.cfg["frames"]["base"], ee_site=sec["ee_site"],
                                         ee_link=self.cfg["frames"]["ee"], movable=movable,
                                         mesh_uri=mesh_uri_function(robot, sec["mesh_uri"], arm_asset_root(robot)),
                                         ros2_control=tag)
        self.tree, self.prefix, t = UrdfTree.parse(self.urdf), str(sec["frame_prefix"]), sec["topics"]
        self.js_topic = t["joint_states"]
        self.desc_pub = self.create_publisher("std_msgs/msg/String", t["robot_description"], qos=QOS_LATCHED)
        try:
            self.static_pub = self.create_publisher("tf2_msgs/msg/TFMessage", t["tf_static"], qos=QOS_LATCHED)
            self.tf_pub = self.create_publisher("tf2_msgs/msg/TFMessage", t["tf"], qos=int(sec["tf_queue_depth"]))
        except ValueError as exc:      # rclpy without tf2_msgs (e.g. the PyPI Jazzy of make ros2-ci)
            self.static_pub = self.tf_pub = None
            self.get_logger().warning(f"no /tf and /tf_static (install ROS 2's tf2_msgs): {exc}")
        self.create_subscription("sensor_msgs/msg/JointState", t["joint_states"], self.on_joint_state, qos=10)
        if kind == "social":        # the planar base: odom -> base from the simulated base pose
            self.odom_topic = self.cfg["atomic"]["topics"]["odom"]
            self.create_subscription("nav_msgs/msg/Odometry", self.odom_topic, self.on_odom, qos=10)
        else:
            # the interaction loop's own topic names (declared once, with their access classes, in
            # hri_interaction's parameters.yaml): the reference and the admittance frame
            it = self.cfg["interaction"]["topics"]
            for topic, frame in ((it["reference"], sec["frames"]["reference"]),
                                 (it["modified_pose"], sec["frames"]["admittance"])):
                self.create_subscription("geometry_msgs/msg/PoseStamped", topic,
                                         lambda msg, f=frame: self.on_pose(msg, f), qos=10)
        self.desc_pub.publish(msgs.new("std_msgs/msg/String", data=self.urdf))
        if self.tf_pub is None:
            return
        stamp = time_from_seconds(self.get_clock().now_s())
        self.static_pub.publish(msgs.new("tf2_msgs/msg/TFMessage", transforms=[
            self._transform(p, c, tr, stamp) for p, c, tr in self.tree.static_transforms()]))

    def _transform(self, parent: str, child: str, t: np.ndarray, stamp):
        return transform_stamped(self.prefix + parent, self.prefix + child, t, stamp)

    def on_joint_state(self, msg) -> None:
        positions, refused = self.tree.joint_positions(msg.name, msg.position)
        if refused:
            self._reject(self.js_topic, *refused)
            return
        if self.tf_pub is None:
            return
        self.tf_pub.publish(msgs.new("tf2_msgs/msg/TFMessage", transforms=[
            self._transform(p, c, tr, msg.header.stamp) for p, c, tr in self.tree.moving_transforms(positions)]))

    def on_pose(self, msg, child: str) -> None:
        t = matrix_from_pose(msg)
        if t is None or not msg.header.frame_id:
            self._reject(f"pose of {child}", "bad_pose", "not a finite rigid transform, or no frame_id")
            return
        if self.tf_pub is None:
            return
        self.tf_pub.publish(msgs.new("tf2_msgs/msg/TFMessage", transforms=[
            self._transform(msg.header.frame_id, child, t, msg.header.stamp)]))

    def on_odom(self, msg) -> None:
        t = matrix_from_pose(msg.pose)
        if t is None or not msg.header.frame_id or not msg.child_frame_id:
            self._reject(self.odom_topic, "bad_pose", "not a finite rigid transform, or no frame ids")
            return
        if self.tf_pub is None:
            return
        self.tf_pub.publish(msgs.new("tf2_msgs/msg/TFMessage", transforms=[
            self._transform(msg.header.frame_id, msg.child_frame_id, t, msg.header.stamp)]))


def main(argv=None):
    run_node(RobotStateNode, argv)


if __name__ == "__main__":
    main()
