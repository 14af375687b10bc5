"""Tino's head and audio commands on their way to the hardware (pure logic, injected time).

The Tino VR design forwards the headset's head angles (pitch, pan, tilt) "directly to robot
controllers"; its packet also carries the audio volume and orientation. ``vr_interface`` publishes
both (``/head_cmd``, ``/audio_cmd``); the simulation and the real driver read the same topics and
pass every command through one :class:`HeadAudioGate`:

- **bad values**: a non-finite field -> the command is rejected (cause ``non_finite``), counted,
  never sent; the last good one stays;
- **bounds**: a head angle beyond ``atomic.head.position_min_deg / max_deg``, a volume outside
  0 .. ``pulse.packet.audio_volume_max``, an orientation beyond ``±audio_orientation_abs_max_deg``
  -> clamped to the bound and flagged (counted ``head_clamped`` / ``audio_clamped``);
- **rate limiting**: at most one head message per ``1 / atomic.head.rate_hz`` and one audio
  message per ``1 / atomic.audio.rate_hz``; the latest command wins (older ones are replaced,
  counted ``superseded``); a value equal to the last one sent is not sent again;
- **stop**: while the system stop (or a latched controller fault) holds, head commands are
  refused (counted ``head_refused_stop``) and the head holds where it is; after the release only
  a new command moves it. Audio is no motion: it passes.

:meth:`due` returns what is to be sent now: ``[("H", (pitch, pan, tilt)), ("A", (volume,
orientation_rad))]`` (rad), the fields of the MCU line protocol's head and audio messages
(:mod:`hri_atomic_motion.core.line_protocol`).
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Optional, Sequence


@dataclass(frozen=True)
class HeadAudioLimits:
    head_min_rad: tuple          # (pitch, pan, tilt)
    head_max_rad: tuple
    volume_max: float
    orientation_abs_max_rad: float
    head_period_s: float
    audio_period_s: float

    @classmethod
    def from_config(cls, cfg: dict) -> "HeadAudioLimits":
        """From the robot's merged config: ``atomic.head``, ``atomic.audio`` and the packet's audio
        bounds ``pulse.packet`` (declared once, by hri_pulse)."""
        head, audio, pkt = cfg["atomic"]["head"], cfg["atomic"]["audio"], cfg["pulse"]["packet"]
        return cls(tuple(math.radians(v) for v in head["position_min_deg"]),
                   tuple(math.radians(v) for v in head["position_max_deg"]),
                   float(pkt["audio_volume_max"]), math.radians(pkt["audio_orientation_abs_max_deg"]),
                   1.0 / float(head["rate_hz"]), 1.0 / float(audio["rate_hz"]))


class _Channel:
    def __init__(self, period_s: float):
        self.period_s = period_s
        self.pending: Optional[tuple] = None
        self.sent: Optional[tuple] = None
        self.last_sent_t: Optional[float] = None

    def offer(self, value: tuple) -> bool:
        """True when a pending command was replaced."""
        replaced = self.pending is not None
        self.pending = value
        return replaced

    def take(self, t: float) -> Optional[tuple]:
        if self.pending is None:
            return None
        if self.pending == self.sent:
            self.pending = None
            return None
        if self.last_sent_t is not None and t - self.last_sent_t < self.period_s - 1e-12:
            return None
        value, self.pending = self.pending, None
        self.sent, self.last_sent_t = value, t
        return value


class HeadAudioGate:
    def __init__(self, limits: HeadAudioLimits):
        self.limits = limits
        self.counts: Counter[str] = Counter()
        self._head = _Channel(limits.head_period_s)
        self._audio = _Channel(limits.audio_period_s)

    # ------------------------------------------------------------------ inputs
    def on_head(self, pitch: float, pan: float, tilt: float, stopped: bool = False) -> str:
        """One head command (rad). Returns ``accepted``, ``clamped``, ``rejected_non_finite`` or
        ``refused_stop``."""
        vals = _floats((pitch, pan, tilt))
        if vals is None:
            self.counts["head_non_finite"] += 1
            return "rejected_non_finite"
        if stopped:
            self.counts["head_refused_stop"] += 1
            return "refused_stop"
        lo, hi = self.limits.head_min_rad, self.limits.head_max_rad
        return self._offer("head", self._head, tuple(min(max(v, a), b) for v, a, b in zip(vals, lo, hi)),
                           vals)

    def on_audio(self, volume: float, orientation_rad: float) -> str:
        """One audio command (volume, orientation rad). Returns ``accepted``, ``clamped`` or
        ``rejected_non_finite``."""
        vals = _floats((volume, orientation_rad))
        if vals is None:
            self.counts["audio_non_finite"] += 1
            return "rejected_non_finite"
        lim = self.limits
        ori_max = lim.orientation_abs_max_rad
        clamped = (min(max(vals[0], 0.0), lim.volume_max), min(max(vals[1], -ori_max), ori_max))
        return self._offer("audio", self._audio, clamped, vals)

    def _offer(self, kind: str, channel: "_Channel", clamped: tuple, vals: tuple) -> str:
        """Accepted (counted): ``clamped`` replaces the channel's pending command."""
        self.counts[f"{kind}_accepted"] += 1
        if channel.offer(clamped):
            self.counts[f"{kind}_superseded"] += 1
        if clamped != vals:
            self.counts[f"{kind}_clamped"] += 1
            return "clamped"
        return "accepted"

    def stop(self) -> None:
        """The system stop / a fault latched: a head command waiting to be sent is dropped."""
        if self._head.pending is not None:
            self._head.pending = None
            self.counts["head_refused_stop"] += 1

    # ------------------------------------------------------------------ output
    def due(self, t: float, stopped: bool = False) -> list[tuple[str, tuple]]:
        """The messages to send at time ``t`` (at most one head and one audio message)."""
        out = []
        if stopped:
            self.stop()
        else:
            head = self._head.take(t)
            if head is not None:
                out.append(("H", head))
                self.counts["head_sent"] += 1
        audio = self._audio.take(t)
        if audio is not None:
            out.append(("A", audio))
            self.counts["audio_sent"] += 1
        return out

    def status(self) -> dict:
        """For the diagnostics: the counts by cause."""
        return {f"head_audio_{k}": v for k, v in sorted(self.counts.items())}


def _floats(vals: Sequence) -> Optional[tuple]:
    try:
        out = tuple(float(v) for v in vals)
    except (TypeError, ValueError):
        return None
    return out if all(math.isfinite(v) for v in out) else None
