"""Metrics against analytic responses and python-control's step_info."""
import dataclasses
import math

import control
import numpy as np
import pytest
from scipy.optimize import brentq

from hri_pid_tuning.core.metrics import (EvaluationParams, Evaluation, aggregate, evaluate_joint,
                                         significant_setpoint_changes, step_response_info)
from hri_pid_tuning.core.peaks import find_peaks_hysteresis, find_peaks_thesis
from hri_runtime.config.tree import load_robot_config

H = 1e-3
EVAL = EvaluationParams.from_config(load_robot_config("fr3")["pid_tuning"]["evaluation"])


def second_order(t, zeta, wn):
    """Unit step response of wn²/(s² + 2ζwn s + wn²), ζ < 1."""
    wd = wn * math.sqrt(1 - zeta ** 2)
    phi = math.acos(zeta)
    return 1 - np.exp(-zeta * wn * t) / math.sqrt(1 - zeta ** 2) * np.sin(wd * t + phi)


def step_record(y_unit, step_deg=45.0, t_hold=1.0, T=10.0, y0=0.0):
    t = np.arange(0, T, H)
    r = np.where(t < t_hold, y0, y0 + step_deg)
    y = np.where(t < t_hold, y0, y0 + step_deg * y_unit(np.maximum(t - t_hold, 0.0)))
    return t, r, y


@pytest.mark.parametrize("zeta,wn", [(0.2, 3.0), (0.4, 2.0), (0.6, 5.0)])
def test_second_order_against_analytic(zeta, wn):
    step = 45.0
    t, r, y = step_record(lambda s: second_order(s, zeta, wn), step)
    ev = evaluate_joint(t, r, y, EVAL)
    wd = wn * math.sqrt(1 - zeta ** 2)
    mp = math.exp(-math.pi * zeta / math.sqrt(1 - zeta ** 2))
    assert ev.setpoint_changes == 1
    assert ev.max_overshoot == pytest.approx(step * mp, rel=1e-3)
    assert ev.avg_overshoot_percent == pytest.approx(100 * mp, rel=1e-3)
    assert ev.avg_peak_time == pytest.approx(math.pi / wd, abs=2 * H)
    # complete response = first crossing of the set-point
    assert ev.avg_complete_response_time == pytest.approx((math.pi - math.acos(zeta)) / wd, abs=2 * H)
    t50 = brentq(lambda s: second_order(np.array([s]), zeta, wn)[0] - 0.5, 1e-6, math.pi / wd)
    t10 = brentq(lambda s: second_order(np.array([s]), zeta, wn)[0] - 0.1, 1e-6, math.pi / wd)
    assert ev.avg_50_percent_response_time == pytest.approx(t50, abs=2 * H)
    assert ev.avg_10_percent_response_time == pytest.approx(t10, abs=2 * H)
    t90 = brentq(lambda s: second_order(np.array([s]), zeta, wn)[0] - 0.9, 1e-6, math.pi / wd)
    assert ev.avg_rise_time == pytest.approx(t90 - t10, abs=2 * H)
    # decay ratio between successive overshoots: exp(-2πζ/√(1-ζ²))
    if mp * step > 0.5 / math.exp(-2 * math.pi * zeta / math.sqrt(1 - zeta ** 2)):
        assert ev.avg_decay_ratio == pytest.approx(mp ** 2, rel=0.02)
    # settling within the envelope bound: t_s ≤ ln(step/(b·sqrt(1-ζ²)))/(ζ wn)
    for b in (10.0, 5.0, 2.0):
        bound = math.log(step / (b * math.sqrt(1 - zeta ** 2))) / (zeta * wn)
        assert 0 < ev.settling(b) <= bound + H
        assert ev.avg_robust_settling_time[b] == ev.settling(b)
    env = step * math.exp(-zeta * wn * (10.0 - 1.0 - 0.5)) / math.sqrt(1 - zeta ** 2)
    assert abs(ev.avg_steady_state_error) <= env


@pytest.mark.parametrize("zeta,wn", [(0.25, 2.0), (0.5, 4.0), (0.9, 1.5), (1.5, 3.0)])
def test_against_control_step_info(zeta, wn):
    sys = control.tf([wn ** 2], [1, 2 * zeta * wn, wn ** 2])
    t = np.arange(0, 12, H)
    resp = control.step_response(sys, T=t)
    yu = np.squeeze(resp.outputs)
    step = 45.0
    info = control.step_info(yu * step, T=t, yfinal=step, SettlingTimeThreshold=0.02)
    mine = step_response_info(t, yu * step, y_final=step)
    for key in ("RiseTime", "SettlingTime", "Overshoot", "Peak", "PeakTime"):
        assert mine[key] == pytest.approx(info[key], rel=1e-9, abs=1e-12), key
    # the same samples through the thesis evaluation: t_hold = 0 samples after the step
    r = np.concatenate(([0.0], np.full(len(t), step)))
    y = np.concatenate(([0.0], yu * step))
    tt = np.concatenate(([-H], t))
    ev = evaluate_joint(tt, r, y, dataclasses.replace(EVAL, settling_bands_deg=(0.02 * step,)))
    assert ev.avg_rise_time == pytest.approx(info["RiseTime"], abs=1e-12)
    assert ev.avg_peak_time == pytest.approx(info["PeakTime"], abs=1e-12)
    assert ev.avg_overshoot_percent == pytest.approx(info["Overshoot"], abs=1e-9)
    # thesis settling = time of the last sample outside the band; step_info = the next sample
    assert ev.settling(0.02 * step) == pytest.approx(info["SettlingTime"] - H, abs=1e-9)
    if zeta >= 1:
        assert ev.max_overshoot is None          # overdamped: thesis null
        assert ev.avg_complete_response_time is None


