"""Unity (left-handed, Y up) -> ROS (right-handed, Z up) conversion with known poses."""
from __future__ import annotations

import numpy as np
import pytest


from hri_core import se3
from hri_arm_teleop.core.frames import (TrackingFrame, TrackingParams, ros_to_unity_pose,
                                        unity_to_ros_pose)

S = np.sqrt(0.5)


def test_unity_axes_map_to_ros_axes():
    # Unity right (+x) is ROS -y, Unity up (+y) is ROS +z, Unity forward (+z) is ROS +x.
    for p_u, p_r in [((1, 0, 0), (0, -1, 0)), ((0, 1, 0), (0, 0, 1)), ((0, 0, 1), (1, 0, 0)),
                     ((1, 2, 3), (3, -1, 2))]:
        T = unity_to_ros_pose(p_u, (0, 0, 0, 1))
        np.testing.assert_allclose(T[:3, 3], p_r, atol=1e-15)
        np.testing.assert_allclose(T[:3, :3], np.eye(3), atol=1e-15)


@pytest.mark.parametrize("q_unity, ros_rotvec", [
    # Quaternion.AngleAxis(90, Vector3.up): turns forward (+z) to right (+x) -> ROS yaw -90 deg.
    ((0, S, 0, S), (0, 0, -np.pi / 2)),
    # AngleAxis(90, right): left-handed pitch, forward tips down -> ROS: x tips towards -z, i.e.
    # a positive rotation about ROS +y.
    ((S, 0, 0, S), (0, np.pi / 2, 0)),
    # AngleAxis(90, forward): left-handed roll, up turns to the left (-x_unity) -> ROS: z turns to
    # +y, a negative rotation about ROS +x.
    ((0, 0, S, S), (-np.pi / 2, 0, 0)),
])
def test_known_unity_rotations(q_unity, ros_rotvec):
    T = unity_to_ros_pose((0, 0, 0), q_unity)
    np.testing.assert_allclose(T[:3, :3], se3.so3_exp(np.array(ros_rotvec)), atol=1e-12)
    assert np.linalg.det(T[:3, :3]) == pytest.approx(1.0)


def test_known_unity_rotation_moves_vectors_as_unity_does():
    # In Unity, AngleAxis(90, up) * forward == right. Same vectors in ROS: R x_ros == -y_ros.
    T = unity_to_ros_pose((0, 0, 0), (0, S, 0, S))
    np.testing.assert_allclose(T[:3, :3] @ [1, 0, 0], [0, -1, 0], atol=1e-12)


def test_quaternion_formula_and_roundtrip():
    rng = np.random.default_rng(3)
    for _ in range(100):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        p = rng.normal(size=3)
        T = unity_to_ros_pose(p, q)
        q_ros = np.array([-q[2], q[0], -q[1], q[3]])
        np.testing.assert_allclose(T[:3, :3], se3.quat_to_rot(q_ros), atol=1e-12)
        p2, q2 = ros_to_unity_pose(T)
        np.testing.assert_allclose(p2, p, atol=1e-12)
        assert min(np.abs(q2 - q).max(), np.abs(q2 + q).max()) < 1e-12


def test_tracking_frame_places_the_headset_space_in_the_robot_base():
    # Tracking origin 1 m in front of the robot (base x), rotated 180 deg about z: the operator
    # faces the robot, so moving the hand forward (Unity +z) moves along base -x.
    tf = TrackingFrame(TrackingParams("unity", (1.0, 0.0, 0.0), (0.0, 0.0, 180.0)))
    T = tf.base_T_hand((0.0, 1.2, 0.3), (0, 0, 0, 1))
    np.testing.assert_allclose(T[:3, 3], [1.0 - 0.3, 0.0, 1.2], atol=1e-12)
    np.testing.assert_allclose(T[:3, :3], se3.so3_exp(np.array([0, 0, np.pi])), atol=1e-12)
    ros = TrackingFrame(TrackingParams("ros", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    np.testing.assert_allclose(ros.base_T_hand((1, 2, 3), (0, 0, 0, 1))[:3, 3], [1, 2, 3])
