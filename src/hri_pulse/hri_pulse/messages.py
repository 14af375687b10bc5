"""The pulse nodes' messages (vr_interface, gamepad), built from the core's plain values (:mod:`hri_pulse.core.vr`).

``/base_cmd`` (geometry_msgs/Twist): linear.x = the pulse state, angular.z = the direction;
``/head_cmd`` (Vector3, rad: pitch, pan, tilt) and ``/audio_cmd`` (Vector3: x volume,
y orientation rad, z 0) per accepted packet; ``/pulse/command_head`` (Vector3Stamped, frame
``head``) with the first message of each command; the link-loss stop request.
"""
from __future__ import annotations

from typing import Sequence

from hri_runtime import msgs
from hri_runtime.geometry import time_from_seconds
from hri_safety.nodes.stop_listener import STOP_REQUEST_TYPE

LINK_LOSS_REASON = "headset link lost (no valid packet)"


def vector3(x: float = 0.0, y: float = 0.0, z: float = 0.0):
    return msgs.new("geometry_msgs/msg/Vector3", x=float(x), y=float(y), z=float(z))


def twist(linear_x: float = 0.0, angular_z: float = 0.0):
    """A planar geometry_msgs/Twist (the base: linear.x, angular.z)."""
    return msgs.new("geometry_msgs/msg/Twist", linear=vector3(x=linear_x), angular=vector3(z=angular_z))


def pulse_twist(emission):
    """One pulse/idle message (:class:`hri_pulse.core.pulse.Emission`): linear.x = state, angular.z = direction."""
    return twist(emission.state, emission.direction)


def head_msg(head_rad: Sequence[float]):
    return vector3(*head_rad)


def audio_msg(volume: float, orientation_rad: float):
    return vector3(volume, orientation_rad, 0.0)


def command_head_msg(emission):
    """The head captured with the command of ``emission`` (its first message), stamped then."""
    return msgs.new("geometry_msgs/msg/Vector3Stamped", vector=vector3(*emission.command.head_rad),
                    header=msgs.new("std_msgs/msg/Header", stamp=time_from_seconds(emission.t_s), frame_id="head"))


def link_loss_stop_request():
    return msgs.new(STOP_REQUEST_TYPE, source="link_loss", reason=LINK_LOSS_REASON)


def pose_parts(pose) -> tuple[tuple, tuple]:
    """((x, y, z), (x, y, z, w)) of a geometry_msgs/Pose."""
    p, o = pose.position, pose.orientation
    return (p.x, p.y, p.z), (o.x, o.y, o.z, o.w)
