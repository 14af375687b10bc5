"""The serial line protocol between the host and Tino's microcontroller (docs/atomic.md).

ASCII lines, ``\\n``-terminated, NMEA-style checksum: ``<BODY>*<CS>\\n`` where ``CS`` is the XOR of
the bytes of ``BODY`` as two upper-case hex digits. Fields are separated by one space.

host -> MCU
  ``M <rpm>``                    leg motor speed command, RPM (float, + = extension)
  ``V <linear_m_s> <angular_rad_s>``   base twist (the MCU converts to wheel speeds)
  ``S``                          stop everything now (motor 0, twist 0)
  ``H <pitch> <pan> <tilt>``     head joint targets, rad (within ``atomic.head``'s bounds)
  ``A <volume> <orientation>``   audio: volume 0 .. ``pulse.packet.audio_volume_max``, direction rad
MCU -> host
  ``E <ticks> <home> <rpm>``     encoder report: ticks (int), home switch 0/1, measured motor RPM

Parsing is incremental (:class:`LineParser.feed` takes any byte chunks); a bad line (no
checksum, wrong checksum, unknown type, wrong field count/type, longer than ``MAX_LINE``) is
rejected and counted per cause, never raised.
"""
from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass

_log = logging.getLogger(__name__)
MAX_LINE = 96


def checksum(body: bytes) -> int:
    cs = 0
    for b in body:
        cs ^= b
    return cs


def encode(kind: str, *fields: float | int) -> bytes:
    parts = [kind]
    for f in fields:
        parts.append(str(int(f)) if isinstance(f, (bool, int)) else f"{float(f):.4f}")
    body = " ".join(parts).encode("ascii")
    return body + b"*" + f"{checksum(body):02X}".encode("ascii") + b"\n"


@dataclass(frozen=True)
class Message:
    kind: str
    fields: tuple


_SPECS = {"M": (float,), "V": (float, float), "S": (), "H": (float, float, float), "A": (float, float),
          "E": (int, int, float)}


class LineParser:
    def __init__(self) -> None:
        self._buf = bytearray()
        self.rejected: Counter[str] = Counter()
        self.accepted = 0

    def feed(self, data: bytes) -> list[Message]:
        out: list[Message] = []
        self._buf.extend(data)
        while True:
            i = self._buf.find(b"\n")
            if i < 0:
                if len(self._buf) > MAX_LINE:
                    self._reject("too_long", bytes(self._buf[:20]))
                    self._buf.clear()
                return out
            line = bytes(self._buf[:i]).rstrip(b"\r")
            del self._buf[: i + 1]
            msg = self._parse(line)
            if msg is not None:
                out.append(msg)

    def _reject(self, cause: str, line: bytes) -> None:
        self.rejected[cause] += 1
        _log.warning("serial line rejected (%s): %r", cause, line[:40])

    def _parse(self, line: bytes) -> Message | None:
        if not line:
            return None
        if len(line) > MAX_LINE:
            self._reject("too_long", line)
            return None
        body, star, cs = line.rpartition(b"*")
        if not star:
            self._reject("no_checksum", line)
            return None
        try:
            if int(cs, 16) != checksum(body) or len(cs) != 2:
                self._reject("bad_checksum", line)
                return None
            parts = body.decode("ascii").split(" ")
        except (ValueError, UnicodeDecodeError):
            self._reject("bad_checksum", line)
            return None
        spec = _SPECS.get(parts[0])
        if spec is None:
            self._reject("unknown_type", line)
            return None
        if len(parts) - 1 != len(spec):
            self._reject("field_count", line)
            return None
        try:
            fields = tuple(t(p) for t, p in zip(spec, parts[1:]))
        except ValueError:
            self._reject("field_type", line)
            return None
        if any(isinstance(f, float) and f != f for f in fields):
            self._reject("field_type", line)
            return None
        self.accepted += 1
        return Message(parts[0], fields)
