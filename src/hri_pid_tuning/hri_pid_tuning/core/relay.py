"""Relay auto-tuning (Webel's thesis §3.5.2; Åström–Hägglund relay feedback).

All gains are zeroed and the joint is driven by a relay around the target angle::

    u = b + d   if e >  ε           e = r − y
    u = b − d   if e < −ε
    u = u_prev  otherwise            (hysteresis ε against noise chatter)

``b`` is the bias (gravity) compensation: after every full relay period it is set to the mean
output over that period (relaxed by ``bias_gain``); at the fixed point the mean effort equals the
static load and the oscillation is symmetric about the target.

After ``warmup_s`` the oscillation is recorded for ``duration_s``; peaks are found with the
noise-robust hysteresis detector (:mod:`.peaks`). With the peaks' mean ``c`` (baseline, absorbs a
residual offset, as the thesis's code), zero-to-peak amplitude ``a = mean |peak − c|`` and period
``Tu`` = mean interval between same-kind peaks, the describing function gives::

    Ku = 4 d / (π a)

(``d`` in effort units, ``a`` in rad → Ku in effort/rad). If fewer than ``min_peaks`` peaks were
found, the measurement is extended by another ``duration_s`` up to ``max_attempts`` windows; the
experiment aborts on joint-limit contact, divergence or a non-finite measurement, and always
ends with effort 0 (the caller restores the previous gains).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


from .peaks import Peak, find_peaks_hysteresis
from .plant import JointPlant
from hri_pid_tuning.parameters_gen import PidTuningRelayParams

_log = logging.getLogger(__name__)


#: the relay test (``pid_tuning.relay``, declared in parameters.yaml; angles in degrees as in the
#: thesis's API)
RelayParams = PidTuningRelayParams


@dataclass
class RelayResult:
    ok: bool
    reason: str                               # "ok" | "too_few_peaks" | "joint_limit" | "excursion" | "divergence" | "non_finite"
    ku: float | None = None                   # effort / rad
    tu_s: float | None = None
    amplitude_rad: float | None = None        # zero-to-peak
    relay_amplitude: float = 0.0              # d
    bias: float = 0.0                         # final b
    baseline_rad: float | None = None
    peaks: list[Peak] = field(default_factory=list)
    attempts: int = 0
    t_s: np.ndarray | None = None             # recorded measurement window (plant time)
    measured_rad: np.ndarray | None = None
    effort: np.ndarray | None = None

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "reason": self.reason, "ku": self.ku, "tu_s": self.tu_s,
                "amplitude_deg": None if self.amplitude_rad is None else math.degrees(self.amplitude_rad),
                "relay_amplitude": self.relay_amplitude, "bias": self.bias,
                "peaks": len(self.peaks), "attempts": self.attempts}


class RelayController:
    """Relay with hysteresis and bias compensation; ``update`` once per sample."""

    def __init__(self, d: float, hysteresis: float = 0.0, bias: float = 0.0,
                 bias_compensation: bool = True, bias_gain: float = 1.0, bias_limit: float | None = None):
        self.d = float(d)
        self.eps = float(hysteresis)
        self.bias = float(bias)
        self.bias_compensation = bias_compensation
        self.bias_gain = bias_gain
        self.bias_limit = self.d if bias_limit is None else float(bias_limit)
        self._sign = 1.0
        self._t_switch_up: float | None = None
        self._acc = 0.0
        self._acc_t = 0.0
        self._t_last: float | None = None
        self._u_last = 0.0
        self.periods = 0

    def update(self, setpoint: float, measurement: float, t_s: float) -> float:
        e = setpoint - measurement
        if self._t_last is not None:
            h = t_s - self._t_last
            self._acc += self._u_last * h
            self._acc_t += h
        new_sign = self._sign
        if e > self.eps:
            new_sign = 1.0
        elif e < -self.eps:
            new_sign = -1.0
        if new_sign > 0 and self._sign < 0:
            # a full period ends at every switch to +d
            if self._t_switch_up is not None and self._acc_t > 0:
                mean_u = self._acc / self._acc_t
                if self.bias_compensation:
                    self.bias += self.bias_gain * (mean_u - self.bias)
                    self.bias = max(-self.bias_limit, min(self.bias_limit, self.bias))
                self.periods += 1
            self._t_switch_up = t_s
            self._acc = 0.0
            self._acc_t = 0.0
        self._sign = new_sign
        u = self.bias + self._sign * self.d
        self._t_last = t_s
        self._u_last = u
        return u


def analyse_oscillation(t_s: np.ndarray, y: np.ndarray, d: float, peak_hysteresis: float,
                        min_peaks: int, peak_hysteresis_fraction: float = 0.0) -> tuple[float | None, float | None, float | None, float | None, list[Peak]]:
    """``(ku, tu_s, a, baseline, peaks)`` from a recorded relay oscillation (y in rad)."""
    if len(y) < 3:
        return None, None, None, None, []
    h = max(peak_hysteresis, peak_hysteresis_fraction * 0.5 * float(np.max(y) - np.min(y)), 1e-12)
    peaks = find_peaks_hysteresis(t_s, y, h)
    if len(peaks) < min_peaks:
        return None, None, None, None, peaks
    vals = np.array([p.value for p in peaks])
    # baseline as the mean of maxima- and minima-means (robust to an odd number of peaks)
    maxima = [p for p in peaks if p.kind == 1]
    minima = [p for p in peaks if p.kind == -1]
    if len(maxima) < 2 or len(minima) < 2:
        return None, None, None, None, peaks
    c = 0.5 * (np.mean([p.value for p in maxima]) + np.mean([p.value for p in minima]))
    a = float(np.mean(np.abs(vals - c)))
    periods = [b.t_s - a_.t_s for grp in (maxima, minima) for a_, b in zip(grp, grp[1:])]
    tu = float(np.mean(periods))
    if a <= 0:
        return None, tu, a, float(c), peaks
    ku = 4.0 * d / (math.pi * a)
    return ku, tu, a, float(c), peaks


def relay_tune(plant: JointPlant, params: RelayParams, progress=None, *, bias0: float = 0.0,
               excursion_rad: float | None = None, reset: bool = True,
               check_every_s: float | None = None) -> RelayResult:
    """Run the relay experiment on ``plant`` (see module docstring). ``progress(fraction)`` is
    called now and then (plant time based). ``bias0``: initial bias (e.g. the effort that held the
    joint); ``excursion_rad``: abort (``excursion``) as soon as |target − y| exceeds it;
    ``reset=False`` starts from where the joint is (no move to the start angle);
    ``check_every_s``: also analyse the recording so far at this interval and stop as soon as it
    has ``min_peaks`` peaks (an oscillation that grows – a double integrator with delay has no
    stable limit cycle – is measured before it leaves the excursion band)."""
    p = params
    d = p.amplitude if p.amplitude is not None else p.amplitude_fraction * plant.effort_max
    d = min(d, plant.effort_max)
    r = math.radians(p.target_angle_deg)
    if reset:
        plant.reset(math.radians(p.start_angle_deg))
    # the bias may take up to the effort limit (a gravity load larger than d is compensated too)
    relay = RelayController(d, math.radians(p.hysteresis_deg), bias0, p.bias_compensation, p.bias_gain,
                            bias_limit=plant.effort_max if math.isfinite(plant.effort_max) else None)
    margin = math.radians(p.joint_limit_margin_deg)
    div = math.radians(p.divergence_deg)
    t0 = plant.t_s
    n_warm = int(round(p.warmup_s / plant.dt_s))
    n_win = int(round(p.duration_s / plant.dt_s))
    n_check = int(round(check_every_s / plant.dt_s)) if check_every_s else 0
    rec_t: list[float] = []
    rec_y: list[float] = []
    rec_u: list[float] = []
    result = RelayResult(ok=False, reason="too_few_peaks", relay_amplitude=d)
    k = 0
    attempts = 0
    n_total = n_warm + p.max_attempts * n_win
    next_progress = 0.0
    while k < n_total:
        t = plant.t_s - t0
        y = plant.q_rad
        if not math.isfinite(y):
            result.reason = "non_finite"
            break
        if y < plant.q_min_rad + margin or y > plant.q_max_rad - margin:
            result.reason = "joint_limit"
            _log.info("relay aborted: joint at %.1f° within %.1f° of a limit", math.degrees(y),
                         p.joint_limit_margin_deg)
            break
        if excursion_rad is not None and abs(r - y) > excursion_rad:
            result.reason = "excursion"
            _log.info("relay aborted: joint %.2f° from its target (bound %.2f°)", math.degrees(abs(r - y)),
                         math.degrees(excursion_rad))
            break
        if abs(r - y) > div:
            result.reason = "divergence"
            break
        u = relay.update(r, y, t)
        if k >= n_warm:
            rec_t.append(t); rec_y.append(y); rec_u.append(u)
            early = n_check > 0 and (k - n_warm + 1) % n_check == 0
            if early and (k - n_warm + 1) % n_win != 0:
                ku, tu, a, c, peaks = analyse_oscillation(np.array(rec_t), np.array(rec_y), d,
                                                          math.radians(p.peak_hysteresis_deg), p.min_peaks,
                                                          p.peak_hysteresis_fraction)
                if ku is not None:
                    result = RelayResult(True, "ok", ku, tu, a, d, relay.bias, c, peaks)
                    attempts += 1
                    break
            if (k - n_warm + 1) % n_win == 0:
                attempts += 1
                ku, tu, a, c, peaks = analyse_oscillation(np.array(rec_t), np.array(rec_y), d,
                                                          math.radians(p.peak_hysteresis_deg), p.min_peaks,
                                                          p.peak_hysteresis_fraction)
                result.peaks = peaks
                if ku is not None:
                    result = RelayResult(True, "ok", ku, tu, a, d, relay.bias, c, peaks)
                    break
        plant.step(u)
        k += 1
        if progress is not None and k / n_total >= next_progress:
            progress(k / n_total)
            next_progress += 0.05
    plant.step(0.0)
    result.attempts = attempts
    result.bias = relay.bias
    result.t_s = np.array(rec_t)
    result.measured_rad = np.array(rec_y)
    result.effort = np.array(rec_u)
    if progress is not None:
        progress(1.0)
    if not result.ok:
        _log.info("relay tuning failed: %s after %d measurement windows (%d peaks)", result.reason,
                     attempts, len(result.peaks))
    return result
