"""``VrCommandCore``: the whole VR path without I/O, shared by the node, the tests and the bench.

datagram -> ``LinkReceiver`` (validation, sequence, peer policy, health) -> head pass-through
(degrees -> radians) + ``RisingEdge`` on (base_state, base_angular) -> ``PulseGenerator``.
``tick(now)`` runs the timeout (disconnection: pulse cancelled, edge reset, ``safe_stop`` set)
and returns the pulse/idle messages due.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

from hri_pulse.core.codec import PacketAuth, PacketParams, UnityCodec, UnityPacket
from hri_pulse.core.health import HealthParams
from hri_pulse.core.link import LinkParams, LinkReceiver
from hri_pulse.core.pulse import Command, Emission, PulseGenerator, PulseParams, RisingEdge
from hri_pulse.core.sequence import SequenceParams

_DEG = math.pi / 180.0


@dataclass(frozen=True)
class PulseConfig:
    packet: PacketParams
    sequence: SequenceParams
    pulse: PulseParams
    health: HealthParams
    link: LinkParams
    auth: Optional[PacketAuth] = None       # structural: None = unauthenticated 32-byte packets

    @classmethod
    def from_config(cls, section: dict) -> "PulseConfig":
        """Raises ValueError when ``pulse.auth`` requires a key that cannot be read."""
        return cls(PacketParams.from_config(section), SequenceParams.from_config(section),
                   PulseParams.from_config(section), HealthParams.from_config(section),
                   LinkParams.from_config(section), PacketAuth.from_config(section))


@dataclass
class TickResult:
    emissions: List[Emission]
    event: Optional[str]          # "disconnected" or None


class VrCommandCore:
    def __init__(self, cfg: PulseConfig, clock: Callable[[], float], logger=None):
        self.cfg = cfg
        self.clock = clock
        self.link = LinkReceiver(UnityCodec(cfg.packet, cfg.auth), clock, cfg.sequence, cfg.health, cfg.link,
                                 logger=logger, name="vr")
        self.edge = RisingEdge()
        self.pulse = PulseGenerator(cfg.pulse, start_s=clock())
        self.safe_stop = False
        self.commands = 0

    @staticmethod
    def head_rad(pkt: UnityPacket) -> Tuple[float, float, float]:
        return (pkt.head_pitch * _DEG, pkt.head_pan * _DEG, pkt.head_tilt * _DEG)

    def on_datagram(self, data: bytes, peer=None, now_s: Optional[float] = None) -> Optional[UnityPacket]:
        """One datagram; returns the accepted packet (caller forwards the head) or None."""
        if now_s is None:
            now_s = self.clock()
        pkt = self.link.handle(data, peer, now_s)
        if pkt is None:
            return None
        if self.link.last_event is not None and self.link.last_event != "disconnected":
            self.link.last_event = None
            self.safe_stop = False
        st = pkt.base_state
        if st == 0 and self.edge.prev[0] == 0:   # fast path: idle stream, nothing to trigger
            return pkt
        if self.edge.update(st, pkt.base_angular):
            if self.pulse.request(Command(pkt.base_state, pkt.base_angular, self.head_rad(pkt)), now_s):
                self.commands += 1
        return pkt

    def tick(self, now_s: Optional[float] = None) -> TickResult:
        if now_s is None:
            now_s = self.clock()
        ev = self.link.update(now_s)
        if ev == "disconnected":
            self.safe_stop = True
            self.pulse.cancel(now_s)
            self.edge.reset()
        return TickResult(self.pulse.due(now_s), ev)
