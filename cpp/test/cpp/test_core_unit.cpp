// C++ unit tests of the hri_core headers (no framework; built and run by
// cpp/test/test_core_cpp_unit.py, or by hand:
//   g++ -std=c++17 -O2 -Icpp/include -I<eigen3> cpp/test/cpp/test_core_unit.cpp -o t && ./t [fuzz_count]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <random>

#include "hri_core/kinematics.hpp"
#include "hri_core/safety.hpp"
#include "hri_core/se3.hpp"

#include "alloc_counter.hpp"

static int g_fail = 0, g_checks = 0;
#define CHECK(cond)                                                          \
  do {                                                                       \
    ++g_checks;                                                              \
    if (!(cond)) {                                                           \
      if (g_fail < 20) std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ++g_fail;                                                              \
    }                                                                        \
  } while (0)

using namespace hri_core;
namespace S = hri_core::se3;
namespace Sf = hri_core::safety;

static double max_abs(const Eigen::MatrixXd& m) { return m.cwiseAbs().maxCoeff(); }

// ------------------------------------------------------------------ se3
static void test_se3() {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  const double angles[] = {0.0, 1e-12, 1e-6, 0.3, 1.0, 2.5, M_PI - 1e-6, M_PI - 1e-9};
  for (double th : angles) {
    for (int rep = 0; rep < 50; ++rep) {
      S::Vec3 a(U(rng), U(rng), U(rng));
      a.normalize();
      S::Vec6 xi;
      xi << th * a, 3.0 * S::Vec3(U(rng), U(rng), U(rng));
      const S::Mat4 T = S::exp(xi);
      CHECK(max_abs(S::log(T) - xi) < 1e-12 * std::max(1.0, xi.norm()));
      CHECK(max_abs(S::exp(S::log(T)) - T) < 1e-13);
      // J_l J_l^-1 = I; J_r(xi) = J_l(-xi)
      CHECK(max_abs(S::left_jacobian(xi) * S::left_jacobian_inv(xi) - S::Mat6::Identity()) < 1e-11);
      CHECK(max_abs(S::right_jacobian(xi) - S::left_jacobian(-xi)) == 0.0);
      // Ad(T) = J_l J_r^-1 (Ad(exp xi) = exp(ad xi))
      CHECK(max_abs(S::adjoint(T) - S::left_jacobian(xi) * S::right_jacobian_inv(xi)) < 1e-10);
      // quaternion round trip
      const S::Mat3 R = T.topLeftCorner<3, 3>();
      CHECK(max_abs(S::quat_to_rot(S::rot_to_quat(R)) - R) < 1e-14);
    }
  }
}

// ------------------------------------------------------------------ safety
static Sf::SafetyLimits fr3_like() {
  Sf::SafetyLimits L;
  L.n = 7;
  const double qmin[7] = {-2.74, -1.78, -2.90, -3.04, -2.81, 0.54, -3.02};
  const double qmax[7] = {2.74, 1.78, 2.90, -0.15, 2.81, 4.52, 3.02};
  const double vmax[7] = {2.62, 2.62, 2.62, 2.62, 5.25, 4.18, 5.25};
  const double tmax[7] = {87, 87, 87, 87, 12, 12, 12};
  for (int j = 0; j < 7; ++j) {
    L.q_min[j] = qmin[j];
    L.q_max[j] = qmax[j];
    L.v_max[j] = vmax[j];
    L.a_max[j] = 10.0;
    L.tau_max[j] = tmax[j];
    L.tau_rate_max[j] = 1000.0;
  }
  const double wmin[3] = {0.15, -0.6, 0.05}, wmax[3] = {0.85, 0.6, 1.1};
  for (int k = 0; k < 3; ++k) {
    L.workspace_min[k] = wmin[k];
    L.workspace_max[k] = wmax[k];
  }
  L.ee_speed_max = 0.25;
  L.stale_after_s = 0.5;
  return L;
}

