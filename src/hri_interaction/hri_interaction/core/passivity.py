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

- ``JitterCompensator`` ("jitter"): the dissertation's delay compensator (Chang 2026 §13.6.3,
  supplementary, "a non-passivity baseline" in the predictive-display family of Sheridan): damping
  that grows with the link's delay spread, α = α_base + α_scale · (σ_rtt / μ_rtt) per DoF,
  w_safe = w − α ⊙ λ̇, with μ, σ the mean and standard deviation of the last ``window`` delays
  observed on the wrench link (:class:`LinkDelays`), pushed to the tick as statistics.

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
arrivals the last value is held (``interaction.validation.jitter_model``). :class:`LinkDelays` is
the delay compensator's statistics: μ, σ of the last ``window`` delays observed on the link, what
``InteractionTick.set_link_statistics`` takes.

The filters run in the C++ tick (``InteractionTick``, cpp/include/hri_core/interaction.hpp); their
Python form is the test oracle (tests/interaction/oracle/passivity.py).
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Optional

import numpy as np
from hri_interaction.parameters_gen import InteractionPassivityParams


FILTERS = ("none", "passivity", "tdpc", "wave", "jitter")


class PassivityParams(InteractionPassivityParams):
    """``interaction.passivity``: the wrench preprocessor (``filter``), the observer's floor, the
    wave damping b and the PO/PC cap ``po_pc.max_damping`` (all checked by the declaration)."""


def energy_deficit_j(energy_floor_j: float, energy_j: float) -> float:
    """Energy (J) an observer is below its floor: max(0, E_floor − E)."""
    return max(0.0, energy_floor_j - energy_j)


def energy_deficit_dof_j(energy_floor_j: float, energy_dof_j) -> float:
    """Per-DoF observers (TDPC, floors E_floor/6): Σ_i max(0, E_floor/6 − E_i) (J)."""
    return float(np.sum(np.maximum(0.0, energy_floor_j / 6.0 - np.asarray(energy_dof_j))))


class LinkDelays:
    """μ, σ of the last ``window`` delays (s) observed on a link (the delay compensator's σ/μ,
    ``interaction.passivity.jitter.window``); a non-finite or negative delay is ignored. Before
    two delays have been observed μ = σ = 0 (the tick's spread is then 0: α = α_base)."""

    def __init__(self, window: int):
        if int(window) < 2:
            raise ValueError("LinkDelays: window must be >= 2")
        self.delays: deque = deque(maxlen=int(window))
        self.mean_s = 0.0
        self.std_s = 0.0

    def observe(self, delay_s: float) -> bool:
        """One delay (s); True if it was taken."""
        d = float(delay_s)
        if not (math.isfinite(d) and d >= 0.0):
            return False
        self.delays.append(d)
        if len(self.delays) >= 2:
            a = np.fromiter(self.delays, float)
            self.mean_s, self.std_s = float(a.mean()), float(a.std())
        return True


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
