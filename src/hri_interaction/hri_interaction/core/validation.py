"""Chang 2026 table 13.9: the Lie admittance kernel under a −5 N body-z step, with and without jitter.

Protocol: pure admittance kernel, no plant; F_z = −5 N along body z from
t = 1 s with a 0.5 s ramp; 5 s at 1 kHz; the wrench passes a preprocessor (baseline, PO/PC, TDPC,
wave) and optionally a lognormal delay injector; metric |Δp| = ‖T_mod.t − T_d.t‖.

It runs on the engine itself: the C++ tick (``InteractionTick``) in admittance mode with T_d = I
and a 6-joint arm whose body Jacobian is the identity (no plant: the state never moves, so only
the wrench filter and the admittance act; the torque is not used).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from hri_interaction.core.admittance import AdmittanceParams
from hri_interaction.core.controller import InteractionParams, tick_params
from hri_interaction.core.impedance import cxx_kernels
from hri_interaction.core.inputs import MODES
from hri_interaction.core.passivity import DelayJitter

CHANG_TABLE_13_9 = {  # (preprocessor, jitter) -> (final mm, peak mm, |λ̇|max, E-viol), Chang 2026 table 13.9
    ("baseline", False): (2.000, 2.17, 0.0072, 0), ("baseline", True): (1.993, 2.85, 0.0214, 0),
    ("passivity", False): (2.000, 2.17, 0.0072, 0), ("passivity", True): (1.993, 2.85, 0.0214, 0),
    ("tdpc", False): (2.000, 2.17, 0.0072, 0), ("tdpc", True): (1.993, 2.85, 0.0214, 0),
    ("wave", False): (2.000, 2.10, 0.0055, 0), ("wave", True): (2.000, 2.26, 0.0140, 0),
}
PREPROCESSORS = {"baseline": "none", "passivity": "passivity", "tdpc": "tdpc", "wave": "wave"}


@dataclass
class JitterRun:
    final_mm: float
    peak_mm: float
    lam_dot_max: float
    energy_violations: int
    min_energy_j: float
    pc_dissipated_j: float
    pc_saturations: int       # ticks where the PC's α hit passivity.po_pc.max_damping


def force_profile(t: float, v: dict) -> float:
    """F_z(t): 0 before start, linear ramp over ``force_ramp_s``, then ``force_n``."""
    if t < v["force_start_s"]:
        return 0.0
    if v["force_ramp_s"] <= 0:
        return v["force_n"]
    return v["force_n"] * min(1.0, (t - v["force_start_s"]) / v["force_ramp_s"])


def run_table_13_9(params: InteractionParams, validation: dict, preprocessor: str, jitter: bool,
                   seed: int = 0) -> JitterRun:
    """One condition of the table on the C++ tick (module doc); ``params`` from :func:`table_params`."""
    p = dataclasses.replace(params, passivity=dataclasses.replace(params.passivity,
                                                                  filter=PREPROCESSORS[preprocessor]))
    tick = cxx_kernels().InteractionTick(tick_params(p, 6), np.eye(4))
    tick.set_mode(MODES.index("admittance"), -1.0)
    dt = 1.0 / p.rate_hz
    inj = DelayJitter(validation["jitter_mean_s"], validation["jitter_std_s"],
                      np.random.default_rng(seed)) if jitter else None
    n = int(round(validation["duration_s"] * p.rate_hz))
    z6, I4 = np.zeros(6), np.eye(4)
    state = (z6, z6, I4, z6, np.eye(6), z6, z6)         # q, dq, world_T_ee, V_b, J_b, g, c
    peak = 0.0
    vmax = 0.0
    for k in range(n):
        t = k * dt
        w = np.zeros(6)
        w[5] = force_profile(t, validation)
        if inj is not None:
            inj.push(t, w)
            w = inj.get(t, z6)
        tick.set_wrench(w, True)
        _, T_ref, _, _, _ = tick.tick(*state, dt)
        dp = float(np.linalg.norm(T_ref[:3, 3]))           # T_d = I: |T_mod.t − T_d.t|
        peak = max(peak, dp)
        vmax = max(vmax, float(np.linalg.norm(tick.lam_dot)))
    return JitterRun(final_mm=dp * 1e3, peak_mm=peak * 1e3, lam_dot_max=vmax,
                     energy_violations=tick.violations, min_energy_j=tick.min_energy_j,
                     pc_dissipated_j=tick.dissipated_j, pc_saturations=tick.saturations)


def table_13_9(params: InteractionParams, validation: dict, seed: int = 0) -> dict:
    """All eight conditions: {(preprocessor, jitter): JitterRun}."""
    return {(p, j): run_table_13_9(params, validation, p, j, seed)
            for p in PREPROCESSORS for j in (False, True)}


def format_table(results: dict) -> str:
    """Markdown: ours beside the dissertation's."""
    lines = ["| preprocessor | jitter | final mm (ours / source) | peak mm (ours / source) | "
             "max ‖λ̇‖ (ours / source) | E-viol (ours / source) |",
             "|---|---|---|---|---|---|"]
    for (p, j), r in results.items():
        s = CHANG_TABLE_13_9[(p, j)]
        lines.append(f"| {p} | {'lognormal' if j else 'off'} | {r.final_mm:.3f} / {s[0]:.3f} | "
                     f"{r.peak_mm:.2f} / {s[1]:.2f} | {r.lam_dot_max:.4f} / {s[2]:.4f} | "
                     f"{r.energy_violations} / {s[3]} |")
    return "\n".join(lines)


def table_params(section: dict) -> InteractionParams:
    """The ``interaction`` params of the table 13.9 run: the configured admittance diagonal with
    the body-z entries of ``validation`` (M_z, D_z, K_z)."""
    v = section["validation"]
    a = section["admittance"]
    m, d, k = (np.array(a[f"{x}_diag"], dtype=float) for x in ("mass", "damping", "stiffness"))
    m[5], d[5], k[5] = v["mass_z_kg"], v["damping_z_ns_m"], v["stiffness_z_n_m"]
    return dataclasses.replace(InteractionParams.from_config(section),
                               admittance=AdmittanceParams.make(m, d, k, a["dexp_dot_step_s"]))


def main() -> None:
    """``python -m hri_interaction.core.validation [robot]``: print table 13.9, ours beside the dissertation's."""
    import sys

    from hri_runtime.config.tree import load_robot_config

    sec = load_robot_config(sys.argv[1] if len(sys.argv) > 1 else "fr3")["interaction"]
    print(format_table(table_13_9(table_params(sec), sec["validation"])))


if __name__ == "__main__":
    main()
