// hri_controllers::InteractionController (include/hri_controllers/interaction_controller.hpp).
#include "hri_controllers/interaction_controller.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include <hardware_interface/component_parser.hpp>
#include <pluginlib/class_list_macros.hpp>
#include <rclcpp/qos.hpp>

namespace hri_controllers {

using controller_interface::CallbackReturn;
using controller_interface::interface_configuration_type;
using hc::se3::Mat4;
using hc::se3::Mat6;
using hc::se3::Vec6;
namespace hi = hc::interaction;

namespace {

constexpr const char* kModes[] = {"impedance", "admittance", "hybrid"};
// interaction.law in the order of hri_core::interaction::Law (hri_interaction.core.inputs.LAWS)
constexpr const char* kLaws[] = {"lie", "cartesian", "gic", "lie_osd"};
constexpr const char* kWrenchAxes[] = {"force.x", "force.y", "force.z", "torque.x", "torque.y", "torque.z"};
constexpr double kUnitQuatTol = 1e-3;  // hri_runtime.geometry.UNIT_QUAT_TOL
constexpr const char* kStopPrefix = "system stop";  // hri_interaction.core.controller.STOP_PREFIX

int mode_index(const std::string& m) {
  for (int i = 0; i < 3; ++i)
    if (m == kModes[i]) return i;
  return -1;
}

int law_index(const std::string& l) {
  for (int i = 0; i < hi::kNumLaws; ++i)
    if (l == kLaws[i]) return i;
  return -1;
}

int filter_index(const std::string& f) {
  if (f == "passivity") return hi::FILTER_PASSIVITY;
  if (f == "tdpc") return hi::FILTER_TDPC;
  if (f == "wave") return hi::FILTER_WAVE;
  if (f == "jitter") return hi::FILTER_JITTER;
  return hi::FILTER_NONE;
}

Vec6 vec6(const std::vector<double>& v) {
  Vec6 out = Vec6::Zero();
  for (int i = 0; i < 6 && i < static_cast<int>(v.size()); ++i) out(i) = v[i];
  return out;
}

/// A declared 6x6 matrix: the row-major *_full list when given (36 numbers), else the diagonal.
Mat6 matrix(const std::vector<double>& full, const std::vector<double>& diag) {
  if (full.size() == 36) {
    Mat6 M;
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 6; ++c) M(r, c) = full[6 * r + c];
    return M;
  }
  return vec6(diag).asDiagonal();
}

/// (K, D) within interaction.gain_limits (hri_interaction.core.spd.validate_impedance_gains on
/// diagonals: positive, inside [min, max] per axis), else the sentence naming the axis.
std::optional<std::string> gain_limits_refusal(const interaction_controller::Params& p, const Vec6& K, const Vec6& D) {
  const auto& gl = p.interaction.gain_limits;
  static const char* axes[] = {"wx", "wy", "wz", "vx", "vy", "vz"};
  for (int i = 0; i < 6; ++i) {
    const auto& k = i < 3 ? gl.stiffness_rot_nm_rad : gl.stiffness_trans_n_m;
    const auto& d = i < 3 ? gl.damping_rot_nms_rad : gl.damping_trans_ns_m;
    if (!std::isfinite(K(i)) || K(i) < k[0] || K(i) > k[1])
      return "stiffness " + std::string(axes[i]) + " = " + std::to_string(K(i)) + " outside [" +
             std::to_string(k[0]) + ", " + std::to_string(k[1]) + "]";
    if (!std::isfinite(D(i)) || D(i) < d[0] || D(i) > d[1])
      return "damping " + std::string(axes[i]) + " = " + std::to_string(D(i)) + " outside [" +
             std::to_string(d[0]) + ", " + std::to_string(d[1]) + "]";
  }
  return std::nullopt;
}

void pose_to_msg(const Mat4& T, geometry_msgs::msg::Pose& p) {
  const Eigen::Quaterniond q(Eigen::Matrix3d(T.topLeftCorner<3, 3>()));
  p.position.x = T(0, 3);
  p.position.y = T(1, 3);
  p.position.z = T(2, 3);
  p.orientation.x = q.x();
  p.orientation.y = q.y();
  p.orientation.z = q.z();
  p.orientation.w = q.w();
}

rclcpp::QoS latched() { return rclcpp::QoS(1).reliable().transient_local(); }

}  // namespace

InteractionController::InteractionController() = default;
InteractionController::~InteractionController() { release_model(); }

void InteractionController::release_model() {
  arm_.reset();
  if (data_ != nullptr) mj_deleteData(data_);
  if (model_ != nullptr) mj_deleteModel(model_);
  data_ = nullptr;
  model_ = nullptr;
}

CallbackReturn InteractionController::on_init() {
  try {
    listener_ = std::make_shared<interaction_controller::ParamListener>(get_node());
    params_ = listener_->get_params();
  } catch (const std::exception& e) {
    RCLCPP_ERROR(get_node()->get_logger(), "interaction controller: parameters refused: %s", e.what());
    return CallbackReturn::ERROR;
  }
  return CallbackReturn::SUCCESS;
}

