// hri_interaction torque laws beyond the Lie-PD law (owner: hri_interaction), header-only, Eigen
// fixed-size types, no heap per call. Twist and wrench order (w, v), body (EE) frame. Chang 2026,
// table 12.4 lists both as controllers of its library next to the Lie-PD law of eq. 12.2:
//
// Geometric impedance control, GIC (Seo et al. 2023), an ITorqueController. The stiffness is the
// gradient of a potential on SE(3) written in the reference frame,
//     Psi(T, T_r) = 1/2 e_p^T R_r K_p R_r^T e_p + tr(K_R (I - R_r^T R)),   e_p = p - p_r,
// a function of T_r^-1 T alone (left-invariant: the same torque in any world frame),
// whose body-frame gradient (d/de Psi(T exp(e^)) at e = 0) is the elastic wrench
//     f_R = vee(K_R R_r^T R - R^T R_r K_R),   f_p = R^T R_r K_p R_r^T e_p,
// with K_p the translational 3x3 diagonal block of K and K_R = 1/2 tr(K_w) I - K_w from its
// rotational block K_w: the trace potential's stiffness at a small error is (tr K_R) I - K_R, so
// this K_R gives every law of the tick the same small-error stiffness K (for K_R itself to be
// positive definite, each eigenvalue of K_w must stay below the sum of the other two; K_w = k I
// gives K_R = k/2 I). The coupling blocks of a full K have no place in this potential and are
// not used. With the velocity error
// e_V = V_b - Ad_{T^-1 T_r} V_r:
//     tau = J_b^T (-f_G - D e_V) + bias.
// The feed-forward terms of Seo et al. (M~ d/dt(Ad V_r) + C~ Ad V_r) vanish for a reference at rest
// and are not included (the tick's references are rate-governed steps; C~ needs the joint
// Coriolis matrix, which the robot interface does not deliver).
//
// Lie-group impedance with operational-space dynamics (Kim et al. 2025 through Chang 2026 ch. 12:
// an IBodyAccelController whose body acceleration an OSD module turns into torque,
// tau = J_b^T Lambda Vdot_ref + J_b^T mu + tau_g). With the error X = T_r^-1 T, lambda = Log(X)
// (eq. 12.1), V_e = V_b - Ad_{X^-1} V_r its body twist and J = J_r(lambda) (= dexp of Kim's error
// coordinate -lambda), the impedance M_l lambda'' + D_l lambda' + K lambda = J^T F_ext with
// M_l = J^T M_d J, D_l = J^T (D J + M_d Jdot) is, multiplied by J^-T,
//     M_d Vdot_e + D V_e + J^-T K lambda = F_ext.
// The controller asks for that error acceleration plus the reference's own (at rest: the transport
// term -ad_{V_e} Ad_{X^-1} V_r):
//     Vdot_ref = M_d^-1 (F_ext - D V_e - J^-T K lambda) - ad_{V_e} Ad_{X^-1} V_r,
// and the OSD module renders it on the arm with the measured wrench fed back:
//     Lambda = (J_b M(q)^-1 J_b^T)^-1,   F = Lambda (Vdot_ref - Jdot_b qdot) - F_ext,
//     tau = J_b^T F + bias   (bias = g + c: mu's joint-space part).
// With a perfect model the closed loop is exactly M_d Vdot_e + D V_e + J^-T K lambda = F_ext,
// passive from F_ext to V_e with storage 1/2 V_e^T M_d V_e + 1/2 lambda^T K lambda
// (d/dt 1/2 lambda^T K lambda = (J^-T K lambda)^T V_e because lambda' = J^-1 V_e).
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/LU>

#include "hri_core/se3.hpp"

