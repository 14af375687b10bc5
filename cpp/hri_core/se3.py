"""SE(3)/SO(3) Lie-group toolkit (compiled; see cpp/include/hri_core/se3.hpp for the math).

Twist order is (w, v): angular first.  Every function takes a single argument or a batch with
leading dimensions (..., shape) and returns float64 numpy arrays.

exp(xi (...,6)) -> (...,4,4)            log(T (...,4,4)) -> (...,6)
so3_exp(w (...,3)) -> (...,3,3)         so3_log(R (...,3,3)) -> (...,3)
hat(3 -> 3x3 | 6 -> 4x4)                vee(3x3 -> 3 | 4x4 -> 6)
adjoint(T) -> (...,6,6)                 ad(xi) -> (...,6,6)        inverse(T), compose(A, B)
left_jacobian, left_jacobian_inv, right_jacobian, right_jacobian_inv    (xi -> 6x6)
so3_left_jacobian, so3_left_jacobian_inv, so3_right_jacobian, so3_right_jacobian_inv (w -> 3x3)
left_jacobian_dot(xi, xi_dot) -> 6x6    so3_left_jacobian_dot(w, w_dot) -> 3x3
interpolate(T0, T1, s)                  quat_to_rot(q xyzw), rot_to_quat(R) -> xyzw (w >= 0)
manif's verbs (right, body frame): between(X, Y) = X^-1 Y, plus(X, tau) = X exp(tau),
minus(Y, X) = log(X^-1 Y) so that plus(X, minus(Y, X)) = Y; interpolate(X, Y, s) = plus(X, s minus(Y, X)).

The one-argument functions (exp, log, so3_exp, so3_log, inverse, adjoint, ad, the Jacobians,
quat_to_rot, rot_to_quat) take a keyword-only ``out=``: a writeable, C-contiguous float64 ndarray of
exactly the result shape, filled and returned (no allocation: reuse it across calls).  Wrong type,
dtype, shape or layout raises TypeError/ValueError; ``out`` may alias the input only element for
element (``inverse(T, out=T)``).  Batches of >= 256 run with the GIL released and, from 32,768
elements, split over threads (``set_batch_threads(n)``, 0 = automatic, 1 = single-threaded);
results are bit-identical whatever the thread count.
"""
from ._hri_core.se3 import (  # noqa: F401
    ad, adjoint, between, compose, exp, get_batch_threads, hat, interpolate, inverse, left_jacobian, left_jacobian_dot,
    left_jacobian_inv, log, minus, plus, quat_to_rot, right_jacobian, right_jacobian_inv, rot_to_quat,
    so3_exp, so3_left_jacobian, so3_left_jacobian_dot, so3_left_jacobian_inv, so3_log,
    set_batch_threads, so3_right_jacobian, so3_right_jacobian_inv, vee,
)

__all__ = [
    "ad", "adjoint", "between", "compose", "exp", "get_batch_threads", "hat", "interpolate", "inverse", "left_jacobian",
    "left_jacobian_dot", "left_jacobian_inv", "log", "minus", "plus", "quat_to_rot", "right_jacobian",
    "right_jacobian_inv", "rot_to_quat", "set_batch_threads", "so3_exp", "so3_left_jacobian", "so3_left_jacobian_dot",
    "so3_left_jacobian_inv", "so3_log", "so3_right_jacobian", "so3_right_jacobian_inv", "vee",
]
