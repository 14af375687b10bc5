"""Absolute-deadline pacing with a fake clock: no drift, missed deadlines counted and skipped."""
import numpy as np

from hri_interaction.core.pacing import NaiveLoop, PacedLoop


class FakeClock:
    def __init__(self, oversleep_s=0.0, read_cost_s=1e-7):
        self.t = 0.0
        self.oversleep_s = oversleep_s
        self.read_cost_s = read_cost_s

    def __call__(self):
        self.t += self.read_cost_s
        return self.t

    def sleep(self, s):
        self.t += max(0.0, s) + self.oversleep_s


def test_paced_loop_has_no_drift_despite_oversleep_and_compute():
    clk = FakeClock(oversleep_s=100e-6)
    loop = PacedLoop(1e-3, clk, clk.sleep, spin_s=200e-6)

    def tick():
        clk.t += 300e-6
    st = loop.run(tick, 1000)
    assert st.missed == 0
    assert abs(st.p50_us - 1000) < 1 and st.max_us < 1001
    assert clk.t < 1.0 + 2e-3


def test_naive_sleep_loop_drifts_by_compute_plus_oversleep():
    clk = FakeClock(oversleep_s=100e-6)
    st = NaiveLoop(1e-3, clk, clk.sleep).run(lambda: setattr(clk, "t", clk.t + 300e-6), 1000)
    assert st.p50_us > 1390


def test_overrun_counts_missed_deadlines_and_skips_ahead():
    clk = FakeClock()
    loop = PacedLoop(1e-3, clk, clk.sleep, spin_s=0.0)
    calls = []

    def tick():
        calls.append(clk.t)
        if len(calls) == 10:
            clk.t += 3.5e-3        # one slow tick
    st = loop.run(tick, 20)
    assert st.missed == 2          # deadlines 10 and 11 ms lost; 12 ms served 0.5 ms late
    starts = np.array(calls)
    # after the overrun the schedule is back on the absolute grid (no burst of catch-up ticks)
    assert np.all(np.diff(starts[12:]) > 0.9e-3)
    x = (starts[12:] - starts[0]) / 1e-3
    assert np.allclose(x, np.round(x), atol=1e-3)
