"""Hand poses from the VR tracking space into the robot base frame.

Unity's world is **left-handed, Y up** (x right, y up, z forward); ROS is **right-handed, Z up**
(x forward, y left, z up). The axis map is the reflection

    M = [[0, 0, 1],      ros_x =  unity_z   (forward)
         [-1, 0, 0],     ros_y = -unity_x   (left = -right)
         [0, 1, 0]]      ros_z =  unity_y   (up)

with det(M) = -1. Positions map as ``p_ros = M p_unity``; rotations by conjugation,
``R_ros = M R_unity M^T`` (a proper rotation again: the two reflections cancel). In quaternion
form (x, y, z, w) this is ``q_ros = (-q_z, q_x, -q_y, q_w)``: the axis is a pseudo-vector,
``axis_ros = det(M) M axis_unity``, the angle is unchanged.

The converted tracking frame ``track`` is then placed in the robot base by the configured fixed
transform ``base_T_track``, so ``base_T_hand = base_T_track @ track_T_hand``.
"""
from __future__ import annotations

import numpy as np

from hri_core import se3
from hri_arm_teleop.parameters_gen import TeleopTrackingParams

UNITY_TO_ROS = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


def pose_matrix(position, quat_xyzw) -> np.ndarray:
    """4x4 homogeneous transform from a position and a ROS-order quaternion (x, y, z, w)."""
    T = np.eye(4)
    T[:3, :3] = se3.quat_to_rot(np.asarray(quat_xyzw, dtype=float))
    T[:3, 3] = np.asarray(position, dtype=float)
    return T


def pose_parts(T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position (3,), quaternion x, y, z, w (4,)) of a 4x4 transform; w >= 0."""
    q = np.asarray(se3.rot_to_quat(np.asarray(T[:3, :3], dtype=float)), dtype=float)
    if q[3] < 0.0:
        q = -q
    return np.array(T[:3, 3], dtype=float), q


def unity_to_ros_pose(position_unity, quat_unity_xyzw) -> np.ndarray:
    """A Unity (left-handed Y-up) pose as a right-handed Z-up 4x4 transform (see module doc)."""
    R_u = se3.quat_to_rot(np.asarray(quat_unity_xyzw, dtype=float))
    T = np.eye(4)
    T[:3, :3] = UNITY_TO_ROS @ R_u @ UNITY_TO_ROS.T
    T[:3, 3] = UNITY_TO_ROS @ np.asarray(position_unity, dtype=float)
    return T


def ros_to_unity_pose(T_ros: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`unity_to_ros_pose`: (position, quaternion x, y, z, w) in Unity's frame."""
    R_u = UNITY_TO_ROS.T @ T_ros[:3, :3] @ UNITY_TO_ROS
    p_u = UNITY_TO_ROS.T @ T_ros[:3, 3]
    q = np.asarray(se3.rot_to_quat(R_u), dtype=float)
    return p_u, (q if q[3] >= 0 else -q)


def rpy_matrix(rpy_rad) -> np.ndarray:
    """R = Rz(yaw) Ry(pitch) Rx(roll) (fixed-axis X-Y-Z, the URDF/ROS convention)."""
    r, p, y = (float(a) for a in rpy_rad)
    return (se3.so3_exp(np.array([0.0, 0.0, y])) @ se3.so3_exp(np.array([0.0, p, 0.0]))
            @ se3.so3_exp(np.array([r, 0.0, 0.0])))


#: Where the VR tracking space sits relative to the robot base: config ``teleop.tracking``, typed
#: from its declaration (hri_arm_teleop/parameters.yaml).
TrackingParams = TeleopTrackingParams


class TrackingFrame:
    """Maps raw headset poses to ``base_T_hand`` (4x4, robot base frame, ROS convention)."""

    def __init__(self, params: TrackingParams):
        self.params = params
        self.base_T_track = np.eye(4)
        self.base_T_track[:3, :3] = rpy_matrix(np.radians(params.base_T_track_rpy_deg))
        self.base_T_track[:3, 3] = params.base_T_track_xyz_m

    def base_T_hand(self, position, quat_xyzw) -> np.ndarray:
        """``base_T_track @ track_T_hand`` where ``track_T_hand`` is the axis-converted raw pose."""
        if self.params.convention == "unity":
            track_T_hand = unity_to_ros_pose(position, quat_xyzw)
        else:
            track_T_hand = pose_matrix(position, quat_xyzw)
        return self.base_T_track @ track_T_hand
