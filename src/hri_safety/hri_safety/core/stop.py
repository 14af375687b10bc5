"""The system stop, pure logic: the supervisor's latch and the actuator-side watchdog.

Contract (docs/safety.md "System stop contract"):

* :class:`StopLatch` (the stop supervisor): every stop request latches its *source*; the stop
  holds while at least one source is latched and only :meth:`StopLatch.reset` (an explicit
  operator action, never a timer) clears them all. ``reason`` is the first cause still latched.
  A reset is refused while a source is still being requested (a request within the last two
  heartbeat periods: a condition such as a lost link is re-requested every period), as a reset
  is only possible once the cause is gone (ISO 13850). Every accepted reset increments
  ``reset_count``, which the supervisor publishes with the state.
* :class:`StopWatch` (inside every actuator node, via ``StopListener``): the last published state
  plus **silence = stop**. With ``T`` = ``safety.stop.timeout_s`` and the heartbeat period
  ``P = 1 / safety.stop.heartbeat_hz``, the node checks every ``P``, so an actuator is stopped at
  most ``T + P`` after the last heartbeat it received. A heartbeat timeout *latches locally*: it
  only clears when a state with a new ``reset_count`` arrives (a reset made after the silence),
  so a link that comes back (a router restart) never restarts a robot by itself. Before the first
  heartbeat the actuator is stopped too (``no_heartbeat``), but not latched: a stack whose
  supervisor starts a little later moves once it is there.

Both take the time as an argument (seconds of any monotonic clock, the node's clock in the nodes);
nothing here reads a clock, sleeps or touches middleware.
"""
from __future__ import annotations

import re
from typing import Optional
from hri_safety.parameters_gen import SafetyStopParams


__all__ = ["StopParams", "StopLatch", "StopWatch", "sanitize_source", "SOURCE_MAX_CHARS",
           "REASON_MAX_CHARS", "LINK_SOURCE", "NO_HEARTBEAT", "HEARTBEAT_TIMEOUT"]

SOURCE_MAX_CHARS = 32          # format limits of a request (not tuning values: a name and one line)
REASON_MAX_CHARS = 200
_SOURCE_RE = re.compile(r"[a-z][a-z0-9_]{0,31}")
LINK_SOURCE = "link_safe_stop"              # the source latched by the link monitor's safe stop
NO_HEARTBEAT = "no_stop_heartbeat"          # reasons the watchdog gives itself
HEARTBEAT_TIMEOUT = "stop_heartbeat_timeout"


def sanitize_source(source: object) -> str:
    """A source name as latched: ``[a-z][a-z0-9_]{0,31}``, else ``"unknown"`` (a malformed request
    still stops: a stop request is never refused for its form)."""
    s = str(source).strip().lower() if isinstance(source, str) else ""
    return s if _SOURCE_RE.fullmatch(s) else "unknown"


def _one_line(text: object) -> str:
    s = " ".join(str(text).split()) if isinstance(text, str) else ""
    return s[:REASON_MAX_CHARS]


class StopParams(SafetyStopParams):
    """``safety.stop`` of the config tree: ``heartbeat_hz``, ``timeout_s``, ``max_sources``
    (declared in src/hri_safety/parameters.yaml with their bounds and the rule that the timeout
    exceeds one heartbeat period: a bad value is a ConfigError, a ValueError)."""

    @property
    def period_s(self) -> float:
        return 1.0 / self.heartbeat_hz

    @property
    def bound_s(self) -> float:
        """Worst case from the last heartbeat received to the actuator's stop: T + P."""
        return self.timeout_s + self.period_s


