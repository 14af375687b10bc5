"""Keyboard EE teleop core: key -> increment, step bounds, reset, terminal parsing."""
from __future__ import annotations

import numpy as np
import pytest


from hri_core import se3
from hri_runtime.config.tree import load_robot_config
from hri_arm_teleop.core.keyboard import KeyboardParams, KeyboardTeleop, parse_keys

T0 = np.eye(4)
T0[:3, 3] = (0.5, 0.0, 0.4)


def kb():
    return KeyboardTeleop(KeyboardParams.from_config(load_robot_config("fr3")["teleop"]["keyboard"]), T0)


def test_defaults_are_the_design_values():
    p = KeyboardParams.from_config(load_robot_config("fr3")["teleop"]["keyboard"])
    assert (p.translation_step_m, p.rotation_step_rad, p.publish_rate_hz) == (0.008, 0.03, 10.0)
    assert (p.min_translation_step_m, p.max_translation_step_m) == (0.001, 0.05)


@pytest.mark.parametrize("key, delta", [("up", (0.008, 0, 0)), ("down", (-0.008, 0, 0)),
                                        ("left", (0, 0.008, 0)), ("right", (0, -0.008, 0)),
                                        ("pageup", (0, 0, 0.008)), ("pagedown", (0, 0, -0.008))])
def test_translation_keys(key, delta):
    k = kb()
    k.handle(key)
    np.testing.assert_allclose(k.target[:3, 3], T0[:3, 3] + delta, atol=1e-15)
    np.testing.assert_array_equal(k.target[:3, :3], np.eye(3))


@pytest.mark.parametrize("key, w", [("q", (1, 0, 0)), ("w", (-1, 0, 0)), ("a", (0, 1, 0)),
                                    ("s", (0, -1, 0)), ("z", (0, 0, 1)), ("x", (0, 0, -1))])
def test_rotation_keys(key, w):
    k = kb()
    k.handle(key)
    np.testing.assert_allclose(se3.so3_log(k.target[:3, :3]), 0.03 * np.array(w), atol=1e-12)
    np.testing.assert_array_equal(k.target[:3, 3], T0[:3, 3])


def test_step_bounds_and_reset():
    k = kb()
    for _ in range(10):
        k.handle("+")
    assert k.translation_step_m == pytest.approx(0.05)
    for _ in range(20):
        k.handle("-")
    assert k.translation_step_m == pytest.approx(0.001)
    assert k.rotation_step_rad == pytest.approx(0.03 / 8)  # scaled with the translation step
    k.handle("up")
    assert k.target[0, 3] == pytest.approx(0.501)
    assert "reset" in k.handle("r")
    np.testing.assert_array_equal(k.target, T0)


def test_print_help_and_unknown_keys():
    k = kb()
    assert "+0.5000" in k.handle("p")
    assert "PageUp" in k.handle("h")
    assert k.handle("y") is None and k.ignored == 1


def test_parse_terminal_bytes():
    assert parse_keys(b"\x1b[A\x1b[Bq+=-\x1b[5~\x1b[6~\x1bOCP\x1b") == [
        "up", "down", "q", "+", "+", "-", "pageup", "pagedown", "right", "p", "esc"]


def test_gamepad_gives_the_same_increments_as_the_keys():
    from hri_arm_teleop.core.gamepad import GamepadKeys, GamepadParams

    gp = GamepadKeys(GamepadParams.from_config(load_robot_config("fr3")["teleop"]["gamepad"]))
    k_pad, k_key = kb(), kb()
    axes, buttons = [0.0] * 8, [0] * 11
    assert gp.update(axes, buttons) == []
    axes[7] = 1.0                      # D-pad up, held for three samples: one press
    presses = gp.update(axes, buttons) + gp.update(axes, buttons) + gp.update(axes, buttons)
    assert presses == ["up"]
    axes[7] = 0.0
    buttons[1] = 1                      # B: z up
    presses += gp.update(axes, buttons)
    buttons[1] = 0
    axes[4] = -0.9                      # right stick down: pitch -
    presses += gp.update(axes, buttons)
    axes[4] = float("nan")
    presses += gp.update(axes, buttons)
    assert presses == ["up", "pageup", "s"] and gp.rejected == 1
    for key in presses:
        k_pad.handle(key)
    for key in ["up", "pageup", "s"]:
        k_key.handle(key)
    np.testing.assert_array_equal(k_pad.target, k_key.target)
