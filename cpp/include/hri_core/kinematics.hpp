// Product-of-exponentials kinematics (Chang 2026 appendix B).
//
//   T(q) = exp([S_1] q_1) ... exp([S_n] q_n) M        S_i = (w_i, v_i) space screws at q = 0
//   J_s(q) column i = Ad(exp([S_1]q_1) ... exp([S_{i-1}]q_{i-1})) S_i     rows (w, v)
//   J_b(q) = Ad(T(q)^-1) J_s(q)
//   IK (damped least squares with adaptive, Levenberg-Marquardt damping):
//            xi = log(T_d T(q)^-1) (space twist), E = |xi|^2 / 2,
//            dq = (J_s^T J_s + mu (E + lambda^2) I)^-1 J_s^T xi            (n x n, on the free joints)
//            + (I - J^+ J) k_null (q_posture - q)   for redundant arms (n > 6)
//            a step is taken only if it lowers E (then mu *= lm_decrease), else mu *= lm_increase
//            and the step is recomputed; a joint on its limit whose step points outwards is
//            removed from the step (active set), so targets at a limit converge;
//   stop when |xi_w| < eps_w and |xi_v| < eps_v (table B.1), or after max_iterations.
// Storage is fixed-capacity (kMaxDof joints): no heap allocation in fk / jacobians / ik.
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <cmath>

#include "hri_core/se3.hpp"

namespace hri_core::kinematics {

inline constexpr int kMaxDof = 16;
using Screws = Eigen::Matrix<double, 6, Eigen::Dynamic, Eigen::ColMajor, 6, kMaxDof>;
using Jac = Screws;
using VecN = Eigen::Matrix<double, Eigen::Dynamic, 1, Eigen::ColMajor, kMaxDof, 1>;
using MatN = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor, kMaxDof, kMaxDof>;
using se3::Mat4;
using se3::Mat6;
using se3::Vec6;

struct IkParams {
  double eps_w = 0.0;         // rad, rotation tolerance |xi_w|
  double eps_v = 0.0;         // m, translation tolerance |xi_v|
  double damping = 0.0;       // lambda (DLS)
  int max_iterations = 0;
  double nullspace_gain = 0.0;  // k_null (used when n > 6 and a posture is given)
  double step_max = 0.0;      // rad, max |dq|_inf per iteration (<= 0: unlimited)
  double lm_increase = 0.0;   // mu factor after a rejected step (> 1)
  double lm_decrease = 0.0;   // mu factor after an accepted step (in (0, 1])
};

struct IkResult {
  VecN q;
  bool success = false;
  int iterations = 0;
  double err_w = 0.0, err_v = 0.0;
};

class PoeModel {
 public:
  PoeModel() = default;
  PoeModel(const Screws& S, const Mat4& M) : S_(S), M_(M) {
    for (int i = 0; i < S_.cols(); ++i) unit_[i] = std::fabs(S_.col(i).head<3>().norm() - 1.0) < 1e-12;
  }

  int dof() const { return static_cast<int>(S_.cols()); }
  const Screws& screws() const { return S_; }
  const Mat4& home() const { return M_; }

  /// exp([S_i] q_i): closed form for unit-axis revolute screws (|w| = 1):
  /// R = c I + s W + (1 - c) w w^T, p = q v + (1 - c) w x v + (q - s) w x (w x v); general exp otherwise.
  Mat4 joint_exp(int i, double qi) const {
    const Vec6 Si = S_.col(i);
    if (!unit_[i]) return se3::exp(Si * qi);
    const double s = std::sin(qi), c = std::cos(qi), k = 1.0 - c;
    const double w0 = Si[0], w1 = Si[1], w2 = Si[2];
    const se3::Vec3 w(w0, w1, w2), v = Si.tail<3>();
    Mat4 E;
    E(0, 0) = c + k * w0 * w0;
    E(1, 1) = c + k * w1 * w1;
    E(2, 2) = c + k * w2 * w2;
    E(0, 1) = k * w0 * w1 - s * w2;
    E(1, 0) = k * w0 * w1 + s * w2;
    E(0, 2) = k * w0 * w2 + s * w1;
    E(2, 0) = k * w0 * w2 - s * w1;
    E(1, 2) = k * w1 * w2 - s * w0;
    E(2, 1) = k * w1 * w2 + s * w0;
    const se3::Vec3 wv = w.cross(v);
    E.topRightCorner<3, 1>() = qi * v + k * wv + (qi - s) * w.cross(wv);
    E.row(3) << 0.0, 0.0, 0.0, 1.0;
    return E;
  }

