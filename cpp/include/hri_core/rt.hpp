// hri_core::rt — the 1 kHz real-time loop of hri_interaction (header-only, no Python, no MuJoCo).
//
//   RobotInterface   the read/write interface of one arm (a ros2_control effort interface:
//                    read q, dq, measured wrench [+ the model terms at q, dq]; write tau).
//                    MuJoCo: hri_core/mujoco_robot.hpp; hardware drivers derive from it too
//                    (docs/realtime.md).
//   TripleBuffer     wait-free single-producer / single-consumer exchange of a whole value.
//   RtLoop           owns read -> InteractionTick -> write on one thread with absolute deadlines
//                    (clock_nanosleep TIMER_ABSTIME on CLOCK_MONOTONIC), optional SCHED_FIFO and
//                    mlockall (fallback reported), lock-free commands in / state out, deadline
//                    misses and period-error / tick-cost histograms counted in the loop.
//                    step(n) runs the same cycle in lockstep on the caller's thread (tests, a
//                    node's timer on a simulated clock; state_after_step() = the arm after it).
// Nothing inside cycle() allocates: every buffer is fixed-size or allocated before the loop starts
// (cpp/test/cpp/test_rt_unit.cpp counts allocations with alloc_counter.hpp).
#pragma once

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "hri_core/interaction.hpp"

namespace hri_core::rt {
using namespace hri_core::se3;
using interaction::kMaxDof;
using interaction::MatJ;
using interaction::VecN;

// ---------------------------------------------------------------------------- robot interface
/// What one read() delivers: joint state, measured wrench and the model terms at (q, dq)
/// (frames as hri_interaction.core.controller.ArmState: world_T_ee of the EE site, body twist and
/// Jacobian in the EE frame, twist order (w, v)).
struct RobotState {
  VecN q, dq;
  Mat4 world_T_ee = Mat4::Identity();
  Vec6 body_twist = Vec6::Zero();
  MatJ body_jacobian;
  VecN gravity, coriolis;
  interaction::MatN mass_matrix;    // M(q) (n x n; interaction law lie_osd)
  Vec6 wrench_body = Vec6::Zero();  // (moment, force) in the EE frame; NaN = no reading
  double time_s = 0.0;              // robot time (sim: MuJoCo time)

  void resize(int n) {
    q = VecN::Zero(n);
    dq = VecN::Zero(n);
    body_jacobian = MatJ::Zero(6, n);
    gravity = VecN::Zero(n);
    coriolis = VecN::Zero(n);
    mass_matrix = interaction::MatN::Zero(n, n);
  }
};

/// The frame a force-torque reading is expressed in (a ros2_control sensor's force.x .. torque.z).
enum class WrenchFrame : int {
  kTool = 0,  // the EE frame (a wrist sensor tared and aligned with the EE site): used as is
  kBase = 1,  // the robot's base frame (the model's world frame), about the EE point
};

/// A force-torque reading (force f, torque m, the sensor's order) as the tick's wrench:
/// (moment, force) in the EE frame. kBase rotates both with the measured EE rotation,
/// R^T = (world_R_ee)^T; the reference point stays the EE point (no moment transport).
/// Fixed-size, allocation-free (called in update() every cycle).
inline void wrench_to_body(WrenchFrame frame, const Mat4& world_T_ee, const Vec3& f, const Vec3& m,
                           Vec6& out) {
  if (frame == WrenchFrame::kBase) {
    const Mat3 Rt = world_T_ee.topLeftCorner<3, 3>().transpose();
    out.head<3>().noalias() = Rt * m;
    out.tail<3>().noalias() = Rt * f;
  } else {
    out.head<3>() = m;
    out.tail<3>() = f;
  }
}

/// The arm behind the loop. read() and write() run on the RT thread once per period and must not
/// block, allocate or call Python. write(tau) applies tau for one period (sim: steps the model).
class RobotInterface {
 public:
  virtual ~RobotInterface() = default;
  virtual int dof() const = 0;
  /// Fills `s` (sized by the caller to dof()); false = no valid reading this period (the loop
  /// holds the last command and counts a read failure).
  virtual bool read(RobotState& s) = 0;
  virtual void write(const VecN& tau) = 0;
  /// Scripted external push on the EE (world frame, force at the EE point); simulation only.
  virtual void set_external_wrench(const Vec3& /*force_world*/, const Vec3& /*torque_world*/) {}
  /// Called once on the RT thread before the first cycle and after the last (e.g. to switch a
  /// hardware driver into / out of torque mode).
  virtual void on_start() {}
  virtual void on_stop() {}
};

// ---------------------------------------------------------------------------- triple buffer
/// Wait-free exchange of a whole T between ONE writer and ONE reader: the writer fills back() and
/// publish()es; the reader update()s (true when a newer value arrived) and reads front().
template <class T>
class TripleBuffer {
 public:
  T& back() { return buf_[back_]; }
  void publish() { back_ = mid_.exchange(static_cast<uint8_t>(back_ | kDirty), std::memory_order_acq_rel) & kIdx; }
  bool update() {
    if (!(mid_.load(std::memory_order_acquire) & kDirty)) return false;
    front_ = mid_.exchange(front_, std::memory_order_acq_rel) & kIdx;
    return true;
  }
  const T& front() const { return buf_[front_]; }
  /// Before any exchange: sets all three slots (e.g. to size them).
  template <class F>
  void init(F&& f) {
    for (T& b : buf_) f(b);
  }

