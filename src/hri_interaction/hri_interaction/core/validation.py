"""Chang 2026 table 13.9: the Lie admittance kernel under a −5 N body-z step, with and without jitter.

Protocol: pure admittance kernel, no plant; F_z = −5 N along body z from
t = 1 s with a 0.5 s ramp; 5 s at 1 kHz; the wrench passes a preprocessor (baseline, PO/PC, TDPC,
wave) and optionally a lognormal delay injector; metric |Δp| = ‖T_mod.t − T_d.t‖.

It runs on the engine itself: the C++ tick (``InteractionTick``) in admittance mode with T_d = I
and a 6-joint arm whose body Jacobian is the identity (no plant: the state never moves, so only
the wrench filter and the admittance act; the torque is not used).

Injector (``validation.jitter_model``): ``hold`` — the wrench reaches the admittance as a subscriber
on the slow link sees it: messages arrive at lognormal intervals, each carrying the wrench sent one
lognormal delay earlier, held in between (:class:`ArrivalJitter`); ``latest`` — every 1 kHz sample
delayed by its own draw, the newest arrived wins (:class:`DelayJitter`). The jitter rows depend on
the draw; :func:`table_13_9_seeds` reports their median over ``validation.jitter_seeds`` seeds with
the 5–95 % band (the dissertation reports one run). The delay compensator (filter ``jitter``, not
in the dissertation's matrix) is given the statistics of the delays of the messages that arrived
(:class:`LinkDelays` over ``passivity.jitter.window``, ``InteractionTick.set_link_statistics``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

import numpy as np

from hri_interaction.core.admittance import AdmittanceParams
from hri_interaction.core.controller import InteractionParams, tick_params
from hri_interaction.core.impedance import cxx_kernels
from hri_interaction.core.inputs import MODES
from hri_interaction.core.passivity import ArrivalJitter, DelayJitter, LinkDelays

CHANG_TABLE_13_9 = {  # (preprocessor, jitter) -> (final mm, peak mm, |λ̇|max, E-viol), Chang 2026 table 13.9
    ("baseline", False): (2.000, 2.17, 0.0072, 0), ("baseline", True): (1.993, 2.85, 0.0214, 0),
    ("passivity", False): (2.000, 2.17, 0.0072, 0), ("passivity", True): (1.993, 2.85, 0.0214, 0),
    ("tdpc", False): (2.000, 2.17, 0.0072, 0), ("tdpc", True): (1.993, 2.85, 0.0214, 0),
    ("wave", False): (2.000, 2.10, 0.0055, 0), ("wave", True): (2.000, 2.26, 0.0140, 0),
}
PREPROCESSORS = {"baseline": "none", "passivity": "passivity", "tdpc": "tdpc", "wave": "wave"}
#: supplementary rows (the dissertation describes the delay compensator, its matrix leaves it out)
COMPENSATORS = {"jitter": "jitter"}


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


def injector(validation: dict, seed: int, model: Optional[str] = None):
    """The jitter injector of ``model`` (default ``validation.jitter_model``, else latest) seeded
    with ``seed``: :class:`ArrivalJitter` (hold) or :class:`DelayJitter` (latest)."""
    model = model or validation.get("jitter_model", "latest")
    if model not in ("hold", "latest"):
        raise ValueError(f"jitter model must be hold or latest, got {model!r}")
    return (ArrivalJitter if model == "hold" else DelayJitter)(
        validation["jitter_mean_s"], validation["jitter_std_s"], np.random.default_rng(seed))


def run_table_13_9(params: InteractionParams, validation: dict, preprocessor: str, jitter: bool,
                   seed: int = 0, model: Optional[str] = None) -> JitterRun:
    """One condition of the table on the C++ tick (module doc); ``params`` from :func:`table_params`;
    ``model``: the injector (:func:`injector`)."""
    kind = {**PREPROCESSORS, **COMPENSATORS}[preprocessor]
    p = dataclasses.replace(params, passivity=dataclasses.replace(params.passivity, filter=kind))
    tick = cxx_kernels().InteractionTick(tick_params(p, 6), np.eye(4))
    tick.set_mode(MODES.index("admittance"), -1.0)
    dt = 1.0 / p.rate_hz
    inj = injector(validation, seed, model) if jitter else None
    link = LinkDelays(p.passivity.jitter.window) if kind == "jitter" else None
    seen = 0
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
            if link is not None and seen < len(inj.delays):   # the compensator: delays of what arrived
                while seen < len(inj.delays):
                    link.observe(inj.delays[seen])
                    seen += 1
                tick.set_link_statistics(link.mean_s, link.std_s)
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


@dataclass
class SeedStats:
    """A jitter row over seeds: the median run and the 5 % / 95 % quantiles of each metric."""
    median: JitterRun
    p5: JitterRun
    p95: JitterRun
    seeds: int


def table_13_9_seeds(params: InteractionParams, validation: dict, seeds: Optional[int] = None,
                     rows=tuple(PREPROCESSORS) + tuple(COMPENSATORS)) -> dict:
    """{(row, jitter): SeedStats}: the no-jitter rows once (no randomness), the jitter rows over
    ``seeds`` seeds (default ``validation.jitter_seeds``) with their median and 5–95 % band."""
    n = int(seeds or validation.get("jitter_seeds", 1))
    out = {}
    for p in rows:
        r = run_table_13_9(params, validation, p, False)
        out[(p, False)] = SeedStats(r, r, r, 1)
        runs = [run_table_13_9(params, validation, p, True, seed) for seed in range(n)]
        q = {f: np.percentile([getattr(x, f) for x in runs], (50, 5, 95)) for f in JitterRun.__dataclass_fields__}
        out[(p, True)] = SeedStats(*(JitterRun(**{f: type(getattr(runs[0], f))(v[i]) for f, v in q.items()})
                                     for i in range(3)), n)
    return out


def format_table_seeds(results: dict) -> str:
    """Markdown: ours (jitter rows: median [5–95 %] over seeds) beside the dissertation's."""
    lines = ["| preprocessor | jitter | final mm (ours / source) | peak mm (ours / source) | "
             "max ‖λ̇‖ (ours / source) | E-viol (ours / source) |", "|---|---|---|---|---|---|"]
    for (p, j), st in results.items():
        m, lo, hi = st.median, st.p5, st.p95
        src = CHANG_TABLE_13_9.get((p, j), ("–",) * 4)
        band = (lambda f, fmt: f" [{fmt.format(getattr(lo, f))}–{fmt.format(getattr(hi, f))}]") if j else (lambda f, fmt: "")
        s = [x if isinstance(x, str) else y.format(x) for x, y in zip(src, ("{:.3f}", "{:.2f}", "{:.4f}", "{}"))]
        lines.append(f"| {p} | {'lognormal' if j else 'off'} | {m.final_mm:.3f}{band('final_mm', '{:.3f}')} / {s[0]} | "
                     f"{m.peak_mm:.2f}{band('peak_mm', '{:.2f}')} / {s[1]} | "
                     f"{m.lam_dot_max:.4f}{band('lam_dot_max', '{:.4f}')} / {s[2]} | "
                     f"{int(round(hi.energy_violations))} / {s[3]} |")
    return "\n".join(lines)


