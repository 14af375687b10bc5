"""Chang 2026 table 13.9 reproduced: K_z = 2500 N/m, −5 N along body z from t = 1 s (0.5 s ramp),
5 s at 1 kHz, four wrench preprocessors (and the delay compensator) × {no jitter, lognormal
arrivals (mean 137 ms, std 78.76 ms)}; M_z, D_z, b_z and the injector from the config tree.

Accepted: final |Δp| = F/K = 2.000 mm ± 1 % in all rows (the jitter rows: their median over seeds),
zero energy (passivity) violations, the passivity family equal to the baseline (the PC never acts);
with jitter the baseline peak and max ‖λ̇‖ rise by the dissertation's factors (+31 %, ×3.0) to within
its own rounding, the wave-variable peak stays within 5 % of the no-jitter behaviour, and the delay
compensator takes the jitter rows down as the wave transform does. Our table beside the
dissertation's is in docs/validation.md (``python -m hri_interaction.core.validation``). The table
runs on the C++ tick; the same protocol on the Python oracle's admittance and filters (its own
delay statistics for the compensator) gives the same table to 1e-9."""
import sys
from pathlib import Path

import numpy as np
import pytest

import hri_core.se3  # noqa: F401  (required: a missing install fails here)

from hri_runtime.config.tree import load_robot_config
from hri_interaction.core.validation import (CHANG_TABLE_13_9, COMPENSATORS, PREPROCESSORS, JitterRun,
                                             force_profile, format_table_seeds, injector, run_table_13_9,
                                             table_13_9, table_13_9_seeds, table_params)

sys.path.insert(0, str(Path(__file__).resolve().parent))   # the oracle package next to this file
from oracle.admittance import LieAdmittance  # noqa: E402
from oracle.passivity import make_filter  # noqa: E402

SEEDS = 15   # the documented table uses validation.jitter_seeds (101); the medians settle well before


@pytest.fixture(scope="module")
def results():
    sec = load_robot_config("fr3")["interaction"]
    v = sec["validation"]
    assert v["jitter_model"] == "hold"
    return v, table_13_9_seeds(table_params(sec), v, seeds=SEEDS)


def oracle_run(params, validation: dict, preprocessor: str, jitter: bool, seed: int = 0) -> JitterRun:
    """The protocol on the Python oracle: its Lie admittance and wrench filter, stepped directly;
    the delay compensator observes the delays of the arrived messages itself."""
    dt = 1.0 / params.rate_hz
    kernel = LieAdmittance(params.admittance)
    filt = make_filter(params.passivity, {**PREPROCESSORS, **COMPENSATORS}[preprocessor])
    inj = injector(validation, seed) if jitter else None
    observe, seen = getattr(filt, "observe", None), 0
    T_d, zero, peak, vmax = np.eye(4), np.zeros(6), 0.0, 0.0
    for k in range(int(round(validation["duration_s"] * params.rate_hz))):
        w = np.zeros(6)
        w[5] = force_profile(k * dt, validation)
        if inj is not None:
            inj.push(k * dt, w)
            w = inj.get(k * dt, zero)
            while observe is not None and seen < len(inj.delays):
                observe(inj.delays[seen])
                seen += 1
        kernel.step(filt.filter(w, kernel.lam_dot, dt), dt)
        dp = float(np.linalg.norm(kernel.modified_pose(T_d)[:3, 3] - T_d[:3, 3]))
        peak = max(peak, dp)
        vmax = max(vmax, float(np.linalg.norm(kernel.lam_dot)))
    return JitterRun(final_mm=dp * 1e3, peak_mm=peak * 1e3, lam_dot_max=vmax,
                     energy_violations=filt.violations, min_energy_j=filt.min_energy_j,
                     pc_dissipated_j=filt.dissipated_j, pc_saturations=filt.saturations)


def test_the_cxx_table_is_the_oracles_table():
    """Every row (the compensator's too), with and without jitter (seed 0 of the configured
    injector): the C++ tick and the oracle to 1e-9."""
    sec = load_robot_config("fr3")["interaction"]
    v, params = sec["validation"], table_params(sec)
    res = table_13_9(params, v, seed=0)
    res.update({("jitter", j): run_table_13_9(params, v, "jitter", j, seed=0) for j in (False, True)})
    for (pre, jit), r in res.items():
        o = oracle_run(params, v, pre, jit, seed=0)
        for f in ("final_mm", "peak_mm", "lam_dot_max", "min_energy_j", "pc_dissipated_j"):
            assert getattr(r, f) == pytest.approx(getattr(o, f), rel=1e-9, abs=1e-12), (pre, jit, f)
        assert (r.energy_violations, r.pc_saturations) == (o.energy_violations, o.pc_saturations)
    assert res[("jitter", True)].pc_dissipated_j > 0.0      # the compensator acted


