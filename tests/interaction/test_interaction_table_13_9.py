"""Chang 2026 table 13.9 reproduced: K_z = 2500 N/m, −5 N along body z from t = 1 s (0.5 s ramp),
5 s at 1 kHz, four wrench preprocessors (and the delay compensator) × {no jitter, lognormal
arrivals (mean 137 ms, std 78.76 ms)}; M_z, D_z, b_z and the injector from the config tree.

Accepted: final |Δp| = F/K = 2.000 mm ± 1 % in all rows (the jitter rows: their median over seeds),
zero energy (passivity) violations, the passivity family equal to the baseline (the PC never acts);
with jitter the baseline peak and max ‖λ̇‖ rise by the dissertation's factors (+31 %, ×3.0) to within
its own rounding, the wave-variable peak stays within 5 % of the no-jitter behaviour, and the delay
compensator takes the jitter rows down as the wave transform does. Our table beside the
dissertation's is in docs/validation.md (``python -m hri_interaction.core.validation``)."""
import pytest

import hri_core.se3  # noqa: F401  (required: a missing install fails here)

from hri_runtime.config.tree import load_robot_config
from hri_interaction.core.validation import (CHANG_TABLE_13_9, COMPENSATORS, PREPROCESSORS, format_table_seeds,
                                             table_13_9, table_13_9_seeds, table_params)

SEEDS = 15   # the documented table uses validation.jitter_seeds (101); the medians settle well before


@pytest.fixture(scope="module")
def results():
    sec = load_robot_config("fr3")["interaction"]
    adm, pas = table_params(sec)
    v = sec["validation"]
    assert v["jitter_model"] == "hold"
    return v, table_13_9_seeds(adm, pas, v, sec["rate_hz"], seeds=SEEDS)


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
    adm, pas = table_params(sec)
    v = dict(sec["validation"], jitter_model="latest")
    res = table_13_9(adm, pas, v, sec["rate_hz"], seed=0)
    assert res[("baseline", True)].peak_mm == pytest.approx(res[("baseline", False)].peak_mm, rel=0.03)


def test_all_four_preprocessors_present():
    assert set(PREPROCESSORS) == {"baseline", "passivity", "tdpc", "wave"}
    assert set(COMPENSATORS) == {"jitter"}
