// hri_interaction C++ hot path (owner: hri_interaction), header-only, Eigen fixed-size types.
//
// Kernels (Chang 2026 ch. 12 / app. H), twist order (w, v), body frame:
//   Lie-PD impedance   tau = J_b^T (-K e - D edot) + bias,  e = Log(T_ref^-1 T),
//                      edot = V_b - Ad_{T^-1 T_ref} V_ref
//   Lie admittance     M_l = J^T M J, D_l = J^T (D J + M Jdot), gamma = J^T F  (J = dexp = J_l(lambda))
//                      semi-implicit Euler in the algebra, per-call dt; T_mod = T_d exp(lambda)
//   Cartesian pair     classical impedance (world frame at the EE point, split R^3 x SO(3) error)
//                      and per-component admittance M x'' + D x' + K x = F.
//
// InteractionTick: the whole gated 1 kHz tick of hri_interaction.core.controller
// (InteractionController.tick) in one call, same order and same arithmetic:
//   state finite? -> reference governor -> sigma_min(J_b) -> wrench filter (none / PO-PC / TDPC /
//   wave / jitter) -> admittance step -> twist bound (settle) -> T_ref = T_d exp(lambda) -> gain blend ->
//   torque law -> finite? -> hri_core::safety::SafetyChecker (clamp, reject = hold, freeze) ->
//   torque_max clip.
// The slow inputs (reference target, wrench, gains, mode, freeze) are validated in Python and pushed
// with the setters; per tick nothing is allocated (fixed-capacity Eigen storage, kMaxDof joints).
#pragma once

#include <Eigen/Eigenvalues>
#include <Eigen/LU>
#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "hri_core/geometric_laws.hpp"
#include "hri_core/safety.hpp"
#include "hri_core/se3.hpp"

namespace hri_core::interaction {
using namespace hri_core::se3;

constexpr int kMaxDof = 16;
using MatJ = Eigen::Matrix<double, 6, Eigen::Dynamic, Eigen::ColMajor, 6, kMaxDof>;
using VecN = Eigen::Matrix<double, Eigen::Dynamic, 1, Eigen::ColMajor, kMaxDof, 1>;

inline VecN lie_impedance_torque(const Mat4& T, const Vec6& Vb, const MatJ& Jb, const VecN& bias,
                                 const Mat4& Tref, const Mat6& K, const Mat6& D, const Vec6* Vref) {
  const Mat4 refTee = inverse(Tref) * T;
  const Vec6 e = log(refTee);
  Vec6 ed = Vb;
  if (Vref != nullptr) ed -= adjoint(inverse(refTee)) * (*Vref);
  const Vec6 F = -K * e - D * ed;
  return Jb.transpose() * F + bias;
}

/// Classical Cartesian impedance: F = K [Log(R_d R^T); p_d - p] - D [R w; R v], tau = J_w^T F + bias.
inline VecN cartesian_impedance_torque(const Mat4& T, const Vec6& Vb, const MatJ& Jb,
                                       const VecN& bias, const Mat4& Tref, const Mat6& K,
                                       const Mat6& D) {
  const Mat3 R = T.topLeftCorner<3, 3>();
  const Mat3 Rd = Tref.topLeftCorner<3, 3>();
  Vec6 e;
  e.head<3>() = so3_log(Rd * R.transpose());
  e.tail<3>() = Tref.block<3, 1>(0, 3) - T.block<3, 1>(0, 3);
  MatJ Jw(6, Jb.cols());
  Jw.topRows<3>() = R * Jb.topRows<3>();
  Jw.bottomRows<3>() = R * Jb.bottomRows<3>();
  Vec6 vel;
  vel.head<3>() = R * Vb.head<3>();
  vel.tail<3>() = R * Vb.tail<3>();
  const Vec6 F = K * e - D * vel;
  return Jw.transpose() * F + bias;
}

struct LieAdmittance {
  Mat6 M, D, K;
  Vec6 lam = Vec6::Zero(), lam_dot = Vec6::Zero();