 private:
  static constexpr uint8_t kIdx = 3, kDirty = 4;
  T buf_[3];
  uint8_t back_ = 0, front_ = 2;
  std::atomic<uint8_t> mid_{1};
};

// ---------------------------------------------------------------------------- histogram
/// Fixed 1 µs bins (0 .. kBins-1 µs, the last bin = overflow), single writer (the loop), relaxed
/// atomics so a reader on another thread sees a consistent-enough snapshot; exact max and sum.
class Histogram {
 public:
  static constexpr int kBins = 5000;
  void reset() {
    for (auto& b : bins_) b.store(0, std::memory_order_relaxed);
    n_.store(0, std::memory_order_relaxed);
    max_ns_.store(0, std::memory_order_relaxed);
    sum_ns_.store(0, std::memory_order_relaxed);
  }
  void add(int64_t ns) {
    if (ns < 0) ns = -ns;
    int64_t b = ns / 1000;
    if (b >= kBins) b = kBins - 1;
    bins_[b].store(bins_[b].load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    n_.store(n_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    sum_ns_.store(sum_ns_.load(std::memory_order_relaxed) + ns, std::memory_order_relaxed);
    if (ns > max_ns_.load(std::memory_order_relaxed)) max_ns_.store(ns, std::memory_order_relaxed);
  }
  uint64_t count() const { return n_.load(std::memory_order_relaxed); }
  /// Upper edge (µs) of the bin holding the q-quantile (q in [0, 1]); 0 when empty.
  double quantile_us(double q) const {
    const uint64_t n = count();
    if (n == 0) return 0.0;
    const uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(n)));
    uint64_t acc = 0;
    for (int b = 0; b < kBins; ++b) {
      acc += bins_[b].load(std::memory_order_relaxed);
      if (acc >= rank && acc > 0) return b == kBins - 1 ? max_us() : static_cast<double>(b + 1);
    }
    return max_us();
  }
  double max_us() const { return max_ns_.load(std::memory_order_relaxed) / 1e3; }
  double mean_us() const {
    const uint64_t n = count();
    return n ? sum_ns_.load(std::memory_order_relaxed) / 1e3 / static_cast<double>(n) : 0.0;
  }

