"""``RobotInterface`` of the cartesian output (``teleop.output: cartesian``) over topics.

State: the interaction node's joint state (``interaction.topics.sim_joint_states``, or the
robot's ``teleop.robot.ros2.joint_states_topic`` on hardware) and measured EE pose
(``teleop.topics.ee_pose``). Command: ``send_pose`` publishes the pose reference
(``geometry_msgs/PoseStamped``, base frame) on ``interaction.topics.reference`` at once: the
interaction loop's reference governor ramps it at 1 kHz.
"""
from __future__ import annotations

import math
import threading
from typing import Optional

import numpy as np

from hri_arm_teleop.core.robot import RobotInterface, joints_of
from hri_arm_teleop.core.types import JointCommand, PoseCommand, RobotState
from hri_arm_teleop.parameters_gen import TeleopTopicsParams
from hri_interaction.parameters_gen import InteractionTopicsParams
from hri_runtime.parameters_gen import FramesParams, JointsParams
from hri_runtime.geometry import UNIT_QUAT_TOL, matrix_from_pose, pose_stamped_from_matrix, seconds_from_time


class InteractionRobot(RobotInterface):
    """The state topics arrive at the interaction node's state rate (up to its 1 kHz tick) and
    are read at the teleop loop's: each message is checked when it arrives (a bad one is ignored
    and counted, the last good one held) and converted when it is read (:meth:`get_state`)."""

    def __init__(self, node, cfg: dict, joint_states_topic: Optional[str] = None):
        self.node = node
        self.joint_names = JointsParams.from_tree(cfg).names
        self.base_frame = FramesParams.from_tree(cfg).base
        it = InteractionTopicsParams.from_tree(cfg)
        self._lock = threading.Lock()
        self._js = None                 # the latest good JointState / PoseStamped, not converted yet
        self._pose = None
        self._index: Optional[tuple] = None      # (names, positions of joint_names in them)
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

    def _joint_index(self, names) -> Optional[list]:
        names = tuple(names)
        if self._index is None or self._index[0] != names:
            try:
                self._index = (names, [names.index(n) for n in self.joint_names])
            except ValueError:
                return None
        return self._index[1]

    def _on_joint_state(self, msg) -> None:
        # joints_of's rules: every joint of ours named, its position finite
        idx = self._joint_index(msg.name)
        pos = msg.position
        if idx is None or len(pos) <= max(idx) or not all(math.isfinite(pos[i]) for i in idx):
            self.ignored += 1
            return
        with self._lock:
            self._js = msg

    def _on_ee_pose(self, msg) -> None:
        # matrix_from_pose's rules: finite, a unit quaternion within UNIT_QUAT_TOL
        p, o = msg.pose.position, msg.pose.orientation
        v = (p.x, p.y, p.z, o.x, o.y, o.z, o.w)
        if not all(map(math.isfinite, v)) or abs(math.sqrt(v[3] ** 2 + v[4] ** 2 + v[5] ** 2 + v[6] ** 2) - 1.0) > UNIT_QUAT_TOL:
            self.ignored += 1
            return
        with self._lock:
            self._pose = msg

    def _convert(self) -> None:
        """Under the lock: the latest messages as arrays (``joints_of``, ``matrix_from_pose``)."""
        if self._js is not None:
            m, self._js = self._js, None
            joints = joints_of(m.name, m.position, m.velocity, self.joint_names)
            if joints is None:
                self.ignored += 1
            else:
                self._q, self._dq = joints
        if self._pose is not None:
            m, self._pose = self._pose, None
            T = matrix_from_pose(m)
            if T is None:
                self.ignored += 1
            else:
                self._T = T
                self._stamp = seconds_from_time(m.header.stamp)

    @property
    def has_state(self) -> bool:
        with self._lock:
            return (self._q is not None or self._js is not None) and (self._T is not None or self._pose is not None)

    def get_state(self) -> RobotState:
        with self._lock:
            self._convert()
            if self._q is None or self._T is None:
                raise RuntimeError("no joint state / EE pose from the interaction node yet")
            return RobotState(self._stamp, self._q, self._dq, self._T)

    def send_pose(self, cmd: PoseCommand) -> None:
        self.poses += 1
        self._pub.publish(pose_stamped_from_matrix(np.asarray(cmd.T, float), cmd.stamp, self.base_frame))

    def send_command(self, cmd: JointCommand) -> None:   # pragma: no cover - joint output only
        raise RuntimeError("InteractionRobot takes pose references (teleop.output cartesian)")
