"""Safety checker (compiled; semantics in cpp/include/hri_core/safety.hpp).

    limits = SafetyLimits(**arm_limits(cfg).as_kwargs())   # the config's limits
    checker = SafetyChecker(limits)
    checker.reset(q=q_measured)                       # seed the history with the robot's state
    r = checker.check(q_cmd, dt_s=0.001, now_s=t, stamp_s=t_cmd, tau=tau_cmd, ee_pos=p)
    if not r.ok: freeze / hold, log r.violations, r.worst_check, r.worst_ratio   (never send silently)

Checks: joint position, velocity, acceleration (over one command or a horizon (H, n)), joint
velocity commands, torque and torque rate, Cartesian workspace box, end-effector speed, NaN/Inf,
timestamp staleness.  The result carries the clamped command (or the hold command when rejected),
per-check flags and counts, and the worst violation.  No heap allocation in the C++ hot path.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._hri_core.safety import FLAGS, SafetyChecker, SafetyLimits, SafetyResult

__all__ = ["FLAGS", "ArmLimits", "SafetyChecker", "SafetyLimits", "SafetyResult", "arm_limits"]


@dataclass(frozen=True)
class ArmLimits:
    """Joint and Cartesian limits of an arm in SI units (converted from the config's degrees)."""

    joint_names: tuple[str, ...]
    q_min: Any  # rad
    q_max: Any  # rad
    v_max: Any  # rad/s
    a_max: Any  # rad/s^2
    tau_max: Any  # N·m
    tau_rate_max: Any  # N·m/s
    workspace_min: Any  # m, (3,)
    workspace_max: Any  # m, (3,)
    ee_speed_max: float  # m/s
    stale_after_s: float  # s

    def as_kwargs(self) -> dict:
        """Keyword arguments for ``hri_core.safety.SafetyLimits``."""
        return {k: getattr(self, k) for k in ("q_min", "q_max", "v_max", "a_max", "tau_max",
                                               "tau_rate_max", "workspace_min", "workspace_max",
                                               "ee_speed_max", "stale_after_s")}


def arm_limits(cfg: dict) -> ArmLimits:
    """The arm's limits from a loaded robot config (``joints`` and ``safety`` sections)."""
    import numpy as np

    joints, safety = cfg["joints"], cfg["safety"]
    if cfg["robot"]["kind"] != "arm":
        raise ValueError(f"<merged>: robot.kind: {cfg['robot']['kind']!r} – expected 'arm' for arm limits")
    return ArmLimits(
        joint_names=tuple(joints["names"]),
        q_min=np.radians(joints["position_min_deg"]),
        q_max=np.radians(joints["position_max_deg"]),
        v_max=np.radians(joints["velocity_max_deg_s"]),
        a_max=np.radians(joints["acceleration_max_deg_s2"]),
        tau_max=np.asarray(joints["torque_max_nm"], dtype=float),
        tau_rate_max=np.asarray(joints["torque_rate_max_nm_s"], dtype=float),
        workspace_min=np.asarray(safety["workspace_min_m"], dtype=float),
        workspace_max=np.asarray(safety["workspace_max_m"], dtype=float),
        ee_speed_max=float(safety["ee_speed_max_m_s"]),
        stale_after_s=float(safety["command_stale_after_s"]),
    )