controller_interface::InterfaceConfiguration InteractionController::command_interface_configuration() const {
  controller_interface::InterfaceConfiguration c{interface_configuration_type::INDIVIDUAL, {}};
  for (const auto& j : params_.joints.names) c.names.push_back(j + "/effort");
  // ros2_control.position_command measured: the joints' position commands after the efforts
  // (command_interfaces_[n_ + j]), written with the position read in the same cycle
  if (params_.ros2_control.position_command == "measured")
    for (const auto& j : params_.joints.names) c.names.push_back(j + "/position");
  return c;
}

controller_interface::InterfaceConfiguration InteractionController::state_interface_configuration() const {
  controller_interface::InterfaceConfiguration c{interface_configuration_type::INDIVIDUAL, {}};
  for (const auto& j : params_.joints.names) {
    c.names.push_back(j + "/position");
    c.names.push_back(j + "/velocity");
  }
  // the F/T sensor's six interfaces after the joints' (as admittance_controller claims them)
  c.names.insert(c.names.end(), ft_interfaces_.begin(), ft_interfaces_.end());
  return c;
}

std::optional<std::string> InteractionController::sensor_absent(const std::string& name) const {
  const std::string& urdf = get_robot_description();
  if (urdf.empty()) return std::string("the controller manager has no robot description");
  std::vector<hardware_interface::HardwareInfo> hw;
  try {
    hw = hardware_interface::parse_control_resources_from_urdf(urdf);
  } catch (const std::exception& e) {
    return std::string("the robot description's <ros2_control> tags do not parse (") + e.what() + ")";
  }
  for (const auto& h : hw)
    for (const auto& s : h.sensors) {
      if (s.name != name) continue;
      for (const char* axis : kWrenchAxes) {
        bool has = false;
        for (const auto& si : s.state_interfaces) has |= si.name == axis;
        if (!has) return "sensor '" + name + "' of hardware '" + h.name + "' has no state interface " + axis;
      }
      return std::nullopt;
    }
  return "no sensor '" + name + "' in the robot description's <ros2_control> tags";
}

