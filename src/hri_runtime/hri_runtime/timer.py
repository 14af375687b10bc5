"""``Timer``: ``Node.create_timer`` (periodic on the node's clock, run by the executor)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from hri_runtime.executors import Executor

__all__ = ["Timer"]


class Timer:
    """A periodic timer on a clock (wall/fake or sim). Fires at start + k*period; when late by
    several periods it fires once and skips the missed ones (as rcl), counted in ``missed``."""

    def __init__(self, executor: "Executor", period_s: float, callback: Callable[[], None], clock,
                 owner=None):
        if not (period_s > 0.0):
            raise ValueError(f"timer period must be > 0 s, got {period_s!r}")
        self.executor = executor
        self.period_ns = max(1, int(round(period_s * 1e9)))
        self.callback = callback
        self.clock = clock
        self.owner = owner
        self.next_ns = clock.now_ns() + self.period_ns
        self._canceled = False
        self.missed = 0           # periods skipped because a call came too late (deadlines missed)
        self.seq = executor._next_seq()

    @property
    def timer_period_ns(self) -> int:
        return self.period_ns

    def cancel(self) -> None:
        self._canceled = True

    def is_canceled(self) -> bool:
        return self._canceled

    def reset(self) -> None:
        self._canceled = False
        self.next_ns = self.clock.now_ns() + self.period_ns
        self.executor.wake()

    def time_until_next_call_s(self) -> float:
        return (self.next_ns - self.clock.now_ns()) * 1e-9

    def _due(self) -> bool:
        return not self._canceled and self.clock.now_ns() >= self.next_ns

    def _fire(self) -> None:
        now = self.clock.now_ns()
        self.next_ns += self.period_ns
        if self.next_ns <= now:  # late by whole periods: skip them
            missed = (now - self.next_ns) // self.period_ns + 1
            self.next_ns += missed * self.period_ns
            self.missed += missed
        self.callback()

