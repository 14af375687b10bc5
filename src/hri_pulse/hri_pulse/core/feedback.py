"""Feedback packets robot -> Unity, version 1 (layouts in docs/protocols.md "Pulse").

Pose (48 bytes, ``'<4sBBHId3f4f'``): magic ``b"TNPO"``, version 1, flags (bit0 pose valid),
reserved u16 = 0, sequence u32 (mod 2^31), stamp_s f64 (robot clock), position x y z f32 (m,
ROS ``odom`` frame), orientation x y z w f32.
Skeleton (20 + 12 n bytes, ``'<4sBBHId'`` + n x ``'<3f'``): magic ``b"TNSK"``, version 1,
n joints u8, reserved u16 = 0, sequence u32, stamp_s f64, then n joint positions x y z f32 (m).
"""
from __future__ import annotations

import struct
from typing import Optional, Sequence, Tuple

from hri_pulse.core.codec import PacketRejected

POSE_FORMAT = "<4sBBHId3f4f"
SKEL_HEAD_FORMAT = "<4sBBHId"
POSE_MAGIC, SKEL_MAGIC, VERSION = b"TNPO", b"TNSK", 1
_POSE = struct.Struct(POSE_FORMAT)
_SKH = struct.Struct(SKEL_HEAD_FORMAT)
_J = struct.Struct("<3f")


def encode_pose(seq: int, stamp_s: float, position: Sequence[float], orientation: Sequence[float],
                valid: bool = True) -> bytes:
    return _POSE.pack(POSE_MAGIC, VERSION, 1 if valid else 0, 0, seq, stamp_s, *position, *orientation)


def decode_pose(data: bytes) -> Tuple[int, float, tuple, tuple, bool]:
    if len(data) != _POSE.size:
        raise PacketRejected("bad_size")
    magic, ver, flags, _r, seq, stamp, *rest = _POSE.unpack(data)
    if magic != POSE_MAGIC:
        raise PacketRejected("bad_magic")
    if ver != VERSION:
        raise PacketRejected("bad_version")
    return seq, stamp, tuple(rest[:3]), tuple(rest[3:]), bool(flags & 1)


def encode_skeleton(seq: int, stamp_s: float, joints: Sequence[Sequence[float]], max_joints: int) -> bytes:
    js = list(joints)[:max_joints]
    return _SKH.pack(SKEL_MAGIC, VERSION, len(js), 0, seq, stamp_s) + b"".join(_J.pack(*j) for j in js)


def decode_skeleton(data: bytes):
    if len(data) < _SKH.size:
        raise PacketRejected("bad_size")
    magic, ver, n, _r, seq, stamp = _SKH.unpack_from(data)
    if magic != SKEL_MAGIC:
        raise PacketRejected("bad_magic")
    if ver != VERSION:
        raise PacketRejected("bad_version")
    if len(data) != _SKH.size + n * _J.size:
        raise PacketRejected("bad_size")
    return seq, stamp, [_J.unpack_from(data, _SKH.size + i * _J.size) for i in range(n)]


class FeedbackSource:
    """What the feedback packets carry: the newest robot pose (``/odom``) and skeleton, each
    encoded with the sequence and stamp the link gives (:meth:`VrCommandCore.feedback`). Before
    the first pose the pose packet says "not valid" (origin, identity orientation); before the
    first skeleton the skeleton has no joint. At most ``max_joints`` joints are sent."""

    def __init__(self, max_joints: int):
        self.max_joints = max_joints
        self.pose: Optional[Tuple[tuple, tuple]] = None
        self.skeleton: list = []

    def on_pose(self, position: Sequence[float], orientation_xyzw: Sequence[float]) -> None:
        self.pose = (tuple(position), tuple(orientation_xyzw))

    def on_skeleton(self, points: Sequence[Sequence[float]]) -> None:
        self.skeleton = [tuple(p) for p in points]

    def pose_packet(self, seq: int, stamp_s: float) -> bytes:
        pos, ori = self.pose or ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
        return encode_pose(seq, stamp_s, pos, ori, self.pose is not None)

    def skeleton_packet(self, seq: int, stamp_s: float) -> bytes:
        return encode_skeleton(seq, stamp_s, self.skeleton, self.max_joints)
