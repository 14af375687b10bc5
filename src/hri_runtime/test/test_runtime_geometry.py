"""hri_runtime.geometry: the one PoseStamped <-> 4x4 conversion."""
import math

import numpy as np
import pytest

from hri_runtime import msgs
from hri_runtime.geometry import _quat_from_rot as quat_from_rot
from hri_runtime.geometry import _rot_from_quat as rot_from_quat
from hri_runtime.geometry import matrix_from_pose, pose_stamped_from_matrix, seconds_from_time, time_from_seconds


def _rot(axis, angle):
    """Rodrigues, independent of the module under test."""
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def _T(axis, angle, p):
    T = np.eye(4)
    T[:3, :3] = _rot(axis, angle)
    T[:3, 3] = p
    return T


def _msg(q, p=(0.0, 0.0, 0.0)):
    return msgs.new("geometry_msgs/msg/PoseStamped", pose=msgs.new(
        "geometry_msgs/msg/Pose", position=msgs.new("geometry_msgs/msg/Point", x=p[0], y=p[1], z=p[2]),
        orientation=msgs.new("geometry_msgs/msg/Quaternion", x=q[0], y=q[1], z=q[2], w=q[3])))


CASES = [((1, 0, 0), 0.0, (0, 0, 0)), ((0, 0, 1), 0.7, (0.3, -0.2, 0.5)), ((1, 2, 3), 2.5, (1, 2, 3)),
         ((1, 0, 0), math.pi, (0, 0, 0)), ((0, 1, 0), math.pi, (0.1, 0, 0)), ((0, 0, 1), math.pi, (0, 0, 0)),
         ((1, 1, 0), math.pi - 1e-9, (0, 0, -1)), ((-1, 0.2, 0.1), 3.1, (0, 0, 0))]


@pytest.mark.parametrize("axis,angle,p", CASES)
def test_round_trip_matrix_msg_matrix(axis, angle, p):
    T = _T(axis, angle, p)
    msg = pose_stamped_from_matrix(T, 12.25, "fr3_base")
    assert msg.header.frame_id == "fr3_base"
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (12, 250_000_000)
    np.testing.assert_allclose(matrix_from_pose(msg), T, atol=1e-12)


def test_known_quaternion_and_canonical_sign():
    # +90 deg about z: q = (0, 0, sin 45, cos 45)
    q = quat_from_rot(_rot((0, 0, 1), math.pi / 2))
    np.testing.assert_allclose(q, [0, 0, math.sqrt(0.5), math.sqrt(0.5)], atol=1e-12)
    # a rotation by 350 deg = -10 deg: published with w >= 0
    for axis in ((1, 0, 0), (0, 1, 0), (0, 0, 1), (1, -2, 0.5)):
        o = pose_stamped_from_matrix(_T(axis, math.radians(350), (0, 0, 0)), 0.0, "w").pose.orientation
        assert o.w > 0
        assert o.w == pytest.approx(math.cos(math.radians(5)), abs=1e-12)


def test_q_and_minus_q_are_the_same_pose():
    q = np.array([0.1, -0.5, 0.3, 0.8])
    q /= np.linalg.norm(q)
    Ta, Tb = matrix_from_pose(_msg(q, (1, 2, 3))), matrix_from_pose(_msg(-q, (1, 2, 3)))
    np.testing.assert_allclose(Ta, Tb, atol=1e-15)
    np.testing.assert_allclose(Ta[:3, :3] @ Ta[:3, :3].T, np.eye(3), atol=1e-12)
    assert np.linalg.det(Ta[:3, :3]) == pytest.approx(1.0)


@pytest.mark.parametrize("q,p", [((math.nan, 0, 0, 1), (0, 0, 0)), ((0, 0, 0, 1), (0, math.inf, 0)),
                                 ((0, 0, 0, -math.inf), (0, 0, 0)), ((0, 0, 0, 1), (math.nan, 0, 0))])
def test_non_finite_is_rejected(q, p):
    assert matrix_from_pose(_msg(q, p)) is None


def test_zero_and_non_unit_quaternions_are_rejected():
    assert matrix_from_pose(_msg((0, 0, 0, 0))) is None
    assert matrix_from_pose(msgs.new("geometry_msgs/msg/PoseStamped")) is not None  # msgs default w = 1
    assert matrix_from_pose(_msg((0, 0, 0, 2.0))) is None
    assert matrix_from_pose(_msg((0, 0, 0, 1.002))) is None


def test_nearly_unit_is_accepted_and_renormalised():
    T = matrix_from_pose(_msg((0, 0, 0.6, 0.8 * 1.0009)))
    assert T is not None
    np.testing.assert_allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3), atol=1e-12)


def test_rot_from_quat_matches_rodrigues():
    for axis, angle, _ in CASES:
        k = np.asarray(axis, float) / np.linalg.norm(axis)
        q = np.r_[k * math.sin(angle / 2), math.cos(angle / 2)]
        np.testing.assert_allclose(rot_from_quat(q), _rot(axis, angle), atol=1e-12)


def test_matches_hri_core_se3():
    from hri_core import se3
    rng = np.random.default_rng(3)
    for _ in range(50):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        R = rot_from_quat(q)
        np.testing.assert_allclose(R, se3.quat_to_rot(q), atol=1e-12)
        np.testing.assert_allclose(quat_from_rot(R), se3.rot_to_quat(R), atol=1e-9)


@pytest.mark.parametrize("t,sec,ns", [(0.0, 0, 0), (1.3, 1, 300_000_000), (2.9999999999, 3, 0),
                                      (-0.5, -1, 500_000_000), (1_700_000_000.000001, 1_700_000_000, 1000)])
def test_time_from_seconds(t, sec, ns):
    st = time_from_seconds(t)
    assert st.sec == sec
    assert abs(st.nanosec - ns) <= (256 if t > 1e9 else 0)  # float64 resolution at 1.7e9 s is ~2.4e-7 s


@pytest.mark.parametrize("t", [0.0, 1.3, 1.9999999997, 2.9999999999, 12345.000000001])
def test_seconds_from_time_inverts_time_from_seconds_to_the_nanosecond(t):
    assert abs(seconds_from_time(time_from_seconds(t)) - t) <= 0.51e-9 + abs(t) * 1e-15
