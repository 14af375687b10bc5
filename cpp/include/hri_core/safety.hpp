// Safety checker (Chang 2026 ch. 11): clamp AND flag, never a silent clip.
//
// A command is one step or a horizon of H steps (row-major (H, n) arrays, step dt_s), with any of
//   q   joint positions      -> q_min <= q <= q_max, |dq/dt| <= v_max, |d2q/dt2| <= a_max
//   qd  joint velocities     -> |qd| <= v_max, |dqd/dt| <= a_max
//   tau joint torques        -> |tau| <= tau_max, |dtau/dt| <= tau_rate_max
//   ee_pos (H, 3) positions  -> workspace_min <= p <= workspace_max, |dp/dt| <= ee_speed_max
//                                (when ee_vel is not given)
//   ee_vel (H, 3) velocities -> |v| <= ee_speed_max
// plus the command's timestamp: |now - stamp| <= stale_after_s.
// Differences use the previous step: row h-1, or for h = 0 the checker's history (the last
// committed step, set by reset() or by check(..., advance)).  Without history the rate checks of
// step 0 are skipped.
//
// Outputs: every output row is clamped into the intersection of the admissible intervals, taken
// in priority order position > velocity > acceleration (torque > torque rate); when an interval
// does not meet the previous ones the flag INFEASIBLE is raised as well (the output still respects
// the higher-priority limits).  A non-finite value anywhere, a stale/future stamp or a bad dt
// REJECTS the whole command: the outputs become the hold command (last committed q, zero velocity,
// last torque, last ee position) and `rejected` is set.  ok == (flags == 0).
//
// No heap allocation after construction: fixed-capacity storage (kMaxDof joints); the caller owns
// the input/output buffers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace hri_core::safety {

inline constexpr int kMaxDof = 16;

enum Flag : uint32_t {
  POSITION = 1u << 0,
  VELOCITY = 1u << 1,
  ACCELERATION = 1u << 2,
  TORQUE = 1u << 3,
  TORQUE_RATE = 1u << 4,
  WORKSPACE = 1u << 5,
  EE_SPEED = 1u << 6,
  NONFINITE = 1u << 7,
  STALE = 1u << 8,
  INVALID_DT = 1u << 9,
  INFEASIBLE = 1u << 10,
};
inline constexpr int kNumFlags = 11;
inline constexpr const char* kFlagNames[kNumFlags] = {
    "position", "velocity", "acceleration", "torque", "torque_rate", "workspace",
    "ee_speed", "nonfinite", "stale", "invalid_dt", "infeasible"};

inline int flag_index(uint32_t f) {
  for (int i = 0; i < kNumFlags; ++i)
    if (f == (1u << i)) return i;
  return -1;
}

struct SafetyLimits {
  int n = 0;
  double q_min[kMaxDof]{}, q_max[kMaxDof]{}, v_max[kMaxDof]{}, a_max[kMaxDof]{};
  double tau_max[kMaxDof]{}, tau_rate_max[kMaxDof]{};
  double workspace_min[3]{}, workspace_max[3]{};
  double ee_speed_max = 0.0;
  double stale_after_s = 0.0;

  /// Empty string when valid, else the reason (finite, ordered, positive rates).
  const char* validate() const {
    if (n < 1 || n > kMaxDof) return "number of joints must be in [1, 16]";
    for (int j = 0; j < n; ++j) {
      if (!(std::isfinite(q_min[j]) && std::isfinite(q_max[j]) && q_min[j] <= q_max[j]))
        return "q_min <= q_max, finite";
      if (!(v_max[j] > 0 && a_max[j] > 0 && tau_max[j] > 0 && tau_rate_max[j] > 0) ||
          !(std::isfinite(v_max[j]) && std::isfinite(a_max[j]) && std::isfinite(tau_max[j]) &&
            std::isfinite(tau_rate_max[j])))
        return "v_max, a_max, tau_max, tau_rate_max > 0, finite";
    }
    for (int k = 0; k < 3; ++k)
      if (!(std::isfinite(workspace_min[k]) && std::isfinite(workspace_max[k]) &&
            workspace_min[k] <= workspace_max[k]))
        return "workspace_min <= workspace_max, finite";
    if (!(ee_speed_max > 0 && std::isfinite(ee_speed_max))) return "ee_speed_max > 0, finite";
    if (!(stale_after_s > 0 && std::isfinite(stale_after_s))) return "stale_after_s > 0, finite";
    return "";
  }
};

