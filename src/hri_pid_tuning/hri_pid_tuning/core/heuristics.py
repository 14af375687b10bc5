"""Tuning heuristics from the relay result (Ku, Tu) – Webel's thesis §3.5.2.

Ziegler–Nichols-type rules (all seven of the thesis, with its code's exact coefficients, and
Tyreus–Luyben) are linear in Ku and Tu, parallel form::

    Kp = a·Ku,   Ki = b·Ku/Tu,   Kd = c·Ku·Tu

with ``(a, b, c)`` per rule from config ``pid_tuning.heuristics.rules``.

Model-based rules identify an integrating-plus-delay model ``G(s) = kv e^{−θs}/s`` from the
ultimate point (|G(jωu)| = 1/Ku, arg G(jωu) = −π, ωu = 2π/Tu)::

    kv = ωu/Ku,   θ = π/(2 ωu) = Tu/4

* SIMC (Skogestad 2003), integrating process, PI: ``Kc = 1/(kv (τc + θ))``, ``τI = 4 (τc + θ)``,
  τc = ``simc_tau_c_over_theta``·θ.
* AMIGO (Åström–Hägglund 2006), integrating process, PID (standard form):
  ``Kp = amigo_kp/(kv θ)``, ``Ti = amigo_ti·θ``, ``Td = amigo_td·θ`` (coefficients in
  ``pid_tuning.heuristics``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from hri_core.pid import PIDGains
from hri_pid_tuning.parameters_gen import PidTuningHeuristicsParams


DISPLAY_NAMES = {
    "classic": "Classic", "pessen_integral_rule": "Pessen Integral Rule",
    "some_overshoot": "Some Overshoot", "no_overshoot": "No Overshoot", "p_control": "P-Control",
    "pi_control": "PI-Control", "pd_control": "PD-Control", "tyreus_luyben": "Tyreus-Luyben",
    "simc": "SIMC", "amigo": "AMIGO",
}
THESIS_RULES = ("classic", "pessen_integral_rule", "some_overshoot", "no_overshoot", "p_control",
                "pi_control", "pd_control")


class HeuristicsParams(PidTuningHeuristicsParams):
    """``pid_tuning.heuristics`` (declared in parameters.yaml): ``rules`` = name → ``{kp, ki, kd}``
    multipliers of Ku, Ku/Tu, Ku·Tu."""

    @property
    def names(self) -> list[str]:
        return list(self.rules) + ["simc", "amigo"]


@dataclass(frozen=True)
class IntegratingDelayModel:
    kv: float        # effort⁻¹ · rad/s  (integrating gain)
    theta_s: float   # dead time

    @classmethod
    def from_ultimate(cls, ku: float, tu_s: float) -> "IntegratingDelayModel":
        wu = 2 * math.pi / tu_s
        return cls(kv=wu / ku, theta_s=math.pi / (2 * wu))


def zn_type(ku: float, tu_s: float, coeffs: tuple[float, float, float]) -> PIDGains:
    a, b, c = coeffs
    return PIDGains(kp=a * ku, ki=b * ku / tu_s, kd=c * ku * tu_s)


def simc(ku: float, tu_s: float, tau_c_over_theta: float) -> PIDGains:
    m = IntegratingDelayModel.from_ultimate(ku, tu_s)
    tc = tau_c_over_theta * m.theta_s
    kc = 1.0 / (m.kv * (tc + m.theta_s))
    return PIDGains.from_standard(kc, 4.0 * (tc + m.theta_s), 0.0)


def amigo(ku: float, tu_s: float, kp_c: float, ti_c: float, td_c: float) -> PIDGains:
    m = IntegratingDelayModel.from_ultimate(ku, tu_s)
    return PIDGains.from_standard(kp_c / (m.kv * m.theta_s), ti_c * m.theta_s, td_c * m.theta_s)


def compute_all(ku: float, tu_s: float, params: HeuristicsParams) -> dict[str, PIDGains]:
    """Every heuristic's gains (parallel form), in config order, then SIMC and AMIGO."""
    if not (ku > 0 and tu_s > 0 and math.isfinite(ku) and math.isfinite(tu_s)):
        raise ValueError(f"need finite Ku > 0 and Tu > 0, got Ku={ku}, Tu={tu_s}")
    out = {name: zn_type(ku, tu_s, (r["kp"], r["ki"], r["kd"])) for name, r in params.rules.items()}
    out["simc"] = simc(ku, tu_s, params.simc_tau_c_over_theta)
    out["amigo"] = amigo(ku, tu_s, params.amigo_kp, params.amigo_ti, params.amigo_td)
    return out
