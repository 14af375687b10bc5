// C++ unit test of hri_core::interaction::InteractionTick (owner: hri_interaction):
// every law (lie, cartesian, gic, lie_osd) x filter (none, PO/PC, TDPC, wave, jitter) x mode runs
// 2000 gated ticks with the SafetyChecker and the torque clip,
// with ZERO heap allocations inside the tick loop (counted by a replaced operator new), finite
// torques, a NaN state held (HOLD | STATE_INVALID, last torque), and a workspace violation that
// freezes (SAFETY_FREEZE, admittance velocity zeroed), the PO/PC and TDPC alpha capped at
// max_damping (saturations counted, deficit carried).  Prints "N failures, M heap allocations".
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>

#include "hri_core/interaction.hpp"

#include "alloc_counter.hpp"
#include "check.hpp"

namespace I = hri_core::interaction;
namespace S = hri_core::safety;
using namespace hri_core::se3;


static S::SafetyLimits limits(int n, double ws_z_max) {
  S::SafetyLimits L;
  L.n = n;
  for (int j = 0; j < n; ++j) {
    L.q_min[j] = -3;
    L.q_max[j] = 3;
    L.v_max[j] = 2;
    L.a_max[j] = 10;
    L.tau_max[j] = 80;
    L.tau_rate_max[j] = 1000;
  }
  for (int k = 0; k < 3; ++k) {
    L.workspace_min[k] = -1;
    L.workspace_max[k] = 1;
  }
  L.workspace_max[2] = ws_z_max;
  L.ee_speed_max = 1.0;
  L.stale_after_s = 0.1;
  return L;
}

static I::TickParams params(int law, int filter) {
  I::TickParams p;
  p.n = 7;
  p.law = law;
  p.filter = filter;
  p.K = Vec6(60, 60, 60, 1200, 1200, 1200).asDiagonal();
  p.D = Vec6(4, 4, 4, 100, 100, 100).asDiagonal();
  p.M_adm = Vec6(0.5, 0.5, 0.5, 4, 4, 4).asDiagonal();
  p.D_adm = Vec6(6, 6, 6, 160, 160, 160).asDiagonal();
  p.K_adm = Vec6(50, 50, 50, 2500, 2500, 2500).asDiagonal();
  p.compliant_axes << 0, 0, 0, 1, 1, 1;
  p.wave_damping << 2, 2, 2, 60, 60, 60;
  p.energy_floor_j = 1e-4;
  p.has_torque_max = true;
  p.torque_max_nm = I::VecN::Constant(7, 50.0);
  return p;
}

