"""Property-based companion of the seeded fuzz test (hypothesis): arbitrary datagrams never raise
anything but a counted rejection, and never command; a valid stream commands exactly per edge."""
import struct

from hypothesis import given, settings, strategies as st
from hri_pulse.core import PacketParams, PacketRejected, PulseConfig, UnityCodec, VrCommandCore


@settings(max_examples=3000, deadline=None)
@given(st.binary(min_size=0, max_size=64))
def test_any_bytes_decode_or_rejected(pulse_section, data):
    codec = UnityCodec(PacketParams.from_config(pulse_section["packet"]))
    try:
        pkt = codec.decode(data)
    except PacketRejected as e:
        assert e.cause in codec.causes
    else:
        assert len(data) == 32 and 0 <= pkt.base_state <= 3 and -1 <= pkt.base_angular <= 1
        assert codec.encode(pkt) == data or pkt != pkt  # NaN cannot pass, so exact roundtrip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-1, 1), st.integers(0, 5)), min_size=1, max_size=60))
def test_commands_equal_debounced_rising_edges(pulse_section, stream):
    """stream of (state, angular, repeat): every packet in order; commands = rising edges that are
    >= debounce_s apart (packets 40 ms apart)."""
    t = [0.0]
    core = VrCommandCore(PulseConfig.from_config(pulse_section), lambda: t[0])
    deb = pulse_section["pulse"]["debounce_s"]
    expected, prev, last_cmd, seq = 0, (0, 0), None, 0
    for state, ang, rep in stream:
        for _ in range(rep + 1):
            t[0] += 0.04
            core.on_datagram(struct.pack("<fffiiffi", 0, 0, 0, state, ang, 1.0, 0.0, seq), ("h", 1), t[0])
            seq += 1
            val = (state, ang) if state else (0, 0)
            if val != prev and state:
                if last_cmd is None or t[0] - last_cmd >= deb - 1e-9:
                    expected += 1
                    last_cmd = t[0]
            prev = val
    assert core.commands == expected
