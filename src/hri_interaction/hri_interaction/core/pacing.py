"""Wall-clock pacing of the 1 kHz loop on a real robot: absolute deadlines, sleep then spin.

Deadline k is t0 + k·T (absolute, so errors never accumulate). Before each deadline the loop
sleeps until ``deadline − spin_s`` (coarse, the OS may oversleep) and then busy-waits on the clock
for the rest. A tick that starts after its deadline + T counts as a *missed* deadline and the
schedule skips ahead (no burst of catch-up ticks). Periods (start-to-start) are recorded for
p50/p99/max statistics. Clock and sleep are injected (``clock() -> s``, ``sleep(s)``), so the
logic is tested with a fake clock; the benchmark uses ``time.perf_counter`` / ``time.sleep``.

:class:`NaiveLoop` is the baseline: ``sleep(T)`` after each tick (relative, drifts).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class PeriodStats:
    n: int
    p50_us: float
    p99_us: float
    max_us: float
    mean_us: float
    std_us: float
    missed: int

    @classmethod
    def of(cls, periods_s, missed: int) -> "PeriodStats":
        p = np.asarray(periods_s, float) * 1e6
        if p.size == 0:
            return cls(0, *(float("nan"),) * 5, missed)
        return cls(int(p.size), float(np.percentile(p, 50)), float(np.percentile(p, 99)),
                   float(p.max()), float(p.mean()), float(p.std()), int(missed))


class PacedLoop:
    def __init__(self, period_s: float, clock: Callable[[], float], sleep: Callable[[float], None],
                 spin_s: float):
        if period_s <= 0 or spin_s < 0:
            raise ValueError("period_s must be > 0 and spin_s >= 0")
        self.period_s = float(period_s)
        self.clock, self.sleep, self.spin_s = clock, sleep, float(spin_s)
        self.periods: list[float] = []
        self.missed = 0

    def run(self, tick: Callable[[], None], n_ticks: int) -> PeriodStats:
        T = self.period_s
        t0 = self.clock()
        k = 0
        last_start = None
        done = 0
        while done < n_ticks:
            deadline = t0 + k * T
            now = self.clock()
            if now < deadline - self.spin_s:
                self.sleep(deadline - self.spin_s - now)
            while self.clock() < deadline:
                pass
            start = self.clock()
            if start > deadline + T:          # overran: skip ahead, count the missed deadlines
                skipped = int((start - deadline) // T)
                self.missed += skipped
                k += skipped
            if last_start is not None:
                self.periods.append(start - last_start)
            last_start = start
            tick()
            done += 1
            k += 1
        return PeriodStats.of(self.periods, self.missed)


class NaiveLoop:
    """tick(); sleep(T) – the relative-sleep loop most first implementations use."""

    def __init__(self, period_s: float, clock: Callable[[], float], sleep: Callable[[float], None]):
        self.period_s, self.clock, self.sleep = float(period_s), clock, sleep
        self.periods: list[float] = []

    def run(self, tick: Callable[[], None], n_ticks: int) -> PeriodStats:
        last = None
        for _ in range(n_ticks):
            start = self.clock()
            if last is not None:
                self.periods.append(start - last)
            last = start
            tick()
            self.sleep(self.period_s)
        missed = int(sum(1 for p in self.periods if p > 2 * self.period_s))
        return PeriodStats.of(self.periods, missed)