class StopLatch:
    """The supervisor's latch. ``request`` latches, ``reset`` clears; both return True when the
    published state changes (the supervisor then publishes at once, not at the next heartbeat)."""

    def __init__(self, params: StopParams):
        self.params = params
        self._reasons: dict[str, str] = {}        # source -> first reason, in latch order
        self._since: dict[str, float] = {}
        self._last: dict[str, float] = {}         # source -> time of its latest request
        self.reset_count = 0
        self.refused_resets = 0
        self.requests = 0                         # every request seen (also repeats)
        self.folded = 0                           # requests whose source did not fit max_sources
        self.ignored_releases = 0                 # link monitor "no stop": never releases

    @property
    def stopped(self) -> bool:
        return bool(self._reasons)

    @property
    def sources(self) -> list[str]:
        return list(self._reasons)

    @property
    def reason(self) -> str:
        """First cause still latched (``source: reason``), "" when not stopped."""
        for src, why in self._reasons.items():
            return f"{src}: {why}" if why else src
        return ""

    def since(self, source: str) -> Optional[float]:
        return self._since.get(source)

    def request(self, source: object, reason: object, now_s: float) -> bool:
        """Latch ``source`` (repeats keep the first reason and time). True if newly latched."""
        self.requests += 1
        src = sanitize_source(source)
        if src in self._reasons:
            self._last[src] = float(now_s)
            return False
        if len(self._reasons) >= max(1, self.params.max_sources - 1):   # the last slot is "other"
            self.folded += 1
            src = "other"
            if src in self._reasons:
                return False
        self._reasons[src] = _one_line(reason)
        self._since[src] = self._last[src] = float(now_s)
        return True

    def on_link_safe_stop(self, stopped: bool, now_s: float) -> bool:
        """The link monitor's safe stop: true latches the source ``link_safe_stop``; false (the
        link is back) is counted and releases nothing, only :meth:`reset` does. True if newly latched."""
        if stopped:
            return self.request(LINK_SOURCE, "link monitor safe stop", now_s)
        self.ignored_releases += 1
        return False

    def status(self) -> dict:
        """For diagnostics."""
        return {"stopped": self.stopped, "sources": ",".join(self._reasons) or "-", "reset_count": self.reset_count,
                "requests": self.requests, "refused_resets": self.refused_resets, "folded": self.folded,
                "ignored_releases": self.ignored_releases}

    def active(self, now_s: float) -> list[str]:
        """Latched sources requested within the last two heartbeat periods (cause still present)."""
        return [s for s in self._reasons if float(now_s) - self._last[s] < 2.0 * self.params.period_s]

    def reset(self, now_s: float) -> tuple[bool, str]:
        """Explicit reset: clear every source, unless one is still requested (refused, counted,
        nothing changes). Always counted (``reset_count`` + 1) when accepted, also when not
        stopped, because it also releases actuators that latched a heartbeat timeout on their own.
        Returns (accepted, one line for the caller)."""
        active = self.active(now_s)
        if active:
            self.refused_resets += 1
            return False, (f"reset refused: {', '.join(active)} still requested (the cause is present); "
                           f"reset once it has ended")
        cleared = self.sources
        self._reasons.clear()
        self._since.clear()
        self._last.clear()
        self.reset_count += 1
        msg = (f"reset #{self.reset_count}: cleared {', '.join(cleared)}" if cleared
               else f"reset #{self.reset_count}: nothing latched (actuators that lost the heartbeat are released)")
        return True, msg


class StopWatch:
    """What an actuator believes: the supervisor's last state, plus silence = stop.

    ``on_state`` for every received state, ``check(now)`` every period; ``stopped`` / ``reason``
    is the result. Both return True when ``stopped`` or ``reason`` changed."""

    def __init__(self, params: StopParams):
        self.params = params
        self.last_rx_s: Optional[float] = None
        self.remote_stopped = False
        self.remote_reason = ""
        self.remote_sources: list[str] = []
        self.reset_count: Optional[int] = None
        self.seq: Optional[int] = None
        self.timeout_latched = False
        self._timeout_reset_count: Optional[int] = None
        self.timeouts = 0                       # heartbeat timeouts seen
        self.duplicates = 0                     # repeated (seq, reset_count): not a heartbeat
        self._last = (self.stopped, self.reason)

    @property
    def stopped(self) -> bool:
        return self.last_rx_s is None or self.timeout_latched or self.remote_stopped

    @property
    def reason(self) -> str:
        if self.timeout_latched:
            return HEARTBEAT_TIMEOUT
        if self.last_rx_s is None:
            return NO_HEARTBEAT
        return self.remote_reason if self.remote_stopped else ""

    @property
    def cause(self) -> str:
        """The reason of a stop that latches actuator faults: ``reason``, but "" while running
        and before the first heartbeat (a supervisor that is not there yet holds, it latches nothing)."""
        return "" if self.last_rx_s is None else self.reason

    def _changed(self) -> bool:
        cur = (self.stopped, self.reason)
        if cur != self._last:
            self._last = cur
            return True
        return False

    def on_state(self, stopped: bool, reason: str, sources, heartbeat_seq: int, reset_count: int,
                 now_s: float) -> bool:
        seq, rc = int(heartbeat_seq), int(reset_count)
        if self.last_rx_s is not None and (seq, rc) == (self.seq, self.reset_count):
            self.duplicates += 1            # a re-delivered latched sample proves nothing is alive
            return self._changed()
        if self.timeout_latched and rc != self._timeout_reset_count:
            self.timeout_latched = False    # an explicit reset was made after the silence
        self.last_rx_s = float(now_s)
        self.seq, self.reset_count = seq, rc
        self.remote_stopped = bool(stopped)
        self.remote_reason = (_one_line(reason) or "stopped") if stopped else ""
        self.remote_sources = [sanitize_source(s) for s in list(sources)[:self.params.max_sources]]
        return self._changed()

    def age_s(self, now_s: float) -> Optional[float]:
        return None if self.last_rx_s is None else float(now_s) - self.last_rx_s

    def check(self, now_s: float) -> bool:
        age = self.age_s(now_s)
        if age is not None and age > self.params.timeout_s and not self.timeout_latched:
            self.timeout_latched = True
            self._timeout_reset_count = self.reset_count
            self.timeouts += 1
        return self._changed()
