"""PulseCheck (the Tino VR design's consistency check across a pulse's three messages): pure
logic, times and sequence numbers given by the test (docs/protocols.md "Pulse consistency")."""
import pytest
from hri_runtime.config.tree import load_robot_config

from hri_pulse.core.pulse_check import CAUSES, PulseCheck, PulseCheckParams

CFG = load_robot_config("tino")["pulse"]
T = 1.0 / CFG["emulator"]["rate_hz"]          # the headset's packet period (40 ms)


@pytest.fixture
def chk():
    return PulseCheck(PulseCheckParams.from_config(CFG["check"]), CFG["sequence"]["modulus"])


def feed(chk, packets, seq0=100, t0=10.0):
    """packets: (state, direction) per stream slot, or None for a slot lost in transit.
    Returns the decisions in order."""
    out = []
    for k, v in enumerate(packets):
        if v is None:
            continue
        d = chk.on_message(v[0], v[1], seq0 + k, t0 + k * T, payload=k)
        if d is not None:
            out.append(d)
    return out


def test_a_consistent_pulse_is_one_command_decided_at_its_third_message(chk):
    ds = feed(chk, [(0, 0), (2, 1), (2, 1)])
    assert ds == [] and chk.pending                     # not before the third message
    ds = feed(chk, [(2, 1)], seq0=103, t0=10.0 + 3 * T)
    assert len(ds) == 1 and ds[0].accepted and (ds[0].state, ds[0].direction) == (2, 1)
    assert ds[0].first_seq == 101 and ds[0].payload == 1   # the opening packet (its head angles)
    assert chk.accepted == 1 and chk.rejected_total == 0 and not chk.pending


def test_holding_the_value_after_the_pulse_is_nothing_new(chk):
    ds = feed(chk, [(0, 0), (3, -1), (3, -1), (3, -1), (3, -1), (3, -1), (0, 0), (3, -1), (3, -1), (3, -1)])
    assert [(d.accepted, d.state) for d in ds] == [(True, 3), (True, 3)]
    assert chk.held == 2


@pytest.mark.parametrize("packets,cause", [
    ([(0, 0), (2, 0), (3, 0), (2, 0), (0, 0)], "state_mismatch"),          # corrupted middle: state
    ([(0, 0), (2, 0), (2, 0), (3, 0), (0, 0)], "state_mismatch"),          # corrupted last: state
    ([(0, 0), (3, 1), (3, -1), (3, 1), (0, 0)], "direction_mismatch"),     # corrupted middle: direction
    ([(0, 0), (3, 1), (3, 1), (3, 0), (0, 0)], "direction_mismatch"),      # corrupted last: direction
    ([(0, 0), (1, 0), (0, 0), (1, 0), (0, 0)], "incomplete"),              # middle turned idle
    ([(0, 0), (1, 0), (1, 0), (0, 0), (0, 0)], "incomplete"),              # 2 of 3 sent
    ([(0, 0), (1, 0), (0, 0), (0, 0), (0, 0)], "incomplete"),              # 1 of 3 sent
    ([(0, 0), (1, 0), None, None, (0, 0)], "incomplete"),                  # middle and last lost
    ([(0, 0), None, (1, 0), (1, 0), (0, 0)], "incomplete"),                # opening lost: the 2nd opens, the idle end ends it
])
def test_a_bad_pulse_is_rejected_once_with_its_cause(chk, packets, cause):
    ds = feed(chk, packets)
    assert [(d.accepted, d.cause) for d in ds] == [(False, cause)]
    assert chk.rejected[cause] == 1 and chk.rejected_total == 1 and chk.accepted == 0
    assert ds[0].detail                                    # says what was wrong
    # a good pulse right after the bad one is a command
    ds = feed(chk, [(0, 0), (2, 1), (2, 1), (2, 1), (0, 0)], seq0=200, t0=20.0)
    assert [(d.accepted, d.state, d.direction) for d in ds] == [(True, 2, 1)]


