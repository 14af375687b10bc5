// C++ unit test of hri_core::rt (the 1 kHz real-time loop): TripleBuffer hand-over, Histogram
// quantiles, RtLoop in lockstep (commands applied at the next tick, frozen hold, wrench validation,
// read failure holds) and on its thread (absolute deadlines, period/cost statistics, SCHED_FIFO
// status), with ZERO heap allocations inside the cycle (lockstep and thread; counted by the
// replaced operator new of alloc_counter.hpp). With -DHRI_WITH_MUJOCO and argv[1] = an MJCF file
// the MuJoCo robot runs the same checks (gravity held, a push displaces the EE along the push).
// wrench_to_body: a force-torque reading in the tool or the base frame as the tick's EE-frame wrench.
// Prints "N failures, M heap allocations".
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "hri_core/rt.hpp"
#ifdef HRI_WITH_MUJOCO
#include "hri_core/mujoco_robot.hpp"
#endif

#include "alloc_counter.hpp"
#include "check.hpp"

namespace I = hri_core::interaction;
namespace R = hri_core::rt;
using namespace hri_core::se3;


/// A 6-DoF "floating EE" with unit inertia: q in R^6 is the twist coordinate of the EE pose
/// (world_T_ee = exp(q)), J_b = I (small motion), no gravity; write(tau) integrates dq += tau dt.
class FakeRobot : public R::RobotInterface {
 public:
  explicit FakeRobot(double dt) : dt_(dt) {
    q_ = I::VecN::Zero(6);
    dq_ = I::VecN::Zero(6);
  }
  int dof() const override { return 6; }
  bool read(R::RobotState& s) override {
    if (fail_reads > 0) {
      --fail_reads;
      return false;
    }
    s.q = q_;
    s.dq = dq_;
    s.world_T_ee = exp(Vec6(q_));
    s.body_jacobian.setIdentity();
    s.body_twist = dq_;
    s.gravity.setZero();
    s.coriolis.setZero();
    s.wrench_body = wrench;
    s.time_s = t_;
    return true;
  }
  void write(const I::VecN& tau) override {
    last_tau = tau;
    dq_ += dt_ * (tau - 2.0 * dq_);  // unit mass, a little joint friction
    q_ += dt_ * dq_;
    t_ += dt_;
    ++writes;
  }
  void set_external_wrench(const Vec3& f, const Vec3& m) override {
    wrench.head<3>() = m;
    wrench.tail<3>() = f;
  }
  Vec6 wrench = Vec6::Zero();
  I::VecN last_tau;
  int fail_reads = 0;
  long writes = 0;

 private:
  double dt_, t_ = 0.0;
  I::VecN q_, dq_;
};

static I::TickParams params(int n) {
  I::TickParams p;
  p.n = n;
  p.K = Vec6(20, 20, 20, 400, 400, 400).asDiagonal();
  p.D = Vec6(2, 2, 2, 40, 40, 40).asDiagonal();
  p.M_adm = Vec6(0.5, 0.5, 0.5, 4, 4, 4).asDiagonal();
  p.D_adm = Vec6(6, 6, 6, 160, 160, 160).asDiagonal();
  p.K_adm = Vec6(50, 50, 50, 2500, 2500, 2500).asDiagonal();
  p.filter = I::FILTER_PASSIVITY;
  return p;
}

static void test_triple_buffer() {
  R::TripleBuffer<int> tb;
  tb.init([](int& v) { v = -1; });
  CHECK(!tb.update());
  tb.back() = 1;
  tb.publish();
  tb.back() = 2;
  tb.publish();  // the reader sees only the newest
  CHECK(tb.update());
  CHECK(tb.front() == 2);
  CHECK(!tb.update());
  CHECK(tb.front() == 2);
  tb.back() = 3;
  tb.publish();
  CHECK(tb.update() && tb.front() == 3);
}

