import pytest
from hri_pulse.core import SequenceParams, SequenceTracker
from hri_pulse.core.sequence import DUPLICATE, FIRST, GAP, JUMP_PENDING, OK, RESTART, RESTART_PENDING, STALE

M = 1 << 31


@pytest.fixture
def tr(pulse_section):
    return SequenceTracker(SequenceParams.from_config(pulse_section["sequence"]))


def test_modulus_from_config_is_2_pow_31(tr):
    assert tr.p.modulus == M


def test_in_order_and_duplicate(tr):
    assert tr.check(5) == FIRST
    assert tr.check(6) == OK
    assert tr.check(6) == DUPLICATE
    assert tr.check(7) == OK
    assert tr.c.duplicates == 1 and tr.c.accepted == 3


def test_stale_out_of_order_is_dropped(tr):
    for s in (10, 11, 13):
        tr.check(s)
    assert tr.check(12) == STALE            # late packet after a newer one: never accepted
    assert tr.last == 13 and tr.c.stale == 1


@pytest.mark.parametrize("missing,severity", [(1, "minor"), (3, "minor"), (4, "moderate"),
                                              (10, "moderate"), (11, "major"), (500, "major")])
def test_gap_classification(tr, missing, severity):
    tr.check(100)
    if severity == "major":                 # a major jump is confirmed by consecutive packets first
        n = tr.p.restart_confirm_packets
        for k in range(n - 1):
            assert tr.check(101 + missing + k) == JUMP_PENDING
        assert tr.c.lost == 0 and tr.last == 100
        assert tr.check(101 + missing + n - 1) == GAP
        g = tr.last_gap
        assert (g.expected, g.missing, g.severity) == (101, missing + n - 1, severity)
        assert tr.c.lost == missing           # the held-back candidates arrived: not lost
        return
    assert tr.check(101 + missing) == GAP
    g = tr.last_gap
    assert (g.expected, g.received, g.missing, g.severity) == (101, 101 + missing, missing, severity)
    assert tr.c.lost == missing


def test_wrap_at_2_pow_31(tr):
    assert tr.check(M - 2) == FIRST
    assert tr.check(M - 1) == OK
    assert tr.check(0) == OK                # (last + 1) mod 2^31
    assert tr.check(M - 1) == STALE         # behind across the wrap
    assert tr.check(0) == DUPLICATE
    assert tr.check(2) == GAP and tr.last_gap.missing == 1 and tr.last_gap.expected == 1


def test_gap_across_the_wrap(tr):
    tr.check(M - 3)
    assert tr.check(1) == GAP
    assert tr.last_gap.expected == M - 2 and tr.last_gap.missing == 3


def test_restart_needs_consecutive_confirmation(tr):
    for s in range(1000, 1010):
        tr.check(s)
    assert tr.check(0) == RESTART_PENDING
    assert tr.check(1) == RESTART_PENDING
    assert tr.check(2) == RESTART
    assert tr.last == 2 and tr.c.restarts == 1
    assert tr.check(3) == OK


def test_single_replayed_old_packets_never_rebase(tr):
    for s in range(1000, 1010):
        tr.check(s)
    for old in (5, 700, 12, 900, 5):        # old, not consecutive
        assert tr.check(old) == RESTART_PENDING
    assert tr.last == 1009 and tr.c.restarts == 0
    assert tr.check(995) == STALE           # reordering depth < restart_min_backjump


def test_reset_accepts_anything_next(tr):
    tr.check(5000)
    tr.reset()
    assert tr.check(3) == FIRST and tr.c.resets == 1


def test_forged_forward_jump_is_never_accepted_and_the_real_stream_loses_nothing(tr):
    """One forged datagram far ahead (the 'major gap' attack): dropped, the baseline stays, every
    real packet after it is accepted in order."""
    for s in range(0, 50):
        assert tr.check(s) in (FIRST, OK)
    assert tr.check(49 + 100000) == JUMP_PENDING
    assert tr.last == 49
    for s in range(50, 80):
        assert tr.check(s) == OK
    assert tr.c.lost == 0 and tr.c.gaps_major == 0 and tr.c.jumps_pending == 1


def test_interleaved_forged_jumps_never_confirm(tr):
    """Forged consecutive numbers interleaved with the real stream: every real packet cancels the
    run, so a forger must out-pace the headset with N consecutive numbers (see authentication)."""
    tr.check(0)
    n = tr.p.restart_confirm_packets
    for k in range(50):
        assert tr.check(5000 + k) == JUMP_PENDING
        if (k + 1) % (n - 1) == 0:
            assert tr.check(tr.last + 1) == OK
    assert tr.last < 100


def test_genuine_forward_jump_resumes_within_confirm_packets(tr):
    """A sender whose counter really jumped (long outage, app state restored): accepted on the
    N-th consecutive packet, then in order."""
    for s in range(100, 110):
        tr.check(s)
    n = tr.p.restart_confirm_packets
    verdicts = [tr.check(70000 + k) for k in range(n + 2)]
    assert verdicts[:n - 1] == [JUMP_PENDING] * (n - 1)
    assert verdicts[n - 1] == GAP and tr.last_gap.severity == "major"
    assert verdicts[n:] == [OK, OK]


def test_gap_classes_must_not_overlap(pulse_section):
    """The declaration's rule: a major gap is longer than every minor one."""
    from hri_runtime.config.tree import ConfigError
    bad = dict(pulse_section["sequence"], major_gap_min=pulse_section["sequence"]["minor_gap_max"])
    with pytest.raises(ConfigError, match="major_gap_min"):
        SequenceParams.from_config(bad)
