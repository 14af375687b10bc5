"""Through the whole simulated chain: workspace clamp at the boundary, link loss -> stale -> HOLD."""
from __future__ import annotations

import logging

import numpy as np
import pytest


from hri_runtime.config.tree import load_robot_config
from hri_arm_teleop.core.types import RefMode
from hri_arm_teleop.nodes.robots import simulated_arm

from .control_trace import Trace

HAND0 = np.array([0.0, 1.2, 0.4])   # Unity frame
Q_ID = np.array([0.0, 0.0, 0.0, 1.0])


def run(pipe, ls, hand_of_t, t_end, send_until=np.inf, rate_hz=50.0):
    next_t = [0.0]

    def operator(t):
        if t + 1e-9 >= next_t[0] and t < send_until:
            p, clutch = hand_of_t(t)
            pipe.on_hand(p, Q_ID, clutch, source_stamp=t)
            next_t[0] += 1.0 / rate_hz

    ls.run_until(t_end, operator)


def test_out_of_workspace_target_is_clamped_flagged_holds_and_resumes_on_reengage(caplog):
    """hri_core's SafetyChecker on the clutch target: clamp AND flag -> SAFETY_HOLD (log, mode,
    counters); the arm stays in the box and stops; release + re-engage resumes from there."""
    cfg = load_robot_config("fr3", overrides=["safety.workspace_max_m=[0.85,0.6,0.65]"])
    caplog.set_level(logging.INFO, logger="hri_arm_teleop")
    robot, pipe, ls = simulated_arm(cfg)
    trace = Trace.attach(pipe)
    z0 = robot.sim.ee_pose()[2, 3]
    assert z0 < 0.65
    modes = []

    def hand(t):  # engage at 0.5 s, raise the hand 20 cm at 5 cm/s (Unity +y = up); at 5.0 s
        lift = float(np.clip((t - 0.6) * 0.05, 0.0, 0.2))   # release, at 5.5 s engage again and
        down = float(np.clip((t - 5.6) * 0.05, 0.0, 0.03))  # lower the hand 3 cm
        modes.append(pipe.mode)
        return HAND0 + [0.0, lift - down, 0.0], (0.5 <= t < 5.0) or t >= 5.5

    run(pipe, ls, hand, 5.0)
    a = trace.arrays()
    assert pipe.mode == "SAFETY_HOLD" and pipe.safety_holds == 1
    assert pipe.gate.flags.get("workspace", 0) >= 1
    assert pipe.clutch.counters.workspace_clamps >= 1
    warn = [r.message for r in caplog.records if "SAFETY_HOLD" in r.message]
    assert len(warn) == 1 and "workspace" in warn[0]           # named, once
    assert np.nanmax(a["target_p"][:, 2]) <= 0.65 + 1e-12      # no target outside the box
    assert np.max(a["ee_p"][:, 2]) <= 0.65 + 0.002            # nor the arm (2 mm overshoot)
    t_hold = a["t"][np.argmax(a["mode"] < 0)]
    held = a["ee_p"][a["t"] > t_hold + 0.5]
    assert np.max(np.linalg.norm(held - held[-1], axis=1)) < 2e-4   # it holds still
    z_hold = robot.sim.ee_pose()[2, 3]
    # the clutch is still pressed: nothing resumes by itself
    run(pipe, ls, hand, 5.5)
    assert pipe.mode == "SAFETY_HOLD"
    run(pipe, ls, hand, 8.0)   # released at 5.0, engaged again at 5.5: tracking from the hold
    assert pipe.mode == "TRACK" and pipe.safety_hold is None
    assert robot.sim.ee_pose()[2, 3] == pytest.approx(z_hold - 0.03, abs=0.002)
    assert any("safety hold cleared" in r.message for r in caplog.records)


def test_nan_joint_command_is_rejected_and_the_arm_holds(caplog, monkeypatch):
    """A NaN joint command (a broken IK) never reaches the robot: the checker rejects it, the
    previous command is held, SAFETY_HOLD is logged and visible."""
    cfg = load_robot_config("fr3")
    caplog.set_level(logging.INFO, logger="hri_arm_teleop")
    robot, pipe, ls = simulated_arm(cfg)

    def hand(t):
        return HAND0 + [min(max(t - 0.6, 0.0), 1.0) * 0.05, 0.0, 0.0], t >= 0.5

    run(pipe, ls, hand, 1.0)
    assert pipe.mode == "TRACK"
    sent = []
    real_send = robot.send_command
    monkeypatch.setattr(robot, "send_command", lambda cmd: (sent.append(cmd.q_des.copy()), real_send(cmd)))
    ik = pipe.controller.ik
    good = ik.solve

    def broken(T, q):
        r = good(T, q)
        r.q = np.full_like(r.q, np.nan)
        return r

    monkeypatch.setattr(ik, "solve", broken)
    run(pipe, ls, hand, 2.0)
    assert pipe.mode == "SAFETY_HOLD" and pipe.safety_holds == 1
    assert pipe.gate.flags.get("nonfinite") == 1
    assert np.all(np.isfinite(sent)) and np.all(np.isfinite(robot.sim.q))
    np.testing.assert_array_equal(sent[-1], sent[0])      # the last good command, held
    assert sum("SAFETY_HOLD" in r.message and "nonfinite" in r.message for r in caplog.records) == 1


