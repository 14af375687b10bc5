"""Leg controller of the social robot: encoder ticks in, motor RPM out (the Tino VR design, states 0-3).

Sign convention: forward = extension = increasing ticks = positive RPM.

* State 0 / rest ``neutral``: no command while ``|ticks - neutral| <= tolerance_ticks`` (no
  micro-corrections); outside the zone it drives towards neutral at ``rpm_neutral`` until
  ``|ticks - neutral| <= settle_ticks`` (hysteresis, so it does not chatter on the zone edge).
* State 1 "little push": phase table push / pause / return = ``push_fractions`` of
  ``push_duration_s`` at ``+rpm_forward`` / 0 / ``-rpm_backward``.
* State 2: ``extend`` at ``+rpm_forward`` until within ``extension_reached_ticks`` of
  ``max_extension_ticks``, then the rest behaviour becomes ``hold``: the discrete PID of
  ``hri_core.pid`` (Kp, Ki, Kd from config; RPM per tick) holds the extension until
  the next command.
* State 3: ``home`` at ``-rpm_backward`` until the home switch closes; fault after ``home_timeout_s``.
* Soft limit: a forward command is zeroed at ``ticks >= max_extension_ticks`` (e.g. a state-1
  push started from the state-2 hold); phase timing is unchanged.
* Every RPM command is multiplied by ``scale_forward`` (positive) or ``scale_backward`` (negative)
  just before it leaves the controller (direction asymmetry compensation).
* Faults detected here: stall (``|cmd| >= stall_min_rpm`` and the encoder moved less than
  ``stall_min_ticks`` for ``stall_time_s`` of encoder readings: timed by when the readings were
  taken, so a reading that is merely late -- a starved leg-state publisher -- is not a stalled
  motor; a reading that stops coming is the leg-state timeout's case), home timeout, encoder outside
  ``[encoder_min_ticks, encoder_max_ticks]``.
"""
from __future__ import annotations

from dataclasses import dataclass

from hri_core.pid import PID, PIDGains, PIDParams

from .framework import Fault, PhaseTable, to_ms
from .params import LegParams


@dataclass(slots=True)
class LegOutput:
    rpm: float                   # scaled motor command
    rpm_unscaled: float          # before the asymmetry compensation
    fault: Fault | None = None
    detail: str = ""


