"""The atomic movement framework shared by the leg and the base (the Tino VR design).

* Time in **integer milliseconds** since the movement started: ``elapsed_ms = floor((t - t0)·1000)``
  (the Tino VR design's ``updateBaseMovementByTime()`` runs on ``millis()``). A phase table
  ``[(name, duration_ms), ...]`` places phase *i* on ``[start_i, start_i + duration_i)``;
  at ``elapsed_ms >= sum(durations)`` the table is done.
* :class:`PulseGate`: one movement per pulse. hri_pulse repeats a command three times (40 ms apart)
  and then sends state 0 -- only for a headset pulse whose three packets agree and arrived whole
  (``hri_pulse.core.pulse_check``; a corrupted or incomplete one never reaches this topic). A
  message starts a new pulse when its ``(state, direction)`` differs from the previous message's,
  or when it comes after ``pulse_rearm_s`` of silence.
* :class:`CommandQueue`: bounded FIFO (depth from config). ``drop_newest``: a full queue refuses
  the new command; ``replace_newest``: the new command replaces the last queued one.
  Every refused command is counted.
* Faults (:class:`Fault`) are latched by :class:`FaultLatch` until an explicit reset.
"""
from __future__ import annotations

import enum
import math
from collections import Counter, deque
from dataclasses import dataclass
from typing import Sequence


def to_ms(t_s: float) -> int:
    """Seconds -> integer ms (floor, robust against 0.6 being 0.59999...)."""
    return int(math.floor(t_s * 1000.0 + 1e-6))


@dataclass(frozen=True)
class Command:
    """A movement command: ``state`` 0..3, ``direction`` -1 (left), 0 (forward), 1 (right)."""

    state: int
    direction: int = 0
    t_s: float = 0.0


class Fault(enum.Enum):
    LINK_SAFE_STOP = "link_safe_stop"
    SYSTEM_STOP = "system_stop"        # hri_safety's system stop (docs/safety.md)
    STALL = "stall"
    HOME_TIMEOUT = "home_timeout"
    ENCODER_RANGE = "encoder_out_of_range"
    DEVICE = "device_fault"            # the driver's device stalled or vanished (serial link)


class FaultLatch:
    """First fault wins and stays until :meth:`reset`; later faults are counted."""

    def __init__(self) -> None:
        self.fault: Fault | None = None
        self.detail = ""
        self.counts: Counter[str] = Counter()

    def trip(self, fault: Fault, detail: str = "") -> bool:
        self.counts[fault.value] += 1
        if self.fault is None:
            self.fault, self.detail = fault, detail
            return True
        return False

    @property
    def active(self) -> bool:
        return self.fault is not None

    def reset(self) -> None:
        self.fault, self.detail = None, ""


class PhaseTable:
    """Time-based phases at ms resolution: ``phases = [(name, duration_s), ...]``."""

    def __init__(self, phases: Sequence[tuple[str, float]]):
        self.names = [n for n, _ in phases]
        self.durations_ms = [to_ms(d) for _, d in phases]
        self.starts_ms = []
        acc = 0
        for d in self.durations_ms:
            self.starts_ms.append(acc)
            acc += d
        self.total_ms = acc

    def phase_at(self, elapsed_ms: int) -> int | None:
        """Index of the active phase, or None when done (``elapsed_ms >= total_ms``)."""
        if elapsed_ms < 0:
            return 0
        for i, (s, d) in enumerate(zip(self.starts_ms, self.durations_ms)):
            if s <= elapsed_ms < s + d:
                return i
        return None


class PulseGate:
    """Turns the repeated messages of one pulse into one command (see module docstring)."""

    def __init__(self, rearm_s: float):
        self.rearm_ms = to_ms(rearm_s)
        self._last_key: tuple[int, int] | None = None
        self._last_ms: int | None = None
        self.repeats = 0

    def accept(self, state: int, direction: int, t_s: float) -> bool:
        now = to_ms(t_s)
        key = (state, direction)
        new = (self._last_key != key or self._last_ms is None or now - self._last_ms >= self.rearm_ms)
        self._last_key, self._last_ms = key, now
        if not new:
            self.repeats += 1
        return new


class CommandQueue:
    """Bounded FIFO of commands waiting for the running movement to complete. Full:
    ``replace_newest`` False (``atomic.queue_policy: drop_newest``) refuses a new command, True
    (``replace_newest``) puts it in place of the last queued one."""

    def __init__(self, depth: int, replace_newest: bool = False):
        self.depth, self.replace_newest = depth, replace_newest
        self._q: deque[Command] = deque()
        self.dropped = 0

    def push(self, cmd: Command) -> bool:
        if len(self._q) < self.depth:
            self._q.append(cmd)
            return True
        self.dropped += 1
        if self.replace_newest and self._q:
            self._q[-1] = cmd
            return True
        return False

    def pop(self) -> Command | None:
        return self._q.popleft() if self._q else None

    def clear(self) -> None:
        self._q.clear()

    def __len__(self) -> int:
        return len(self._q)