def test_first_order_integral_criteria():
    tau, A = 0.3, 20.0
    t, r, y = step_record(lambda s: 1 - np.exp(-s / tau), A, T=6.0)
    ev = evaluate_joint(t, r, y, EVAL)
    # the sampled step edge (one sample interval of a linear ramp of e) adds A·h/2 resp. A²·h/2
    assert ev.iae == pytest.approx(A * tau + A * H / 2, rel=1e-4)
    assert ev.ise == pytest.approx(A ** 2 * tau / 2 + A ** 2 * H / 2, rel=1e-4)
    assert ev.itae == pytest.approx(A * tau ** 2, rel=1e-2)
    assert ev.max_overshoot is None and ev.oscillation_count == 0
    assert ev.avg_decay_ratio is None
    assert ev.max_absolute_error == pytest.approx(A)


def test_null_rules_for_small_steps():
    t, r, y = step_record(lambda s: second_order(s, 0.3, 3.0), step_deg=7.0)
    ev = evaluate_joint(t, r, y, EVAL)
    assert ev.settling(10.0) is None                     # step < band
    assert ev.settling(5.0) is not None and ev.settling(2.0) is not None
    assert ev.avg_50_percent_response_time is None        # step < 10°
    assert ev.avg_10_percent_response_time is None
    assert ev.max_overshoot is None                       # step < 10°
    j = ev.to_json()
    assert j["AvgSettlingTime10Degrees"] is None and j["MaxOvershoot"] is None
    assert isinstance(j["AvgAbsoluteError"], float)


def test_robust_settling_rejects_oscillation_ending_inside_band():
    # undamped oscillation of ±20° around the new set-point, ending at a zero crossing
    step = 45.0
    t = np.arange(0, 4.0 + H / 2, H)
    r = np.where(t < 1.0, 0.0, step)
    w = 2 * math.pi / 1.0
    y = np.where(t < 1.0, 0.0, step + 20 * np.sin(w * (t - 1.0)))
    ev = evaluate_joint(t, r, y, EVAL)
    assert ev.settling(10.0) is not None     # thesis's algorithm: "settled" (known bug)
    assert ev.avg_robust_settling_time[10.0] is None
    assert ev.oscillation_count >= 5


def test_significant_setpoint_changes():
    r = [0, 0, 1, 1, 1, 2, 3, 3, 3, 3.0000000001]
    segs = significant_setpoint_changes(r, eps=1e-6, hold_min_samples=2)
    assert [(s.start, s.end, s.step) for s in segs] == [(2, 5, 1.0), (6, 10, 1.0)]
    # mocap-like: a new set-point every sample → no significant change
    assert significant_setpoint_changes(np.linspace(0, 1, 50)) == []


def test_aggregation_and_json_roundtrip():
    t, r, y = step_record(lambda s: second_order(s, 0.3, 3.0), 45.0)
    a = evaluate_joint(t, r, y, EVAL)
    t, r, y = step_record(lambda s: 1 - np.exp(-s / 0.2), 45.0)
    b = evaluate_joint(t, r, y, EVAL)
    agg = aggregate([a, b])
    assert agg.max_overshoot == a.max_overshoot          # b is overdamped: null ignored
    assert agg.avg_absolute_error == pytest.approx((a.avg_absolute_error + b.avg_absolute_error) / 2)
    assert agg.avg_complete_response_time == a.avg_complete_response_time
    assert agg.setpoint_changes == 2 and agg.samples == a.samples + b.samples
    j = agg.to_json()
    for k in ("AvgAbsoluteError", "AvgSignedError", "MaxAbsoluteError", "MaxOvershoot",
              "AvgSettlingTime10Degrees", "AvgSettlingTime5Degrees", "AvgSettlingTime2Degrees",
              "Avg10PercentResponseTime", "Avg50PercentResponseTime", "AvgCompleteResponseTime"):
        assert k in j
    back = Evaluation.from_json(j)
    assert back == agg


def test_peak_detectors():
    t = np.arange(0, 10, H)
    x = 10 * np.sin(2 * math.pi * t / 2.0)      # period 2 s → 5 maxima, 5 minima
    rng = np.random.default_rng(0)
    noisy = x + rng.normal(0, 0.3, len(t))
    pk = find_peaks_hysteresis(t, noisy, hysteresis=2.0)
    assert len(pk) in (9, 10)
    assert all(a.kind != b.kind for a, b in zip(pk, pk[1:]))
    maxima = [p.t_s for p in pk if p.kind == 1]
    assert np.mean(np.diff(maxima)) == pytest.approx(2.0, rel=0.02)
    # three-point differences on the noisy signal: many false peaks (the thesis's problem)
    d = np.diff(noisy)
    assert np.sum((d[:-1] > 0) & (d[1:] < 0)) > 100
    pk_t = find_peaks_thesis(t, x, decimation=10, half_width=2, duplicate_threshold=2.0)
    assert len([p for p in pk_t if p.kind == 1]) == 5
