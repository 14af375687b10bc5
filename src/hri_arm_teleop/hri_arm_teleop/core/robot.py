"""The robot seen by the controller task: read a ``RobotState``, send a ``JointCommand``.

Implementations: ``hri_arm_teleop.sim_robot.SimRobot`` (simulation, lockstep) and
``hri_arm_teleop.nodes.ros2_robot.Ros2Robot`` (ros2_control topics of a real robot:
``sensor_msgs/JointState`` in, joint impedance ``std_msgs/Float64MultiArray`` or
``trajectory_msgs/JointTrajectory`` out, names from config ``teleop.robot.ros2``).
"""
from __future__ import annotations

import abc

from hri_arm_teleop.core.types import JointCommand, RobotState


class RobotInterface(abc.ABC):
    joint_names: tuple[str, ...]

    @abc.abstractmethod
    def get_state(self) -> RobotState:
        """The newest measured joint state (and EE pose when the implementation knows it)."""

    @abc.abstractmethod
    def send_command(self, cmd: JointCommand) -> None:
        """Forward one joint command (already checked by the safety checker)."""

    def close(self) -> None:  # pragma: no cover - optional
        pass