static void test_histogram() {
  R::Histogram h;
  h.reset();
  for (int i = 0; i < 100; ++i) h.add(i * 1000 + 500);  // 0.5 .. 99.5 us
  CHECK(h.count() == 100);
  CHECK(std::abs(h.quantile_us(0.5) - 50.0) < 1e-12);
  CHECK(std::abs(h.quantile_us(0.99) - 99.0) < 1e-12);
  CHECK(std::abs(h.max_us() - 99.5) < 1e-12);
  h.add(-20000000);  // 20 ms late (sign ignored): overflow bin reports the exact max
  CHECK(std::abs(h.quantile_us(1.0) - 20000.0) < 1e-9);
}

static long test_lockstep() {
  const double dt = 1e-3;
  FakeRobot robot(dt);
  R::LoopConfig cfg;
  cfg.rate_hz = 1000.0;
  R::RtLoop loop(params(6), cfg, &robot, nullptr, nullptr);
  R::LoopState s;
  loop.state(s);
  CHECK(s.ticks == 0 && s.n == 6 && s.q.size() == 6);
  // a target 5 cm along x: governed at reference_max_linear_m_s (0.1 m/s), tracked by the impedance
  Mat4 T = Mat4::Identity();
  T(0, 3) = 0.05;
  loop.set_target(T);
  loop.set_mode(I::MODE_ADMITTANCE, 0.1);
  const long a0 = g_allocs;
  loop.step(3000);
  long allocs = g_allocs - a0;
  loop.state(s);
  CHECK(s.ticks == 3000);
  CHECK(std::abs(s.time_s - 3.0) < 1e-9);
  CHECK(std::abs(s.world_T_d(0, 3) - 0.05) < 1e-12);  // reached the target
  CHECK(std::abs(s.world_T_ee(0, 3) - 0.05) < 2e-3);
  CHECK(s.mode == I::MODE_ADMITTANCE);
  CHECK(s.commands_applied >= 1);
  CHECK(s.flag_ticks[2] > 0);  // reference_ramping counted
  CHECK(robot.writes == 3000);
  // the state after the step: the arm write() moved (what the next read sees), the tick's values
  // as state(); state() keeps the reading the tick used
  {
    R::LoopState after, before;
    R::RobotState now;
    now.resize(6);
    loop.set_target(Mat4::Identity());  // moving back: consecutive readings differ
    loop.step(20);
    const long aa = g_allocs;
    CHECK(loop.state_after_step(after));
    allocs += g_allocs - aa;
    loop.state(before);
    robot.read(now);
    CHECK(after.q == now.q && after.dq == now.dq && after.world_T_ee == now.world_T_ee);
    CHECK(after.q != before.q && after.world_T_ee != before.world_T_ee);
    CHECK(after.ticks == before.ticks && after.tau == before.tau && after.world_T_d == before.world_T_d);
    CHECK(after.time_s == before.time_s && after.lam == before.lam);
    CHECK(loop.last_tau() == robot.last_tau && loop.last_tau() == before.tau);
    loop.step(1);  // the next tick reads exactly that state
    loop.state(before);
    CHECK(before.q == after.q && before.world_T_ee == after.world_T_ee);
    // a caller stepping the loop takes a command at once: state() shows it before the next tick
    loop.set_mode(I::MODE_HYBRID, -1.0);
    loop.state(before);
    CHECK(before.mode == I::MODE_ADMITTANCE);
    loop.apply_pending();
    loop.state(before);
    CHECK(before.mode == I::MODE_HYBRID && before.ticks == after.ticks + 1);
    loop.set_mode(I::MODE_ADMITTANCE, 0.1);
    loop.set_target(T);
    loop.step(3000);
    loop.state(s);
  }
  // a push (robot wrench) in admittance mode moves the admittance state
  const Vec6 lam0 = s.lam;
  const long a1 = g_allocs;
  loop.set_push(Vec3(0, 0, 10.0), Vec3::Zero());
  loop.step(200);
  allocs += g_allocs - a1;
  loop.state(s);
  CHECK((s.lam - lam0).norm() > 1e-4);
  // a wrench beyond max_force_n is rejected in the loop: wrench_invalid + hold
  loop.set_push(Vec3(0, 0, 1000.0), Vec3::Zero());
  const long a2 = g_allocs;
  loop.step(2);
  allocs += g_allocs - a2;
  loop.state(s);
  CHECK(s.flags & I::WRENCH_INVALID);
  CHECK(s.flags & I::HOLD);
  loop.set_push(Vec3::Zero(), Vec3::Zero());
  // frozen: reference and admittance hold
  loop.set_frozen(true);
  const long a3 = g_allocs;
  loop.step(5);
  allocs += g_allocs - a3;
  loop.state(s);
  CHECK(s.frozen && (s.flags & I::FROZEN));
  CHECK(s.lam_dot.isZero(0.0));
  loop.set_frozen(false);
  // hold (the stop input): re-anchored at the pose measured on the next tick, admittance zeroed
  loop.set_push(Vec3(0, 0, 10.0), Vec3::Zero());
  loop.step(100);
  loop.set_push(Vec3::Zero(), Vec3::Zero());
  loop.hold(true);
  const long ah = g_allocs;
  loop.step(1);
  allocs += g_allocs - ah;
  loop.state(s);
  CHECK(s.frozen && s.world_T_d == s.world_T_ee && s.lam.isZero(0.0) && s.lam_dot.isZero(0.0));
  const Mat4 held = s.world_T_d;
  loop.set_target(T);  // ignored while held
  loop.step(50);
  loop.state(s);
  CHECK(s.world_T_d == held);
  loop.hold(false);
  loop.set_target(held);  // the node re-sends the held pose: no jump back
  loop.step(50);
  loop.state(s);
  CHECK(!s.frozen && s.world_T_d == held);
  // a failed read holds the last command and is counted
  loop.step(1);
  robot.fail_reads = 3;
  const I::VecN tau_before = robot.last_tau;
  const long a4 = g_allocs;
  loop.step(3);
  allocs += g_allocs - a4;
  loop.state(s);
  CHECK(s.read_failures == 3);
  CHECK(robot.last_tau == tau_before);
  // gains blended over 0.1 s: after 0.2 s they are the new ones
  const Mat6 K2 = Vec6(30, 30, 30, 600, 600, 600).asDiagonal();
  const Mat6 D2 = Vec6(3, 3, 3, 50, 50, 50).asDiagonal();
  loop.set_gains(K2, D2, 0.1);
  const long a5 = g_allocs;
  loop.step(200);
  allocs += g_allocs - a5;
  loop.state(s);
  CHECK((s.K - K2).norm() < 1e-12);
  loop.reset_stats();
  loop.step(1);
  loop.state(s);
  CHECK(s.read_failures == 0 && s.flag_ticks[2] == 0);
  return allocs;
}

