"""Safety checker (compiled; semantics in cpp/include/hri_core/safety.hpp).

    limits = SafetyLimits(**hri_runtime.config.arm_limits(cfg).as_kwargs())   # the config's limits
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

from ._hri_core.safety import FLAGS, SafetyChecker, SafetyLimits, SafetyResult

__all__ = ["FLAGS", "SafetyChecker", "SafetyLimits", "SafetyResult"]
