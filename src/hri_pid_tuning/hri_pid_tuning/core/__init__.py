"""Pure logic: no middleware imports, injected clock."""

from hri_core.pid import PID, PIDGains, PIDParams, PIDTerms

__all__ = ["PID", "PIDGains", "PIDParams", "PIDTerms"]
