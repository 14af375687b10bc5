"""Lie-group admittance (Chang 2026 app. H): property tests on M_λ, D_λ, energy, H.2, convergence (the Python oracle; its step runs the C++ kernel when the core has it)."""
import sys
from pathlib import Path

import numpy as np
import pytest

from hri_core import se3

from hri_interaction.core.admittance import AdmittanceParams
from hri_interaction.core.spd import spd_from_cholesky

sys.path.insert(0, str(Path(__file__).resolve().parent))   # the oracle package next to this file
from oracle.admittance import CartesianAdmittance, LieAdmittance, body_wrench_from_world  # noqa: E402


def _drive(kernels, F, steps: int, dt: float = 1e-3) -> None:
    """``steps`` admittance steps of every kernel under the constant wrench ``F``."""
    for _ in range(steps):
        for k in kernels:
            k.step(F, dt)


def random_params(rng, scale=0.5, stiffness=True):
    M = spd_from_cholesky(rng.normal(scale=scale, size=21))
    D = spd_from_cholesky(rng.normal(scale=scale, size=21))
    K = spd_from_cholesky(rng.normal(scale=scale, size=21)) if stiffness else np.zeros((6, 6))
    return AdmittanceParams.make(M, D, K)


def test_M_lambda_is_spd_for_random_spd_inputs():
    rng = np.random.default_rng(3)
    for _ in range(200):
        a = LieAdmittance(random_params(rng, scale=1.0))
        _, M_l, _ = a.matrices(rng.normal(size=6), rng.normal(size=6))
        assert np.abs(M_l - M_l.T).max() < 1e-9 * np.abs(M_l).max()
        assert np.linalg.eigvalsh(M_l)[0] > 0


def test_D_lambda_is_spd_at_rest_and_its_dissipation_is_J_ldot_D_J_ldot():
    """D_λ = Jᵀ(DJ + M J̇) is SPD when λ̇ = 0. For λ̇ ≠ 0 the M J̇ term makes it non-symmetric
    (and, for large λ̇, indefinite – shown below), but the power it removes beyond the
    inertial exchange is exactly λ̇ᵀD_λλ̇ − ½λ̇ᵀṀ_λλ̇ = (Jλ̇)ᵀ D (Jλ̇) > 0, which is what passivity
    needs."""
    rng = np.random.default_rng(4)
    indefinite = 0
    for _ in range(200):
        a = LieAdmittance(random_params(rng, scale=1.0))
        lam, lam_dot = rng.normal(size=6), rng.normal(size=6)
        J, _, D0 = a.matrices(lam, np.zeros(6))
        assert np.linalg.eigvalsh(0.5 * (D0 + D0.T))[0] > 0 and np.allclose(D0, D0.T)
        J, M_l, D_l = a.matrices(lam, lam_dot)
        h = 1e-6
        M_dot = (a.matrices(lam + h * lam_dot, lam_dot)[1] - a.matrices(lam - h * lam_dot, lam_dot)[1]) / (2 * h)
        lhs = lam_dot @ D_l @ lam_dot - 0.5 * lam_dot @ M_dot @ lam_dot
        V = J @ lam_dot
        assert lhs == pytest.approx(V @ a.params.damping @ V, rel=1e-5)
        assert lhs > 0
        indefinite += np.linalg.eigvalsh(0.5 * (D_l + D_l.T))[0] <= 0
    assert indefinite > 0  # documented: D_λ alone is not SPD in general


def test_dexp_dot_analytic_matches_central_difference():
    rng = np.random.default_rng(5)
    a = LieAdmittance(random_params(rng))
    for _ in range(20):
        lam, lam_dot = rng.normal(size=6), rng.normal(size=6)
        h = 1e-6
        fd = (se3.left_jacobian(lam + h * lam_dot) - se3.left_jacobian(lam - h * lam_dot)) / (2 * h)
        assert np.allclose(a.dexp_dot(lam, lam_dot), fd, atol=1e-7)


