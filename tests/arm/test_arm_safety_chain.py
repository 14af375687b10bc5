"""Through the whole simulated chain: workspace clamp at the boundary, link loss -> stale -> HOLD."""
from __future__ import annotations

import logging

import numpy as np
import pytest

pytest.importorskip("hri_core.se3", reason="hri_core (cpp/, issue 4) is not built yet")

from hri_runtime.config import load_robot_config
from hri_arm_teleop.core.types import RefMode
from hri_arm_teleop.lockstep import LockstepDriver, build_sim_pipeline

HAND0 = np.array([0.0, 1.2, 0.4])   # Unity frame
Q_ID = np.array([0.0, 0.0, 0.0, 1.0])


def run(pipe, robot, hand_of_t, t_end, send_until=np.inf, rate_hz=50.0):
    next_t = [0.0]

    def operator(t):
        if t + 1e-9 >= next_t[0] and t < send_until:
            p, clutch = hand_of_t(t)
            pipe.on_hand(p, Q_ID, clutch, source_stamp=t)
            next_t[0] += 1.0 / rate_hz

    LockstepDriver(pipe, robot).run_until(t_end, operator)


def test_target_is_clamped_at_the_workspace_boundary_and_the_arm_stays_inside():
    cfg = load_robot_config("fr3", overrides=["safety.workspace_max_m=[0.85,0.6,0.65]"])
    pipe, robot, _ = build_sim_pipeline(cfg)
    z0 = robot.sim.ee_pose()[2, 3]
    assert z0 < 0.65

    def hand(t):  # engage at 0.5 s, raise the hand 20 cm (Unity +y = up) at 5 cm/s
        lift = float(np.clip((t - 0.6) * 0.05, 0.0, 0.2))
        return HAND0 + [0.0, lift, 0.0], t >= 0.5

    run(pipe, robot, hand, 6.0)
    a = pipe.trace.arrays()
    assert pipe.clutch.counters.workspace_clamps > 0
    assert np.nanmax(a["target_p"][:, 2]) <= 0.65 + 1e-12      # the target never left the box
    assert np.max(a["ee_p"][:, 2]) <= 0.65 + 0.002            # nor did the arm (2 mm overshoot)
    assert robot.sim.ee_pose()[2, 3] == pytest.approx(0.65, abs=0.001)  # it slides on the boundary


def test_link_loss_goes_stale_then_holds_still(caplog):
    cfg = load_robot_config("fr3")
    caplog.set_level(logging.INFO, logger="hri_arm_teleop")
    pipe, robot, _ = build_sim_pipeline(cfg)

    def hand(t):
        return HAND0 + [min(max(t - 0.6, 0.0), 1.0) * 0.05, 0.0, 0.0], t >= 0.5

    run(pipe, robot, hand, 5.0, send_until=2.0)   # packets stop at t = 2 s, clutch still held
    (t_track, m1), (t_hold, m2) = pipe.bridge.transitions
    assert (m1, m2) == (RefMode.TRACK, RefMode.HOLD)
    # last packet at 1.98 s; command stale after 1.0 s (checked at 50 Hz), reference horizon 0.25 s
    assert 1.98 + 1.0 + 0.25 - 0.02 <= t_hold <= 1.98 + 1.0 + 0.25 + 0.03
    assert sum("HOLD:" in r.message for r in caplog.records) == 1
    a = pipe.trace.arrays()
    held = a["ee_p"][a["t"] > t_hold + 0.1]
    assert np.max(np.linalg.norm(held - held[0], axis=1)) < 1e-4   # holds still
    assert pipe.mode is RefMode.HOLD


def test_keyboard_keys_move_the_simulated_arm_by_their_steps():
    from hri_arm_teleop.keyboard_demo import run_keyboard

    r = run_keyboard(load_robot_config("fr3"), ["up", "up", "up", "pageup", "right"], seconds=2.5,
                     echo=lambda _t: None)
    np.testing.assert_allclose(r["target_m"] - r["start_m"], [0.024, -0.008, 0.008], atol=1e-12)
    np.testing.assert_allclose(r["end_m"], r["target_m"], atol=5e-4)
    assert r["mode"] == "TRACK"   # the keyboard keeps publishing its target at 10 Hz
