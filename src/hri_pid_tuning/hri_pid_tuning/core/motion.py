"""Motions the test runner plays (Webel's thesis §3.2 AnimatorControl, §3.5.1 step tests).

A :class:`Motion` maps motion time (s) to a set-point per joint (rad; joints it does not move are
held at the base pose). :class:`AnimatorControl` plays a motion with a time-stretch factor:
motion time = plant time / ``time_stretch`` (thesis ``TimeStretchFactor``: > 1 slows the motion
down for a slow simulation).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np


class Motion:
    name: str = "motion"
    duration_s: float = 0.0

    def setpoints(self, t_s: float, base_pose_rad: np.ndarray, joint_names: Sequence[str]) -> np.ndarray:
        raise NotImplementedError


@dataclass
class HeldStepMotion(Motion):
    """One joint stepped away from its base angle and back, with pauses::

        base … pause_s … stepped … hold_s … base … hold_s   (× repeats)

    Subclasses say what "stepped" is (:meth:`setpoints`)."""

    joint: str
    pause_s: float
    hold_s: float
    repeats: int
    name: str = ""
    prefix: ClassVar[str] = "step"

    def __post_init__(self) -> None:
        if not self.name:
            self.name = f"{self.prefix}_{self.joint}"
        self.duration_s = self.pause_s + self.repeats * 2 * self.hold_s

    def stepped(self, t_s: float) -> bool:
        """The joint is away from its base angle at motion time ``t_s``."""
        if t_s < self.pause_s:
            return False
        k = int((t_s - self.pause_s) // self.hold_s)
        return k % 2 == 0 and k < 2 * self.repeats


@dataclass
class StepTestMotion(HeldStepMotion):
    """Steps of ``step_deg`` of one joint from its base angle and back (thesis §4.1: one 45° step
    per joint; the step-test button flips the joint angle)."""

    step_deg: float = field(kw_only=True)

    def offset_rad(self, t_s: float) -> float:
        return math.radians(self.step_deg) if self.stepped(t_s) else 0.0

    def setpoints(self, t_s, base_pose_rad, joint_names):
        q = np.array(base_pose_rad, dtype=float)
        q[list(joint_names).index(self.joint)] += self.offset_rad(t_s)
        return q


@dataclass
class SignFlipMotion(HeldStepMotion):
    """The thesis's step-test button (§3.5.1): the joint's angle flips sign, e.g. 30° → −30° (a 60°
    step), is held, and flips back. ``base`` is the joint's angle in the base pose (absolute,
    rad); a joint at 0 does not move."""

    prefix: ClassVar[str] = "flip"

    def setpoints(self, t_s, base_pose_rad, joint_names):
        q = np.array(base_pose_rad, dtype=float)
        if self.stepped(t_s):
            i = list(joint_names).index(self.joint)
            q[i] = -q[i]
        return q


@dataclass
class DanceMotion(Motion):
    """A fast synthetic 'dance': every joint follows base + A_j sin(2π f_j t) (thesis §4.1 uses a
    fast dance animation for the animation error)."""

    amplitude_deg: Sequence[float]
    frequency_hz: Sequence[float]
    duration_s: float
    name: str = "dance"

    def setpoints(self, t_s, base_pose_rad, joint_names):
        a = np.radians(np.asarray(self.amplitude_deg, dtype=float))
        f = np.asarray(self.frequency_hz, dtype=float)
        return np.asarray(base_pose_rad, dtype=float) + a * np.sin(2 * math.pi * f * t_s)


@dataclass
class RecordedMotion(Motion):
    """A recorded motion: sample times and set-points (rad) per joint, linearly interpolated
    (``hold=True``: sample-and-hold, as a 60 Hz mocap stream would be)."""

    t_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    joints: Mapping[str, np.ndarray] = field(default_factory=dict)
    name: str = "recording"
    hold: bool = False

    def __post_init__(self) -> None:
        self.t_s = np.asarray(self.t_s, dtype=float)
        self.duration_s = float(self.t_s[-1] - self.t_s[0]) if len(self.t_s) else 0.0

    def setpoints(self, t_s, base_pose_rad, joint_names):
        q = np.array(base_pose_rad, dtype=float)
        tt = self.t_s[0] + t_s
        for i, jn in enumerate(joint_names):
            if jn in self.joints:
                v = np.asarray(self.joints[jn], dtype=float)
                if self.hold:
                    k = max(0, int(np.searchsorted(self.t_s, tt, side="right")) - 1)
                    q[i] = v[k]
                else:
                    q[i] = float(np.interp(tt, self.t_s, v))
        return q

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "t_s": self.t_s.tolist(),
                "joints_deg": {k: np.degrees(v).tolist() for k, v in self.joints.items()}}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "RecordedMotion":
        return cls(t_s=np.asarray(d["t_s"]), joints={k: np.radians(v) for k, v in d["joints_deg"].items()},
                   name=d.get("name", "recording"))

    @classmethod
    def load(cls, path: str | Path) -> "RecordedMotion":
        return cls.from_json(json.loads(Path(path).read_text()))


@dataclass
class AnimatorControl:
    """Plays a motion; ``time_stretch`` > 1 slows it down (motion time = t / stretch)."""

    motion: Motion
    time_stretch: float = 1.0

    def __post_init__(self) -> None:
        if not self.time_stretch > 0:
            raise ValueError("time_stretch must be > 0")

    @property
    def duration_s(self) -> float:
        return self.motion.duration_s * self.time_stretch

    def setpoints(self, t_s: float, base_pose_rad, joint_names) -> np.ndarray:
        return self.motion.setpoints(t_s / self.time_stretch, base_pose_rad, joint_names)
