// SE(3) / SO(3) Lie-group toolkit (header-only, Eigen).
//
// Conventions (Chang 2026 appendix B / H):
//   * twist xi = (w, v) in R^6, angular part FIRST;  hat(xi) = [[w^, v], [0, 0]].
//   * exp(xi) = [[R, V v], [0, 1]],  R = I + A W + B W^2,  V = I + B W + C W^2,  W = w^,
//     th = |w|,  A = sin th / th,  B = (1 - cos th)/th^2,  C = (th - sin th)/th^3.
//   * adjoint(T) = [[R, 0], [p^ R, R]]  (so that Ad_T xi = vee(T hat(xi) T^-1)).
//   * ad(xi) = [[w^, 0], [v^, w^]].
//   * left Jacobian  J_l(xi) = sum_k ad(xi)^k/(k+1)!  (exp(xi + d) ~ exp(J_l d) exp(xi)),
//     right Jacobian J_r(xi) = J_l(-xi)                (exp(xi + d) ~ exp(xi) exp(J_r d)).
//     SE(3) block form J_l = [[J, 0], [Q, J]] (J the SO(3) left Jacobian, Q Barfoot's Q).
//   * Every scalar function with a removable singularity at th = 0 is evaluated by its Taylor
//     series (coefficients in series_coeffs.hpp) below a threshold, in closed form above: th^2 < 1
//     for the Jacobians and their derivatives (closed forms well conditioned for th >= 1);
//     th^2 < 0.04 for C in exp and D in log, whose closed-form rounding error ~eps/th^2 multiplies
//     a term of size th^2 (absolute error ~eps).  A, B use the half-angle form (no 1 - cos
//     cancellation).  so3_log uses th = atan2(|s|, c) and a dedicated branch near th = pi.
#pragma once

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>

#include "hri_core/series_coeffs.hpp"