def test_nan_or_improper_ee_command_is_rejected_counted_and_moves_nothing(caplog):
    cfg = load_robot_config("fr3")
    robot, pipe, ls = simulated_arm(cfg)
    ls.run_until(0.2)
    T = robot.sim.ee_pose()
    bad = T.copy()
    bad[0, 3] = np.nan
    skew = T.copy()
    skew[:3, :3] *= 2.0
    assert not pipe.submit_ee_command(bad) and not pipe.submit_ee_command(skew)
    assert pipe.rejected_commands == {"nonfinite": 1, "invalid_rotation": 1}
    ls.run_until(1.0)
    assert pipe.mode == "HOLD"
    np.testing.assert_allclose(robot.sim.ee_pose()[:3, 3], T[:3, 3], atol=1e-4)
    assert any("EE command rejected (nonfinite" in r.message for r in caplog.records)


def test_link_loss_goes_stale_then_holds_still(caplog):
    cfg = load_robot_config("fr3")
    caplog.set_level(logging.INFO, logger="hri_arm_teleop")
    robot, pipe, ls = simulated_arm(cfg)
    trace = Trace.attach(pipe)

    def hand(t):
        return HAND0 + [min(max(t - 0.6, 0.0), 1.0) * 0.05, 0.0, 0.0], t >= 0.5

    run(pipe, ls, hand, 5.0, send_until=2.0)   # packets stop at t = 2 s, clutch still held
    (t_track, m1), (t_hold, m2) = pipe.bridge.transitions
    assert (m1, m2) == (RefMode.TRACK, RefMode.HOLD)
    # last packet at 1.98 s; command stale after 1.0 s (checked at 50 Hz), reference horizon 0.25 s
    assert 1.98 + 1.0 + 0.25 - 0.02 <= t_hold <= 1.98 + 1.0 + 0.25 + 0.03
    assert sum("HOLD:" in r.message for r in caplog.records) == 1
    a = trace.arrays()
    held = a["ee_p"][a["t"] > t_hold + 0.1]
    assert np.max(np.linalg.norm(held - held[0], axis=1)) < 1e-4   # holds still
    assert pipe.mode == "HOLD"


def test_keyboard_keys_move_the_simulated_arm_by_their_steps():
    from hri_arm_teleop.keyboard_demo import run_keyboard

    r = run_keyboard(load_robot_config("fr3"), ["up", "up", "up", "pageup", "right"], seconds=2.5,
                     echo=lambda _t: None)
    np.testing.assert_allclose(r["target_m"] - r["start_m"], [0.024, -0.008, 0.008], atol=1e-12)
    np.testing.assert_allclose(r["end_m"], r["target_m"], atol=5e-4)
    assert r["mode"] == "TRACK"   # the keyboard keeps publishing its target at 10 Hz


def test_absolute_command_out_of_workspace_holds_until_a_new_command(caplog):
    """/ee_command (keyboard) beyond the box: the planner's reference is flagged at the boundary
    -> SAFETY_HOLD; the same command re-published at 10 Hz does not resume; a new one does."""
    cfg = load_robot_config("fr3", overrides=["safety.workspace_max_m=[0.85,0.6,0.62]"])
    robot, pipe, ls = simulated_arm(cfg)
    ls.run_until(0.1)
    T0 = robot.sim.ee_pose()
    far = T0.copy()
    far[2, 3] = 0.70
    t_next = [0.0]

    def keyboard(T):
        def pub(t):
            if t >= t_next[0]:
                pipe.submit_ee_command(T)
                t_next[0] = t + 0.1
        return pub

    ls.run_until(1.5, keyboard(far))
    assert pipe.mode == "SAFETY_HOLD" and pipe.gate.flags.get("workspace", 0) >= 1
    assert robot.sim.ee_pose()[2, 3] <= 0.62 + 0.002
    ls.run_until(2.5, keyboard(far))                 # the held command again: still holding
    assert pipe.mode == "SAFETY_HOLD" and pipe.safety_holds == 1
    back = T0.copy()
    back[2, 3] = 0.60
    ls.run_until(4.0, keyboard(back))                # a new command inside: resumes
    assert pipe.mode == "TRACK"
    assert robot.sim.ee_pose()[2, 3] == pytest.approx(0.60, abs=5e-4)