static void test_safety_basic() {
  const Sf::SafetyLimits L = fr3_like();
  CHECK(std::string(L.validate()).empty());
  Sf::SafetyChecker c(L);
  double q0[7] = {0, 0, 0, -1.5, 0, 1.5, 0};
  c.reset(q0);
  double q[7], qo[7];
  for (int j = 0; j < 7; ++j) q[j] = q0[j] + 0.5 * L.v_max[j] * 1e-3;  // within all limits
  Sf::Command cmd;
  cmd.q = q;
  cmd.dt_s = 1e-3;
  cmd.now_s = 10.0;
  cmd.stamp_s = 9.99;
  Sf::Output out;
  out.q = qo;
  Sf::Result r = c.check(cmd, out, 0);
  CHECK(r.ok && r.flags == 0);
  for (int j = 0; j < 7; ++j) CHECK(qo[j] == q[j]);
  // stale
  cmd.stamp_s = 9.0;
  r = c.check(cmd, out, 0);
  CHECK(!r.ok && r.rejected && (r.flags & Sf::STALE));
  for (int j = 0; j < 7; ++j) CHECK(qo[j] == q0[j]);  // hold
  // NaN
  cmd.stamp_s = 10.0;
  q[3] = NAN;
  r = c.check(cmd, out, 0);
  CHECK(!r.ok && r.rejected && (r.flags & Sf::NONFINITE) && r.worst_index == 3);
  // position jump -> clamped to the velocity interval, flagged
  q[3] = 0.5;
  r = c.check(cmd, out, 0);
  CHECK(!r.ok && !r.rejected && (r.flags & Sf::POSITION) && (r.flags & Sf::VELOCITY));
  CHECK(qo[3] <= L.q_max[3] && qo[3] == q0[3] + L.v_max[3] * 1e-3);
}

struct Hist {
  bool has_q = false, has_v = false, has_qd = false, has_tau = false, has_ee = false;
  double q[Sf::kMaxDof], v[Sf::kMaxDof], qd[Sf::kMaxDof], tau[Sf::kMaxDof], ee[3];
};