CallbackReturn InteractionController::on_configure(const rclcpp_lifecycle::State&) {
  auto log = get_node()->get_logger();
  params_ = listener_->get_params();
  const auto& p = params_;
  const auto& ip = p.interaction;
  joints_ = p.joints.names;
  n_ = static_cast<int>(joints_.size());
  position_command_ = p.ros2_control.position_command == "measured";
  if (n_ < 1 || n_ > hi::kMaxDof) {
    RCLCPP_ERROR(log, "joints.names: 1..%d joints, got %d", hi::kMaxDof, n_);
    return CallbackReturn::ERROR;
  }
  // the arm model (terms at the measured state)
  release_model();
  char err[1000] = "";
  const std::string& f = p.model_file;
  if (f.size() > 4 && f.compare(f.size() - 4, 4, ".mjb") == 0)
    model_ = mj_loadModel(f.c_str(), nullptr);
  else
    model_ = mj_loadXML(f.c_str(), nullptr, err, sizeof err);
  if (model_ == nullptr) {
    RCLCPP_ERROR(log, "model_file '%s': not loaded %s", f.c_str(), err);
    return CallbackReturn::ERROR;
  }
  data_ = mj_makeData(model_);
  try {
    arm_.emplace(model_, data_, joints_, ip.ee_site);
  } catch (const std::exception& e) {
    RCLCPP_ERROR(log, "%s", e.what());
    return CallbackReturn::ERROR;
  }
  rs_.resize(n_);
  // the EE force-torque sensor: claimed when the hardware has it (the robot description's
  // <ros2_control> tag names it with force.x .. torque.z); else the admittance sees no wrench
  ft_.reset();
  ft_interfaces_.clear();
  if (!p.ft_sensor.name.empty()) {
    if (auto why = sensor_absent(p.ft_sensor.name)) {
      RCLCPP_WARN(log, "ft_sensor.name '%s': %s: no wrench is read (the admittance sees none)",
                  p.ft_sensor.name.c_str(), why->c_str());
    } else {
      ft_.emplace(p.ft_sensor.name);
      ft_interfaces_ = ft_->get_state_interface_names();
    }
  }
  // the frame of its six values (ft_sensor.frame, one_of tool | base: the library refused any other)
  ft_frame_ = p.ft_sensor.frame == "base" ? hc::rt::WrenchFrame::kBase : hc::rt::WrenchFrame::kTool;
  // the tick (hri_interaction.core.controller.tick_params); interaction.law switches live (apply_live)
  // (switching it at run time is the interaction node's; docs/hardware.md)
  hi::TickParams t;
  t.n = n_;
  t.law = law_index(ip.law);
  if (t.law < 0) {
    RCLCPP_ERROR(log, "interaction.law '%s': one of lie, cartesian, gic, lie_osd", ip.law.c_str());
    return CallbackReturn::ERROR;
  }
  t.M_osd = vec6(ip.lie_osd.inertia_diag).asDiagonal();
  t.jitter_alpha_base = vec6(ip.passivity.jitter.alpha_base);
  t.jitter_alpha_scale = vec6(ip.passivity.jitter.alpha_scale);
  t.filter = filter_index(ip.passivity.filter);
  t.gravity_compensation = ip.gravity_compensation;
  t.coriolis_compensation = ip.impedance.coriolis_compensation;
  t.reference_feedforward = ip.reference_feedforward;
  t.K = matrix(ip.impedance.stiffness_full, ip.impedance.stiffness_diag);
  t.D = matrix(ip.impedance.damping_full, ip.impedance.damping_diag);
  t.M_adm = matrix(ip.admittance.mass_full, ip.admittance.mass_diag);
  t.D_adm = matrix(ip.admittance.damping_full, ip.admittance.damping_diag);
  t.K_adm = matrix(ip.admittance.stiffness_full, ip.admittance.stiffness_diag);
  for (int i = 0; i < 6; ++i) t.compliant_axes(i) = static_cast<double>(ip.hybrid.compliant_axes[i]);
  t.wave_damping = vec6(ip.passivity.wave_damping);
  t.energy_floor_j = ip.passivity.energy_floor_j;
  t.max_damping = ip.passivity.po_pc.max_damping;
  t.settle_max_linear_m_s = ip.switch_.settle_max_linear_m_s;
  t.settle_max_angular_rad_s = ip.switch_.settle_max_angular_rad_s;
  t.max_linear_m_s = ip.limits.max_linear_m_s;
  t.max_angular_rad_s = ip.limits.max_angular_rad_s;
  t.reference_max_linear_m_s = ip.limits.reference_max_linear_m_s;
  t.reference_max_angular_rad_s = ip.limits.reference_max_angular_rad_s;
  t.singular_sigma_min = ip.limits.singular_sigma_min;
  t.reference_interpolation_max_s = ip.limits.reference_interpolation_max_s;
  if (static_cast<int>(p.joints.torque_max_nm.size()) == n_) {
    t.has_torque_max = true;
    t.torque_max_nm = Eigen::Map<const Eigen::VectorXd>(p.joints.torque_max_nm.data(), n_);
  }
  tick_params_ = t;
  // the safety checker (hri_core.safety.arm_limits of the joints and safety sections)
  checker_.reset();
  const auto& jp = p.joints;
  if (static_cast<int>(jp.position_min_deg.size()) == n_ && static_cast<int>(jp.position_max_deg.size()) == n_ &&
      static_cast<int>(jp.velocity_max_deg_s.size()) == n_ &&
      static_cast<int>(jp.acceleration_max_deg_s2.size()) == n_ &&
      static_cast<int>(jp.torque_max_nm.size()) == n_ && static_cast<int>(jp.torque_rate_max_nm_s.size()) == n_ &&
      p.safety.workspace_min_m.size() == 3 && p.safety.workspace_max_m.size() == 3) {
    hc::safety::SafetyLimits lim;
    lim.n = n_;
    const double d2r = M_PI / 180.0;
    for (int j = 0; j < n_; ++j) {
      lim.q_min[j] = d2r * jp.position_min_deg[j];
      lim.q_max[j] = d2r * jp.position_max_deg[j];
      lim.v_max[j] = d2r * jp.velocity_max_deg_s[j];
      lim.a_max[j] = d2r * jp.acceleration_max_deg_s2[j];
      lim.tau_max[j] = jp.torque_max_nm[j];
      lim.tau_rate_max[j] = jp.torque_rate_max_nm_s[j];
    }
    for (int k = 0; k < 3; ++k) {
      lim.workspace_min[k] = p.safety.workspace_min_m[k];
      lim.workspace_max[k] = p.safety.workspace_max_m[k];
    }
    lim.ee_speed_max = p.safety.ee_speed_max_m_s;
    lim.stale_after_s = p.safety.command_stale_after_s;
    const std::string why = lim.validate();
    if (!why.empty()) {
      RCLCPP_ERROR(log, "safety limits: %s", why.c_str());
      return CallbackReturn::ERROR;
    }
    checker_.emplace(lim);
  } else {
    RCLCPP_ERROR(log, "joints.* limits (one per joint) and safety.workspace_*_m are required (the safety checker)");
    return CallbackReturn::ERROR;
  }
  if (const char* why = hi::params_error(tick_params_, &*checker_)) {
    RCLCPP_ERROR(log, "%s", why);
    return CallbackReturn::ERROR;
  }
  const unsigned rate = get_update_rate();
  dt_ = rate > 0 ? 1.0 / rate : 1.0 / ip.rate_hz;
  nominal_period_ns_ = static_cast<int64_t>(std::llround(dt_ * 1e9));
  if (rate > 0 && std::abs(rate - ip.rate_hz) > 1e-6)
    RCLCPP_WARN(log, "controller update rate %u Hz != interaction.rate_hz %.1f Hz: dt = 1/%u s", rate, ip.rate_hz, rate);
  stop_.set_timeout(p.safety.stop.timeout_s);
  K_diag_ = t.K.diagonal();
  D_diag_ = t.D.diagonal();
  M_adm_diag_ = t.M_adm.diagonal();
  D_adm_diag_ = t.D_adm.diagonal();
  K_adm_diag_ = t.K_adm.diagonal();
  mode_name_ = ip.mode;
  law_name_ = ip.law;

  // endpoints (the interaction node's names: interaction.topics, teleop.topics.ee_pose, safety.topics.stop)
  auto node = get_node();
  const auto& tp = ip.topics;
  ref_sub_ = node->create_subscription<geometry_msgs::msg::PoseStamped>(
      tp.reference, 10, [this](const geometry_msgs::msg::PoseStamped& m) { on_reference(m); });
  mode_sub_ = node->create_subscription<std_msgs::msg::String>(
      tp.mode, 10, [this](const std_msgs::msg::String& m) { on_mode(m); });
  gains_sub_ = node->create_subscription<std_msgs::msg::Float64MultiArray>(
      tp.gains, 10, [this](const std_msgs::msg::Float64MultiArray& m) { on_gains(m); });
  stop_sub_ = node->create_subscription<hri_interfaces::msg::SafetyStop>(
      p.safety.topics.stop, latched(), [this](const hri_interfaces::msg::SafetyStop& m) { on_stop(m); });
  state_pub_ = node->create_publisher<hri_interfaces::msg::InteractionState>(tp.state, latched());
  pose_pub_ = node->create_publisher<geometry_msgs::msg::PoseStamped>(tp.modified_pose, 10);
  ee_pub_ = node->create_publisher<geometry_msgs::msg::PoseStamped>(p.teleop.topics.ee_pose, 10);
  tau_pub_ = node->create_publisher<std_msgs::msg::Float64MultiArray>(tp.torque, 10);
  state_timer_ = node->create_wall_timer(std::chrono::duration<double>(1.0 / ip.node.state_rate_hz),
                                         [this] { publish_state(); });
  check_handle_ = node->add_on_set_parameters_callback(
      [this](const std::vector<rclcpp::Parameter>& ps) { return check_live(ps); });
  apply_handle_ = node->add_post_set_parameters_callback(
      [this](const std::vector<rclcpp::Parameter>& ps) { apply_live(ps); });
  RCLCPP_INFO(log, "interaction controller: %d joints, site %s, model %s, law %s, mode %s, F/T sensor %s (%s frame), "
              "commands effort%s, dt %.6f s",
              n_, ip.ee_site.c_str(), f.c_str(), ip.law.c_str(), ip.mode.c_str(),
              ft_ ? p.ft_sensor.name.c_str() : "none", p.ft_sensor.frame.c_str(),
              position_command_ ? " + position (the measured position)" : "", dt_);
  return CallbackReturn::SUCCESS;
}

