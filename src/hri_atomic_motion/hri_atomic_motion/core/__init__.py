"""Pure logic: no middleware imports, injected clock."""
from .base import BaseController
from .controller import AtomicController, AtomicOutput
from .drivers import BaseDriver, LegDriver, LegReading
from .framework import Command, CommandQueue, Fault, FaultLatch, PhaseTable, PulseGate, to_ms
from .leg import LegController, LegOutput
from .params import AtomicParams, BaseParams, LegParams

__all__ = ["AtomicController", "AtomicOutput", "AtomicParams", "BaseController", "BaseDriver", "BaseParams",
           "Command", "CommandQueue", "Fault", "FaultLatch", "LegController", "LegDriver", "LegOutput",
           "LegParams", "LegReading", "PhaseTable", "PulseGate", "to_ms"]
