"""Admittance controllers (IAdmittanceController of Chang 2026 table 12.4): wrench, Δt → T_mod.

Lie-group admittance on SE(3) (Chang 2026 appendix H, Lemma 12.3), twist order (ω, v), body frame
of the desired pose T_d:

    λ = Log(T_disp)^∨ ∈ ℝ⁶                                        (H.1)
    M_λ λ̈ + D_λ λ̇ + K λ = γ                                      (H.3)
    M_λ = J(λ)ᵀ M J(λ)
    D_λ = J(λ)ᵀ (D J(λ) + M J̇(λ, λ̇))                            (H.4)
    γ   = J(λ)ᵀ F_body,       J = dexp_λ = left Jacobian of exp on SE(3)

per call with its own Δt (semi-implicit Euler in the algebra, H.5–H.7):

    λ̈_k = M_λ⁻¹ (γ − D_λ λ̇_k − K λ_k);  λ̇_{k+1} = λ̇_k + Δt λ̈_k;  λ_{k+1} = λ_k + Δt λ̇_{k+1}
    T_mod = T_d · exp(λ^)                                           (H.8)

K is not transformed by dexp (Kim et al. Eq 58c). J̇ = d/dt dexp_λ is the directional derivative
of the left Jacobian along λ̇: ``hri_core.se3.left_jacobian_dot`` (analytic, C++), or, if the core
lacks it, a central difference of step h: (J(λ + hλ̇) − J(λ − hλ̇)) / 2h.
The naive group update of the dissertation's Eq 6.3 (T_disp ← T_disp exp(λ̇Δt)) is *not* used.

Energy of the undriven admittance (non-increasing for SPD M, D, SPSD K in continuous time):

    H = ½ (J λ̇)ᵀ M (J λ̇) + ½ λᵀ K λ,    Ḣ = −(J λ̇)ᵀ D (J λ̇) + (J λ̇)ᵀ F_body.

Wrench frames (H.2): the dissertation writes F_body = Ad_{T_d}^{-ᵀ} F_world; power invariance
(V_sᵀF_s = V_bᵀF_b with V_s = Ad_{T_sd} V_b) gives F_b = Ad_{T_sd}ᵀ F_s, which is what
the oracle's ``body_wrench_from_world`` implements (the dissertation's form holds only if T_d means T_ds).

The classical Cartesian admittance (Ott et al.; Chang 2026 ch. 6 Eq 6.1) integrates M ẍ + D ẋ + K x = F
per component on ℝ³ × so(3) with the split pose T_mod = (R_d exp(x_ω), p_d + R_d x_v).

Both run in the C++ tick (``InteractionTick``, cpp/include/hri_core/interaction.hpp); their Python
form is the test oracle (tests/interaction/oracle/admittance.py).
"""
from __future__ import annotations

from typing import Optional

from hri_interaction.core.spd import SpdGain, SpdGains
from hri_interaction.parameters_gen import InteractionAdmittanceParams


class AdmittanceParams(SpdGains, InteractionAdmittanceParams):
    """``interaction.admittance`` with its matrices ``mass`` M (SPD), ``damping`` D (SPD) and
    ``stiffness`` K (SPSD), (6, 6), twist order (ω, v) (``*_full`` replaces ``*_diag``), checked in
    ``from_config`` (GainError)."""

    mass = SpdGain("admittance mass")
    damping = SpdGain("admittance damping")
    stiffness = SpdGain("admittance stiffness", semidefinite=True)

    @classmethod
    def make(cls, mass, damping, stiffness, dexp_dot_step_s: Optional[float] = None) -> "AdmittanceParams":
        """From three matrices (or diagonals) instead of the config (tests, the table 13.9 run);
        ``dexp_dot_step_s`` None: the declared default."""
        step = {} if dexp_dot_step_s is None else {"dexp_dot_step_s": float(dexp_dot_step_s)}
        return cls.from_gains(mass=mass, damping=damping, stiffness=stiffness, **step)