CallbackReturn InteractionController::on_activate(const rclcpp_lifecycle::State&) {
  // the measured state: the first target is the EE pose now (RtLoop with world_T_d = None)
  for (int j = 0; j < n_; ++j) {
    rs_.q(j) = state_interfaces_[2 * j].get_value();
    rs_.dq(j) = state_interfaces_[2 * j + 1].get_value();
  }
  if (!(rs_.q.allFinite() && rs_.dq.allFinite())) {
    RCLCPP_ERROR(get_node()->get_logger(), "activate: joint state not finite");
    return CallbackReturn::ERROR;
  }
  if (command_interfaces_.size() != static_cast<size_t>(position_command_ ? 2 * n_ : n_)) {
    RCLCPP_ERROR(get_node()->get_logger(), "activate: %zu command interfaces loaned, %d expected",
                 command_interfaces_.size(), position_command_ ? 2 * n_ : n_);
    return CallbackReturn::ERROR;
  }
  // the position commands hold the measured position from the start (update() writes them every cycle)
  write_position_commands();
  if (ft_ && !ft_->assign_loaned_state_interfaces(state_interfaces_)) {
    RCLCPP_ERROR(get_node()->get_logger(), "activate: the F/T sensor's interfaces were not assigned");
    return CallbackReturn::ERROR;
  }
  wrench_.setZero();
  arm_->update(rs_.q, rs_.dq);
  arm_->terms(rs_);
  checker_->reset();
  tick_.emplace(tick_params_, rs_.world_T_ee, &*checker_);
  tick_->set_mode(mode_index(mode_name_), -1.0);
  out_.tau = hi::VecN::Zero(n_);
  {
    std::lock_guard<std::mutex> lk(cmd_mu_);
    cmd_pending_ = hc::rt::Command{};
    cmd_pending_.target = rs_.world_T_ee;
    cmd_pending_.K = tick_params_.K;
    cmd_pending_.D = tick_params_.D;
    cmd_pending_.M_adm = tick_params_.M_adm;
    cmd_pending_.D_adm = tick_params_.D_adm;
    cmd_pending_.K_adm = tick_params_.K_adm;
    cmd_pending_.mode = mode_index(mode_name_);
    last_target_ = rs_.world_T_ee;
    cmd_buf_.initRT(cmd_pending_);
    cmd_applied_ = cmd_pending_;
  }
  // silence = stop until the supervisor speaks (the interaction node's engine.hold(True))
  held_ = true;
  tick_->hold_at(rs_.world_T_ee);
  ++holds_;
  ticks_ = 0;
  have_prev_period_ = false;
  cost_.reset();
  period_.reset();
  last_reference_time_ = get_node()->now();
  active_.store(true);
  RCLCPP_INFO(get_node()->get_logger(), "interaction controller active: holding at the measured pose until the stop supervisor's heartbeat");
  return CallbackReturn::SUCCESS;
}