namespace hri_core::se3 {

using Vec3 = Eigen::Matrix<double, 3, 1>;
using Vec4 = Eigen::Matrix<double, 4, 1>;
using Vec6 = Eigen::Matrix<double, 6, 1>;
using Mat3 = Eigen::Matrix<double, 3, 3>;
using Mat4 = Eigen::Matrix<double, 4, 4>;
using Mat6 = Eigen::Matrix<double, 6, 6>;

/// Threshold on th^2 below which the Taylor series are used.
inline constexpr double kSeriesT = 1.0;
/// so3_log switches to the near-pi branch when cos(th) < this value.
inline constexpr double kNearPiCos = -0.9;

namespace detail {
template <int N>
inline double horner(const double* c, double t) {
  double r = c[N - 1];
  for (int i = N - 2; i >= 0; --i) r = r * t + c[i];
  return r;
}

/// A, B with full relative precision for every th (half-angle form, no 1 - cos cancellation).
inline void sincos_AB(double th, double& A, double& B, double& s, double& c) {
  if (th < 1e-8) {
    const double t = th * th;
    A = 1.0 - t / 6.0;
    B = 0.5 - t / 24.0;
    s = th;
    c = 1.0 - 0.5 * t;
    return;
  }
  const double h = 0.5 * th;
  const double sh = std::sin(h), ch = std::cos(h);
  s = 2.0 * sh * ch;
  c = 1.0 - 2.0 * sh * sh;
  A = s / th;
  const double q = sh / h;
  B = 0.5 * q * q;
}
}  // namespace detail

/// Scalar coefficients of a rotation vector of angle th (t = th^2).
struct Coeffs {
  double th, t, A, B, C, s, c;
};

inline Coeffs coeffs(const Vec3& w) {
  Coeffs k;
  k.t = w.squaredNorm();
  k.th = std::sqrt(k.t);
  detail::sincos_AB(k.th, k.A, k.B, k.s, k.c);
  k.C = (k.t < kSeriesT) ? detail::horner<10>(series::kC, k.t) : (1.0 - k.A) / k.t;
  return k;
}

inline double coeff_D(const Coeffs& k) {
  return (k.t < kSeriesT) ? detail::horner<12>(series::kD, k.t)
                          : (1.0 - k.A / (2.0 * k.B)) / k.t;
}

// ------------------------------------------------------------------ hat / vee
inline Mat3 hat3(const Vec3& w) {
  Mat3 W;
  W << 0.0, -w.z(), w.y(), w.z(), 0.0, -w.x(), -w.y(), w.x(), 0.0;
  return W;
}
inline Vec3 vee3(const Mat3& W) { return Vec3(W(2, 1), W(0, 2), W(1, 0)); }

inline Mat4 hat6(const Vec6& xi) {
  Mat4 X = Mat4::Zero();
  X.topLeftCorner<3, 3>() = hat3(xi.head<3>());
  X.topRightCorner<3, 1>() = xi.tail<3>();
  return X;
}
inline Vec6 vee6(const Mat4& X) {
  Vec6 xi;
  xi << X(2, 1), X(0, 2), X(1, 0), X(0, 3), X(1, 3), X(2, 3);
  return xi;
}

// ------------------------------------------------------------------ SO(3)
inline Mat3 so3_exp(const Vec3& w) {
  double A, B, s, c;
  const double th = w.norm();
  detail::sincos_AB(th, A, B, s, c);
  const Mat3 W = hat3(w);
  return Mat3::Identity() + A * W + B * (W * W);
}

/// Principal logarithm, |w| in [0, pi].  Uses th = atan2(|s|, c) with s = vee(R - R^T)/2 = sin(th) a,
/// c = (tr R - 1)/2; near pi the axis comes from the symmetric part (R + R^T)/2 - c I = (1-c) a a^T.
inline Vec3 so3_log(const Mat3& R);

inline Mat3 so3_left_jacobian(const Vec3& w) {
  const Coeffs k = coeffs(w);
  const Mat3 W = hat3(w);
  return Mat3::Identity() + k.B * W + k.C * (W * W);
}
inline Mat3 so3_right_jacobian(const Vec3& w) { return so3_left_jacobian(-w); }

inline Mat3 so3_left_jacobian_inv(const Vec3& w) {
  const Coeffs k = coeffs(w);
  const Mat3 W = hat3(w);
  return Mat3::Identity() - 0.5 * W + coeff_D(k) * (W * W);
}
inline Mat3 so3_right_jacobian_inv(const Vec3& w) { return so3_left_jacobian_inv(-w); }

/// d/dt J_l(w(t)) for w_dot = dw/dt:  dB (w.wd) W + B Wd + dC (w.wd) W^2 + C (Wd W + W Wd),
/// dX = X'(th)/th.
inline Mat3 so3_left_jacobian_dot(const Vec3& w, const Vec3& wd) {
  const Coeffs k = coeffs(w);
  double dB, dC;
  if (k.t < kSeriesT) {
    dB = detail::horner<10>(series::kdB, k.t);
    dC = detail::horner<10>(series::kdC, k.t);
  } else {
    dB = (k.A - 2.0 * k.B) / k.t;
    dC = (k.B - 3.0 * k.C) / k.t;
  }
  const double wwd = w.dot(wd);
  const Mat3 W = hat3(w), Wd = hat3(wd);
  return (dB * wwd) * W + k.B * Wd + (dC * wwd) * (W * W) + k.C * (Wd * W + W * Wd);
}

// ------------------------------------------------------------------ SE(3)
/// exp of a twist: R = cos(th) I + A W + B w w^T (= I + A W + B W^2), p = v + B w x v + C w x (w x v).
/// C = (1 - A)/th^2 has an absolute error ~eps/th^2, multiplied by |w x (w x v)| <= th^2 |v|: exact
/// to eps |v| for th^2 >= 0.04; below, its Taylor series.
inline Mat4 exp(const Vec6& xi) {
  const double w0 = xi[0], w1 = xi[1], w2 = xi[2];
  const Vec3 w(w0, w1, w2), v = xi.tail<3>();
  const double t = w0 * w0 + w1 * w1 + w2 * w2;
  const double th = std::sqrt(t);
  double A, B, s, c;
  detail::sincos_AB(th, A, B, s, c);
  const double C = t < 0.04 ? detail::horner<7>(series::kC, t) : (1.0 - A) / t;
  Mat4 T;
  const double Bw0 = B * w0, Bw1 = B * w1, Bw2 = B * w2;
  const double Aw0 = A * w0, Aw1 = A * w1, Aw2 = A * w2;
  T(0, 0) = c + Bw0 * w0;
  T(1, 1) = c + Bw1 * w1;
  T(2, 2) = c + Bw2 * w2;
  T(0, 1) = Bw0 * w1 - Aw2;
  T(1, 0) = Bw0 * w1 + Aw2;
  T(0, 2) = Bw0 * w2 + Aw1;
  T(2, 0) = Bw0 * w2 - Aw1;
  T(1, 2) = Bw1 * w2 - Aw0;
  T(2, 1) = Bw1 * w2 + Aw0;
  const Vec3 wv = w.cross(v);
  const Vec3 wwv = w.cross(wv);
  T.topRightCorner<3, 1>() = v + B * wv + C * wwv;
  T(3, 0) = 0.0;
  T(3, 1) = 0.0;
  T(3, 2) = 0.0;
  T(3, 3) = 1.0;
  return T;
}

namespace detail {
/// so3_log with the by-products th, sin(th) (sn), cos(th) (c).
inline Vec3 so3_log_sc(const Mat3& R, double& th, double& sn, double& c) {
  const Vec3 s(0.5 * (R(2, 1) - R(1, 2)), 0.5 * (R(0, 2) - R(2, 0)), 0.5 * (R(1, 0) - R(0, 1)));
  c = std::clamp(0.5 * (R(0, 0) + R(1, 1) + R(2, 2) - 1.0), -1.0, 1.0);
  sn = s.norm();
  th = std::atan2(sn, c);
  if (c > kNearPiCos) return sn > 0.0 ? Vec3(s * (th / sn)) : s;
  // near pi: the axis from the symmetric part (R + R^T)/2 - c I = (1 - c) a a^T
  const Mat3 S = 0.5 * (R + R.transpose()) - c * Mat3::Identity();
  int k = 0;
  if (S(1, 1) > S(k, k)) k = 1;
  if (S(2, 2) > S(k, k)) k = 2;
  Vec3 a = S.col(k);
  a /= a.norm();
  if (a.dot(s) < 0.0) a = -a;
  return th * a;
}
}  // namespace detail

inline Vec3 so3_log(const Mat3& R) {
  double th, sn, c;
  return detail::so3_log_sc(R, th, sn, c);
}

/// log of a pose: w = so3_log(R), v = (I - W/2 + D W^2) p, D = (1 - A/(2B))/th^2 (series for
/// th^2 < 0.04; above, B = (1 - cos th)/th^2 with 1 - cos th = sin^2/(1 + cos) for cos > 0).
inline Vec6 log(const Mat4& T) {
  const Mat3 R = T.topLeftCorner<3, 3>();
  const Vec3 p = T.topRightCorner<3, 1>();
  double th, sn, c;
  const Vec3 w = detail::so3_log_sc(R, th, sn, c);
  const double t = th * th;
  double D;
  if (t < 0.04) {
    D = detail::horner<8>(series::kD, t);
  } else {
    const double A = sn / th;
    const double B = (c > 0.0 ? sn * sn / (1.0 + c) : 1.0 - c) / t;
    D = (1.0 - A / (2.0 * B)) / t;
  }
  const Vec3 wp = w.cross(p);
  Vec6 xi;
  xi.head<3>() = w;
  xi.tail<3>() = p - 0.5 * wp + D * w.cross(wp);
  return xi;
}

inline Mat4 inverse(const Mat4& T) {
  Mat4 Ti;
  const Mat3 Rt = T.topLeftCorner<3, 3>().transpose();
  Ti.topLeftCorner<3, 3>() = Rt;
  Ti.topRightCorner<3, 1>() = -Rt * T.topRightCorner<3, 1>();
  Ti.row(3) << 0.0, 0.0, 0.0, 1.0;
  return Ti;
}

inline Mat6 adjoint(const Mat4& T) {
  const Mat3 R = T.topLeftCorner<3, 3>();
  Mat6 Ad;
  Ad.topLeftCorner<3, 3>() = R;
  Ad.topRightCorner<3, 3>().setZero();
  Ad.bottomLeftCorner<3, 3>() = hat3(T.topRightCorner<3, 1>()) * R;
  Ad.bottomRightCorner<3, 3>() = R;
  return Ad;
}

/// Lie bracket operator ad(xi) = [[w^, 0], [v^, w^]] (ad(a) b = [a, b]).
inline Mat6 ad(const Vec6& xi) {
  Mat6 M;
  const Mat3 W = hat3(xi.head<3>());
  M.topLeftCorner<3, 3>() = W;
  M.topRightCorner<3, 3>().setZero();
  M.bottomLeftCorner<3, 3>() = hat3(xi.tail<3>());
  M.bottomRightCorner<3, 3>() = W;
  return M;
}

/// Barfoot's Q(w, v) (lower-left block of the SE(3) left Jacobian in (w, v) order).
inline Mat3 jacobian_Q(const Vec3& w, const Vec3& v, const Coeffs& k) {
  double q2, q3;
  if (k.t < kSeriesT) {
    q2 = detail::horner<10>(series::kQ2, k.t);
    q3 = detail::horner<10>(series::kQ3, k.t);
  } else {
    q2 = (1.0 - 2.0 * k.B) / (2.0 * k.t);
    q3 = (3.0 * k.C - k.B) / (2.0 * k.t);
  }
  const Mat3 W = hat3(w), V = hat3(v);
  const Mat3 WV = W * V, VW = V * W, WVW = WV * W;
  return 0.5 * V + k.C * (WV + VW + WVW) + q2 * (W * WV + VW * W - 3.0 * WVW) +
         q3 * (WVW * W + W * WVW);
}

inline Mat6 left_jacobian(const Vec6& xi) {
  const Vec3 w = xi.head<3>(), v = xi.tail<3>();
  const Coeffs k = coeffs(w);
  const Mat3 W = hat3(w);
  const Mat3 J = Mat3::Identity() + k.B * W + k.C * (W * W);
  Mat6 M;
  M.topLeftCorner<3, 3>() = J;
  M.topRightCorner<3, 3>().setZero();
  M.bottomLeftCorner<3, 3>() = jacobian_Q(w, v, k);
  M.bottomRightCorner<3, 3>() = J;
  return M;
}
inline Mat6 right_jacobian(const Vec6& xi) { return left_jacobian(-xi); }

inline Mat6 left_jacobian_inv(const Vec6& xi) {
  const Vec3 w = xi.head<3>(), v = xi.tail<3>();
  const Coeffs k = coeffs(w);
  const Mat3 W = hat3(w);
  const Mat3 Ji = Mat3::Identity() - 0.5 * W + coeff_D(k) * (W * W);
  Mat6 M;
  M.topLeftCorner<3, 3>() = Ji;
  M.topRightCorner<3, 3>().setZero();
  M.bottomLeftCorner<3, 3>() = -Ji * jacobian_Q(w, v, k) * Ji;
  M.bottomRightCorner<3, 3>() = Ji;
  return M;
}
inline Mat6 right_jacobian_inv(const Vec6& xi) { return left_jacobian_inv(-xi); }

/// d/dt J_l(xi(t)) along xi_dot (the "(d/dt) dexp" of Chang 2026 appendix H, eq. H.4).
/// Uses J_l = I + a1 ad + a2 ad^2 + a3 ad^3 + a4 ad^4 (ad = ad(xi)), so
/// dJ = sum_i (da_i (w.wd)) ad^i + a_i sum_{j<i} ad^j ad(xi_dot) ad^(i-1-j).
inline Mat6 left_jacobian_dot(const Vec6& xi, const Vec6& xid) {
  const Vec3 w = xi.head<3>();
  const Coeffs k = coeffs(w);
  double a1, a2, a3, a4, d1, d2, d3, d4;
  if (k.t < kSeriesT) {
    using namespace series;
    a1 = detail::horner<10>(kAL1, k.t);
    a2 = detail::horner<10>(kAL2, k.t);
    a3 = detail::horner<10>(kAL3, k.t);
    a4 = detail::horner<10>(kAL4, k.t);
    d1 = detail::horner<10>(kdAL1, k.t);
    d2 = detail::horner<10>(kdAL2, k.t);
    d3 = detail::horner<10>(kdAL3, k.t);
    d4 = detail::horner<10>(kdAL4, k.t);
  } else {
    const double t = k.t;
    const double dA = k.C - k.B;
    const double dB = (k.A - 2.0 * k.B) / t;
    const double dC = (k.B - 3.0 * k.C) / t;
    a1 = 2.0 * k.B - 0.5 * k.A;
    a2 = 0.5 * (5.0 * k.C - k.B);
    a3 = (k.B - 0.5 * k.A) / t;
    a4 = (3.0 * k.C - k.B) / (2.0 * t);
    d1 = 2.0 * dB - 0.5 * dA;
    d2 = 0.5 * (5.0 * dC - dB);
    d3 = (dB - 0.5 * dA - 2.0 * a3) / t;
    d4 = (0.5 * (3.0 * dC - dB) - 2.0 * a4) / t;
  }
  const double wwd = w.dot(xid.head<3>());
  const Mat6 X = ad(xi), Y = ad(xid);
  const Mat6 X2 = X * X, X3 = X2 * X;
  const Mat6 XY = X * Y, YX = Y * X;
  const Mat6 dX2 = XY + YX;                       // d(ad^2)
  const Mat6 dX3 = X * dX2 + Y * X2;               // X(XY+YX) + Y X^2
  const Mat6 dX4 = X * dX3 + Y * X3;               // d(ad^4)
  return (d1 * wwd) * X + (d2 * wwd) * X2 + (d3 * wwd) * X3 + (d4 * wwd) * (X3 * X) + a1 * Y +
         a2 * dX2 + a3 * dX3 + a4 * dX4;
}

// ------------------------------------------------------------------ manif's verbs (right, body frame)
/// between(X, Y) = X^-1 Y: the pose of Y seen from X.
inline Mat4 between(const Mat4& X, const Mat4& Y) { return inverse(X) * Y; }

/// plus(X, tau) = X exp(tau) (X ⊕ τ): move X by the body twist tau = (w, v).
inline Mat4 plus(const Mat4& X, const Vec6& tau) { return X * exp(tau); }

/// minus(Y, X) = log(X^-1 Y) (Y ⊖ X): the body twist that takes X to Y, so plus(X, minus(Y, X)) = Y.
inline Vec6 minus(const Mat4& Y, const Mat4& X) { return log(between(X, Y)); }

/// Geodesic interpolation X ⊕ s (Y ⊖ X) = T0 exp(s log(T0^-1 T1)).
inline Mat4 interpolate(const Mat4& T0, const Mat4& T1, double s) { return plus(T0, s * minus(T1, T0)); }

// ------------------------------------------------------------------ quaternions (x, y, z, w)
inline Mat3 quat_to_rot(const Vec4& q_xyzw) {
  const Eigen::Quaterniond q(q_xyzw[3], q_xyzw[0], q_xyzw[1], q_xyzw[2]);
  return q.normalized().toRotationMatrix();
}

/// Unit quaternion (x, y, z, w) with w >= 0 (Shepperd's method via Eigen).
inline Vec4 rot_to_quat(const Mat3& R) {
  Eigen::Quaterniond q(R);
  q.normalize();
  Vec4 out(q.x(), q.y(), q.z(), q.w());
  if (out[3] < 0.0) out = -out;
  return out;
}

}  // namespace hri_core::se3
