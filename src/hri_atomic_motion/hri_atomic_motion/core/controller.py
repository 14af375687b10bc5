"""AtomicController: one command -> leg and base movements started together, locked until both
complete (the Tino VR design's ``isCase2Locked``), a bounded queue, one movement per pulse, latched faults.

Command handling (:meth:`AtomicController.on_pulse`), in order:

1. invalid (state not an integer 0..3, direction not -1/0/1, non-finite): rejected, counted;
2. a repeated message of the same pulse (:class:`PulseGate`): ignored, counted;
3. a latched fault: rejected, counted (only :meth:`reset` clears the fault); the system stop
   without a latched fault (before the stop supervisor's first heartbeat): a state 1..3 is
   rejected, counted once per pulse (``rejected_system_stop``; the node logs the first of each
   stop), a state 0 only counted (``idle_during_stop``);
4. state 0 while a movement runs: ignored (the movement ends in the ready state anyway; this is
   the pulse's own return-to-idle message); state 0 while idle: base full stop + flags reset,
   leg back to the neutral rest;
5. state 1..3 while idle: started now (leg and base at the same instant); while locked: queued
   (bounded queue, policy from config), started at the update that completes the running movement.
"""
from __future__ import annotations

import logging
import math
from collections import Counter, deque
from dataclasses import dataclass

from .base import BaseController
from .drivers import LegReading
from .framework import Command, CommandQueue, Fault, FaultLatch, PulseGate
from .leg import LegController
from .params import AtomicParams

STARTED_KEPT = 256   # movements kept in ``AtomicController.started`` (tests, the last ones for a look)

_log = logging.getLogger(__name__)
OK, WARN, ERROR = 0, 1, 2          # diagnostic_msgs/DiagnosticStatus levels


@dataclass(slots=True)
class AtomicOutput:
    leg_rpm: float
    linear_m_s: float
    angular_rad_s: float


