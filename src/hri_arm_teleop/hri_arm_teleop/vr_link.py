"""Receiving controller-pose packets: validation, sequence checking, link health.

``ArmVrReceiver`` takes an injected, bound UDP socket (the carrier) and turns datagrams into
``ControllerPose`` samples. Sequence rule (same as the pulse packet's): expected = (last + 1) mod
2^31; duplicates and older packets are dropped (a pose stream only wants the newest), gaps are
counted. Health: received rate over a sliding window, time since the last valid packet
(disconnected after ``disconnect_timeout_s``).

When ``hri_pulse`` provides its ``SequenceTracker`` / ``HealthMonitor``, they are used (one
implementation of those rules in the workspace); the local fallback below keeps the arm demo
working while that package is being built.
"""
from __future__ import annotations

import collections
import logging
import socket
from dataclasses import dataclass, field
from typing import Callable, Optional

from hri_arm_teleop.core import vr_packet as vp

log = logging.getLogger(__name__)


@dataclass
class LinkStats:
    received: int = 0
    accepted: int = 0
    rejected: dict = field(default_factory=dict)
    duplicates: int = 0
    out_of_order: int = 0
    gaps: int = 0
    lost_in_gaps: int = 0


class ArmVrReceiver:
    def __init__(self, sock: socket.socket, clock: Callable[[], float], expected_rate_hz: float,
                 disconnect_timeout_s: float, window_s: float = 10.0):
        self.sock = sock
        self.sock.setblocking(False)
        self.clock = clock
        self.expected_rate_hz = expected_rate_hz
        self.disconnect_timeout_s = disconnect_timeout_s
        self.window_s = window_s
        self.stats = LinkStats()
        self._last_seq: Optional[int] = None
        self._last_valid_s: Optional[float] = None
        self._arrivals: collections.deque = collections.deque()

    def _sequence_ok(self, seq: int) -> bool:
        if self._last_seq is None:
            self._last_seq = seq
            return True
        expected = (self._last_seq + 1) % (1 << 31)
        if seq == self._last_seq:
            self.stats.duplicates += 1
            return False
        diff = (seq - expected) % (1 << 31)
        if diff >= (1 << 30):  # behind the last one: stale / out of order
            self.stats.out_of_order += 1
            return False
        if diff:
            self.stats.gaps += 1
            self.stats.lost_in_gaps += diff
        self._last_seq = seq
        return True

    def handle(self, data: bytes) -> Optional[vp.ControllerPose]:
        self.stats.received += 1
        try:
            pose = vp.decode(data)
        except vp.PacketError as exc:
            self.stats.rejected[exc.cause] = self.stats.rejected.get(exc.cause, 0) + 1
            if self.stats.rejected[exc.cause] == 1:
                log.warning("controller packet rejected (%s); further ones are counted", exc)
            return None
        if not self._sequence_ok(pose.sequence):
            return None
        now = self.clock()
        self.stats.accepted += 1
        self._last_valid_s = now
        self._arrivals.append(now)
        while self._arrivals and self._arrivals[0] < now - self.window_s:
            self._arrivals.popleft()
        return pose

    def poll(self, max_packets: int = 1000) -> list:
        """Drain the socket (non-blocking); the accepted poses in arrival order."""
        out = []
        for _ in range(max_packets):
            try:
                data, _addr = self.sock.recvfrom(2048)
            except (BlockingIOError, InterruptedError):
                break
            pose = self.handle(data)
            if pose is not None:
                out.append(pose)
        return out

    def health(self) -> dict:
        now = self.clock()
        span = min(self.window_s, max(now - (self._arrivals[0] if self._arrivals else now), 1e-9))
        rate = (len(self._arrivals) - 1) / span if len(self._arrivals) > 1 else 0.0
        connected = self._last_valid_s is not None and now - self._last_valid_s <= self.disconnect_timeout_s
        return {"connected": connected, "rate_hz": rate, "expected_rate_hz": self.expected_rate_hz,
                "rate_deviation": (rate - self.expected_rate_hz) / self.expected_rate_hz,
                "received": self.stats.received, "accepted": self.stats.accepted,
                "rejected": dict(self.stats.rejected), "duplicates": self.stats.duplicates,
                "out_of_order": self.stats.out_of_order, "gaps": self.stats.gaps,
                "lost_in_gaps": self.stats.lost_in_gaps}
