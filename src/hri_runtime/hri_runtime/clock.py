"""Node clocks: ROS time from the backend (wall time, or the fake clock of InprocContext), or
simulated time from ``/clock`` (rosgraph_msgs/msg/Clock) when the parameter ``use_sim_time`` is
true. ``now_s()`` is float seconds; ``now()`` a Time with integer nanoseconds (as rclpy)."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

__all__ = ["Time", "Clock", "SimClock"]


@dataclass(frozen=True, order=True)
class Time:
    nanoseconds: int

    @classmethod
    def from_s(cls, t_s: float) -> "Time":
        return cls(int(round(t_s * 1e9)))

    @property
    def s(self) -> float:
        return self.nanoseconds * 1e-9

    def seconds_nanoseconds(self) -> tuple[int, int]:
        return divmod(self.nanoseconds, 1_000_000_000)

    def to_msg(self):
        """builtin_interfaces/msg/Time."""
        from hri_runtime import msgs

        sec, nsec = self.seconds_nanoseconds()
        return msgs.new("builtin_interfaces/msg/Time", sec=sec, nanosec=nsec)

    @classmethod
    def from_msg(cls, m) -> "Time":
        return cls(int(m.sec) * 1_000_000_000 + int(m.nanosec))


class Clock:
    """ROS time of the backend: ``source()`` returns seconds (wall time, or a fake clock)."""

    is_sim = False

    def __init__(self, source: Callable[[], float], source_ns: Callable[[], int] | None = None):
        self._source = source
        if source_ns is not None:       # a source with integer nanoseconds (InprocContext)
            self.now_ns = source_ns

    def now_s(self) -> float:
        return self._source()

    def now_ns(self) -> int:
        return int(round(self._source() * 1e9))

    def now(self) -> Time:
        return Time(self.now_ns())


class SimClock(Clock):
    """Simulated time, integer nanoseconds: THE simulated clock of the workspace.

    Two writers, one class: a node with ``use_sim_time`` sets it from ``/clock``
    (:meth:`set_ns`); a lockstep run (:class:`hri_runtime.lockstep.Lockstep`) advances it one step
    at a time (:meth:`advance`). It starts at ``start_s`` (0.0: "no /clock received yet").

    Readers: ``now()`` (Time), ``now_s()`` (float s), and calling the clock itself, ``clock()`` ->
    float seconds, so it is the injected ``clock`` of the cores (``Callable[[], float]``).

    ``listeners`` are called (on the writer's thread) after every change, so timers on this clock
    fire when simulated time passes their deadline."""

    is_sim = True

    def __init__(self, start_s: float = 0.0):
        self._t_ns = int(round(start_s * 1e9))
        self._lock = threading.Lock()
        self.listeners: list[Callable[[], None]] = []
        super().__init__(lambda: self._t_ns * 1e-9)

    def __call__(self) -> float:
        return self._t_ns * 1e-9

    def now_ns(self) -> int:
        return self._t_ns

    def set_ns(self, t_ns: int) -> None:
        with self._lock:
            self._t_ns = int(t_ns)
        for fn in list(self.listeners):
            fn()

    def set_s(self, t_s: float) -> None:
        """Set simulated time to ``t_s`` seconds (rounded to the nanosecond)."""
        self.set_ns(int(round(t_s * 1e9)))

    def advance_ns(self, dt_ns: int) -> None:
        """Move simulated time forward by ``dt_ns`` (>= 0) nanoseconds."""
        if dt_ns < 0:
            raise ValueError(f"advance_ns({dt_ns}): simulated time does not run backwards")
        self.set_ns(self._t_ns + int(dt_ns))

    def advance(self, dt_s: float) -> None:
        """Move simulated time forward by ``dt_s`` seconds (rounded to the nanosecond)."""
        self.advance_ns(int(round(dt_s * 1e9)))

    def now(self) -> Time:
        return Time(self._t_ns)
