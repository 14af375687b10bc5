"""Performance evaluation of recorded set-point / process-value samples (Webel's thesis §3.3).

Inputs are per-joint sample arrays ``t_s`` (s), ``desired`` and ``measured`` in **degrees** (the
thesis's unit for every metric); ``e = desired − measured``.

Thesis metrics (JSON names as in the thesis, nullable where it says so):

* ``AvgAbsoluteError`` = Σ|e|/N, ``AvgSignedError`` = Σe/N, ``MaxAbsoluteError`` = max|e|.
* Per *significant set-point change* (|Δr| > ε and the new r held ≥ 2 samples; the segment runs
  until r changes again):

  - overshoot: first sign flip of e after the change (none → overdamped → null); max |e| from
    there to the segment end. Skipped (null) when |Δr| < ``overshoot_min_step_deg`` or when
    |e| at the segment start ≤ ``overshoot_start_tolerance_deg``. ``MaxOvershoot`` = max.
  - settling within b ∈ {10, 5, 2}°: scan back from the last sample to the last one with
    |e| > b; time of that sample minus the time of the first sample of the segment; null if
    |Δr| < b or the last sample is itself outside the band.
  - x% response (10, 50): first sample with |e| ≤ (1 − x) |Δr|; needs |Δr| ≥
    ``response_min_step_deg``. Complete response: first sign flip of e.
  - ``Avg...`` = mean over the segments where it is not null (null if none).

Beyond the thesis (per segment, averaged or summed per joint):

* IAE = ∫|e|dt, ISE = ∫e²dt, ITAE = ∫(t − t₀)|e|dt (trapezoid, t₀ = segment start);
* rise time 10–90 % of the step (first samples reaching the levels, as ``control.step_info``);
* peak and peak time, decay ratio = (2nd same-side excursion beyond r)/(1st), oscillation
  count = number of crossings of r whose excursion exceeds ``oscillation_min_amplitude_deg``;
* robust settling time: the thesis's value, but null unless the response has stayed in the band
  for ``settling_confirm_s`` at the end of the segment **and** the final trend
  |e_end| + |ė_end|·``settling_confirm_s`` stays inside the band. A large oscillation whose last
  samples happen to fall inside the band (the thesis's known failure) is therefore not
  "settled".

:func:`step_response_info` computes rise/settling/overshoot/peak on one step response with the
same conventions as ``control.step_info`` so the two can be compared sample for sample.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Iterable, Mapping, Sequence

import numpy as np


from .peaks import find_peaks_hysteresis
from hri_pid_tuning.parameters_gen import PidTuningEvaluationParams


#: thresholds of the evaluation (``pid_tuning.evaluation``, declared in parameters.yaml)
EvaluationParams = PidTuningEvaluationParams


def _trapz(y: np.ndarray, t: np.ndarray) -> float:
    if len(t) < 2:
        return 0.0
    return float(np.sum(0.5 * (y[1:] + y[:-1]) * np.diff(t)))


# ------------------------------------------------------------------------------------------------
# single step response (control.step_info conventions)
# ------------------------------------------------------------------------------------------------
def step_response_info(t_s: Sequence[float], y: Sequence[float], y_final: float | None = None,
                       y0: float = 0.0, settling_threshold: float = 0.02,
                       rise_limits: tuple[float, float] = (0.1, 0.9)) -> dict[str, float]:
    """Rise time, settling time, overshoot (%), peak, peak time of a step response from ``y0``
    to ``y_final`` (default: the last sample), with ``control.step_info``'s conventions:
    rise time between the first samples reaching 10 % and 90 % of the step; settling time = time
    of the first sample after the last one with |y − y_f| ≥ threshold·|y_f − y0|, measured from
    t[0]; overshoot = 100 (max excursion beyond y_f)/|Δ|; peak = max |y − y0| (+ y0)."""
    t = np.asarray(t_s, dtype=float)
    yy = np.asarray(y, dtype=float) - y0
    yf = (yy[-1] if y_final is None else y_final - y0)
    nan = float("nan")
    out = {"RiseTime": nan, "SettlingTime": nan, "Overshoot": nan, "Peak": nan, "PeakTime": nan,
           "SteadyStateValue": yf + y0}
    if yf == 0 or not np.isfinite(yf):
        return out
    sgn = np.sign(yf)
    lo = np.nonzero(sgn * (yy - rise_limits[0] * yf) >= 0)[0]
    hi = np.nonzero(sgn * (yy - rise_limits[1] * yf) >= 0)[0]
    if len(lo) and len(hi):
        out["RiseTime"] = float(t[hi[0]] - t[lo[0]])
    outside = np.nonzero(np.abs(yy / yf - 1) >= settling_threshold)[0]
    settled = 0 if outside.size == 0 else outside[-1] + 1
    if settled < len(t):
        out["SettlingTime"] = float(t[settled])
    dy = (sgn * yy).max() - abs(yf)
    out["Overshoot"] = float(abs(100.0 * dy / yf)) if dy > 0 else 0.0
    k = int(np.abs(yy).argmax())
    out["Peak"] = float(abs(yy[k]))
    out["PeakTime"] = float(t[k])
    return out


# ------------------------------------------------------------------------------------------------
# set-point change detection
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Segment:
    start: int       # first sample with the new set-point
    end: int         # one past the last sample with it
    old_sp: float
    new_sp: float

    @property
    def step(self) -> float:
        return self.new_sp - self.old_sp


def significant_setpoint_changes(desired: Sequence[float], eps: float = 1e-6,
                                 hold_min_samples: int = 2) -> list[Segment]:
    """Segments of constant set-point (within ``eps``) of ≥ ``hold_min_samples`` samples that
    start with a change > ``eps`` (thesis)."""
    r = np.asarray(desired, dtype=float)
    n = len(r)
    if n < 2:
        return []
    change = np.abs(np.diff(r)) > eps
    starts = np.concatenate(([0], np.nonzero(change)[0] + 1))
    ends = np.concatenate((starts[1:], [n]))
    segs = []
    for s, e in zip(starts, ends):
        if s == 0 or e - s < hold_min_samples:
            continue
        segs.append(Segment(int(s), int(e), float(r[s - 1]), float(r[s])))
    return segs


# ------------------------------------------------------------------------------------------------
# per-segment metrics
# ------------------------------------------------------------------------------------------------
@dataclass
class SegmentMetrics:
    t_start_s: float
    step_deg: float
    overshoot_deg: float | None = None
    settling_s: dict[float, float | None] = field(default_factory=dict)
    robust_settling_s: dict[float, float | None] = field(default_factory=dict)
    response_s: dict[float, float | None] = field(default_factory=dict)
    complete_response_s: float | None = None
    iae: float = 0.0
    ise: float = 0.0
    itae: float = 0.0
    rise_time_s: float | None = None
    peak_deg: float | None = None        # max excursion of PV from the old SP
    peak_time_s: float | None = None
    overshoot_pct: float | None = None
    decay_ratio: float | None = None
    oscillation_count: int = 0
    steady_state_error_deg: float | None = None


def _first_sign_flip(e: np.ndarray) -> int | None:
    s0 = np.sign(e[0])
    if s0 == 0:
        return None
    flips = np.nonzero(np.sign(e) == -s0)[0]
    return int(flips[0]) if len(flips) else None


def segment_metrics(t: np.ndarray, r: np.ndarray, y: np.ndarray, seg: Segment,
                    p: EvaluationParams) -> SegmentMetrics:
    ts = t[seg.start:seg.end]
    ys = y[seg.start:seg.end]
    es = r[seg.start:seg.end] - ys
    t0 = ts[0]
    step = seg.step
    a = abs(step)
    m = SegmentMetrics(t_start_s=float(t0), step_deg=float(step))
    flip = _first_sign_flip(es)
    # --- thesis: overshoot --------------------------------------------------------------------
    if a >= p.overshoot_min_step_deg and abs(es[0]) > p.overshoot_start_tolerance_deg and flip is not None:
        m.overshoot_deg = float(np.max(np.abs(es[flip:])))
    # --- thesis: settling + robust settling ----------------------------------------------------
    dur = ts[-1] - t0
    for b in p.settling_bands_deg:
        if a < b:
            m.settling_s[b] = None
            m.robust_settling_s[b] = None
            continue
        out = np.nonzero(np.abs(es) > b)[0]
        if len(out) == 0:
            val = 0.0
            last_out = None
        elif out[-1] == len(es) - 1:
            val = None
            last_out = len(es) - 1
        else:
            last_out = int(out[-1])
            val = float(ts[last_out] - t0)
        m.settling_s[b] = val
        robust = val
        if val is not None:
            t_in = ts[-1] - (ts[last_out] if last_out is not None else t0)
            if len(ts) >= 2:
                # final trend over the last 5 % of the confirmation window (≥ 1 sample)
                j = min(len(ts) - 2, int(np.searchsorted(ts, ts[-1] - 0.05 * p.settling_confirm_s)))
                de = (es[-1] - es[j]) / max(ts[-1] - ts[j], 1e-12)
            else:
                de = 0.0
            if t_in < min(p.settling_confirm_s, dur) or abs(es[-1]) + abs(de) * p.settling_confirm_s > b:
                robust = None
        m.robust_settling_s[b] = robust
    # --- thesis: response times -----------------------------------------------------------------
    for frac in p.response_fractions:
        if a < p.response_min_step_deg:
            m.response_s[frac] = None
            continue
        hit = np.nonzero(np.abs(es) <= (1.0 - frac) * a)[0]
        m.response_s[frac] = float(ts[hit[0]] - t0) if len(hit) else None
    m.complete_response_s = float(ts[flip] - t0) if flip is not None else None
    # --- beyond the thesis ------------------------------------------------------------------------
    ae = np.abs(es)
    m.iae = _trapz(ae, ts)
    m.ise = _trapz(es * es, ts)
    m.itae = _trapz((ts - t0) * ae, ts)
    if a > p.setpoint_change_eps_deg:
        info = step_response_info(ts - t0, ys, y_final=seg.new_sp, y0=seg.old_sp, rise_limits=p.rise_limits)
        m.rise_time_s = None if math.isnan(info["RiseTime"]) else info["RiseTime"]
        m.peak_deg = info["Peak"]
        m.peak_time_s = info["PeakTime"]
        m.overshoot_pct = info["Overshoot"]
        # excursions beyond the set-point, signed so that overshoot is positive
        x = -np.sign(step) * es      # = sign(step) (y − r)
        pk = find_peaks_hysteresis(ts, x, max(p.oscillation_min_amplitude_deg, 1e-9))
        over = [q.value for q in pk if q.kind == +1 and q.value > p.oscillation_min_amplitude_deg]
        if len(over) >= 2 and over[0] > 0:
            m.decay_ratio = float(over[1] / over[0])
        # oscillations: excursions beyond r (either side) larger than the amplitude threshold
        m.oscillation_count = sum(1 for q in pk if abs(q.value) > p.oscillation_min_amplitude_deg
                                  and ((q.kind == 1 and q.value > 0) or (q.kind == -1 and q.value < 0)))
        win = ts >= ts[-1] - p.steady_state_window_s
        m.steady_state_error_deg = float(np.mean(es[win]))
    return m


# ------------------------------------------------------------------------------------------------
# per-joint evaluation and aggregation
# ------------------------------------------------------------------------------------------------
THESIS_JSON_NAMES = {
    "avg_absolute_error": "AvgAbsoluteError",
    "avg_signed_error": "AvgSignedError",
    "max_absolute_error": "MaxAbsoluteError",
    "max_overshoot": "MaxOvershoot",
    "avg_10_percent_response_time": "Avg10PercentResponseTime",
    "avg_50_percent_response_time": "Avg50PercentResponseTime",
    "avg_complete_response_time": "AvgCompleteResponseTime",
}


@dataclass
class Evaluation:
    """Evaluation of one joint (or an aggregate). Degrees and seconds; None = not available."""

    avg_absolute_error: float | None = None
    avg_signed_error: float | None = None
    max_absolute_error: float | None = None
    max_overshoot: float | None = None
    avg_settling_time: dict[float, float | None] = field(default_factory=dict)
    avg_10_percent_response_time: float | None = None
    avg_50_percent_response_time: float | None = None
    avg_complete_response_time: float | None = None
    # beyond the thesis
    avg_robust_settling_time: dict[float, float | None] = field(default_factory=dict)
    iae: float | None = None
    ise: float | None = None
    itae: float | None = None
    avg_rise_time: float | None = None
    max_peak: float | None = None
    avg_peak_time: float | None = None
    avg_overshoot_percent: float | None = None
    avg_decay_ratio: float | None = None
    oscillation_count: int = 0
    avg_steady_state_error: float | None = None
    max_step_deg: float | None = None
    setpoint_changes: int = 0
    samples: int = 0
    duration_s: float = 0.0

    def settling(self, band_deg: float) -> float | None:
        return self.avg_settling_time.get(float(band_deg))

    def to_json(self) -> dict[str, Any]:
        """Thesis names for the thesis metrics (``AvgSettlingTime5Degrees`` ...), numbers as
        numbers, null where not available."""
        out: dict[str, Any] = {}
        for k, v in asdict(self).items():
            if k == "avg_settling_time":
                for b, s in self.avg_settling_time.items():
                    out[f"AvgSettlingTime{_band_name(b)}Degrees"] = s
            elif k == "avg_robust_settling_time":
                for b, s in self.avg_robust_settling_time.items():
                    out[f"AvgRobustSettlingTime{_band_name(b)}Degrees"] = s
            else:
                out[THESIS_JSON_NAMES.get(k, _camel(k))] = v
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Evaluation":
        inv = {v: k for k, v in THESIS_JSON_NAMES.items()}
        ev = cls()
        for key, v in d.items():
            if key.startswith("AvgSettlingTime") and key.endswith("Degrees"):
                ev.avg_settling_time[float(key[len("AvgSettlingTime"):-len("Degrees")])] = v
            elif key.startswith("AvgRobustSettlingTime") and key.endswith("Degrees"):
                ev.avg_robust_settling_time[float(key[len("AvgRobustSettlingTime"):-len("Degrees")])] = v
            else:
                name = inv.get(key, _snake(key))
                if hasattr(ev, name):
                    setattr(ev, name, v)
        return ev


def _band_name(b: float) -> str:
    return str(int(b)) if float(b).is_integer() else str(b)


def _camel(s: str) -> str:
    return "".join(w.capitalize() if not w.isdigit() else w for w in s.split("_"))


def _snake(s: str) -> str:
    out = []
    for i, c in enumerate(s):
        if c.isupper() and i:
            out.append("_")
        out.append(c.lower())
    return "".join(out)


def _mean(vals: Iterable[float | None]) -> float | None:
    v = [x for x in vals if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return float(np.mean(v)) if v else None


def _max(vals: Iterable[float | None]) -> float | None:
    v = [x for x in vals if x is not None]
    return float(max(v)) if v else None


def evaluate_joint(t_s: Sequence[float], desired_deg: Sequence[float], measured_deg: Sequence[float],
                   params: EvaluationParams) -> Evaluation:
    """Evaluate one joint's samples (degrees) with ``params`` (``EvaluationParams.from_config``).
    See the module docstring for every metric."""
    p = params
    t = np.asarray(t_s, dtype=float)
    r = np.asarray(desired_deg, dtype=float)
    y = np.asarray(measured_deg, dtype=float)
    if not (len(t) == len(r) == len(y)):
        raise ValueError("t_s, desired_deg and measured_deg must have the same length")
    ev = Evaluation(samples=len(t))
    if len(t) == 0:
        return ev
    e = r - y
    ev.avg_absolute_error = float(np.mean(np.abs(e)))
    ev.avg_signed_error = float(np.mean(e))
    ev.max_absolute_error = float(np.max(np.abs(e)))
    ev.duration_s = float(t[-1] - t[0])
    ev.iae = _trapz(np.abs(e), t)
    ev.ise = _trapz(e * e, t)
    segs = [segment_metrics(t, r, y, s, p) for s in significant_setpoint_changes(r, p.setpoint_change_eps_deg,
                                                                              p.setpoint_hold_min_samples)]
    ev.setpoint_changes = len(segs)
    ev.max_step_deg = _max(abs(s.step_deg) for s in segs)
    ev.max_overshoot = _max(s.overshoot_deg for s in segs)
    for b in p.settling_bands_deg:
        ev.avg_settling_time[float(b)] = _mean(s.settling_s.get(b) for s in segs)
        # robust: null as soon as one eligible step (|Δr| ≥ band) did not settle
        elig = [s.robust_settling_s.get(b) for s in segs if abs(s.step_deg) >= b]
        ev.avg_robust_settling_time[float(b)] = None if (not elig or any(v is None for v in elig)) else _mean(elig)
    fr = p.response_fractions
    ev.avg_10_percent_response_time = _mean(s.response_s.get(0.1) for s in segs) if 0.1 in fr else None
    ev.avg_50_percent_response_time = _mean(s.response_s.get(0.5) for s in segs) if 0.5 in fr else None
    ev.avg_complete_response_time = _mean(s.complete_response_s for s in segs)
    ev.itae = float(sum(s.itae for s in segs)) if segs else None
    ev.avg_rise_time = _mean(s.rise_time_s for s in segs)
    ev.max_peak = _max(s.peak_deg for s in segs)
    ev.avg_peak_time = _mean(s.peak_time_s for s in segs)
    ev.avg_overshoot_percent = _mean(s.overshoot_pct for s in segs)
    ev.avg_decay_ratio = _mean(s.decay_ratio for s in segs)
    ev.oscillation_count = int(sum(s.oscillation_count for s in segs))
    ev.avg_steady_state_error = _mean(s.steady_state_error_deg for s in segs)
    return ev


def _has_eligible(e: Evaluation, band: float) -> bool:
    """True when ``e`` saw a step at least ``band`` large (its thesis settling is then defined
    or the step never settled)."""
    return e.max_step_deg is not None and e.max_step_deg >= band


def aggregate(evals: Sequence[Evaluation]) -> Evaluation:
    """Combine evaluations (joints of one motion, or motions of one run; thesis): every
    average and IAE/ISE/ITAE is the mean over the inputs where it is available, every max the
    max, counts are summed."""
    out = Evaluation()
    if not evals:
        return out
    for f in fields(Evaluation):
        name = f.name
        vals = [getattr(e, name) for e in evals]
        if name == "avg_settling_time":
            bands = sorted({b for v in vals for b in v}, reverse=True)
            setattr(out, name, {b: _mean(v.get(b) for v in vals) for b in bands})
        elif name == "avg_robust_settling_time":
            # null when any input that had eligible steps did not settle
            bands = sorted({b for v in vals for b in v}, reverse=True)
            res = {}
            for b in bands:
                vs = [v.get(b) for v, e in zip(vals, evals) if _has_eligible(e, b)]
                res[b] = None if (not vs or any(x is None for x in vs)) else _mean(vs)
            setattr(out, name, res)
        elif name.startswith("max_"):
            setattr(out, name, _max(vals))
        elif name in ("oscillation_count", "setpoint_changes", "samples"):
            setattr(out, name, int(sum(vals)))
        elif name == "duration_s":
            setattr(out, name, float(sum(vals)))
        else:
            setattr(out, name, _mean(vals))
    return out
