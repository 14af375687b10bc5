"""Discrete PID controller (parallel form) with measured dt, filtered derivative on measurement,
output limits, anti-windup (clamping or back-calculation) and bumpless gain changes.

Control law (continuous, parallel form as in Webel's thesis)::

    u(t) = Kp e(t) + Ki ∫ e dt − Kd dy_f/dt + u_ff,      e = r − y
    Tf dy_f'/dt + y_f' = dy/dt                          (first-order derivative filter)

Standard (ISA) form: ``u = Kp (e + 1/Ti ∫e dt + Td de/dt)`` with ``Ti = Kp/Ki``, ``Td = Kd/Kp``.

Discretisation at sample k, with ``h = t_k − t_{k−1}`` measured from the timestamps passed to
:meth:`PID.update` (never assumed)::

    I_k   = I_{k−1} + Ki h e_k                                 (backward rectangle)
    d_k   = (Tf d_{k−1} + (y_k − y_{k−1})) / (Tf + h)          (backward Euler, stable for all h)
    v_k   = Kp e_k + I_k − Kd d_k + u_ff
    u_k   = sat(v_k, u_min, u_max)

Anti-windup:

* ``clamp`` (conditional integration): the increment ``Ki h e_k`` is undone when ``v_k`` is
  saturated and the error pushes further into saturation.
* ``back_calculation`` (Åström & Hägglund): ``I_k += min(h/Tt, 1) (u_k − v_k)`` with tracking time
  ``Tt`` (default ``sqrt(Ti Td)`` if ``Td > 0`` else ``Ti``).
* ``none``.

The integral is stored as the integral *term* (already multiplied by Ki), so a change of Ki never
moves the output. Bumpless :meth:`PID.set_gains`: the integral absorbs the change of the P and D
terms at the last sample, ``I ← I + (P_old + D_old) − (P_new + D_new)``, so the output is
continuous (only possible when the new Ki > 0: with Ki = 0 an absorbed offset would never decay,
so the P/D jump is then accepted and counted).

Bad input (NaN/Inf, non-increasing time) is rejected, counted per cause in :attr:`PID.rejected`,
logged, and the last output is held.
"""
from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Mapping

from .parameters_gen import PidTuningPidParams

_log = logging.getLogger(__name__)

ANTI_WINDUP_MODES = ("clamp", "back_calculation", "none")


@dataclass(frozen=True)
class PIDGains:
    """Parallel-form gains: ``u = kp e + ki ∫e dt + kd de/dt`` (units: output per rad, per rad·s,
    per rad/s when the error is in radians)."""

    kp: float
    ki: float = 0.0
    kd: float = 0.0

    def __post_init__(self) -> None:
        for name in ("kp", "ki", "kd"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"PIDGains.{name} must be a finite number, got {v!r}")
            object.__setattr__(self, name, float(v))

    # --- standard form ---------------------------------------------------------------------
    @classmethod
    def from_standard(cls, kp: float, ti_s: float | None, td_s: float = 0.0) -> "PIDGains":
        """``Ki = Kp/Ti`` (``Ti`` None or inf → no integral), ``Kd = Kp Td``."""
        ki = 0.0 if ti_s is None or math.isinf(ti_s) else kp / ti_s
        return cls(kp=kp, ki=ki, kd=kp * td_s)

    def to_standard(self) -> tuple[float, float, float]:
        """``(Kp, Ti, Td)`` with ``Ti = Kp/Ki`` (inf when Ki = 0) and ``Td = Kd/Kp``.

        Raises ``ValueError`` when Kp = 0 and Ki or Kd ≠ 0 (no standard form exists)."""
        if self.kp == 0.0:
            if self.ki == 0.0 and self.kd == 0.0:
                return 0.0, math.inf, 0.0
            raise ValueError("standard form undefined for kp = 0 with ki or kd != 0")
        ti = math.inf if self.ki == 0.0 else self.kp / self.ki
        return self.kp, ti, self.kd / self.kp

    @property
    def ti_s(self) -> float:
        return self.to_standard()[1]

    @property
    def td_s(self) -> float:
        return self.to_standard()[2]

    # --- serialisation (thesis PidConfiguration entry: {kp, ki, kd}) -------------------------
    def to_dict(self) -> dict[str, float]:
        return {"kp": self.kp, "ki": self.ki, "kd": self.kd}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "PIDGains":
        return cls(kp=float(d["kp"]), ki=float(d.get("ki", 0.0)), kd=float(d.get("kd", 0.0)))


