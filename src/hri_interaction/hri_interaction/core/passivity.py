"""Wrench preprocessors between the wrench source and the admittance (Chang 2026 §13).

All filters share ``filter(w, lam_dot, dt) -> w_safe`` and account the energy that flows through
the port (w_safe, λ̇) into the admittance, per tick:

    E_k = E_{k-1} + Δt · λ̇_kᵀ w_safe,k          (J; λ̇ in the admittance's own coordinates)

- :class:`Passthrough` ("baseline"): w_safe = w, observer only.
- :class:`PassivityFilter`: single-port passivity observer + controller (Hannaford & Ryu /
  Anderson & Spong) on the dissertation's observer E = ∫ λ̇ᵀ w_safe. E < E_floor means the port has
  drawn more energy out of the admittance than it ever put in (the admittance acting as a source
  for the channel). With e = E_{k-1} + Δt λ̇ᵀw the controller removes exactly the deficit along λ̇:

      α = (E_floor − e) / (Δt ‖λ̇‖²) ≥ 0,    w_safe = w + α λ̇,   so E_k = E_floor,

  i.e. it cancels the component of w that extracts energy (never more), and counts the energy it
  withheld in ``dissipated_j``. α is unbounded as λ̇ → 0 (a finite deficit over a vanishing
  velocity: huge corrective wrenches), so it is capped (config ``passivity.po_pc.max_damping``):

      α_applied = min(α, α_max),    E_k = e + Δt α_applied ‖λ̇‖²  < E_floor  when capped.

  A capped tick is counted in ``saturations``; the deficit it could not remove,
  E_floor − E_k, stays in the observer (carried to the next tick, never reset: the next ticks
  keep dissipating it as λ̇ allows), is visible as ``deficit_j`` and the tick counts as a
  violation (energy below the floor). For a passive admittance driven from rest E ≥ 0 always, so with
  E_floor = 0 the controller never acts (the dissertation's observation: "the load never triggers the
  PC"); it acts after energy-injecting events (seeded state, stiffness increases).
- :class:`TDPCFilter`: the same per DoF (E_i ≥ E_floor/6, α_i = min(α_i, α_max), w_i + α_i λ̇_i);
  a tick with a capped DoF left below E_floor/6 is a saturation and a violation.
- :class:`WaveVariableTransform`: the dissertation's "single-side approximation" of Niemeyer–Slotine,
  equivalent at zero channel delay to constant added damping  w_safe = w − b ⊙ λ̇ (passive for any
  Δt ≥ 0); wave variables u = (b λ̇ + w)/√(2b), v = (b λ̇ − w)/√(2b) are exposed for diagnostics.

- :class:`JitterCompensator` ("jitter"): the dissertation's delay compensator (Chang 2026 §13.6.3,
  supplementary, "a non-passivity baseline" in the predictive-display family of Sheridan): damping
  that grows with the link's delay spread, α = α_base + α_scale · (σ_rtt / μ_rtt) per DoF,
  w_safe = w − α ⊙ λ̇, with μ, σ the mean and standard deviation of the last ``window`` delays
  observed on the wrench link (:meth:`JitterCompensator.observe`, or pushed as statistics).

``violations`` counts ticks where the energy after the filter is below ``E_floor`` (for the
passivity family the controller makes this impossible unless λ̇ = 0 while E < E_floor, or α
was capped).

Units of α: the correction α λ̇ is a wrench (moment, force) on the twist λ̇ = (ω, v), so α is a
damping in N·s/m on the translational and N·m·s/rad on the rotational components.

:class:`DelayJitter` replays a wrench stream through a lognormal per-sample delay (mean and std
from ``interaction.validation.jitter_*``, Chang 2026 ch. 13; moment-matched), latest-value semantics: a sample older than the newest
delivered one is dropped (lock-free queue that "drops rather than blocks").
:class:`ArrivalJitter` is the arrival pattern of a subscriber on a slow link: messages arrive at
lognormal intervals, each carrying the value sent one lognormal delay before it arrived; between
arrivals the last value is held (``interaction.validation.jitter_model``).
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Optional

import numpy as np
from hri_interaction.parameters_gen import InteractionPassivityParams


FILTERS = ("none", "passivity", "tdpc", "wave", "jitter")
_EPS_V2 = 1e-18


class PassivityParams(InteractionPassivityParams):
    """``interaction.passivity``: the wrench preprocessor (``filter``), the observer's floor, the
    wave damping b and the PO/PC cap ``po_pc.max_damping`` (all checked by the declaration)."""


def energy_deficit_j(energy_floor_j: float, energy_j: float) -> float:
    """Energy (J) an observer is below its floor: max(0, E_floor − E)."""
    return max(0.0, energy_floor_j - energy_j)


def energy_deficit_dof_j(energy_floor_j: float, energy_dof_j) -> float:
    """Per-DoF observers (TDPC, floors E_floor/6): Σ_i max(0, E_floor/6 − E_i) (J)."""
    return float(np.sum(np.maximum(0.0, energy_floor_j / 6.0 - np.asarray(energy_dof_j))))


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
    (module doc). Before two delays have been observed (or with μ ≤ 0) σ/μ = 0: α = α_base."""

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
        """One delay (s) measured on the wrench link (a message's latency or round trip); a
        non-finite or negative one is ignored."""
        d = float(delay_s)
        if not (math.isfinite(d) and d >= 0.0):
            return
        self.delays.append(d)
        if len(self.delays) >= 2:
            a = np.fromiter(self.delays, float)
            self.mean_s, self.std_s = float(a.mean()), float(a.std())

    def set_statistics(self, mean_s: float, std_s: float) -> None:
        """The link's delay mean and std (s) measured elsewhere (what the C++ tick takes)."""
        self.mean_s, self.std_s = float(mean_s), float(std_s)

    @property
    def spread(self) -> float:
        """σ/μ of the link delays (0 while unknown)."""
        return self.std_s / self.mean_s if self.mean_s > 0 and math.isfinite(self.std_s) else 0.0

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


