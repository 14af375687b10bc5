"""Pure logic: no middleware imports, injected clock."""
from .base import BaseController
from .controller import AtomicController, AtomicOutput
from .drivers import AudioDriver, BaseDriver, HeadDriver, LegDriver, LegReading, LegStateInput
from .head_audio import HeadAudioGate, HeadAudioLimits
from .framework import Command, CommandQueue, Fault, FaultLatch, PhaseTable, PulseGate, to_ms
from .leg import LegController, LegOutput
from .params import AtomicParams, BaseParams, LegParams, SerialParams

__all__ = ["AtomicController", "AtomicOutput", "AtomicParams", "AudioDriver", "BaseController", "BaseDriver", "BaseParams",
           "HeadAudioGate", "HeadAudioLimits", "HeadDriver",
           "Command", "CommandQueue", "Fault", "FaultLatch", "LegController", "LegDriver", "LegOutput",
           "LegParams", "LegReading", "LegStateInput", "PhaseTable", "PulseGate", "SerialParams", "to_ms"]
