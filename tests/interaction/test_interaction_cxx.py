"""The C++ kernels (hri_core._hri_core.interaction) agree with the Python reference to rounding."""
import sys
from pathlib import Path

import numpy as np
import pytest

from hri_core import se3

from hri_interaction.core.admittance import AdmittanceParams  # noqa: E402
from hri_interaction.core.impedance import cxx_kernels  # noqa: E402
from hri_interaction.core.spd import spd_from_cholesky  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))   # the oracle package next to this file
from oracle.admittance import LieAdmittance  # noqa: E402
from oracle.impedance import lie_impedance_torque  # noqa: E402

cx = cxx_kernels()
assert cx is not None, "hri_core built without its interaction kernels: rebuild it (make venv)"


def gains(rng):
    return [spd_from_cholesky(rng.normal(size=21)) for _ in range(3)]


def test_impedance_torque_cxx_equals_python():
    rng = np.random.default_rng(0)
    for _ in range(50):
        K, D, _ = gains(rng)
        T = se3.exp(rng.normal(size=6))
        Tr = se3.exp(rng.normal(size=6) * 0.2) @ T
        Vb, J, b, Vr = rng.normal(size=6), rng.normal(size=(6, 7)), rng.normal(size=7), rng.normal(size=6)
        for ref in (None, Vr):
            py = lie_impedance_torque(T, Vb, J, b, Tr, K, D, ref, use_cxx=False)
            assert np.allclose(cx.lie_impedance_torque(T, Vb, J, b, Tr, K, D, ref), py, atol=1e-10, rtol=1e-12)


def test_admittance_step_cxx_equals_python_over_a_trajectory():
    rng = np.random.default_rng(1)
    M, D, K = gains(rng)
    p = AdmittanceParams.make(M, D, K)
    a, b = LieAdmittance(p, use_cxx=True), LieAdmittance(p, use_cxx=False)
    for s in (a, b):
        s.reset(np.full(6, 0.1), np.full(6, 0.2))
    for k in range(500):
        F = np.sin(k * 0.01) * np.arange(1.0, 7.0)
        a.step(F, 1e-3)
        b.step(F, 1e-3)
    assert np.allclose(a.lam, b.lam, atol=1e-12) and np.allclose(a.lam_dot, b.lam_dot, atol=1e-12)


def test_kernel_rejects_mismatched_sizes():
    rng = np.random.default_rng(2)
    K, D, _ = gains(rng)
    with pytest.raises(Exception, match="bias"):
        cx.lie_impedance_torque(np.eye(4), np.zeros(6), np.zeros((6, 7)), np.zeros(6), np.eye(4), K, D)
