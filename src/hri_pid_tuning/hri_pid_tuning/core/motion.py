"""Motions the test runner plays (Webel's thesis §3.2 AnimatorControl, §3.5.1 step tests).

A :class:`Motion` maps motion time (s) to a set-point per joint (rad; joints it does not move are
held at the base pose). :class:`AnimatorControl` plays a motion with a time-stretch factor:
motion time = plant time / ``time_stretch`` (thesis ``TimeStretchFactor``: > 1 slows the motion
down for a slow simulation).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np


class Motion:
    name: str = "motion"
    duration_s: float = 0.0

    def setpoints(self, t_s: float, base_pose_rad: np.ndarray, joint_names: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def start_pose(self, base_pose_rad: np.ndarray, joint_names: Sequence[str]) -> np.ndarray:
        """The pose the robot rests in when the motion starts (the test environment's reset)."""
        return np.asarray(base_pose_rad, dtype=float)


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
    step), is held, and flips back. The joint starts at rest at ``angle_rad`` (absolute; None: its
    angle in the base pose – a joint at 0 does not move); the others stay at the base pose."""

    angle_rad: float | None = field(default=None, kw_only=True)
    prefix: ClassVar[str] = "flip"

    def angle(self, base_pose_rad, joint_names) -> float:
        i = list(joint_names).index(self.joint)
        return float(base_pose_rad[i]) if self.angle_rad is None else float(self.angle_rad)

    def start_pose(self, base_pose_rad, joint_names):
        q = np.array(base_pose_rad, dtype=float)
        q[list(joint_names).index(self.joint)] = self.angle(base_pose_rad, joint_names)
        return q

    def setpoints(self, t_s, base_pose_rad, joint_names):
        q = self.start_pose(base_pose_rad, joint_names)
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
        """ValueError (one sentence) unless ``d`` is ``{name, t_s: [s, increasing], joints_deg:
        {joint: [deg, one per t_s]}}`` with finite numbers and at least two samples."""
        try:
            t = np.asarray(d["t_s"], dtype=float)
            joints = {str(k): np.radians(np.asarray(v, dtype=float)) for k, v in d["joints_deg"].items()}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not a recorded motion ({{name, t_s, joints_deg}}): {exc!r}") from None
        if t.ndim != 1 or len(t) < 2 or not np.all(np.isfinite(t)) or not np.all(np.diff(t) > 0):
            raise ValueError("t_s must hold at least two finite, increasing times")
        if not joints:
            raise ValueError("joints_deg names no joint")
        for k, v in joints.items():
            if v.shape != t.shape or not np.all(np.isfinite(v)):
                raise ValueError(f"joints_deg[{k!r}] must hold {len(t)} finite angles")
        return cls(t_s=t, joints=joints, name=str(d.get("name") or "recording"))

    @classmethod
    def load(cls, path: str | Path) -> "RecordedMotion":
        """The motion file ``path``, named after the file (OSError; ValueError: not a motion)."""
        try:
            m = cls.from_json(json.loads(Path(path).read_text()))
        except ValueError as exc:           # json.JSONDecodeError included
            raise ValueError(f"{Path(path).name} is not a motion file: {exc}") from None
        m.name = Path(path).stem
        return m

    @classmethod
    def from_step_data(cls, name: str, step_data: Mapping[str, Mapping[str, Any]]) -> "RecordedMotion":
        """The set-points of a recorded test (the thesis's PidStepData of every joint of one
        motion: ``{joint: {data: [{timestamp, entry: {desired, ...}}]}}``, degrees) as a motion."""
        t, joints = None, {}
        for j, sd in step_data.items():
            rows = sd.get("data") or []
            tj = [float(r["timestamp"]) for r in rows]
            if t is None:
                t = tj
            elif tj != t:
                raise ValueError(f"{j}: its samples are not at the motion's sample times")
            joints[j] = [float(r["entry"]["desired"]) for r in rows]
        return cls.from_samples(name, t or [], joints)

    @classmethod
    def from_samples(cls, name: str, t_s: Sequence[float], joints_deg: Mapping[str, Sequence[float]]) -> "RecordedMotion":
        """A motion of sampled set-points (s, deg); samples sharing a time keep the last one
        (ValueError: fewer than two times, non-finite values)."""
        t = np.asarray(t_s, dtype=float)
        keep = np.append(np.diff(t) > 0, True) if len(t) else np.zeros(0, bool)
        return cls.from_json({"name": name, "t_s": t[keep].tolist(),
                              "joints_deg": {j: np.asarray(v, dtype=float)[keep].tolist() for j, v in joints_deg.items()}})

    def limit_violation(self, joint_names: Sequence[str], q_min: Sequence[float],
                        q_max: Sequence[float]) -> str | None:
        """Why the motion cannot be played on a robot with these joints and limits (rad), or None."""
        unknown = [j for j in self.joints if j not in joint_names]
        if unknown:
            return f"motion {self.name!r} moves {unknown}, not joints of this robot {list(joint_names)}"
        for j, v in self.joints.items():
            i = list(joint_names).index(j)
            lo, hi = float(np.min(v)), float(np.max(v))
            if lo < q_min[i] or hi > q_max[i]:
                return (f"motion {self.name!r}: {j} spans {math.degrees(lo):.1f}..{math.degrees(hi):.1f} deg, "
                        f"outside its limits {math.degrees(q_min[i]):.1f}..{math.degrees(q_max[i]):.1f} deg")
        return None


#: a motion's name in a :class:`MotionLibrary` (its file ``<name>.json``)
MOTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class MotionLibrary:
    """The recorded motions a robot can replay: ``<folder>/<name>.json`` (:class:`RecordedMotion`
    JSON). Names are checked (:data:`MOTION_NAME`), so a request never reaches another path."""

    def __init__(self, folder: str | Path, listed_max: int):
        self.folder = Path(folder)
        self.listed_max = int(listed_max)

    def check_name(self, name: str) -> str | None:
        """Why ``name`` is not a motion name, or None."""
        if not isinstance(name, str) or not MOTION_NAME.fullmatch(name) or name.endswith(".json"):
            return (f"bad motion name {name!r}: 1-64 letters, digits, '_', '-', '.', starting with a "
                    "letter or digit, without .json")
        return None

    def names(self) -> list[str]:
        """The motions in the folder (sorted, at most ``listed_max``)."""
        if not self.folder.is_dir():
            return []
        found = sorted(p.stem for p in self.folder.glob("*.json") if MOTION_NAME.fullmatch(p.stem))
        return found[:self.listed_max]

    def path(self, name: str) -> Path:
        return self.folder / f"{name}.json"

    def load(self, name: str) -> RecordedMotion:
        """FileNotFoundError (unknown name) or ValueError (not a motion)."""
        p = self.path(name)
        if not p.is_file():
            raise FileNotFoundError(f"unknown motion {name!r}; known: {', '.join(self.names()) or 'none'}")
        return RecordedMotion.load(p)

    def save(self, motion: RecordedMotion) -> Path:
        p = self.path(motion.name)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(motion.to_json()))
        return p


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