CallbackReturn InteractionController::on_deactivate(const rclcpp_lifecycle::State&) {
  active_.store(false);
  // what bench/interaction/bench_ros2_control.py reads: update() cost and the periods update() saw
  RCLCPP_INFO(get_node()->get_logger(),
              "interaction controller stats: ticks %lu; update() cost us p50 %.1f p99 %.1f max %.1f mean %.2f; "
              "period error us p50 %.1f p99 %.1f max %.1f (n %lu)",
              static_cast<unsigned long>(ticks_), cost_.quantile_us(0.5), cost_.quantile_us(0.99), cost_.max_us(),
              cost_.mean_us(), period_.quantile_us(0.5), period_.quantile_us(0.99), period_.max_us(),
              static_cast<unsigned long>(period_.count()));
  // the arm is left to the next controller; write zero effort for the handover tick, and the
  // position commands back to unset (NaN), the driver's own hold (lbr_fri_ros2 in torque command
  // mode: zero torque at the measured position; MujocoSystem: the arm held where it is) until a
  // controller writes them again
  for (int j = 0; j < n_ && j < static_cast<int>(command_interfaces_.size()); ++j)
    (void)command_interfaces_[j].set_value(0.0);
  for (size_t k = n_; k < command_interfaces_.size(); ++k)
    (void)command_interfaces_[k].set_value(std::numeric_limits<double>::quiet_NaN());
  if (ft_) ft_->release_interfaces();
  return CallbackReturn::SUCCESS;
}

CallbackReturn InteractionController::on_cleanup(const rclcpp_lifecycle::State&) {
  state_timer_.reset();
  ref_sub_.reset();
  mode_sub_.reset();
  gains_sub_.reset();
  stop_sub_.reset();
  check_handle_.reset();
  apply_handle_.reset();
  tick_.reset();
  release_model();
  return CallbackReturn::SUCCESS;
}

// ------------------------------------------------------------------------------ real-time
controller_interface::return_type InteractionController::update(const rclcpp::Time& time,
                                                                const rclcpp::Duration& period) {
  const int64_t t0 = hc::rt::now_ns();
  if (have_prev_period_) period_.add(period.nanoseconds() - nominal_period_ns_);
  have_prev_period_ = true;
  for (int j = 0; j < n_; ++j) {
    rs_.q(j) = state_interfaces_[2 * j].get_value();
    rs_.dq(j) = state_interfaces_[2 * j + 1].get_value();
  }
  hi::InteractionTick& t = *tick_;
  // the model terms at the measured state (a non-finite reading is the tick's STATE_INVALID hold)
  if (rs_.q.allFinite() && rs_.dq.allFinite()) {
    arm_->update(rs_.q, rs_.dq);
    arm_->terms(rs_);
  }
  // system stop: hold at the measured pose; release keeps the anchor (RtLoop::hold)
  const bool stopped = stop_.check(time.nanoseconds());
  if (stopped && !held_) {
    t.hold_at(rs_.world_T_ee);
    held_ = true;
    ++holds_;
  } else if (!stopped && held_) {
    t.set_frozen(false);
    held_ = false;
  }
  // inputs (RtLoop::apply_commands)
  const hc::rt::Command* c = cmd_buf_.readFromRT();
  if (c != nullptr) {
    hc::rt::Command& a = cmd_applied_;
    if (c->target_seq != a.target_seq && !held_) t.set_target(c->target);
    if (c->gains_seq != a.gains_seq) t.set_gains(c->K, c->D, c->blend_s);
    if (c->adm_seq != a.adm_seq) t.set_admittance(c->M_adm, c->D_adm, c->K_adm);
    if (c->mode_seq != a.mode_seq && !held_) {
      t.set_mode(c->mode, c->settle_s >= 0 ? t.time_s() + c->settle_s : -1.0);
      ++mode_switches_;
    }
    if (c->reset_filter_seq != a.reset_filter_seq) t.reset_filter();
    if (c->law_seq != a.law_seq) {  // at this tick boundary, checked again by the tick (RtLoop's rule)
      if (t.set_law(c->law, c->law_blend_s)) ++law_switches_; else ++law_refusals_;
    }
    a.law_seq = c->law_seq;
    a.target_seq = c->target_seq;
    a.gains_seq = c->gains_seq;
    a.adm_seq = c->adm_seq;
    if (!held_) a.mode_seq = c->mode_seq;
    a.reset_filter_seq = c->reset_filter_seq;
  }
  // the measured wrench (RtLoop's wrench_from_robot): (moment, force) in the EE frame (a reading
  // in the base frame, ft_sensor.frame base, rotated with the measured EE rotation); a
  // non-finite or too large reading (interaction.limits.max_force_n / max_torque_nm) holds the
  // admittance for that tick (the tick's WRENCH_INVALID, counted as flag_wrench_invalid)
  if (ft_) {
    const auto f = ft_->get_forces();
    const auto m = ft_->get_torques();
    hc::rt::wrench_to_body(ft_frame_, rs_.world_T_ee, hc::se3::Vec3(f[0], f[1], f[2]),
                           hc::se3::Vec3(m[0], m[1], m[2]), wrench_);
    const auto& lim = params_.interaction.limits;
    const bool ok = wrench_.allFinite() && wrench_.tail<3>().norm() <= lim.max_force_n &&
                    wrench_.head<3>().norm() <= lim.max_torque_nm;
    t.set_wrench(wrench_, ok);
  } else {
    t.set_wrench(Vec6::Zero(), true);  // no F/T sensor: the admittance sees no wrench
  }
  hi::TickInput in{&rs_.q, &rs_.dq, &rs_.world_T_ee, &rs_.body_twist, &rs_.body_jacobian, &rs_.gravity,
                   &rs_.coriolis, &rs_.mass_matrix};
  t.tick(in, dt_, out_);
  for (int j = 0; j < n_; ++j) (void)command_interfaces_[j].set_value(out_.tau(j));
  write_position_commands();
  ++ticks_;
  for (int i = 0; i < hi::kNumTickFlags; ++i)
    if (out_.flags & (1u << i)) ++flag_ticks_[i];
  // snapshot for the publisher (fixed size, wait-free)
  StateSnapshot& s = state_buf_.back();
  s.ticks = ticks_;
  s.time_s = t.time_s();
  s.mode = t.mode();
  s.frozen = t.frozen();
  s.held = held_;
  s.stop_reason = stop_.reason();
  s.flags = out_.flags;
  s.safety_flags = out_.safety_flags;
  s.energy_j = t.energy_j();
  s.violations = t.violations();
  s.saturations = t.saturations();
  s.lam = t.lam();
  s.lam_dot = t.lam_dot();
  s.law = t.law();
  s.law_blending = t.law_blending();
  s.K_diag = t.K().diagonal();
  s.world_T_ee = rs_.world_T_ee;
  s.world_T_ref = out_.world_T_ref;
  s.flag_ticks = flag_ticks_;
  s.mode_switches = mode_switches_;
  s.law_switches = law_switches_;
  s.law_refusals = law_refusals_;
  s.holds = holds_;
  s.stop_timeouts = stop_.timeouts();
  s.n = n_;
  for (int j = 0; j < n_; ++j) s.tau[j] = out_.tau(j);
  state_buf_.publish();
  cost_.add(hc::rt::now_ns() - t0);
  return controller_interface::return_type::OK;
}

