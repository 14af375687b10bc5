"""Receiving controller-pose packets on ``hri_pulse``'s link machinery (one implementation).

``ArmVrReceiver`` = ``hri_pulse.carriers.UdpCarrier`` (an injected, bound UDP socket drained on a
bounded budget) + ``hri_pulse.core.LinkReceiver`` with the arm's codec
(``vr_packet.ControllerPoseCodec``): allow-list / peer lock, validation (every rejection counted
by cause), sequence rules (mod 2^31, duplicates and stale packets dropped, gaps classified,
restart confirmation) and link health (rate over a sliding window, disconnection after
``teleop.vr.disconnect_timeout_s``). The rules' numbers come from the ``pulse`` config section
(``pulse.sequence``, ``pulse.link``, ``pulse.health``, ``pulse.udp``); the expected rate and the
timeout of this link from ``teleop.vr``. Authentication: ``pulse.auth`` as for the pulse packet
(``hri_pulse.core.auth``, the one framing of both headset links: trailer, key ring, replay window).
"""
from __future__ import annotations

import dataclasses
import logging
import socket
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from hri_arm_teleop.core import vr_packet as vp
from hri_arm_teleop.parameters_gen import TeleopVrParams
from hri_pulse.carriers import UdpCarrier
from hri_pulse.core.auth import Authenticator, AuthParams
from hri_pulse.core.health import LEVEL_NAMES, HealthParams
from hri_pulse.core.link import LinkParams, LinkReceiver
from hri_pulse.core.sequence import SequenceParams
from hri_pulse.parameters_gen import PulseUdpParams

log = logging.getLogger(__name__)


@dataclass
class LinkStats:
    """A flat view of the receiver's counters (rejected: only the causes that occurred)."""

    received: int = 0
    accepted: int = 0
    rejected: dict = field(default_factory=dict)
    duplicates: int = 0
    out_of_order: int = 0
    gaps: int = 0
    lost_in_gaps: int = 0


class ArmVrReceiver:
    def __init__(self, sock: socket.socket, clock: Callable[[], float], cfg: dict,
                 logger: Optional[logging.Logger] = None):
        """``sock``: a bound UDP socket; ``cfg``: the merged robot config (``pulse.auth`` required:
        the keys are read from its key file, ValueError when they cannot be)."""
        vr, udp = TeleopVrParams.from_tree(cfg), PulseUdpParams.from_tree(cfg)
        health = dataclasses.replace(HealthParams.from_tree(cfg),
                                     expected_receive_rate_hz=vr.expected_rate_hz,
                                     disconnect_timeout_s=vr.disconnect_timeout_s)
        self.carrier = UdpCarrier(sock, udp.max_packets_per_cycle, udp.max_datagram_bytes)
        self.clock = clock
        self.auth = Authenticator.from_params(AuthParams.from_tree(cfg), vp.SIZE)
        self.link = LinkReceiver(vp.ControllerPoseCodec(), clock,
                                 SequenceParams.from_tree(cfg), health,
                                 LinkParams.from_tree(cfg), logger=logger or log,
                                 name="vr_controller", reject_exceptions=(vp.PacketError,), auth=self.auth)

    @property
    def address(self):
        return self.carrier.address

    def handle(self, data: bytes, peer=None) -> Optional[vp.ControllerPose]:
        return self.link.handle(data, peer)

    def poll(self) -> list:
        """Drain the socket (non-blocking, bounded); the accepted poses in arrival order. Also
        runs the disconnection timeout."""
        out = []
        for data, peer in self.carrier.drain():
            pose = self.link.handle(data, peer)
            if pose is not None:
                out.append(pose)
        self.link.update()
        return out

    def receive(self, expected: int, timeout_s: float, on_pose: Callable[[vp.ControllerPose], None]) -> int:
        """Lockstep hand-off on loopback: poll until ``expected`` poses were accepted (each passed
        to ``on_pose``) or ``timeout_s`` of wall time passed; returns how many did not arrive."""
        got = 0
        deadline = time.perf_counter() + timeout_s
        while True:
            for p in self.poll():
                on_pose(p)
                got += 1
            if got >= expected or time.perf_counter() > deadline:
                return max(0, expected - got)
            time.sleep(0.0001)

    @property
    def stats(self) -> LinkStats:
        c = self.link.tracker.c
        return LinkStats(self.link.received, self.link.accepted,
                         {k: v for k, v in self.link.rejected.items() if v and k not in ("duplicate", "stale")},
                         c.duplicates, c.stale, c.gaps_minor + c.gaps_moderate + c.gaps_major, c.lost)

    def health(self) -> dict:
        now = self.clock()
        self.link.update(now)
        rep = self.link.health.report(now, tx_active=False)
        rx = rep.streams["receive"]
        s = self.stats
        return {"connected": rep.connected, "rate_hz": rx.rate_hz, "expected_rate_hz": rx.expected_hz,
                "rate_deviation": rx.deviation, "level": LEVEL_NAMES[rep.level], "message": rep.message,
                "received": s.received, "accepted": s.accepted, "rejected": s.rejected,
                "duplicates": s.duplicates, "out_of_order": s.out_of_order, "gaps": s.gaps,
                "lost_in_gaps": s.lost_in_gaps}

    def diagnose(self, stat) -> None:
        """The ``/diagnostics`` status of this link (``hri_runtime.diagnostics`` task): level and
        message of the link health, every counter, each rejection cause as ``rejected_<cause>``."""
        now = self.clock()
        self.link.update(now)
        rep = self.link.health.report(now, tx_active=False)
        stat.summary(int(rep.level), rep.message)
        vals = {"connected": rep.connected, "peer": self.link.owner, "authenticated": self.auth is not None,
                "receive_rate_hz": f"{rep.streams['receive'].rate_hz:.2f}", **self.link.counter_values()}
        for k, v in vals.items():
            stat.add(k, v)

    def close(self) -> None:
        self.carrier.close()