def table_params(section: dict) -> InteractionParams:
    """The ``interaction`` params of the table 13.9 run: the configured admittance diagonal with
    the body-z entries of ``validation`` (M_z, D_z, K_z) and the wave damping with its body-z entry
    ``validation.wave_damping_z_ns_m`` (b_z)."""
    v = section["validation"]
    a = section["admittance"]
    m, d, k = (np.array(a[f"{x}_diag"], dtype=float) for x in ("mass", "damping", "stiffness"))
    m[5], d[5], k[5] = v["mass_z_kg"], v["damping_z_ns_m"], v["stiffness_z_n_m"]
    b = list(section["passivity"]["wave_damping"])
    b[5] = v["wave_damping_z_ns_m"]
    p = InteractionParams.from_config(section)
    return dataclasses.replace(p, admittance=AdmittanceParams.make(m, d, k, a["dexp_dot_step_s"]),
                               passivity=dataclasses.replace(p.passivity, wave_damping=type(p.passivity.wave_damping)(b)))


def main() -> None:
    """``python -m hri_interaction.core.validation [robot]``: print table 13.9 (jitter rows: median and
    5–95 % band over ``validation.jitter_seeds`` seeds) with the delay compensator's rows, ours beside
    the dissertation's."""
    import sys

    from hri_runtime.config.tree import load_robot_config

    sec = load_robot_config(sys.argv[1] if len(sys.argv) > 1 else "fr3")["interaction"]
    print(format_table_seeds(table_13_9_seeds(table_params(sec), sec["validation"])))


if __name__ == "__main__":
    main()