  void step(const Vec6& F, double dt) {
    const Mat6 J = left_jacobian(lam);
    Mat6 Ml = J.transpose() * M * J;
    Ml = 0.5 * (Ml + Ml.transpose()).eval();
    Mat6 Dl = J.transpose() * (D * J);
    if (!lam_dot.isZero(0.0)) Dl.noalias() += J.transpose() * (M * left_jacobian_dot(lam, lam_dot));
    const Vec6 rhs = J.transpose() * F - Dl * lam_dot - K * lam;
    const Vec6 acc = Ml.llt().solve(rhs);
    lam_dot += dt * acc;
    lam += dt * lam_dot;
  }
};

enum TickFlag : uint32_t {
  HOLD = 1u << 0,
  STATE_INVALID = 1u << 1,
  REFERENCE_RAMPING = 1u << 2,
  SINGULAR = 1u << 3,
  FROZEN = 1u << 4,
  WRENCH_INVALID = 1u << 5,
  SETTLING = 1u << 6,
  TWIST_BOUNDED = 1u << 7,
  TORQUE_INVALID = 1u << 8,
  TORQUE_CLAMPED = 1u << 9,
  SAFETY_FREEZE = 1u << 10,  // internal: the safety gate froze the controller this tick
};
inline constexpr int kNumTickFlags = 11;
inline constexpr const char* kTickFlagNames[kNumTickFlags] = {
    "hold", "state_invalid", "reference_ramping", "singular", "frozen", "wrench_invalid",
    "settling", "twist_bounded", "torque_invalid", "torque_clamped", "safety_freeze"};

// LAW_GIC, LAW_LIE_OSD: geometric_laws.hpp; they share the Lie admittance / reference of LAW_LIE
enum Law : int { LAW_LIE = 0, LAW_CARTESIAN = 1, LAW_GIC = 2, LAW_LIE_OSD = 3 };
inline constexpr int kNumLaws = 4;
inline constexpr const char* kLawNames[kNumLaws] = {"lie", "cartesian", "gic", "lie_osd"};
/// Why the torque law cannot switch from `from` to `to` now (nullptr: it can), given the admittance
/// state (lambda, lambda_dot) and whether a previous switch is still blending in. Within the Lie family
/// (lie, gic, lie_osd: one reference T_d exp(lambda), one admittance) a switch is always possible;
/// between the Cartesian law and the Lie family only with the admittance at rest (|lambda|,
/// |lambda_dot| <= kLawSwitchRest): the two read lambda as different poses, so the reference would jump.
inline constexpr double kLawSwitchRest = 1e-9;  // rad, m (and per s): numerically at rest
inline const char* law_switch_error(int from, int to, const Vec6& lam, const Vec6& lam_dot, bool blending) {
  if (to < 0 || to >= kNumLaws) return "unknown law";
  if (to == from) return nullptr;
  if (blending) return "the previous law switch is still blending in (switch.law_blend_s); switch again after it";
  if ((from == LAW_CARTESIAN) != (to == LAW_CARTESIAN) &&
      (lam.cwiseAbs().maxCoeff() > kLawSwitchRest || lam_dot.cwiseAbs().maxCoeff() > kLawSwitchRest))
    return "the admittance is engaged (lambda != 0): the cartesian law and the Lie family read its state as "
           "different poses, so the reference would jump; switch with the admittance at rest (impedance mode "
           "once it has decayed, or while the stop holds)";
  return nullptr;
}

enum Mode : int { MODE_IMPEDANCE = 0, MODE_ADMITTANCE = 1, MODE_HYBRID = 2 };
// FILTER_JITTER: the delay compensator (Chang 2026 §13.6.3), w - (a_base + a_scale sigma/mu) (.) ld
enum Filter : int { FILTER_NONE = 0, FILTER_PASSIVITY = 1, FILTER_TDPC = 2, FILTER_WAVE = 3, FILTER_JITTER = 4 };

/// Everything InteractionParams holds that the tick reads (validated in Python).
struct TickParams {
  int n = 7;
  int law = LAW_LIE;
  int filter = FILTER_NONE;
  bool gravity_compensation = true, coriolis_compensation = true;
  Mat6 K = Mat6::Identity(), D = Mat6::Identity();            // impedance (initial)
  Mat6 M_adm = Mat6::Identity(), D_adm = Mat6::Identity(), K_adm = Mat6::Zero();
  Mat6 M_osd = Mat6::Identity();  // LAW_LIE_OSD: desired inertia M_d (config interaction.lie_osd)
  Vec6 compliant_axes = Vec6::Zero();
  Vec6 wave_damping = Vec6::Ones();
  Vec6 jitter_alpha_base = Vec6::Zero(), jitter_alpha_scale = Vec6::Zero();  // FILTER_JITTER
  double energy_floor_j = 0.0;
  // alpha_max of the PO/PC and TDPC controllers (N s/m on v, N m s/rad on w; config
  // interaction.passivity.po_pc.max_damping, passed by Python); infinity = the uncapped controller.
  double max_damping = std::numeric_limits<double>::infinity();
  double settle_max_linear_m_s = 0.05, settle_max_angular_rad_s = 0.2;
  double max_linear_m_s = 0.5, max_angular_rad_s = 1.5;
  double reference_max_linear_m_s = 0.1, reference_max_angular_rad_s = 0.5;
  double singular_sigma_min = 0.01;
  // Lie law: the torque law's reference twist includes the governed reference's own motion
  // V_d = Log(T_d,prev^-1 T_d) / dt (config interaction.reference_feedforward)
  bool reference_feedforward = false;
  // First-order hold of a target stream: a new target is approached at the speed it arrived with
  // (|step| / time since the previous target, capped by the max speeds above) when targets come
  // at most this far apart (s); 0 = always at the max speeds (config
  // interaction.limits.reference_interpolation_max_s)
  double reference_interpolation_max_s = 0.0;
  bool has_torque_max = false;
  VecN torque_max_nm = VecN::Zero(0);
};

/// Why `p` (with the optional checker) cannot build a tick, or nullptr (InteractionTick, rt::RtLoop).
inline const char* params_error(const TickParams& p, const safety::SafetyChecker* chk) {
  if (p.n < 1 || p.n > kMaxDof) return "TickParams: n must be 1..16 joints";
  if (p.law < 0 || p.law >= kNumLaws) return "TickParams: unknown law";
  if (p.law == LAW_LIE_OSD && Eigen::LLT<Mat6>(p.M_osd).info() != Eigen::Success)
    return "TickParams: M_osd must be symmetric positive definite";
  if (!(p.max_damping > 0)) return "TickParams: max_damping must be > 0";  // NaN, 0, < 0; inf = uncapped
  if (p.has_torque_max && p.torque_max_nm.size() != p.n) return "TickParams: torque_max_nm size != n";
  if (chk != nullptr && chk->limits().n != p.n) return "TickParams: safety checker joint count != n";
  return nullptr;
}

/// The arm state one tick reads (ArmState).
struct TickInput {
  const VecN* q;
  const VecN* dq;
  const Mat4* world_T_ee;
  const Vec6* body_twist;
  const MatJ* body_jacobian;
  const VecN* gravity;
  const VecN* coriolis;
  const MatN* mass_matrix = nullptr;  // M(q), n x n: needed by LAW_LIE_OSD only
};

struct TickOutput {
  VecN tau;
  Mat4 world_T_ref;
  uint32_t flags = 0;         // TickFlag bits
  uint32_t safety_flags = 0;  // hri_core::safety::Flag bits of the gate's result
  double sigma_min = std::numeric_limits<double>::quiet_NaN();
};

class InteractionTick {
 public:
  static constexpr double kEpsV2 = 1e-18;