// Fuzz: random commands incl. NaN/Inf/huge/exactly-at-limit/rate jumps; returns the number of
// out-of-limit outputs (must be 0) and counts "ok" results on out-of-limit inputs (must be 0).
static void test_safety_fuzz(long count) {
  const Sf::SafetyLimits L = fr3_like();
  Sf::SafetyChecker c(L);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const int n = L.n, HMAX = 4;
  double q[HMAX * Sf::kMaxDof], qd[HMAX * Sf::kMaxDof], tau[HMAX * Sf::kMaxDof], ee[HMAX * 3], ev[HMAX * 3];
  double oq[HMAX * Sf::kMaxDof], oqd[HMAX * Sf::kMaxDof], otau[HMAX * Sf::kMaxDof], oee[HMAX * 3], oev[HMAX * 3];
  Hist hs;
  long bad_out = 0, ok_but_changed = 0, nonfinite_not_rejected = 0, oks = 0;
  const long allocs_before = g_allocs;
  double now = 0.0;
  auto special = [&](double lo, double hi, double prev, double rate) -> double {
    const double u = U(rng);
    if (u < 0.40) return lo + (hi - lo) * U(rng);
    if (u < 0.50) return lo;
    if (u < 0.60) return hi;
    if (u < 0.70) return prev + (U(rng) < 0.5 ? -rate : rate);          // exactly at the rate limit
    if (u < 0.80) return prev + rate * (2.0 * U(rng) - 1.0) * 0.999;     // within the rate limit
    if (u < 0.85) return (U(rng) < 0.5 ? -1.0 : 1.0) * 1e300;            // huge
    if (u < 0.88) return lo - (hi - lo) * U(rng);
    if (u < 0.91) return hi + (hi - lo) * U(rng);
    if (u < 0.93) return NAN;
    if (u < 0.95) return (U(rng) < 0.5 ? -1.0 : 1.0) * INFINITY;
    return prev;
  };
  for (long it = 0; it < count; ++it) {
    if (it % 100000 == 0) {  // re-seed from time to time (some resets without history)
      if (U(rng) < 0.5) {
        double q0[Sf::kMaxDof];
        for (int j = 0; j < n; ++j) q0[j] = L.q_min[j] + (L.q_max[j] - L.q_min[j]) * U(rng);
        c.reset(q0);
        hs = Hist{};
        for (int j = 0; j < n; ++j) hs.q[j] = q0[j];
        hs.has_q = true;
      } else {
        c.reset();
        hs = Hist{};
      }
    }
    const int H = 1 + static_cast<int>(U(rng) * HMAX) % HMAX;
    const double dt = U(rng) < 0.002 ? (U(rng) < 0.5 ? 0.0 : NAN) : (U(rng) < 0.5 ? 1e-3 : 0.04);
    now += 1e-3;
    const double stamp = U(rng) < 0.01 ? now - 1.0 : now - 0.01;
    const bool use_q = U(rng) < 0.8, use_qd = U(rng) < 0.4, use_tau = U(rng) < 0.4, use_ee = U(rng) < 0.4,
               use_ev = U(rng) < 0.3;
    const bool clean = U(rng) < 0.5;  // half the commands without specials (mostly valid ones)
    for (int h = 0; h < H; ++h) {
      for (int j = 0; j < n; ++j) {
        const double pq = hs.has_q ? hs.q[j] : 0.5 * (L.q_min[j] + L.q_max[j]);
        const double d = std::isfinite(dt) ? dt : 1e-3;
        if (clean) {
          q[h * n + j] = pq + L.v_max[j] * d * (2 * U(rng) - 1) * 0.01;
          qd[h * n + j] = (hs.has_qd ? hs.qd[j] : 0.0) + L.a_max[j] * d * (2 * U(rng) - 1) * 0.5;
          tau[h * n + j] = (hs.has_tau ? hs.tau[j] : 0.0) + L.tau_rate_max[j] * d * (2 * U(rng) - 1) * 0.5;
        } else {
          q[h * n + j] = special(L.q_min[j], L.q_max[j], pq, L.v_max[j] * d);
          qd[h * n + j] = special(-L.v_max[j], L.v_max[j], hs.has_qd ? hs.qd[j] : 0.0, L.a_max[j] * d);
          tau[h * n + j] = special(-L.tau_max[j], L.tau_max[j], hs.has_tau ? hs.tau[j] : 0.0, L.tau_rate_max[j] * d);
        }
      }
      for (int k = 0; k < 3; ++k) {
        const double pe = hs.has_ee ? hs.ee[k] : 0.5 * (L.workspace_min[k] + L.workspace_max[k]);
        ee[3 * h + k] = clean ? pe + 1e-5 * (2 * U(rng) - 1)
                              : special(L.workspace_min[k], L.workspace_max[k], pe, 0.1 * L.ee_speed_max);
        ev[3 * h + k] = clean ? 0.1 * (2 * U(rng) - 1) : special(-0.3, 0.3, 0.0, 0.1);
      }
    }
    Sf::Command cmd;
    cmd.horizon = H;
    cmd.dt_s = dt;
    cmd.now_s = now;
    cmd.stamp_s = stamp;
    Sf::Output out;
    if (use_q) { cmd.q = q; out.q = oq; }
    if (use_qd) { cmd.qd = qd; out.qd = oqd; }
    if (use_tau) { cmd.tau = tau; out.tau = otau; }
    if (use_ee) { cmd.ee_pos = ee; out.ee_pos = oee; }
    if (use_ev) { cmd.ee_vel = ev; out.ee_vel = oev; }
    if (!(use_q || use_qd || use_tau || use_ee || use_ev)) { cmd.q = q; out.q = oq; }
    const Sf::Result r = c.check(cmd, out);
    oks += r.ok;
    // ---- invariants on every output
    bool any_nonfinite = false;
    auto scan = [&](const double* x, int m) {
      if (x) for (int i = 0; i < m; ++i) any_nonfinite |= !std::isfinite(x[i]);
    };
    scan(cmd.q, H * n); scan(cmd.qd, H * n); scan(cmd.tau, H * n); scan(cmd.ee_pos, H * 3); scan(cmd.ee_vel, H * 3);
    if (any_nonfinite && !(r.rejected && !r.ok)) ++nonfinite_not_rejected;
    const bool infeasible = r.flags & Sf::INFEASIBLE;
    for (int h = 0; h < H; ++h) {
      for (int j = 0; j < n; ++j) {
        if (out.q) {
          const double x = oq[h * n + j];
          if (!(x >= L.q_min[j] && x <= L.q_max[j])) ++bad_out;
          if (!r.rejected && !infeasible) {
            const bool hp = h > 0 || hs.has_q;
            const double qp = h > 0 ? oq[(h - 1) * n + j] : hs.q[j];
            if (hp) {
              if (!(x >= qp - L.v_max[j] * dt && x <= qp + L.v_max[j] * dt)) ++bad_out;
              bool hv = false;
              double vp = 0;
              if (h > 1) { vp = (oq[(h - 1) * n + j] - oq[(h - 2) * n + j]) / dt; hv = true; }
              else if (h == 1 && hs.has_q) { vp = (oq[j] - hs.q[j]) / dt; hv = true; }
              else if (h == 0 && hs.has_v) { vp = hs.v[j]; hv = true; }
              if (hv) {
                const double ctr = qp + vp * dt, da = L.a_max[j] * dt * dt;
                if (!(x >= ctr - da && x <= ctr + da)) ++bad_out;
              }
            }
          }
        }
        if (out.qd && !(std::fabs(oqd[h * n + j]) <= L.v_max[j])) ++bad_out;
        if (out.tau && !(std::fabs(otau[h * n + j]) <= L.tau_max[j])) ++bad_out;
        if (out.tau && !r.rejected && !infeasible && (h > 0 || hs.has_tau)) {
          const double p = h > 0 ? otau[(h - 1) * n + j] : hs.tau[j];
          const double x = otau[h * n + j];
          if (!(x >= p - L.tau_rate_max[j] * dt && x <= p + L.tau_rate_max[j] * dt)) ++bad_out;
        }
      }
      if (out.ee_pos)
        for (int k = 0; k < 3; ++k)
          if (!(oee[3 * h + k] >= L.workspace_min[k] && oee[3 * h + k] <= L.workspace_max[k])) ++bad_out;
      if (out.ee_vel) {
        const double s = std::sqrt(oev[3 * h] * oev[3 * h] + oev[3 * h + 1] * oev[3 * h + 1] + oev[3 * h + 2] * oev[3 * h + 2]);
        if (!(s <= L.ee_speed_max)) ++bad_out;
      }
      if (out.ee_pos && !out.ee_vel && !r.rejected && (h > 0 || hs.has_ee)) {
        const double* p = h > 0 ? oee + 3 * (h - 1) : hs.ee;
        double s2 = 0;
        for (int k = 0; k < 3; ++k) s2 += (oee[3 * h + k] - p[k]) * (oee[3 * h + k] - p[k]);
        if (!(std::sqrt(s2) <= L.ee_speed_max * dt)) ++bad_out;
      }
    }
    if (r.ok) {  // ok => nothing changed
      auto same = [&](const double* a, const double* b, int m) {
        if (a) for (int i = 0; i < m; ++i) ok_but_changed += a[i] != b[i];
      };
      same(cmd.q, oq, H * n); same(cmd.qd, oqd, H * n); same(cmd.tau, otau, H * n);
      same(cmd.ee_pos, oee, H * 3); same(cmd.ee_vel, oev, H * 3);
    }
    // ---- mirror the history
    if (!r.rejected) {
      const int h = H - 1;
      if (cmd.q) {
        for (int j = 0; j < n; ++j) {
          const bool hp = h > 0 || hs.has_q;
          const double qp = h > 0 ? oq[(h - 1) * n + j] : hs.q[j];
          hs.v[j] = hp ? (oq[h * n + j] - qp) / dt : 0.0;
          hs.q[j] = oq[h * n + j];
        }
        hs.has_v = h > 0 || hs.has_q;
        hs.has_q = true;
      }
      if (cmd.qd) { for (int j = 0; j < n; ++j) hs.qd[j] = oqd[h * n + j]; hs.has_qd = true; }
      if (cmd.tau) { for (int j = 0; j < n; ++j) hs.tau[j] = otau[h * n + j]; hs.has_tau = true; }
      if (cmd.ee_pos) { for (int k = 0; k < 3; ++k) hs.ee[k] = oee[3 * h + k]; hs.has_ee = true; }
    }
  }
  const long allocs = g_allocs - allocs_before;
  std::printf("fuzz: %ld commands, %ld ok, %ld out-of-limit outputs, %ld ok-but-changed, "
              "%ld non-finite-not-rejected, %ld heap allocations\n",
              count, oks, bad_out, ok_but_changed, nonfinite_not_rejected, allocs);
  CHECK(bad_out == 0);
  CHECK(ok_but_changed == 0);
  CHECK(nonfinite_not_rejected == 0);
  CHECK(allocs == 0);
  CHECK(oks > count / 10);  // the fuzz does exercise the accept path
  CHECK(c.checks_total() == static_cast<uint64_t>(count));
}

