"""Link health (the Tino VR design, "Comprehensive Communication Health Monitoring").

* Rates over a sliding window of ``window_s`` (10 s) kept in ``window_buckets`` fixed buckets
  (O(1) memory whatever the packet rate): rate = count in window / covered span, with the span
  min(window_s, now - first event). Judged only after ``min_span_s`` of history.
* Graduated levels per stream, deviation ``dev = |rate / expected - 1|``:
  OK (dev <= warn), WARN (warn < dev <= error), ERROR (dev > error); warn/error thresholds
  0.2/0.5 for the incoming stream and 0.1/0.3 for the outgoing pose/skeleton streams.
* Connection: connected while ``now - last_valid_rx <= disconnect_timeout_s`` (3 s). ``update``
  returns ``"disconnected"`` once when the timeout passes (-> safe stop) and ``on_receive``
  returns ``"reconnected"`` on the first valid packet after it (or ``"connected"`` the first time).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Optional

from hri_runtime.parameter_library.typed import params_type

OK, WARN, ERROR, STALE = 0, 1, 2, 3          # diagnostic_msgs/DiagnosticStatus levels
LEVEL_NAMES = {OK: "OK", WARN: "WARN", ERROR: "ERROR", STALE: "STALE"}


HealthParams = params_type("pulse.health")


class RateWindow:
    """Event counter over a sliding window made of fixed buckets."""

    def __init__(self, window_s: float, buckets: int):
        self.window_s = window_s
        self.n = buckets
        self.dt = window_s / buckets
        self.counts = [0] * buckets
        self.head = None          # absolute index of the newest bucket
        self.first_s: Optional[float] = None
        self.total = 0
        self._slot = 0
        self._bucket_start = math.inf
        self._bucket_end = -math.inf

    def _advance(self, now_s: float) -> None:
        idx = int(math.floor(now_s / self.dt))
        if self.head is None:
            self.head = idx
            return
        if idx <= self.head:
            return
        steps = min(idx - self.head, self.n)
        for j in range(1, steps + 1):
            self.counts[(self.head + j) % self.n] = 0
        self.head = idx

    def add(self, now_s: float, k: int = 1) -> None:
        if now_s < self._bucket_end and now_s >= self._bucket_start:   # fast path: same bucket
            self.counts[self._slot] += k
            self.total += k
            return
        if self.first_s is None:
            self.first_s = now_s
        self._advance(now_s)
        self._slot = self.head % self.n
        self._bucket_start = self.head * self.dt
        self._bucket_end = self._bucket_start + self.dt
        self.counts[self._slot] += k
        self.total += k

    def span_s(self, now_s: float) -> float:
        if self.first_s is None:
            return 0.0
        return min(self.window_s, now_s - self.first_s)

    def rate_hz(self, now_s: float) -> float:
        if self.first_s is None:
            return 0.0
        self._advance(now_s)
        span = self.span_s(now_s)
        return sum(self.counts) / span if span > 0 else 0.0


def grade(rate: float, expected: float, warn: float, error: float) -> int:
    dev = abs(rate / expected - 1.0)
    return OK if dev <= warn else (WARN if dev <= error else ERROR)


@dataclass
class StreamReport:
    name: str
    rate_hz: float
    expected_hz: float
    deviation: float
    level: int
    judged: bool


@dataclass
class HealthReport:
    connected: bool
    ever_connected: bool
    since_last_rx_s: Optional[float]
    level: int
    streams: Dict[str, StreamReport]
    message: str


class HealthMonitor:
    def __init__(self, params: HealthParams, start_s: float = 0.0):
        self.p = params
        self.start_s = start_s
        self.rx = RateWindow(params.window_s, params.window_buckets)
        self.tx = {"pose": RateWindow(params.window_s, params.window_buckets),
                   "skeleton": RateWindow(params.window_s, params.window_buckets)}
        self._tx_expected = {"pose": params.pose_send_rate_hz, "skeleton": params.skeleton_send_rate_hz}
        self.last_rx_s: Optional[float] = None
        self.connected = False
        self.ever_connected = False
        self.disconnections = 0
        self.reconnections = 0
        self._next_log_s = start_s
        self._logged_level: Optional[int] = None

    def on_receive(self, now_s: float) -> Optional[str]:
        """A valid packet arrived; returns "connected"/"reconnected" on a state change."""
        self.rx.add(now_s)
        self.last_rx_s = now_s
        if not self.connected:
            self.connected = True
            if self.ever_connected:
                self.reconnections += 1
                return "reconnected"
            self.ever_connected = True
            return "connected"
        return None

    def on_send(self, stream: str, now_s: float) -> None:
        self.tx[stream].add(now_s)

    def update(self, now_s: float) -> Optional[str]:
        """Returns "disconnected" once when the timeout passes."""
        if self.connected and self.last_rx_s is not None and \
                now_s - self.last_rx_s > self.p.disconnect_timeout_s:
            self.connected = False
            self.disconnections += 1
            # a new connection starts a new rate history
            self.rx = RateWindow(self.p.window_s, self.p.window_buckets)
            return "disconnected"
        return None

    def report(self, now_s: float, tx_active: bool = True) -> HealthReport:
        p = self.p
        streams = {}
        rate = self.rx.rate_hz(now_s)
        judged = self.connected and self.rx.span_s(now_s) >= p.min_span_s
        lvl = grade(rate, p.expected_receive_rate_hz, p.in_warn_deviation, p.in_error_deviation) if judged else OK
        streams["receive"] = StreamReport("receive", rate, p.expected_receive_rate_hz,
                                          rate / p.expected_receive_rate_hz - 1.0, lvl, judged)
        for name, win in self.tx.items():
            r = win.rate_hz(now_s)
            j = tx_active and self.connected and win.span_s(now_s) >= p.min_span_s
            lv = grade(r, self._tx_expected[name], p.out_warn_deviation, p.out_error_deviation) if j else OK
            streams[name] = StreamReport(name, r, self._tx_expected[name], r / self._tx_expected[name] - 1.0, lv, j)
        since = None if self.last_rx_s is None else now_s - self.last_rx_s
        if not self.ever_connected:
            level, msg = WARN, "waiting for the headset"
        elif not self.connected:
            level, msg = ERROR, f"disconnected ({since:.1f} s without a valid packet): safe stop"
        else:
            level = max(s.level for s in streams.values())
            bad = [f"{s.name} {s.rate_hz:.1f}/{s.expected_hz:g} Hz" for s in streams.values() if s.level]
            msg = "connected" + (": rate deviation " + ", ".join(bad) if bad else "")
        return HealthReport(self.connected, self.ever_connected, since, level, streams, msg)

    def log_due(self, now_s: float, level: int) -> bool:
        """Link-state logging on change: True when ``level`` differs from the last logged one;
        while healthy (OK) also every ``log_period_s`` (an INFO summary). A link that stays
        degraded is not logged again (the /diagnostics row carries it), so an idle stack without
        a headset logs one line, not one every few seconds."""
        if level != self._logged_level or (level == OK and now_s + 1e-9 >= self._next_log_s):
            self._logged_level = level
            self._next_log_s = now_s + self.p.log_period_s
            return True
        return False