  InteractionTick(const TickParams& p, const Mat4& world_T_d, safety::SafetyChecker* checker)
      : p_(p), safety_(checker), Td_(world_T_d), Ttarget_(world_T_d), last_ref_(world_T_d) {
    K_ = p.K;
    D_ = p.D;
    Kfrom_ = Kto_ = K_;
    Dfrom_ = Dto_ = D_;
    adm_.M = p.M_adm;
    adm_.D = p.D_adm;
    adm_.K = p.K_adm;
    last_tau_ = VecN::Zero(p.n);
  }

  // ------------------------------------------------------------------ pushed inputs
  void set_target(const Mat4& T) {
    // arrival speed of the target stream, translation and rotation each (first-order hold; see
    // TickParams); steps below 1e-9 (m, rad) are numerical noise, not motion
    const Vec6 step = log(inverse(Ttarget_) * T);
    arrival(step.tail<3>().norm(), t_v_, v_arr_);
    arrival(step.head<3>().norm(), t_w_, w_arr_);
    Ttarget_ = T;
    at_target_ = false;
  }
  void set_wrench(const Vec6& w, bool ok) {
    if (ok) wrench_ = w;
    wrench_ok_ = ok;
  }
  void set_gains(const Mat6& K, const Mat6& D, double blend_s) {
    Kfrom_ = K_;
    Dfrom_ = D_;
    Kto_ = K;
    Dto_ = D;
    blend_t_ = 0.0;
    blend_total_ = blend_s;
    if (blend_total_ <= 0) {
      K_ = K;
      D_ = D;
    }
  }
  void set_admittance(const Mat6& M, const Mat6& D, const Mat6& K) {
    adm_.M = M;
    adm_.D = D;
    adm_.K = K;
  }
  void set_mode(int mode, double settle_until_s) {
    mode_ = mode;
    settle_until_ = settle_until_s;
  }
  void set_frozen(bool frozen) {
    frozen_ = frozen;
    if (frozen) adm_.lam_dot.setZero();
  }
  /// Hold here (the stop input): reference and target := T (the measured EE pose), admittance
  /// state zeroed, frozen. Released with set_frozen(false); the target stays at T (no jump back).
  void hold_at(const Mat4& T) {
    Td_ = T;
    Ttarget_ = T;
    at_target_ = true;
    t_v_ = t_w_ = -1.0;
    v_arr_ = w_arr_ = -1.0;
    Vd_.setZero();
    adm_.lam.setZero();
    adm_.lam_dot.setZero();
    frozen_ = true;
  }
  /// The wrench link's delay statistics (s) for FILTER_JITTER: sigma/mu (0 unless mean > 0 and
  /// both finite, std >= 0).
  void set_link_statistics(double mean_s, double std_s) {
    link_spread_ = (mean_s > 0 && std::isfinite(mean_s) && std_s >= 0 && std::isfinite(std_s)) ? std_s / mean_s : 0.0;
  }
  double link_spread() const { return link_spread_; }
  /// Seeds the wrench filter's energy accounts (hand-over from another controller, tests).
  void set_filter_state(double energy_j, double dissipated_j, double min_energy_j, long violations,
                        const Vec6& energy_dof_j, long saturations) {
    energy_j_ = energy_j;
    dissipated_j_ = dissipated_j;
    min_energy_j_ = min_energy_j;
    violations_ = violations;
    energy_dof_j_ = energy_dof_j;
    saturations_ = saturations;
  }
  void reset_filter() {
    energy_j_ = dissipated_j_ = min_energy_j_ = 0.0;
    violations_ = saturations_ = 0;
    energy_dof_j_.setZero();
    last_alpha_.setZero();
  }