/// Non-owning views; every pointer may be null (that quantity is absent).  Rows = horizon.
struct Command {
  int horizon = 1;
  const double* q = nullptr;       // (H, n)
  const double* qd = nullptr;      // (H, n)
  const double* tau = nullptr;     // (H, n)
  const double* ee_pos = nullptr;  // (H, 3)
  const double* ee_vel = nullptr;  // (H, 3)
  double dt_s = 0.0;               // s, between rows and from the history to row 0
  double stamp_s = 0.0;            // s, the command's timestamp
  double now_s = 0.0;              // s, the checker's clock now
};

/// Output buffers (same shapes as the inputs present; null for the absent ones).
struct Output {
  double* q = nullptr;
  double* qd = nullptr;
  double* tau = nullptr;
  double* ee_pos = nullptr;
  double* ee_vel = nullptr;
};

struct Result {
  uint32_t flags = 0;
  bool ok = true;
  bool rejected = false;
  double worst_ratio = 0.0;  // max of |value| / limit over the violations (> 1 is a violation)
  uint32_t worst_flag = 0;
  int worst_step = -1;
  int worst_index = -1;      // joint or Cartesian axis
  uint32_t counts[kNumFlags]{};  // violating entries per check
};

class SafetyChecker {
 public:
  explicit SafetyChecker(const SafetyLimits& lim) : lim_(lim) {}

  const SafetyLimits& limits() const { return lim_; }

  /// Seeds the history (the robot's current state); null pointers leave that part unknown.
  void reset(const double* q = nullptr, const double* qd = nullptr, const double* tau = nullptr,
             const double* ee_pos = nullptr) {
    has_q_ = has_v_ = has_qd_ = has_tau_ = has_ee_ = false;
    if (q) {
      for (int j = 0; j < lim_.n; ++j) q_[j] = q[j];
      has_q_ = all_finite(q_, lim_.n);
      if (qd) {
        for (int j = 0; j < lim_.n; ++j) v_[j] = qd[j];
        has_v_ = all_finite(v_, lim_.n);
      }
    }
    if (qd) {
      for (int j = 0; j < lim_.n; ++j) qd_[j] = qd[j];
      has_qd_ = all_finite(qd_, lim_.n);
    }
    if (tau) {
      for (int j = 0; j < lim_.n; ++j) tau_[j] = tau[j];
      has_tau_ = all_finite(tau_, lim_.n);
    }
    if (ee_pos) {
      for (int k = 0; k < 3; ++k) ee_[k] = ee_pos[k];
      has_ee_ = all_finite(ee_, 3);
    }
  }

