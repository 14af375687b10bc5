"""The atomic controller on its drivers, one control period at a time: the logic of the
``atomic`` node between its topics and the hardware (or the embedded simulation).

Per period (:meth:`AtomicDrive.step`, time ``t`` injected):

1. the leg reading: from the leg-state topic (``LegStateInput``, driver ``topic``) or from the
   leg driver (a driver that cannot read gives none);
2. the device check: a fault of the serial link (stall, vanished device) latches the controller
   fault ``device_fault`` and asks once per fault for the system stop (``stop_request``);
3. the controller's output (``AtomicController.control``) to the leg and base drivers;
4. the head and audio lines due (``HeadAudioGate.due``; the head holds while the system stop or a
   latched fault does) to the head and audio drivers.

Without drivers (driver ``topic``) the node publishes the output instead. The link (``fault``,
``reset()``, ``status()``) and the drivers are injected; no middleware.

Around the periods, what the node's callbacks ask: :meth:`on_pulse` (counted; refused while the
system stop holds, the first refusal of each stop worth a log line), :meth:`on_system_stop`
(latches or clears the fault ``system_stop``; a stop zeroes the outputs at once),
:meth:`fault_change` (the latched fault when it changed since the last call) and
:meth:`diagnostics` (the controller's and the drive's values).
"""
from __future__ import annotations

from typing import Any, Optional

from .controller import AtomicController, AtomicOutput
from .drivers import AudioDriver, BaseDriver, HeadDriver, LegDriver, LegReading, LegStateInput
from .head_audio import HeadAudioGate

__all__ = ["AtomicDrive"]


class AtomicDrive:
    def __init__(self, ctrl: AtomicController, leg: Optional[LegDriver] = None, base: Optional[BaseDriver] = None,
                 head: Optional[HeadDriver] = None, audio: Optional[AudioDriver] = None,
                 head_gate: Optional[HeadAudioGate] = None, leg_input: Optional[LegStateInput] = None,
                 link: Any = None):
        """``leg_input`` (driver ``topic``) or ``leg`` + ``base`` (drivers ``sim``, ``serial``);
        ``head_gate`` with ``head`` + ``audio`` when the node owns that hardware; ``link`` the
        serial link whose faults are device faults."""
        self.ctrl, self.leg, self.base, self.head, self.audio = ctrl, leg, base, head, audio
        self.head_gate, self.leg_input, self.link = head_gate, leg_input, link
        self.stop_request: Optional[str] = None      # set by a period that asks for the system stop
        self.pulses_received = 0                      # pulse messages, whatever became of them
        self._stop_refusal_logged = False             # the first press refused by this system stop
        self._last_fault: Any = None

    @property
    def rejected_leg_state(self) -> int:
        return self.leg_input.rejected if self.leg_input is not None else 0

    def head_held(self, stopped: bool) -> bool:
        """The head holds while the system stop or a latched fault does."""
        return stopped or self.ctrl.fault is not None

    def read_leg(self, t: float) -> Optional[LegReading]:
        if self.leg_input is not None:
            return self.leg_input.read(t)
        try:
            return self.leg.read()
        except RuntimeError:
            return None

    def check_device(self, t: float) -> Optional[str]:
        """A link fault latches ``device_fault``: the reason of the system stop to request, once
        per fault (None otherwise)."""
        if self.link is None:
            return None
        fault = self.link.fault
        if self.ctrl.on_device(t, None if fault is None else f"serial {fault}"):
            return f"atomic serial {fault}"[:200]
        return None

    def step(self, t: float, stopped: bool, cause: Any = None) -> tuple[AtomicOutput, Optional[LegReading]]:
        """One control period: the output and the leg reading it used; ``stop_request`` is the
        reason of a system stop this period asks for (None: none)."""
        r = self.read_leg(t)
        self.stop_request = self.check_device(t)
        measured = self.leg_input.last_t if self.leg_input is not None else None   # a message's arrival
        out = self.ctrl.control(t, r, stopped, cause, measured)
        if self.leg is not None:
            self.leg.command_rpm(out.leg_rpm)
            self.base.command_twist(out.linear_m_s, out.angular_rad_s)
        if self.head_gate is not None:
            for kind, vals in self.head_gate.due(t, stopped=self.head_held(stopped)):
                if kind == "H":
                    self.head.command_head(*vals)
                else:
                    self.audio.command_audio(*vals)
        return out, r

    def on_pulse(self, state: float, direction: float, t: float, stopped: bool, stop_reason: str = "") -> Optional[str]:
        """A pulse message to the controller: the warning line to log, or None. A refusal by the
        system stop is logged once per stop (every one is counted by the controller)."""
        self.pulses_received += 1
        res = self.ctrl.on_pulse(float(state), float(direction), t, stopped)
        if res == "rejected_system_stop":
            if self._stop_refusal_logged:
                return None
            self._stop_refusal_logged = True
            return (f"pulse rejected_system_stop: state {state} direction {direction} refused, the system "
                    f"stop holds ({stop_reason}); further refusals are counted until it releases")
        if res.startswith(("rejected", "dropped")):
            return f"pulse {res}: state {state} direction {direction}"
        return None

    def on_system_stop(self, t: float, stopped: bool, cause: Any) -> bool:
        """The system stop changed (:meth:`AtomicController.on_system_stop`); a stop zeroes the
        outputs at once. True when a latched system stop was cleared."""
        cleared = self.ctrl.on_system_stop(t, stopped, cause)
        if stopped:
            self.output_zero()
        else:
            self._stop_refusal_logged = False
        return cleared

    def fault_change(self) -> tuple[bool, Any]:
        """``(changed, fault)``: the controller's latched fault (None: none) and whether it
        changed since the last call."""
        fault = self.ctrl.fault
        changed, self._last_fault = fault != self._last_fault, fault
        return changed, fault

    def diagnostics(self, **node_values) -> tuple[int, str, dict]:
        """(level, message, values) of ``/diagnostics``: the controller's (WARN while waiting for a
        first leg state), ``pulses_received``, the node's values and :meth:`diagnostic_values`."""
        level, message, values = self.ctrl.diagnostics(self.leg_input is not None and not self.leg_input.ever)
        values.update(node_values, pulses_received=self.pulses_received)
        values.update(self.diagnostic_values())
        return level, message, values

    def output_zero(self) -> None:
        """Motors at 0 and the head's pending lines dropped, at once (a system stop)."""
        if self.head_gate is not None:
            self.head_gate.stop()
        if self.leg is not None:
            self.leg.command_rpm(0.0)
            self.base.command_twist(0.0, 0.0)

    def reset(self, t: float) -> tuple[bool, Optional[str]]:
        """The operator's reset: the link first (a device still absent keeps the fault: nothing
        else happens), then the controller's latched fault. ``(fault cleared, stop request)``."""
        if self.link is not None and self.link.fault is not None and not self.link.reset():
            return False, None
        request = self.check_device(t)
        return self.ctrl.reset(t), request

    def diagnostic_values(self) -> dict:
        """The drive's counters for ``/diagnostics``: the leg-state input's, the link's status and
        the head/audio gate's counts (what exists)."""
        values: dict = {"rejected_leg_state": self.rejected_leg_state}
        if self.leg_input is not None:
            values["leg_states_received"] = self.leg_input.received
        if self.link is not None:
            values.update(self.link.status())
        if self.head_gate is not None:
            values.update(self.head_gate.status())
        return values
