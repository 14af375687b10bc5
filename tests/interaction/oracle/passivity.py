"""The wrench preprocessors of :mod:`hri_interaction.core.passivity` in Python (test oracle):
pass-through, PO/PC, per-DoF TDPC, wave-variable damping and the delay compensator; the equations
are in that module's doc."""
from __future__ import annotations

import math
from collections import deque
from typing import Optional

import numpy as np

from hri_interaction.core.passivity import (FILTERS, PassivityParams, energy_deficit_dof_j,
                                            energy_deficit_j)

_EPS_V2 = 1e-18


class WrenchFilter:
    """Base: energy observer over the port (w_safe, λ̇)."""

    name = "baseline"

    def __init__(self, energy_floor_j: float = 0.0):
        self.energy_floor_j = float(energy_floor_j)
        self.reset()

    def reset(self) -> None:
        self.energy_j = 0.0
        self.dissipated_j = 0.0
        self.violations = 0
        self.min_energy_j = 0.0
        self.saturations = 0          # ticks where the PC's α hit max_damping
        self._short = False           # this tick: the cap left a deficit (set by _shape)

    @property
    def deficit_j(self) -> float:
        """Energy (J) the observer is below its floor now: max(0, E_floor − E); the energy a
        capped (or λ̇ = 0) tick could not dissipate, carried until it is."""
        return energy_deficit_j(self.energy_floor_j, self.energy_j)

    def _shape(self, w: np.ndarray, lam_dot: np.ndarray, dt: float) -> np.ndarray:
        return w

    def filter(self, w: np.ndarray, lam_dot: np.ndarray, dt: float) -> np.ndarray:
        self._short = False
        w_safe = self._shape(np.asarray(w, float), np.asarray(lam_dot, float), float(dt))
        self._account(w_safe, lam_dot, dt)
        return w_safe

    def _account(self, w_safe, lam_dot, dt) -> None:
        self.energy_j = self._energy_after(w_safe, lam_dot, dt)
        self.min_energy_j = min(self.min_energy_j, self.energy_j)
        if self.energy_j < self.energy_floor_j - 1e-12 or self._short:
            self.violations += 1

    def _energy_after(self, w_safe, lam_dot, dt) -> float:
        return self.energy_j + dt * float(np.dot(lam_dot, w_safe))


class Passthrough(WrenchFilter):
    name = "baseline"


class _CappedPC(WrenchFilter):
    """Base of the passivity controllers whose correction α is capped at ``max_damping``."""

    def __init__(self, energy_floor_j: float = 0.0, max_damping: float = math.inf):
        if not float(max_damping) > 0:
            raise ValueError(f"max_damping must be > 0, got {max_damping!r}")
        self.max_damping = float(max_damping)
        super().__init__(energy_floor_j)


class PassivityFilter(_CappedPC):
    """Single-port PO/PC with α capped at ``max_damping`` (module doc). ``max_damping`` = inf
    is the uncapped textbook controller (unit tests); the controller passes the config value."""

    name = "passivity"

    def _shape(self, w, lam_dot, dt):
        e_next = self.energy_j + dt * float(np.dot(lam_dot, w))
        v2 = float(np.dot(lam_dot, lam_dot))
        if e_next < self.energy_floor_j and v2 > _EPS_V2 and dt > 0:
            alpha = (self.energy_floor_j - e_next) / (dt * v2)
            if alpha > self.max_damping:
                alpha = self.max_damping
                self.saturations += 1
                self._short = True
            self.last_alpha = alpha
            self.dissipated_j += alpha * v2 * dt
            return w + alpha * lam_dot
        self.last_alpha = 0.0
        return w

    def reset(self) -> None:
        super().reset()
        self.last_alpha = 0.0         # α applied on the last tick (N·s/m | N·m·s/rad)


class TDPCFilter(_CappedPC):
    """Per-DoF time-domain passivity observer/controller."""

    name = "tdpc"

    def reset(self) -> None:
        super().reset()
        self.energy_dof_j = np.zeros(6)
        self.last_alpha = np.zeros(6)  # α_i applied on the last tick

    @property
    def deficit_j(self) -> float:
        """Σ_i max(0, E_floor/6 − E_i): the per-DoF energy below the floors (J)."""
        return energy_deficit_dof_j(self.energy_floor_j, self.energy_dof_j)

    def _shape(self, w, lam_dot, dt):
        e_next = self.energy_dof_j + dt * lam_dot * w
        floor = self.energy_floor_j / 6.0
        out = w.copy()
        v2 = lam_dot * lam_dot
        act = (e_next < floor) & (v2 > _EPS_V2) & (dt > 0)
        alpha = np.zeros(6)
        if np.any(act):
            alpha = np.where(act, (floor - e_next) / np.where(act, dt * v2, 1.0), 0.0)
            capped = alpha > self.max_damping
            if np.any(capped):
                alpha = np.minimum(alpha, self.max_damping)
                self.saturations += 1
                self._short = True
            out = w + alpha * lam_dot
            self.dissipated_j += float(np.sum(alpha * v2 * dt))
        self.last_alpha = alpha
        self.energy_dof_j = self.energy_dof_j + dt * lam_dot * out
        return out