  /// Checks a command; writes the clamped (or hold) command to `out`; commits the first
  /// `advance` output rows to the history (advance < 0: all rows; 0: pure check).
  Result check(const Command& c, const Output& out, int advance = -1) {
    Result r;
    const int n = lim_.n, H = c.horizon;
    // ---- rejection: timestamp, dt, non-finite
    const double age = c.now_s - c.stamp_s;
    if (!(std::fabs(age) <= lim_.stale_after_s)) {
      raise(r, STALE, std::isfinite(age) ? std::fabs(age) / lim_.stale_after_s : kInf, -1, -1);
    }
    if (!(c.dt_s > 0.0 && std::isfinite(c.dt_s)) || H < 1) raise(r, INVALID_DT, kInf, -1, -1);
    scan_nonfinite(r, c.q, H * n, n);
    scan_nonfinite(r, c.qd, H * n, n);
    scan_nonfinite(r, c.tau, H * n, n);
    scan_nonfinite(r, c.ee_pos, H * 3, 3);
    scan_nonfinite(r, c.ee_vel, H * 3, 3);
    if (r.flags) {
      r.rejected = true;
      r.ok = false;
      write_hold(c, out, H);
      ++rejected_total_;
      count_total(r);
      return r;
    }
    const double dt = c.dt_s;
    for (int h = 0; h < H; ++h) {
      if (c.q) step_q(r, h, c.q + h * n, out.q + h * n, h > 0 ? out.q + (h - 1) * n : nullptr, dt,
                      h > 1 ? out.q + (h - 2) * n : nullptr);
      if (c.qd) step_qd(r, h, c.qd + h * n, out.qd + h * n, h > 0 ? out.qd + (h - 1) * n : nullptr, dt);
      if (c.tau) step_tau(r, h, c.tau + h * n, out.tau + h * n, h > 0 ? out.tau + (h - 1) * n : nullptr, dt);
      if (c.ee_vel) step_ee_vel(r, h, c.ee_vel + 3 * h, out.ee_vel + 3 * h);
      if (c.ee_pos) step_ee_pos(r, h, c.ee_pos + 3 * h, out.ee_pos + 3 * h,
                                h > 0 ? out.ee_pos + 3 * (h - 1) : nullptr, dt, c.ee_vel == nullptr);
    }
    r.ok = (r.flags == 0);
    // ---- commit history
    const int adv = advance < 0 ? H : std::min(advance, H);
    if (adv > 0) {
      const int h = adv - 1;
      if (c.q) {
        for (int j = 0; j < n; ++j) {
          const double qp = h > 0 ? out.q[(h - 1) * n + j] : q_[j];
          const bool have_prev = h > 0 || has_q_;
          v_[j] = have_prev ? (out.q[h * n + j] - qp) / dt : 0.0;
          q_[j] = out.q[h * n + j];
        }
        has_v_ = h > 0 || has_q_;
        has_q_ = true;
      }
      if (c.qd) {
        for (int j = 0; j < n; ++j) qd_[j] = out.qd[h * n + j];
        has_qd_ = true;
      }
      if (c.tau) {
        for (int j = 0; j < n; ++j) tau_[j] = out.tau[h * n + j];
        has_tau_ = true;
      }
      if (c.ee_pos) {
        for (int k = 0; k < 3; ++k) ee_[k] = out.ee_pos[3 * h + k];
        has_ee_ = true;
      }
    }
    count_total(r);
    return r;
  }

  /// Number of check() calls that raised each flag since construction.
  const uint64_t* totals() const { return totals_; }
  uint64_t rejected_total() const { return rejected_total_; }
  uint64_t checks_total() const { return checks_total_; }
  bool has_history() const { return has_q_; }
  const double* last_q() const { return q_; }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();

  static bool all_finite(const double* x, int m) {
    for (int i = 0; i < m; ++i)
      if (!std::isfinite(x[i])) return false;
    return true;
  }

  static void raise(Result& r, uint32_t f, double ratio, int step, int index) {
    r.flags |= f;
    const int i = flag_index(f);
    if (i >= 0) ++r.counts[i];
    if (ratio > r.worst_ratio || r.worst_flag == 0) {
      r.worst_ratio = ratio;
      r.worst_flag = f;
      r.worst_step = step;
      r.worst_index = index;
    }
  }

  void count_total(const Result& r) {
    ++checks_total_;
    for (int i = 0; i < kNumFlags; ++i)
      if (r.flags & (1u << i)) ++totals_[i];
  }

  void scan_nonfinite(Result& r, const double* x, int m, int width) {
    if (!x) return;
    for (int i = 0; i < m; ++i)
      if (!std::isfinite(x[i])) raise(r, NONFINITE, kInf, i / width, i % width);
  }

