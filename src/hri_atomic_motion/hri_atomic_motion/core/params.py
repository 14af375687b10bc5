"""Typed parameters of the atomic controller, read from the ``atomic`` config section."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping


def _pick(cls, section: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: (tuple(v) if isinstance(v, list) else v) for k, v in section.items() if k in names}


@dataclass(frozen=True)
class LegParams:
    """Leg: encoder in ticks (forward = extension = increasing ticks), motor command in RPM."""

    encoder_ticks_per_rev: int
    neutral_ticks: int
    max_extension_ticks: int
    encoder_min_ticks: int
    encoder_max_ticks: int
    tolerance_ticks: int
    settle_ticks: int
    rpm_forward: float
    rpm_backward: float
    rpm_neutral: float
    scale_forward: float
    scale_backward: float
    push_duration_s: float
    push_fractions: tuple[float, float, float]
    extension_reached_ticks: int
    hold_kp: float
    hold_ki: float
    hold_kd: float
    hold_output_max_rpm: float
    hold_derivative_filter_n: float
    home_timeout_s: float
    stall_time_s: float
    stall_min_rpm: float
    stall_min_ticks: int

    def __post_init__(self) -> None:
        if abs(sum(self.push_fractions) - 1.0) > 1e-9:
            raise ValueError(f"push_fractions must sum to 1, got {self.push_fractions}")
        if self.settle_ticks > self.tolerance_ticks:
            raise ValueError("settle_ticks must be <= tolerance_ticks")

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> "LegParams":
        return cls(**_pick(cls, section))


@dataclass(frozen=True)
class BaseParams:
    nudge_phases_s: tuple[float, float, float]
    nudge_linear_m_s: float
    coordination_s: float
    move_s: float
    move_linear_m_s: float
    move_angular_rad_s: float

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> "BaseParams":
        return cls(**_pick(cls, section))


@dataclass(frozen=True)
class AtomicParams:
    control_period_s: float
    queue_depth: int
    queue_policy: str
    pulse_rearm_s: float
    leg: LegParams
    base: BaseParams

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> "AtomicParams":
        """``section`` = ``cfg['atomic']``."""
        return cls(control_period_s=float(section["control_period_s"]),
                   queue_depth=int(section["queue_depth"]),
                   queue_policy=str(section["queue_policy"]),
                   pulse_rearm_s=float(section["pulse_rearm_s"]),
                   leg=LegParams.from_config(section["leg"]),
                   base=BaseParams.from_config(section["base"]))
