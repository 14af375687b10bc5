"""MuJoCo implementations of :class:`LegDriver` / :class:`BaseDriver` / :class:`HeadDriver` /
:class:`AudioDriver` on ``hri_sim.tino.TinoSim``."""
from __future__ import annotations

from .core.drivers import AudioDriver, BaseDriver, HeadDriver, LegDriver, LegReading


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


class MujocoHeadDriver(HeadDriver):
    def __init__(self, sim):
        self.sim = sim

    def command_head(self, pitch_rad: float, pan_rad: float, tilt_rad: float) -> None:
        self.sim.set_head(pan_rad, tilt_rad, pitch_rad)


class MujocoAudioDriver(AudioDriver):
    """The model has no speaker: the command is kept (``TinoSim.audio``) for what reads it."""

    def __init__(self, sim):
        self.sim = sim

    def command_audio(self, volume: float, orientation_rad: float) -> None:
        self.sim.set_audio(volume, orientation_rad)


def mujoco_drivers(sim) -> dict:
    """The four drivers on one ``TinoSim`` (keyword arguments of :class:`AtomicDrive`)."""
    return dict(leg=MujocoLegDriver(sim), base=MujocoBaseDriver(sim), head=MujocoHeadDriver(sim),
                audio=MujocoAudioDriver(sim))
