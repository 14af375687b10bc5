"""Pure logic: no middleware imports, injected clock."""

from .pid import PID, PIDGains, PIDParams, PIDTerms

__all__ = ["PID", "PIDGains", "PIDParams", "PIDTerms"]
