"""Gain optimiser (beyond the thesis, whose conclusion was that manual tuning beat every heuristic).

Cost of a gain set on one joint, from a simulated step test (:class:`~.motion.StepTestMotion`)::

    J = w_itae · ITAE + w_ov · MaxOvershoot° + w_set · settling_b        (weights from config)

ITAE in deg·s² summed over the test's steps, settling within ``settling_band_deg`` (robust
settling; a step that does not settle counts ``unsettled_penalty_s``), divergence costs
``divergence_cost``. The optimiser evaluates every heuristic's gains, starts from the best and
refines with Nelder–Mead in log-gain space
``x = (ln Kp, ln(Ki + εi), ln(Kd + εd))`` (εi = Kp/Tu·eps_fraction, εd = Kp·Tu·eps_fraction keep
a zero gain reachable), within a budget of simulated trials (heuristics included). With
``starts`` > 1 Nelder–Mead first runs ``first_phase_trials`` from each of the best ``starts``
heuristics, then the start that reached the lowest cost gets the rest of the budget
(``first_phase_trials`` = 0: the budget split evenly). Optionally (``restart_xatol_log`` > 0) a
converged simplex restarts at its best point. bench/pid compares the variants.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np
from scipy.optimize import minimize

from .metrics import Evaluation, EvaluationParams, evaluate_joint
from .motion import StepTestMotion
from hri_core.pid import PIDGains, PIDParams

from .plant import JointPlant, simulate_closed_loop
from hri_pid_tuning.parameters_gen import PidTuningOptimiserParams


#: the optimiser (``pid_tuning.optimiser``, declared in parameters.yaml)
OptimiserParams = PidTuningOptimiserParams


@dataclass
class Trial:
    gains: PIDGains
    cost: float
    evaluation: Evaluation | None
    label: str = ""


def step_cost(evaluation: Evaluation, itae: float | None, aborted: str | None, p: OptimiserParams,
              steps: int) -> float:
    if aborted is not None or itae is None or evaluation.avg_absolute_error is None:
        return p.divergence_cost
    ov = evaluation.max_overshoot or 0.0
    st = evaluation.avg_robust_settling_time.get(float(p.settling_band_deg))
    st = p.unsettled_penalty_s if st is None else st
    w = p.cost_weights
    return w.itae * itae + w.overshoot_deg * ov + w.settling_s * st


class JointCostFunction:
    """Simulates the step test on one joint and returns the cost; counts trials."""

    def __init__(self, plant: JointPlant, motion: StepTestMotion, base_rad: float, params: OptimiserParams,
                 pid_params: PIDParams, eval_params: EvaluationParams):
        self.plant = plant
        self.motion = motion
        self.base_rad = base_rad
        self.p = params
        self.pid_params = pid_params
        self.eval_params = eval_params
        self.trials: list[Trial] = []
        self.last_trace = None

    def __call__(self, gains: PIDGains, label: str = "") -> float:
        m = self.motion
        try:
            tr = simulate_closed_loop(self.plant, gains, lambda t: self.base_rad + m.offset_rad(t), m.duration_s,
                                      q0_rad=self.base_rad, pid_params=self.pid_params,
                                      divergence_rad=math.radians(self.p.divergence_deg))
        except RuntimeError:        # a live robot could not run the trial (start posture not reached)
            self.last_trace = None
            self.trials.append(Trial(gains, self.p.divergence_cost, None, label))
            return self.p.divergence_cost
        self.last_trace = tr
        ev = evaluate_joint(tr.t_s, tr.desired_deg, tr.measured_deg, self.eval_params) if len(tr.t_s) > 2 else None
        cost = step_cost(ev, ev.itae if ev else None, tr.aborted, self.p, 2 * m.repeats) if ev else self.p.divergence_cost
        self.trials.append(Trial(gains, cost, ev, label))
        return cost


@dataclass
class OptimiserResult:
    gains: PIDGains
    cost: float
    start_name: str
    start_cost: float
    heuristic_costs: dict[str, float]
    trials: int
    history: list[float] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"gains": self.gains.to_dict(), "cost": self.cost, "start": self.start_name,
                "start_cost": self.start_cost, "heuristic_costs": self.heuristic_costs, "trials": self.trials}


def optimise(cost_fn: JointCostFunction, heuristics: Mapping[str, PIDGains], tu_s: float,
             progress: Callable[[float], None] | None = None) -> OptimiserResult:
    """Every heuristic, then Nelder–Mead within ``budget_trials`` simulations in total (heuristics
    included); the best gains found win.

    ``starts`` = 1: one run from the best heuristic. ``starts`` = N > 1 and ``first_phase_trials``
    = 0: runs from the N best heuristics, the remaining budget split evenly. ``first_phase_trials``
    = m > 0: a short first phase of m trials from each of the N best heuristics, then the start whose
    phase reached the lowest cost gets the rest of the budget (a fresh simplex at its best point).
    """
    p = cost_fn.p
    budget = p.budget_trials
    costs = {}
    for name, g in heuristics.items():
        if len(cost_fn.trials) >= budget:
            break
        costs[name] = cost_fn(g, name)
    ranked = sorted(costs, key=costs.get)
    start_name = ranked[0]
    best = {"cost": costs[start_name], "gains": heuristics[start_name]}
    history = [best["cost"]]
    n_starts = max(1, min(p.starts, len(ranked)))
    if n_starts > 1 and p.first_phase_trials > 0:
        phase = []
        for k in range(n_starts):
            if budget - len(cost_fn.trials) <= 4:
                break
            local = {"cost": costs[ranked[k]], "gains": heuristics[ranked[k]]}
            stop = min(budget, len(cost_fn.trials) + p.first_phase_trials)
            _nelder_mead(cost_fn, local["gains"], tu_s, stop, best, history, progress, local)
            phase.append(local)
        if phase and budget - len(cost_fn.trials) > 4:
            winner = min(phase, key=lambda d: d["cost"])
            _nelder_mead(cost_fn, winner["gains"], tu_s, budget, best, history, progress, winner)
    else:
        for k in range(n_starts):
            remaining = budget - len(cost_fn.trials)
            share = remaining // (n_starts - k)
            if share <= 4:
                break
            _nelder_mead(cost_fn, heuristics[ranked[k]], tu_s, len(cost_fn.trials) + share, best, history,
                         progress)
    return OptimiserResult(best["gains"], best["cost"], start_name, costs[start_name], costs,
                           len(cost_fn.trials), history)


def _nelder_mead(cost_fn: JointCostFunction, start: PIDGains, tu_s: float, stop_at: int, best: dict,
                 history: list, progress, local: dict | None = None) -> None:
    """Nelder–Mead in x = (ln Kp, ln(Ki + εi), ln(Kd + εd)) from ``start`` until ``stop_at`` trials.

    ``best`` is the overall best, ``local`` (optional) the best of this run. With
    ``restart_xatol_log`` > 0 a run that converges (simplex within ``restart_xatol_log`` in ln-gain
    and ``restart_fatol`` in cost) before ``stop_at`` restarts with a fresh simplex at its best point.
    """
    p = cost_fn.p
    budget = p.budget_trials
    local = {"cost": math.inf, "gains": start} if local is None else local

    while stop_at - len(cost_fn.trials) > 4:
        start = local["gains"]
        eps_i = max(start.kp / tu_s * p.eps_fraction, 1e-9)
        eps_d = max(start.kp * tu_s * p.eps_fraction, 1e-9)
        x0 = np.log([max(start.kp, 1e-9), start.ki + eps_i, start.kd + eps_d])

        def to_gains(x, eps_i=eps_i, eps_d=eps_d):
            kp, ki, kd = np.exp(x)
            return PIDGains(float(kp), float(max(ki - eps_i, 0.0)), float(max(kd - eps_d, 0.0)))

        def f(x, to_gains=to_gains):
            if len(cost_fn.trials) >= stop_at:
                return best["cost"] + 1.0
            g = to_gains(x)
            c = cost_fn(g, "optimiser")
            if c < best["cost"]:
                best.update(cost=c, gains=g)
            if c < local["cost"]:
                local.update(cost=c, gains=g)
            history.append(best["cost"])
            if progress:
                progress(len(cost_fn.trials) / budget)
            return c

        s = p.initial_step_log
        # the initial simplex also tries to switch an absent I or D term on (to ~its ZN size)
        dx_i = s if start.ki > 0 else math.log(1.0 / p.eps_fraction) * 0.5
        dx_d = s if start.kd > 0 else math.log(1.0 / p.eps_fraction) * 0.5
        simplex = np.array([x0, x0 + [s, 0, 0], x0 + [0, dx_i, 0], x0 + [0, 0, dx_d]])
        restart = p.restart_xatol_log > 0
        minimize(f, x0, method="Nelder-Mead",
                 options={"maxfev": stop_at - len(cost_fn.trials), "initial_simplex": simplex,
                          "xatol": p.restart_xatol_log if restart else 1e-3,
                          "fatol": p.restart_fatol if restart else 1e-4})
        if not restart:
            break


def grid_search(cost_fn: JointCostFunction, ku: float, tu_s: float, kp_factors, ki_factors, kd_factors,
                progress: Callable[[float], None] | None = None) -> tuple[PIDGains, float, int]:
    """Dense grid Kp = a·Ku, Ki = b·Ku/Tu, Kd = c·Ku·Tu (the stand-in for an expert's manual tuning)."""
    best_g, best_c = None, math.inf
    n = len(kp_factors) * len(ki_factors) * len(kd_factors)
    k = 0
    for a in kp_factors:
        for b in ki_factors:
            for c in kd_factors:
                g = PIDGains(a * ku, b * ku / tu_s, c * ku * tu_s)
                cost = cost_fn(g, "grid")
                if cost < best_c:
                    best_g, best_c = g, cost
                k += 1
                if progress and k % 20 == 0:
                    progress(k / n)
    return best_g, best_c, n
