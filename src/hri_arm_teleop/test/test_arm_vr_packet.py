"""VR controller pose packet v1: layout, round trip, every rejection cause, fuzz."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hri_arm_teleop.core import vr_packet as vp
from hri_pulse.core.codec import PacketRejected

GOOD = vp.ControllerPose(sequence=42, stamp_s=12.5, position=(0.1, 1.2, 0.4),
                         quat_xyzw=(0.0, 0.0, 0.0, 1.0), clutch=True, buttons=vp.BUTTON_PRIMARY,
                         trigger=0.25, grip=1.0)


def test_layout_is_56_bytes_with_documented_offsets():
    data = vp.encode(GOOD)
    assert len(data) == vp.SIZE == 56
    assert data[0:4] == b"HRAC" and data[4] == 1
    assert data[5] == vp.FLAG_CLUTCH | vp.FLAG_TRACKING_VALID | vp.FLAG_RIGHT_HAND
    assert struct.unpack_from("<H", data, 6)[0] == vp.BUTTON_PRIMARY
    assert struct.unpack_from("<i", data, 8)[0] == 42
    assert struct.unpack_from("<d", data, 12)[0] == 12.5
    assert struct.unpack_from("<3f", data, 20) == pytest.approx((0.1, 1.2, 0.4))
    assert struct.unpack_from("<4f", data, 32) == (0.0, 0.0, 0.0, 1.0)
    assert struct.unpack_from("<2f", data, 48) == (0.25, 1.0)


def test_authenticated_golden_vector_is_the_pulse_packets_framing():
    """docs/protocols.md "Authentication": the same trailer as the pulse packet (hri_pulse.core.auth,
    one implementation) after the 56 bytes; the link opens it and hands the codec the packet."""
    import hashlib
    import hmac

    from hri_pulse.core.auth import Authenticator, Sealer

    key, session = bytes(range(32)), 1767225600000
    data = Sealer(key, 7, session).seal(vp.encode(GOOD))
    assert len(data) == 84 and data[:56] == vp.encode(GOOD)
    assert data[56:68] == struct.pack("<BBHQ", 2, 7, 0, session)
    assert data[68:] == hmac.new(key, data[:68], hashlib.sha256).digest()[:16]
    assert data[56:].hex() == "0207000000a8da769b010000" "44a7a9d172feac55075fda00f752ee57"   # docs/protocols.md
    body, key_id, got_session = Authenticator({7: key}, vp.SIZE).open(data)
    assert vp.decode(body) == vp.decode(vp.encode(GOOD)) and (key_id, got_session) == (7, session)


def test_roundtrip():
    p = vp.decode(vp.encode(GOOD))
    assert p.sequence == 42 and p.clutch and p.tracking_valid and p.right_hand
    assert p.position == pytest.approx(GOOD.position) and p.quat_xyzw == GOOD.quat_xyzw


def _mutate(offset, fmt, value):
    data = bytearray(vp.encode(GOOD))
    struct.pack_into(fmt, data, offset, value)
    return bytes(data)


@pytest.mark.parametrize("data, cause", [
    (vp.encode(GOOD)[:-1], "bad_size"),
    (vp.encode(GOOD) + b"\0", "bad_size"),
    (b"XXXX" + vp.encode(GOOD)[4:], "bad_magic"),
    (_mutate(4, "<B", 2), "bad_version"),
    (_mutate(5, "<B", 0x80), "reserved_bits"),
    (_mutate(6, "<H", 0x8000), "reserved_bits"),
    (_mutate(8, "<i", -1), "bad_sequence"),
    (_mutate(12, "<d", float("nan")), "non_finite"),
    (_mutate(24, "<f", float("inf")), "non_finite"),
    (_mutate(20, "<f", 11.0), "position_out_of_range"),
    (_mutate(44, "<f", 0.5), "bad_quaternion"),
    (_mutate(48, "<f", 1.5), "analog_out_of_range"),
])
def test_each_rejection_cause(data, cause):
    with pytest.raises(PacketRejected) as err:
        vp.decode(data)
    assert err.value.cause == cause


def test_quaternion_is_renormalised():
    data = _mutate(44, "<f", 1.005)
    q = np.array(vp.decode(data).quat_xyzw)
    assert np.linalg.norm(q) == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=3000, deadline=None)
@given(st.binary(min_size=0, max_size=80))
def test_random_bytes_never_raise_anything_but_packet_rejected(data):
    try:
        p = vp.decode(data)
    except PacketRejected:
        return
    assert np.all(np.isfinite(p.position)) and abs(np.linalg.norm(p.quat_xyzw) - 1) < 1e-6


@settings(max_examples=3000, deadline=None)
@given(st.integers(0, vp.SIZE - 1), st.integers(0, 255))
def test_single_byte_mutations_are_valid_or_rejected(offset, value):
    data = bytearray(vp.encode(GOOD))
    data[offset] = value
    try:
        p = vp.decode(bytes(data))
    except PacketRejected:
        return
    assert all(np.isfinite(p.position))
