"""Command pulses (the Tino VR design, "Pulse-Based Command Architecture", "Input Signal Conditioning").

* ``RisingEdge``: a held input (VR stream value or gamepad buttons) becomes one command when the
  value changes to a non-idle value; holding it produces nothing more.
* ``PulseGenerator``: an accepted command at time t0 is published ``cycles`` (3) times at
  ``rate_hz`` (25 Hz): at t0, t0 + T, t0 + 2T (T = 1/rate_hz = 40 ms), then idle (state 0) at
  t0 + 3T and every T after that. One press = one movement whatever the hold time.
  Debounce: a command less than ``debounce_s`` (200 ms) after the previous accepted command is
  dropped (counted). The head orientation at the command is captured with it.
  Emission times are computed as t0 + k T (no accumulated drift); ``due(now)`` returns every
  message whose time has come, so the caller may tick faster than T (the node ticks at 5 ms).
  ``idle_stream`` (true in the Tino VR design) publishes idle every T between pulses; false publishes one idle
  message after each pulse and then nothing, so two command sources (VR + gamepad) can share
  ``/base_cmd`` without one's idle stream splitting the other's pulse into several.
"""
from __future__ import annotations

from typing import List, NamedTuple, Optional, Tuple

from hri_runtime.parameter_library.typed import params_type

_EPS_S = 1e-9


class Command(NamedTuple):
    state: int                      # 0..3 (0 = idle)
    direction: int                  # -1 left, 0 forward, +1 right
    head_rad: Tuple[float, float, float] = (0.0, 0.0, 0.0)   # pitch, pan, tilt at the command
    t_s: float = 0.0                # time the command was accepted


IDLE = Command(0, 0)


class Emission(NamedTuple):
    t_s: float          # scheduled publication time
    state: int
    direction: int
    command: Optional[Command]   # the command this message belongs to (None for idle)
    index: int          # 0..cycles-1 inside a pulse, -1 for idle


PulseParams = params_type("pulse.pulse")


class RisingEdge:
    """Rising-edge trigger on a (state, direction) value; state 0 is "released"."""

    def __init__(self):
        self.prev: Tuple[int, int] = (0, 0)

    def reset(self) -> None:
        self.prev = (0, 0)

    def update(self, state: int, direction: int) -> bool:
        value = (state, direction) if state != 0 else (0, 0)
        fired = value != self.prev and value[0] != 0
        self.prev = value
        return fired


class PulseGenerator:
    def __init__(self, params: PulseParams, start_s: float = 0.0):
        self.p = params
        self._T = 1.0 / params.rate_hz
        self._anchor = start_s      # t0 of the current schedule
        self._k = 0                 # index of the next emission in the current schedule
        self._cmd: Optional[Command] = None
        self._last_accept_s: Optional[float] = None
        self._idle_sent = False
        self.accepted = 0
        self.debounced = 0
        self.cancelled = 0

    @property
    def active(self) -> bool:
        return self._cmd is not None and self._k < self.p.cycles

    def request(self, cmd: Command, now_s: float) -> bool:
        """Start a pulse of ``cmd`` at ``now_s`` unless debounced; True if accepted."""
        if cmd.state == 0:
            self.cancel(now_s)
            return True
        if self._last_accept_s is not None and now_s - self._last_accept_s < self.p.debounce_s - _EPS_S:
            self.debounced += 1
            return False
        self._last_accept_s = now_s
        self._cmd = cmd._replace(t_s=now_s)
        self._anchor, self._k = now_s, 0
        self._idle_sent = False
        self.accepted += 1
        return True

    def cancel(self, now_s: float) -> None:
        """Abort a running pulse: idle from ``now_s`` on (A button, safe stop)."""
        if self.active:
            self.cancelled += 1
        self._cmd = None
        self._anchor, self._k = now_s, 0
        self._idle_sent = False

    def due(self, now_s: float) -> List[Emission]:
        """Messages whose time is <= now_s, oldest first. After a long stall the missed idle
        messages collapse into one (pulse messages are never skipped)."""
        out: List[Emission] = []
        T, n = self._T, self.p.cycles
        while True:
            t = self._anchor + self._k * T
            if t > now_s + _EPS_S:
                break
            if self._cmd is not None and self._k < n:
                out.append(Emission(t, self._cmd.state, self._cmd.direction, self._cmd, self._k))
            else:
                if self._cmd is not None:          # pulse finished: idle from here on
                    self._cmd = None
                elif not self.p.idle_stream:
                    if self._idle_sent:            # one idle message after a pulse/cancel only
                        self._k = int((now_s + _EPS_S - self._anchor) / T) + 1
                        break
                self._idle_sent = True
                # collapse a backlog of idle messages into the newest one
                k_last = self._k + max(0, int((now_s + _EPS_S - t) / T))
                self._k = k_last
                out.append(Emission(self._anchor + k_last * T, 0, 0, None, -1))
            self._k += 1
        return out
