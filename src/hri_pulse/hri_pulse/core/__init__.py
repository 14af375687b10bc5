"""Pure core of hri_pulse (no sockets, no middleware; injected clock).

Carrier-agnostic link API (reused by hri_arm_teleop): ``PacketCodec``, ``PacketRejected``,
``LinkReceiver``, ``SequenceTracker``, ``HealthMonitor``; the authentication of both headset
links: ``Authenticator`` (receiver), ``Sealer`` (sender).
"""
from hri_pulse.core.auth import Authenticator, Sealer
from hri_pulse.core.codec import (PacketCodec, PacketParams, PacketRejected, UNITY_FORMAT, UnityCodec,
                                  UnityPacket)
from hri_pulse.core.gamepad import GamepadCore, GamepadMapper, GamepadParams
from hri_pulse.core.health import HealthMonitor, HealthParams, HealthReport, RateWindow
from hri_pulse.core.link import LinkParams, LinkReceiver
from hri_pulse.core.pulse import IDLE, Command, Emission, PulseGenerator, PulseParams, RisingEdge
from hri_pulse.core.pulse_check import Decision, PulseCheck, PulseCheckParams
from hri_pulse.core.sequence import ACCEPTED, SequenceParams, SequenceTracker
from hri_pulse.core.vr import PulseConfig, TickResult, VrCommandCore

__all__ = [n for n in dir() if not n.startswith("_")]