  // ------------------------------------------------------------------ the tick
  void tick(const TickInput& in, double dt, TickOutput& out) {
    uint32_t flags = 0;
    out.safety_flags = 0;
    out.sigma_min = std::numeric_limits<double>::quiet_NaN();
    time_s_ += dt;
    if (!(finite(*in.q) && finite(*in.dq) && finite(*in.world_T_ee) && finite(*in.body_twist) &&
          finite(*in.body_jacobian) && finite(*in.gravity) && finite(*in.coriolis) && dt > 0 &&
          std::isfinite(dt)) ||
        (uses_osd() && !mass_matrix_ok(in))) {
      have_prevJ_ = false;
      out.tau = last_tau_;
      out.world_T_ref = last_ref_;
      out.flags = HOLD | STATE_INVALID;
      return;
    }
    govern_reference(dt, flags);
    const MatJ& Jb = *in.body_jacobian;
    const Mat6 JJt = Jb * Jb.transpose();
    const double ev0 = Eigen::SelfAdjointEigenSolver<Mat6>(JJt, Eigen::EigenvaluesOnly).eigenvalues()(0);
    const double smin = std::sqrt(std::max(ev0, 0.0));
    const bool singular = smin < p_.singular_sigma_min;
    if (singular) flags |= SINGULAR;
    const bool hold_adm = frozen_ || !wrench_ok_ || singular;
    if (frozen_) flags |= FROZEN | HOLD;
    if (!wrench_ok_) flags |= WRENCH_INVALID | HOLD;
    if (hold_adm) {
      adm_.lam_dot.setZero();
    } else {
      Vec6 w;
      if (mode_ == MODE_ADMITTANCE)
        w = wrench_;
      else if (mode_ == MODE_HYBRID)
        w = wrench_.cwiseProduct(p_.compliant_axes);
      else
        w.setZero();
      const Vec6 w_safe = filter(w, adm_.lam_dot, dt);
      if (!adm_.lam.isZero(0.0) || !adm_.lam_dot.isZero(0.0) || !w_safe.isZero(0.0)) {
        adm_step(w_safe, dt);
        bound_twist(flags);
      }
    }
    // reference T_d exp(lambda) and its body twist
    Mat4 Tref;
    const bool have_lam = !adm_.lam.isZero(0.0);
    if (!have_lam)
      Tref = Td_;
    else
      Tref = modified_pose(Td_);
    bool have_vref = !adm_.lam_dot.isZero(0.0);
    Vec6 Vref;
    if (have_vref) Vref = lie_family() ? Vec6(right_jacobian(adm_.lam) * adm_.lam_dot) : adm_.lam_dot;
    if (p_.reference_feedforward && lie_family() && !Vd_.isZero(0.0)) {
      // body twist of T_d exp(lambda) from the motion of T_d: Ad_{exp(-lambda)} V_d
      const Vec6 ff = have_lam ? Vec6(adjoint(exp(Vec6(-adm_.lam))) * Vd_) : Vd_;
      Vref = have_vref ? Vec6(Vref + ff) : ff;
      have_vref = true;
    }
    gains(dt);
    VecN ff = VecN::Zero(p_.n);
    if (p_.gravity_compensation) ff += *in.gravity;
    if (p_.coriolis_compensation) ff += *in.coriolis;
    const Vec6* vr = have_vref ? &Vref : nullptr;
    if (uses_osd()) {
      // Jdot_b qdot by a backward difference of J_b over this tick (zero on the first tick)
      jdq_.setZero();
      if (have_prevJ_ && prevJ_.cols() == Jb.cols()) jdq_ = ((Jb - prevJ_) / dt) * (*in.dq);
    }
    VecN tau = law_torque(p_.law, in, Jb, ff, Tref, vr, singular, flags);
    if (law_blending()) {
      // a law switch: the command moves convexly from the old law's torque to the new one's
      law_blend_t_ = std::min(law_blend_total_, law_blend_t_ + dt);
      const double a = std::min(std::max(law_blend_t_ / law_blend_total_, 0.0), 1.0);
      tau = (1.0 - a) * law_torque(law_from_, in, Jb, ff, Tref, vr, singular, flags) + a * tau;
    }
    prevJ_ = Jb;
    have_prevJ_ = true;
    if (!tau.allFinite()) {
      flags |= HOLD | TORQUE_INVALID;
      tau = last_tau_;
    }
    if (safety_ != nullptr) safety_gate(tau, ff, in, dt, flags, out.safety_flags);
    if (p_.has_torque_max) {
      bool clipped = false;
      for (int j = 0; j < p_.n; ++j) {
        const double c = std::min(std::max(tau(j), -p_.torque_max_nm(j)), p_.torque_max_nm(j));
        if (c != tau(j)) clipped = true;
        tau(j) = c;
      }
      if (clipped) flags |= TORQUE_CLAMPED;
    }
    last_tau_ = tau;
    last_ref_ = Tref;
    out.tau = tau;
    out.world_T_ref = Tref;
    out.flags = flags;
    out.sigma_min = smin;
  }