// ------------------------------------------------------------------ kinematics
static void test_kinematics() {
  // planar 3R arm along x: joints about z at x = 0, 1, 2; ee at x = 3
  kinematics::PoeModel m;
  Eigen::Matrix<double, 6, Eigen::Dynamic> S(6, 3);
  for (int i = 0; i < 3; ++i) S.col(i) << 0, 0, 1, 0, -static_cast<double>(i), 0;
  S::Mat4 M = S::Mat4::Identity();
  M(0, 3) = 3.0;
  m = kinematics::PoeModel(S, M);
  Eigen::VectorXd q(3);
  q << 0.3, -0.2, 0.5;
  const S::Mat4 T = m.fk(q);
  const double x = std::cos(0.3) + std::cos(0.1) + std::cos(0.6), y = std::sin(0.3) + std::sin(0.1) + std::sin(0.6);
  CHECK(std::fabs(T(0, 3) - x) < 1e-14 && std::fabs(T(1, 3) - y) < 1e-14);
  // Jb = Ad(T^-1) Js
  const auto Js = m.jacobian_space(q);
  const auto Jb = m.jacobian_body(q);
  CHECK(max_abs(Jb - S::adjoint(S::inverse(T)) * Js) < 1e-14);
}

int main(int argc, char** argv) {
  const long fuzz = argc > 1 ? std::atol(argv[1]) : 1000000;
  test_se3();
  test_safety_basic();
  test_safety_fuzz(fuzz);
  test_kinematics();
  std::printf("%d checks, %d failures\n", g_checks, g_fail);
  return g_fail == 0 ? 0 : 1;
}
