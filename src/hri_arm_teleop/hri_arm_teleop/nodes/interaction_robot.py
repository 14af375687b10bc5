"""``RobotInterface`` of the cartesian output (``teleop.output: cartesian``) over topics.

State: the interaction node's joint state (``interaction.topics.sim_joint_states``, or the
robot's ``teleop.robot.ros2.joint_states_topic`` on hardware) and measured EE pose
(``teleop.topics.ee_pose``). Command: ``send_pose`` publishes the pose reference
(``geometry_msgs/PoseStamped``, base frame) on ``interaction.topics.reference`` at once: the
interaction loop's reference governor ramps it at 1 kHz.
"""
from __future__ import annotations

import threading
from typing import Optional

import numpy as np

from hri_arm_teleop.core.robot import RobotInterface, joints_of
from hri_arm_teleop.core.types import JointCommand, PoseCommand, RobotState
from hri_arm_teleop.parameters_gen import TeleopTopicsParams
from hri_interaction.parameters_gen import InteractionTopicsParams
from hri_runtime.parameters_gen import FramesParams, JointsParams
from hri_runtime.geometry import matrix_from_pose, pose_stamped_from_matrix, seconds_from_time


class InteractionRobot(RobotInterface):
    def __init__(self, node, cfg: dict, joint_states_topic: Optional[str] = None):
        self.node = node
        self.joint_names = JointsParams.from_tree(cfg).names
        self.base_frame = FramesParams.from_tree(cfg).base
        it = InteractionTopicsParams.from_tree(cfg)
        self._lock = threading.Lock()
        self._q: Optional[np.ndarray] = None
        self._dq: Optional[np.ndarray] = None
        self._T: Optional[np.ndarray] = None
        self._stamp = 0.0
        self.ignored = 0
        self.poses = 0
        node.create_subscription("sensor_msgs/msg/JointState", joint_states_topic or it.sim_joint_states,
                                 self._on_joint_state, qos=10)
        node.create_subscription("geometry_msgs/msg/PoseStamped", TeleopTopicsParams.from_tree(cfg).ee_pose,
                                 self._on_ee_pose, qos=10)
        self._pub = node.create_publisher("geometry_msgs/msg/PoseStamped", it.reference, qos=10)

    def _on_joint_state(self, msg) -> None:
        joints = joints_of(msg.name, msg.position, msg.velocity, self.joint_names)
        if joints is None:
            self.ignored += 1
            return
        with self._lock:
            self._q, self._dq = joints

    def _on_ee_pose(self, msg) -> None:
        T = matrix_from_pose(msg)
        if T is None:
            self.ignored += 1
            return
        with self._lock:
            self._T = T
            self._stamp = seconds_from_time(msg.header.stamp)

    @property
    def has_state(self) -> bool:
        with self._lock:
            return self._q is not None and self._T is not None

    def get_state(self) -> RobotState:
        with self._lock:
            if self._q is None or self._T is None:
                raise RuntimeError("no joint state / EE pose from the interaction node yet")
            return RobotState(self._stamp, self._q, self._dq, self._T)

    def send_pose(self, cmd: PoseCommand) -> None:
        self.poses += 1
        self._pub.publish(pose_stamped_from_matrix(np.asarray(cmd.T, float), cmd.stamp, self.base_frame))

    def send_command(self, cmd: JointCommand) -> None:   # pragma: no cover - joint output only
        raise RuntimeError("InteractionRobot takes pose references (teleop.output cartesian)")
