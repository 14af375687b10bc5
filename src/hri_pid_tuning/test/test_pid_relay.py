"""Relay auto-tuning on plants with known ultimate gain and period."""
import dataclasses
import math

import pytest

from hri_pid_tuning.core.relay import RelayController, RelayParams, relay_tune
from hri_runtime.config.tree import load_robot_config
from hri_sim.pid_plants import LinearPlant

KU = 8.0
TU = 2 * math.pi / math.sqrt(3)


def third_order(**kw):
    return LinearPlant([1.0], [1.0, 3.0, 3.0, 1.0], dt_s=1e-3, **kw)


RELAY = RelayParams.from_config(load_robot_config("fr3")["pid_tuning"]["relay"])


def params(**kw):
    """The config's relay parameters with this test's plant-scale overrides (ideal plant: no
    hysteresis unless a test sets one)."""
    base = dict(amplitude=1.0, start_angle_deg=5.0, target_angle_deg=0.0, warmup_s=10.0, duration_s=25.0,
                divergence_deg=1000.0, joint_limit_margin_deg=0.0, hysteresis_deg=0.0)
    base.update(kw)
    return dataclasses.replace(RELAY, **base)


def test_third_order_ku_tu_within_5_percent():
    res = relay_tune(third_order(effort_max=10.0), params())
    assert res.ok and res.reason == "ok"
    assert len(res.peaks) >= 6
    assert res.ku == pytest.approx(KU, rel=0.05)
    assert res.tu_s == pytest.approx(TU, rel=0.05)


def test_relay_amplitude_scales_a_not_ku():
    r1 = relay_tune(third_order(effort_max=10.0), params(amplitude=1.0))
    r2 = relay_tune(third_order(effort_max=10.0), params(amplitude=3.0))
    assert r2.amplitude_rad == pytest.approx(3 * r1.amplitude_rad, rel=0.01)
    assert r2.ku == pytest.approx(r1.ku, rel=0.01)


def test_noisy_measurement_with_hysteresis_within_5_percent():
    res = relay_tune(third_order(effort_max=10.0, noise_std_rad=0.0005, seed=3), params(hysteresis_deg=0.1))
    assert res.ok
    assert res.ku == pytest.approx(KU, rel=0.05)
    assert res.tu_s == pytest.approx(TU, rel=0.05)


def test_noise_without_hysteresis_chatters_but_peaks_are_still_robust():
    # the peak detector must not report noise wiggles as peaks (thesis's false positives)
    res = relay_tune(third_order(effort_max=10.0, noise_std_rad=0.002, seed=1), params(hysteresis_deg=0.3))
    assert res.ok
    assert res.tu_s == pytest.approx(TU, rel=0.05)
    assert res.ku == pytest.approx(KU, rel=0.10)   # hysteresis lag biases Ku low by ~ε/a (documented)
    assert 6 <= len(res.peaks) < 20


def test_gravity_bias_compensation():
    load = 0.3
    without = relay_tune(third_order(effort_max=10.0, load=load), params(amplitude=0.5, bias_compensation=False, warmup_s=20))
    with_b = relay_tune(third_order(effort_max=10.0, load=load), params(amplitude=0.5, bias_compensation=True, warmup_s=20))
    assert with_b.bias == pytest.approx(-load, abs=0.01)
    assert abs(with_b.baseline_rad) < 0.01 < abs(without.baseline_rad)
    assert with_b.ku == pytest.approx(KU, rel=0.05)
    assert abs(without.ku / KU - 1) > 0.05


def test_abort_on_joint_limit():
    pl = third_order(effort_max=10.0, q_min_rad=-0.05, q_max_rad=1.0)
    res = relay_tune(pl, params(joint_limit_margin_deg=0.5))
    assert not res.ok and res.reason == "joint_limit"
    assert res.ku is None


def test_abort_on_divergence():
    # an unstable plant under relay: 1/(s-1) runs away
    pl = LinearPlant([1.0], [1.0, -1.0], dt_s=1e-3, effort_max=1.0)
    res = relay_tune(pl, params(start_angle_deg=70.0, divergence_deg=90.0))  # |y| > d: relay cannot hold it
    assert not res.ok and res.reason == "divergence"


def test_too_few_peaks_is_capped():
    # a slow plant: 6 peaks do not fit in 2 windows of 5 s → gives up after max_attempts
    pl = LinearPlant([1.0], [100.0, 30.0, 3.0, 0.1], dt_s=1e-2, effort_max=1.0)
    res = relay_tune(pl, params(warmup_s=1.0, duration_s=5.0, max_attempts=2))
    assert not res.ok and res.reason == "too_few_peaks" and res.attempts == 2


def test_relay_controller_hysteresis():
    rc = RelayController(d=2.0, hysteresis=0.1, bias_compensation=False)
    assert rc.update(0.0, -0.2, 0.0) == 2.0     # e = 0.2 > ε
    assert rc.update(0.0, 0.05, 0.1) == 2.0     # inside the band: hold
    assert rc.update(0.0, 0.2, 0.2) == -2.0
    assert rc.update(0.0, -0.05, 0.3) == -2.0