class WaveVariableTransform(WrenchFilter):
    """Constant added damping w − b ⊙ λ̇ (zero-delay wave transform)."""

    name = "wave"

    def __init__(self, wave_damping: np.ndarray, energy_floor_j: float = 0.0):
        self.b = np.asarray(wave_damping, dtype=float)
        super().__init__(energy_floor_j)

    def _shape(self, w, lam_dot, dt):
        d = self.b * lam_dot
        self.dissipated_j += float(np.dot(lam_dot, d)) * dt
        return w - d

    def wave_variables(self, w: np.ndarray, lam_dot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """u = (b λ̇ + w)/√(2b), v = (b λ̇ − w)/√(2b)."""
        s = np.sqrt(2.0 * self.b)
        return (self.b * lam_dot + w) / s, (self.b * lam_dot - w) / s


class JitterCompensator(WrenchFilter):
    """Delay compensator: w − α ⊙ λ̇ with α = α_base + α_scale · (σ/μ) of the observed link delays
    (its own window of them, :meth:`observe`, or statistics pushed by :meth:`set_statistics`).
    Before two delays have been observed (or with μ ≤ 0) σ/μ = 0: α = α_base."""

    name = "jitter"

    def __init__(self, alpha_base, alpha_scale, window: int, energy_floor_j: float = 0.0):
        self.alpha_base = np.asarray(alpha_base, dtype=float)
        self.alpha_scale = np.asarray(alpha_scale, dtype=float)
        self.window = int(window)
        if self.alpha_base.shape != (6,) or self.alpha_scale.shape != (6,) or self.window < 2:
            raise ValueError("JitterCompensator: alpha_base, alpha_scale need 6 values, window >= 2")
        super().__init__(energy_floor_j)

    def reset(self) -> None:
        super().reset()
        self.delays: deque = deque(maxlen=self.window)
        self.mean_s = 0.0
        self.std_s = 0.0

    def observe(self, delay_s: float) -> None:
        """One delay (s) measured on the wrench link; a non-finite or negative one is ignored."""
        d = float(delay_s)
        if not (math.isfinite(d) and d >= 0.0):
            return
        self.delays.append(d)
        if len(self.delays) >= 2:
            m = math.fsum(self.delays) / len(self.delays)
            self.mean_s = m
            self.std_s = math.sqrt(math.fsum((x - m) ** 2 for x in self.delays) / len(self.delays))

    def set_statistics(self, mean_s: float, std_s: float) -> None:
        self.mean_s, self.std_s = float(mean_s), float(std_s)

    @property
    def spread(self) -> float:
        """σ/μ of the link delays (0 while unknown)."""
        ok = self.mean_s > 0 and math.isfinite(self.mean_s) and math.isfinite(self.std_s) and self.std_s >= 0
        return self.std_s / self.mean_s if ok else 0.0

    @property
    def alpha(self) -> np.ndarray:
        return self.alpha_base + self.alpha_scale * self.spread

    def _shape(self, w, lam_dot, dt):
        d = self.alpha * lam_dot
        self.dissipated_j += float(np.dot(lam_dot, d)) * dt
        return w - d


def make_filter(params: PassivityParams, kind: Optional[str] = None) -> WrenchFilter:
    kind = params.filter if kind is None else kind
    if kind == "none":
        return Passthrough(params.energy_floor_j)
    if kind == "passivity":
        return PassivityFilter(params.energy_floor_j, params.po_pc.max_damping)
    if kind == "tdpc":
        return TDPCFilter(params.energy_floor_j, params.po_pc.max_damping)
    if kind == "wave":
        return WaveVariableTransform(np.asarray(params.wave_damping, float), params.energy_floor_j)
    if kind == "jitter":
        j = params.jitter
        return JitterCompensator(j.alpha_base, j.alpha_scale, j.window, params.energy_floor_j)
    raise ValueError(f"unknown wrench filter {kind!r} (expected one of {FILTERS})")