int main() {
  I::VecN q = I::VecN::Constant(7, 0.1), dq = I::VecN::Constant(7, 0.01);
  I::VecN g = I::VecN::LinSpaced(7, -3, 3), c = I::VecN::Constant(7, 0.01);
  I::MatJ Jb(6, 7);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 7; ++j) Jb(i, j) = (i == j ? 1.0 : 0.0) + 0.3 * std::sin(1.0 + 1.7 * i * i + 0.9 * j + 0.31 * i * j * j);
  Vec6 xi0;
  xi0 << 0.1, -0.2, 0.3, 0.3, 0.1, 0.4;
  const Mat4 T = exp(xi0);
  Vec6 Vb = Vec6::Constant(0.01);
  Vec6 F;
  F << 0.2, -0.1, 0.05, 3.0, -2.0, 5.0;
  I::MatN Mq = I::MatN::Identity(7, 7) * 0.8;
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 7; ++j) Mq(i, j) += 0.05 * std::cos(0.3 * (i + 1) * (j + 1));
  Mq = (0.5 * (Mq + Mq.transpose())).eval();
  const double dt = 1e-3;
  long allocs_in_ticks = 0, ticks = 0;
  for (int law = 0; law < I::kNumLaws; ++law) {
    for (int filter = 0; filter <= I::FILTER_JITTER; ++filter) {
      for (int mode = 0; mode < 3; ++mode) {
        S::SafetyChecker chk(limits(7, 1.0));
        Mat4 Td = T;
        Td(0, 3) += 0.003;
        I::InteractionTick tick(params(law, filter), Td, &chk);
        tick.set_mode(mode, 0.1);
        tick.set_wrench(F, true);
        Mat4 Tt = Td;
        Tt(1, 3) += 0.01;
        tick.set_target(Tt);
        tick.set_gains(Mat6(Vec6(90, 90, 90, 2000, 2000, 2000).asDiagonal()),
                       Mat6(Vec6(5, 5, 5, 150, 150, 150).asDiagonal()), 0.2);
        tick.set_link_statistics(0.137, 0.07876);
        I::TickInput in{&q, &dq, &T, &Vb, &Jb, &g, &c, &Mq};
        I::TickOutput out;
        out.tau = I::VecN::Zero(7);
        const long a0 = g_allocs;
        bool finite = true;
        for (int k = 0; k < 2000; ++k) {
          tick.tick(in, dt, out);
          finite = finite && out.tau.allFinite() && out.tau.size() == 7 && !(out.flags & I::STATE_INVALID);
        }
        allocs_in_ticks += g_allocs - a0;
        ticks += 2000;
        CHECK(finite);
        CHECK(tick.time_s() > 1.99 && tick.time_s() < 2.01);
        if (mode != 0) CHECK(!tick.lam().isZero(0.0));
        // a NaN state holds the last torque
        const I::VecN last = tick.last_tau();
        I::VecN qn = q;
        qn(2) = std::numeric_limits<double>::quiet_NaN();
        I::TickInput bad{&qn, &dq, &T, &Vb, &Jb, &g, &c, &Mq};
        tick.tick(bad, dt, out);
        CHECK(out.flags == (I::HOLD | I::STATE_INVALID));
        CHECK(out.tau == last);
        if (law == I::LAW_LIE_OSD) {  // without M(q) the OSD law holds too
          I::TickInput no_m{&q, &dq, &T, &Vb, &Jb, &g, &c};
          tick.tick(no_m, dt, out);
          CHECK(out.flags == (I::HOLD | I::STATE_INVALID));
          CHECK(out.tau == last);
        }
      }
    }
  }
  // the workspace box below the EE: the gate flags it and freezes (admittance velocity zeroed)
  {
    S::SafetyChecker chk(limits(7, T(2, 3) - 0.01));
    I::InteractionTick tick(params(0, 0), T, &chk);
    tick.set_mode(I::MODE_ADMITTANCE, -1.0);
    tick.set_wrench(F, true);
    I::TickInput in{&q, &dq, &T, &Vb, &Jb, &g, &c};
    I::TickOutput out;
    tick.tick(in, dt, out);
    CHECK(out.safety_flags & S::WORKSPACE);
    CHECK(out.flags & I::SAFETY_FREEZE);
    CHECK(tick.frozen() && tick.lam_dot().isZero(0.0));
    tick.tick(in, dt, out);
    CHECK(out.flags & I::FROZEN);
  }
  // PO/PC and TDPC alpha capped at max_damping: a 1 mJ deficit seeded, then a creep at |ld| = 1e-6
  // (uncapped alpha = 1e12): each tick is one saturation and one violation, the correction is
  // max_damping * ld, and the deficit is carried (shrinks by max_damping |ld|^2 dt per tick).
  for (int filter : {int(I::FILTER_PASSIVITY), int(I::FILTER_TDPC)}) {
    I::TickParams p = params(I::LAW_CARTESIAN, filter);
    p.max_damping = 500.0;
    p.has_torque_max = false;
    I::InteractionTick tick(p, T, nullptr);
    tick.set_mode(I::MODE_ADMITTANCE, -1.0);
    tick.set_wrench(Vec6::Zero(), true);
    Vec6 e_dof = Vec6::Constant(p.energy_floor_j / 6.0);
    e_dof(5) -= 1e-3;
    tick.set_filter_state(p.energy_floor_j - 1e-3, 0.0, p.energy_floor_j - 1e-3, 0, e_dof, 0);
    I::TickInput in{&q, &dq, &T, &Vb, &Jb, &g, &c};
    I::TickOutput out;
    out.tau = I::VecN::Zero(7);
    const long a0 = g_allocs;
    for (int k = 1; k <= 3; ++k) {
      tick.lam().setZero();
      tick.lam_dot().setZero();
      tick.lam_dot()(5) = 1e-6;
      tick.tick(in, dt, out);
      const double removed = k * 500.0 * 1e-12 * dt;
      CHECK(tick.saturations() == k);
      CHECK(tick.violations() == k);
      CHECK(std::abs(tick.dissipated_j() - removed) <= 1e-9 * removed);
      const double deficit = filter == I::FILTER_TDPC ? p.energy_floor_j / 6.0 - tick.energy_dof_j()(5)
                                                      : p.energy_floor_j - tick.energy_j();
      CHECK(std::abs(deficit - (1e-3 - removed)) <= 1e-12);
    }
    allocs_in_ticks += g_allocs - a0;
    // uncapped (infinity): the same tick removes the whole deficit, no saturation
    p.max_damping = std::numeric_limits<double>::infinity();
    I::InteractionTick free_tick(p, T, nullptr);
    free_tick.set_mode(I::MODE_ADMITTANCE, -1.0);
    free_tick.set_wrench(Vec6::Zero(), true);
    free_tick.set_filter_state(p.energy_floor_j - 1e-3, 0.0, p.energy_floor_j - 1e-3, 0, e_dof, 0);
    free_tick.lam_dot()(5) = 1e-6;
    free_tick.tick(in, dt, out);
    CHECK(free_tick.saturations() == 0);
    CHECK(std::abs(free_tick.dissipated_j() - 1e-3) <= 1e-9);
  }
  std::printf("%d failures, %ld heap allocations in %ld gated ticks\n", g_fail, allocs_in_ticks, ticks + 6);
  return (g_fail == 0 && allocs_in_ticks == 0) ? 0 : 1;
}
