// C++-side timings of hri_core (compiled and run by bench/core/run.py; prints "name ns_per_op").
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "hri_core/kinematics.hpp"
#include "hri_core/safety.hpp"
#include "hri_core/se3.hpp"

namespace S = hri_core::se3;
namespace Sf = hri_core::safety;
using clk = std::chrono::steady_clock;

template <class F>
double best_ns(F&& f, long iters, int reps = 5) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = clk::now();
    f(iters);
    const double ns = std::chrono::duration<double, std::nano>(clk::now() - t0).count() / iters;
    best = std::min(best, ns);
  }
  return best;
}

volatile double sink;

int main() {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> U(-1, 1);
  const int N = 4096;
  std::vector<S::Vec6> xi(N);
  std::vector<S::Mat4> T(N);
  for (int i = 0; i < N; ++i) {
    xi[i] << U(rng), U(rng), U(rng), U(rng), U(rng), U(rng);
    T[i] = S::exp(xi[i]);
  }
  double acc = 0;
  std::printf("se3_exp %.2f\n", best_ns([&](long n) { for (long i = 0; i < n; ++i) acc += S::exp(xi[i % N])(0, 3); }, 2000000));
  std::printf("se3_log %.2f\n", best_ns([&](long n) { for (long i = 0; i < n; ++i) acc += S::log(T[i % N])[0]; }, 2000000));
  // streaming batch of 1e6 (the Python batch's memory traffic: 48 B in + 128 B out per exp),
  // row-major buffers as numpy lays them out, output pre-allocated and pre-touched.
  {
    const long NB = 1000000;
    using RowMat4 = Eigen::Matrix<double, 4, 4, Eigen::RowMajor>;
    std::vector<double> X(6 * NB), Tb(16 * NB), Xo(6 * NB);
    std::uniform_real_distribution<double> ang(0.0, 3.0);
    for (long i = 0; i < NB; ++i) {
      S::Vec6 x;
      x << U(rng), U(rng), U(rng), U(rng), U(rng), U(rng);
      x.head<3>() *= ang(rng) / x.head<3>().norm();
      Eigen::Map<S::Vec6>{&X[6 * i]} = x;
    }
    std::printf("se3_exp_batch1e6 %.2f\n", best_ns([&](long n) {
      for (long i = 0; i < n; ++i) Eigen::Map<RowMat4>{&Tb[16 * i]} = S::exp(Eigen::Map<const S::Vec6>(&X[6 * i]));
    }, NB, 3));
    std::printf("se3_log_batch1e6 %.2f\n", best_ns([&](long n) {
      for (long i = 0; i < n; ++i) Eigen::Map<S::Vec6>{&Xo[6 * i]} = S::log(Eigen::Map<const RowMat4>(&Tb[16 * i]));
    }, NB, 3));
    acc += Xo[7] + Tb[3];
  }
  std::printf("se3_compose %.2f\n", best_ns([&](long n) { for (long i = 0; i < n; ++i) acc += (T[i % N] * T[(i + 1) % N])(0, 3); }, 2000000));
  std::printf("se3_left_jacobian %.2f\n", best_ns([&](long n) { for (long i = 0; i < n; ++i) acc += S::left_jacobian(xi[i % N])(3, 0); }, 1000000));

  // FR3-like 7-DoF POE (screws of a generic 7R arm)
  hri_core::kinematics::Screws Sc(6, 7);
  for (int i = 0; i < 7; ++i) {
    S::Vec3 w(i % 2 ? 0 : 0, i % 2 ? 1 : 0, i % 2 ? 0 : 1), p(0.088 * (i > 4), 0, 0.333 + 0.1 * i);
    Sc.col(i) << w, -w.cross(p);
  }
  S::Mat4 M = S::Mat4::Identity();
  M(2, 3) = 1.0;
  hri_core::kinematics::PoeModel model(Sc, M);
  hri_core::kinematics::VecN q(7);
  for (int i = 0; i < 7; ++i) q[i] = 0.3 * U(rng);
  S::Mat4 Tq;
  hri_core::kinematics::Jac J;
  std::printf("fk7 %.2f\n", best_ns([&](long n) { for (long i = 0; i < n; ++i) { q[0] += 1e-9; acc += model.fk(q)(0, 3); } }, 500000));
  std::printf("fk7_jacobian_body %.2f\n", best_ns([&](long n) { for (long i = 0; i < n; ++i) { q[0] += 1e-9; model.fk_jacobian_body(q, Tq, J); acc += J(0, 0); } }, 500000));

  // safety check of one 7-DoF command (position + torque), accepted path and clamping path
  Sf::SafetyLimits L;
  L.n = 7;
  for (int j = 0; j < 7; ++j) {
    L.q_min[j] = -2.7; L.q_max[j] = 2.7; L.v_max[j] = 2.6; L.a_max[j] = 10; L.tau_max[j] = 87; L.tau_rate_max[j] = 1000;
  }
  for (int k = 0; k < 3; ++k) { L.workspace_min[k] = -1; L.workspace_max[k] = 1; }
  L.ee_speed_max = 0.25;
  L.stale_after_s = 0.5;
  Sf::SafetyChecker c(L);
  double q0[7] = {0}, qc[7], qo[7], tau[7] = {1, 1, 1, 1, 1, 1, 1}, to[7];
  c.reset(q0, q0, tau);
  Sf::Command cmd;
  cmd.q = qc; cmd.dt_s = 1e-3; cmd.now_s = 1; cmd.stamp_s = 1;
  Sf::Output out;
  out.q = qo;
  for (int j = 0; j < 7; ++j) qc[j] = 1e-6 * j;
  std::printf("safety_q7_ok %.2f\n", best_ns([&](long n) { for (long i = 0; i < n; ++i) acc += c.check(cmd, out, 0).flags; }, 2000000));
  cmd.tau = tau; out.tau = to;
  std::printf("safety_q7_tau7_ok %.2f\n", best_ns([&](long n) { for (long i = 0; i < n; ++i) acc += c.check(cmd, out, 0).flags; }, 2000000));
  for (int j = 0; j < 7; ++j) qc[j] = 5.0;
  std::printf("safety_q7_tau7_clamp %.2f\n", best_ns([&](long n) { for (long i = 0; i < n; ++i) acc += c.check(cmd, out, 0).flags; }, 2000000));
  sink = acc;
  return 0;
}
