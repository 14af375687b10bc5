"""The torque laws GIC (Seo et al. 2023) and the Lie-group impedance with operational-space
dynamics (Kim et al. 2025) in plain numpy, with the SE(3) helpers they need (log and the right
Jacobian by their series) and the FR3 config: the test oracle of ``interaction.law: gic | lie_osd``
(cpp/include/hri_core/geometric_laws.hpp). No hri_core maths here, so the oracle stays independent
of the C++ it checks; the equations are in docs/validation.md ("The other torque laws of table 12.4")."""
from __future__ import annotations

import math


import numpy as np

from hri_runtime.config.tree import load_robot_config
from hri_interaction.core.controller import InteractionParams


def hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def vee(W):
    return np.array([W[2, 1], W[0, 2], W[1, 0]])


def inv(T):
    R, p = T[:3, :3], T[:3, 3]
    Ti = np.eye(4)
    Ti[:3, :3] = R.T
    Ti[:3, 3] = -R.T @ p
    return Ti


def adjoint(T):
    """Ad_T in twist order (w, v)."""
    R, p = T[:3, :3], T[:3, 3]
    A = np.zeros((6, 6))
    A[:3, :3] = R
    A[3:, 3:] = R
    A[3:, :3] = hat(p) @ R
    return A


def ad(xi):
    A = np.zeros((6, 6))
    A[:3, :3] = hat(xi[:3])
    A[3:, 3:] = hat(xi[:3])
    A[3:, :3] = hat(xi[3:])
    return A


def rodrigues(w):
    th = np.linalg.norm(w)
    if th < 1e-12:
        return np.eye(3) + hat(w)
    k = hat(w / th)
    return np.eye(3) + np.sin(th) * k + (1 - np.cos(th)) * k @ k


def random_pose(rng, scale=0.5):
    T = np.eye(4)
    T[:3, :3] = rodrigues(rng.normal(size=3) * scale * 2)
    T[:3, 3] = rng.normal(size=3) * scale
    return T


def fr3_params(**changes):
    cfg = load_robot_config("fr3")
    cfg["interaction"].update(changes)
    return cfg, InteractionParams.from_tree(cfg)


def home(cfg):
    return np.deg2rad(cfg["joints"]["named_positions_deg"]["home"])


# ----------------------------------------------------------------------------- GIC
def gic_gains(K):
    Kw = K[:3, :3]
    return 0.5 * np.trace(Kw) * np.eye(3) - Kw, K[3:, 3:]


def gic_potential(T, Tr, K):
    KR, Kp = gic_gains(K)
    R, Rr, ep = T[:3, :3], Tr[:3, :3], T[:3, 3] - Tr[:3, 3]
    return 0.5 * ep @ Rr @ Kp @ Rr.T @ ep + np.trace(KR @ (np.eye(3) - Rr.T @ R))


def gic_elastic_wrench(T, Tr, K):
    KR, Kp = gic_gains(K)
    R, Rr, ep = T[:3, :3], Tr[:3, :3], T[:3, 3] - Tr[:3, 3]
    return np.r_[vee(KR @ Rr.T @ R - R.T @ Rr @ KR), R.T @ Rr @ Kp @ Rr.T @ ep]


def gic_torque(T, Vb, Jb, bias, Tr, K, D, Vr=None):
    eV = Vb if Vr is None else Vb - adjoint(inv(T) @ Tr) @ Vr
    return Jb.T @ (-gic_elastic_wrench(T, Tr, K) - D @ eV) + bias


# ----------------------------------------------------------------------------- Lie-group impedance, OSD
def se3_log(T):
    """(w, v) with T = exp((w, v)^): rotation angle from the trace, v = V(w)^-1 p."""
    R, p = T[:3, :3], T[:3, 3]
    c = np.clip((np.trace(R) - 1) / 2, -1.0, 1.0)
    th = math.acos(c)
    if th < 1e-8:
        w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]) / 2
    else:
        w = th / (2 * math.sin(th)) * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    W = hat(w)
    th = np.linalg.norm(w)
    if th < 1e-8:
        V = np.eye(3) + W / 2
    else:
        V = np.eye(3) + (1 - math.cos(th)) / th**2 * W + (th - math.sin(th)) / th**3 * W @ W
    return np.r_[w, np.linalg.solve(V, p)]


def right_jacobian(xi, terms=40):
    """J_r(xi) = sum_k (-ad xi)^k / (k+1)!  (the series; entire, so exact for any |xi| here)."""
    A = -ad(xi)
    J, P = np.eye(6), np.eye(6)
    for k in range(1, terms):
        P = P @ A / (k + 1)
        J = J + P
    return J


def lie_osd_torque(T, Vb, Jb, bias, Tr, K, D, Md, M, jdq, Vr=None, F=None):
    X = inv(Tr) @ T
    lam = se3_log(X)
    Ve, acc = Vb.copy(), np.zeros(6)
    if Vr is not None:
        Vre = adjoint(inv(X)) @ Vr
        Ve = Vb - Vre
        acc = -ad(Ve) @ Vre
    rhs = -D @ Ve - np.linalg.solve(right_jacobian(lam).T, K @ lam)
    if F is not None:
        rhs = rhs + F
    acc = acc + np.linalg.solve(Md, rhs)
    Lam = np.linalg.inv(Jb @ np.linalg.solve(M, Jb.T))
    Fc = Lam @ (acc - jdq) - (F if F is not None else 0.0)
    return Jb.T @ Fc + bias