  /// T_mod = T_d exp(lambda) (Lie) or the split R^3 x SO(3) pose (Cartesian).
  Mat4 modified_pose(const Mat4& Td) const {
    if (lie_family()) return Td * exp(adm_.lam);
    Mat4 out = Mat4::Identity();
    out.topLeftCorner<3, 3>() = Td.topLeftCorner<3, 3>() * so3_exp(adm_.lam.head<3>());
    out.block<3, 1>(0, 3) = Td.block<3, 1>(0, 3) + Td.topLeftCorner<3, 3>() * adm_.lam.tail<3>();
    return out;
  }
  /// dexp(lambda) lambda_dot (Lie) or lambda_dot (Cartesian).
  Vec6 twist() const {
    return lie_family() ? Vec6(left_jacobian(adm_.lam) * adm_.lam_dot) : adm_.lam_dot;
  }

  /// Switches the torque law from the next tick on (law_switch_error: false, unchanged, if it
  /// cannot now). The reference does not move (one admittance state); the command is blended
  /// convexly from the old law's torque to the new one's over blend_s (0: at once).
  bool set_law(int law, double blend_s) {
    if (law_switch_error(p_.law, law, adm_.lam, adm_.lam_dot, law_blending()) != nullptr) return false;
    if (law == LAW_LIE_OSD && Eigen::LLT<Mat6>(p_.M_osd).info() != Eigen::Success) return false;
    if (law == p_.law) return true;
    law_from_ = p_.law;
    p_.law = law;
    law_blend_t_ = 0.0;
    law_blend_total_ = std::isfinite(blend_s) && blend_s > 0 ? blend_s : 0.0;
    return true;
  }
  /// A law switch is blending in (the command still mixes the previous law's torque).
  bool law_blending() const { return law_blend_total_ > 0 && law_blend_t_ < law_blend_total_; }
  /// LAW_LIE_OSD's desired inertia M_d (validated SPD in Python; false = not SPD, unchanged).
  bool set_osd_inertia(const Mat6& Md) {
    if (Eigen::LLT<Mat6>(Md).info() != Eigen::Success) return false;
    p_.M_osd = Md;
    return true;
  }
  int law() const { return p_.law; }
  /// Jdot_b qdot the OSD law used on the last tick.
  const Vec6& jdot_qdot() const { return jdq_; }

