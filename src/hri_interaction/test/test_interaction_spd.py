"""SPD gain parameterisation (Chang 2026 Lemma 12.1, table 12.3): every draw SPD, validation, blends."""
import numpy as np
import pytest

from hri_interaction.core.spd import (VARIANT_SIZES, GainError, blend, cholesky_params,
                                      spd_from_cholesky, validate_spd)


@pytest.mark.parametrize("variant", sorted(VARIANT_SIZES))
def test_every_random_draw_is_spd_and_round_trips(variant):
    rng = np.random.default_rng(1)
    for _ in range(100):
        p = rng.normal(scale=2.0, size=VARIANT_SIZES[variant])
        G = spd_from_cholesky(p, variant)
        assert np.abs(G - G.T).max() == 0.0
        assert np.linalg.eigvalsh(G)[0] > 0
        assert np.allclose(cholesky_params(G, variant), p, atol=1e-8)


def test_variant_sizes_match_table_12_3():
    # action a_t = [δξ (6), chol K, chol D]: 18 / 30 / 48
    assert {v: 6 + 2 * n for v, n in VARIANT_SIZES.items()} == {"diagonal": 18, "block": 30, "full": 48}


def test_block_variant_has_no_cross_terms():
    G = spd_from_cholesky(np.r_[np.zeros(6), np.ones(6)], "block")
    assert np.all(G[:3, 3:] == 0) and np.all(G[3:, :3] == 0)


@pytest.mark.parametrize("bad, why", [
    (np.diag([1, 1, 1, 1, 1, -1.0]), "positive definite"),
    (np.diag([1, 1, 1, 1, 1, 0.0]), "positive definite"),
    (np.diag([1, 1, 1, 1, 1, np.nan]), "finite"),
    (np.eye(6) + np.triu(np.ones((6, 6)), 1), "symmetric"),
    (np.eye(5), "6x6"),
])
def test_bad_gains_are_rejected_with_a_reason(bad, why):
    with pytest.raises(GainError, match=why):
        validate_spd(bad)


def test_semidefinite_allows_zero_stiffness():
    assert validate_spd(np.zeros(6), semidefinite=True).shape == (6, 6)


def test_convex_blend_stays_spd():
    rng = np.random.default_rng(2)
    A = spd_from_cholesky(rng.normal(size=21))
    B = spd_from_cholesky(rng.normal(size=21))
    for a in (0.0, 0.5, 1.0, 0.123):
        assert np.linalg.eigvalsh(blend(A, B, a))[0] > 0
    assert np.allclose(blend(A, B, 0.0), A) and np.allclose(blend(A, B, 1.0), B)
