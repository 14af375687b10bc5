import pytest
from hri_pulse.core import SequenceParams, SequenceTracker
from hri_pulse.core.sequence import DUPLICATE, FIRST, GAP, OK, RESTART, RESTART_PENDING, STALE

M = 1 << 31


@pytest.fixture
def tr(pulse_section):
    return SequenceTracker(SequenceParams.from_config(pulse_section))


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