  // ------------------------------------------------------------------ state (read / source)
  double time_s() const { return time_s_; }
  const Mat4& world_T_d() const { return Td_; }
  const Mat6& K() const { return K_; }
  const Mat6& D() const { return D_; }
  const VecN& last_tau() const { return last_tau_; }
  const Mat4& last_ref() const { return last_ref_; }
  const Vec6& reference_twist() const { return Vd_; }
  Vec6& lam() { return adm_.lam; }
  Vec6& lam_dot() { return adm_.lam_dot; }
  double energy_j() const { return energy_j_; }
  double dissipated_j() const { return dissipated_j_; }
  double min_energy_j() const { return min_energy_j_; }
  long violations() const { return violations_; }
  long saturations() const { return saturations_; }
  /// alpha applied on the last filtered tick: PO/PC in entry 0, TDPC per DoF.
  const Vec6& last_alpha() const { return last_alpha_; }
  const Vec6& energy_dof_j() const { return energy_dof_j_; }
  const TickParams& params() const { return p_; }
  int mode() const { return mode_; }
  bool frozen() const { return frozen_; }

 private:
  void arrival(double step, double& t_prev, double& speed) const {
    if (!(step > 1e-9)) return;
    const double dt_arr = time_s_ - t_prev;
    if (t_prev >= 0.0 && dt_arr > 0.0 && dt_arr <= p_.reference_interpolation_max_s)
      speed = step / dt_arr;
    else if (dt_arr != 0.0)
      speed = -1.0;   // no stream (first target, or after a pause): the max speed
    t_prev = time_s_;
  }

  bool lie_family() const { return p_.law != LAW_CARTESIAN; }
  bool uses_osd() const { return p_.law == LAW_LIE_OSD || (law_blending() && law_from_ == LAW_LIE_OSD); }

  /// The torque of `law` at this tick's reference (feed-forward ff = g + c as configured).
  VecN law_torque(int law, const TickInput& in, const MatJ& Jb, const VecN& ff, const Mat4& Tref, const Vec6* vr,
                  bool singular, uint32_t& flags) const {
    switch (law) {
      case LAW_CARTESIAN:
        return cartesian_impedance_torque(*in.world_T_ee, *in.body_twist, Jb, ff, Tref, K_, D_);
      case LAW_GIC:
        return gic_torque(*in.world_T_ee, *in.body_twist, Jb, ff, Tref, K_, D_, vr);
      case LAW_LIE_OSD: {
        VecN tau;
        const char* err = singular ? "singular" : lie_osd_torque(*in.world_T_ee, *in.body_twist, Jb, ff, Tref, K_, D_,
                                                               p_.M_osd, vr, wrench_ok_ ? &wrench_ : nullptr,
                                                               *in.mass_matrix, jdq_, tau);
        if (err == nullptr) return tau;
        flags |= SINGULAR;  // no Lambda here (singular arm): the Lie-PD law, flagged
        return lie_impedance_torque(*in.world_T_ee, *in.body_twist, Jb, ff, Tref, K_, D_, vr);
      }
      default:
        return lie_impedance_torque(*in.world_T_ee, *in.body_twist, Jb, ff, Tref, K_, D_, vr);
    }
  }

  bool mass_matrix_ok(const TickInput& in) const {
    const MatN* M = in.mass_matrix;
    return M != nullptr && M->rows() == p_.n && M->cols() == p_.n && finite(*M);
  }

  template <class Derived>
  static bool finite(const Eigen::MatrixBase<Derived>& x) {
    return std::isfinite(x.sum());  // as the Python gate: a sum is non-finite iff an entry is
  }

