"""hri_core.safety: limits from the config tree, clamp-and-flag semantics, rejection, fuzz."""
from __future__ import annotations

import numpy as np
import pytest

from hri_core.safety import FLAGS, SafetyChecker, SafetyLimits
from hri_runtime.config.tree import load_robot_config
from hri_core.safety import arm_limits

DT = 1e-3


@pytest.fixture(scope="module")
def limits():
    return SafetyLimits(**arm_limits(load_robot_config("fr3")).as_kwargs())


@pytest.fixture
def checker(limits):
    c = SafetyChecker(limits)
    c.reset(q=home(limits), qd=np.zeros(7), tau=np.zeros(7), ee_pos=np.array([0.5, 0.0, 0.5]))
    return c


def home(L):
    return 0.5 * (L.q_min + L.q_max)


def test_limits_come_from_config(limits):
    al = arm_limits(load_robot_config("fr3"))
    assert limits.n == 7
    assert np.array_equal(limits.q_max, al.q_max) and np.array_equal(limits.tau_max, al.tau_max)
    assert limits.ee_speed_max == al.ee_speed_max and limits.stale_after_s == al.stale_after_s
    assert np.array_equal(limits.v_max, al.v_max)
    kw = al.as_kwargs()
    kw["q_min"] = kw["q_max"] + 1.0
    with pytest.raises(ValueError, match="q_min"):
        SafetyLimits(**kw)
    kw = al.as_kwargs()
    kw["v_max"] = np.r_[kw["v_max"][:6], -1.0]
    with pytest.raises(ValueError):
        SafetyLimits(**kw)


def test_valid_command_passes_unchanged(checker, limits):
    q = home(limits) + 0.5 * limits.a_max * DT * DT
    r = checker.check(q, dt_s=DT, now_s=1.0, stamp_s=0.999, tau=np.full(7, 0.5),
                      ee_pos=np.array([0.5, 0.0, 0.5001]))
    assert r.ok and not r.rejected and r.flags == 0 and r.violations == []
    assert np.array_equal(r.q, q) and np.array_equal(r.tau, np.full(7, 0.5))


def test_exactly_at_limit_is_ok(limits):
    c = SafetyChecker(limits)
    q0 = limits.q_max.copy()
    c.reset(q=q0)
    r = c.check(q0, dt_s=DT, now_s=0.0, stamp_s=0.0, tau=limits.tau_max.copy())
    assert r.ok, r
    q1 = q0 - limits.v_max * DT        # exactly at the velocity limit ...
    r = c.check(q1, dt_s=DT, now_s=0.0, stamp_s=0.0, advance=0)
    assert "velocity" not in r.violations   # ... but a jump from rest breaks the acceleration limit
    assert "acceleration" in r.violations


def test_position_velocity_acceleration_are_clamped_and_flagged(checker, limits):
    q = home(limits).copy()
    q[1] = limits.q_max[1] + 1.0
    r = checker.check(q, dt_s=DT, now_s=0.0, stamp_s=0.0)
    assert not r.ok and not r.rejected
    assert {"position", "velocity", "acceleration"} <= set(r.violations)
    assert r.q[1] <= limits.q_max[1]
    # at rest: the acceleration interval is the binding one
    assert r.q[1] == pytest.approx(home(limits)[1] + limits.a_max[1] * DT * DT, rel=1e-12)
    assert r.worst_index == 1 and r.worst_ratio > 1.0
    assert r.counts["position"] == 1