void InteractionController::write_position_commands() {
  // the joint position read this cycle, as is (lbr_fri_ros2 moves FRI's position command by its
  // PID on written - measured, which this keeps near zero: the torque moves the arm); a
  // non-finite reading (the tick's STATE_INVALID hold) goes out as it is, and the driver holds
  if (!position_command_) return;
  for (int j = 0; j < n_; ++j) (void)command_interfaces_[n_ + j].set_value(rs_.q(j));
}

// ------------------------------------------------------------------------------ inputs (non-RT)
template <class F>
void InteractionController::command(F&& edit) {
  std::lock_guard<std::mutex> lk(cmd_mu_);
  edit(cmd_pending_);
  cmd_buf_.writeFromNonRT(cmd_pending_);
}

bool InteractionController::reject(const std::string& cause, const std::string& why) {
  {
    std::lock_guard<std::mutex> lk(cmd_mu_);
    ++rejected_[cause];
  }
  RCLCPP_WARN_THROTTLE(get_node()->get_logger(), *get_node()->get_clock(), 1000, "rejected (%s): %s",
                       cause.c_str(), why.c_str());
  return false;
}

void InteractionController::on_reference(const geometry_msgs::msg::PoseStamped& msg) {
  if (!active_.load()) return;
  if (stop_.stopped()) {
    reject("reference_during_stop", "system stop: reference ignored");
    return;
  }
  const auto& o = msg.pose.orientation;
  const auto& pp = msg.pose.position;
  Eigen::Vector4d q(o.x, o.y, o.z, o.w);
  if (!(q.allFinite() && std::isfinite(pp.x) && std::isfinite(pp.y) && std::isfinite(pp.z))) {
    reject("reference_nonfinite", "non-finite or malformed pose; holding the last");
    return;
  }
  const double nq = q.norm();
  if (std::abs(nq - 1.0) > kUnitQuatTol) {
    reject("reference_nonfinite", "quaternion not unit; holding the last");
    return;
  }
  Mat4 T = Mat4::Identity();
  T.topLeftCorner<3, 3>() = Eigen::Quaterniond(o.w / nq, o.x / nq, o.y / nq, o.z / nq).toRotationMatrix();
  T(0, 3) = pp.x;
  T(1, 3) = pp.y;
  T(2, 3) = pp.z;
  {
    std::lock_guard<std::mutex> lk(cmd_mu_);
    const double step = (T.block<3, 1>(0, 3) - last_target_.block<3, 1>(0, 3)).norm();
    if (step > params_.interaction.limits.max_pose_step_m) {
      ++rejected_["reference_jump"];
      RCLCPP_WARN_THROTTLE(get_node()->get_logger(), *get_node()->get_clock(), 1000,
                           "rejected (reference_jump): jump %.3f m > %g m", step,
                           params_.interaction.limits.max_pose_step_m);
      return;
    }
    last_target_ = T;
    cmd_pending_.target = T;
    ++cmd_pending_.target_seq;
    cmd_buf_.writeFromNonRT(cmd_pending_);
  }
  last_reference_time_ = get_node()->now();
}

