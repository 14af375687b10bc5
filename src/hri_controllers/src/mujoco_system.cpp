// hri_controllers::MujocoSystem (include/hri_controllers/mujoco_system.hpp).
#include "hri_controllers/mujoco_system.hpp"

#include <cmath>
#include <limits>

#include <hardware_interface/types/hardware_interface_type_values.hpp>
#include <pluginlib/class_list_macros.hpp>
#include <rclcpp/rclcpp.hpp>

namespace hri_controllers {

using hardware_interface::CallbackReturn;
using hardware_interface::return_type;
namespace hit = hardware_interface;

namespace {
rclcpp::Logger logger() { return rclcpp::get_logger("MujocoSystem"); }
const char* kForce[3] = {"force.x", "force.y", "force.z"};
const char* kTorque[3] = {"torque.x", "torque.y", "torque.z"};
}  // namespace

MujocoSystem::~MujocoSystem() {
  robot_.reset();
  if (data_ != nullptr) mj_deleteData(data_);
  if (model_ != nullptr) mj_deleteModel(model_);
}

CallbackReturn MujocoSystem::on_init(const hit::HardwareInfo& info) {
  if (SystemInterface::on_init(info) != CallbackReturn::SUCCESS) return CallbackReturn::ERROR;
  const auto& hp = info_.hardware_parameters;
  const auto mf = hp.find("model_file");
  if (mf == hp.end() || mf->second.empty()) {
    RCLCPP_ERROR(logger(), "hardware parameter model_file is required (the arm's MuJoCo model with torque actuators)");
    return CallbackReturn::ERROR;
  }
  const std::string site = hp.count("ee_site") ? hp.at("ee_site") : "attachment_site";
  // gravity compensated on the hardware side, as the vendors' drivers do (docs/hardware.md); default on
  if (hp.count("gravity_compensation")) {
    const std::string& g = hp.at("gravity_compensation");
    if (g != "true" && g != "false" && g != "True" && g != "False") {
      RCLCPP_ERROR(logger(), "hardware parameter gravity_compensation: true or false, not '%s'", g.c_str());
      return CallbackReturn::ERROR;
    }
    gravity_compensation_ = g == "true" || g == "True";
  }
  std::vector<std::string> names;
  std::vector<double> q0;
  for (size_t k = 0; k < info_.joints.size(); ++k) {
    const auto& j = info_.joints[k];
    bool effort = false, position = false;
    for (const auto& c : j.command_interfaces) {
      effort |= c.name == hit::HW_IF_EFFORT;
      position |= c.name == hit::HW_IF_POSITION;
    }
    if (k == 0) position_commands_ = position;
    if (!effort || j.command_interfaces.size() != (position ? 2u : 1u) || position != position_commands_) {
      RCLCPP_ERROR(logger(), "joint %s: command interfaces effort, or position and effort (the same on every joint)",
                   j.name.c_str());
      return CallbackReturn::ERROR;
    }
    double init = 0.0;
    for (const auto& s : j.state_interfaces) {
      if (s.name != hit::HW_IF_POSITION && s.name != hit::HW_IF_VELOCITY && s.name != hit::HW_IF_EFFORT) {
        RCLCPP_ERROR(logger(), "joint %s: state interfaces position, velocity, effort only", j.name.c_str());
        return CallbackReturn::ERROR;
      }
      if (s.name == hit::HW_IF_POSITION && !s.initial_value.empty()) init = std::stod(s.initial_value);
    }
    names.push_back(j.name);
    q0.push_back(init);
    effort_names_.push_back(j.name + "/" + hit::HW_IF_EFFORT);
  }
  n_ = static_cast<int>(names.size());
  claimed_.assign(n_, 0);
  n_claimed_ = 0;
  for (const auto& s : info_.sensors) ft_name_ = s.name;
  for (const auto& g : info_.gpios) push_name_ = g.name;
  char err[1000] = "";
  const std::string& f = mf->second;
  model_ = (f.size() > 4 && f.compare(f.size() - 4, 4, ".mjb") == 0) ? mj_loadModel(f.c_str(), nullptr)
                                                                      : mj_loadXML(f.c_str(), nullptr, err, sizeof err);
  if (model_ == nullptr) {
    RCLCPP_ERROR(logger(), "model_file '%s' not loaded %s", f.c_str(), err);
    return CallbackReturn::ERROR;
  }
  data_ = mj_makeData(model_);
  for (int j = 0; j < n_; ++j) {
    const int id = mj_name2id(model_, mjOBJ_JOINT, names[j].c_str());
    if (id >= 0) data_->qpos[model_->jnt_qposadr[id]] = q0[j];
  }
  try {
    robot_.emplace(model_, data_, names, site);
  } catch (const std::exception& e) {
    RCLCPP_ERROR(logger(), "%s", e.what());
    return CallbackReturn::ERROR;
  }
  rs_.resize(n_);
  tau_ = hri_core::interaction::VecN::Zero(n_);
  pos_.assign(n_, 0.0);
  vel_.assign(n_, 0.0);
  eff_.assign(n_, 0.0);
  cmd_.assign(n_, 0.0);
  // unset until a controller writes them (lbr_ros2_control starts its position commands at NaN)
  pos_cmd_.assign(n_, std::numeric_limits<double>::quiet_NaN());
  robot_->read(rs_);
  for (int j = 0; j < n_; ++j) pos_[j] = rs_.q(j);
  RCLCPP_INFO(logger(), "MuJoCo arm: %d joints, site %s, timestep %.6f s, model %s, commands %s, gravity %s",
              n_, site.c_str(), model_->opt.timestep, f.c_str(),
              position_commands_ ? "position + effort (effort discarded while a position command is unset)" : "effort",
              gravity_compensation_ ? "compensated by the system (g(q) added to the effort command)"
                                    : "not compensated (the effort command is the joint torque)");
  return CallbackReturn::SUCCESS;
}

std::vector<hit::StateInterface> MujocoSystem::export_state_interfaces() {
  std::vector<hit::StateInterface> out;
  for (int j = 0; j < n_; ++j) {
    const std::string& name = info_.joints[j].name;
    for (const auto& s : info_.joints[j].state_interfaces) {
      double* v = s.name == hit::HW_IF_POSITION ? &pos_[j] : s.name == hit::HW_IF_VELOCITY ? &vel_[j] : &eff_[j];
      out.emplace_back(name, s.name, v);
    }
  }
  if (!ft_name_.empty()) {
    for (int k = 0; k < 3; ++k) out.emplace_back(ft_name_, kForce[k], &ft_[k]);
    for (int k = 0; k < 3; ++k) out.emplace_back(ft_name_, kTorque[k], &ft_[3 + k]);
  }
  return out;
}

std::vector<hit::CommandInterface> MujocoSystem::export_command_interfaces() {
  std::vector<hit::CommandInterface> out;
  for (int j = 0; j < n_; ++j) {
    if (position_commands_) out.emplace_back(info_.joints[j].name, hit::HW_IF_POSITION, &pos_cmd_[j]);
    out.emplace_back(info_.joints[j].name, hit::HW_IF_EFFORT, &cmd_[j]);
  }
  if (!push_name_.empty())
    for (int k = 0; k < 3; ++k) out.emplace_back(push_name_, kForce[k], &push_[k]);
  return out;
}

CallbackReturn MujocoSystem::on_activate(const rclcpp_lifecycle::State&) {
  for (int j = 0; j < n_; ++j) cmd_[j] = 0.0;
  for (double& p : push_) p = 0.0;
  return CallbackReturn::SUCCESS;
}

return_type MujocoSystem::read(const rclcpp::Time&, const rclcpp::Duration&) {
  robot_->read(rs_);
  for (int j = 0; j < n_; ++j) {
    pos_[j] = rs_.q(j);
    vel_[j] = rs_.dq(j);
    eff_[j] = tau_(j);
  }
  for (int k = 0; k < 3; ++k) {
    ft_[k] = rs_.wrench_body(3 + k);
    ft_[3 + k] = rs_.wrench_body(k);
  }
  return return_type::OK;
}

return_type MujocoSystem::perform_command_mode_switch(const std::vector<std::string>& start,
                                                      const std::vector<std::string>& stop) {
  for (int j = 0; j < n_; ++j) {
    for (const auto& s : stop)
      if (s == effort_names_[j]) claimed_[j] = 0;
    for (const auto& s : start)
      if (s == effort_names_[j]) claimed_[j] = 1;
  }
  const int before = n_claimed_;
  n_claimed_ = 0;
  for (char c : claimed_) n_claimed_ += c;
  if ((before == 0) != (n_claimed_ == 0))
    RCLCPP_INFO(logger(), n_claimed_ ? "brakes released: %d joints commanded" : "brakes hold (%d joints commanded)",
                n_claimed_);
  return return_type::OK;
}

return_type MujocoSystem::write(const rclcpp::Time&, const rclcpp::Duration&) {
  // with position commands (the iiwa's interfaces), lbr_fri_ros2's rule in torque command mode: while
  // any joint's position command is not finite the effort commands are discarded (counted), and the
  // arm is held where it is as by the brakes; a finite position command is otherwise not used
  bool unset = false;
  if (position_commands_ && n_claimed_ > 0) {
    for (int j = 0; j < n_; ++j) unset |= !std::isfinite(pos_cmd_[j]);
    if (unset) ++discarded_;
  }
  if (n_claimed_ == 0 || unset) {  // the brakes hold: nothing commands the joints; the arm stands still
    if (!braked_) {
      mju_zero(data_->qvel, model_->nv);
      mj_forward(model_, data_);
      braked_ = true;
    }
    return return_type::OK;
  }
  braked_ = false;
  for (int j = 0; j < n_; ++j) {
    // no command (NaN: a controller that has not written yet) or a bad one: zero effort, counted
    if (std::isfinite(cmd_[j])) {
      tau_(j) = cmd_[j];
    } else {
      tau_(j) = 0.0;
      ++nonfinite_;
    }
    // the vendors' rule: the command is the torque without gravity; g(q) at the state read() saw
    // (the model is not stepped in between, so this is g at the measured q, exact)
    if (gravity_compensation_) tau_(j) += rs_.gravity(j);
  }
  hri_core::se3::Vec3 f(push_[0], push_[1], push_[2]);
  robot_->set_external_wrench(f, hri_core::se3::Vec3::Zero());
  robot_->write(tau_);
  return return_type::OK;
}

}  // namespace hri_controllers

PLUGINLIB_EXPORT_CLASS(hri_controllers::MujocoSystem, hardware_interface::SystemInterface)
