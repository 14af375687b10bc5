"""Gamepad -> the keyboard teleop's 6-DoF increments (same keys, same steps, one press = one step).

Input: ``sensor_msgs/Joy`` (from ``hri_pulse``'s gamepad node, or the standard ROS ``joy`` node).
A binding turns a button, or one direction of an axis (|value| >= ``axis_threshold``), into a
key name of ``core.keyboard`` on its rising edge, so the gamepad drives exactly the same
``KeyboardTeleop`` as the terminal (config ``teleop.gamepad``; defaults for an Xbox pad under
Linux: D-pad = arrows, A/B = z down/up, X/Y = yaw, LB/RB = roll, right stick up/down = pitch,
Back/Start = -/+, right stick click = reset).
"""
from __future__ import annotations

from typing import Sequence
from hri_arm_teleop.parameters_gen import TeleopGamepadParams



#: Config ``teleop.gamepad`` (``button_keys``: index = Joy button, "" = unbound; ``axis_keys``:
#: index = Joy axis, "positive_key/negative_key" or ""), typed from its declaration.
GamepadParams = TeleopGamepadParams


class GamepadKeys:
    """Joy samples -> key presses (rising edges only)."""

    def __init__(self, params: GamepadParams):
        self.params = params
        self._held: set = set()
        self.rejected = 0

    def update(self, axes: Sequence[float], buttons: Sequence[int]) -> list[str]:
        held = set()
        for i, key in enumerate(self.params.button_keys):
            if key and i < len(buttons) and buttons[i]:
                held.add(("b", i, key))
        for i, spec in enumerate(self.params.axis_keys):
            if not spec or i >= len(axes):
                continue
            v = axes[i]
            if v != v:  # NaN from a broken driver: ignored, counted
                self.rejected += 1
                continue
            pos, _, neg = spec.partition("/")
            if v >= self.params.axis_threshold and pos:
                held.add(("a+", i, pos))
            elif v <= -self.params.axis_threshold and neg:
                held.add(("a-", i, neg))
        pressed = [k for (_, _, k) in sorted(held - self._held)]
        self._held = held
        return pressed
