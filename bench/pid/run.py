"""PID tuning benchmark: ours side by side with python-control and with naive baselines; prints ratios.

1. metrics   – ``step_response_info`` (ours) vs ``control.step_info`` on the same samples of
               second-order step responses: largest difference of every field and the speed ratio.
2. relay     – relay auto-tuning (ours) vs the exact ultimate point from ``control.margin``
               (gain margin = Ku, phase-crossover frequency → Tu) on plants with known Ku/Tu:
               relative errors (the issue's target: within 5 %).
3. optimiser – per humanoid-arm setup and joint, on the single-joint step-test cost
               (``pid_tuning.optimiser``): the best heuristic, our optimiser (budget
               ``budget_trials``, heuristics included), a naive random search with the same
               budget (log-uniform in the grid's box, seeded), and the dense grid
               (``pid_tuning.grid``, the stand-in for an expert's manual tuning).
               Target: optimiser ≤ 1.10 × grid optimum with ≤ 5 % of its simulations, below every heuristic.

    .venv/bin/python bench/pid/run.py                                   # everything (~12 min, 2 jobs)
    .venv/bin/python bench/pid/run.py --only metrics relay              # seconds
    .venv/bin/python bench/pid/run.py --setups s2 --joints elbow --jobs 1 --json bench/results/pid.json

Wall-clock numbers are for this machine only; tests never assert them.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores visible, Python {platform.python_version()}"


# ------------------------------------------------------------------------------------------------
def bench_metrics() -> dict:
    import control

    from hri_pid_tuning.core.metrics import step_response_info

    h = 1e-3
    t = np.arange(0, 12, h)
    rows = []
    t_ours = t_ctrl = 0.0
    for zeta, wn in [(0.1, 3.0), (0.25, 2.0), (0.5, 4.0), (0.7, 1.0), (0.9, 1.5), (1.5, 3.0)]:
        y = 45.0 * np.squeeze(control.step_response(control.tf([wn ** 2], [1, 2 * zeta * wn, wn ** 2]), T=t).outputs)
        reps = 20
        t0 = time.perf_counter()
        for _ in range(reps):
            info = control.step_info(y, T=t, yfinal=45.0, SettlingTimeThreshold=0.02)
        t_ctrl += (time.perf_counter() - t0) / reps
        t0 = time.perf_counter()
        for _ in range(reps):
            mine = step_response_info(t, y, y_final=45.0)
        t_ours += (time.perf_counter() - t0) / reps
        diff = max(abs(mine[k] - info[k]) for k in ("RiseTime", "SettlingTime", "Overshoot", "Peak", "PeakTime"))
        rows.append({"zeta": zeta, "wn": wn, "max_abs_diff": diff})
    out = {"cases": rows, "max_abs_diff": max(r["max_abs_diff"] for r in rows),
           "ms_ours": 1e3 * t_ours / len(rows), "ms_control": 1e3 * t_ctrl / len(rows)}
    print("\n## 1. metrics: step_response_info (ours) vs control.step_info, 12 000 samples each")
    print(f"largest difference of RiseTime/SettlingTime/Overshoot/Peak/PeakTime over {len(rows)} responses: "
          f"{out['max_abs_diff']:.3g}")
    print(f"time per response: ours {out['ms_ours']:.3f} ms, python-control {out['ms_control']:.3f} ms, "
          f"ratio control/ours {out['ms_control'] / out['ms_ours']:.1f}x")
    return out


# ------------------------------------------------------------------------------------------------
def bench_relay() -> dict:
    import control

    from hri_pid_tuning.core.relay import RelayParams, relay_tune
    from hri_runtime.config.tree import load_robot_config
    from hri_sim.pid_plants import LinearPlant

    base = RelayParams.from_config(load_robot_config("fr3")["pid_tuning"]["relay"])

    plants = {"1/(s+1)^3": ([1.0], [1.0, 3.0, 3.0, 1.0]),
              "1/(s+1)^4": ([1.0], [1.0, 4.0, 6.0, 4.0, 1.0]),
              "2/((s+1)(0.5s+1)(0.2s+1))": ([2.0], list(np.polymul(np.polymul([1, 1], [0.5, 1]), [0.2, 1])))}
    rows = []
    print("\n## 2. relay: Ku, Tu (ours, relay d=1, hysteresis 0) vs control.margin (exact)")
    print(f"{'plant':28s} {'Ku exact':>9s} {'Ku relay':>9s} {'err':>7s} {'Tu exact':>9s} {'Tu relay':>9s} {'err':>7s}")
    for name, (num, den) in plants.items():
        gm, _pm, wcg, _wcp = control.margin(control.tf(num, den))
        ku_x, tu_x = float(gm), 2 * math.pi / float(wcg)
        p = dataclasses.replace(base, amplitude=1.0, start_angle_deg=5.0, target_angle_deg=0.0, warmup_s=4 * tu_x,
                                duration_s=8 * tu_x, divergence_deg=1e4, joint_limit_margin_deg=0.0,
                                hysteresis_deg=0.0)
        res = relay_tune(LinearPlant(num, den, dt_s=1e-3, effort_max=10.0), p)
        row = {"plant": name, "ku_exact": ku_x, "tu_exact": tu_x, "ku": res.ku, "tu_s": res.tu_s,
               "ku_err": res.ku / ku_x - 1, "tu_err": res.tu_s / tu_x - 1}
        rows.append(row)
        print(f"{name:28s} {ku_x:9.3f} {res.ku:9.3f} {100 * row['ku_err']:6.2f}% {tu_x:9.3f} {res.tu_s:9.3f} "
              f"{100 * row['tu_err']:6.2f}%")
    return {"cases": rows}


# ------------------------------------------------------------------------------------------------
def random_search(cf, ku: float, tu_s: float, g: dict, n: int, seed: int = 0):
    """Naive baseline: ``n`` gain sets log-uniform in the grid's box (zero lower bounds → 1 % of
    the upper bound, then 0 with probability 1/len(factors))."""
    from hri_core.pid import PIDGains

    rng = np.random.default_rng(seed)

    def draw(factors):
        lo, hi = min(f for f in factors if f > 0), max(factors)
        if min(factors) == 0 and rng.random() < 1 / len(factors):
            return 0.0
        return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))

    best = math.inf
    for _ in range(n):
        best = min(best, cf(PIDGains(draw(g["kp_factors"]) * ku, draw(g["ki_factors"]) * ku / tu_s,
                                     draw(g["kd_factors"]) * ku * tu_s), "random"))
    return best


def one(setup: str, joint: str) -> dict:
    from hri_pid_tuning.core.optimiser import grid_search, optimise
    from hri_pid_tuning.session import TuningSession

    s = TuningSession.create("humanoid_arm", setup)
    td = s.autotuner.tune_single_joint(joint)
    if not td.relay.ok:
        return {"setup": setup, "joint": joint, "error": td.relay.reason}
    g = s.cfg["pid_tuning"]["grid"]
    cf = s.cost_function(joint)
    t0 = time.perf_counter()
    res = optimise(cf, td.heuristics, td.relay.tu_s)
    t_opt = time.perf_counter() - t0
    rnd = random_search(s.cost_function(joint), td.relay.ku, td.relay.tu_s, g, res.trials)
    cf_grid = s.cost_function(joint)
    t0 = time.perf_counter()
    best_g, best_c, n = grid_search(cf_grid, td.relay.ku, td.relay.tu_s, g["kp_factors"], g["ki_factors"],
                                    g["kd_factors"])
    t_grid = time.perf_counter() - t0
    best_h = min(res.heuristic_costs, key=res.heuristic_costs.get)
    return {"setup": setup, "joint": joint, "ku": td.relay.ku, "tu_s": td.relay.tu_s,
            "best_heuristic": best_h, "best_heuristic_cost": res.heuristic_costs[best_h],
            "optimiser_cost": res.cost, "optimiser_trials": res.trials, "optimiser_gains": res.gains.to_dict(),
            "random_cost": rnd, "grid_cost": best_c, "grid_trials": n, "grid_gains": best_g.to_dict(),
            "ratio_to_grid": res.cost / best_c, "trial_fraction": res.trials / n,
            "beats_every_heuristic": res.cost < min(res.heuristic_costs.values()),
            "ms_per_sim": 1e3 * (t_opt + t_grid) / (res.trials + n)}


def bench_optimiser(setups, joints, jobs: int) -> dict:
    tasks = [(s, j) for s in setups for j in joints]
    print(f"\n## 3. optimiser vs best heuristic vs random search (same budget) vs dense grid "
          f"({len(tasks)} setup×joint, {jobs} jobs)")
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            results = list(ex.map(one, *zip(*tasks)))
    else:
        results = [one(*t) for t in tasks]
    print(f"{'setup':5s} {'joint':11s} {'best heuristic':15s} {'heur':>7s} {'random':>7s} {'optim':>7s} {'grid':>7s} "
          f"{'heur/opt':>8s} {'rand/opt':>8s} {'opt/grid':>8s} {'trials':>10s} {'frac':>6s}")
    ok = True
    for r in results:
        if "error" in r:
            print(f"{r['setup']:5s} {r['joint']:11s} relay failed: {r['error']}")
            ok = False
            continue
        hit = r["ratio_to_grid"] <= 1.10 and r["trial_fraction"] <= 0.05 and r["beats_every_heuristic"]
        ok &= hit
        print(f"{r['setup']:5s} {r['joint']:11s} {r['best_heuristic']:15s} {r['best_heuristic_cost']:7.3f} "
              f"{r['random_cost']:7.3f} {r['optimiser_cost']:7.3f} {r['grid_cost']:7.3f} "
              f"{r['best_heuristic_cost'] / r['optimiser_cost']:8.2f} {r['random_cost'] / r['optimiser_cost']:8.2f} "
              f"{r['ratio_to_grid']:8.3f} {r['optimiser_trials']:4d}/{r['grid_trials']:<5d} {r['trial_fraction']:6.3f}"
              f"{'' if hit else '  <- target missed'}")
    sims = [r for r in results if "error" not in r]
    if sims:
        ratios = [r["ratio_to_grid"] for r in sims]
        print(f"optimiser/grid: median {np.median(ratios):.3f}, worst {max(ratios):.3f}; "
              f"best heuristic/optimiser: median {np.median([r['best_heuristic_cost'] / r['optimiser_cost'] for r in sims]):.2f}; "
              f"random/optimiser: median {np.median([r['random_cost'] / r['optimiser_cost'] for r in sims]):.2f}")
        print(f"mean wall-clock per simulated step test: {np.mean([r['ms_per_sim'] for r in sims]):.1f} ms")
    print("target (≤ 1.10 × grid, ≤ 5 % of its simulations, below every heuristic):",
          "met everywhere" if ok else "NOT met everywhere")
    return {"cases": results, "target_met": ok}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", default=["metrics", "relay", "optimiser"])
    ap.add_argument("--setups", nargs="*", default=["s1", "s2", "s3", "s4"])
    ap.add_argument("--joints", nargs="*", default=["hand", "elbow", "shoulder_y"])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    from hri_runtime import provenance  # commit, version, build flags
    print(f"# provenance: {provenance.line()}")
    print(f"# PID tuning benchmark  ({machine()})")
    out = {"machine": machine(), "provenance": provenance.provenance("hri_pid_tuning")}
    if "metrics" in a.only:
        out["metrics"] = bench_metrics()
    if "relay" in a.only:
        out["relay"] = bench_relay()
    if "optimiser" in a.only:
        out["optimiser"] = bench_optimiser(a.setups, a.joints, a.jobs)
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(out, indent=2, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
