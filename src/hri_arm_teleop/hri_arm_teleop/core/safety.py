"""Safety hooks of the teleop chain, on ``hri_core.safety.SafetyChecker`` (limits from config).

- ``workspace_clamp(p) -> (p_clamped, clamped)``: the clutch target's position is kept inside the
  configured Cartesian box (``safety.workspace_min_m/max_m``, base frame). A clamp is flagged and
  counted by the clutch (the target slides along the boundary; it never leaves the box).
- ``joint_guard(cmd, prev) -> (cmd | None, cause)``: every joint command before it reaches the
  robot. Non-finite values or positions outside the joint limits -> rejected (None: the pipeline
  holds the previous command and counts the cause). A joint speed (q_des - q_prev)/dt above the
  limit -> the checker's clamped command is sent and the flag counted (a rate limit, not a
  rejection: rejecting would freeze the arm and make the next step larger still).
"""
from __future__ import annotations

import logging
from typing import Callable, Optional

import numpy as np

from hri_arm_teleop.core.types import JointCommand

log = logging.getLogger(__name__)


def make_safety_hooks(cfg: dict, clock: Callable[[], float]):
    from hri_runtime.config import arm_limits

    limits = arm_limits(cfg)
    checker = _make_checker(limits)
    lo, hi = np.asarray(limits.workspace_min, float), np.asarray(limits.workspace_max, float)
    q_min, q_max = np.asarray(limits.q_min, float), np.asarray(limits.q_max, float)
    v_max = np.asarray(limits.v_max, float)

    def workspace_clamp(p: np.ndarray):
        if checker is not None:
            return checker.clamp_workspace(p)
        q = np.clip(p, lo, hi)
        return q, bool(np.any(q != p))

    def joint_guard(cmd: JointCommand, prev: Optional[JointCommand]):
        q = np.asarray(cmd.q_des, float)
        if not np.all(np.isfinite(q)):
            return None, "non_finite"
        if np.any(q < q_min - 1e-9) or np.any(q > q_max + 1e-9):
            return None, "joint_position_limit"
        if prev is not None:
            dt = cmd.stamp - prev.stamp
            if dt > 0:
                step = q - np.asarray(prev.q_des, float)
                lim = v_max * dt
                if np.any(np.abs(step) > lim):
                    q = np.asarray(prev.q_des, float) + np.clip(step, -lim, lim)
                    return JointCommand(cmd.stamp, q, cmd.dq_des, cmd.tau_ff, cmd.source_stamp), "ok_velocity_clamped"
        return cmd, "ok"

    return workspace_clamp, joint_guard


def _make_checker(limits):
    """The ``hri_core.safety.SafetyChecker`` adapter (an object with ``clamp_workspace(p) ->
    (p, clamped)``). Not wired yet: the checker's Python API did not exist when this was written
    (issue 4). Until it is, both hooks apply the same config limits (``arm_limits``) directly."""
    try:
        from hri_core import safety  # noqa: F401
    except ImportError:
        log.info("hri_core.safety not importable: safety hooks use the config limits directly")
        return None
    log.info("hri_core.safety adapter not wired yet: safety hooks use the config limits directly")
    return None
