"""Wrench preprocessors (the Python oracle of the C++ tick's filters): PO/PC, per-DoF TDPC,
wave-variable damping."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from hri_interaction.core.passivity import PassivityParams

sys.path.insert(0, str(Path(__file__).resolve().parent))   # the oracle package next to this file
from oracle.passivity import (PassivityFilter, Passthrough, TDPCFilter,  # noqa: E402
                              WaveVariableTransform, make_filter)


def active_port(n=500, seed=0):
    """A port that returns energy: w opposes λ̇ (λ̇ᵀw < 0 on average)."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        v = rng.normal(size=6)
        yield -2.0 * v + 0.5 * rng.normal(size=6), v


def test_baseline_observes_and_counts_violations_of_an_active_port():
    f = Passthrough(0.0)
    for w, v in active_port():
        assert np.array_equal(f.filter(w, v, 1e-3), w)
    assert f.energy_j < 0 and f.violations > 0


@pytest.mark.parametrize("cls", [PassivityFilter, TDPCFilter])
def test_passivity_controller_keeps_energy_at_the_floor(cls):
    f = cls(0.0)
    for w, v in active_port():
        out = f.filter(w, v, 1e-3)
        assert np.all(np.isfinite(out))
        assert f.energy_j >= -1e-12
    assert f.violations == 0
    assert f.dissipated_j > 0


def test_pc_acts_only_along_the_velocity_and_only_by_the_deficit():
    f = PassivityFilter(0.0)
    w, v = np.array([-1.0, 0.7, 0, 0, 0, 0]), np.array([1.0, 0, 0, 0, 0, 0])
    out = f.filter(w, v, 1e-3)
    alpha = (0.0 - (1e-3 * -1.0)) / (1e-3 * 1.0)
    assert np.allclose(out, w + alpha * v) and alpha >= 0
    assert out[1] == w[1]                 # the component orthogonal to λ̇ is untouched
    assert f.energy_j == pytest.approx(0.0, abs=1e-15)


def test_pc_is_inactive_for_a_passive_load():
    f = PassivityFilter(0.0)
    v = np.zeros(6)
    for k in range(100):
        w = np.r_[0, 0, 0, 0, 0, -5.0]
        assert np.array_equal(f.filter(w, v, 1e-3), w)
        v = v + np.r_[0, 0, 0, 0, 0, -1e-3]
    assert f.dissipated_j == 0.0 and f.energy_j > 0


def test_tdpc_acts_per_dof():
    f = TDPCFilter(0.0)
    w = np.array([1.0, -1.0, 0, 0, 0, 0])
    v = np.array([1.0, 1.0, 0, 0, 0, 0])   # dof 0 absorbs, dof 1 generates
    out = f.filter(w, v, 1e-3)
    assert out[0] == w[0] and out[1] != w[1]
    assert np.all(f.energy_dof_j >= -1e-15)


def test_wave_transform_is_constant_damping_and_passive():
    b = np.array([2, 2, 2, 60, 60, 60.0])
    f = WaveVariableTransform(b, 0.0)
    w, v = np.array([0, 0, 0, 0, 0, -5.0]), np.array([0, 0, 0, 0, 0, 0.01])
    assert np.allclose(f.filter(w, v, 1e-3), w - b * v)
    u, s = f.wave_variables(w, v)
    assert np.allclose(0.5 * (u ** 2 - s ** 2), v * w)   # power = ½(u² − v²) per DoF
    assert f.dissipated_j == pytest.approx(60 * 0.01 ** 2 * 1e-3)


def test_params_from_config_validate():
    good = {"filter": "wave", "energy_floor_j": 0.0, "wave_damping": [1] * 6, "po_pc": {"max_damping": 7.0},
            "jitter": {"alpha_base": [0.0] * 6, "alpha_scale": [1.0] * 6, "window": 10}}
    assert isinstance(make_filter(PassivityParams.from_config(good)), WaveVariableTransform)
    for kind in ("passivity", "tdpc"):   # the cap reaches the filters
        assert make_filter(PassivityParams.from_config(good), kind).max_damping == 7.0
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="max_damping"):
            PassivityParams.from_config({**good, "po_pc": {"max_damping": bad}})
    with pytest.raises(ValueError, match="filter"):
        PassivityParams.from_config({**good, "filter": "magic"})
    with pytest.raises(ValueError, match="wave_damping"):
        PassivityParams.from_config({**good, "wave_damping": [1, 1, 1, 1, 1, -1]})