static long test_thread() {
  FakeRobot robot(1e-3);
  R::LoopConfig cfg;
  cfg.rate_hz = 1000.0;
  cfg.lock_memory = false;
  cfg.sched_fifo = true;   // permitted or not: reported, never fatal
  cfg.trace_capacity = 400;
  R::RtLoop loop(params(6), cfg, &robot, nullptr, nullptr);
  loop.start();
  CHECK(loop.running());
  bool threw = false;
  try {
    loop.step(1);
  } catch (const std::runtime_error&) {
    threw = true;
  }
  CHECK(threw);
  R::LoopState refused;
  threw = false;
  try {
    loop.state_after_step(refused);  // the robot belongs to the thread
  } catch (const std::runtime_error&) {
    threw = true;
  }
  CHECK(threw);
  threw = false;
  try {
    loop.apply_pending();
  } catch (const std::runtime_error&) {
    threw = true;
  }
  CHECK(threw);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  Mat4 T = Mat4::Identity();
  T(1, 3) = 0.01;
  const long a0 = g_allocs;  // only the loop thread runs from here (the main thread sleeps)
  loop.set_target(T);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const long allocs = g_allocs - a0;
  R::LoopState s;
  loop.state(s);
  loop.stop();
  CHECK(!loop.running());
  CHECK(s.ticks > 200);
  CHECK(loop.period_hist().count() > 200);
  CHECK(loop.cost_hist().count() > 200);
  CHECK(loop.trace_len() == 400);
  CHECK(loop.trace_wake_ns()[399] > loop.trace_wake_ns()[0]);
  const double span_ms = (loop.trace_wake_ns()[399] - loop.trace_wake_ns()[0]) / 1e6;
  CHECK(span_ms > 300.0);  // 399 periods at 1 kHz (absolute deadlines: not faster than the clock)
  CHECK(s.world_T_d(1, 3) > 0.0);  // the command reached the thread
  const R::RtStatus& st = loop.rt_status();
  CHECK(st.sched_fifo || !st.note.empty());
  std::printf("thread: %llu ticks, period error p50 %.1f p99 %.1f max %.1f us, cost p50 %.1f us, "
              "missed %llu, fifo %d (%s)\n",
              static_cast<unsigned long long>(s.ticks), loop.period_hist().quantile_us(0.5),
              loop.period_hist().quantile_us(0.99), loop.period_hist().max_us(),
              loop.cost_hist().quantile_us(0.5), static_cast<unsigned long long>(s.missed),
              st.sched_fifo ? 1 : 0, st.note.c_str());
  return allocs;
}

