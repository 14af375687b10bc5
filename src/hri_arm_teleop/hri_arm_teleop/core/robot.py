"""The robot seen by the controller task: read a ``RobotState``, send a ``JointCommand``.

Implementations: ``hri_arm_teleop.sim_robot.SimRobot`` (simulation, lockstep) and
``hri_arm_teleop.nodes.ros2_robot.Ros2Robot`` (ros2_control topics of a real robot:
``sensor_msgs/JointState`` in, joint impedance ``std_msgs/Float64MultiArray`` or
``trajectory_msgs/JointTrajectory`` out, names from config ``teleop.robot.ros2``).
"""
from __future__ import annotations

import abc
from typing import Optional, Sequence

import numpy as np

from hri_arm_teleop.core.types import JointCommand, RobotState


def joints_of(names: Sequence[str], position, velocity, joint_names: Sequence[str]) -> Optional[tuple]:
    """``(q, dq)`` of ``joint_names`` from a JointState's ``names``/``position``/``velocity``
    (reordered by name; a driver may publish them in any order, and other joints too; ``dq`` zero
    when the velocities are missing); None when one of ours is missing or a position is not finite."""
    names = list(names)
    try:
        idx = [names.index(n) for n in joint_names]
    except ValueError:
        return None
    pos, vel = np.asarray(position, dtype=float), np.asarray(velocity, dtype=float)
    q = pos[idx]
    if not np.all(np.isfinite(q)):
        return None
    return q, (vel[idx] if len(vel) == len(pos) else np.zeros(len(idx)))


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
