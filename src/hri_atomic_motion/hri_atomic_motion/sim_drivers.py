"""MuJoCo implementations of :class:`LegDriver` / :class:`BaseDriver` on ``hri_sim.tino.TinoSim``."""
from __future__ import annotations

from .core.drivers import BaseDriver, LegDriver, LegReading


class MujocoLegDriver(LegDriver):
    def __init__(self, sim):
        self.sim = sim

    def read(self) -> LegReading:
        return LegReading(self.sim.leg_ticks(), self.sim.home_pressed(), self.sim.leg_motor_rpm())

    def command_rpm(self, rpm: float) -> None:
        self.sim.set_leg_rpm(rpm)


class MujocoBaseDriver(BaseDriver):
    def __init__(self, sim):
        self.sim = sim

    def command_twist(self, linear_m_s: float, angular_rad_s: float) -> None:
        self.sim.set_twist(linear_m_s, angular_rad_s)
