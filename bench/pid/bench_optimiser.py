"""Optimiser vs best heuristic vs dense grid optimum (issue 9 "Done means").

For each setup and joint: relay-tune (holds = the configured initial gains), evaluate every
heuristic, run the optimiser (budget `pid_tuning.optimiser.budget_trials`, heuristics included)
and a dense grid Kp = a·Ku, Ki = b·Ku/Tu, Kd = c·Ku·Tu (`pid_tuning.grid`; the stand-in for an
expert's manual tuning) on the same single-joint step-test cost. Target: optimiser cost within
10 % of the grid optimum using ≤ 5 % of its simulations, and below every heuristic.

    .venv/bin/python bench/pid/bench_optimiser.py                     # all setups, joint elbow
    .venv/bin/python bench/pid/bench_optimiser.py --setups s2 --joints elbow hand --jobs 2

Prints one line per (setup, joint) and a summary; wall-clock per simulation for reference only.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from hri_pid_tuning.core.optimiser import grid_search, optimise
from hri_pid_tuning.session import TuningSession


def one(setup: str, joint: str) -> dict:
    s = TuningSession.create("humanoid_arm", setup)
    td = s.autotuner.tune_single_joint(joint)
    if not td.relay.ok:
        return {"setup": setup, "joint": joint, "error": td.relay.reason}
    t0 = time.perf_counter()
    cf = s.cost_function(joint)
    res = optimise(cf, td.heuristics, td.relay.tu_s)
    t_opt = time.perf_counter() - t0
    g = s.cfg["pid_tuning"]["grid"]
    cf_grid = s.cost_function(joint)
    t0 = time.perf_counter()
    best_g, best_c, n = grid_search(cf_grid, td.relay.ku, td.relay.tu_s, g["kp_factors"], g["ki_factors"], g["kd_factors"])
    t_grid = time.perf_counter() - t0
    best_h = min(res.heuristic_costs, key=res.heuristic_costs.get)
    return {"setup": setup, "joint": joint, "ku": td.relay.ku, "tu_s": td.relay.tu_s,
            "best_heuristic": best_h, "best_heuristic_cost": res.heuristic_costs[best_h],
            "optimiser_cost": res.cost, "optimiser_trials": res.trials, "optimiser_gains": res.gains.to_dict(),
            "grid_cost": best_c, "grid_trials": n, "grid_gains": best_g.to_dict(),
            "ratio_to_grid": res.cost / best_c, "trial_fraction": res.trials / n,
            "beats_every_heuristic": res.cost < min(res.heuristic_costs.values()),
            "ms_per_sim_opt": 1e3 * t_opt / res.trials, "ms_per_sim_grid": 1e3 * t_grid / n}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--setups", nargs="*", default=["s1", "s2", "s3", "s4"])
    ap.add_argument("--joints", nargs="*", default=["elbow"])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    jobs = [(s, j) for s in a.setups for j in a.joints]
    with ProcessPoolExecutor(max_workers=a.jobs) as ex:
        results = list(ex.map(one, *zip(*jobs)))
    print(f"{'setup':5s} {'joint':11s} {'best heuristic':22s} {'h cost':>8s} {'opt cost':>9s} {'grid cost':>9s} "
          f"{'opt/grid':>8s} {'trials':>11s} {'frac':>6s} {'beats all h':>11s}")
    ok = True
    for r in results:
        if "error" in r:
            print(f"{r['setup']:5s} {r['joint']:11s} relay failed: {r['error']}")
            ok = False
            continue
        hit = r["ratio_to_grid"] <= 1.10 and r["trial_fraction"] <= 0.05 and r["beats_every_heuristic"]
        ok &= hit
        print(f"{r['setup']:5s} {r['joint']:11s} {r['best_heuristic']:22s} {r['best_heuristic_cost']:8.3f} "
              f"{r['optimiser_cost']:9.3f} {r['grid_cost']:9.3f} {r['ratio_to_grid']:8.3f} "
              f"{r['optimiser_trials']:4d}/{r['grid_trials']:<6d} {r['trial_fraction']:6.3f} {str(r['beats_every_heuristic']):>11s}"
              f"{'' if hit else '   <- target missed'}")
    sims = [r for r in results if "error" not in r]
    if sims:
        print(f"mean ms per simulated step test: {sum(r['ms_per_sim_grid'] for r in sims) / len(sims):.1f} (wall clock, this machine)")
    print("target (≤ 1.10 × grid, ≤ 5 % of its simulations, below every heuristic):", "met" if ok else "NOT met everywhere")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
