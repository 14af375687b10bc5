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