class LegController:
    def __init__(self, p: LegParams):
        self.p = p
        self.pid = PID(PIDGains(p.hold_kp, p.hold_ki, p.hold_kd),
                       PIDParams(output_min=-p.hold_output_max_rpm, output_max=p.hold_output_max_rpm,
                                 anti_windup="back_calculation", tracking_time_s=None,
                                 derivative_filter_tau_s=None, derivative_filter_n=p.hold_derivative_filter_n,
                                 dt_max_s=None))
        f = p.push_fractions
        d = p.push_duration_s
        self.push_table = PhaseTable([("push", d * f[0]), ("pause", d * f[1]), ("return", d * f[2])])
        self.state: int | None = None      # running movement, None when resting
        self.phase = "rest"
        self.rest = "neutral"              # neutral | hold
        self._t0_ms = 0
        self._correcting = False
        self._last_unscaled = 0.0
        self._stall_ref_ticks: int | None = None
        self._stall_ref_ms = 0
        self._stall_ms = to_ms(p.stall_time_s)            # precomputed: update() runs every ms
        self._home_timeout_ms = to_ms(p.home_timeout_s)

    # ------------------------------------------------------------------ helpers
    def scale(self, rpm: float) -> float:
        """Asymmetry compensation: forward ×scale_forward, backward ×scale_backward."""
        if rpm > 0.0:
            return rpm * self.p.scale_forward
        if rpm < 0.0:
            return rpm * self.p.scale_backward
        return 0.0

    @property
    def busy(self) -> bool:
        return self.state is not None

    def start(self, state: int, t_s: float) -> None:
        """Start a movement (1, 2, 3) or go to the neutral rest (0)."""
        self._t0_ms = to_ms(t_s)
        if state == 0:
            self.state, self.phase, self.rest = None, "rest", "neutral"
            self._correcting = False
            return
        self.state = state
        self.phase = {1: "push", 2: "extend", 3: "home"}[state]

    def stop(self) -> None:
        """Abort (fault): no movement, motor 0 on the next update is the caller's job."""
        self.state, self.phase, self.rest = None, "stopped", "neutral"
        self._correcting = False
        self._last_unscaled = 0.0
        self._stall_ref_ticks = None

    def _out(self, rpm: float, ticks: int | None = None) -> LegOutput:
        if ticks is not None and rpm > 0.0 and ticks >= self.p.max_extension_ticks:
            rpm = 0.0          # soft limit: never drive forward beyond the maximum extension
        self._last_unscaled = rpm
        return LegOutput(rpm=self.scale(rpm), rpm_unscaled=rpm)

    # ------------------------------------------------------------------ update
    def update(self, t_s: float, ticks: int, home_pressed: bool, measured_s: float | None = None) -> LegOutput:
        """One update at ``t_s``; ``measured_s``: when ``ticks`` was read (None: at ``t_s``), the
        stall check's clock."""
        p = self.p
        now = to_ms(t_s)
        read_ms = now if measured_s is None else to_ms(measured_s)
        if not (p.encoder_min_ticks <= ticks <= p.encoder_max_ticks):
            return LegOutput(0.0, 0.0, Fault.ENCODER_RANGE,
                             f"ticks {ticks} outside [{p.encoder_min_ticks}, {p.encoder_max_ticks}]")
        # stall: the command applied since the last update was strong but the encoder did not move
        if abs(self._last_unscaled) >= p.stall_min_rpm:
            if self._stall_ref_ticks is None or abs(ticks - self._stall_ref_ticks) >= p.stall_min_ticks:
                self._stall_ref_ticks, self._stall_ref_ms = ticks, read_ms
            elif read_ms - self._stall_ref_ms >= self._stall_ms:
                return LegOutput(0.0, 0.0, Fault.STALL, f"encoder at {ticks} for {read_ms - self._stall_ref_ms} ms "
                                                        f"at {self._last_unscaled:.0f} RPM")
        else:
            self._stall_ref_ticks, self._stall_ref_ms = ticks, read_ms
        elapsed = now - self._t0_ms
        if self.state == 1:
            i = self.push_table.phase_at(elapsed)
            if i is not None:
                self.phase = self.push_table.names[i]
                return self._out((p.rpm_forward, 0.0, -p.rpm_backward)[i], ticks)
            self.state, self.rest, self._correcting = None, "neutral", False
        elif self.state == 2:
            if abs(ticks - p.max_extension_ticks) > p.extension_reached_ticks:
                self.phase = "extend"
                return self._out(p.rpm_forward if ticks < p.max_extension_ticks else -p.rpm_backward)
            self.state, self.rest = None, "hold"
            self.pid.reset()
        elif self.state == 3:
            if not home_pressed:
                if elapsed >= self._home_timeout_ms:
                    return LegOutput(0.0, 0.0, Fault.HOME_TIMEOUT, f"home switch not closed after {elapsed} ms")
                self.phase = "home"
                return self._out(-p.rpm_backward)
            self.state, self.rest, self._correcting = None, "neutral", False
        # resting
        if self.rest == "hold":
            self.phase = "hold"
            return self._out(self.pid.update(float(p.max_extension_ticks), float(ticks), t_s))
        self.phase = "neutral"
        err = p.neutral_ticks - ticks
        if abs(err) > p.tolerance_ticks:
            self._correcting = True
        elif abs(err) <= p.settle_ticks:
            self._correcting = False
        if not self._correcting:
            return self._out(0.0)
        return self._out(p.rpm_neutral if err > 0 else -p.rpm_neutral)
