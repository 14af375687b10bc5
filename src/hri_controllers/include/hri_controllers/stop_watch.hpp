// StopWatch: the system stop as an actuator sees it (hri_safety.core.stop.StopWatch, same rules;
// docs/safety.md "System stop contract"), for a ros2_control controller: the subscription callback
// (non-real-time) calls on_state(); update() (real-time) calls check(now) and reads stopped().
// stopped() is true
//   * before the first state (reason no_stop_heartbeat; not latched),
//   * while the supervisor says stopped,
//   * once the last heartbeat is older than timeout_s (stop_heartbeat_timeout), latched until a
//     state carrying a new reset_count arrives.
// A state repeating (heartbeat_seq, reset_count) is a re-delivered latched sample, not a heartbeat.
// Lock-free: the two sides share atomics only; no allocation.
#pragma once

#include <atomic>
#include <cstdint>

namespace hri_controllers {

class StopWatch {
 public:
  enum Reason : int { NONE = 0, NO_HEARTBEAT = 1, HEARTBEAT_TIMEOUT = 2, REMOTE = 3 };
  static constexpr const char* reason_name(int r) {
    return r == NO_HEARTBEAT ? "no_stop_heartbeat" : r == HEARTBEAT_TIMEOUT ? "stop_heartbeat_timeout"
                                                    : r == REMOTE ? "stopped" : "";
  }

  explicit StopWatch(double timeout_s = 0.5) : timeout_ns_(static_cast<int64_t>(timeout_s * 1e9)) {}
  void set_timeout(double timeout_s) { timeout_ns_ = static_cast<int64_t>(timeout_s * 1e9); }

  /// A received SafetyStop (non-real-time side); now_ns: the controller's clock.
  void on_state(bool stopped, uint32_t heartbeat_seq, uint32_t reset_count, int64_t now_ns) {
    const uint64_t key = (static_cast<uint64_t>(reset_count) << 32) | heartbeat_seq;
    if (have_.load() && key == key_.load()) {
      duplicates_.fetch_add(1);
      return;
    }
    if (latched_.load() && reset_count != latched_reset_.load()) latched_.store(false);
    key_.store(key);
    remote_stopped_.store(stopped);
    last_rx_ns_.store(now_ns);
    have_.store(true);
  }

  /// Real-time side, every tick: latch the heartbeat timeout. Returns stopped().
  bool check(int64_t now_ns) {
    if (have_.load() && !latched_.load() && now_ns - last_rx_ns_.load() > timeout_ns_) {
      latched_reset_.store(static_cast<uint32_t>(key_.load() >> 32));
      latched_.store(true);
      timeouts_.fetch_add(1);
    }
    return stopped();
  }

  bool stopped() const { return !have_.load() || latched_.load() || remote_stopped_.load(); }
  int reason() const {
    if (latched_.load()) return HEARTBEAT_TIMEOUT;
    if (!have_.load()) return NO_HEARTBEAT;
    return remote_stopped_.load() ? REMOTE : NONE;
  }
  uint64_t timeouts() const { return timeouts_.load(); }
  uint64_t duplicates() const { return duplicates_.load(); }

 private:
  int64_t timeout_ns_;
  std::atomic<bool> have_{false}, remote_stopped_{false}, latched_{false};
  std::atomic<int64_t> last_rx_ns_{0};
  std::atomic<uint64_t> key_{0};
  std::atomic<uint32_t> latched_reset_{0};
  std::atomic<uint64_t> timeouts_{0}, duplicates_{0};
};

}  // namespace hri_controllers
