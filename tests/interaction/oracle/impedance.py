"""The torque laws of :mod:`hri_interaction.core.impedance` in Python (test oracle): Lie-group PD
impedance (Chang 2026 Eq 12.1–12.2) and the classical Cartesian impedance; the equations are in that
module's doc."""
from __future__ import annotations

from typing import Optional

import numpy as np

from hri_interaction.core.impedance import cxx_kernels


def _se3():
    from hri_core import se3

    return se3


def pose_error(world_T_ee: np.ndarray, world_T_ref: np.ndarray) -> np.ndarray:
    """e = Log(T_ref⁻¹ T)^∨ (body frame)."""
    se3 = _se3()
    return se3.minus(world_T_ee, world_T_ref)


def lie_impedance_wrench(world_T_ee, body_twist, world_T_ref, K, D,
                         ref_body_twist: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray]:
    """(F_body, e): F = −K e − D ė."""
    se3 = _se3()
    e = pose_error(world_T_ee, world_T_ref)
    e_dot = np.asarray(body_twist, float)
    if ref_body_twist is not None:
        e_dot = e_dot - se3.adjoint(se3.between(world_T_ee, world_T_ref)) @ ref_body_twist
    return -K @ e - D @ e_dot, e


def lie_impedance_torque(world_T_ee, body_twist, body_jacobian, bias, world_T_ref, K, D,
                         ref_body_twist=None, use_cxx: bool = True) -> np.ndarray:
    """τ = J_bᵀ(−K e − D ė) + g(q) (in C++ when the core has the kernel and ``use_cxx``)."""
    cx = cxx_kernels() if use_cxx else None
    if cx is not None:
        return cx.lie_impedance_torque(world_T_ee, body_twist, body_jacobian, bias, world_T_ref,
                                       K, D, ref_body_twist)
    F, _ = lie_impedance_wrench(world_T_ee, body_twist, world_T_ref, K, D, ref_body_twist)
    return np.asarray(body_jacobian, float).T @ F + np.asarray(bias, float)


def cartesian_impedance_torque(world_T_ee, body_twist, body_jacobian, bias, world_T_ref, K, D,
                               ref_twist_world=None) -> np.ndarray:
    """Classical world-frame Cartesian impedance (split R³ × SO(3) error)."""
    se3 = _se3()
    R = world_T_ee[:3, :3]
    Rd = world_T_ref[:3, :3]
    e_rot = se3.so3_log(Rd @ R.T)
    e_pos = world_T_ref[:3, 3] - world_T_ee[:3, 3]
    Jb = np.asarray(body_jacobian, float)
    Jw = np.vstack([R @ Jb[:3], R @ Jb[3:]])            # world-aligned, at the EE point
    V = np.asarray(body_twist, float)
    vel = np.r_[R @ V[:3], R @ V[3:]]
    if ref_twist_world is not None:
        vel = vel - ref_twist_world
    F = K @ np.r_[e_rot, e_pos] - D @ vel
    return Jw.T @ F + np.asarray(bias, float)


def sigma_min(body_jacobian: np.ndarray) -> float:
    """Smallest singular value of J_b (6 x n, n >= 6): √λ_min(J_b J_bᵀ)."""
    J = np.asarray(body_jacobian, float)
    return float(np.sqrt(max(np.linalg.eigvalsh(J @ J.T)[0], 0.0)))
