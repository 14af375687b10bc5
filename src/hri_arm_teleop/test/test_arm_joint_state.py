"""joints_of (hri_arm_teleop.core.robot): our joints out of a JointState, by name."""
import numpy as np

from hri_arm_teleop.core.robot import joints_of


def test_joints_are_reordered_by_name_and_a_foreign_or_bad_state_is_none():
    q, dq = joints_of(["b", "gripper", "a"], [2.0, 9.0, 1.0], [0.2, 0.0, 0.1], ["a", "b"])
    assert np.array_equal(q, [1.0, 2.0]) and np.array_equal(dq, [0.1, 0.2])
    q, dq = joints_of(["a", "b"], [1.0, 2.0], [], ["a", "b"])            # no velocities: zero
    assert np.array_equal(dq, [0.0, 0.0])
    assert joints_of(["gripper"], [0.0], [0.0], ["a", "b"]) is None      # not our joints
    assert joints_of(["a", "b"], [1.0, float("nan")], [], ["a", "b"]) is None
    assert joints_of(["a", "b", "c"], [1.0, 2.0, float("inf")], [], ["a", "b"]) is not None   # not ours
