"""The teleop chain's safety gate on ``hri_core.safety.SafetyChecker`` (limits from config).

Two checkers with the same limits (``hri_core.safety.arm_limits(cfg)``: the ``joints``
and ``safety`` sections):

- **target** (``check_target(p)``, every new EE target: the clutch target at the I/O rate, the
  planner's reference for absolute commands): ``ee_pos`` only, a pure check (no history):
  workspace box (``safety.workspace_min_m/max_m``, base frame) and NaN/Inf. The checker's output
  is the position clamped into the box.
- **command** (``check_command(q_des, ...)``, every joint command at the controller rate, the
  last thing before the robot): ``q`` and ``ee_pos = fk(q)[:3, 3]`` with ``dt_s`` = the time
  since the previous command, at least the controller period (in real time a late tick carries
  the motion of the time it was late; bunched catch-up ticks are judged over one period), and
  ``stamp_s`` = the reference's stamp: joint position, velocity and acceleration limits
  (against the previous *sent* command), workspace, end-effector speed, NaN/Inf and staleness
  (``safety.command_stale_after_s``). A non-finite or stale command is *rejected*: the checker's
  output is the hold command (the previous one).

Clamp AND flag: a flagged check returns the clamped command (``q`` sent instead of the request)
and the flag names; the pipeline then goes to SAFETY HOLD (see ``pipeline``), logs the reason
once and counts it per check (``flags``). Nothing here is silent.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from hri_core.safety import SafetyChecker, SafetyLimits
from hri_core.safety import arm_limits


@dataclass
class GateResult:
    q: Optional[np.ndarray]       # the command to send (clamped, or the hold command if rejected)
    ok: bool
    rejected: bool
    violations: tuple             # flag names, e.g. ("workspace",)
    detail: str                   # one human-readable line (worst check and ratio)


def _detail(r) -> str:
    if r.ok:
        return ""
    idx = f"[{r.worst_index}]" if r.worst_index >= 0 else ""
    return f"{','.join(r.violations)} (worst {r.worst_check}{idx} at {r.worst_ratio:.2f} x limit)"


class SafetyGate:
    def __init__(self, cfg: dict, fk: Callable[[np.ndarray], np.ndarray], control_period_s: float):
        self.limits = SafetyLimits(**arm_limits(cfg).as_kwargs())
        self.fk = fk
        self.dt_s = float(control_period_s)
        self.target_checker = SafetyChecker(self.limits)
        self.command_checker = SafetyChecker(self.limits)
        self.flags: dict[str, int] = {}       # per check: how many target/command checks raised it
        self._last_now: Optional[float] = None

    def _count(self, violations) -> None:
        for v in violations:
            self.flags[v] = self.flags.get(v, 0) + 1

    def reset(self, q_measured: np.ndarray) -> None:
        """Seed the command history with the robot's measured state (start, after a hold)."""
        q = np.asarray(q_measured, float)
        self._last_now = None
        self.command_checker.reset(q=q, ee_pos=np.asarray(self.fk(q))[:3, 3].copy())

    @property
    def has_history(self) -> bool:
        return bool(self.command_checker.has_history)

    def check_target(self, p: np.ndarray, now_s: float) -> GateResult:
        """A new EE target position (base frame): workspace and NaN. Pure (no history)."""
        p = np.asarray(p, float).reshape(3)
        r = self.target_checker.check(ee_pos=p, dt_s=self.dt_s, now_s=now_s, stamp_s=now_s, advance=0)
        self._count(r.violations)
        return GateResult(None if r.rejected else np.asarray(r.ee_pos), r.ok, r.rejected,
                          tuple(r.violations), _detail(r))

    def check_command(self, q_des: np.ndarray, now_s: float, stamp_s: float) -> GateResult:
        """A joint command before it reaches the robot; the result's ``q`` is what to send."""
        q = np.asarray(q_des, float)
        if np.all(np.isfinite(q)):
            ee = np.asarray(self.fk(q))[:3, 3].copy()
        else:
            ee = np.full(3, np.nan)
        dt = self.dt_s if self._last_now is None else max(self.dt_s, now_s - self._last_now)
        self._last_now = now_s
        r = self.command_checker.check(q=q, dt_s=dt, now_s=now_s, stamp_s=stamp_s, ee_pos=ee)
        self._count(r.violations)
        return GateResult(np.asarray(r.q), r.ok, r.rejected, tuple(r.violations), _detail(r))
