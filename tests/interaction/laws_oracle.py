"""SE(3) helpers in plain numpy and the FR3 config for the law oracles of
test_interaction_gic.py and test_interaction_lie_osd.py (tests only; no hri_core maths here, so the
oracles stay independent of the C++ they check). Loaded by file path (pytest runs with
--import-mode=importlib)."""
from __future__ import annotations

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