#ifdef HRI_WITH_MUJOCO
static long test_mujoco(const char* xml) {
  char err[1000] = {0};
  mjModel* m = mj_loadXML(xml, nullptr, err, sizeof err);
  if (m == nullptr) {
    std::printf("FAIL mj_loadXML: %s\n", err);
    ++g_fail;
    return 0;
  }
  mjData* d = mj_makeData(m);
  R::MujocoRobot robot(m, d, {"j1", "j2", "j3"}, "ee");
  R::LoopConfig cfg;
  cfg.rate_hz = 1.0 / m->opt.timestep;
  I::TickParams p = params(3);
  p.filter = I::FILTER_NONE;
  p.K = Vec6(5, 5, 5, 800, 800, 800).asDiagonal();
  p.D = Vec6(0.5, 0.5, 0.5, 60, 60, 60).asDiagonal();
  R::RtLoop loop(p, cfg, &robot, nullptr, nullptr);
  R::LoopState s0, s;
  loop.state(s0);
  const long a0 = g_allocs;
  loop.step(1000);  // 1 s: gravity compensated, the EE stays put
  long allocs = g_allocs - a0;
  loop.state(s);
  const Vec3 p0 = s0.world_T_ee.block<3, 1>(0, 3);
  R::RobotState rs;
  rs.resize(3);
  robot.read(rs);
  CHECK((rs.world_T_ee.block<3, 1>(0, 3) - p0).norm() < 1e-3);
  CHECK(std::abs(d->time - 1.0) < 1e-9);
  // a 5 N push along world y (the stretched arm yields about j1): the EE moves along +y
  loop.set_push(Vec3(0, 5, 0), Vec3::Zero());
  const long a1 = g_allocs;
  loop.step(1000);
  allocs += g_allocs - a1;
  robot.read(rs);
  const double dx = rs.world_T_ee(1, 3) - p0(1);
  CHECK(dx > 1e-3);
  CHECK(rs.wrench_body.tail<3>().norm() > 4.99);
  R::LoopState after;  // the loop's state after the step is that reading (the arm MuJoCo stepped)
  CHECK(loop.state_after_step(after));
  CHECK(after.q == rs.q && after.world_T_ee == rs.world_T_ee && after.wrench_body == rs.wrench_body);
  loop.state(s);
  CHECK(s.world_T_ee != rs.world_T_ee);  // state(): the reading before the last mj_step
  std::printf("mujoco: dy under 5 N = %.4f m (F/K = %.4f)\n", dx, 5.0 / 800.0);
  // the hardware path: the same model terms at the measured (q, dq) on a second mjData
  mjData* d2 = mj_makeData(m);
  R::MujocoArmModel model(m, d2, {"j1", "j2", "j3"}, "ee");
  R::RobotState hw;
  hw.resize(3);
  const long a2 = g_allocs;
  model.update(rs.q, rs.dq);
  model.terms(hw);
  allocs += g_allocs - a2;
  CHECK((hw.world_T_ee - rs.world_T_ee).norm() < 1e-12);
  CHECK((hw.body_jacobian - rs.body_jacobian).norm() < 1e-12);
  CHECK((hw.gravity - rs.gravity).norm() < 1e-9);
  CHECK((hw.coriolis - rs.coriolis).norm() < 1e-9);
  CHECK(hw.gravity.norm() > 1.0);  // the arm is loaded by gravity (sanity of the comparison)
  mj_deleteData(d2);
  mj_deleteData(d);
  mj_deleteModel(m);
  return allocs;
}
#endif