@dataclass(frozen=True)
class PIDParams(PidTuningPidParams):
    """Everything but the gains: the keys of ``pid_tuning.pid`` (fields, types and
    ``from_config`` generated from the declaration into ``hri_core.parameters_gen``).

    derivative_filter_tau_s: Tf in s (takes precedence); else derivative_filter_n: Tf = Td/N;
    both None → unfiltered difference quotient; output_min/max None = unbounded; tracking_time_s
    None = sqrt(Ti·Td) or Ti; dt_max_s: a larger gap re-initialises the derivative, caps h (None =
    no cap). No field defaults: the numbers live in config/; overrides with
    ``dataclasses.replace`` or ``PID(gains, params, **overrides)``.
    """

    def __post_init__(self) -> None:
        if self.anti_windup not in ANTI_WINDUP_MODES:
            raise ValueError(f"anti_windup must be one of {ANTI_WINDUP_MODES}, got {self.anti_windup!r}")
        if self.output_min is not None and self.output_max is not None and self.output_min > self.output_max:
            raise ValueError(f"output_min {self.output_min} > output_max {self.output_max}")
        for name in ("tracking_time_s", "derivative_filter_n", "dt_max_s"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise ValueError(f"{name} must be > 0 or None, got {v!r}")
        if self.derivative_filter_tau_s is not None and self.derivative_filter_tau_s < 0:
            raise ValueError("derivative_filter_tau_s must be >= 0")


@dataclass
class PIDTerms:
    """The terms of the last accepted sample (for logging / plots)."""

    p: float = 0.0
    i: float = 0.0
    d: float = 0.0
    ff: float = 0.0
    unsaturated: float = 0.0
    output: float = 0.0
    saturated: bool = False


class PID:
    """Discrete PID (see module docstring for the equations).

    >>> params = PIDParams.from_config(cfg["pid_tuning"]["pid"])
    >>> pid = PID(PIDGains(2.0, 1.0, 0.0), params, output_min=-1, output_max=1)
    >>> u = pid.update(setpoint=1.0, measurement=0.0, t_s=0.0)
    """

    def __init__(self, gains: PIDGains, params: PIDParams, **param_overrides: Any):
        self._params = replace(params, **param_overrides)
        self._gains = gains
        self.rejected: Counter[str] = Counter()
        self.gain_jumps = 0
        self.reset()

    # --- properties --------------------------------------------------------------------------
    @property
    def gains(self) -> PIDGains:
        return self._gains

    @property
    def params(self) -> PIDParams:
        return self._params

    @property
    def terms(self) -> PIDTerms:
        return self._terms

    @property
    def integral(self) -> float:
        """Integral term (already multiplied by Ki), in output units."""
        return self._i

    @property
    def output(self) -> float:
        return self._terms.output

    # --- helpers -------------------------------------------------------------------------------
    def _tf(self, g: PIDGains) -> float:
        p = self._params
        if p.derivative_filter_tau_s is not None:
            return p.derivative_filter_tau_s
        if p.derivative_filter_n is not None and g.kp != 0.0:
            return abs(g.kd / g.kp) / p.derivative_filter_n
        return 0.0

    def _tt(self, g: PIDGains) -> float:
        p = self._params
        if p.tracking_time_s is not None:
            return p.tracking_time_s
        if g.ki == 0.0 or g.kp == 0.0:
            return math.inf
        ti = abs(g.kp / g.ki)
        td = abs(g.kd / g.kp)
        return math.sqrt(ti * td) if td > 0 else ti

    def _sat(self, v: float) -> float:
        p = self._params
        if p.output_max is not None and v > p.output_max:
            return p.output_max
        if p.output_min is not None and v < p.output_min:
            return p.output_min
        return v

    def _reject(self, cause: str, detail: str) -> float:
        self.rejected[cause] += 1
        _log.warning("PID sample rejected (%s): %s; holding output %.6g", cause, detail, self._terms.output)
        return self._terms.output

    # --- API -----------------------------------------------------------------------------------
    def reset(self, integral: float = 0.0) -> None:
        """Forget time, measurement history, derivative state; set the integral term."""
        self._i = float(integral)
        self._d = 0.0
        self._t_last: float | None = None
        self._y_last: float | None = None
        self._e_last = 0.0
        self._terms = PIDTerms(i=self._i, output=self._sat(self._i))

    def set_params(self, **changes: Any) -> None:
        """Change limits/filter/anti-windup at run time (gains: use :meth:`set_gains`)."""
        self._params = replace(self._params, **changes)

    def set_gains(self, gains: PIDGains, bumpless: bool = True) -> None:
        """Replace the gains. With ``bumpless`` and a previous sample the integral absorbs the
        change of the P and D terms so the next output with unchanged inputs is unchanged."""
        old = self._gains
        self._gains = gains
        if not bumpless or self._t_last is None:
            return
        p_old = old.kp * self._e_last
        d_old = -old.kd * self._d
        p_new = gains.kp * self._e_last
        d_new = -gains.kd * self._d
        delta = (p_old + d_old) - (p_new + d_new)
        if gains.ki != 0.0:
            self._i += delta
        elif delta != 0.0:
            self.gain_jumps += 1
            _log.info("set_gains: ki = 0, P/D change of %.6g not absorbed (output jumps)", -delta)

    def update(self, setpoint: float, measurement: float, t_s: float, feedforward: float = 0.0) -> float:
        """One control step at time ``t_s`` (s, any monotonic clock). Returns the saturated output."""
        if not (math.isfinite(setpoint) and math.isfinite(measurement) and math.isfinite(feedforward)):
            return self._reject("non_finite_input", f"r={setpoint}, y={measurement}, ff={feedforward}")
        if not math.isfinite(t_s):
            return self._reject("non_finite_time", f"t={t_s}")
        g = self._gains
        p = self._params
        e = setpoint - measurement
        first = self._t_last is None
        if not first:
            h = t_s - self._t_last  # type: ignore[operator]
            if h <= 0.0:
                return self._reject("non_increasing_time", f"t={t_s} after {self._t_last}")
            gap = p.dt_max_s is not None and h > p.dt_max_s
            if gap:
                _log.info("PID: gap of %.3f s > dt_max_s; derivative re-initialised", h)
                h = p.dt_max_s  # type: ignore[assignment]
                self._d = 0.0
            else:
                tf = self._tf(g)
                self._d = (tf * self._d + (measurement - self._y_last)) / (tf + h)  # type: ignore[operator]
            di = g.ki * h * e
        else:
            h = 0.0
            di = 0.0
        i_prev = self._i
        self._i = i_prev + di
        p_term = g.kp * e
        d_term = -g.kd * self._d
        v = p_term + self._i + d_term + feedforward
        u = self._sat(v)
        if u != v:
            if p.anti_windup == "clamp":
                # undo the increment if it drives further into saturation
                if (v > u and di > 0.0) or (v < u and di < 0.0):
                    self._i = i_prev
                    v = p_term + self._i + d_term + feedforward
                    u = self._sat(v)
            elif p.anti_windup == "back_calculation" and h > 0.0:
                tt = self._tt(g)
                if math.isfinite(tt):
                    self._i += min(h / tt, 1.0) * (u - v)
        self._t_last = t_s
        self._y_last = measurement
        self._e_last = e
        self._terms = PIDTerms(p=p_term, i=self._i, d=d_term, ff=feedforward, unsaturated=v, output=u,
                               saturated=(u != v))
        return u
