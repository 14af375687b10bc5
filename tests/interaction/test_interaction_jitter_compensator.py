"""The delay compensator (Chang 2026 §13.6.3: JitterCompensator, α = α_base + α_scale σ_rtt/μ_rtt,
w_safe = w − α ⊙ λ̇) as ``interaction.passivity.filter: jitter`` of the C++ tick — the same
arithmetic as the Python oracle (tests/interaction/oracle/passivity.py, to 1e-9), its statistics
over the observed link delays (``hri_interaction.core.passivity.LinkDelays``, what the tick is
given) — and the arrival-pattern injector (``ArrivalJitter``) of the table 13.9 jitter rows:
messages arrive at lognormal intervals of the configured mean and std, each with the value sent
one delay earlier, held in between."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from hri_core._hri_core import interaction as cx   # required: a missing build fails here
from hri_runtime.config.tree import load_robot_config
from hri_interaction.core.controller import InteractionParams, tick_params
from hri_interaction.core.passivity import ArrivalJitter, LinkDelays

sys.path.insert(0, str(Path(__file__).resolve().parent))   # the oracle package next to this file
from oracle.admittance import LieAdmittance  # noqa: E402
from oracle.passivity import JitterCompensator, make_filter  # noqa: E402


@pytest.fixture(scope="module")
def params():
    cfg = load_robot_config("fr3")
    cfg["interaction"]["passivity"]["filter"] = "jitter"
    cfg["interaction"]["mode"] = "admittance"
    return InteractionParams.from_tree(cfg)


def test_alpha_follows_the_spread_of_the_observed_delays(params):
    j = params.passivity.jitter
    f = make_filter(params.passivity)
    assert isinstance(f, JitterCompensator)
    np.testing.assert_array_equal(f.alpha, j.alpha_base)          # nothing observed: α_base
    f.observe(0.1)
    np.testing.assert_array_equal(f.alpha, j.alpha_base)          # one delay has no spread
    for d in (0.3, float("nan"), -1.0, float("inf")):               # bad delays are ignored
        f.observe(d)
    assert list(f.delays) == [0.1, 0.3]
    assert f.spread == pytest.approx(0.1 / 0.2)
    np.testing.assert_allclose(f.alpha, np.asarray(j.alpha_base) + 0.5 * np.asarray(j.alpha_scale))
    for _ in range(j.window):                                        # the window forgets the old ones
        f.observe(0.2)
    assert f.spread == 0.0
    # at the table 13.9 link (σ/μ = 78.76/137) α equals the wave damping b (how α_scale was chosen)
    v = load_robot_config("fr3")["interaction"]["validation"]
    f.set_statistics(v["jitter_mean_s"], v["jitter_std_s"])
    np.testing.assert_allclose(f.alpha, params.passivity.wave_damping, rtol=1e-2)


def test_the_link_statistics_the_tick_is_given_are_the_oracles_window():
    """``LinkDelays`` (what the engine's caller pushes to ``set_link_statistics``) and the oracle's
    own window agree on every delay of a jittered link, bad delays ignored by both."""
    j = load_robot_config("fr3")["interaction"]["passivity"]["jitter"]
    link, f = LinkDelays(j["window"]), JitterCompensator(j["alpha_base"], j["alpha_scale"], j["window"])
    assert (link.mean_s, link.std_s) == (0.0, 0.0)
    rng = np.random.default_rng(9)
    for d in list(rng.lognormal(np.log(0.137), 0.5, size=3 * j["window"])) + [float("nan"), -1.0]:
        assert link.observe(d) == (np.isfinite(d) and d >= 0)
        f.observe(d)
        assert link.mean_s == pytest.approx(f.mean_s, rel=1e-12) and link.std_s == pytest.approx(f.std_s, rel=1e-12)
    assert len(link.delays) == j["window"]
    with pytest.raises(ValueError):
        LinkDelays(1)


def test_the_compensator_damps_the_admittance_and_accounts_the_energy(params):
    f = make_filter(params.passivity)
    f.set_statistics(0.137, 0.07876)
    ld = np.array([0.0, 0.0, 0.1, 0.0, 0.0, 0.02])
    w = np.array([0.0, 0.0, 0.0, 0.0, 0.0, -5.0])
    out = f.filter(w, ld, 1e-3)
    np.testing.assert_allclose(out, w - f.alpha * ld)
    assert f.dissipated_j == pytest.approx(1e-3 * float(ld @ (f.alpha * ld)))


def _arm_state(n=7):
    rng = np.random.default_rng(1)
    Jb = np.eye(6, n) + 0.2 * rng.normal(size=(6, n))
    z = np.zeros(n)
    return z, z, np.eye(4), np.zeros(6), Jb, z, z


def test_the_cpp_tick_filters_as_the_python_compensator(params):
    """Admittance mode under a −5 N body-z step and a moment: λ, λ̇, the observer's energy and the
    dissipated energy of the C++ tick (filter 'jitter') equal LieAdmittance + JitterCompensator."""
    n = 7
    k = cx.InteractionTick(tick_params(params, n, "lie"), np.eye(4))
    k.set_mode(1, -1.0)
    k.set_link_statistics(0.137, 0.07876)
    assert k.link_spread == pytest.approx(0.07876 / 0.137)
    adm = LieAdmittance(params.admittance)
    f = make_filter(params.passivity)
    f.set_statistics(0.137, 0.07876)
    w = np.array([0.0, 0.05, 0.0, 0.0, 0.0, -5.0])
    k.set_wrench(w, True)
    state = _arm_state(n)
    worst = 0.0
    for _ in range(1500):
        k.tick(*state, 1e-3)
        adm.step(f.filter(w, adm.lam_dot, 1e-3), 1e-3)
        worst = max(worst, float(np.abs(np.asarray(k.lam) - adm.lam).max()),
                    float(np.abs(np.asarray(k.lam_dot) - adm.lam_dot).max()))
        assert k.energy_j == pytest.approx(f.energy_j, abs=1e-9)
        assert k.dissipated_j == pytest.approx(f.dissipated_j, abs=1e-9)
    assert worst < 1e-9
    assert k.dissipated_j > 0.0
    # unknown statistics (a bad pair): no spread, α = α_base
    k.set_link_statistics(float("nan"), 0.1)
    assert k.link_spread == 0.0
    k.set_link_statistics(0.0, 0.1)
    assert k.link_spread == 0.0


def test_the_arrival_injector_holds_values_between_lognormal_arrivals():
    mean, std = 0.137, 0.07876
    inj = ArrivalJitter(mean, std, np.random.default_rng(3))
    dt = 1e-3
    seen, arrivals_t, last = [], [], None
    for k in range(200000):                       # 200 s of a ramp t -> t
        t = k * dt
        inj.push(t, np.array([t]))
        v = float(inj.get(t, np.array([-1.0]))[0])
        if v != last:
            arrivals_t.append(t)
            seen.append(t - v)                    # the age of the value at its arrival
            last = v
    gaps = np.diff(arrivals_t[1:])
    assert len(gaps) > 1000
    assert np.mean(gaps) == pytest.approx(mean, rel=0.05)    # the renewal process of the config
    assert np.std(gaps) == pytest.approx(std, rel=0.1)
    ages = np.asarray(seen[1:])
    assert np.mean(ages) == pytest.approx(mean, rel=0.05)      # each value one delay old on arrival
    assert np.mean(list(inj.delays)) == pytest.approx(mean, rel=0.05)
    assert inj.arrivals == len(inj.delays)
    # between arrivals the value is held: far fewer distinct values than ticks
    assert len(arrivals_t) < 200000 * dt / mean * 1.1
