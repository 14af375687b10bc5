import dataclasses
import struct

from hri_pulse.core import HealthParams, LinkParams, LinkReceiver, PacketParams, SequenceParams, UnityCodec

A = ("127.0.0.1", 40000)
B = ("10.0.0.7", 40000)


def raw(seq, state=0, ang=0):
    return struct.pack("<fffiiffi", 1.0, 2.0, 3.0, state, ang, 50.0, 0.0, seq)


def make(pulse_section, clock, **link):
    return LinkReceiver(UnityCodec(PacketParams.from_config(pulse_section["packet"])), clock,
                        SequenceParams.from_config(pulse_section["sequence"]),
                        HealthParams.from_config(pulse_section["health"]),
                        dataclasses.replace(LinkParams.from_config(pulse_section["link"]), **link))


def test_accept_and_count_every_cause(pulse_section, clock):
    lr = make(pulse_section, clock)
    assert lr.handle(raw(1), A) is not None
    assert lr.handle(raw(1), A) is None                    # duplicate
    assert lr.handle(b"junk", A) is None                   # bad_size
    assert lr.handle(raw(2, state=9), A) is None           # bad_state
    assert lr.handle(raw(3), A) is not None
    assert lr.handle(raw(2), A) is None                    # stale
    assert lr.rejected["duplicate"] == 1 and lr.rejected["bad_size"] == 1
    assert lr.rejected["bad_state"] == 1 and lr.rejected["stale"] == 1
    assert lr.received == 6 and lr.accepted == 2
    assert lr.received == lr.accepted + lr.rejected_total


def test_peer_lock_drops_second_headset(pulse_section, clock):
    lr = make(pulse_section, clock)
    lr.handle(raw(1), A)
    assert lr.handle(raw(2), B) is None and lr.rejected["foreign_peer"] == 1
    assert lr.handle(raw(2), ("127.0.0.1", 40001)) is not None   # same host, new port (app restart)
    clock.advance(3.5)
    assert lr.update() == "disconnected" and lr.owner is None
    assert lr.handle(raw(900), B) is not None                     # lock released, sequence reset


def test_allow_list(pulse_section, clock):
    lr = make(pulse_section, clock, allow_list=("10.0.0.7",))
    assert lr.handle(raw(1), A) is None and lr.rejected["not_allowed"] == 1
    assert lr.handle(raw(1), B) is not None


def test_disconnection_resets_sequence_so_restart_is_accepted(pulse_section, clock):
    lr = make(pulse_section, clock)
    for s in range(500, 510):
        lr.handle(raw(s), A)
        clock.advance(0.04)
    clock.advance(3.1)
    assert lr.update() == "disconnected"
    assert lr.handle(raw(0), A) is not None
    assert lr.health.reconnections == 1


def test_other_codec_plugs_in(pulse_section, clock):
    """A foreign packet format (as hri_arm_teleop's) with its own exception type."""
    class MyError(Exception):
        def __init__(self, cause):
            super().__init__(cause)
            self.cause = cause

    class Codec:
        causes = ("bad_magic",)

        def decode(self, data):
            if data[:2] != b"OK":
                raise MyError("bad_magic")
            return int(data[2:])

        def sequence(self, pkt):
            return pkt

    lr = LinkReceiver(Codec(), clock, SequenceParams.from_config(pulse_section["sequence"]),
                      HealthParams.from_config(pulse_section["health"]), LinkParams.from_config(pulse_section["link"]),
                      reject_exceptions=(MyError,))
    assert lr.handle(b"OK7", A) == 7
    assert lr.handle(b"XX8", A) is None and lr.rejected["bad_magic"] == 1
    assert lr.handle(b"OK7", A) is None and lr.rejected["duplicate"] == 1
