"""The gamepad as a VR hand (core.gamepad.GamepadHand): the clutch button + sticks move a virtual
hand in the base frame; through the real pipeline and the MuJoCo arm (joint output, lockstep) the
clutch engages, the EE follows the stick, and releasing the button holds the arm."""
from __future__ import annotations

import math

import numpy as np
import pytest

from hri_runtime.config.tree import load_robot_config
from hri_arm_teleop.core.gamepad import GamepadHand, GamepadParams

CFG = load_robot_config("fr3")
P = GamepadParams.from_config(CFG["teleop"]["gamepad"])


def joy(clutch=False, **axes):
    a = [0.0] * 8
    for k, v in axes.items():
        a[int(k[1:])] = v
    b = [0] * 11
    if clutch:
        b[P.clutch_button] = 1
    return a, b


def drive(hand, t0, seconds, sample, rate_hz=100.0):
    """Joy at 20 Hz (the joy node's autorepeat), steps at ``rate_hz``; returns the last step."""
    n = int(round(seconds * rate_hz))
    out = None
    for k in range(1, n + 1):
        t = t0 + k / rate_hz
        if k % int(rate_hz / 20) == 0:
            hand.on_joy(*sample, t)
        out = hand.step(t)
    return out


def test_held_clutch_and_stick_move_the_hand_at_the_configured_speed():
    h = GamepadHand(P, 0.0)
    h.on_joy(*joy(True, a1=1.0), 0.0)                # left stick fully up: +x
    T, clutch = drive(h, 0.0, 1.0, joy(True, a1=1.0))
    assert clutch and T[:3, 3] == pytest.approx([P.linear_speed_m_s * 1.0, 0, 0], abs=1e-12)
    h.on_joy(*joy(True, a3=1.0), 1.0)                # right stick left: +yaw
    T, _ = drive(h, 1.0, 0.5, joy(True, a3=1.0))
    assert math.atan2(T[1, 0], T[0, 0]) == pytest.approx(P.angular_speed_rad_s * 0.5, abs=1e-9)


def test_without_the_clutch_the_hand_does_not_move():
    h = GamepadHand(P, 0.0)
    h.on_joy(*joy(False, a0=1.0, a4=-1.0), 0.0)
    T, clutch = drive(h, 0.0, 1.0, joy(False, a0=1.0, a4=-1.0))
    assert not clutch and np.array_equal(T, np.eye(4))


def test_no_joy_for_timeout_releases_the_clutch_once_counted():
    h = GamepadHand(P, 0.0)
    h.on_joy(*joy(True, a1=1.0), 0.0)
    T1, c1 = h.step(P.timeout_s * 0.5)
    T2, c2 = h.step(P.timeout_s * 2)
    T3, c3 = h.step(P.timeout_s * 3)
    assert c1 and not c2 and not c3 and h.timeouts == 1
    assert np.array_equal(T2, T3)                    # held where it was


def test_a_nan_axis_is_rejected_and_counted():
    h = GamepadHand(P, 0.0)
    assert h.on_joy([float("nan")] * 8, [1] * 11, 0.0) is False and h.rejected == 1
    T, clutch = h.step(0.5)
    assert not clutch


def test_clutch_button_and_stick_move_the_simulated_ee_and_release_holds():
    from hri_arm_teleop.nodes.robots import simulated_arm

    robot, pipe, ls = simulated_arm(CFG)
    clock = pipe.clock
    hand = GamepadHand(P, clock())
    state = {"sample": joy(False), "k": 0}

    def feed(now):
        state["k"] += 1
        if state["k"] % 5 == 0:                       # Joy at 20 Hz from a 100 Hz base tick
            hand.on_joy(*state["sample"], now)
        pipe.on_hand_pose(*hand.step(now), source_stamp=now)

    def run(seconds):
        end = clock() + seconds
        while clock() < end - 1e-9:
            ls.step(feed)

    run(0.5)
    start = robot.sim.ee_pose()[:3, 3].copy()
    state["sample"] = joy(True, a1=1.0)             # clutch + left stick up for 1 s: +x
    run(1.0)
    state["sample"] = joy(False)                     # release: the arm holds
    run(0.5)
    released = robot.sim.ee_pose()[:3, 3].copy()
    run(1.0)
    held = robot.sim.ee_pose()[:3, 3].copy()
    moved = released - start
    expect = P.linear_speed_m_s * CFG["teleop"]["clutch"]["position_scale"] * 1.0
    assert moved[0] == pytest.approx(expect, rel=0.15), moved
    assert abs(moved[1]) < 0.01 * expect + 2e-3 and abs(moved[2]) < 0.01 * expect + 2e-3
    assert np.linalg.norm(held - released) < 1e-3
    assert pipe.clutch.counters.engagements == 1 and pipe.clutch.counters.releases == 1
