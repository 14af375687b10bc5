"""The gamepad on the arm, two ways:

``GamepadHand`` (``input:=gamepad`` of the launch files; arm_teleop): the gamepad as a VR hand.
While the clutch button (``clutch_button``) is held the sticks move a virtual hand in the robot
base frame (``linear_axes`` at up to ``linear_speed_m_s``, ``angular_axes`` at up to
``angular_speed_rad_s``); that pose and the button go into the same clutch as the headset's
controller (core.clutch: engage, scaled increments, speed limit, workspace clamp; release
holds). No Joy for ``timeout_s`` (a vanished joy node) releases the clutch (counted).

``GamepadKeys``: the keyboard teleop's 6-DoF increments (same keys, same steps, one press = one step).

Input: ``sensor_msgs/Joy`` (from ``hri_pulse``'s gamepad node, or the standard ROS ``joy`` node).
A binding turns a button, or one direction of an axis (|value| >= ``axis_threshold``), into a
key name of ``core.keyboard`` on its rising edge, so the gamepad drives exactly the same
``KeyboardTeleop`` as the terminal (config ``teleop.gamepad``; defaults for an Xbox pad under
Linux: D-pad = arrows, A/B = z down/up, X/Y = yaw, LB/RB = roll, right stick up/down = pitch,
Back/Start = -/+, right stick click = reset).
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from hri_core import se3
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


class GamepadHand:
    """Joy samples + time -> (``base_T_hand`` 4x4, clutch pressed) for ``ArmTeleopPipeline``."""

    def __init__(self, params: GamepadParams, start_s: float):
        self.params = params
        self.base_T_hand = np.eye(4)
        self._axes: list = []
        self._clutch = False
        self._t = float(start_s)
        self._last_joy: Optional[float] = None
        self.rejected = 0             # Joy messages with a non-finite axis (ignored)
        self.timeouts = 0             # clutch released because no Joy came for timeout_s

    def on_joy(self, axes: Sequence[float], buttons: Sequence[int], now_s: float) -> bool:
        """A ``sensor_msgs/Joy`` sample; False (counted) if an axis is not finite."""
        if not all(math.isfinite(float(a)) for a in axes):
            self.rejected += 1
            return False
        self._axes = [float(a) for a in axes]
        b = self.params.clutch_button
        self._clutch = b < len(buttons) and bool(buttons[b])
        self._last_joy = float(now_s)
        return True

    def _rate(self, indices: Sequence[int], scale: float) -> np.ndarray:
        return np.array([max(-1.0, min(1.0, self._axes[i])) * scale if 0 <= i < len(self._axes) else 0.0
                         for i in indices])

    @property
    def fresh(self) -> bool:
        return self._last_joy is not None and self._t - self._last_joy <= self.params.timeout_s

    def step(self, now_s: float) -> tuple[np.ndarray, bool]:
        """Advance the virtual hand to ``now_s``: it moves only while the clutch is held and the
        Joy is fresh. Returns (base_T_hand, clutch)."""
        dt = max(0.0, float(now_s) - self._t)
        was_fresh = self.fresh
        self._t = float(now_s)
        if self._clutch and not self.fresh:
            if was_fresh:
                self.timeouts += 1
            self._clutch = False
        if self._clutch and dt > 0.0:
            p = self.params
            self.base_T_hand[:3, 3] += self._rate(p.linear_axes, p.linear_speed_m_s) * dt
            w = self._rate(p.angular_axes, p.angular_speed_rad_s) * dt
            if np.any(w):
                self.base_T_hand[:3, :3] = se3.so3_exp(w) @ self.base_T_hand[:3, :3]
        return self.base_T_hand.copy(), self._clutch
