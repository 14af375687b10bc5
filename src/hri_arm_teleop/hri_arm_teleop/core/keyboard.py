"""Keyboard end-effector teleop core (the FR3 keyboard teleop design ``keyboard_ee_teleop``), pure and testable.

Keys (one press = one increment, applied in the base/world frame to an absolute target pose):

| key                  | action |
|----------------------|--------|
| Up / Down            | +x / -x (forward / back) |
| Left / Right         | +y / -y (left / right) |
| PageUp / PageDown    | +z / -z (the FR3 keyboard teleop design lists only the arrows; z needs two more keys) |
| Q / W                | roll  + / - (about x) |
| A / S                | pitch + / - (about y) |
| Z / X                | yaw   + / - (about z) |
| + / -                | translation and rotation step x / ÷ ``step_factor`` (translation in [1 mm, 5 cm]) |
| R                    | reset to the initial pose |
| P                    | print the current target |
| H                    | help |

Rotations pre-multiply the target's rotation matrix (R <- Rot(axis, +-step) R): no Euler angle
state, so no gimbal lock. Defaults (config ``teleop.keyboard``): 8 mm, 0.03 rad, x2 per +/-.

``parse_keys`` turns raw terminal bytes (ANSI escape sequences, no X server needed) into key names.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from hri_core import se3
from hri_arm_teleop.parameters_gen import TeleopKeyboardParams

HELP = __doc__.split("Keys", 1)[1].split("Rotations", 1)[0].strip()

TRANSLATIONS = {"up": (0, +1), "down": (0, -1), "left": (1, +1), "right": (1, -1),
                "pageup": (2, +1), "pagedown": (2, -1)}
ROTATIONS = {"q": (0, +1), "w": (0, -1), "a": (1, +1), "s": (1, -1), "z": (2, +1), "x": (2, -1)}

_ESCAPES = {b"\x1b[A": "up", b"\x1b[B": "down", b"\x1b[C": "right", b"\x1b[D": "left",
            b"\x1bOA": "up", b"\x1bOB": "down", b"\x1bOC": "right", b"\x1bOD": "left",
            b"\x1b[5~": "pageup", b"\x1b[6~": "pagedown"}


#: Config ``teleop.keyboard``, typed from its declaration (hri_arm_teleop/parameters.yaml).
KeyboardParams = TeleopKeyboardParams


def parse_keys(data: bytes) -> list[str]:
    """Raw terminal input -> key names (``up``, ``pageup``, ``q``, ``+``, ``esc``, ...)."""
    keys, i = [], 0
    while i < len(data):
        if data[i] == 0x1B:
            for seq, name in _ESCAPES.items():
                if data.startswith(seq, i):
                    keys.append(name)
                    i += len(seq)
                    break
            else:
                keys.append("esc")
                i += 1
            continue
        ch = chr(data[i]).lower()
        keys.append("+" if ch == "=" else ch)  # '=' is '+' without shift
        i += 1
    return keys


class KeyboardTeleop:
    """Key presses -> absolute EE target ``base_T_target`` (4x4)."""

    def __init__(self, params: KeyboardParams, initial_pose: np.ndarray):
        self.params = params
        self.initial = np.array(initial_pose, dtype=float)
        self.target = self.initial.copy()
        self.translation_step_m = params.translation_step_m
        self.rotation_step_rad = params.rotation_step_rad
        self.ignored = 0

    def _scale_steps(self, factor: float) -> None:
        p = self.params
        new = min(max(self.translation_step_m * factor, p.min_translation_step_m),
                  p.max_translation_step_m)
        applied = new / self.translation_step_m
        self.translation_step_m = new
        self.rotation_step_rad *= applied

    def handle(self, key: str) -> Optional[str]:
        """Apply one key; returns text to show for P/H/+/- (None otherwise)."""
        key = key.lower()
        if key in TRANSLATIONS:
            axis, sign = TRANSLATIONS[key]
            self.target[axis, 3] += sign * self.translation_step_m
        elif key in ROTATIONS:
            axis, sign = ROTATIONS[key]
            w = np.zeros(3)
            w[axis] = sign * self.rotation_step_rad
            self.target[:3, :3] = se3.so3_exp(w) @ self.target[:3, :3]
        elif key in ("+", "-"):
            f = self.params.step_factor
            self._scale_steps(f if key == "+" else 1.0 / f)
            return (f"step: {self.translation_step_m * 1e3:.1f} mm, "
                    f"{np.degrees(self.rotation_step_rad):.2f} deg")
        elif key == "r":
            self.target = self.initial.copy()
            return "reset to the initial pose"
        elif key == "p":
            p = self.target[:3, 3]
            q = se3.rot_to_quat(self.target[:3, :3])
            return (f"position [m] {p[0]:+.4f} {p[1]:+.4f} {p[2]:+.4f}  "
                    f"quat xyzw {q[0]:+.4f} {q[1]:+.4f} {q[2]:+.4f} {q[3]:+.4f}")
        elif key == "h":
            return HELP
        else:
            self.ignored += 1
        return None
