"""hri_core.se3 against scipy, exact power series and finite differences (twist order (w, v))."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import expm, logm
from scipy.spatial.transform import Rotation

from hri_core import se3

PI = math.pi
EDGE_ANGLES = [0.0, 1e-15, 1e-12, 1e-8, 1e-6, 1e-4, 1e-2, 0.5, 1.0 - 1e-9, 1.0, 1.0 + 1e-9, 2.0,
               3.0, PI - 1e-3, PI - 1e-6, PI - 1e-9]
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True)

unit = st.tuples(*[st.floats(-1.0, 1.0)] * 3).map(np.array).filter(lambda a: np.linalg.norm(a) > 1e-3)
angles = st.one_of(st.sampled_from(EDGE_ANGLES), st.floats(0.0, PI - 1e-9))
lin = st.tuples(*[st.floats(-3.0, 3.0)] * 3).map(np.array)


@st.composite
def twists(draw, max_angle_ok=True):
    a = draw(unit)
    th = draw(angles)
    w = a / np.linalg.norm(a) * th
    return np.concatenate([w, draw(lin)])


# ------------------------------------------------------------------ exact references
def ad_np(xi):
    W = np.array([[0, -xi[2], xi[1]], [xi[2], 0, -xi[0]], [-xi[1], xi[0], 0]])
    V = np.array([[0, -xi[5], xi[4]], [xi[5], 0, -xi[3]], [-xi[4], xi[3], 0]])
    M = np.zeros((6, 6))
    M[:3, :3] = W
    M[3:, 3:] = W
    M[3:, :3] = V
    return M


def jl_series(xi, terms=60):
    """J_l = sum_k ad^k/(k+1)! (exact to rounding for |xi| of a few units)."""
    X = ad_np(xi)
    P = np.eye(6)
    J = np.zeros((6, 6))
    f = 1.0
    for k in range(terms):
        f *= (k + 1)
        J += P / f
        P = P @ X
    return J


def jl_dot_series(xi, xid, terms=60):
    X, Y = ad_np(xi), ad_np(xid)
    P, dP = np.eye(6), np.zeros((6, 6))
    D = np.zeros((6, 6))
    f = 1.0
    for k in range(terms):
        f *= (k + 1)
        D += dP / f
        dP, P = dP @ X + P @ Y, P @ X
    return D


def rel_err(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


# ------------------------------------------------------------------ exp / log
@SETTINGS
@given(twists())
def test_exp_matches_scipy_expm(xi):
    T = se3.exp(xi)
    assert rel_err(T, expm(se3.hat(xi))) < 1e-13
    R = T[:3, :3]
    assert np.abs(R @ R.T - np.eye(3)).max() < 1e-14
    assert np.allclose(se3.so3_exp(xi[:3]), R, atol=1e-15, rtol=0)


@SETTINGS
@given(twists())
def test_log_of_exp_is_identity_on_principal_branch(xi):
    assert rel_err(se3.log(se3.exp(xi)), xi) < 1e-12
    assert rel_err(se3.so3_log(se3.so3_exp(xi[:3])), xi[:3]) < 1e-12


@SETTINGS
@given(st.tuples(*[st.floats(-1, 1)] * 4).filter(lambda q: np.linalg.norm(q) > 1e-3),
       st.sampled_from([None, 0.0, PI, PI - 1e-12]), lin)
def test_exp_of_log_is_identity(q, angle, p):
    q = np.array(q) / np.linalg.norm(q)
    if angle is not None:  # exact edge rotations (pi included: both signs are valid logs)
        q = np.r_[q[:3] / max(np.linalg.norm(q[:3]), 1e-300) * math.sin(angle / 2), math.cos(angle / 2)]
        if not np.all(np.isfinite(q)) or np.linalg.norm(q[:3]) == 0:
            q = np.array([0, 0, 0, 1.0])
    T = np.eye(4)
    T[:3, :3] = Rotation.from_quat(q).as_matrix()
    T[:3, 3] = p
    xi = se3.log(T)
    assert np.linalg.norm(xi[:3]) <= PI + 1e-12
    assert rel_err(se3.exp(xi), T) < 1e-13


def test_log_matches_scipy_logm():
    rng = np.random.default_rng(1)
    for _ in range(15):
        xi = np.r_[rng.normal(size=3), rng.normal(size=3)]
        xi[:3] *= rng.uniform(0, 3.0) / np.linalg.norm(xi[:3])
        T = se3.exp(xi)
        assert rel_err(se3.log(T), se3.vee(np.real(logm(T)))) < 1e-10


def test_log_at_exactly_pi_and_identity():
    for axis in np.eye(3):
        R = Rotation.from_rotvec(PI * axis).as_matrix()
        w = se3.so3_log(R)
        assert abs(np.linalg.norm(w) - PI) < 1e-14
        assert np.allclose(se3.so3_exp(w), R, atol=1e-15)
    assert np.array_equal(se3.log(np.eye(4)), np.zeros(6))
    assert np.array_equal(se3.exp(np.zeros(6)), np.eye(4))


def test_tiny_angles_are_exact():
    for th in (1e-300, 1e-20, 1e-12, 1e-9):
        xi = np.array([th, 0, 0, 0, 1.0, 0])
        T = se3.exp(xi)
        assert T[2, 1] == pytest.approx(th, rel=1e-15)
        assert T[2, 3] == pytest.approx(th / 2, rel=1e-15)
        assert se3.log(T)[0] == pytest.approx(th, rel=1e-15)


# ------------------------------------------------------------------ adjoint
@SETTINGS
@given(twists(), twists())
def test_adjoint_conjugation_and_expm_ad(xi, eta):
    T = se3.exp(xi)
    lhs = se3.adjoint(T) @ eta
    rhs = se3.vee(T @ se3.hat(eta) @ se3.inverse(T))
    assert rel_err(lhs, rhs) < 1e-13
    assert rel_err(se3.adjoint(T), expm(se3.ad(xi))) < 1e-12
    assert rel_err(se3.inverse(T) @ T, np.eye(4)) < 1e-14


@SETTINGS
@given(twists(), twists(), st.tuples(*[st.floats(-10, 10)] * 6).map(np.array))
def test_wrench_power_invariance(xi, V_b, F_s):
    """V_s = Ad_T V_b, F_b = Ad_T^T F_s  =>  V_b^T F_b = V_s^T F_s (T = T_sb)."""
    T_sb = se3.exp(xi)
    Ad = se3.adjoint(T_sb)
    V_s = Ad @ V_b
    F_b = Ad.T @ F_s
    assert V_b @ F_b == pytest.approx(V_s @ F_s, rel=1e-12, abs=1e-10)


# ------------------------------------------------------------------ Jacobians
@SETTINGS
@given(twists())
def test_left_jacobian_equals_series_and_right_is_left_of_minus(xi):
    Jl = se3.left_jacobian(xi)
    assert rel_err(Jl, jl_series(xi)) < 1e-12
    assert np.array_equal(se3.right_jacobian(xi), se3.left_jacobian(-xi))
    assert rel_err(se3.left_jacobian_inv(xi) @ Jl, np.eye(6)) < 1e-11
    assert rel_err(se3.right_jacobian_inv(xi) @ se3.right_jacobian(xi), np.eye(6)) < 1e-11
    # SO(3) blocks
    w = xi[:3]
    assert rel_err(se3.so3_left_jacobian(w), Jl[:3, :3]) < 1e-15
    assert rel_err(se3.so3_left_jacobian_inv(w) @ se3.so3_left_jacobian(w), np.eye(3)) < 1e-12
    assert rel_err(se3.so3_right_jacobian(w), se3.so3_left_jacobian(-w)) < 1e-15
    assert rel_err(se3.so3_right_jacobian_inv(w), np.linalg.inv(se3.so3_right_jacobian(w))) < 1e-11


@SETTINGS
@given(twists())
def test_jacobians_against_central_finite_differences(xi):
    if np.linalg.norm(xi[:3]) > PI - 1e-3:
        xi = xi.copy()
        xi[:3] *= (PI - 1e-3) / np.linalg.norm(xi[:3])   # keep the +-h steps on the principal branch
    h = 1e-6
    T = se3.exp(xi)
    Jl = np.zeros((6, 6))
    Jr = np.zeros((6, 6))
    for i in range(6):
        e = np.zeros(6)
        e[i] = h
        Tp, Tm = se3.exp(xi + e), se3.exp(xi - e)
        Jl[:, i] = (se3.log(Tp @ se3.inverse(T)) - se3.log(Tm @ se3.inverse(T))) / (2 * h)
        Jr[:, i] = (se3.log(se3.inverse(T) @ Tp) - se3.log(se3.inverse(T) @ Tm)) / (2 * h)
    assert np.abs(Jl - se3.left_jacobian(xi)).max() < 1e-7
    assert np.abs(Jr - se3.right_jacobian(xi)).max() < 1e-7


@SETTINGS
@given(twists(), twists())
def test_left_jacobian_dot_equals_series_and_finite_difference(xi, xid):
    D = se3.left_jacobian_dot(xi, xid)
    assert rel_err(D, jl_dot_series(xi, xid)) < 1e-11
    h = 1e-6
    fd = (se3.left_jacobian(xi + h * xid) - se3.left_jacobian(xi - h * xid)) / (2 * h)
    assert np.abs(D - fd).max() < 1e-6 * max(1.0, np.abs(D).max())
    Dso3 = se3.so3_left_jacobian_dot(xi[:3], xid[:3])
    assert rel_err(Dso3, D[:3, :3]) < 1e-12


def test_series_and_closed_forms_agree_across_the_switch():
    """The Taylor/closed-form switch at |w| = 1 is seamless (to rounding)."""
    rng = np.random.default_rng(3)
    for th in (1 - 1e-12, 1.0, 1 + 1e-12, 1 - 1e-3, 1 + 1e-3):
        a = rng.normal(size=3)
        xi = np.r_[a / np.linalg.norm(a) * th, rng.normal(size=3)]
        xid = rng.normal(size=6)
        assert rel_err(se3.left_jacobian(xi), jl_series(xi)) < 1e-14
        assert rel_err(se3.left_jacobian_inv(xi), np.linalg.inv(jl_series(xi))) < 1e-13
        assert rel_err(se3.left_jacobian_dot(xi, xid), jl_dot_series(xi, xid)) < 1e-13


# ------------------------------------------------------------------ misc
@SETTINGS
@given(st.tuples(*[st.floats(-1, 1)] * 4).filter(lambda q: np.linalg.norm(q) > 1e-3))
def test_quaternion_ros_order_matches_scipy(q):
    q = np.array(q) / np.linalg.norm(q)
    R = se3.quat_to_rot(q)
    assert rel_err(R, Rotation.from_quat(q).as_matrix()) < 1e-14   # scipy: scalar last = ROS
    q2 = se3.rot_to_quat(R)
    assert q2[3] >= 0
    assert rel_err(q2, q if q[3] >= 0 else -q) < 1e-12 or abs(q[3]) < 1e-12


def test_hat_vee_roundtrip_and_shapes():
    w = np.array([1.0, 2, 3])
    W = se3.hat(w)
    assert np.array_equal(W, -W.T) and np.array_equal(se3.vee(W), w)
    xi = np.arange(6.0)
    X = se3.hat(xi)
    assert X.shape == (4, 4) and np.array_equal(se3.vee(X), xi)
    assert np.array_equal(X[:3, 3], xi[3:])
    with pytest.raises(ValueError):
        se3.exp(np.zeros(5))
    with pytest.raises(ValueError):
        se3.compose(np.zeros((2, 4, 4)), np.zeros((3, 4, 4)))


def test_interpolate_endpoints_and_geodesic():
    rng = np.random.default_rng(4)
    T0 = se3.exp(rng.normal(size=6))
    T1 = se3.exp(rng.normal(size=6))
    assert rel_err(se3.interpolate(T0, T1, 0.0), T0) < 1e-14
    assert rel_err(se3.interpolate(T0, T1, 1.0), T1) < 1e-12
    Tm = se3.interpolate(T0, T1, 0.5)
    # the midpoint halves the relative motion
    assert rel_err(se3.minus(Tm, T0) * 2, se3.minus(T1, T0)) < 1e-12
    s = np.linspace(0, 1, 5)
    batch = se3.interpolate(T0, T1, s)
    assert batch.shape == (5, 4, 4)
    assert rel_err(batch[2], Tm) < 1e-15


def test_batch_equals_loop_and_broadcasts():
    rng = np.random.default_rng(5)
    xi = rng.normal(size=(20, 6))
    T = se3.exp(xi)
    assert T.shape == (20, 4, 4)
    for i in range(20):
        assert np.array_equal(T[i], se3.exp(xi[i]))
    assert se3.log(T).shape == (20, 6)
    assert rel_err(se3.exp(se3.log(T)), T) < 1e-13
    assert se3.exp(xi.reshape(4, 5, 6)).shape == (4, 5, 4, 4)
    assert se3.adjoint(T).shape == (20, 6, 6)
    assert se3.left_jacobian_dot(xi, xi[0]).shape == (20, 6, 6)
    assert se3.compose(T, T[0]).shape == (20, 4, 4)
    assert rel_err(se3.compose(T, T[0])[3], T[3] @ T[0]) < 1e-15
    assert se3.quat_to_rot(rng.normal(size=(7, 4))).shape == (7, 3, 3)
    assert se3.exp(xi.astype(np.float32)).dtype == np.float64
    assert se3.exp(np.zeros((0, 6))).shape == (0, 4, 4)


def test_fast_path_and_general_path_agree():
    """Single ndarray calls take the fast path; lists, keywords, other dtypes the general one."""
    rng = np.random.default_rng(6)
    xi = rng.normal(size=6)
    T = se3.exp(xi)
    assert np.array_equal(se3.exp(list(xi)), T)
    assert np.array_equal(se3.exp(x=xi), T)
    assert np.array_equal(se3.exp(np.asfortranarray(xi.reshape(6, 1))[:, 0]), T)
    assert np.array_equal(se3.log(T.T.copy().T), se3.log(T))          # non C-contiguous
    assert np.array_equal(se3.log(T.astype(">f8")), se3.log(T))       # big-endian
    assert np.array_equal(se3.compose(T, T.tolist()), T @ T) or np.allclose(se3.compose(T, T.tolist()), T @ T,
                                                                            atol=1e-15)
    with pytest.raises(ValueError):
        se3.log(np.eye(3))
    with pytest.raises(TypeError):
        se3.exp()


@SETTINGS
@given(twists(), twists())
def test_plus_minus_between_are_manifs_right_verbs(xi_x, xi_y):
    """between(X, Y) = X^-1 Y, plus(X, tau) = X exp(tau), minus(Y, X) = log(X^-1 Y) (exact matrix
    references), and the round trips X ⊕ (Y ⊖ X) = Y, (X ⊕ tau) ⊖ X = tau for |w| < pi."""
    X, Y = expm(se3.hat(xi_x)), expm(se3.hat(xi_y))
    assert rel_err(se3.between(X, Y), np.linalg.inv(X) @ Y) < 1e-9
    assert rel_err(se3.plus(X, xi_y), X @ expm(se3.hat(xi_y))) < 1e-9
    assert rel_err(se3.minus(Y, X), se3.log(np.linalg.inv(X) @ Y)) < 1e-9
    assert rel_err(se3.plus(X, se3.minus(Y, X)), Y) < 1e-9
    if np.linalg.norm(xi_y[:3]) < PI - 1e-6:
        assert rel_err(se3.minus(se3.plus(X, xi_y), X), xi_y) < 1e-6


def test_plus_minus_between_batch_and_bad_shapes():
    rng = np.random.default_rng(11)
    X = se3.exp(rng.normal(size=(5, 6)))
    Y = se3.exp(rng.normal(size=(5, 6)))
    d = se3.minus(Y, X)
    assert d.shape == (5, 6) and se3.between(X, Y).shape == (5, 4, 4)
    for i in range(5):
        assert rel_err(se3.plus(X[i], d[i]), Y[i]) < 1e-12
    with pytest.raises((ValueError, TypeError)):
        se3.minus(np.eye(3), np.eye(4))
    with pytest.raises((ValueError, TypeError)):
        se3.plus(np.eye(4), np.zeros(5))
