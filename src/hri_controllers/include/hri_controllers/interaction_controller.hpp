// hri_controllers::InteractionController — the 1 kHz interaction controller of hri_interaction as
// a ros2_control controller (docs/hardware.md). update() runs the same header-only
// hri_core::interaction::InteractionTick as our own real-time loop (hri_core::rt::RtLoop::cycle):
//
//   read q, dq (state interfaces <joint>/position, <joint>/velocity) and, when the hardware has
//      the sensor ft_sensor.name, the EE wrench (semantic_components::ForceTorqueSensor; in the
//      frame ft_sensor.frame, a base-frame reading rotated into the EE frame)
//   -> model terms at the measured state (hri_core::rt::MujocoArmModel on the arm's MuJoCo model,
//      never stepped: world_T_ee, J_b, V_b, g, c)
//   -> system stop (StopWatch: heartbeat silence = hold at the measured pose)
//   -> pending inputs (reference, mode, gains: a realtime_tools::RealtimeBuffer of
//      hri_core::rt::Command, checked on the non-real-time side by the rules of
//      hri_interaction.core.inputs)
//   -> InteractionTick::tick (impedance / admittance / hybrid, passivity filter, safety checker)
//   -> write tau (command interfaces <joint>/effort) and, with ros2_control.position_command
//      measured, the joint position read in this cycle (<joint>/position: lbr_fri_ros2's torque
//      command mode discards the torques while a position command is NaN)
//   -> state snapshot (hri_core::rt::TripleBuffer) for the publisher timer on the executor thread.
// Nothing in update() allocates, locks or waits (the buffer's reader only try-locks).
#pragma once

#include <mujoco/mujoco.h>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <controller_interface/controller_interface.hpp>
#include <geometry_msgs/msg/pose_stamped.hpp>
#include <geometry_msgs/msg/wrench_stamped.hpp>
#include <hri_interfaces/msg/interaction_state.hpp>
#include <hri_interfaces/msg/safety_stop.hpp>
#include <rclcpp/rclcpp.hpp>
#include <realtime_tools/realtime_buffer.hpp>
#include <semantic_components/force_torque_sensor.hpp>
#include <std_msgs/msg/float64_multi_array.hpp>
#include <std_msgs/msg/string.hpp>

#include "hri_controllers/stop_watch.hpp"
#include "hri_controllers/validators.hpp"
#include "hri_core/mujoco_robot.hpp"
#include "interaction_controller_parameters.hpp"

namespace hri_controllers {

namespace hc = hri_core;

/// What update() hands to the publisher timer (fixed size: copied into a TripleBuffer).
struct StateSnapshot {
  uint64_t ticks = 0;
  double time_s = 0.0;
  int mode = 0;
  bool frozen = false, held = false;
  int stop_reason = 0;
  uint32_t flags = 0, safety_flags = 0;
  double energy_j = 0.0;
  long violations = 0, saturations = 0;
  hc::se3::Vec6 lam = hc::se3::Vec6::Zero(), lam_dot = hc::se3::Vec6::Zero();
  int law = 0;
  bool law_blending = false;
  hc::se3::Vec6 K_diag = hc::se3::Vec6::Zero();
  hc::se3::Mat4 world_T_ee = hc::se3::Mat4::Identity(), world_T_ref = hc::se3::Mat4::Identity();
  std::array<uint64_t, hc::interaction::kNumTickFlags> flag_ticks{};
  uint64_t mode_switches = 0, holds = 0, stop_timeouts = 0, law_switches = 0, law_refusals = 0;
  int n = 0;
  double tau[hc::interaction::kMaxDof]{};
};

class InteractionController : public controller_interface::ControllerInterface {
 public:
  InteractionController();
  ~InteractionController() override;

  controller_interface::CallbackReturn on_init() override;
  controller_interface::InterfaceConfiguration command_interface_configuration() const override;
  controller_interface::InterfaceConfiguration state_interface_configuration() const override;
  controller_interface::CallbackReturn on_configure(const rclcpp_lifecycle::State& previous) override;
  controller_interface::CallbackReturn on_activate(const rclcpp_lifecycle::State& previous) override;
  controller_interface::CallbackReturn on_deactivate(const rclcpp_lifecycle::State& previous) override;
  controller_interface::CallbackReturn on_cleanup(const rclcpp_lifecycle::State& previous) override;
  controller_interface::return_type update(const rclcpp::Time& time, const rclcpp::Duration& period) override;

  /// update() cost and period statistics (µs histograms, written by update() only).
  const hc::rt::Histogram& cost_hist() const { return cost_; }
  const hc::rt::Histogram& period_hist() const { return period_; }

