import struct

import pytest
from hri_pulse.core import PacketRejected
from hri_pulse.core.feedback import (POSE_FORMAT, decode_pose, decode_skeleton, encode_pose,
                                     encode_skeleton)


def test_pose_layout_48_bytes():
    raw = encode_pose(7, 12.5, (1.0, 2.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    assert len(raw) == 48 == struct.calcsize(POSE_FORMAT)
    assert raw[:4] == b"TNPO" and raw[4] == 1 and raw[5] == 1
    assert struct.unpack_from("<I", raw, 8)[0] == 7
    assert struct.unpack_from("<d", raw, 12)[0] == 12.5
    assert struct.unpack_from("<3f", raw, 20) == (1.0, 2.0, 0.0)
    assert struct.unpack_from("<4f", raw, 32) == (0.0, 0.0, 0.0, 1.0)
    assert decode_pose(raw) == (7, 12.5, (1.0, 2.0, 0.0), (0.0, 0.0, 0.0, 1.0), True)


def test_skeleton_layout_and_truncation():
    joints = [(float(i), 0.5, -1.0) for i in range(40)]
    raw = encode_skeleton(3, 1.0, joints, max_joints=32)
    assert len(raw) == 20 + 12 * 32 and raw[:4] == b"TNSK" and raw[5] == 32
    seq, stamp, js = decode_skeleton(raw)
    assert seq == 3 and js[31] == (31.0, 0.5, -1.0)


@pytest.mark.parametrize("data,cause", [(b"TNPO", "bad_size"), (b"XXXX" + bytes(44), "bad_magic"),
                                        (b"TNPO\x02" + bytes(43), "bad_version")])
def test_pose_rejects(data, cause):
    with pytest.raises(PacketRejected) as e:
        decode_pose(data)
    assert e.value.cause == cause


def test_feedback_source_sends_the_newest_pose_and_skeleton_invalid_until_the_first():
    from hri_pulse.core.feedback import FeedbackSource

    fb = FeedbackSource(max_joints=2)
    assert decode_pose(fb.pose_packet(1, 5.0)) == (1, 5.0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), False)
    assert decode_skeleton(fb.skeleton_packet(1, 5.0)) == (1, 5.0, [])
    fb.on_pose((1.0, 2.0, 0.5), (0.0, 0.0, 1.0, 0.0))
    fb.on_skeleton([(0.0, 0.0, 1.0), (0.5, 0.0, 1.0), (1.0, 0.0, 1.0)])
    assert decode_pose(fb.pose_packet(2, 6.0)) == (2, 6.0, (1.0, 2.0, 0.5), (0.0, 0.0, 1.0, 0.0), True)
    seq, stamp, joints = decode_skeleton(fb.skeleton_packet(3, 6.5))
    assert (seq, stamp, joints) == (3, 6.5, [(0.0, 0.0, 1.0), (0.5, 0.0, 1.0)])     # at most max_joints
