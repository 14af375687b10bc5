"""Torque controllers (ITorqueController of Chang 2026 table 12.4): joint state, reference, K, D → τ.

Lie-group PD impedance (Chang 2026 Eq 12.1–12.2), twist order (ω, v), body frame of the end effector:

    e  = Log(T_d⁻¹ T)^∨                          (pose error, body frame)
    ė  = V_b − Ad_{T⁻¹ T_d} V_d                  (body twist error; V_d = reference body twist)
    F  = −K e − D ė                              (body wrench)
    τ  = J_bᵀ F + g(q)                           (g: gravity (+ Coriolis) feed-forward, ADDED)

The gravity sign is pinned by the MuJoCo hold test (+qfrc_bias; the opposite sign sags ~cm).
No inverse of J_b or of Λ = (J_b M⁻¹ J_bᵀ)⁻¹ is formed, so a singular arm is reported by the
caller (σ_min(J_b) < threshold), never divided through.

Classical Cartesian impedance (Hogan, as compared in Chang 2026; without inertia shaping), world frame at the
end-effector point:  τ = J_wᵀ [K (x_d − x) + D (ẋ_d − ẋ)] + g,  orientation error = Log(R_d Rᵀ)
(space-frame rotation vector), J_w = [J_ω; J_v] the world-aligned geometric Jacobian.

Both laws run in the C++ tick (``InteractionTick``, cpp/include/hri_core/interaction.hpp); their
Python form is the test oracle (tests/interaction/oracle/impedance.py).
"""
from __future__ import annotations

from hri_interaction.core.spd import SpdGain, SpdGains
from hri_interaction.parameters_gen import InteractionImpedanceParams


_CXX: list = []


def cxx_kernels():
    """``hri_core._hri_core.interaction`` (the C++ hot path of this package) or None if the
    installed core was built without it."""
    if not _CXX:
        try:
            from hri_core._hri_core import interaction as cx
            _CXX.append(cx if hasattr(cx, "lie_impedance_torque") else None)
        except ImportError:
            _CXX.append(None)
    return _CXX[0]


class ImpedanceParams(SpdGains, InteractionImpedanceParams):
    """``interaction.impedance`` with its gain matrices ``stiffness`` K and ``damping`` D
    ((6, 6), SPD, body frame, (ω, v); ``*_full`` replaces ``*_diag``), checked SPD in
    ``from_config`` (GainError)."""

    stiffness = SpdGain("impedance stiffness")
    damping = SpdGain("impedance damping")

    @classmethod
    def make(cls, stiffness, damping) -> "ImpedanceParams":
        """From two matrices (or diagonals) instead of the config (tests, tools)."""
        return cls.from_gains(stiffness=stiffness, damping=damping)
