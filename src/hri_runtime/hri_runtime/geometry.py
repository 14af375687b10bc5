"""PoseStamped <-> 4x4 homogeneous transform: the one conversion of the workspace.

A ``geometry_msgs/PoseStamped`` in frame ``x`` holds ``x_T_child``: position ``p`` (m) and the
unit quaternion ``q = (x, y, z, w)`` (ROS order) of the rotation ``R``::

    x_T_child = [[R(q), p],
                 [0,    1]]

    R(q) = I + 2 w [v]x + 2 [v]x^2,   v = (x, y, z)      (|q| = 1)

``q`` and ``-q`` are the same rotation; published quaternions are canonical with ``w >= 0``.

Quaternion math has one public home, ``hri_core.se3.quat_to_rot`` / ``rot_to_quat`` (batched,
C++). ``hri_runtime`` and ``hri_core`` are both bottom layers and neither imports the other, so the
message conversion here carries its own private quaternion <-> matrix step (``_rot_from_quat``,
``_quat_from_rot``), cross-checked against ``hri_core.se3`` by the tests. Code above both layers
converts a message with this module and does rotation math with ``hri_core.se3``.

Validation of incoming poses (``matrix_from_pose``): every field must be finite and
``| |q| - 1 | <= UNIT_QUAT_TOL``; an accepted quaternion is re-normalised before use (the stricter of
the two former copies, arm_teleop's: it both rejected and re-normalised). A zero quaternion (the
all-zero default of a message whose orientation was never set) is rejected.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from hri_runtime import msgs

#: Accepted deviation of a received quaternion's norm from 1 (not a source-document number: message
#: hygiene, float32 round-off of producers is ~1e-7).
UNIT_QUAT_TOL = 1e-3


def _rot_from_quat(q_xyzw) -> np.ndarray:
    """3x3 rotation of a quaternion (x, y, z, w); ``q`` is normalised first (must be non-zero)."""
    q = np.asarray(q_xyzw, dtype=float)
    x, y, z, w = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def _quat_from_rot(R) -> np.ndarray:
    """Unit quaternion (x, y, z, w) of a rotation matrix, ``w >= 0`` (Shepperd's method: the
    largest of 4w², 4x², 4y², 4z² is taken as the pivot, so no division by a small number)."""
    rows = np.asarray(R, dtype=float)[:3, :3].tolist()
    return np.array(_quat_of(rows[0], rows[1], rows[2]))


def _quat_of(row0, row1, row2) -> list:
    """:func:`_quat_from_rot` of the rotation's rows (Python floats; a row may go on, e.g. with
    the translation of a 4x4): scalar arithmetic on Python floats (the same IEEE operations as
    numpy's, a fraction of the cost), the norm numpy's own (``dot``: a Python sum rounds
    differently); a non-finite matrix takes numpy's first-NaN pivot."""
    r00, r01, r02 = row0[:3]
    r10, r11, r12 = row1[:3]
    r20, r21, r22 = row2[:3]
    tr = r00 + r11 + r22
    pivots = (tr, r00, r11, r22)
    k = pivots.index(max(pivots)) if math.isfinite(tr) else int(np.argmax(pivots))
    if k == 0:
        s = 2.0 * math.sqrt(max(1.0 + tr, 0.0))  # s = 4w
        q = (r21 - r12, r02 - r20, r10 - r01, 0.25 * s * s)
    elif k == 1:
        s = 2.0 * math.sqrt(max(1.0 + r00 - r11 - r22, 0.0))  # s = 4x
        q = (0.25 * s * s, r01 + r10, r02 + r20, r21 - r12)
    elif k == 2:
        s = 2.0 * math.sqrt(max(1.0 + r11 - r00 - r22, 0.0))  # s = 4y
        q = (r01 + r10, 0.25 * s * s, r12 + r21, r02 - r20)
    else:
        s = 2.0 * math.sqrt(max(1.0 + r22 - r00 - r11, 0.0))  # s = 4z
        q = (r02 + r20, r12 + r21, 0.25 * s * s, r10 - r01)
    q = [c / s for c in q]
    a = np.array(q)
    n = math.sqrt(a.dot(a))
    q = [c / n for c in q]
    return [-c for c in q] if q[3] < 0.0 else q


def time_from_seconds(stamp_s: float):
    """``builtin_interfaces/Time`` of a time in seconds: ``sec = floor(t)``, ``nanosec`` in
    [0, 1e9) rounded to the nearest ns (a carry goes into ``sec``)."""
    sec, nanosec = divmod(int(round(float(stamp_s) * 1e9)), 1_000_000_000)
    return msgs.cls("builtin_interfaces/msg/Time")(sec=sec, nanosec=nanosec)


def seconds_from_time(stamp) -> float:
    """Seconds (float) of a ``builtin_interfaces/Time`` (``sec + 1e-9 nanosec``); the inverse of
    :func:`time_from_seconds` to the nanosecond."""
    return int(stamp.sec) + 1e-9 * int(stamp.nanosec)


def pose_from_matrix(frame_T_child: np.ndarray):
    """``geometry_msgs/Pose`` of a 4x4 transform (quaternion canonical, ``w >= 0``)."""
    r0, r1, r2 = np.asarray(frame_T_child, dtype=float)[:3, :4].tolist()
    qx, qy, qz, qw = _quat_of(r0, r1, r2)
    return msgs.cls("geometry_msgs/msg/Pose")(
        position=msgs.cls("geometry_msgs/msg/Point")(x=r0[3], y=r1[3], z=r2[3]),
        orientation=msgs.cls("geometry_msgs/msg/Quaternion")(x=qx, y=qy, z=qz, w=qw))


def pose_from_parts(position_m, quat_xyzw):
    """``geometry_msgs/Pose`` of a position (m) and a quaternion (x, y, z, w), copied as given."""
    x, y, z = np.asarray(position_m, dtype=float)[:3].tolist()
    qx, qy, qz, qw = np.asarray(quat_xyzw, dtype=float)[:4].tolist()
    return msgs.cls("geometry_msgs/msg/Pose")(
        position=msgs.cls("geometry_msgs/msg/Point")(x=x, y=y, z=z),
        orientation=msgs.cls("geometry_msgs/msg/Quaternion")(x=qx, y=qy, z=qz, w=qw))


def pose_stamped_from_matrix(frame_T_child: np.ndarray, stamp_s: float, frame_id: str):
    """``geometry_msgs/PoseStamped`` of a 4x4 transform ``frame_T_child`` expressed in
    ``frame_id``, stamped ``stamp_s`` (seconds of the node's clock)."""
    return msgs.cls("geometry_msgs/msg/PoseStamped")(
        header=msgs.cls("std_msgs/msg/Header")(stamp=time_from_seconds(stamp_s), frame_id=frame_id),
        pose=pose_from_matrix(frame_T_child))


def pose_stamped_from_parts(position_m, quat_xyzw, stamp_s: float, frame_id: str):
    """``geometry_msgs/PoseStamped`` of a position and a quaternion (x, y, z, w) (recordings of
    traces that store the parts)."""
    return msgs.new(
        "geometry_msgs/msg/PoseStamped",
        header=msgs.new("std_msgs/msg/Header", frame_id=frame_id, stamp=time_from_seconds(stamp_s)),
        pose=pose_from_parts(position_m, quat_xyzw))


def matrix_from_pose(msg) -> Optional[np.ndarray]:
    """4x4 transform of a ``PoseStamped`` (or a bare ``Pose``); ``None`` when a field is NaN/Inf
    or the quaternion is not unit within ``UNIT_QUAT_TOL`` (zero quaternion included). The
    accepted quaternion is re-normalised, so ``R`` is orthonormal to machine precision."""
    pose = getattr(msg, "pose", msg)
    p, o = pose.position, pose.orientation
    q = np.array([o.x, o.y, o.z, o.w], dtype=float)
    pos = np.array([p.x, p.y, p.z], dtype=float)
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(pos))):
        return None
    n = float(np.linalg.norm(q))
    if abs(n - 1.0) > UNIT_QUAT_TOL:
        return None
    T = np.eye(4)
    T[:3, :3] = _rot_from_quat(q / n)
    T[:3, 3] = pos
    return T