@pytest.mark.parametrize("packets,decided_at", [
    ([(0, 0), (2, 1), None, (2, 1), (0, 0)], 3),           # middle lost: decided at the last message
    ([(0, 0), (2, 1), (2, 1), None, (0, 0)], 4),           # last lost: at the next packet past the pulse
])
def test_one_lost_message_still_delivers_the_command(chk, packets, decided_at):
    """The design: "if one of the three 40ms transmissions fails due to network interruption,
    the remaining cycles ensure command delivery" -- two agreeing messages (min_messages)."""
    assert CFG["check"]["min_messages"] == 2
    out = []
    for k, v in enumerate(packets):
        if v is not None:
            d = chk.on_message(v[0], v[1], 100 + k, 10.0 + k * T, payload=k)
            if d is not None:
                out.append((k, d))
    assert [(k, d.accepted, d.state, d.direction, d.payload) for k, d in out] == [(decided_at, True, 2, 1, 1)]
    assert chk.accepted == 1 and chk.rejected_total == 0


def test_a_pulse_whose_last_message_is_lost_is_decided_when_the_window_ends(chk):
    feed(chk, [(0, 0), (2, 0), (2, 0)])                    # then the link goes quiet
    w = CFG["check"]["window_s"]
    assert chk.expire(10.0 + T + w - 1e-3) is None
    d = chk.expire(10.0 + T + w + 1e-3)
    assert d is not None and d.accepted and (d.state, d.direction) == (2, 0)


def test_min_messages_is_capped_at_messages():
    one = dict(CFG["check"], messages=1)               # a 1-message pulse: min_messages 2 means 1
    chk = PulseCheck(PulseCheckParams.from_config(one), CFG["sequence"]["modulus"])
    d = chk.on_message(2, 1, 5, 1.0)
    assert d is not None and d.accepted


def test_a_corrupted_message_order_breaks_the_run(chk):
    """The middle message's number is corrupted to 5 ahead (a gap the link accepts): the real
    third message is then stale (the link drops it), the pulse has 1 of its 3 slots: rejected."""
    assert chk.on_message(1, 0, 100, 10.0) is None
    d = chk.on_message(1, 0, 105, 10.0 + T)
    assert d is not None and not d.accepted and d.cause == "incomplete" and "1 of 3" in d.detail
    assert chk.on_message(0, 0, 106, 10.0 + 2 * T) is None
    assert chk.held == 1 and chk.rejected_total == 1


def test_a_pulse_that_stops_is_rejected_when_its_window_ends(chk):
    feed(chk, [(0, 0), (2, 0)])                            # one message, then the link goes quiet
    w = CFG["check"]["window_s"]
    assert chk.expire(10.0 + T + w - 1e-3) is None
    d = chk.expire(10.0 + T + w + 1e-3)
    assert d is not None and not d.accepted and d.cause == "incomplete"
    assert chk.expire(11.0) is None                         # once


def test_a_late_third_message_is_rejected(chk):
    w = CFG["check"]["window_s"]
    assert chk.on_message(3, 0, 7, 1.0) is None
    assert chk.on_message(3, 0, 8, 1.0 + T) is None
    d = chk.on_message(3, 0, 9, 1.0 + w + 0.01)
    assert d is not None and not d.accepted and d.cause == "incomplete" and "window" in d.detail


def test_abort_rejects_an_open_pulse_and_forgets_the_held_value(chk):
    feed(chk, [(0, 0), (2, 0)])
    d = chk.abort("the link was lost")
    assert d is not None and d.cause == "incomplete" and "link was lost" in d.detail
    assert chk.abort("again") is None
    ds = feed(chk, [(2, 0), (2, 0), (2, 0)], seq0=0, t0=30.0)    # a restarted app: same value is new
    assert [d.accepted for d in ds] == [True]


def test_sequence_numbers_wrap(chk):
    m = CFG["sequence"]["modulus"]
    ds = feed(chk, [(0, 0), (1, 1), (1, 1), (1, 1)], seq0=m - 2)
    assert [d.accepted for d in ds] == [True]


def test_every_cause_is_counted_from_zero(chk):
    assert set(chk.rejected) == set(CAUSES) and not any(chk.rejected.values())


def test_one_message_pulses_when_configured():
    p = PulseCheckParams.from_config({**CFG["check"], "messages": 1})
    chk = PulseCheck(p)
    ds = feed(chk, [(0, 0), (2, 0), (2, 0), (0, 0), (3, 1)])
    assert [(d.accepted, d.state) for d in ds] == [(True, 2), (True, 3)]