  // Clamp x into [lo, hi] ∩ current (a, b) if they intersect, else flag INFEASIBLE and keep (a, b).
  static void narrow(double& a, double& b, double lo, double hi, Result& r, int h, int j) {
    const double na = std::max(a, lo), nb = std::min(b, hi);
    if (na <= nb) {
      a = na;
      b = nb;
    } else {
      raise(r, INFEASIBLE, kInf, h, j);
    }
  }

  void write_hold(const Command& c, const Output& out, int H) const {
    const int n = lim_.n;
    for (int h = 0; h < H; ++h) {
      for (int j = 0; j < n; ++j) {
        if (out.q) out.q[h * n + j] = has_q_ ? q_[j] : std::clamp(0.0, lim_.q_min[j], lim_.q_max[j]);
        if (out.qd) out.qd[h * n + j] = 0.0;
        if (out.tau) out.tau[h * n + j] = has_tau_ ? std::clamp(tau_[j], -lim_.tau_max[j], lim_.tau_max[j]) : 0.0;
      }
      for (int k = 0; k < 3; ++k) {
        if (out.ee_pos)
          out.ee_pos[3 * h + k] = std::clamp(has_ee_ ? ee_[k] : 0.5 * (lim_.workspace_min[k] + lim_.workspace_max[k]),
                                             lim_.workspace_min[k], lim_.workspace_max[k]);
        if (out.ee_vel) out.ee_vel[3 * h + k] = 0.0;
      }
    }
    (void)c;
  }

  void step_q(Result& r, int h, const double* in, double* o, const double* prev, double dt,
              const double* prev2) {
    const int n = lim_.n;
    for (int j = 0; j < n; ++j) {
      const double x = in[j];
      double a = lim_.q_min[j], b = lim_.q_max[j];
      if (x < a || x > b) {
        const double half = 0.5 * (b - a), mid = 0.5 * (a + b);
        raise(r, POSITION, half > 0 ? 1.0 + (std::fabs(x - mid) - half) / std::max(half, 1e-300) : kInf, h, j);
      }
      // velocity interval from the previous step
      bool have_p = false, have_v = false;
      double qp = 0, vp = 0;
      if (prev) {
        qp = prev[j];
        have_p = true;
        if (prev2) {
          vp = (prev[j] - prev2[j]) / dt;
          have_v = true;
        } else if (has_q_) {
          vp = (prev[j] - q_[j]) / dt;
          have_v = true;
        }
      } else if (has_q_) {
        qp = q_[j];
        have_p = true;
        if (has_v_) {
          vp = v_[j];
          have_v = true;
        }
      }
      if (have_p) {
        const double lo = qp - lim_.v_max[j] * dt, hi = qp + lim_.v_max[j] * dt;
        if (x < lo || x > hi) raise(r, VELOCITY, std::fabs(x - qp) / (lim_.v_max[j] * dt), h, j);
        narrow(a, b, lo, hi, r, h, j);
        if (have_v) {
          const double ctr = qp + vp * dt, da = lim_.a_max[j] * dt * dt;
          const double lo2 = ctr - da, hi2 = ctr + da;
          if (x < lo2 || x > hi2) raise(r, ACCELERATION, std::fabs(x - ctr) / da, h, j);
          narrow(a, b, lo2, hi2, r, h, j);
        }
      }
      o[j] = std::clamp(x, a, b);
    }
  }

  void step_qd(Result& r, int h, const double* in, double* o, const double* prev, double dt) {
    const int n = lim_.n;
    for (int j = 0; j < n; ++j) {
      const double x = in[j];
      double a = -lim_.v_max[j], b = lim_.v_max[j];
      if (x < a || x > b) raise(r, VELOCITY, std::fabs(x) / lim_.v_max[j], h, j);
      const bool have = prev != nullptr || has_qd_;
      if (have) {
        const double p = prev ? prev[j] : qd_[j];
        const double lo = p - lim_.a_max[j] * dt, hi = p + lim_.a_max[j] * dt;
        if (x < lo || x > hi) raise(r, ACCELERATION, std::fabs(x - p) / (lim_.a_max[j] * dt), h, j);
        narrow(a, b, lo, hi, r, h, j);
      }
      o[j] = std::clamp(x, a, b);
    }
  }

