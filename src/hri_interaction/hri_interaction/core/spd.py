"""Symmetric positive-definite (SPD) gain matrices (Chang 2026 §12.3, Lemma 12.1, table 12.3).

A 6x6 gain (K, D or M; twist order (ω, v), body frame) is parameterised by its Cholesky factor

    G = L Lᵀ,   L_ii = exp(l_i),   L_ij = a_k (i > j)

so every real parameter vector gives an SPD matrix (positive diagonal of L). Variants:

| variant  | free parameters per matrix | three matrices (K, D, M) |
|----------|----------------------------|--------------------------|
| diagonal | 6                          | 18                       |
| block    | 6 + 3 + 3 = 12             | 30 (K, D) + ...          |
| full     | 6 + 15 = 21                | 48 (K, D) + 6 ...        |

(table 12.3 counts the action a_t = [δξ(6), chol K, chol D]: 6+6+6, 6+12+12, 6+21+21.)
Convex blends of SPD matrices are SPD, which is how gains change at run time without a jump.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

import numpy as np

VARIANT_SIZES = {"diagonal": 6, "block": 12, "full": 21}


class GainError(ValueError):
    """A gain matrix is not symmetric positive (semi-)definite, not 6x6 or not finite
    (``cause = "gains_invalid"``), or outside the configured range (``"gains_out_of_range"``)."""

    def __init__(self, message: str, cause: str = "gains_invalid"):
        super().__init__(message)
        self.cause = cause


def _lower_indices(variant: str) -> list[tuple[int, int]]:
    if variant == "diagonal":
        return []
    if variant == "block":   # within the rotation block and within the translation block
        return [(i, j) for b in (0, 3) for i in range(b, b + 3) for j in range(b, i)]
    if variant == "full":
        return [(i, j) for i in range(6) for j in range(i)]
    raise GainError(f"unknown SPD variant {variant!r} (expected one of {sorted(VARIANT_SIZES)})")


def spd_from_cholesky(params: np.ndarray, variant: str = "full") -> np.ndarray:
    """G = L Lᵀ from ``[l_0..l_5, a_0..]``: L_ii = exp(l_i), strictly-lower entries a_k (row-major)."""
    p = np.asarray(params, dtype=float).ravel()
    idx = _lower_indices(variant)
    if p.size != 6 + len(idx):
        raise GainError(f"{variant} Cholesky parameters need {6 + len(idx)} values, got {p.size}")
    if not np.all(np.isfinite(p)):
        raise GainError("Cholesky parameters must be finite")
    L = np.diag(np.exp(p[:6]))
    for k, (i, j) in enumerate(idx):
        L[i, j] = p[6 + k]
    return L @ L.T


def cholesky_params(G: np.ndarray, variant: str = "full") -> np.ndarray:
    """Inverse of :func:`spd_from_cholesky` (entries outside the variant's pattern must be 0)."""
    G = validate_spd(G)
    L = np.linalg.cholesky(G)
    idx = _lower_indices(variant)
    mask = np.zeros((6, 6), bool)
    for i, j in idx:
        mask[i, j] = True
    off = np.tril(L, -1)
    if np.any(np.abs(off[~mask]) > 1e-9 * max(1.0, np.abs(L).max())):
        raise GainError(f"matrix has entries outside the {variant} pattern")
    return np.r_[np.log(np.diag(L)), [L[i, j] for i, j in idx]]


def validate_spd(G, name: str = "gain", semidefinite: bool = False,
                 sym_tol: float = 1e-9) -> np.ndarray:
    """Return G as a symmetric float (6, 6) array or raise :class:`GainError` saying why."""
    G = np.asarray(G, dtype=float)
    if G.shape == (6,):
        G = np.diag(G)
    if G.shape != (6, 6):
        raise GainError(f"{name}: expected 6 diagonal values or a 6x6 matrix, got shape {G.shape}")
    if not np.all(np.isfinite(G)):
        raise GainError(f"{name}: not finite")
    scale = max(1.0, float(np.abs(G).max()))
    if np.abs(G - G.T).max() > sym_tol * scale:
        raise GainError(f"{name}: not symmetric (max |G - Gᵀ| = {np.abs(G - G.T).max():.3g})")
    G = 0.5 * (G + G.T)
    lam_min = float(np.linalg.eigvalsh(G)[0])
    if (lam_min < -1e-12 * scale) if semidefinite else (lam_min <= 0.0):
        kind = "positive semi-definite" if semidefinite else "positive definite"
        raise GainError(f"{name}: not {kind} (smallest eigenvalue {lam_min:.3g})")
    return G


def blend(G0: np.ndarray, G1: np.ndarray, alpha: float) -> np.ndarray:
    """Convex blend (1-α) G0 + α G1, α clipped to [0, 1]; SPD if both are."""
    a = min(max(float(alpha), 0.0), 1.0)
    return (1.0 - a) * G0 + a * G1


@dataclass(frozen=True)
class ImpedanceGainLimits:
    """``interaction.gain_limits``: allowed range of the diagonal entries of the impedance K and
    D, rotational block (ω, first three) and translational block (v, last three). With G SPD,
    |G_ij| <= sqrt(G_ii G_jj), so bounding the diagonal bounds every entry."""

    stiffness_rot: tuple      # (min, max) N·m/rad
    stiffness_trans: tuple    # (min, max) N/m
    damping_rot: tuple        # (min, max) N·m·s/rad
    damping_trans: tuple      # (min, max) N·s/m

    @classmethod
    def from_config(cls, section: Mapping) -> "ImpedanceGainLimits":
        def rng(key):
            lo, hi = (float(x) for x in section[key])
            if not (np.isfinite(lo) and np.isfinite(hi) and 0.0 < lo <= hi):
                raise GainError(f"interaction.gain_limits.{key} must be 0 < min <= max, got {[lo, hi]}")
            return (lo, hi)
        return cls(stiffness_rot=rng("stiffness_rot_nm_rad"), stiffness_trans=rng("stiffness_trans_n_m"),
                   damping_rot=rng("damping_rot_nms_rad"), damping_trans=rng("damping_trans_ns_m"))


_AXES = ("wx", "wy", "wz", "vx", "vy", "vz")


def validate_impedance_gains(K, D, limits: Optional[ImpedanceGainLimits]) -> tuple:
    """The one check of impedance gains from any source (config, topic, console):
    K and D symmetric positive definite (:func:`validate_spd`) and every diagonal entry inside
    ``limits`` (None: SPD only). Returns (K, D) as 6x6 arrays or raises :class:`GainError`
    with ``cause`` ``gains_invalid`` / ``gains_out_of_range`` and a sentence naming the axis."""
    K = validate_spd(K, "stiffness")
    D = validate_spd(D, "damping")
    if limits is not None:
        for name, G, rot, trans, unit in (
                ("stiffness", K, limits.stiffness_rot, limits.stiffness_trans, ("N·m/rad", "N/m")),
                ("damping", D, limits.damping_rot, limits.damping_trans, ("N·m·s/rad", "N·s/m"))):
            for i, g in enumerate(np.diag(G)):
                lo, hi = rot if i < 3 else trans
                if not lo <= g <= hi:
                    raise GainError(f"{name} {_AXES[i]} = {g:.6g} {unit[i >= 3]} outside [{lo:g}, {hi:g}]",
                                    cause="gains_out_of_range")
    return K, D
