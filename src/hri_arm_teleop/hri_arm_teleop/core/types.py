"""Plain data passed between the tasks of the multi-rate loop (the FR3 keyboard teleop design's internal types)."""
from __future__ import annotations

import enum
import threading
from dataclasses import dataclass
from typing import Generic, Optional, TypeVar

import numpy as np


class RefMode(enum.Enum):
    TRACK = "TRACK"
    HOLD = "HOLD"


@dataclass(frozen=True)
class CartesianTarget:
    """A pose target for one frame: ``in_frame_T_link`` as a 4x4 transform."""

    T: np.ndarray
    link_name: str = "attachment_site"
    in_frame: str = "world"
    weight: float = 1.0
    pos_tol_m: float = 0.002
    rot_tol_rad: float = 0.02


@dataclass(frozen=True)
class TaskSpaceReference:
    """A reference valid from ``stamp`` for ``horizon_s`` seconds (simulated or wall clock)."""

    stamp: float
    horizon_s: float
    mode: RefMode
    target: Optional[CartesianTarget] = None
    source_stamp: Optional[float] = None   # stamp of the input that produced it (latency)

    def expired(self, now: float) -> bool:
        return now - self.stamp > self.horizon_s


@dataclass(frozen=True)
class RobotState:
    stamp: float
    q: np.ndarray
    dq: np.ndarray
    base_T_ee: Optional[np.ndarray] = None


@dataclass(frozen=True)
class JointCommand:
    stamp: float
    q_des: np.ndarray
    dq_des: Optional[np.ndarray] = None
    tau_ff: Optional[np.ndarray] = None
    source_stamp: Optional[float] = None   # stamp of the input that produced it (latency)


@dataclass(frozen=True)
class PoseCommand:
    """Cartesian output: the EE pose reference (base frame) for the interaction loop."""
    stamp: float
    T: np.ndarray
    source_stamp: Optional[float] = None   # stamp of the input that produced it (latency)


T = TypeVar("T")


class LatestValue(Generic[T]):
    """Thread-safe latest-value hand-off: a writer replaces, readers take the newest (no queue).

    ``put`` stores (value, stamp) under a lock; ``get`` returns the pair; ``take`` returns it only
    if it is newer than what this reader saw last (one reader per instance)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._value: Optional[T] = None
        self._stamp: Optional[float] = None
        self._version = 0
        self._seen = 0

    def put(self, value: T, stamp: float) -> None:
        with self._lock:
            self._value, self._stamp = value, float(stamp)
            self._version += 1

    def get(self) -> tuple[Optional[T], Optional[float]]:
        with self._lock:
            return self._value, self._stamp

    def take(self) -> tuple[Optional[T], Optional[float]]:
        with self._lock:
            if self._version == self._seen:
                return None, None
            self._seen = self._version
            return self._value, self._stamp

    def clear(self) -> None:
        with self._lock:
            self._value, self._stamp = None, None
            self._version += 1
