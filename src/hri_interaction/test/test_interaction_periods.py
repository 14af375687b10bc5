"""The python engine's loop statistics: periods from an injected clock, missed = period > 2 T."""
import pytest

from hri_interaction.core.periods import PeriodStats


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_summary_of_periods_and_missed_deadlines():
    c = Clock()
    s = PeriodStats(1000.0, window=100, clock=c)
    assert s.summary() is None
    s.tick()
    assert s.summary() is None                       # one tick: no period yet
    for dt in [1e-3] * 97 + [2.5e-3, 3e-3]:          # two periods longer than 2 T
        c.t += dt
        s.tick()
    r = s.summary()
    assert r["p50"] == pytest.approx(1000.0) and r["max"] == pytest.approx(3000.0)
    assert r["missed"] == 2 and r["p99"] > 1000.0


def test_only_the_last_window_counts():
    c = Clock()
    s = PeriodStats(1000.0, window=10, clock=c)
    s.tick()
    c.t += 5e-3                                      # a missed deadline ...
    s.tick()
    for _ in range(10):                              # ... pushed out by ten good periods
        c.t += 1e-3
        s.tick()
    r = s.summary()
    assert r["missed"] == 0 and r["max"] == pytest.approx(1000.0)