  void govern_reference(double dt, uint32_t& flags) {
    Vd_.setZero();
    if (frozen_ || at_target_) return;
    const Vec6 xi = log(inverse(Td_) * Ttarget_);
    if (xi.isZero(0.0)) {
      Td_ = Ttarget_;
      at_target_ = true;
      return;
    }
    double s = 1.0;
    const double nw = xi.head<3>().norm(), nv = xi.tail<3>().norm();
    const double wcap = w_arr_ > 0.0 ? std::min(p_.reference_max_angular_rad_s, w_arr_) : p_.reference_max_angular_rad_s;
    const double vcap = v_arr_ > 0.0 ? std::min(p_.reference_max_linear_m_s, v_arr_) : p_.reference_max_linear_m_s;
    if (nw > wcap * dt) s = std::min(s, wcap * dt / nw);
    if (nv > vcap * dt) s = std::min(s, vcap * dt / nv);
    if (s < 1.0) {
      flags |= REFERENCE_RAMPING;
      Td_ = (Td_ * exp(s * xi)).eval();
      Vd_ = (s / dt) * xi;
    } else {
      Td_ = Ttarget_;
      at_target_ = true;
      Vd_ = xi / dt;
    }
  }

  // Wrench filter + energy observer (hri_interaction/core/passivity.py, same arithmetic):
  //   PO/PC  alpha = min((E_floor - e) / (dt |ld|^2), alpha_max), w_safe = w + alpha ld
  //   TDPC   the same per DoF against E_floor / 6
  // A capped tick counts one saturation and one violation; the deficit it could not remove stays
  // in energy_j_ / energy_dof_j_ (carried to the next tick, never reset).
  Vec6 filter(const Vec6& w, const Vec6& ld, double dt) {
    Vec6 ws = w;
    bool short_of_floor = false;  // this tick: the cap left a deficit
    switch (p_.filter) {
      case FILTER_PASSIVITY: {
        const double e_next = energy_j_ + dt * ld.dot(w);
        const double v2 = ld.dot(ld);
        last_alpha_.setZero();
        if (e_next < p_.energy_floor_j && v2 > kEpsV2 && dt > 0) {
          double alpha = (p_.energy_floor_j - e_next) / (dt * v2);
          if (alpha > p_.max_damping) {
            alpha = p_.max_damping;
            ++saturations_;
            short_of_floor = true;
          }
          last_alpha_(0) = alpha;
          dissipated_j_ += alpha * v2 * dt;
          ws = w + alpha * ld;
        }
        break;
      }
      case FILTER_TDPC: {
        const double floor = p_.energy_floor_j / 6.0;
        bool any = false;
        Vec6 alpha = Vec6::Zero();
        for (int i = 0; i < 6; ++i) {
          const double e_next = energy_dof_j_(i) + dt * ld(i) * w(i);
          const double v2 = ld(i) * ld(i);
          if (e_next < floor && v2 > kEpsV2 && dt > 0) {
            alpha(i) = (floor - e_next) / (dt * v2);
            any = true;
          }
        }
        if (any) {
          bool capped = false;
          for (int i = 0; i < 6; ++i) {
            if (alpha(i) > p_.max_damping) {
              alpha(i) = p_.max_damping;
              capped = true;
            }
          }
          if (capped) {
            ++saturations_;
            short_of_floor = true;
          }
          ws = w + alpha.cwiseProduct(ld);
          double s = 0.0;
          for (int i = 0; i < 6; ++i) s += alpha(i) * (ld(i) * ld(i)) * dt;
          dissipated_j_ += s;
        }
        last_alpha_ = alpha;
        energy_dof_j_ = energy_dof_j_ + dt * ld.cwiseProduct(ws);
        break;
      }
      case FILTER_JITTER: {
        const Vec6 d = (p_.jitter_alpha_base + link_spread_ * p_.jitter_alpha_scale).cwiseProduct(ld);
        dissipated_j_ += ld.dot(d) * dt;
        ws = w - d;
        break;
      }
      case FILTER_WAVE: {
        const Vec6 d = p_.wave_damping.cwiseProduct(ld);
        dissipated_j_ += ld.dot(d) * dt;
        ws = w - d;
        break;
      }
      default:
        break;
    }
    energy_j_ = energy_j_ + dt * ld.dot(ws);
    min_energy_j_ = std::min(min_energy_j_, energy_j_);
    if (energy_j_ < p_.energy_floor_j - 1e-12 || short_of_floor) ++violations_;
    return ws;
  }

  void adm_step(const Vec6& F, double dt) {
    if (lie_family()) {
      adm_.step(F, dt);
      return;
    }
    const Vec6 acc = adm_.M.partialPivLu().solve(F - adm_.D * adm_.lam_dot - adm_.K * adm_.lam);
    adm_.lam_dot = adm_.lam_dot + dt * acc;
    adm_.lam = adm_.lam + dt * adm_.lam_dot;
  }

