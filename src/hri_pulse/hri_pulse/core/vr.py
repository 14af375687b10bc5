"""``VrCommandCore``: the whole VR path without I/O, shared by the node, the tests and the bench.

datagram -> ``LinkReceiver`` (validation, sequence, peer policy, health) -> head pass-through
(degrees -> radians) + ``PulseCheck`` on (base_state, base_angular, message_order): a headset pulse
becomes a command only when its messages are complete and agree (decided at its last message;
a rejected pulse is counted by cause and logged once) -> ``PulseGenerator``.
``tick(now)`` runs the timeout (disconnection: pulse cancelled, an open headset pulse rejected,
``safe_stop`` set) and the pulse check's window
and returns the pulse/idle messages due, the safe-stop value to publish when it changed and
whether a stop request is due (every ``stop_request_period_s`` while the link is lost).
``flood_check(now)`` (once per node tick) runs the kernel flood filter (:mod:`.flood`);
``feedback(stream, now)`` says where a feedback packet goes; ``status(now)`` is the health
report and the counters of the link (the diagnostics), ``log_line`` the link-state log (on change).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

from hri_runtime.parameter_library.typed import params_type

from hri_pulse.core.auth import Authenticator
from hri_pulse.core.codec import UnityCodec, UnityPacket
from hri_pulse.core.flood import FloodFilter
from hri_pulse.core.health import LEVEL_NAMES, HealthReport
from hri_pulse.core.link import LinkReceiver
from hri_pulse.core.pulse import Command, Emission, PulseGenerator
from hri_pulse.core.pulse_check import CAUSES as PULSE_CAUSES
from hri_pulse.core.pulse_check import Decision, PulseCheck

_DEG = math.pi / 180.0


PulseConfig = params_type("pulse")


@dataclass
class TickResult:
    emissions: List[Emission]
    event: Optional[str]              # "disconnected" or None
    safe_stop: Optional[bool] = None  # the link's safe stop, when it changed (after a first connection)
    stop_request: bool = False        # a system stop request is due (link lost)


class VrCommandCore:
    def __init__(self, cfg: PulseConfig, clock: Callable[[], float], logger=None, *,
                 stop_request_period_s: float = math.inf,
                 host_filter: Optional[Callable[[Optional[str]], bool]] = None):
        """``cfg``: the ``pulse`` section (:data:`PulseConfig`); with ``pulse.auth.mode``
        required the keys are read from ``pulse.auth.key_file`` (ValueError when they cannot be).
        ``stop_request_period_s``: while the link is lost a stop request is due this often
        (``1 / safety.stop.heartbeat_hz``); ``host_filter``: the carrier's kernel source filter
        (``UdpCarrier.host_filter``; None: no kernel flood filter)."""
        self.cfg = cfg
        self.clock = clock
        # None: unauthenticated 32-byte packets (pulse.auth.mode off)
        self.auth = Authenticator.from_params(cfg.auth, UnityCodec.size)
        self.link = LinkReceiver(UnityCodec(cfg.packet), clock, cfg.sequence, cfg.health, cfg.link,
                                 logger=logger, name="vr", auth=self.auth)
        self.check = PulseCheck(cfg.check, cfg.sequence.modulus)
        self.pulse = PulseGenerator(cfg.pulse, start_s=clock())
        self.flood = FloodFilter(cfg.link.flood_filter_min_pps, cfg.link.flood_filter_hold_s,
                                 cfg.link.kernel_flood_filter and cfg.link.peer_lock, host_filter,
                                 logger=self.link.log)
        self.safe_stop = False
        self.commands = 0
        self.stop_requests = 0
        self.stop_request_period_s = stop_request_period_s
        self._stop_request_t: Optional[float] = None
        self._stop_published: Optional[bool] = None
        self._feedback_seq = {"pose": 0, "skeleton": 0}

    @staticmethod
    def head_rad(pkt: UnityPacket) -> Tuple[float, float, float]:
        return (pkt.head_pitch * _DEG, pkt.head_pan * _DEG, pkt.head_tilt * _DEG)

    @staticmethod
    def audio(pkt: UnityPacket) -> Tuple[float, float]:
        """(volume, orientation rad) of an accepted packet (range-checked by the codec)."""
        return (float(pkt.audio_volume), pkt.audio_orientation * _DEG)

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
        if st == 0 and self.check.quiet:         # fast path: idle stream, no pulse open
            return pkt
        d = self.check.on_message(st, pkt.base_angular, pkt.message_order, now_s, pkt)
        if d is not None:
            self._decided(d, now_s)
        return pkt

    def _decided(self, d: Decision, now_s: float) -> None:
        """A headset pulse closed: a consistent one is a command (head angles of its first
        message), a rejected one is logged once (and at most once per reject_log_period_s per cause)."""
        if d.accepted:
            if self.pulse.request(Command(d.state, d.direction, self.head_rad(d.payload)), now_s):
                self.commands += 1
            return
        if self.link._limited("pulse_" + d.cause, now_s):
            self.link.log.warning(f"{self.link.name}: pulse rejected ({d.cause}): state {d.state} direction "
                                  f"{d.direction}: {d.detail}; no command "
                                  f"[{self.check.rejected[d.cause]} so far]")

    def tick(self, now_s: Optional[float] = None) -> TickResult:
        if now_s is None:
            now_s = self.clock()
        ev = self.link.update(now_s)
        if ev == "disconnected":
            self.safe_stop = True
            self.pulse.cancel(now_s)
            d = self.check.abort("the link was lost")
        else:
            d = self.check.expire(now_s)
        if d is not None:
            self._decided(d, now_s)
        res = TickResult(self.pulse.due(now_s), ev)
        if not self.link.health.ever_connected:
            return res
        if self._stop_published is not self.safe_stop:
            self._stop_published = res.safe_stop = self.safe_stop
        if not self.safe_stop:
            self._stop_request_t = None
        elif self._stop_request_t is None or now_s - self._stop_request_t >= self.stop_request_period_s - 1e-9:
            self._stop_request_t = now_s
            self.stop_requests += 1
            res.stop_request = True
        return res

    def flood_check(self, now_s: float) -> None:
        """The kernel flood filter's decision (call once per node tick)."""
        lr = self.link
        self.flood.update(now_s, lr.rejected["foreign_peer"], lr.health.connected, lr.owner)

    def set_kernel_flood_filter(self, enabled: bool) -> None:
        """``pulse.link.kernel_flood_filter`` at run time (needs ``peer_lock``); off releases at once."""
        self.flood.set_enabled(bool(enabled) and self.cfg.link.peer_lock)

    # ------------------------------------------------------------------ feedback / state queries
    def feedback(self, stream: str, now_s: float) -> Optional[Tuple[object, int]]:
        """A feedback packet of ``stream`` ("pose" | "skeleton") is sent now: (peer, sequence), or
        None while no headset is connected (nothing to send)."""
        owner = self.link.owner
        if owner is None or not self.link.health.connected:
            return None
        seq = self._feedback_seq[stream] = (self._feedback_seq[stream] + 1) % (1 << 31)
        self.link.health.on_send(stream, now_s)
        return owner, seq

    @property
    def connected(self) -> bool:
        return self.link.health.connected

    def status(self, now_s: float, tx_active: bool = True) -> Tuple[HealthReport, dict]:
        """The link's health report and its counters (the diagnostics values)."""
        lr = self.link
        rep = lr.health.report(now_s, tx_active=tx_active)
        counts = lr.counter_values()
        vals = {"connected": rep.connected, "peer": lr.owner, "received": counts.pop("received"),
                "accepted": counts.pop("accepted"), "commands": self.commands, "debounced": self.pulse.debounced,
                "safe_stop": self.safe_stop, "stop_requests": self.stop_requests,
                "pulses_accepted": self.check.accepted, "pulses_held": self.check.held}
        vals.update({f"pulses_rejected_{c}": self.check.rejected[c] for c in PULSE_CAUSES})
        for st in rep.streams.values():
            vals[f"{st.name}_rate_hz"] = f"{st.rate_hz:.2f}"
            vals[f"{st.name}_level"] = LEVEL_NAMES[st.level]
        vals.update(counts)
        vals.update(self.flood.status())
        return rep, vals

    def report(self, now_s: float, tx_active: bool = True, **extra) -> Tuple[HealthReport, dict, Optional[Tuple[int, str]]]:
        """:meth:`status` with the node's ``extra`` values, and :meth:`log_line` of it."""
        rep, vals = self.status(now_s, tx_active=tx_active)
        vals.update(extra)
        return rep, vals, self.log_line(now_s, rep, vals)

    def log_line(self, now_s: float, rep: HealthReport, vals: dict) -> Optional[Tuple[int, str]]:
        """(level, line) when the link state is to be logged (on a change of level; while
        healthy a periodic summary), else None."""
        if not self.link.health.log_due(now_s, rep.level):
            return None
        return rep.level, (f"vr link {LEVEL_NAMES[rep.level]}: {rep.message}; receive "
                           f"{rep.streams['receive'].rate_hz:.1f} Hz, accepted {vals['accepted']}/"
                           f"{vals['received']}, commands {vals['commands']}")
