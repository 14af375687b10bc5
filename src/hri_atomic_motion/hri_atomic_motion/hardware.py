"""The atomic node's drivers by ``atomic.node.driver`` (keyword arguments of
:class:`hri_atomic_motion.core.drive.AtomicDrive`):

- ``topic``: no hardware; the leg state comes in on a topic (``LegStateInput``), the node publishes
  the output;
- ``sim``: the embedded MuJoCo Tino (``hri_sim.tino.TinoSim``), stepped by the node in lockstep with
  its clock, and its four drivers;
- ``serial``: the MCU on ``atomic.serial`` (:class:`hri_atomic_motion.serial_driver.SerialLink`)
  and its four drivers; a link fault is a device fault.

With head and audio hardware (``sim``, ``serial``) the head/audio gate (``atomic.head``,
``atomic.audio`` limits) is added.
"""
from __future__ import annotations

from typing import Callable

from hri_atomic_motion.core import AtomicParams, HeadAudioGate, HeadAudioLimits, LegStateInput


def open_drivers(params: AtomicParams, cfg: dict, clock: Callable[[], float]):
    """``(drivers, sim, link)``: the drive's keyword arguments, the simulation (driver ``sim``)
    and the serial link (driver ``serial``), None where there is none. ``cfg``: the merged tree."""
    sim = link = None
    if params.node.driver == "sim":
        from hri_sim.tino import TinoSim, TinoSimParams
        from hri_atomic_motion.sim_drivers import mujoco_drivers

        sim = TinoSim(TinoSimParams.from_config(cfg["atomic"]))
        drivers = mujoco_drivers(sim)
    elif params.node.driver == "serial":
        from hri_atomic_motion.serial_driver import SerialLink, serial_drivers

        link = SerialLink.open(params.serial, clock=clock)
        drivers = serial_drivers(link)
    else:
        drivers = dict(leg_input=LegStateInput(params.node.leg_state_timeout_s))
    if "head" in drivers:
        drivers["head_gate"] = HeadAudioGate(HeadAudioLimits.from_config(cfg))
    return drivers, sim, link
