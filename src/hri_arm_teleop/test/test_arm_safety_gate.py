"""SafetyGate: hri_core's SafetyChecker with the config limits, for targets and joint commands."""
from __future__ import annotations

import numpy as np
import pytest

from hri_core.kinematics import PoeModel
from hri_runtime.config.tree import load_robot_config, named_position
from hri_sim.models import load_fr3
from hri_arm_teleop.core.safety import SafetyGate

DT = 0.01


@pytest.fixture(scope="module")
def gate_parts():
    cfg = load_robot_config("fr3")
    poe = PoeModel.from_mujoco(load_fr3(), cfg["teleop"]["ik"]["ee_site"], cfg["joints"]["names"])
    return cfg, poe, named_position(cfg, "home")


def make(gate_parts):
    cfg, poe, q0 = gate_parts
    g = SafetyGate(cfg, poe.fk, DT)
    g.reset(q0)
    return g, cfg, q0


def test_target_inside_passes_outside_is_clamped_and_flagged_nan_rejected(gate_parts):
    g, cfg, _ = make(gate_parts)
    lo, hi = np.array(cfg["safety"]["workspace_min_m"]), np.array(cfg["safety"]["workspace_max_m"])
    inside = 0.5 * (lo + hi)
    assert g.check_target(inside, 0.0).ok
    out = inside + [0.0, 0.0, 2.0]
    r = g.check_target(out, 0.0)
    assert not r.ok and r.violations == ("workspace",) and "workspace" in r.detail
    np.testing.assert_allclose(r.q, [inside[0], inside[1], hi[2]])
    r = g.check_target(np.array([np.nan, 0.0, 0.5]), 0.0)
    assert r.rejected and "nonfinite" in r.violations
    assert g.flags == {"workspace": 1, "nonfinite": 1}


def test_joint_command_limits_nan_and_staleness(gate_parts):
    g, cfg, q0 = make(gate_parts)
    assert g.check_command(q0, 0.0, 0.0).ok                        # holding still
    q = q0.copy()
    q[0] += 0.5                                                   # 50 rad/s in one tick
    r = g.check_command(q, DT, DT)
    assert not r.ok and "velocity" in r.violations and abs(r.q[0] - q0[0]) < 0.5
    g, _, _ = make(gate_parts)
    r = g.check_command(np.full(7, np.nan), 0.0, 0.0)
    assert r.rejected and "nonfinite" in r.violations
    np.testing.assert_array_equal(r.q, q0)                        # the hold command: last state
    g, _, _ = make(gate_parts)
    stale = cfg["safety"]["command_stale_after_s"]
    r = g.check_command(q0, 10.0, 10.0 - stale - 0.1)
    assert r.rejected and "stale" in r.violations


def test_a_late_tick_is_judged_over_the_time_it_took(gate_parts):
    """In real time a tick 30 ms late carries 30 ms of motion: not a speed/acceleration jump."""
    g, _, q0 = make(gate_parts)
    v = np.full(7, 0.05)                                          # rad/s, joint space
    t, q = 0.0, q0.copy()
    for dt in [DT, DT, 0.03, DT, DT]:
        t += dt
        q = q + v * dt
        assert g.check_command(q, t, t).ok
    g2, _, _ = make(gate_parts)                                   # the same 30 ms of motion in 10 ms
    t, q = 0.0, q0.copy()
    for dt in [DT, DT]:
        t += dt
        q = q + v * dt
        assert g2.check_command(q, t, t).ok
    r = g2.check_command(q + v * 0.03 * 100, t + DT, t + DT)
    assert not r.ok
