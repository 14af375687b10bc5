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
        p50, p99 = _percentiles(per, (0.50, 0.99))
        return {"p50": p50, "p99": p99, "max": float(per.max()),
                "missed": int(np.count_nonzero(per > 2e6 * self.period_s))}


def _percentiles(a: np.ndarray, qs) -> list:
    """numpy's default (linear) percentiles of ``a`` at the fractions ``qs``, from one partial sort
    (``np.partition`` around the order statistics they need; ``np.percentile`` costs more in its
    own overhead than the sort of a few thousand values)."""
    n = len(a)
    pos = [q * (n - 1) for q in qs]
    lo = [int(p) for p in pos]
    ks = sorted({k for i in lo for k in (i, min(i + 1, n - 1))})
    part = np.partition(a, ks)
    out = []
    for p, i in zip(pos, lo):
        x0, x1 = float(part[i]), float(part[min(i + 1, n - 1)])
        out.append(x0 + (p - i) * (x1 - x0))
    return out