 private:
  std::array<std::atomic<uint32_t>, kBins> bins_{};
  std::atomic<uint64_t> n_{0};
  std::atomic<int64_t> max_ns_{0}, sum_ns_{0};
};

// ---------------------------------------------------------------------------- loop config / io
struct LoopConfig {
  double rate_hz = 1000.0;
  bool sched_fifo = true;
  int priority = 80;
  bool lock_memory = true;
  int cpu = -1;
  bool wrench_from_robot = true;
  double max_force_n = 150.0, max_torque_nm = 30.0;
  int trace_capacity = 0;
};

/// Slow inputs, Python -> loop. Each field group carries a sequence number; the loop applies a
/// group when its number changed since the last applied command.
struct Command {
  Mat4 target = Mat4::Identity();
  uint64_t target_seq = 0;
  Mat6 K = Mat6::Identity(), D = Mat6::Identity();
  double blend_s = 0.0;
  uint64_t gains_seq = 0;
  Mat6 M_adm = Mat6::Identity(), D_adm = Mat6::Identity(), K_adm = Mat6::Zero();
  uint64_t adm_seq = 0;
  int mode = interaction::MODE_IMPEDANCE;
  double settle_s = -1.0;
  uint64_t mode_seq = 0;
  bool frozen = false;
  uint64_t frozen_seq = 0;
  bool hold = false;
  uint64_t hold_seq = 0;
  Vec6 wrench = Vec6::Zero();
  bool wrench_ok = true;
  uint64_t wrench_seq = 0;
  Vec3 push_force = Vec3::Zero(), push_torque = Vec3::Zero();
  uint64_t push_seq = 0;
  uint64_t reset_filter_seq = 0;
  uint64_t reset_stats_seq = 0;
  int law = interaction::LAW_LIE;
  double law_blend_s = 0.0;
  uint64_t law_seq = 0;
};

/// State snapshot, loop -> Python (published every tick).
struct LoopState {
  uint64_t ticks = 0;
  double time_s = 0.0;
  int n = 0;
  VecN q, dq, tau;
  Mat4 world_T_ee = Mat4::Identity(), world_T_ref = Mat4::Identity(), world_T_d = Mat4::Identity();
  Vec6 wrench_body = Vec6::Zero(), lam = Vec6::Zero(), lam_dot = Vec6::Zero();
  Mat6 K = Mat6::Identity(), D = Mat6::Identity();
  double energy_j = 0, dissipated_j = 0, min_energy_j = 0;
  long violations = 0, saturations = 0;
  uint32_t flags = 0, safety_flags = 0;
  double sigma_min = 0.0;
  int mode = 0;
  int law = 0;                  // interaction::Law
  bool law_blending = false;    // a law switch is blending in
  uint64_t law_refusals = 0;    // set_law commands the tick refused at its boundary
  bool frozen = false;
  uint64_t missed = 0, read_failures = 0, commands_applied = 0;
  std::array<uint64_t, interaction::kNumTickFlags> flag_ticks{};
  std::array<uint64_t, 32> safety_flag_ticks{};
};

struct RtStatus {
  bool sched_fifo = false;
  int priority = 0;
  bool mlockall = false;
  int cpu = -1;
  std::string note;
};

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

/// CAP_IPC_LOCK in the effective set, or an unlimited RLIMIT_MEMLOCK: mlockall(MCL_FUTURE) cannot
/// starve later allocations of the process.
inline bool memlock_unbounded() {
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur == RLIM_INFINITY) return true;
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return false;
  char line[256];
  bool cap = false;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long v = 0;
    if (std::sscanf(line, "CapEff: %llx", &v) == 1) {
      cap = (v >> 14) & 1ULL;  // CAP_IPC_LOCK
      break;
    }
  }
  std::fclose(f);
  return cap;
}

// ---------------------------------------------------------------------------- the loop
class RtLoop {
 public:
  RtLoop(const interaction::TickParams& p, const LoopConfig& cfg, RobotInterface* robot,
         const Mat4* world_T_d, safety::SafetyChecker* checker)
      : cfg_(cfg), robot_(robot), n_(p.n),
        period_ns_(static_cast<int64_t>(std::llround(1e9 / cfg.rate_hz))),
        dt_(1.0 / cfg.rate_hz) {
    rs_.resize(n_);
    rs_.wrench_body.setZero();
    after_.resize(n_);
    tau_ = VecN::Zero(n_);
    if (world_T_d == nullptr) {
      robot_->read(rs_);
      tick_.emplace(p, rs_.world_T_ee, checker);
    } else {
      tick_.emplace(p, *world_T_d, checker);
    }
    out_.tau = VecN::Zero(n_);
    state_buf_.init([this](LoopState& s) {
      s.n = n_;
      s.q = VecN::Zero(n_);
      s.dq = VecN::Zero(n_);
      s.tau = VecN::Zero(n_);
    });
    cmd_pending_.target = tick_->world_T_d();
    cmd_pending_.K = p.K;
    cmd_pending_.D = p.D;
    cmd_pending_.M_adm = p.M_adm;
    cmd_pending_.D_adm = p.D_adm;
    cmd_pending_.K_adm = p.K_adm;
    cmd_applied_ = cmd_pending_;
    period_.reset();
    cost_.reset();
    publish_state();
  }
  ~RtLoop() { stop(); }
  RtLoop(const RtLoop&) = delete;
  RtLoop& operator=(const RtLoop&) = delete;

