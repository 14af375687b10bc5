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

import dataclasses
from typing import Mapping, Optional

import numpy as np
from hri_interaction.parameters_gen import InteractionGainLimitsParams


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


def gain_of(section, name: str):
    """The gain ``name`` of a params section: ``<name>_full`` (6x6) if given, else ``<name>_diag``."""
    full = getattr(section, f"{name}_full")
    return full if full is not None else getattr(section, f"{name}_diag")


def gain_entries(name: str, G) -> dict:
    """The config entries ``{<name>_diag, <name>_full}`` of a gain given as 6 diagonal values or
    a 6x6 matrix (what :func:`gain_of` reads back)."""
    G = np.asarray(G, float)
    if G.shape == (6, 6):
        return {f"{name}_diag": np.diag(G).tolist(), f"{name}_full": G.tolist()}
    return {f"{name}_diag": G.tolist(), f"{name}_full": None}


class SpdGain:
    """A 6x6 gain of a params section, read from ``<name>_full`` / ``<name>_diag``
    (:func:`gain_of`), checked by :func:`validate_spd` on first access and cached."""

    def __init__(self, label: str, semidefinite: bool = False):
        self.label, self.semidefinite = label, semidefinite

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        G = obj.__dict__.get(self.name)
        if G is None:
            G = validate_spd(gain_of(obj, self.name), self.label, semidefinite=self.semidefinite)
            obj.__dict__[self.name] = G
        return G


class SpdGains:
    """Mixin of a params type with :class:`SpdGain` fields: ``from_config`` checks every gain once
    (GainError naming it); :meth:`from_gains` builds the section from matrices or diagonals."""

    @classmethod
    def from_config(cls, section):
        p = super().from_config(section)
        for name in cls._gain_names():
            getattr(p, name)
        return p

    @classmethod
    def from_gains(cls, **values):
        """The section from gains given as 6 diagonal values or 6x6 matrices (by name) and the
        other keys (default: declared)."""
        base, entries = dataclasses.asdict(cls()), {}
        for name, v in values.items():
            entries.update(gain_entries(name, v) if name in cls._gain_names() else {name: v})
        return cls.from_config({**base, **entries})

    @classmethod
    def _gain_names(cls) -> list:
        return [n for k in cls.__mro__ for n, v in vars(k).items() if isinstance(v, SpdGain)]


def blend(G0: np.ndarray, G1: np.ndarray, alpha: float) -> np.ndarray:
    """Convex blend (1-α) G0 + α G1, α clipped to [0, 1]; SPD if both are."""
    a = min(max(float(alpha), 0.0), 1.0)
    return (1.0 - a) * G0 + a * G1


class ImpedanceGainLimits(InteractionGainLimitsParams):
    """``interaction.gain_limits``: allowed [min, max] of the diagonal entries of the impedance K
    and D, rotational block (ω, first three) and translational block (v, last three). With G SPD,
    |G_ij| <= sqrt(G_ii G_jj), so bounding the diagonal bounds every entry. The declaration checks
    two entries > 0; :meth:`from_config` adds min <= max."""

    @classmethod
    def from_config(cls, section: Mapping) -> "ImpedanceGainLimits":
        lim = super().from_config(section)
        for key in ("stiffness_rot_nm_rad", "stiffness_trans_n_m", "damping_rot_nms_rad", "damping_trans_ns_m"):
            lo, hi = getattr(lim, key)
            if not lo <= hi:
                raise GainError(f"interaction.gain_limits.{key} must be [min, max] with min <= max, got {[lo, hi]}")
        return lim


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
                ("stiffness", K, limits.stiffness_rot_nm_rad, limits.stiffness_trans_n_m, ("N·m/rad", "N/m")),
                ("damping", D, limits.damping_rot_nms_rad, limits.damping_trans_ns_m, ("N·m·s/rad", "N·s/m"))):
            for i, g in enumerate(np.diag(G)):
                lo, hi = rot if i < 3 else trans
                if not lo <= g <= hi:
                    raise GainError(f"{name} {_AXES[i]} = {g:.6g} {unit[i >= 3]} outside [{lo:g}, {hi:g}]",
                                    cause="gains_out_of_range")
    return K, D


def gains_from_vector(values) -> tuple:
    """(K diag, D diag) of a gain vector as on ``interaction.topics.gains``: 12 values, K diagonal
    then D diagonal (twist order (ω, v)); else :class:`GainError` (``gains_invalid``)."""
    g = np.asarray(values, dtype=float).ravel()
    if g.shape != (12,):
        raise GainError(f"expected 12 values (K diag, D diag), got {g.size}")
    return g[:6], g[6:]
