"""Property-based companion of the seeded fuzz test (hypothesis): arbitrary datagrams never raise
anything but a counted rejection, and never command; a valid stream commands exactly per edge."""
import struct

from hypothesis import given, settings, strategies as st
from hri_pulse.core import PacketParams, PacketRejected, PulseConfig, UnityCodec, VrCommandCore


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-1, 1), st.integers(0, 5)), min_size=1, max_size=60))
def test_commands_equal_debounced_complete_pulses(pulse_section, stream):
    """stream of (state, angular, repeat): every packet in order, 40 ms apart. A pulse opens on a
    change to a non-idle value and spans the next ``pulse.check.messages`` packets; it commands
    (at its last packet) when they all carry its value and it is >= debounce_s after the previous
    command; scanning for the next edge resumes after its span."""
    t = [0.0]
    core = VrCommandCore(PulseConfig.from_config(pulse_section), lambda: t[0])
    deb = pulse_section["pulse"]["debounce_s"]
    n = pulse_section["check"]["messages"]
    vals = []
    for state, ang, rep in stream:
        vals += [(state, ang) if state else (0, 0)] * (rep + 1)
    for seq, (state, ang) in enumerate(vals):
        t[0] = 0.04 * (seq + 1)
        core.on_datagram(struct.pack("<fffiiffi", 0, 0, 0, state, ang, 1.0, 0.0, seq), ("h", 1), t[0])
    expected, last_cmd, prev, i = 0, None, (0, 0), 0
    while i < len(vals):
        v = vals[i]
        if v != prev and v[0] != 0:
            span = vals[i:i + n]
            if len(span) == n and all(x == v for x in span):
                t_cmd = 0.04 * (i + n)
                if last_cmd is None or t_cmd - last_cmd >= deb - 1e-9:
                    expected += 1
                    last_cmd = t_cmd
            if len(span) < n:
                break                                        # still open at the end
            prev, i = span[-1], i + n
            continue
        prev, i = v, i + 1
    assert core.commands == expected
