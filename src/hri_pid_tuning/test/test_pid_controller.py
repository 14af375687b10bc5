"""Tests of the discrete PID (hri_core.pid)."""
import dataclasses
import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hri_core.pid import PID, PIDGains, PIDParams
from hri_runtime.config.tree import load_robot_config

BASE = PIDParams.from_config(load_robot_config("fr3")["pid_tuning"]["pid"])   # the config's PID


def params(**kw) -> PIDParams:
    """The config's PID parameters with this test's overrides."""
    return dataclasses.replace(BASE, **kw)


class FirstOrder:
    """tau dy/dt = -y + K u, exact ZOH discretisation."""

    def __init__(self, K=2.0, tau=0.5, y0=0.0):
        self.K, self.tau, self.y = K, tau, y0

    def step(self, u, h):
        a = math.exp(-h / self.tau)
        self.y = a * self.y + (1 - a) * self.K * u
        return self.y


def run_loop(pid, plant, r, T, h=1e-3, t0=0.0):
    ts, ys, us = [], [], []
    t = t0
    n = int(round(T / h))
    for _ in range(n):
        u = pid.update(r(t) if callable(r) else r, plant.y, t)
        ts.append(t); ys.append(plant.y); us.append(u)
        plant.step(u, h)
        t += h
    return np.array(ts), np.array(ys), np.array(us)