  // ------------------------------------------------------------ commands (non-RT side; any thread)
  template <class F>
  void command(F&& edit) {
    std::lock_guard<std::mutex> lk(cmd_mu_);
    edit(cmd_pending_);
    cmd_buf_.back() = cmd_pending_;
    cmd_buf_.publish();
  }
  void set_target(const Mat4& T) { command([&](Command& c) { c.target = T; ++c.target_seq; }); }
  void set_gains(const Mat6& K, const Mat6& D, double blend_s) {
    command([&](Command& c) { c.K = K; c.D = D; c.blend_s = blend_s; ++c.gains_seq; });
  }
  void set_admittance(const Mat6& M, const Mat6& D, const Mat6& K) {
    command([&](Command& c) { c.M_adm = M; c.D_adm = D; c.K_adm = K; ++c.adm_seq; });
  }
  void set_mode(int mode, double settle_s) {
    command([&](Command& c) { c.mode = mode; c.settle_s = settle_s; ++c.mode_seq; });
  }
  void set_frozen(bool f) { command([&](Command& c) { c.frozen = f; ++c.frozen_seq; }); }
  /// The torque law from the next tick on (InteractionTick::set_law, checked there again: a switch
  /// the admittance state no longer allows is refused and counted in law_refusals).
  void set_law(int law, double blend_s) {
    command([&](Command& c) { c.law = law; c.law_blend_s = blend_s; ++c.law_seq; });
  }
  /// The stop input: true = hold the EE pose measured at the next tick (reference and target
  /// re-anchored there, admittance zeroed, frozen: zero reference velocity, gravity compensated);
  /// false = release (frozen off; the target stays at the held pose, no jump back).
  void hold(bool on) { command([&](Command& c) { c.hold = on; ++c.hold_seq; }); }
  void set_wrench(const Vec6& w, bool ok) {
    command([&](Command& c) { c.wrench = w; c.wrench_ok = ok; ++c.wrench_seq; });
  }
  void set_push(const Vec3& f, const Vec3& m) {
    command([&](Command& c) { c.push_force = f; c.push_torque = m; ++c.push_seq; });
  }
  void reset_filter() { command([&](Command& c) { ++c.reset_filter_seq; }); }
  void reset_stats() { command([&](Command& c) { ++c.reset_stats_seq; }); }

  // ------------------------------------------------------------ state (non-RT side; one reader)
  /// Copies the newest published state into `out` (under the reader lock).
  void state(LoopState& out) {
    std::lock_guard<std::mutex> lk(state_mu_);
    state_buf_.update();
    out = state_buf_.front();
  }
  /// Lockstep: take the commands given so far now, as the next cycle would first, and publish the
  /// state with them (a caller that steps the loop itself sees an input in state() at once; a hold
  /// still anchors at the next cycle's reading). Not while the thread runs (runtime_error).
  void apply_pending() {
    if (running_.load()) throw std::runtime_error("RtLoop.apply_pending: the real-time thread is running");
    apply_commands();
    publish_state();
  }
  /// Lockstep: the state after the last cycle's physics step, as a simulation reports it after
  /// its step: state() with q, dq, world_T_ee and wrench_body (a robot wrench) read from the robot
  /// now, i.e. what the next cycle's read() will see (state() holds the reading the tick used,
  /// before write() stepped the arm). Not while the thread runs (the robot is its: runtime_error).
  /// False, and `out` = state(), when the robot gives no reading.
  bool state_after_step(LoopState& out) {
    if (running_.load()) throw std::runtime_error("RtLoop.state_after_step: the real-time thread is running");
    state(out);
    if (!robot_->read(after_)) return false;
    out.q = after_.q;
    out.dq = after_.dq;
    out.world_T_ee = after_.world_T_ee;
    if (cfg_.wrench_from_robot) out.wrench_body = after_.wrench_body;
    return true;
  }
  /// Lockstep: the command of the last tick (what write() applied). Not while the thread runs.
  const VecN& last_tau() const {
    if (running_.load()) throw std::runtime_error("RtLoop.last_tau: the real-time thread is running");
    return tick_->last_tau();
  }
  const Histogram& period_hist() const { return period_; }
  const Histogram& cost_hist() const { return cost_; }
  const RtStatus& rt_status() const { return status_; }
  const LoopConfig& config() const { return cfg_; }
  double dt() const { return dt_; }
  bool running() const { return running_.load(); }
  const std::vector<int64_t>& trace_wake_ns() const { return trace_wake_; }
  const std::vector<int64_t>& trace_cost_ns() const { return trace_cost_; }
  size_t trace_len() const { return trace_len_; }
  const interaction::InteractionTick& tick_engine() const { return *tick_; }

  // ------------------------------------------------------------ lockstep
  void step(long n) {
    if (running_.load()) throw std::runtime_error("RtLoop.step: the real-time thread is running");
    for (long i = 0; i < n; ++i) cycle();
  }