def test_horizon_is_checked_step_by_step(limits):
    c = SafetyChecker(limits)
    q0 = home(limits)
    c.reset(q=q0, qd=np.zeros(7))
    H = 50
    ramp = q0 + np.outer(np.arange(1, H + 1) * 0.5 * DT, limits.v_max)  # 0.5 v_max from rest: too fast a start
    r = c.check(ramp, dt_s=DT, now_s=0.0, stamp_s=0.0, advance=0)
    assert r.q.shape == (H, 7) and "acceleration" in r.violations
    v = np.diff(np.vstack([q0, r.q]), axis=0) / DT
    a = np.diff(np.vstack([np.zeros(7), v]), axis=0) / DT
    assert np.all(np.abs(v) <= limits.v_max * (1 + 1e-9))
    assert np.all(np.abs(a) <= limits.a_max * (1 + 1e-6))
    assert not c.has_history or np.array_equal(c.check(q0, dt_s=DT, now_s=0, stamp_s=0).q, q0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_is_rejected_with_hold(checker, limits, bad):
    q = home(limits).copy()
    q[4] = bad
    r = checker.check(q, dt_s=DT, now_s=0.0, stamp_s=0.0)
    assert r.rejected and not r.ok and "nonfinite" in r.violations
    assert np.array_equal(r.q, home(limits))       # hold the last committed command
    assert r.worst_check == "nonfinite" and r.worst_index == 4
    assert checker.totals()["nonfinite"] == 1


def test_stale_future_and_bad_dt_are_rejected(checker, limits):
    q = home(limits)
    assert "stale" in checker.check(q, dt_s=DT, now_s=10.0, stamp_s=9.0).violations
    assert "stale" in checker.check(q, dt_s=DT, now_s=10.0, stamp_s=11.0).violations
    assert "stale" in checker.check(q, dt_s=DT, now_s=10.0, stamp_s=np.nan).violations
    r = checker.check(q, dt_s=0.0, now_s=0.0, stamp_s=0.0)
    assert r.rejected and "invalid_dt" in r.violations
    assert checker.rejected_total == 4


def test_torque_rate_workspace_ee_speed(checker, limits):
    tau = np.r_[100.0, np.zeros(6)]
    r = checker.check(tau=tau, dt_s=DT, now_s=0.0, stamp_s=0.0, advance=0)
    assert {"torque", "torque_rate"} <= set(r.violations)
    assert r.tau[0] == pytest.approx(limits.tau_rate_max[0] * DT)
    r = checker.check(ee_pos=np.array([2.0, 0.0, 0.5]), dt_s=DT, now_s=0.0, stamp_s=0.0, advance=0)
    assert {"workspace", "ee_speed"} <= set(r.violations)
    assert np.all(r.ee_pos <= limits.workspace_max)
    assert np.linalg.norm(r.ee_pos - [0.5, 0.0, 0.5]) <= limits.ee_speed_max * DT
    r = checker.check(ee_vel=np.array([1.0, 0.0, 0.0]), dt_s=DT, now_s=0.0, stamp_s=0.0)
    assert r.violations == ["ee_speed"] and np.linalg.norm(r.ee_vel) <= limits.ee_speed_max


def test_shape_errors_raise(checker):
    with pytest.raises(ValueError):
        checker.check(np.zeros(6), dt_s=DT, now_s=0.0, stamp_s=0.0)
    with pytest.raises(ValueError):
        checker.check(np.zeros((3, 7)), dt_s=DT, now_s=0.0, stamp_s=0.0, tau=np.zeros(7))
    with pytest.raises(ValueError):
        checker.check(dt_s=DT, now_s=0.0, stamp_s=0.0)
    assert set(FLAGS) >= {"position", "velocity", "acceleration", "torque", "torque_rate",
                          "workspace", "ee_speed", "nonfinite", "stale"}


def test_python_fuzz_never_returns_out_of_limit_as_ok(limits):
    """20,000 random single commands through Python (the C++ test fuzzes 1,000,000)."""
    rng = np.random.default_rng(7)
    c = SafetyChecker(limits)
    c.reset(q=home(limits))
    specials = np.array([np.nan, np.inf, -np.inf, 1e300, -1e300])
    prev = home(limits)
    vprev = np.zeros(7)
    n_ok = 0
    for i in range(20000):
        kind = rng.integers(0, 4)
        if kind == 0:
            q = prev + vprev * DT + rng.uniform(-1, 1, 7) * limits.a_max * DT * DT * 0.9
        elif kind == 1:
            q = np.where(rng.uniform(size=7) < 0.5, limits.q_min, limits.q_max)
        elif kind == 2:
            q = prev.copy()
            q[rng.integers(0, 7)] = rng.choice(specials)
        else:
            q = rng.uniform(limits.q_min - 1, limits.q_max + 1)
        r = c.check(q, dt_s=DT, now_s=i * DT, stamp_s=i * DT)
        assert np.all(np.isfinite(r.q))
        assert np.all(r.q >= limits.q_min) and np.all(r.q <= limits.q_max)
        if not r.rejected and "infeasible" not in r.violations:
            assert np.all(r.q >= prev - limits.v_max * DT) and np.all(r.q <= prev + limits.v_max * DT)
        if r.ok:
            n_ok += 1
            assert np.array_equal(r.q, q)
        if not r.rejected:
            vprev = (r.q - prev) / DT
            prev = r.q
    assert n_ok > 1000
