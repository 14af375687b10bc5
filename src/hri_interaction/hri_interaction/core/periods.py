"""Tick-to-tick periods of a timer-driven loop, as the interaction state reports them.

The node's 1 ms timer (the python engine) measures its own wall-clock periods: ``tick()`` at the
start of every tick, ``summary()`` over the last ``window`` periods. A missed deadline is a period
longer than 2 T (a whole period without a tick), as the C++ loop counts them (``hri_core.rt``).
"""
from __future__ import annotations

import time
from typing import Callable, Optional

import numpy as np


class PeriodStats:
    """The last ``window`` periods of a loop at ``rate_hz``; ``clock``: seconds (injected; default
    ``time.perf_counter``, the wall clock a timer really wakes on). The periods live in a ring
    buffer (no per-tick allocation; :meth:`summary` reads it in place)."""

    def __init__(self, rate_hz: float, window: int = 5000, clock: Callable[[], float] = time.perf_counter):
        self.period_s = 1.0 / float(rate_hz)
        self.clock = clock
        self._ring = np.empty(max(1, int(window)))
        self._count = 0              # periods seen so far
        self._last: Optional[float] = None

    def tick(self) -> None:
        """A tick starts now."""
        now = self.clock()
        if self._last is not None:
            self._ring[self._count % len(self._ring)] = now - self._last
            self._count += 1
        self._last = now

    def summary(self) -> Optional[dict]:
        """``{p50, p99, max}`` of the periods (µs) and ``missed`` (periods > 2 T); None before
        the second tick."""
        if not self._count:
            return None
        per = self._ring[:min(self._count, len(self._ring))] * 1e6
        p50, p99 = np.percentile(per, (50, 99)).tolist()
        return {"p50": p50, "p99": p99, "max": float(per.max()),
                "missed": int(np.count_nonzero(per > 2e6 * self.period_s))}
