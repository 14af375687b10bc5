import math
import struct

import pytest
from hri_pulse.core import PacketParams, PacketRejected, UNITY_FORMAT, UnityCodec, UnityPacket


@pytest.fixture
def codec(pulse_section):
    return UnityCodec(PacketParams.from_config(pulse_section["packet"]))


def pkt(**kw):
    base = dict(head_pitch=0.0, head_pan=0.0, head_tilt=0.0, base_state=2, base_angular=1,
                audio_volume=75.0, audio_orientation=0.0, message_order=12345)
    base.update(kw)
    return UnityPacket(**base)


def test_layout_is_the_tino_vr_design_format_32_bytes(codec):
    assert UNITY_FORMAT == "<fffiiffi" and struct.calcsize(UNITY_FORMAT) == 32
    raw = codec.encode(pkt())
    assert len(raw) == 32
    # the Tino VR design's example [0.0, 0.0, 0.0, 2, 1, 75, 0.0, 12345], byte offsets of protocols.md
    assert struct.unpack_from("<i", raw, 12)[0] == 2
    assert struct.unpack_from("<i", raw, 16)[0] == 1
    assert struct.unpack_from("<f", raw, 20)[0] == 75.0      # volume is a float on the wire
    assert struct.unpack_from("<i", raw, 28)[0] == 12345
    assert codec.decode(raw) == pkt()


@pytest.mark.parametrize("data,cause", [
    (b"", "bad_size"), (b"\0" * 31, "bad_size"), (b"\0" * 33, "bad_size"),
])
def test_size(codec, data, cause):
    with pytest.raises(PacketRejected) as e:
        codec.decode(data)
    assert e.value.cause == cause


@pytest.mark.parametrize("fields,cause", [
    (dict(head_pitch=math.nan), "non_finite"),
    (dict(audio_orientation=math.inf), "non_finite"),
    (dict(audio_volume=-math.inf), "non_finite"),
    (dict(head_pan=181.0), "head_out_of_range"),
    (dict(base_state=4), "bad_state"),
    (dict(base_state=-1), "bad_state"),
    (dict(base_angular=2), "bad_angular"),
    (dict(base_angular=-2), "bad_angular"),
    (dict(audio_volume=100.5), "audio_out_of_range"),
    (dict(audio_volume=-0.1), "audio_out_of_range"),
    (dict(audio_orientation=-361.0), "audio_out_of_range"),
    (dict(message_order=-1), "bad_sequence"),
])
def test_validation_causes(codec, fields, cause):
    with pytest.raises(PacketRejected) as e:
        codec.decode(struct.pack(UNITY_FORMAT, *pkt(**fields)))
    assert e.value.cause == cause
    assert cause in codec.causes


@pytest.mark.parametrize("state", [0, 1, 2, 3])
@pytest.mark.parametrize("angular", [-1, 0, 1])
def test_every_valid_command_decodes(codec, state, angular):
    p = pkt(base_state=state, base_angular=angular, message_order=(1 << 31) - 1)
    assert codec.decode(codec.encode(p)) == p


def test_size_param_must_match_format(pulse_section):
    bad = dict(pulse_section["packet"], size_bytes=33)
    with pytest.raises(ValueError):
        UnityCodec(PacketParams.from_config(bad))