class AtomicController:
    def __init__(self, params: AtomicParams):
        self.params = params
        self.leg = LegController(params.leg)
        self.base = BaseController(params.base)
        self.gate = PulseGate(params.pulse_rearm_s)
        self.queue = CommandQueue(params.queue_depth, params.queue_policy == "replace_newest")
        self.faults = FaultLatch()
        self.counts: Counter[str] = Counter()
        self.current: Command | None = None
        # the last STARTED_KEPT movements started (a live node runs for hours); all are counted
        self.started: deque[Command] = deque(maxlen=STARTED_KEPT)
        self.movements = 0
        self._device_fault: str | None = None

    # ------------------------------------------------------------------ state
    @property
    def locked(self) -> bool:
        """True from the start of a movement until both leg and base have completed it."""
        return self.current is not None

    @property
    def fault(self) -> Fault | None:
        return self.faults.fault

    # ------------------------------------------------------------------ inputs
    def on_pulse(self, state: float, direction: float, t_s: float, system_stopped: bool = False) -> str:
        """One pulse message (``linear.x``, ``angular.z`` of hri_pulse's Twist). Returns what happened.
        ``system_stopped``: the system stop holds without a latched fault (no heartbeat yet): refused,
        after the repeat check (one pulse = one refusal; its later messages are repeats)."""
        if not (math.isfinite(state) and math.isfinite(direction) and math.isfinite(t_s)):
            return self._count("rejected_non_finite", f"state={state} direction={direction}")
        s, d = round(state), round(direction)
        if abs(state - s) > 1e-6 or not 0 <= s <= 3:
            return self._count("rejected_state", f"state={state} is not 0..3")
        if abs(direction - d) > 1e-6 or d not in (-1, 0, 1):
            return self._count("rejected_direction", f"direction={direction} is not -1/0/1")
        if not self.gate.accept(s, d, t_s):
            return self._count("repeat", None)
        if system_stopped and not self.faults.active:   # a press refused; an idle (0) has nothing to do
            return self._count("rejected_system_stop" if s else "idle_during_stop", None)
        if self.faults.active:
            return self._count("rejected_fault", f"fault {self.faults.fault.value} latched; reset first")
        cmd = Command(s, d, t_s)
        if s == 0:
            if self.locked:
                return self._count("idle_during_movement", None)
            self._start(cmd, t_s)
            return self._count("idle", None)
        if self.locked:
            if self.queue.push(cmd):
                return self._count("queued", None)
            return self._count("dropped_queue_full", f"queue full ({self.queue.depth}), state {s} dropped")
        self._start(cmd, t_s)
        return self._count("started", None)

    def safe_stop(self, t_s: float, detail: str = "link monitor safe-stop") -> None:
        self._trip(Fault.LINK_SAFE_STOP, detail)

    def system_stop(self, t_s: float, detail: str = "system stop") -> None:
        """The system stop (hri_safety): motor 0, twist 0, latched."""
        self._trip(Fault.SYSTEM_STOP, detail)

    def device_fault(self, t_s: float, detail: str) -> None:
        """The driver's device stalled or vanished (e.g. the serial link): motor 0, twist 0, latched."""
        self._trip(Fault.DEVICE, detail)

    def on_system_stop(self, t_s: float, stopped: bool, cause: str) -> bool:
        """The system stop changed. A stop with a ``cause`` latches the fault ``system_stop`` (a
        stop without one, no heartbeat yet, latches nothing); a release clears it. True when a
        latched system stop was cleared."""
        if stopped:
            if cause:
                self.system_stop(t_s, f"system stop: {cause}")
            return False
        return self.release_system_stop(t_s)

    def on_device(self, t_s: float, fault: str | None) -> bool:
        """The driver's device state (``fault`` None: healthy). A new fault latches
        ``device_fault``; True then, once per fault (the caller requests the system stop)."""
        if fault is None or fault == self._device_fault:
            self._device_fault = fault
            return False
        self._device_fault = fault
        self.device_fault(t_s, fault)
        return True

    def release_system_stop(self, t_s: float) -> bool:
        """The system stop was reset: clear the fault if it is the system stop's (any other fault
        keeps needing its own reset)."""
        return self.faults.fault is Fault.SYSTEM_STOP and self.reset(t_s)

    def reset(self, t_s: float) -> bool:
        """Clear a latched fault (explicit operator action). The robot is then in state 0."""
        if not self.faults.active:
            return False
        _log.info("fault %s reset", self.faults.fault.value)
        self.faults.reset()
        self.leg.start(0, t_s)
        self.base.start(0, 0, t_s)
        self.counts["reset"] += 1
        return True

    # ------------------------------------------------------------------ update
    def control(self, t_s: float, reading: LegReading | None, stopped: bool = False,
                stop_cause: str = "", measured_s: float | None = None) -> AtomicOutput:
        """One control period of the node. The system stop (``stopped``) with a ``stop_cause``
        latches ``system_stop``; stopped without one (no heartbeat yet) the outputs are zero and
        the controller does not run; without a leg ``reading`` too (counted ``no_leg_state``).
        ``measured_s``: when the reading was taken (None: now; see :meth:`step`)."""
        if stopped and stop_cause and self.faults.fault is None:
            self.system_stop(t_s, f"system stop: {stop_cause}")
        if stopped and self.faults.fault is None:
            return AtomicOutput(0.0, 0.0, 0.0)
        if reading is None:
            self.counts["no_leg_state"] += 1
            return AtomicOutput(0.0, 0.0, 0.0)
        return self.step(t_s, reading.ticks, reading.home_pressed, measured_s)

    def step(self, t_s: float, ticks: int, home_pressed: bool, measured_s: float | None = None) -> AtomicOutput:
        """One control update at time ``t_s`` with the leg's encoder and home switch, read at
        ``measured_s`` (None: at ``t_s``; the leg's stall check runs on the readings' clock)."""
        if self.faults.active:
            return AtomicOutput(0.0, 0.0, 0.0)
        leg = self.leg.update(t_s, ticks, home_pressed, measured_s)
        if leg.fault is not None:
            self._trip(leg.fault, leg.detail)
            return AtomicOutput(0.0, 0.0, 0.0)
        v, w = self.base.update(t_s)
        if self.current is not None and not self.leg.busy and not self.base.busy:
            self.current = None
            nxt = self.queue.pop()
            if nxt is not None:
                self._start(nxt, t_s)
                leg = self.leg.update(t_s, ticks, home_pressed, measured_s)
                if leg.fault is not None:
                    self._trip(leg.fault, leg.detail)
                    return AtomicOutput(0.0, 0.0, 0.0)
                v, w = self.base.update(t_s)
        return AtomicOutput(leg.rpm, v, w)

    # ------------------------------------------------------------------ internals
    def _start(self, cmd: Command, t_s: float) -> None:
        self.leg.start(cmd.state, t_s)
        self.base.start(cmd.state, cmd.direction, t_s)
        if cmd.state != 0:
            self.current = Command(cmd.state, cmd.direction, t_s)
            self.started.append(self.current)
            self.movements += 1

    def _trip(self, fault: Fault, detail: str) -> None:
        if self.faults.trip(fault, detail):
            _log.error("fault latched: %s (%s); motor 0, twist 0 until reset", fault.value, detail)
        self.leg.stop()
        self.base.reset_flags()
        self.queue.clear()
        self.current = None

    def _count(self, what: str, why: str | None) -> str:
        self.counts[what] += 1
        if why:
            _log.warning("pulse %s: %s", what, why)
        return what

    def diagnostics(self, waiting_for_leg: bool = False) -> tuple[int, str, dict]:
        """(level, message, values) of the diagnostics: ERROR while a fault is latched, WARN while
        ``waiting_for_leg`` (no leg state ever received) and control periods went without one."""
        st = self.status()
        if st["fault"]:
            level, message = ERROR, f"fault latched: {st['fault']} ({st['fault_detail']})"
        else:
            level, message = (WARN if waiting_for_leg and self.counts.get("no_leg_state") else OK), "ok"
        values = {"state": st["state"], "locked": st["locked"], "leg_phase": st["leg_phase"],
                  "base_phase": st["base_phase"], "queue": st["queue"], "fault_counts": dict(self.faults.counts),
                  **{f"count_{k}": v for k, v in st["counts"].items()}}
        return level, message, values

    def status(self) -> dict:
        return {"state": self.current.state if self.current else 0,
                "direction": self.current.direction if self.current else 0,
                "locked": self.locked, "leg_phase": self.leg.phase, "leg_rest": self.leg.rest,
                "base_phase": self.base.phase, "queue": len(self.queue),
                "fault": self.faults.fault.value if self.faults.fault else None,
                "fault_detail": self.faults.detail, "counts": dict(self.counts)}