  // ------------------------------------------------------------ thread
  void start() {
    if (running_.load()) return;
    if (cfg_.trace_capacity > 0) {
      trace_wake_.assign(static_cast<size_t>(cfg_.trace_capacity), 0);
      trace_cost_.assign(static_cast<size_t>(cfg_.trace_capacity), 0);
    }
    trace_len_ = 0;
    status_ = RtStatus{};
    status_.cpu = cfg_.cpu;
    if (cfg_.lock_memory) {
      if (!memlock_unbounded()) {
        status_.note += "mlockall skipped (no CAP_IPC_LOCK and RLIMIT_MEMLOCK bounded); ";
      } else if (mlockall(MCL_CURRENT | MCL_FUTURE) == 0) {
        status_.mlockall = true;
      } else {
        status_.note += std::string("mlockall failed: ") + std::strerror(errno) + "; ";
      }
    }
    stop_req_.store(false);
    started_.store(false);
    running_.store(true);
    thread_ = std::thread([this] { run(); });
    while (!started_.load()) std::this_thread::yield();  // status_ is final once started_
  }
  void stop() {
    if (!thread_.joinable()) return;
    stop_req_.store(true);
    thread_.join();
    running_.store(false);
  }

 private:
  void setup_thread() {
    if (cfg_.cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cfg_.cpu, &set);
      if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        status_.note += "cpu pinning failed; ";
        status_.cpu = -1;
      }
    }
    if (cfg_.sched_fifo) {
      sched_param sp{};
      sp.sched_priority = cfg_.priority;
      const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
      if (rc == 0) {
        status_.sched_fifo = true;
        status_.priority = cfg_.priority;
      } else {
        status_.note += std::string("SCHED_FIFO refused (") + std::strerror(rc) + "), SCHED_OTHER; ";
      }
    }
    // pre-fault this thread's stack so the first cycles do not page-fault
    volatile char stack_touch[64 * 1024];
    for (size_t i = 0; i < sizeof stack_touch; i += 4096) stack_touch[i] = 0;
  }

  void run() {
    setup_thread();
    started_.store(true);
    robot_->on_start();
    int64_t next = now_ns() + period_ns_;
    int64_t prev_wake = 0;
    while (!stop_req_.load(std::memory_order_relaxed)) {
      timespec ts{static_cast<time_t>(next / 1000000000LL), static_cast<long>(next % 1000000000LL)};
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
      }
      const int64_t wake = now_ns();
      if (prev_wake != 0) period_.add(wake - prev_wake - period_ns_);
      prev_wake = wake;
      cycle();
      const int64_t end = now_ns();
      cost_.add(end - wake);
      if (trace_len_ < trace_wake_.size()) {
        trace_wake_[trace_len_] = wake;
        trace_cost_[trace_len_] = end - wake;
        ++trace_len_;
      }
      next += period_ns_;
      if (end > next) {  // this cycle's output came after the next deadline: skip the lost slots
        while (end > next) {
          next += period_ns_;
          ++missed_;
        }
      }
    }
    robot_->on_stop();
  }

  void apply_commands() {
    if (!cmd_buf_.update()) return;
    const Command& c = cmd_buf_.front();
    Command& a = cmd_applied_;
    interaction::InteractionTick& t = *tick_;
    if (c.target_seq != a.target_seq) t.set_target(c.target);
    if (c.gains_seq != a.gains_seq) t.set_gains(c.K, c.D, c.blend_s);
    if (c.adm_seq != a.adm_seq) t.set_admittance(c.M_adm, c.D_adm, c.K_adm);
    if (c.mode_seq != a.mode_seq) t.set_mode(c.mode, c.settle_s >= 0 ? t.time_s() + c.settle_s : -1.0);
    if (c.frozen_seq != a.frozen_seq) t.set_frozen(c.frozen);
    if (c.law_seq != a.law_seq && !t.set_law(c.law, c.law_blend_s)) ++law_refusals_;
    if (c.hold_seq != a.hold_seq) {
      if (c.hold)
        hold_pending_ = true;  // re-anchored after this tick's read (the measured pose)
      else {
        hold_pending_ = false;
        t.set_frozen(false);
      }
    }
    if (c.push_seq != a.push_seq) robot_->set_external_wrench(c.push_force, c.push_torque);
    if (c.reset_filter_seq != a.reset_filter_seq) t.reset_filter();
    if (c.reset_stats_seq != a.reset_stats_seq) {
      period_.reset();
      cost_.reset();
      missed_ = 0;
      read_failures_ = 0;
      flag_ticks_.fill(0);
      safety_flag_ticks_.fill(0);
    }
    a = c;
    ++commands_applied_;
  }

  /// One period: commands -> read -> tick -> write -> state. No allocation, no locks.
  void cycle() {
    apply_commands();
    if (!robot_->read(rs_)) {
      ++read_failures_;
      robot_->write(tick_->last_tau());  // hold the last command
      publish_state();
      return;
    }
    if (hold_pending_) {
      tick_->hold_at(rs_.world_T_ee);
      hold_pending_ = false;
    }
    if (cfg_.wrench_from_robot) {
      const Vec6& w = rs_.wrench_body;
      const bool ok = w.allFinite() && w.tail<3>().norm() <= cfg_.max_force_n &&
                      w.head<3>().norm() <= cfg_.max_torque_nm;
      tick_->set_wrench(w, ok);
    } else {
      const Command& c = cmd_applied_;
      tick_->set_wrench(c.wrench, c.wrench_ok && c.wrench.allFinite());
    }
    interaction::TickInput in{&rs_.q, &rs_.dq, &rs_.world_T_ee, &rs_.body_twist,
                              &rs_.body_jacobian, &rs_.gravity, &rs_.coriolis, &rs_.mass_matrix};
    tick_->tick(in, dt_, out_);
    for (int i = 0; i < interaction::kNumTickFlags; ++i)
      if (out_.flags & (1u << i)) ++flag_ticks_[i];
    for (int i = 0; i < 32; ++i)
      if (out_.safety_flags & (1u << i)) ++safety_flag_ticks_[i];
    tau_ = out_.tau;
    robot_->write(tau_);
    ++ticks_;
    publish_state();
  }

  void publish_state() {
    LoopState& s = state_buf_.back();
    const interaction::InteractionTick& t = *tick_;
    s.ticks = ticks_;
    s.time_s = t.time_s();
    s.n = n_;
    s.q = rs_.q;
    s.dq = rs_.dq;
    s.tau = t.last_tau();
    s.world_T_ee = rs_.world_T_ee;
    s.world_T_ref = t.last_ref();
    s.world_T_d = t.world_T_d();
    s.wrench_body = cfg_.wrench_from_robot ? rs_.wrench_body : cmd_applied_.wrench;
    s.lam = tick_->lam();
    s.lam_dot = tick_->lam_dot();
    s.K = t.K();
    s.D = t.D();
    s.energy_j = t.energy_j();
    s.dissipated_j = t.dissipated_j();
    s.min_energy_j = t.min_energy_j();
    s.violations = t.violations();
    s.saturations = t.saturations();
    s.flags = out_.flags;
    s.safety_flags = out_.safety_flags;
    s.sigma_min = out_.sigma_min;
    s.mode = t.mode();
    s.law = t.law();
    s.law_blending = t.law_blending();
    s.law_refusals = law_refusals_;
    s.frozen = t.frozen();
    s.missed = missed_;
    s.read_failures = read_failures_;
    s.commands_applied = commands_applied_;
    s.flag_ticks = flag_ticks_;
    s.safety_flag_ticks = safety_flag_ticks_;
    state_buf_.publish();
  }

  LoopConfig cfg_;
  RobotInterface* robot_;
  int n_;
  int64_t period_ns_;
  double dt_;
  std::optional<interaction::InteractionTick> tick_;
  RobotState rs_, after_;  // the cycle's reading; state_after_step()'s (lockstep, non-RT side)
  interaction::TickOutput out_;
  VecN tau_;
  // commands
  std::mutex cmd_mu_;
  Command cmd_pending_, cmd_applied_;
  bool hold_pending_ = false;
  TripleBuffer<Command> cmd_buf_;
  // state
  std::mutex state_mu_;
  TripleBuffer<LoopState> state_buf_;
  // statistics (written by the loop only)
  Histogram period_, cost_;
  uint64_t ticks_ = 0, missed_ = 0, read_failures_ = 0, commands_applied_ = 0, law_refusals_ = 0;
  std::array<uint64_t, interaction::kNumTickFlags> flag_ticks_{};
  std::array<uint64_t, 32> safety_flag_ticks_{};
  std::vector<int64_t> trace_wake_, trace_cost_;
  size_t trace_len_ = 0;
  // thread
  RtStatus status_;
  std::thread thread_;
  std::atomic<bool> running_{false}, stop_req_{false}, started_{false};
};

}  // namespace hri_core::rt