 private:
  // ---- non-real-time side (executor thread)
  void on_reference(const geometry_msgs::msg::PoseStamped& msg);
  void on_mode(const std_msgs::msg::String& msg);
  void on_gains(const std_msgs::msg::Float64MultiArray& msg);
  void on_stop(const hri_interfaces::msg::SafetyStop& msg);
  void publish_state();
  bool reject(const std::string& cause, const std::string& why);
  std::optional<std::string> mode_refusal(const std::string& mode);
  std::optional<std::string> gains_refusal(const hc::se3::Vec6& K, const hc::se3::Vec6& D);
  template <class F>
  void command(F&& edit);
  rcl_interfaces::msg::SetParametersResult check_live(const std::vector<rclcpp::Parameter>& ps);
  void apply_live(const std::vector<rclcpp::Parameter>& ps);
  void release_model();
  void write_position_commands();  // RT: <joint>/position = the q read this cycle (position_command_)
  std::optional<std::string> sensor_absent(const std::string& name) const;

  std::shared_ptr<interaction_controller::ParamListener> listener_;
  interaction_controller::Params params_;
  std::vector<std::string> joints_;
  int n_ = 0;
  bool position_command_ = false;  // ros2_control.position_command measured: <joint>/position claimed
  double dt_ = 1e-3;
  int64_t nominal_period_ns_ = 1000000;

  // model terms at the measured state
  mjModel* model_ = nullptr;
  mjData* data_ = nullptr;
  std::optional<hc::rt::MujocoArmModel> arm_;
  hc::rt::RobotState rs_;

  // the EE force-torque sensor (ft_sensor.name; none when unset or absent from the hardware)
  std::optional<semantic_components::ForceTorqueSensor> ft_;
  std::vector<std::string> ft_interfaces_;
  hc::rt::WrenchFrame ft_frame_ = hc::rt::WrenchFrame::kTool;  // ft_sensor.frame
  hc::se3::Vec6 wrench_ = hc::se3::Vec6::Zero();  // (moment, force), EE frame (RobotState::wrench_body)

  // the tick
  hc::interaction::TickParams tick_params_;
  std::optional<hc::safety::SafetyChecker> checker_;
  std::optional<hc::interaction::InteractionTick> tick_;
  hc::interaction::TickOutput out_;

  // inputs: non-RT (mutex) -> RT (RealtimeBuffer, try-lock on the reader side)
  std::mutex cmd_mu_;
  hc::rt::Command cmd_pending_;
  hc::se3::Mat4 last_target_ = hc::se3::Mat4::Identity();  // the latest accepted reference
  hc::se3::Vec6 K_diag_, D_diag_, M_adm_diag_, D_adm_diag_, K_adm_diag_;
  std::string mode_name_, law_name_;
  realtime_tools::RealtimeBuffer<hc::rt::Command> cmd_buf_;
  hc::rt::Command cmd_applied_;  // RT side
  std::map<std::string, uint64_t> rejected_;  // under cmd_mu_
  std::atomic<bool> active_{false};

  StopWatch stop_;
  bool held_ = false;
  uint64_t ticks_ = 0, mode_switches_ = 0, holds_ = 0, law_switches_ = 0, law_refusals_ = 0;
  std::array<uint64_t, hc::interaction::kNumTickFlags> flag_ticks_{};
  hc::rt::TripleBuffer<StateSnapshot> state_buf_;
  std::mutex state_mu_;
  hc::rt::Histogram cost_, period_;
  bool have_prev_period_ = false;

  // ROS endpoints (non-real-time)
  rclcpp::Subscription<geometry_msgs::msg::PoseStamped>::SharedPtr ref_sub_;
  rclcpp::Subscription<std_msgs::msg::String>::SharedPtr mode_sub_;
  rclcpp::Subscription<std_msgs::msg::Float64MultiArray>::SharedPtr gains_sub_;
  rclcpp::Subscription<hri_interfaces::msg::SafetyStop>::SharedPtr stop_sub_;
  rclcpp::Publisher<hri_interfaces::msg::InteractionState>::SharedPtr state_pub_;
  rclcpp::Publisher<geometry_msgs::msg::PoseStamped>::SharedPtr pose_pub_, ee_pub_;
  rclcpp::Publisher<std_msgs::msg::Float64MultiArray>::SharedPtr tau_pub_;
  rclcpp::TimerBase::SharedPtr state_timer_;
  rclcpp::node_interfaces::OnSetParametersCallbackHandle::SharedPtr check_handle_;
  rclcpp::node_interfaces::PostSetParametersCallbackHandle::SharedPtr apply_handle_;
  rclcpp::Time last_reference_time_;
};

}  // namespace hri_controllers