def lognormal_from_moments(mean: float, std: float) -> tuple[float, float]:
    """(μ, σ) of ln X for a lognormal X with the given mean and std (moment matching)."""
    if mean <= 0:
        raise ValueError("lognormal mean must be > 0")
    sigma2 = math.log(1.0 + (std / mean) ** 2)
    return math.log(mean) - 0.5 * sigma2, math.sqrt(sigma2)


class DelayJitter:
    """Per-sample lognormal delay with latest-value delivery (out-of-order samples dropped)."""

    def __init__(self, mean_s: float, std_s: float, rng: np.random.Generator):
        self.mu, self.sigma = lognormal_from_moments(mean_s, std_s)
        self.rng = rng
        self._pending: list[tuple[float, float, np.ndarray]] = []  # (arrival, sent, value)
        self._newest_sent = -math.inf
        self.value: Optional[np.ndarray] = None
        self.dropped = 0
        self.delays: deque = deque(maxlen=100000)

    def push(self, t_sent: float, value: np.ndarray) -> None:
        d = float(self.rng.lognormal(self.mu, self.sigma))
        self.delays.append(d)
        heapq.heappush(self._pending, (t_sent + d, t_sent, np.array(value, dtype=float)))

    def get(self, t: float, default: np.ndarray) -> np.ndarray:
        """The newest (by send time) sample that has arrived by ``t``; ``default`` before any."""
        while self._pending and self._pending[0][0] <= t:
            _, sent, val = heapq.heappop(self._pending)
            if sent > self._newest_sent:
                self._newest_sent = sent
                self.value = val
            else:
                self.dropped += 1
        return default if self.value is None else self.value


class ArrivalJitter:
    """Sample-and-hold arrivals on a slow link (Chang 2026 §13.6.3: a "lognormal jitter injector"
    that "mimics the arrival pattern of a real ZMQ subscriber"): messages arrive as a renewal
    process with lognormal inter-arrival times, each carrying the value the sender had one
    lognormal delay before the arrival (both lognormals moment-matched to the same mean and std);
    between arrivals the subscriber holds the last value. ``push(t, value)`` every sender tick,
    ``get(t, default)`` every receiver tick; ``delays`` are the latencies of the delivered
    messages (what a delay compensator observes)."""

    def __init__(self, mean_s: float, std_s: float, rng: np.random.Generator):
        self.mu, self.sigma = lognormal_from_moments(mean_s, std_s)
        self.rng = rng
        self._t: list[float] = []
        self._v: list[np.ndarray] = []
        self._next = float(rng.lognormal(self.mu, self.sigma))
        self.value: Optional[np.ndarray] = None
        self.delays: deque = deque(maxlen=100000)
        self.arrivals = 0

    HISTORY = 200000   # sender samples kept (200 s at 1 kHz; the oldest half is dropped beyond)

    def push(self, t_sent: float, value: np.ndarray) -> None:
        self._t.append(float(t_sent))
        self._v.append(np.array(value, dtype=float))
        if len(self._t) > self.HISTORY:
            del self._t[: self.HISTORY // 2]
            del self._v[: self.HISTORY // 2]

    def get(self, t: float, default: np.ndarray) -> np.ndarray:
        """The held value at ``t``; at an arrival, the sender's value one delay before it."""
        import bisect

        while t >= self._next:
            d = float(self.rng.lognormal(self.mu, self.sigma))
            i = bisect.bisect_right(self._t, self._next - d) - 1
            if i >= 0:
                self.value = self._v[i]
                self.delays.append(d)
                self.arrivals += 1
            self._next += float(self.rng.lognormal(self.mu, self.sigma))
        return default if self.value is None else self.value