namespace hri_core::interaction {
using namespace hri_core::se3;

constexpr int kLawMaxDof = 16;
using MatN = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor, kLawMaxDof, kLawMaxDof>;

/// K_R = 1/2 tr(K_w) I - K_w: the trace-potential gain whose small-error stiffness is K_w.
inline Mat3 gic_rotation_gain(const Mat6& K) {
  const Mat3 Kw = K.topLeftCorner<3, 3>();
  return 0.5 * Kw.trace() * Mat3::Identity() - Kw;
}

/// GIC potential Psi(T, T_r) (J) of the diagonal blocks of K (see the file comment).
inline double gic_potential(const Mat4& T, const Mat4& Tref, const Mat6& K) {
  const Mat3 R = T.topLeftCorner<3, 3>(), Rr = Tref.topLeftCorner<3, 3>();
  const Vec3 ep = T.block<3, 1>(0, 3) - Tref.block<3, 1>(0, 3);
  const Mat3 KR = gic_rotation_gain(K), Kp = K.bottomRightCorner<3, 3>();
  return 0.5 * ep.dot(Rr * Kp * Rr.transpose() * ep) + (KR * (Mat3::Identity() - Rr.transpose() * R)).trace();
}

/// GIC elastic wrench f_G = (f_R, f_p), the body-frame gradient of gic_potential.
inline Vec6 gic_elastic_wrench(const Mat4& T, const Mat4& Tref, const Mat6& K) {
  const Mat3 R = T.topLeftCorner<3, 3>(), Rr = Tref.topLeftCorner<3, 3>();
  const Vec3 ep = T.block<3, 1>(0, 3) - Tref.block<3, 1>(0, 3);
  const Mat3 KR = gic_rotation_gain(K), Kp = K.bottomRightCorner<3, 3>();
  const Mat3 RrR = Rr.transpose() * R;
  Vec6 f;
  f.head<3>() = vee3(KR * RrR - RrR.transpose() * KR);
  f.tail<3>() = R.transpose() * (Rr * (Kp * (Rr.transpose() * ep)));
  return f;
}

/// GIC torque: tau = J_b^T (-f_G - D e_V) + bias, e_V = V_b - Ad_{T^-1 T_r} V_r (V_r optional).
template <class MatJT, class VecNT>
inline VecNT gic_torque(const Mat4& T, const Vec6& Vb, const MatJT& Jb, const VecNT& bias, const Mat4& Tref,
                        const Mat6& K, const Mat6& D, const Vec6* Vref) {
  Vec6 eV = Vb;
  if (Vref != nullptr) eV -= adjoint(inverse(T) * Tref) * (*Vref);
  const Vec6 F = -gic_elastic_wrench(T, Tref, K) - D * eV;
  return Jb.transpose() * F + bias;
}

/// Lie-group impedance with operational-space dynamics (file comment). `Jdot_qdot`: Jdot_b qdot
/// (6); `Fext`: the measured wrench (nullptr: none, F_ext = 0); `Md`: desired inertia (SPD).
/// Writes tau and returns nullptr, or leaves tau and returns why not: the mass matrix is not
/// n x n, not finite or not positive definite, M_d is not SPD, or J_b M^-1 J_b^T is not
/// positive definite (a singular arm: no pseudoinverse, the caller decides).
template <class MatJT, class VecNT>
inline const char* lie_osd_torque(const Mat4& T, const Vec6& Vb, const MatJT& Jb, const VecNT& bias,
                                  const Mat4& Tref, const Mat6& K, const Mat6& D, const Mat6& Md,
                                  const Vec6* Vref, const Vec6* Fext, const MatN& Mq,
                                  const Vec6& Jdot_qdot, VecNT& tau) {
  const int n = static_cast<int>(Jb.cols());
  if (Mq.rows() != n || Mq.cols() != n) return "mass matrix is not n x n";
  if (!Mq.allFinite()) return "mass matrix not finite";
  const Eigen::LLT<MatN> llt(Mq);
  if (llt.info() != Eigen::Success) return "mass matrix not positive definite";
  const Mat4 X = inverse(Tref) * T;
  const Vec6 lam = log(X);
  Vec6 Ve = Vb;
  Vec6 acc = Vec6::Zero();
  if (Vref != nullptr) {
    const Vec6 Vr = adjoint(inverse(X)) * (*Vref);
    Ve -= Vr;
    acc = -ad(Ve) * Vr;
  }
  const Mat6 Jr = right_jacobian(lam);
  const Vec6 stiff = Jr.transpose().partialPivLu().solve(K * lam);  // J^-T K lambda
  Vec6 rhs = -D * Ve - stiff;
  if (Fext != nullptr) rhs += *Fext;
  const Eigen::LLT<Mat6> md(Md);
  if (md.info() != Eigen::Success) return "desired inertia not positive definite";
  acc += md.solve(rhs);
  using MatNx6 = Eigen::Matrix<double, Eigen::Dynamic, 6, Eigen::ColMajor, kLawMaxDof, 6>;
  const MatNx6 MinvJt = llt.solve(MatNx6(Jb.transpose()));  // M^-1 J_b^T
  Mat6 Linv = Jb * MinvJt;
  Linv = 0.5 * (Linv + Linv.transpose()).eval();
  const Eigen::LLT<Mat6> lam_llt(Linv);
  if (lam_llt.info() != Eigen::Success) return "J_b M^-1 J_b^T not positive definite (singular)";
  Vec6 F = lam_llt.solve(Vec6(acc - Jdot_qdot));
  if (Fext != nullptr) F -= *Fext;
  tau = Jb.transpose() * F + bias;
  return nullptr;
}

}  // namespace hri_core::interaction