  /// P <- P * E for homogeneous P, E (3x4 blocks only).
  static void mul_inplace(Mat4& P, const Mat4& E) {
    const Eigen::Matrix3d R = P.topLeftCorner<3, 3>();
    P.topRightCorner<3, 1>() += R * E.topRightCorner<3, 1>();
    P.topLeftCorner<3, 3>().noalias() = R * E.topLeftCorner<3, 3>();
  }

  Mat4 fk(const VecN& q) const {
    Mat4 T = Mat4::Identity();
    for (int i = 0; i < dof(); ++i) mul_inplace(T, joint_exp(i, q[i]));
    mul_inplace(T, M_);
    return T;
  }

  /// T(q) and J_s(q) in one pass.
  void fk_jacobian_space(const VecN& q, Mat4& T, Jac& Js) const {
    const int n = dof();
    Js.resize(6, n);
    Mat4 P = Mat4::Identity();
    for (int i = 0; i < n; ++i) {
      Js.col(i) = ad_apply(P, S_.col(i));
      mul_inplace(P, joint_exp(i, q[i]));
    }
    mul_inplace(P, M_);
    T = P;
  }

  Jac jacobian_space(const VecN& q) const {
    Mat4 T;
    Jac J;
    fk_jacobian_space(q, T, J);
    return J;
  }

  /// T(q) and J_b(q) = Ad(T^-1) J_s(q).
  void fk_jacobian_body(const VecN& q, Mat4& T, Jac& Jb) const {
    Jac Js;
    fk_jacobian_space(q, T, Js);
    const Mat4 Ti = se3::inverse(T);
    Jb.resize(6, dof());
    for (int i = 0; i < dof(); ++i) Jb.col(i) = ad_apply(Ti, Js.col(i));
  }

  Jac jacobian_body(const VecN& q) const {
    Mat4 T;
    Jac J;
    fk_jacobian_body(q, T, J);
    return J;
  }