  void step_tau(Result& r, int h, const double* in, double* o, const double* prev, double dt) {
    const int n = lim_.n;
    for (int j = 0; j < n; ++j) {
      const double x = in[j];
      double a = -lim_.tau_max[j], b = lim_.tau_max[j];
      if (x < a || x > b) raise(r, TORQUE, std::fabs(x) / lim_.tau_max[j], h, j);
      const bool have = prev != nullptr || has_tau_;
      if (have) {
        const double p = prev ? prev[j] : tau_[j];
        const double lo = p - lim_.tau_rate_max[j] * dt, hi = p + lim_.tau_rate_max[j] * dt;
        if (x < lo || x > hi) raise(r, TORQUE_RATE, std::fabs(x - p) / (lim_.tau_rate_max[j] * dt), h, j);
        narrow(a, b, lo, hi, r, h, j);
      }
      o[j] = std::clamp(x, a, b);
    }
  }

  void step_ee_vel(Result& r, int h, const double* in, double* o) {
    const double s = std::sqrt(in[0] * in[0] + in[1] * in[1] + in[2] * in[2]);
    double k = 1.0;
    if (s > lim_.ee_speed_max) {
      raise(r, EE_SPEED, s / lim_.ee_speed_max, h, -1);
      k = lim_.ee_speed_max / s;
      // rounding guard: the scaled norm must not exceed the limit
      while (k > 0 && std::sqrt((k * in[0]) * (k * in[0]) + (k * in[1]) * (k * in[1]) + (k * in[2]) * (k * in[2])) >
                          lim_.ee_speed_max)
        k = std::nextafter(k, 0.0);
    }
    for (int i = 0; i < 3; ++i) o[i] = k * in[i];
  }

  void step_ee_pos(Result& r, int h, const double* in, double* o, const double* prev, double dt,
                   bool check_speed) {
    for (int k = 0; k < 3; ++k) {
      const double a = lim_.workspace_min[k], b = lim_.workspace_max[k];
      if (in[k] < a || in[k] > b) {
        const double half = 0.5 * (b - a), mid = 0.5 * (a + b);
        raise(r, WORKSPACE, half > 0 ? 1.0 + (std::fabs(in[k] - mid) - half) / half : kInf, h, k);
      }
      o[k] = std::clamp(in[k], a, b);
    }
    if (!check_speed) return;
    const double* p = prev ? prev : (has_ee_ ? ee_ : nullptr);
    if (!p) return;
    double d[3], s2 = 0;
    for (int k = 0; k < 3; ++k) {
      d[k] = o[k] - p[k];
      s2 += d[k] * d[k];
    }
    const double step_max = lim_.ee_speed_max * dt;
    const double s = std::sqrt(s2);
    if (s > step_max) {
      raise(r, EE_SPEED, s / step_max, h, -1);
      // move from p towards o by step_max (p is inside the box, so is the result up to rounding)
      double k = step_max / s;
      for (;;) {
        double s2b = 0;
        for (int i = 0; i < 3; ++i) {
          o[i] = std::clamp(p[i] + k * d[i], lim_.workspace_min[i], lim_.workspace_max[i]);
          const double e = o[i] - p[i];
          s2b += e * e;
        }
        if (std::sqrt(s2b) <= step_max || k <= 0) break;
        k = std::nextafter(k, 0.0) * (1.0 - 1e-15);
      }
    }
  }

  SafetyLimits lim_;
  double q_[kMaxDof]{}, v_[kMaxDof]{}, qd_[kMaxDof]{}, tau_[kMaxDof]{}, ee_[3]{};
  bool has_q_ = false, has_v_ = false, has_qd_ = false, has_tau_ = false, has_ee_ = false;
  uint64_t totals_[kNumFlags]{};
  uint64_t rejected_total_ = 0, checks_total_ = 0;
};

}  // namespace hri_core::safety
