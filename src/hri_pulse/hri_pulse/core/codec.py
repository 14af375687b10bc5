"""Packet codecs: the carrier-agnostic ``PacketCodec`` protocol and the Unity command packet.

A codec turns one datagram (bytes) into a typed packet or raises ``PacketRejected(cause)``;
``LinkReceiver`` counts the causes. Any codec with ``decode``/``sequence``/``causes`` plugs into
``LinkReceiver`` (the arm teleop's controller-pose packet uses the same receiver).

Unity command packet (the Tino VR design), 32 bytes, ``struct '<fffiiffi'`` (little-endian, no padding):

    head_pitch f32, head_pan f32, head_tilt f32, base_state i32 (0..3), base_angular i32 (-1/0/1),
    audio_volume f32, audio_orientation f32, message_order i32 (0 .. 2^31-1)

The Tino VR design's prose calls the volume an integer, its format string makes it a float: the format
string wins (documented in docs/protocols.md "Pulse").

Optional authentication (``pulse.auth.mode: required``): the packet followed by the trailer of
:mod:`hri_pulse.core.auth` (the one framing of both headset links), checked by ``LinkReceiver``
before this codec sees the 32 bytes.
"""
from __future__ import annotations

import math
import struct
from typing import Any, NamedTuple, Protocol, Tuple

from hri_runtime.parameter_library.typed import params_type

UNITY_FORMAT = "<fffiiffi"
_UNITY = struct.Struct(UNITY_FORMAT)
_isfinite = math.isfinite
_SIZE = _UNITY.size
_unpack = _UNITY.unpack
_new = tuple.__new__


class PacketRejected(Exception):
    """A datagram that is not a valid packet; ``cause`` is a short counter key."""

    def __init__(self, cause: str, detail: str = ""):
        super().__init__(f"{cause}: {detail}" if detail else cause)
        self.cause = cause
        self.detail = detail


class PacketCodec(Protocol):
    """What ``LinkReceiver`` needs from a packet format."""

    causes: Tuple[str, ...]   # every rejection cause ``decode`` can raise (counters start at 0)

    def decode(self, data: bytes) -> Any:
        """bytes -> packet, or raise ``PacketRejected``."""

    def sequence(self, packet: Any) -> int:
        """The packet's sequence number (0 .. modulus-1)."""


class UnityPacket(NamedTuple):
    head_pitch: float         # deg (Unity euler angles)
    head_pan: float           # deg
    head_tilt: float          # deg
    base_state: int           # 0..3
    base_angular: int         # -1, 0, 1
    audio_volume: float       # 0..audio_volume_max (float on the wire)
    audio_orientation: float  # deg
    message_order: int        # 0 .. 2^31-1


PacketParams = params_type("pulse.packet")


class UnityCodec:
    """Validating codec of the 32-byte Unity packet. Causes, in the order they are checked:

    ``bad_size`` (len != 32), ``unpack_error`` (struct failed; cannot happen at the right size, kept
    for the contract), ``non_finite`` (NaN/Inf in a float), ``head_out_of_range``,
    ``bad_state`` (base_state outside 0..3), ``bad_angular`` (outside -1..1),
    ``audio_out_of_range``, ``bad_sequence`` (message_order < 0).
    """

    size = _SIZE
    causes = ("bad_size", "unpack_error", "non_finite",
              "head_out_of_range", "bad_state", "bad_angular", "audio_out_of_range", "bad_sequence")

    def __init__(self, params: PacketParams):
        if params.size_bytes != _UNITY.size:
            raise ValueError(f"pulse.packet.size_bytes {params.size_bytes} != struct size {_UNITY.size}")
        self.p = params
        self._ori_lim = params.audio_orientation_abs_max_deg

    @staticmethod
    def encode(pkt: UnityPacket) -> bytes:
        return _UNITY.pack(*pkt)

    @staticmethod
    def sequence(pkt: UnityPacket) -> int:
        return pkt.message_order

    def decode(self, data) -> UnityPacket:
        if len(data) != _SIZE:
            raise PacketRejected("bad_size", f"{len(data)} bytes, expected {_SIZE}")
        try:
            v = _unpack(data)
        except struct.error as exc:  # pragma: no cover - size already checked
            raise PacketRejected("unpack_error", str(exc)) from None
        hp, hn, ht, st, ang, vol, ori, seq = v
        p = self.p
        # f32 values are < 3.5e38, so their double sum overflows never: it is finite iff all are
        if not _isfinite(hp + hn + ht + vol + ori):
            raise PacketRejected("non_finite", "NaN/Inf in a float field")
        lim = p.head_abs_max_deg
        if not (-lim <= hp <= lim and -lim <= hn <= lim and -lim <= ht <= lim):
            raise PacketRejected("head_out_of_range", f"head ({hp:.3g}, {hn:.3g}, {ht:.3g}) deg beyond ±{lim}")
        if not 0 <= st <= p.base_state_max:
            raise PacketRejected("bad_state", f"base_state {st} not in 0..{p.base_state_max}")
        if not -p.base_angular_max <= ang <= p.base_angular_max:
            raise PacketRejected("bad_angular", f"base_angular {ang} not in ±{p.base_angular_max}")
        if not (0.0 <= vol <= p.audio_volume_max and -self._ori_lim <= ori <= self._ori_lim):
            raise PacketRejected("audio_out_of_range", f"volume {vol:.3g}, orientation {ori:.3g}")
        if seq < 0:
            raise PacketRejected("bad_sequence", f"message_order {seq} < 0")
        return _new(UnityPacket, v)