std::optional<std::string> InteractionController::mode_refusal(const std::string& mode) {
  if (mode_index(mode) < 0) {
    reject("mode_invalid", "unknown mode '" + mode + "'");
    return "unknown mode '" + mode + "' (mode_invalid)";
  }
  if (stop_.stopped()) {
    const std::string why = std::string("frozen: ") + kStopPrefix + ": " + StopWatch::reason_name(stop_.reason());
    reject("mode_switch_refused", why);
    return why + " (mode_switch_refused)";
  }
  return std::nullopt;
}

std::optional<std::string> InteractionController::gains_refusal(const Vec6& K, const Vec6& D) {
  if (auto why = gain_limits_refusal(params_, K, D)) {
    reject("gains_out_of_range", *why);
    return *why + " (gains_out_of_range)";
  }
  return std::nullopt;
}

void InteractionController::on_mode(const std_msgs::msg::String& msg) {
  std::string m = msg.data;
  m.erase(0, m.find_first_not_of(" \t\n"));
  m.erase(m.find_last_not_of(" \t\n") + 1);
  std::transform(m.begin(), m.end(), m.begin(), ::tolower);
  if (!active_.load() || mode_refusal(m)) return;
  if (m != mode_name_) (void)get_node()->set_parameter(rclcpp::Parameter("interaction.mode", m));
}

void InteractionController::on_gains(const std_msgs::msg::Float64MultiArray& msg) {
  if (msg.data.size() != 12) {
    reject("gains_invalid", "expected 12 values (K diag, D diag), got " + std::to_string(msg.data.size()));
    return;
  }
  std::vector<double> K(msg.data.begin(), msg.data.begin() + 6), D(msg.data.begin() + 6, msg.data.end());
  if (gains_refusal(vec6(K), vec6(D))) return;
  (void)get_node()->set_parameters_atomically({rclcpp::Parameter("interaction.impedance.stiffness_diag", K),
                                               rclcpp::Parameter("interaction.impedance.damping_diag", D)});
}

void InteractionController::on_stop(const hri_interfaces::msg::SafetyStop& msg) {
  stop_.on_state(msg.stopped, msg.heartbeat_seq, msg.reset_count, get_node()->now().nanoseconds());
}

rcl_interfaces::msg::SetParametersResult InteractionController::check_live(const std::vector<rclcpp::Parameter>& ps) {
  rcl_interfaces::msg::SetParametersResult r;
  r.successful = true;
  Vec6 K = K_diag_, D = D_diag_;
  bool imp = false;
  for (const auto& p : ps) {
    const std::string& n = p.get_name();
    if (n == "interaction.mode") {
      if (auto why = mode_refusal(p.as_string())) {
        r.successful = false;
        r.reason = *why;
        return r;
      }
    } else if (n == "interaction.law") {
      // the tick's rule (law_switch_error) on the last state update() handed over; the tick
      // checks it again at the boundary (a refusal there is counted: law_refusals)
      StateSnapshot s;
      {
        std::lock_guard<std::mutex> lk(state_mu_);
        state_buf_.update();
        s = state_buf_.front();
      }
      const int from = s.n > 0 ? s.law : law_index(law_name_);   // (no tick yet: the configured law)
      if (const char* why = hi::law_switch_error(from, law_index(p.as_string()), s.lam, s.lam_dot, s.law_blending)) {
        reject("law_switch_refused", why);
        r.successful = false;
        r.reason = std::string("interaction.law ") + p.as_string() + ": " + why + " (law_switch_refused)";
        return r;
      }
    } else if (n == "interaction.impedance.stiffness_diag" && p.as_double_array().size() == 6) {
      K = vec6(p.as_double_array());
      imp = true;
    } else if (n == "interaction.impedance.damping_diag" && p.as_double_array().size() == 6) {
      D = vec6(p.as_double_array());
      imp = true;
    }
  }
  if (imp) {
    if (auto why = gains_refusal(K, D)) {
      r.successful = false;
      r.reason = *why;
    }
  }
  return r;
}

