"""The admittances of :mod:`hri_interaction.core.admittance` in Python (test oracle): the Lie-group
admittance on SE(3) (Chang 2026 app. H; its step in C++ when the core has the kernel) and the
classical Cartesian admittance; the equations are in that module's doc."""
from __future__ import annotations

from typing import Optional

import numpy as np

from hri_interaction.core.admittance import AdmittanceParams


def _se3():
    from hri_core import se3  # the C++ core (contract in architecture.md)

    return se3


def body_wrench_from_world(world_T_d: np.ndarray, wrench_world: np.ndarray) -> np.ndarray:
    """F_b = Ad_{T_sd}ᵀ F_s (wrench (m, f) order matching twists (ω, v))."""
    return _se3().adjoint(world_T_d).T @ np.asarray(wrench_world, float)


class LieAdmittance:
    """Stateful, one instance per loop. ``step(F_body, dt)``; ``modified_pose(T_d)``.
    The step runs in C++ (``hri_core._hri_core.interaction.LieAdmittance``) when the core has it
    and ``use_cxx``; the state (λ, λ̇) stays here, so both paths are interchangeable."""

    def __init__(self, params: AdmittanceParams, use_cxx: bool = True):
        from hri_interaction.core.impedance import cxx_kernels

        self.se3 = _se3()
        self._cx_mod = cxx_kernels() if use_cxx else None
        self._cx = None
        self.set_params(params)
        self.reset()

    def reset(self, lam: Optional[np.ndarray] = None, lam_dot: Optional[np.ndarray] = None) -> None:
        """Displacement to identity (or seeded from another controller's state)."""
        self.lam = np.zeros(6) if lam is None else np.array(lam, dtype=float)
        self.lam_dot = np.zeros(6) if lam_dot is None else np.array(lam_dot, dtype=float)
        self.lam_ddot = np.zeros(6)

    def set_params(self, params: AdmittanceParams) -> None:
        self.params = params
        if self._cx_mod is not None:
            self._cx = self._cx_mod.LieAdmittance(params.mass, params.damping, params.stiffness)

    def dexp(self, lam: Optional[np.ndarray] = None) -> np.ndarray:
        return self.se3.left_jacobian(self.lam if lam is None else lam)

    def dexp_dot(self, lam: np.ndarray, lam_dot: np.ndarray) -> np.ndarray:
        if not np.any(lam_dot):
            return np.zeros((6, 6))
        analytic = getattr(self.se3, "left_jacobian_dot", None)
        if analytic is not None:
            return analytic(lam, lam_dot)
        h = self.params.dexp_dot_step_s
        J = self.se3.left_jacobian
        return (J(lam + h * lam_dot) - J(lam - h * lam_dot)) / (2.0 * h)

    def matrices(self, lam: np.ndarray, lam_dot: np.ndarray):
        """(J, M_λ, D_λ) of H.4."""
        p = self.params
        J = self.dexp(lam)
        Jd = self.dexp_dot(lam, lam_dot)
        M_l = J.T @ p.mass @ J
        D_l = J.T @ (p.damping @ J + p.mass @ Jd)
        return J, 0.5 * (M_l + M_l.T), D_l

    def step(self, wrench_body: np.ndarray, dt: float) -> np.ndarray:
        """Advance one semi-implicit Euler step with this call's Δt; returns λ."""
        if self._cx is not None:
            k = self._cx
            k.lam = self.lam
            k.lam_dot = self.lam_dot
            k.step(np.asarray(wrench_body, float), float(dt))
            new_dot = np.array(k.lam_dot)
            self.lam_ddot = (new_dot - self.lam_dot) / dt
            self.lam_dot = new_dot
            self.lam = np.array(k.lam)
            return self.lam
        J, M_l, D_l = self.matrices(self.lam, self.lam_dot)
        gamma = J.T @ np.asarray(wrench_body, float)
        rhs = gamma - D_l @ self.lam_dot - self.params.stiffness @ self.lam
        self.lam_ddot = np.linalg.solve(M_l, rhs)
        self.lam_dot = self.lam_dot + dt * self.lam_ddot
        self.lam = self.lam + dt * self.lam_dot
        return self.lam

    def twist(self) -> np.ndarray:
        """V = dexp_λ λ̇ (the displacement's velocity; the feed-forward ``getVelocity6``)."""
        return self.dexp() @ self.lam_dot

    def body_twist(self) -> np.ndarray:
        """Body twist of T_mod in its own frame: J_r(λ) λ̇."""
        return self.se3.right_jacobian(self.lam) @ self.lam_dot

    def energy(self) -> float:
        V = self.twist()
        return float(0.5 * V @ self.params.mass @ V + 0.5 * self.lam @ self.params.stiffness @ self.lam)

    def modified_pose(self, world_T_d: np.ndarray) -> np.ndarray:
        """T_mod = T_d exp(λ^) (H.8)."""
        return self.se3.plus(np.asarray(world_T_d, float), self.lam)


class CartesianAdmittance:
    """Classical admittance, per component on ℝ³ × so(3) (no dexp); same interface."""

    def __init__(self, params: AdmittanceParams):
        self.se3 = _se3()
        self.params = params
        self.reset()

    def reset(self, lam=None, lam_dot=None) -> None:
        self.lam = np.zeros(6) if lam is None else np.array(lam, float)
        self.lam_dot = np.zeros(6) if lam_dot is None else np.array(lam_dot, float)

    def set_params(self, params: AdmittanceParams) -> None:
        self.params = params

    def step(self, wrench_body: np.ndarray, dt: float) -> np.ndarray:
        p = self.params
        acc = np.linalg.solve(p.mass, np.asarray(wrench_body, float) - p.damping @ self.lam_dot
                              - p.stiffness @ self.lam)
        self.lam_dot = self.lam_dot + dt * acc
        self.lam = self.lam + dt * self.lam_dot
        return self.lam

    def twist(self) -> np.ndarray:
        return self.lam_dot.copy()

    body_twist = twist

    def energy(self) -> float:
        p = self.params
        return float(0.5 * self.lam_dot @ p.mass @ self.lam_dot + 0.5 * self.lam @ p.stiffness @ self.lam)

    def modified_pose(self, world_T_d: np.ndarray) -> np.ndarray:
        T = np.array(world_T_d, float)
        out = np.eye(4)
        out[:3, :3] = T[:3, :3] @ self.se3.so3_exp(self.lam[:3])
        out[:3, 3] = T[:3, 3] + T[:3, :3] @ self.lam[3:]
        return out