def test_energy_of_the_undriven_admittance_never_increases():
    rng = np.random.default_rng(6)
    for trial in range(20):
        a = LieAdmittance(random_params(rng, stiffness=trial % 4 != 0))
        a.reset(rng.normal(size=6) * 0.5, rng.normal(size=6) * 0.5)
        E = [a.energy()]
        for _ in range(2000):
            a.step(np.zeros(6), 1e-3)
            E.append(a.energy())
        dE = np.diff(E)
        assert dE.max() <= 1e-12 * E[0], f"trial {trial}: energy grew by {dE.max():.3g} J"
        assert E[-1] < E[0]


def test_undriven_admittance_converges_to_identity():
    a = LieAdmittance(AdmittanceParams.make([1] * 6, [8] * 6, [10] * 6))
    a.reset(np.array([0.3, -0.2, 0.1, 0.05, 0.02, -0.04]), np.zeros(6))
    _drive([a], np.zeros(6), 20000)
    assert np.abs(a.lam).max() < 1e-6
    assert np.allclose(a.modified_pose(np.eye(4)), np.eye(4), atol=1e-6)


def test_constant_wrench_gives_K_lambda_equal_gamma_and_modified_pose_is_Td_exp_lambda():
    K = np.diag([50, 50, 50, 2500, 2500, 2500.0])
    a = LieAdmittance(AdmittanceParams.make([0.5] * 3 + [4] * 3, [6] * 3 + [160] * 3, K))
    F = np.array([0.5, -0.3, 0.2, 3.0, -5.0, 4.0])
    _drive([a], F, 20000)
    # equilibrium of H.3: K λ = dexp_λᵀ F
    assert np.allclose(K @ a.lam, se3.left_jacobian(a.lam).T @ F, atol=1e-9)
    T_d = se3.exp(np.array([0.1, 0.2, -0.3, 0.4, 0.5, 0.6]))
    assert np.allclose(a.modified_pose(T_d), T_d @ se3.exp(a.lam))


def test_dt_is_per_call():
    """Two half steps and one full step of the same dynamics agree to first order."""
    p = AdmittanceParams.make([1] * 6, [5] * 6, [100] * 6)
    a, b = LieAdmittance(p), LieAdmittance(p)
    F = np.array([0, 0, 0, 1.0, 2.0, 0])
    _drive([a], F, 1000)
    _drive([b], F, 2000, dt=5e-4)
    assert np.allclose(a.lam, b.lam, atol=1e-3 * np.abs(a.lam).max())


def test_wrench_transform_preserves_power():
    """H.2: with V_s = Ad_{T_sd} V_b, F_b = Ad_{T_sd}ᵀ F_s gives V_bᵀF_b = V_sᵀF_s; the dissertation's
    literal Ad_{T_sd}^{-ᵀ} does not (it holds only for T_d = T_ds)."""
    rng = np.random.default_rng(7)
    for _ in range(50):
        T = se3.exp(rng.normal(size=6))
        V_b, F_s = rng.normal(size=6), rng.normal(size=6)
        V_s = se3.adjoint(T) @ V_b
        F_b = body_wrench_from_world(T, F_s)
        assert V_b @ F_b == pytest.approx(V_s @ F_s, rel=1e-9, abs=1e-12)
    literal = np.linalg.inv(se3.adjoint(T)).T @ F_s
    assert abs(V_b @ literal - V_s @ F_s) > 1e-6


def test_lie_and_cartesian_admittance_agree_for_small_translations_only():
    p = AdmittanceParams.make([1] * 6, [20] * 6, [100] * 6)
    lie, cart = LieAdmittance(p), CartesianAdmittance(p)
    F = np.array([0, 0, 0, 0.5, 0, 0])
    _drive([lie, cart], F, 3000)
    assert np.allclose(lie.modified_pose(np.eye(4)), cart.modified_pose(np.eye(4)), atol=1e-9)
    F = np.array([30.0, 0, 0, 0, 50.0, 0])  # large coupled rotation: the two laws differ
    _drive([lie, cart], F, 3000)
    assert not np.allclose(lie.modified_pose(np.eye(4)), cart.modified_pose(np.eye(4)), atol=1e-3)
