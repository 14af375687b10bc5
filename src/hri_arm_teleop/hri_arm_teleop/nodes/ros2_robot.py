"""``RobotInterface`` for a real robot through ros2_control topics (on any hri_runtime backend).

State: the newest ``sensor_msgs/JointState`` on ``teleop.robot.ros2.joint_states_topic``, reordered
by joint name (a driver may publish the joints in any order, and other joints too). Command:
``command_mode: impedance`` -> ``std_msgs/Float64MultiArray`` q_des on
``impedance_command_topic`` (the joint impedance controller's command interface);
``trajectory`` -> a one-point ``trajectory_msgs/JointTrajectory`` reaching q_des after
``trajectory_time_from_start_s``. The EE pose is not known here (the controller computes FK).
"""
from __future__ import annotations

import threading
from typing import Optional

import numpy as np

from hri_arm_teleop.core.robot import RobotInterface, joints_of
from hri_arm_teleop.core.types import JointCommand, RobotState
from hri_runtime import msgs
from hri_runtime.geometry import seconds_from_time, time_from_seconds
from hri_arm_teleop.parameters_gen import TeleopRobotRos2Params


#: Config ``teleop.robot.ros2``, typed from its declaration.
Ros2Params = TeleopRobotRos2Params


class Ros2Robot(RobotInterface):
    def __init__(self, node, joint_names, ros2, fk=None):
        """``ros2``: config ``teleop.robot.ros2`` (typed, ``Ros2Params``)."""
        self.node = node
        self.joint_names = tuple(joint_names)
        self.cfg = ros2
        self.fk = fk
        self._lock = threading.Lock()
        self._state: Optional[RobotState] = None
        self.ignored_states = 0
        node.create_subscription("sensor_msgs/msg/JointState", ros2.joint_states_topic,
                                 self._on_joint_state, qos=10)
        if ros2.command_mode == "impedance":
            self._pub = node.create_publisher("std_msgs/msg/Float64MultiArray", ros2.impedance_command_topic, qos=10)
        else:
            self._pub = node.create_publisher("trajectory_msgs/msg/JointTrajectory", ros2.trajectory_topic, qos=10)

    def _on_joint_state(self, msg) -> None:
        joints = joints_of(msg.name, msg.position, msg.velocity, self.joint_names)
        if joints is None:            # not our joints (e.g. the gripper's), or a non-finite position
            self.ignored_states += 1
            return
        q, dq = joints
        stamp = seconds_from_time(msg.header.stamp)
        T = self.fk(q) if self.fk is not None else None
        with self._lock:
            self._state = RobotState(stamp, q, dq, T)

    @property
    def has_state(self) -> bool:
        with self._lock:
            return self._state is not None

    def get_state(self) -> RobotState:
        with self._lock:
            if self._state is None:
                raise RuntimeError(f"no joint state received yet on {self.cfg.joint_states_topic}")
            return self._state

    def send_command(self, cmd: JointCommand) -> None:
        q = [float(x) for x in cmd.q_des]
        if self.cfg.command_mode == "impedance":
            self._pub.publish(msgs.new("std_msgs/msg/Float64MultiArray", data=np.asarray(q)))
            return
        t = time_from_seconds(self.cfg.trajectory_time_from_start_s)   # same fields as a Duration
        point = msgs.new("trajectory_msgs/msg/JointTrajectoryPoint", positions=np.asarray(q),
                         time_from_start=msgs.new("builtin_interfaces/msg/Duration", sec=t.sec, nanosec=t.nanosec))
        self._pub.publish(msgs.new("trajectory_msgs/msg/JointTrajectory",
                                   joint_names=list(self.joint_names), points=[point]))
