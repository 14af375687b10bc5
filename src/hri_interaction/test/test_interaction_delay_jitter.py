"""The lognormal delay injector of the table 13.9 run and the arm stack (Chang 2026 ch. 13)."""
import math

import numpy as np
import pytest

from hri_interaction.core.passivity import DelayJitter, lognormal_from_moments


def test_lognormal_injector_matches_the_dissertation_moments_and_drops_out_of_order():
    mu, sigma = lognormal_from_moments(0.137, 0.07876)
    assert sigma == pytest.approx(0.534, abs=1e-3) and mu + math.log(1000) == pytest.approx(4.777, abs=1e-3)  # Chang 2026, table 13.9: μ = 4.777 (ms)
    inj = DelayJitter(0.137, 0.07876, np.random.default_rng(0))
    out = []
    for k in range(20000):
        inj.push(k * 1e-3, np.array([k * 1e-3]))
        out.append(inj.get(k * 1e-3, np.array([-1.0]))[0])
    d = np.array(inj.delays)
    assert d.mean() == pytest.approx(0.137, rel=0.03) and d.std() == pytest.approx(0.07876, rel=0.05)
    sent = np.array(out)
    assert np.all(np.diff(sent) >= 0)             # latest value only, never older than before
    assert inj.dropped > 0
    lag = np.arange(20000) * 1e-3 - sent
    assert 0 < np.median(lag[1000:]) < 0.137      # latest-of-many arrives earlier than the mean
