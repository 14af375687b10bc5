"""AutoTuningService (Webel's thesis §3.2/§3.5.2): relay test per joint, every heuristic computed and
kept (``last_tuning_data``), the chosen one applied through the (acknowledging) storage; gains
restored when the test fails. Plus mirroring a tuning to the symmetric joint.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from .heuristics import HeuristicsParams, compute_all
from hri_core.pid import PIDGains, PIDParams
from .plant import JointPlant
from .posture import SafeRelayResult, SafeTuningParams, safe_relay_tune, tuning_posture
from .relay import RelayParams, RelayResult, relay_tune
from .services import PidConfigurationStorage

_log = logging.getLogger(__name__)

JointPlantFactory = Callable[[str, Mapping[str, PIDGains]], JointPlant]
#: ``reporter(phase, joint, fraction, detail)``: progress of a tuning (phases ``posture``, ``hold``,
#: ``identify``, ``relay``, ``restore``, ``done``, ``failed``); fraction of that joint's tuning.
Reporter = Callable[[str, str, float, str], None]
#: share of one joint's tuning each phase ends at (progress bar)
PHASE_END = {"posture": 0.05, "hold": 0.15, "identify": 0.35, "relay": 0.95, "restore": 1.0}


@dataclass
class TuningData:
    joint: str
    relay: RelayResult
    heuristics: dict[str, PIDGains] = field(default_factory=dict)
    applied: str | None = None
    safe: SafeRelayResult | None = None      # posture, identification and sizing of the relay

    @property
    def reason(self) -> str:
        """'' when tuned, else the one clear reason of the failure."""
        if self.relay.ok:
            return ""
        return (self.safe.detail if self.safe is not None and self.safe.detail else self.relay.reason)

    def to_json(self) -> dict[str, Any]:
        relay = self.safe.to_json() if self.safe is not None else self.relay.to_json()
        return {"joint": self.joint, "relay": relay, "applied": self.applied, "reason": self.reason,
                "heuristics": {k: g.to_dict() for k, g in self.heuristics.items()}}


class AutoTuningService:
    """``tune_single_joint(joint)`` / ``tune_all_joints()``; ``tuning_heuristic`` is applied."""

    def __init__(self, joint_plant: JointPlantFactory, storage: PidConfigurationStorage,
                 relay: RelayParams, heuristics: HeuristicsParams, tuning_heuristic: str,
                 base_pose_deg: Mapping[str, float], joint_order: Sequence[str] | None = None,
                 relay_amplitude: Mapping[str, float] | None = None, *,
                 safe: SafeTuningParams | None = None, pid_params: PIDParams | None = None,
                 collides: Callable[[Any], bool] | None = None, reporter: Reporter | None = None):
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
        self.safe = safe                    # None: the plain relay of the thesis (start/target angles)
        self.pid_params = pid_params
        self.collides = collides
        self.reporter = reporter

    def _report(self, phase: str, joint: str, fraction: float, detail: str = "",
                progress: Callable[[float], None] | None = None) -> None:
        """``fraction`` of ``phase`` → the joint's overall fraction (PHASE_END)."""
        names = list(PHASE_END)
        start = PHASE_END[names[names.index(phase) - 1]] if phase in names and names.index(phase) > 0 else 0.0
        total = start + (PHASE_END.get(phase, 1.0) - start) * min(max(fraction, 0.0), 1.0)
        if phase in ("done", "failed"):
            total = 1.0
        # a bar only moves forward (a repeated relay restarts its phase)
        if phase == "posture" and fraction == 0.0:
            self._progress_at = 0.0
        total = max(total, getattr(self, "_progress_at", 0.0))
        self._progress_at = total
        if progress is not None:
            progress(total)
        if self.reporter is not None:
            self.reporter(phase, joint, total, detail)

    def tune_single_joint(self, joint: str, progress: Callable[[float], None] | None = None) -> TuningData:
        if self.safe is not None:
            return self._tune_safe(joint, progress)
        old = self.storage.local[joint]
        holds = dict(self.storage.local)
        jp = self.joint_plant(joint, holds)
        base = self.base_pose_deg[joint]
        rp = replace(self.relay, start_angle_deg=base + self.relay.start_angle_deg,
                     target_angle_deg=base + self.relay.target_angle_deg,
                     amplitude=self.relay_amplitude.get(joint, self.relay.amplitude))
        data = self._conclude(TuningData(joint, relay_tune(jp, rp, progress)), old)
        if not data.relay.ok:
            _log.warning("tuning %s failed (%s); gains restored", joint, data.relay.reason)
        return data

    def _conclude(self, data: TuningData, old) -> TuningData:
        """A passed relay: every heuristic's gains, the chosen one applied (``old`` back when the
        robot does not acknowledge it); a failed relay: ``old`` back. Kept as the joint's last
        tuning data."""
        res = data.relay
        if res.ok:
            data.heuristics = compute_all(res.ku, res.tu_s, self.heuristics)
            if self.storage.apply(data.joint, data.heuristics[self.tuning_heuristic]):
                data.applied = self.tuning_heuristic
            else:
                self.storage.apply(data.joint, old)
        else:
            self.storage.apply(data.joint, old)
        self.last_tuning_data = data
        self.history[data.joint] = data
        return data

    def _tune_safe(self, joint: str, progress: Callable[[float], None] | None) -> TuningData:
        """Posture → hold → identification → sized relay (:mod:`.posture`); gains and posture
        restored on any failure (and the posture after success too)."""
        old = self.storage.local[joint]
        jp = self.joint_plant(joint, dict(self.storage.local))
        names = list(self.storage.joints)
        base = [math.radians(self.base_pose_deg[j]) for j in names]
        idx = names.index(joint)
        self._report("posture", joint, 0.0, "choosing a safe tuning posture", progress)
        posture, why = tuning_posture(base, idx, jp.q_min_rad, jp.q_max_rad, self.safe, self.collides)
        if posture is None:
            safe = SafeRelayResult(RelayResult(ok=False, reason="no_posture"), detail=why)
        else:
            self._report("posture", joint, 0.5, f"moving to {math.degrees(posture[idx]):.1f}°", progress)
            try:
                jp.reset(float(posture[idx]))
            except Exception as exc:          # a live robot that does not reach the posture
                safe = SafeRelayResult(RelayResult(ok=False, reason="posture_failed"), math.degrees(posture[idx]),
                                       detail=str(exc))
            else:
                self._report("posture", joint, 1.0, "", progress)
                safe = safe_relay_tune(jp, float(posture[idx]), old, self.relay, self.safe, self.pid_params,
                                       lambda ph, f: self._report(ph, joint, f, "", progress),
                                       d0_max=self.relay_amplitude.get(joint))
        res = safe.relay
        data = TuningData(joint, res, safe=safe)
        # back to the base pose first, with the joint's previous (known) gains – a posture is
        # never restored with gains no step test has seen yet
        self._report("restore", joint, 0.0, "back to the base pose", progress)
        try:
            jp.reset(base[idx])
        except Exception as exc:
            _log.error("restoring the posture of %s failed: %s", joint, exc)
            if res.ok:
                res.ok, res.reason = False, "restore_failed"
                data.safe.detail = f"the posture was not restored: {exc}"
        if not res.ok:
            _log.info("tuning %s failed: %s; gains and posture restored", joint, data.reason)
        self._conclude(data, old)
        self._report("done" if res.ok else "failed", joint, 1.0, data.reason, progress)
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