def test_configured_cap_is_the_one_in_the_config_tree():
    from hri_runtime.config.tree import load_robot_config

    sec = load_robot_config("fr3")["interaction"]["passivity"]
    p = PassivityParams.from_config(sec)
    assert p.po_pc.max_damping == sec["po_pc"]["max_damping"] and math.isfinite(p.po_pc.max_damping)
    assert make_filter(p, "passivity").max_damping == p.po_pc.max_damping


def _deficit_then_creep(f, dt=1e-3, v_small=1e-6):
    """One tick that puts the observer 1 mJ below its floor with λ̇ = 0 (nothing to act on), then
    ticks at a tiny velocity: the uncapped α would be 1e-3 / (dt v²) = 1e12."""
    f.energy_j = f.energy_floor_j - 1e-3
    if isinstance(f, TDPCFilter):
        f.energy_dof_j[:] = f.energy_floor_j / 6.0
        f.energy_dof_j[5] -= 1e-3
    v = np.zeros(6)
    v[5] = v_small
    return v


@pytest.mark.parametrize("cls", [PassivityFilter, TDPCFilter])
def test_alpha_is_capped_at_tiny_velocity_and_the_deficit_stays_visible(cls):
    cap, dt = 500.0, 1e-3
    f = cls(0.0, max_damping=cap)
    v = _deficit_then_creep(f, dt)
    w = np.zeros(6)
    out = f.filter(w, v, dt)
    alpha = np.atleast_1d(f.last_alpha)
    assert np.all(np.abs(alpha) <= cap) and np.max(alpha) == cap        # capped, and acting
    np.testing.assert_allclose(out, w + cap * v * (1 if cls is PassivityFilter else np.r_[0, 0, 0, 0, 0, 1]))
    assert np.max(np.abs(out)) <= cap * 1e-6 + 1e-15                    # no huge corrective wrench
    assert f.saturations == 1
    # the energy that could not be dissipated is still there: below the floor, flagged
    assert f.deficit_j == pytest.approx(1e-3 - cap * 1e-12 * dt, rel=1e-9)
    assert f.violations == 1
    # and it is carried, not reset: the next tick saturates again, the deficit shrinks only by α v² dt
    f.filter(w, v, dt)
    assert f.saturations == 2 and f.violations == 2
    assert f.deficit_j == pytest.approx(1e-3 - 2 * cap * 1e-12 * dt, rel=1e-9)


@pytest.mark.parametrize("cls", [PassivityFilter, TDPCFilter])
def test_uncapped_alpha_would_have_been_huge(cls):
    """The failure the cap removes (can fail: without a cap α reaches 1e12)."""
    f = cls(0.0)                                    # math.inf: the textbook controller
    v = _deficit_then_creep(f)
    out = f.filter(np.zeros(6), v, 1e-3)
    assert np.max(np.atleast_1d(f.last_alpha)) == pytest.approx(1e12, rel=1e-6)
    assert np.max(np.abs(out)) == pytest.approx(1e6, rel=1e-6)        # 1 MN from a 1 mJ deficit
    assert f.saturations == 0 and f.deficit_j == pytest.approx(0.0, abs=1e-12)


def test_cap_not_reached_behaves_exactly_like_the_uncapped_controller():
    a, b = PassivityFilter(0.0, max_damping=500.0), PassivityFilter(0.0)
    for w, v in active_port():
        np.testing.assert_array_equal(a.filter(w, v, 1e-3), b.filter(w, v, 1e-3))
    assert a.saturations == 0 and a.violations == 0 and a.dissipated_j == b.dissipated_j > 0
