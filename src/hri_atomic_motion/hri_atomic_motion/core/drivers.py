"""Hardware interfaces of the social robot (the simulated and the serial implementations live in
``hri_sim.tino`` and ``hri_atomic_motion.serial_driver``)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass
class LegReading:
    ticks: int
    home_pressed: bool
    rpm: float = 0.0          # measured motor RPM when the hardware reports it


class LegDriver(ABC):
    @abstractmethod
    def read(self) -> LegReading: ...

    @abstractmethod
    def command_rpm(self, rpm: float) -> None:
        """Motor speed command, RPM (positive = forward = extension)."""


class BaseDriver(ABC):
    @abstractmethod
    def command_twist(self, linear_m_s: float, angular_rad_s: float) -> None: ...


class HeadDriver(ABC):
    @abstractmethod
    def command_head(self, pitch_rad: float, pan_rad: float, tilt_rad: float) -> None:
        """Head joint targets, rad (bounded and rate limited by ``core.head_audio``)."""


class AudioDriver(ABC):
    @abstractmethod
    def command_audio(self, volume: float, orientation_rad: float) -> None:
        """Audio volume (0 .. ``pulse.packet.audio_volume_max``) and direction, rad."""


class LegStateInput:
    """Leg readings that arrive as messages (driver ``topic``): the latest one counts while it is
    younger than ``timeout_s`` (``atomic.node.leg_state_timeout_s``); malformed ones are counted."""

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self.last: LegReading | None = None
        self.last_t: float | None = None
        self.rejected = 0
        self.received = 0                      # well-formed readings

    @property
    def ever(self) -> bool:
        return self.last is not None

    def on_reading(self, reading: LegReading | None, t_s: float) -> bool:
        """A received reading (None: malformed, counted); False when rejected."""
        if reading is None:
            self.rejected += 1
            return False
        self.received += 1
        self.last, self.last_t = reading, t_s
        return True

    def read(self, t_s: float) -> LegReading | None:
        if self.last is None or t_s - self.last_t > self.timeout_s:
            return None
        return self.last