  /// Damped least squares with adaptive (LM) damping; q_posture / q_min / q_max may be null.
  IkResult ik_dls(const Mat4& Td, const VecN& q0, const IkParams& p, const VecN* q_posture = nullptr,
                  const VecN* q_min = nullptr, const VecN* q_max = nullptr) const {
    const int n = dof();
    const bool limits = q_min && q_max;
    const double up = p.lm_increase > 1.0 ? p.lm_increase : 1.0;
    const double down = (p.lm_decrease > 0.0 && p.lm_decrease <= 1.0) ? p.lm_decrease : 1.0;
    IkResult r;
    r.q = q0;
    if (limits) r.q = r.q.cwiseMax(*q_min).cwiseMin(*q_max);
    Mat4 T;
    Jac J, Jn;
    fk_jacobian_space(r.q, T, J);
    Vec6 xi = se3::log(Td * se3::inverse(T));
    double E = 0.5 * xi.squaredNorm();
    double mu = 1.0;
    MatN H(n, n);
    VecN dq(n), qn(n), free(n);
    for (int it = 0;; ++it) {
      r.err_w = xi.head<3>().norm();
      r.err_v = xi.tail<3>().norm();
      r.iterations = it;
      if (r.err_w < p.eps_w && r.err_v < p.eps_v) {
        r.success = true;
        break;
      }
      if (it >= p.max_iterations) break;
      const double lambda = mu * (E + p.damping * p.damping);
      // active set: joints on a limit whose step points outwards are frozen for this step
      free.setOnes();
      for (int pass = 0; pass < n; ++pass) {
        const Jac Jf = J * free.asDiagonal();
        H.noalias() = Jf.transpose() * Jf;
        H.diagonal().array() += lambda;
        dq = H.ldlt().solve(Jf.transpose() * xi);
        bool blocked = false;
        if (limits) {
          for (int i = 0; i < n; ++i) {
            if (free[i] != 0.0 && ((r.q[i] <= (*q_min)[i] && dq[i] < 0.0) || (r.q[i] >= (*q_max)[i] && dq[i] > 0.0))) {
              free[i] = 0.0;
              blocked = true;
            }
          }
        }
        if (!blocked) break;
      }
      auto try_step = [&](VecN step) -> bool {
        if (p.step_max > 0.0) {
          const double m = step.cwiseAbs().maxCoeff();
          if (m > p.step_max) step *= p.step_max / m;
        }
        qn = r.q + step;
        if (limits) qn = qn.cwiseMax(*q_min).cwiseMin(*q_max);
        Mat4 Tn;
        fk_jacobian_space(qn, Tn, Jn);
        const Vec6 xin = se3::log(Td * se3::inverse(Tn));
        const double En = 0.5 * xin.squaredNorm();
        if (!(En < E)) return false;
        r.q = qn;
        J = Jn;
        xi = xin;
        E = En;
        return true;
      };
      bool accepted = false;
      if (q_posture && n > 6 && p.nullspace_gain != 0.0) {
        // N = I - J^+ J with the UNDAMPED pseudo-inverse J^+ = J^T (J J^T)^+ (an exact projector, so
        // the posture task does not leak into the pose error); eigen-directions of J J^T below
        // lambda^2 (near-singular) are left out of J^+.
        Mat6 A0 = J * J.transpose();
        Eigen::SelfAdjointEigenSolver<Mat6> es(A0);
        const double thr = std::max(p.damping * p.damping, 1e-12);
        Vec6 dinv;
        for (int k = 0; k < 6; ++k) dinv[k] = es.eigenvalues()[k] > thr ? 1.0 / es.eigenvalues()[k] : 0.0;
        const Jac VtJ = es.eigenvectors().transpose() * J;
        const VecN z = p.nullspace_gain * (*q_posture - r.q);
        // N z = z - J^T V D^+ V^T J z; with the posture pull first, without it if that step
        // does not lower E (the pull alone never blocks convergence)
        accepted = try_step(dq + z - VtJ.transpose() * (dinv.asDiagonal() * (VtJ * z)));
      }
      if (!accepted) accepted = try_step(dq);
      if (accepted) {  // less damping next time
        mu = std::max(mu * down, 1e-12);
      } else {         // rejected: more damping (a shorter, more gradient-like step)
        mu = std::min(mu * up, 1e12);
      }
    }
    return r;
  }

  /// sqrt(det(J J^T)) (position rows only, J[3:6], when dof < 6).
  static double manipulability(const Jac& J) {
    if (J.cols() < 6) {
      const Eigen::Matrix3d A = J.bottomRows<3>() * J.bottomRows<3>().transpose();
      return std::sqrt(std::max(0.0, A.determinant()));
    }
    const Mat6 A = J * J.transpose();
    return std::sqrt(std::max(0.0, A.determinant()));
  }

  /// sigma_max / sigma_min of J (inf when rank deficient).
  static double condition_number(const Jac& J) {
    const Mat6 A = J * J.transpose();
    Eigen::SelfAdjointEigenSolver<Mat6> es(A, Eigen::EigenvaluesOnly);
    const auto& ev = es.eigenvalues();
    const double lo = ev.minCoeff(), hi = ev.maxCoeff();
    if (!(lo > 0.0)) return std::numeric_limits<double>::infinity();
    return std::sqrt(hi / lo);
  }

 private:
  /// Ad_P S without forming the 6x6: (R w, p x (R w) + R v).
  static Vec6 ad_apply(const Mat4& P, const Vec6& s) {
    const Eigen::Matrix3d R = P.topLeftCorner<3, 3>();
    const Eigen::Vector3d p = P.topRightCorner<3, 1>();
    Vec6 o;
    o.head<3>() = R * s.head<3>();
    o.tail<3>() = p.cross(o.head<3>()) + R * s.tail<3>();
    return o;
  }

  Screws S_;
  Mat4 M_ = Mat4::Identity();
  bool unit_[kMaxDof]{};
};

}  // namespace hri_core::kinematics