def test_final_displacement_is_F_over_K_within_1_percent_in_all_rows(results):
    v, res = results
    expected_mm = abs(v["force_n"]) / v["stiffness_z_n_m"] * 1e3
    assert expected_mm == pytest.approx(2.0)
    assert len(res) == 2 * (len(PREPROCESSORS) + len(COMPENSATORS))
    for key, r in res.items():
        assert r.median.final_mm == pytest.approx(expected_mm, rel=v["final_tolerance"]), (key, format_table_seeds(res))


def test_zero_energy_violations(results):
    _, res = results
    for key, r in res.items():
        assert r.p95.energy_violations == 0, key
        assert r.p5.min_energy_j >= 0.0
        if key[0] in ("passivity", "tdpc"):
            assert r.p95.pc_dissipated_j == 0.0   # the load never triggers the passivity controller


def test_passivity_family_equals_baseline_when_the_pc_is_idle(results):
    _, res = results
    for j in (False, True):
        for p in ("passivity", "tdpc"):
            assert res[(p, j)].median.peak_mm == pytest.approx(res[("baseline", j)].median.peak_mm, abs=1e-12)


def test_jitter_raises_the_baseline_peak_and_velocity_as_in_the_dissertation(results):
    """Source: peak 2.17 -> 2.85 mm (+31 %), max ‖λ̇‖ 0.0072 -> 0.0214 (×3.0), one run. Over seeds:
    its velocity near our median (within 10 % over the 15 seeds here; −0.9 % over the documented 101),
    its peak inside our 5–95 % band, a rise of the same kind."""
    _, res = results
    off, on = res[("baseline", False)].median, res[("baseline", True)]
    src_on = CHANG_TABLE_13_9[("baseline", True)]
    assert on.median.lam_dot_max == pytest.approx(src_on[2], rel=0.10)
    assert on.p5.peak_mm < src_on[1] < on.p95.peak_mm
    assert on.median.peak_mm / off.peak_mm > 1.15 and on.median.lam_dot_max / off.lam_dot_max > 2.5


def test_the_no_jitter_rows_match_the_dissertation_within_1_percent(results):
    """M_z, D_z, b_z (config, ours) are fitted to the deterministic rows: peak and max ‖λ̇‖ of the
    baseline and wave rows within 1 %."""
    _, res = results
    for p in ("baseline", "wave"):
        src, ours = CHANG_TABLE_13_9[(p, False)], res[(p, False)].median
        assert ours.peak_mm == pytest.approx(src[1], rel=0.01), p
        assert ours.lam_dot_max == pytest.approx(src[2], rel=0.01), p


def test_wave_variable_peak_within_5_percent_of_the_no_jitter_behaviour(results):
    """The dissertation: the wave transform recovers "the no-jitter behaviour to within 5 %" (its
    2.26 mm against the 2.17 mm of the no-jitter run)."""
    v, res = results
    assert res[("wave", True)].median.peak_mm == pytest.approx(res[("baseline", False)].median.peak_mm,
                                                               rel=v["wave_peak_tolerance"])


def test_wave_damping_lowers_peak_and_velocity(results):
    _, res = results
    for j in (False, True):
        assert res[("wave", j)].median.peak_mm < res[("baseline", j)].median.peak_mm
        assert res[("wave", j)].median.lam_dot_max < res[("baseline", j)].median.lam_dot_max


def test_the_delay_compensator_is_idle_without_jitter_and_damps_the_jitter_rows(results):
    """No spread observed: α = α_base = 0, the baseline row exactly. With the jittered link it
    observes σ/μ ≈ 0.575 and damps like the wave transform: its jitter peak within 5 % of the
    no-jitter behaviour, well below the baseline's."""
    v, res = results
    assert res[("jitter", False)].median.peak_mm == pytest.approx(res[("baseline", False)].median.peak_mm, abs=1e-12)
    on = res[("jitter", True)].median
    assert on.peak_mm < res[("baseline", True)].median.peak_mm
    assert on.peak_mm == pytest.approx(res[("baseline", False)].median.peak_mm, rel=v["wave_peak_tolerance"])
    assert on.lam_dot_max < 0.8 * res[("baseline", True)].median.lam_dot_max


def test_the_latest_value_injector_barely_moves_the_peak():
    """The other reading of the injector (every 1 kHz sample delayed, the newest arrival wins): the
    lag is the minimum of many draws, the ramp stays smooth, jitter adds almost nothing — why it
    does not reproduce the dissertation's rows (docs/validation.md)."""
    sec = load_robot_config("fr3")["interaction"]
    v = dict(sec["validation"], jitter_model="latest")
    res = table_13_9(table_params(sec), v, seed=0)
    assert res[("baseline", True)].peak_mm == pytest.approx(res[("baseline", False)].peak_mm, rel=0.03)


def test_all_four_preprocessors_present():
    assert set(PREPROCESSORS) == {"baseline", "passivity", "tdpc", "wave"}
    assert set(COMPENSATORS) == {"jitter"}