/// wrench_to_body: a tool-frame reading as is; a base-frame reading rotated into the EE frame with
/// the EE rotation (a force along base x on an EE yawed +90 deg is -y in the EE frame; the
/// magnitudes stay; a round trip through the rotation gives the base reading back); no allocation.
static long test_wrench_frames() {
  const Vec3 f(10.0, 0.0, -2.0), m(0.0, 0.5, 1.0);
  Mat4 T = Mat4::Identity();
  T.topLeftCorner<3, 3>() << 0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0;  // Rz(+90 deg)
  T.topRightCorner<3, 1>() << 0.4, -0.2, 0.6;                             // the position plays no part
  Vec6 w = Vec6::Constant(std::nan(""));
  const long a0 = g_allocs.load();
  R::wrench_to_body(R::WrenchFrame::kTool, T, f, m, w);
  const Vec6 tool = w;
  R::wrench_to_body(R::WrenchFrame::kBase, T, f, m, w);
  const long a1 = g_allocs.load();
  CHECK(tool.head<3>() == m && tool.tail<3>() == f);
  CHECK((w.tail<3>() - Vec3(0.0, -10.0, -2.0)).norm() < 1e-12);
  CHECK((w.head<3>() - Vec3(0.5, 0.0, 1.0)).norm() < 1e-12);
  CHECK(std::abs(w.tail<3>().norm() - f.norm()) < 1e-12 && std::abs(w.head<3>().norm() - m.norm()) < 1e-12);
  const Vec6 tw = (Vec6() << 0.3, -0.7, 1.1, 0.2, 0.1, -0.4).finished();
  const Mat4 Tr = exp(tw);                                                 // a general rotation
  R::wrench_to_body(R::WrenchFrame::kBase, Tr, f, m, w);
  const Mat3 Rr = Tr.topLeftCorner<3, 3>();
  CHECK((Rr * w.tail<3>() - f).norm() < 1e-12 && (Rr * w.head<3>() - m).norm() < 1e-12);
  R::wrench_to_body(R::WrenchFrame::kBase, Mat4::Identity(), f, m, w);      // base = EE: unchanged
  CHECK(w.head<3>() == m && w.tail<3>() == f);
  return a1 - a0;
}

int main(int argc, char** argv) {
  test_triple_buffer();
  test_histogram();
  const long aw = test_wrench_frames();
  std::printf("wrench frame allocations: %ld\n", aw);
  long allocs = aw + test_lockstep();
  std::printf("lockstep allocations: %ld\n", allocs);
  const long at = test_thread();
  std::printf("thread allocations: %ld\n", at);
  allocs += at;
#ifdef HRI_WITH_MUJOCO
  if (argc > 1) {
    const long am = test_mujoco(argv[1]);
    std::printf("mujoco allocations: %ld\n", am);
    allocs += am;
  }
#else
  (void)argc;
  (void)argv;
#endif
  std::printf("%d failures, %ld heap allocations\n", g_fail, allocs);
  return (g_fail == 0 && allocs == 0) ? 0 : 1;
}
