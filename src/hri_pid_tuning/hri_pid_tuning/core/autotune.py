"""AutoTuningService (seed 004 §3.2/§3.5.2): relay test per joint, every heuristic computed and
kept (``last_tuning_data``), the chosen one applied through the (acknowledging) storage; gains
restored when the test fails. Plus mirroring a tuning to the symmetric joint.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from .heuristics import HeuristicsParams, compute_all
from .pid import PIDGains
from .plant import JointPlant
from .relay import RelayParams, RelayResult, relay_tune
from .services import PidConfigurationStorage

_log = logging.getLogger(__name__)

JointPlantFactory = Callable[[str, Mapping[str, PIDGains]], JointPlant]


@dataclass
class TuningData:
    joint: str
    relay: RelayResult
    heuristics: dict[str, PIDGains] = field(default_factory=dict)
    applied: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"joint": self.joint, "relay": self.relay.to_json(), "applied": self.applied,
                "heuristics": {k: g.to_dict() for k, g in self.heuristics.items()}}


class AutoTuningService:
    """``tune_single_joint(joint)`` / ``tune_all_joints()``; ``tuning_heuristic`` is applied."""

    def __init__(self, joint_plant: JointPlantFactory, storage: PidConfigurationStorage,
                 relay: RelayParams, heuristics: HeuristicsParams, tuning_heuristic: str,
                 base_pose_deg: Mapping[str, float], joint_order: Sequence[str] | None = None,
                 relay_amplitude: Mapping[str, float] | None = None):
        if tuning_heuristic not in heuristics.names:
            raise ValueError(f"unknown heuristic {tuning_heuristic!r}; known: {heuristics.names}")
        self.joint_plant = joint_plant
        self.storage = storage
        self.relay = relay
        self.heuristics = heuristics
        self.tuning_heuristic = tuning_heuristic
        self.base_pose_deg = dict(base_pose_deg)
        self.joint_order = list(joint_order or storage.joints)
        self.relay_amplitude = dict(relay_amplitude or {})   # joint -> d (N·m), overrides relay.amplitude
        self.last_tuning_data: TuningData | None = None
        self.history: dict[str, TuningData] = {}

    def tune_single_joint(self, joint: str, progress: Callable[[float], None] | None = None) -> TuningData:
        old = self.storage.local[joint]
        holds = dict(self.storage.local)
        jp = self.joint_plant(joint, holds)
        base = self.base_pose_deg[joint]
        rp = replace(self.relay, start_angle_deg=base + self.relay.start_angle_deg,
                     target_angle_deg=base + self.relay.target_angle_deg,
                     amplitude=self.relay_amplitude.get(joint, self.relay.amplitude))
        res = relay_tune(jp, rp, progress)
        data = TuningData(joint, res)
        if res.ok:
            data.heuristics = compute_all(res.ku, res.tu_s, self.heuristics)
            chosen = data.heuristics[self.tuning_heuristic]
            if self.storage.apply(joint, chosen):
                data.applied = self.tuning_heuristic
            else:
                self.storage.apply(joint, old)
        else:
            _log.warning("tuning %s failed (%s); gains restored", joint, res.reason)
            self.storage.apply(joint, old)
        self.last_tuning_data = data
        self.history[joint] = data
        return data

    def tune_all_joints(self, progress: Callable[[float], None] | None = None) -> dict[str, TuningData]:
        out = {}
        n = len(self.joint_order)
        for i, j in enumerate(self.joint_order):
            sub = (lambda f, i=i: progress((i + f) / n)) if progress else None
            out[j] = self.tune_single_joint(j, sub)
        return out

    def apply_heuristic(self, joint: str, name: str) -> bool:
        """Apply another heuristic of the last tuning of ``joint`` (thesis UI's apply buttons)."""
        data = self.history[joint]
        ok = self.storage.apply(joint, data.heuristics[name])
        if ok:
            data.applied = name
        return ok


def mirror_tuning(storage: PidConfigurationStorage, mirror_joints: Mapping[str, str],
                  joints: Sequence[str] | None = None) -> dict[str, bool]:
    """Copy each joint's gains to its symmetric joint (``mirror_joints``: joint → twin). A PID is
    odd-symmetric, so a mirrored axis (angles × −1) needs the same gains; only the relay bias
    and set-points change sign, which the gains do not carry."""
    out = {}
    for j in joints or list(mirror_joints):
        twin = mirror_joints.get(j)
        if twin is None or twin not in storage.local:
            continue
        out[twin] = storage.apply(twin, storage.local[j])
    return out