def test_standard_form_roundtrip():
    g = PIDGains(1000.0, 100.0, 500.0)  # thesis example configuration
    kp, ti, td = g.to_standard()
    assert ti == pytest.approx(10.0) and td == pytest.approx(0.5)
    assert PIDGains.from_standard(kp, ti, td) == g
    assert PIDGains(2.0).to_standard() == (2.0, math.inf, 0.0)
    assert PIDGains.from_standard(2.0, None, 0.0) == PIDGains(2.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        PIDGains(0.0, 1.0).to_standard()
    with pytest.raises(ValueError):
        PIDGains(float("nan"))


@settings(max_examples=50, deadline=None)
@given(kp=st.floats(1e-3, 1e4), ki=st.floats(0, 1e4), kd=st.floats(0, 1e4))
@example(kp=39.0, ki=9728.375, kd=0.0)      # Ki = Kp/(Kp/Ki) is off by one ulp: relative tolerance needed
def test_standard_form_roundtrip_property(kp, ki, kd):
    g = PIDGains(kp, ki, kd)
    g2 = PIDGains.from_standard(*g.to_standard())
    assert g2.kp == pytest.approx(kp) and g2.ki == pytest.approx(ki, rel=1e-9, abs=1e-12) and g2.kd == pytest.approx(kd)


def test_p_only_has_steady_state_error():
    K, kp = 2.0, 3.0
    pid = PID(PIDGains(kp), params())
    _, y, _ = run_loop(pid, FirstOrder(K=K), 1.0, T=5.0)
    assert y[-1] == pytest.approx(K * kp / (1 + K * kp), rel=1e-3)


def test_pi_pole_zero_cancellation_gives_first_order_closed_loop():
    # C = kp (1 + 1/(Ti s)), Ti = tau → L = K kp/(tau s) → closed loop 1/(tau/(K kp) s + 1)
    K, tau, kp = 2.0, 0.5, 1.5
    pid = PID(PIDGains.from_standard(kp, tau, 0.0), params())
    t, y, _ = run_loop(pid, FirstOrder(K=K, tau=tau), 1.0, T=3.0, h=1e-3)
    tcl = tau / (K * kp)
    expected = 1 - np.exp(-t / tcl)
    assert np.max(np.abs(y - expected)) < 0.01
    assert y[-1] == pytest.approx(1.0, abs=1e-3)


def test_measured_dt_irregular_sampling_integrates_exactly():
    pid = PID(PIDGains(0.0, 2.0, 0.0), params(dt_max_s=None))   # no gap cap: steps up to 0.59 s count in full
    times = [0.0, 0.1, 0.15, 0.4, 0.41, 1.0]
    for t in times:
        u = pid.update(1.0, 0.0, t)  # constant error 1
    # backward rectangle: I = ki * sum(h) * e = 2 * 1.0
    assert u == pytest.approx(2.0)


def test_bad_input_rejected_counted_and_output_held():
    pid = PID(PIDGains(1.0, 1.0), params(dt_max_s=None))   # no gap cap: the 1 s step counts in full
    u0 = pid.update(1.0, 0.0, 0.0)
    assert pid.update(1.0, 0.0, 0.0) == u0
    assert pid.update(1.0, 0.0, -1.0) == u0
    assert pid.update(float("nan"), 0.0, 1.0) == u0
    assert pid.update(1.0, 0.0, float("inf")) == u0
    assert pid.rejected["non_increasing_time"] == 2
    assert pid.rejected["non_finite_input"] == 1
    assert pid.rejected["non_finite_time"] == 1
    # a good sample afterwards continues normally
    assert pid.update(1.0, 0.0, 1.0) == pytest.approx(1.0 + 1.0)


def test_derivative_on_measurement_has_no_setpoint_kick():
    pid = PID(PIDGains(1.0, 0.0, 5.0), params(derivative_filter_n=None))
    pid.update(0.0, 0.0, 0.0)
    u = pid.update(10.0, 0.0, 0.001)   # setpoint jumps, measurement constant
    assert u == pytest.approx(10.0)    # P only, no derivative spike
    u = pid.update(10.0, 0.001, 0.002)  # measurement moves 1 mm in 1 ms → d = 1/s
    assert pid.terms.d == pytest.approx(-5.0)


def test_derivative_filter_time_constant():
    # ramp y = t: filtered derivative approaches 1 with time constant Tf
    tf = 0.05
    pid = PID(PIDGains(0.0, 0.0, 1.0), params(derivative_filter_tau_s=tf))
    h = 1e-3
    for k in range(int(0.05 / h) + 1):
        pid.update(0.0, k * h, k * h)
    assert -pid.terms.d == pytest.approx(1 - math.exp(-1), abs=0.02)
    for k in range(51, 500):
        pid.update(0.0, k * h, k * h)
    assert -pid.terms.d == pytest.approx(1.0, abs=1e-3)
    # N form: Tf = Td/N = (kd/kp)/N
    pid = PID(PIDGains(2.0, 0.0, 1.0), params(derivative_filter_n=10.0))
    assert pid._tf(pid.gains) == pytest.approx(0.05)


def test_output_limits():
    pid = PID(PIDGains(100.0), params(output_min=-2.0, output_max=3.0))
    assert pid.update(1.0, 0.0, 0.0) == 3.0
    assert pid.terms.saturated and pid.terms.unsaturated == pytest.approx(100.0)
    assert pid.update(-1.0, 0.0, 0.1) == -2.0


def _windup_scenario(mode):
    """Large step with a saturated actuator, then the setpoint comes back: measure overshoot."""
    pid = PID(PIDGains(2.0, 8.0, 0.0), params(output_min=-1.0, output_max=1.0, anti_windup=mode))
    plant = FirstOrder(K=2.0, tau=0.5)
    r = lambda t: 1.5 if t < 3.0 else 0.5   # 1.5 needs u=0.75 → reachable, but the transient saturates
    t, y, u = run_loop(pid, plant, r, T=6.0, h=1e-3)
    over_first = np.max(y[t < 3.0]) - 1.5
    return over_first, pid, y, t


def test_windup_without_anti_windup_overshoots_more():
    o_none, _, _, _ = _windup_scenario("none")
    o_clamp, _, _, _ = _windup_scenario("clamp")
    o_back, _, _, _ = _windup_scenario("back_calculation")
    assert o_none > 0.1
    assert o_clamp < 0.5 * o_none
    assert o_back < 0.5 * o_none
    for mode in ("none", "clamp", "back_calculation"):
        _, _, y, t = _windup_scenario(mode)
        assert y[-1] == pytest.approx(0.5, abs=0.01)   # all still converge


def test_integral_stays_bounded_against_an_obstacle():
    # measurement blocked (obstacle, thesis): integral must not grow without bound
    for mode, bounded in (("clamp", True), ("back_calculation", True), ("none", False)):
        pid = PID(PIDGains(1.0, 5.0), params(output_min=-1.0, output_max=1.0, anti_windup=mode))
        for k in range(10000):
            pid.update(1.0, 0.0, k * 1e-3)
        assert (abs(pid.integral) <= 1.0 + 1e-9) == bounded, mode


def test_bumpless_gain_change():
    pid = PID(PIDGains(1.0, 2.0, 0.1), params())
    plant = FirstOrder()
    h = 1e-3
    t = 0.0
    us = []
    for k in range(3000):
        if k == 1000:
            pid.set_gains(PIDGains(4.0, 3.0, 0.3))
        u = pid.update(1.0 if t < 0.5 else 0.3, plant.y, t)
        us.append(u)
        plant.step(u, h)
        t += h
    du = np.abs(np.diff(us))
    # around the switch the output moves like in the neighbouring samples, no jump
    assert du[999] < 5 * max(du[990:999].max(), du[1001:1010].max()) + 1e-6
    # the same change without bumpless transfer jumps by (kp_new-kp_old)*e
    pid2 = PID(PIDGains(1.0, 2.0, 0.0), params())
    pid2.update(1.0, 0.0, 0.0)
    u_before = pid2.update(1.0, 0.0, 0.001)
    pid2.set_gains(PIDGains(4.0, 2.0, 0.0), bumpless=False)
    assert pid2.update(1.0, 0.0, 0.002) - u_before == pytest.approx(3.0, abs=0.01)


def test_bumpless_with_zero_ki_counts_jump():
    pid = PID(PIDGains(1.0), params())
    pid.update(1.0, 0.0, 0.0)
    pid.set_gains(PIDGains(2.0))
    assert pid.gain_jumps == 1
    assert pid.update(1.0, 0.0, 0.001) == pytest.approx(2.0)


def test_reset_and_from_config():
    p = PIDParams.from_config({"output_min": -5, "output_max": 5, "anti_windup": "clamp",
                               "tracking_time_s": None, "derivative_filter_tau_s": None,
                               "derivative_filter_n": 8.0, "dt_max_s": 0.2})
    assert p.anti_windup == "clamp" and p.dt_max_s == 0.2
    pid = PID(PIDGains(1.0, 1.0), p)
    for k in range(10):
        pid.update(1.0, 0.0, 0.1 * k)
    assert pid.integral > 0
    pid.reset()
    assert pid.integral == 0 and pid.update(1.0, 0.0, 5.0) == pytest.approx(1.0)
    pid.reset(integral=0.5)
    assert pid.update(0.0, 0.0, 6.0) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        params(anti_windup="bogus")
    with pytest.raises(ValueError):
        params(output_min=1, output_max=0)


def test_gap_caps_integration_step():
    pid = PID(PIDGains(0.0, 1.0), params(dt_max_s=0.1))
    pid.update(1.0, 0.0, 0.0)
    assert pid.update(1.0, 0.0, 10.0) == pytest.approx(0.1)