  void bound_twist(uint32_t& flags) {
    const bool settling = time_s_ < settle_until_;
    const double lin = settling ? p_.settle_max_linear_m_s : p_.max_linear_m_s;
    const double ang = settling ? p_.settle_max_angular_rad_s : p_.max_angular_rad_s;
    if (settling) flags |= SETTLING;
    const Vec6 V = twist();
    double s = 1.0;
    const double nw = V.head<3>().norm(), nv = V.tail<3>().norm();
    if (nw > ang) s = std::min(s, ang / nw);
    if (nv > lin) s = std::min(s, lin / nv);
    if (s < 1.0) {
      adm_.lam_dot *= s;
      flags |= TWIST_BOUNDED;
    }
  }

  void gains(double dt) {
    if (blend_total_ > 0 && blend_t_ < blend_total_) {
      blend_t_ = std::min(blend_total_, blend_t_ + dt);
      const double a = std::min(std::max(blend_t_ / blend_total_, 0.0), 1.0);
      K_ = (1.0 - a) * Kfrom_ + a * Kto_;
      D_ = (1.0 - a) * Dfrom_ + a * Dto_;
    }
  }

  void safety_gate(VecN& tau, const VecN& ff, const TickInput& in, double dt, uint32_t& flags,
                   uint32_t& sflags) {
    const Mat4& T = *in.world_T_ee;
    const Eigen::Vector3d p = T.block<3, 1>(0, 3);
    if (!safety_seeded_) {
      safety_->reset(nullptr, nullptr, ff.data(), p.data());
      safety_seeded_ = true;
    }
    const Eigen::Vector3d v = T.topLeftCorner<3, 3>() * in.body_twist->tail<3>();
    VecN tau_in = tau;
    Eigen::Vector3d p_out, v_out;
    safety::Command c;
    c.horizon = 1;
    c.tau = tau_in.data();
    c.ee_pos = p.data();
    c.ee_vel = v.data();
    c.dt_s = dt;
    c.now_s = time_s_;
    c.stamp_s = time_s_;
    safety::Output o;
    o.tau = tau.data();
    o.ee_pos = p_out.data();
    o.ee_vel = v_out.data();
    const safety::Result r = safety_->check(c, o, -1);
    sflags = r.flags;
    if (r.ok) {
      tau = tau_in;
      return;
    }
    if (r.rejected) {
      flags |= HOLD;
      tau = last_tau_;
      return;
    }
    if (r.flags & (safety::POSITION | safety::WORKSPACE | safety::EE_SPEED)) {
      set_frozen(true);
      flags |= FROZEN | HOLD | SAFETY_FREEZE;
    }
    // tau holds the checker's clamped output
  }

  TickParams p_;
  safety::SafetyChecker* safety_;
  bool safety_seeded_ = false;
  Mat4 Td_, Ttarget_;
  Vec6 Vd_ = Vec6::Zero();  // body twist of the governed reference on this tick (feed-forward)
  bool at_target_ = false;
  double t_v_ = -1.0, t_w_ = -1.0;      // time_s_ of the last target that moved / turned (-1: none)
  double v_arr_ = -1.0, w_arr_ = -1.0;  // arrival speeds (m/s, rad/s); -1: use the max speeds
  Mat6 K_, D_, Kfrom_, Dfrom_, Kto_, Dto_;
  double blend_t_ = 0.0, blend_total_ = 0.0;
  LieAdmittance adm_;
  Vec6 wrench_ = Vec6::Zero();
  bool wrench_ok_ = true;
  int mode_ = MODE_IMPEDANCE;
  double settle_until_ = -1.0;
  bool frozen_ = false;
  double time_s_ = 0.0;
  double energy_j_ = 0.0, dissipated_j_ = 0.0, min_energy_j_ = 0.0;
  long violations_ = 0;
  long saturations_ = 0;  // ticks where the PC's alpha hit p_.max_damping
  Vec6 last_alpha_ = Vec6::Zero();
  Vec6 energy_dof_j_ = Vec6::Zero();
  VecN last_tau_;
  Mat4 last_ref_;
  MatJ prevJ_;               // J_b of the previous valid tick (LAW_LIE_OSD: Jdot_b qdot)
  bool have_prevJ_ = false;
  Vec6 jdq_ = Vec6::Zero();
  double link_spread_ = 0.0;  // sigma/mu of the wrench link's delays (FILTER_JITTER)
  int law_from_ = LAW_LIE;    // the law a switch blends from (set_law)
  double law_blend_t_ = 0.0, law_blend_total_ = 0.0;
};

}  // namespace hri_core::interaction
