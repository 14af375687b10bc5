"""Serial (pyserial) implementations of :class:`LegDriver` / :class:`BaseDriver` /
:class:`HeadDriver` / :class:`AudioDriver` for Tino's microcontroller, speaking
:mod:`hri_atomic_motion.core.line_protocol`.

``SerialLink`` owns one port object (anything with ``write``, ``read``, ``in_waiting``: a
``serial.Serial``, ``serial.serial_for_url('loop://')``, a pty); all drivers share it, so a head
or audio message meets the same non-blocking write, pending-buffer bound, stall and loss
detection as the leg and base messages.

Faults fail safe and never raise into the caller (docs/atomic.md "Serial faults"):

* **writes never block**: a port with a file descriptor (a tty, a pty) is written with one
  ``os.write`` on pyserial's non-blocking descriptor (partial writes and ``EAGAIN`` are normal:
  pyserial's own ``write`` busy-loops on ``EAGAIN`` with ``write_timeout = 0`` and loses the
  count of a partial write on timeout); other pyserial URL handlers get ``write_timeout =
  stall_timeout_s``. What the device has not taken yet waits in a buffer of at most
  ``max_pending_bytes`` (a newer command that does not fit is dropped, counted ``dropped_writes``);
* **stalled device**: output pending and not one byte accepted for ``stall_timeout_s``, or no
  encoder report for ``stall_timeout_s`` after the first one -> fault ``stall``;
* **vanished device** (EIO, port closed, unplugged): the first ``OSError`` /
  ``SerialException`` -> fault ``lost``;

A fault latches in ``fault`` (a sentence; the node latches ``device_fault`` and logs it once); from then on the link neither reads
nor writes (so a dead port costs nothing per tick) until :meth:`reset` (explicit: the operator's
fault reset), which reopens a port opened from the config. Time comes from the injected clock.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Callable, Optional

from .core.drivers import AudioDriver, BaseDriver, HeadDriver, LegDriver, LegReading
from .core.line_protocol import LineParser, encode
from .core.params import SerialParams

_log = logging.getLogger(__name__)


class SerialLink:
    def __init__(self, port: Any, params: Optional[SerialParams] = None,
                 clock: Callable[[], float] = lambda: 0.0, opener: Optional[Callable[[], Any]] = None):
        """``params`` None: no stall detection, unbounded pending buffer (loopback tests)."""
        self.port = port
        self.p = params
        self.clock = clock
        self._opener = opener
        self.parser = LineParser()
        self.last: LegReading | None = None
        self.unexpected = 0
        self.fault: str | None = None          # latched: "stall: ..." / "lost: ..."
        self.faults = 0
        self.dropped_writes = 0
        self._pending = bytearray()
        self._pending_since: float | None = None   # clock time the pending output last made progress
        self._last_report_s: float | None = None

    @classmethod
    def open(cls, params: SerialParams, clock: Callable[[], float] = lambda: 0.0) -> "SerialLink":
        """``params`` = ``atomic.serial`` (``port`` may be a pyserial URL)."""
        opener = lambda: _open_port(params)  # noqa: E731
        return cls(opener(), params, clock, opener)

    # ------------------------------------------------------------------ faults
    def _latch(self, kind: str, detail: str) -> None:
        if self.fault is None:
            self.fault = f"{kind}: {detail}"
            self.faults += 1
            _log.debug("serial link fault (%s)", self.fault)   # the node logs the latched fault once
            self._pending.clear()

    def check(self) -> Optional[str]:
        """Run the stall timers; returns the latched fault (None: healthy)."""
        if self.fault is None and self.p is not None:
            now = self.clock()
            t = self.p.stall_timeout_s
            if self._pending and self._pending_since is not None and now - self._pending_since > t:
                self._latch("stall", f"the device accepted no byte for {now - self._pending_since:.3f} s "
                                     f"({len(self._pending)} bytes pending)")
            elif self._last_report_s is not None and now - self._last_report_s > t:
                self._latch("stall", f"no encoder report for {now - self._last_report_s:.3f} s")
        return self.fault

    def reset(self) -> bool:
        """Explicit reset: reopen the port (if opened from the config) and clear the fault.
        False (fault kept) when the device is still absent."""
        if self.fault is None:
            return True
        if self._opener is not None:
            try:
                try:
                    self.port.close()
                except Exception:  # noqa: BLE001 - the old port may be half gone
                    pass
                self.port = self._opener()
            except (OSError, ValueError) as exc:
                _log.warning("serial link reset: %s still unavailable (%s)", self.p.port if self.p else "?", exc)
                return False
        self.fault = None
        self._pending.clear()
        self._pending_since = None
        self._last_report_s = None
        self.last = None
        self.parser = LineParser()
        return True

    # ------------------------------------------------------------------ I/O
    def poll(self) -> None:
        if self.fault is not None:
            return
        try:
            n = getattr(self.port, "in_waiting", 0)
            data = self.port.read(n) if n else b""
        except (OSError, ValueError) as exc:       # serial.SerialException is an OSError
            self._latch("lost", f"read failed ({exc})")
            return
        if data:
            for msg in self.parser.feed(data):
                if msg.kind == "E":
                    ticks, home, rpm = msg.fields
                    self.last = LegReading(int(ticks), bool(home), float(rpm))
                    self._last_report_s = self.clock()
                else:
                    self.unexpected += 1
        self.check()

    def send(self, kind: str, *fields: float) -> None:
        if self.fault is not None:
            return
        line = encode(kind, *fields)
        if self.p is not None and len(self._pending) + len(line) > self.p.max_pending_bytes:
            self.dropped_writes += 1
        else:
            self._pending += line
        self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        try:
            n = self._write(bytes(self._pending))
        except (OSError, ValueError) as exc:       # serial.SerialException is an OSError
            if type(exc).__name__ == "SerialTimeoutException":
                n = 0                              # URL handlers: nothing known to be written
            else:
                self._latch("lost", f"write failed ({exc})")
                return
        now = self.clock()
        if n > 0 or self._pending_since is None:
            self._pending_since = now
        del self._pending[:n]
        if not self._pending:
            self._pending_since = None
        self.check()

    def _write(self, data: bytes) -> int:
        """Bytes the device took (0 when its buffer is full); raises OSError when it is gone."""
        fileno = getattr(self.port, "fileno", None)
        fd = None
        if fileno is not None:
            try:
                fd = fileno()
            except (OSError, ValueError, AttributeError):
                fd = None
        if fd is None:
            n = self.port.write(data)
            return len(data) if n is None else int(n)
        try:
            return os.write(fd, data)
        except (BlockingIOError, InterruptedError):
            return 0

    @property
    def pending_bytes(self) -> int:
        return len(self._pending)

    def status(self) -> dict:
        """For the diagnostics."""
        return {"serial_fault": self.fault or "-", "serial_pending_bytes": len(self._pending),
                "serial_dropped_writes": self.dropped_writes, "serial_rejected": dict(self.parser.rejected)}


def _open_port(params: SerialParams):
    import serial

    return serial.serial_for_url(params.port, baudrate=params.baud, timeout=params.timeout_s,
                                 write_timeout=params.stall_timeout_s)


class SerialLegDriver(LegDriver):
    def __init__(self, link: SerialLink):
        self.link = link

    def read(self) -> LegReading:
        """Latest encoder report; raises ``RuntimeError`` before the first one (the node waits)
        and while the link is faulted (``link.fault``: the node latches it)."""
        self.link.poll()
        if self.link.fault is not None:
            raise RuntimeError(f"serial link fault: {self.link.fault}")
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


class SerialHeadDriver(HeadDriver):
    def __init__(self, link: SerialLink):
        self.link = link

    def command_head(self, pitch_rad: float, pan_rad: float, tilt_rad: float) -> None:
        self.link.send("H", pitch_rad, pan_rad, tilt_rad)


class SerialAudioDriver(AudioDriver):
    def __init__(self, link: SerialLink):
        self.link = link

    def command_audio(self, volume: float, orientation_rad: float) -> None:
        self.link.send("A", volume, orientation_rad)


def serial_drivers(link: SerialLink) -> dict:
    """The four drivers on one serial link, and the link (keyword arguments of :class:`AtomicDrive`)."""
    return dict(leg=SerialLegDriver(link), base=SerialBaseDriver(link), head=SerialHeadDriver(link),
                audio=SerialAudioDriver(link), link=link)