void InteractionController::apply_live(const std::vector<rclcpp::Parameter>& ps) {
  bool imp = false, adm = false;
  std::optional<std::string> mode, law;
  for (const auto& p : ps) {
    const std::string& n = p.get_name();
    if (n == "interaction.mode") mode = p.as_string();
    if (n == "interaction.law") law = p.as_string();
    if (n == "interaction.impedance.stiffness_diag") K_diag_ = vec6(p.as_double_array()), imp = true;
    if (n == "interaction.impedance.damping_diag") D_diag_ = vec6(p.as_double_array()), imp = true;
    if (n == "interaction.admittance.mass_diag") M_adm_diag_ = vec6(p.as_double_array()), adm = true;
    if (n == "interaction.admittance.damping_diag") D_adm_diag_ = vec6(p.as_double_array()), adm = true;
    if (n == "interaction.admittance.stiffness_diag") K_adm_diag_ = vec6(p.as_double_array()), adm = true;
  }
  const double blend = params_.interaction.blend_s, settle = params_.interaction.switch_.settle_s;
  if (mode && *mode != mode_name_) {
    RCLCPP_INFO(get_node()->get_logger(), "interaction: mode %s -> %s", mode_name_.c_str(), mode->c_str());
    mode_name_ = *mode;
    const int m = mode_index(*mode);
    command([&](hc::rt::Command& c) { c.mode = m; c.settle_s = settle; ++c.mode_seq; });
  }
  if (law && *law != law_name_) {
    RCLCPP_INFO(get_node()->get_logger(), "interaction: law %s -> %s", law_name_.c_str(), law->c_str());
    law_name_ = *law;
    const int l = law_index(*law);
    const double lb = params_.interaction.switch_.law_blend_s;
    command([&](hc::rt::Command& c) { c.law = l; c.law_blend_s = lb; ++c.law_seq; });
  }
  if (imp) {
    const Mat6 K = K_diag_.asDiagonal(), D = D_diag_.asDiagonal();
    command([&](hc::rt::Command& c) { c.K = K; c.D = D; c.blend_s = blend; ++c.gains_seq; });
  }
  if (adm) {
    const Mat6 M = M_adm_diag_.asDiagonal(), D = D_adm_diag_.asDiagonal(), K = K_adm_diag_.asDiagonal();
    command([&](hc::rt::Command& c) { c.M_adm = M; c.D_adm = D; c.K_adm = K; ++c.adm_seq; });
  }
}

// ------------------------------------------------------------------------------ state out (non-RT)
void InteractionController::publish_state() {
  if (!active_.load()) return;
  StateSnapshot s;
  {
    std::lock_guard<std::mutex> lk(state_mu_);
    state_buf_.update();
    s = state_buf_.front();
  }
  if (s.n == 0) return;
  const auto now = get_node()->now();
  const std::string& frame = params_.frames.base;
  hri_interfaces::msg::InteractionState m;
  m.stamp = now;
  m.mode = kModes[std::clamp(s.mode, 0, 2)];
  m.time_s = s.time_s;
  if (s.held)
    m.frozen = std::string(kStopPrefix) + ": " + StopWatch::reason_name(s.stop_reason);
  else if (s.frozen)
    m.frozen = "safety: freeze";
  for (int i = 0; i < hi::kNumTickFlags; ++i)
    if (s.flags & (1u << i)) m.flags.push_back(hi::kTickFlagNames[i]);
  std::sort(m.flags.begin(), m.flags.end());
  std::vector<std::string> sf;
  for (int i = 0; i < 32; ++i)
    if (s.safety_flags & (1u << i)) sf.push_back("safety_" + std::to_string(i));
  m.flags.insert(m.flags.end(), sf.begin(), sf.end());
  m.energy_j = s.energy_j;
  m.energy_violations = static_cast<uint64_t>(s.violations);
  m.pc_saturations = static_cast<uint64_t>(s.saturations);
  m.admittance_lambda.assign(s.lam.data(), s.lam.data() + 6);
  m.stiffness_diag.assign(s.K_diag.data(), s.K_diag.data() + 6);
  m.reference_stale = (now - last_reference_time_).seconds() > params_.interaction.node.reference_timeout_s;
  m.ticks = s.ticks;
  m.driver = "ros2_control";
  {
    std::lock_guard<std::mutex> lk(cmd_mu_);
    for (const auto& [k, v] : rejected_) {
      hri_interfaces::msg::Count c;
      c.name = k;
      c.count = v;
      m.rejected.push_back(c);
    }
  }
  auto ev = [&m](const std::string& name, uint64_t v) {
    hri_interfaces::msg::Count c;
    c.name = name;
    c.count = v;
    m.events.push_back(c);
  };
  for (int i = 0; i < hi::kNumTickFlags; ++i)
    if (s.flag_ticks[i]) ev(std::string("flag_") + hi::kTickFlagNames[i], s.flag_ticks[i]);
  ev("holds", s.holds);
  ev("mode_switches", s.mode_switches);
  ev("stop_heartbeat_timeouts", s.stop_timeouts);
  std::sort(m.events.begin(), m.events.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  // the controller manager's periods as this controller saw them (deadline-relative, µs)
  const double nominal_us = dt_ * 1e6;
  m.period_p50_us = nominal_us + period_.quantile_us(0.5);
  m.period_p99_us = nominal_us + period_.quantile_us(0.99);
  m.period_max_us = nominal_us + period_.max_us();
  m.period_missed = 0;
  state_pub_->publish(m);
  geometry_msgs::msg::PoseStamped ps;
  ps.header.stamp = now;
  ps.header.frame_id = frame;
  pose_to_msg(s.world_T_ref, ps.pose);
  pose_pub_->publish(ps);
  pose_to_msg(s.world_T_ee, ps.pose);
  ee_pub_->publish(ps);
  std_msgs::msg::Float64MultiArray tau;
  tau.data.assign(s.tau, s.tau + s.n);
  tau_pub_->publish(tau);
}

}  // namespace hri_controllers

PLUGINLIB_EXPORT_CLASS(hri_controllers::InteractionController, controller_interface::ControllerInterface)
