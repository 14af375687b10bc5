"""Serial (pyserial) implementations of :class:`LegDriver` / :class:`BaseDriver` for Tino's
microcontroller, speaking :mod:`hri_atomic_motion.core.line_protocol`.

``SerialLink`` owns one port object (anything with ``write``, ``read``, ``in_waiting``: a
``serial.Serial``, ``serial.serial_for_url('loop://')``, a pty); both drivers share it.
"""
from __future__ import annotations

import logging
from typing import Any, Mapping

from .core.drivers import BaseDriver, LegDriver, LegReading
from .core.line_protocol import LineParser, encode

_log = logging.getLogger(__name__)


class SerialLink:
    def __init__(self, port: Any):
        self.port = port
        self.parser = LineParser()
        self.last: LegReading | None = None
        self.unexpected = 0

    @classmethod
    def open(cls, section: Mapping[str, Any]) -> "SerialLink":
        """``section`` = ``cfg['atomic']['serial']`` (port may be a pyserial URL)."""
        import serial

        return cls(serial.serial_for_url(section["port"], baudrate=int(section["baud"]),
                                         timeout=float(section["timeout_s"])))

    def poll(self) -> None:
        n = getattr(self.port, "in_waiting", 0)
        if n:
            for msg in self.parser.feed(self.port.read(n)):
                if msg.kind == "E":
                    ticks, home, rpm = msg.fields
                    self.last = LegReading(int(ticks), bool(home), float(rpm))
                else:
                    self.unexpected += 1

    def send(self, kind: str, *fields: float) -> None:
        self.port.write(encode(kind, *fields))


class SerialLegDriver(LegDriver):
    def __init__(self, link: SerialLink):
        self.link = link

    def read(self) -> LegReading:
        """Latest encoder report; raises ``RuntimeError`` before the first one (the node waits)."""
        self.link.poll()
        if self.link.last is None:
            raise RuntimeError("no encoder report from the microcontroller yet")
        return self.link.last

    def command_rpm(self, rpm: float) -> None:
        self.link.send("M", rpm)


class SerialBaseDriver(BaseDriver):
    def __init__(self, link: SerialLink):
        self.link = link

    def command_twist(self, linear_m_s: float, angular_rad_s: float) -> None:
        self.link.send("V", linear_m_s, angular_rad_s)

    def stop(self) -> None:
        self.link.send("S")
