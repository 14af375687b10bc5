// hri_controllers::MujocoSystem — the arm in MuJoCo as a ros2_control hardware_interface::SystemInterface,
// with the interfaces of the real arm's driver (franka_hardware / ur_robot_driver / the iiwa driver):
//   joints   command effort, and position where the tag lists it (the iiwa's, as lbr_ros2_control
//            exports it); state position, velocity, effort (the applied joint torque)
//   sensor   <ee_ft>: force.x/y/z, torque.x/y/z in the EE frame (the applied push: an ideal, tared
//            wrist F/T, as hri_core::rt::MujocoRobot::read)
//   gpio     <ee_push>: force.x/y/z (world frame, N), a scripted push on the EE (simulation only)
// read() copies the state of hri_core::rt::MujocoRobot (the same class our real-time loop steps);
// write() applies the effort command for one period and steps the model (mj_step2 + mj_step1), so
// the model's timestep must equal the controller manager's period (the model file is written with
// it: hri_sim.models.write_ros2_control_model). Brakes, as on the real arms: while no controller
// claims a joint's effort interface (perform_command_mode_switch; before the first controller is
// activated and after the last one is deactivated) the model is not stepped, so the arm stays
// where it is (the home pose at start) instead of falling under gravity with zero torque.
// Position commands (a tag that lists them): lbr_fri_ros2's rule in FRI torque command mode, where
// the effort commands are discarded while any joint's position command is NaN (the start value, as
// lbr_ros2_control's): the arm is then held as by the brakes and the cycle counted
// (discarded_cycles()); a finite position command is otherwise not used (no joint impedance here).
// Gravity (hardware parameter gravity_compensation, default true): as franka_hardware (libfranka's
// franka::Torques are "without gravity and friction"), ur_robot_driver (direct torque: target
// torques "after gravity compensation") and lbr_ros2_control (FRI torque mode) do, write() adds the
// gravity torque g(q) at the state read() saw (hri_core::rt::MujocoArmModel's mj_rne at zero
// velocity) to the effort command, so a controller commands the torque without gravity; false: the
// effort command is the whole joint torque (docs/hardware.md). The effort state is the applied torque.
// Nothing is allocated in read()/write().
// Hardware parameters (<hardware><param> of the ros2_control URDF tag): model_file, ee_site, gravity_compensation;
// a joint's initial position: <state_interface name="position"><param name="initial_value">.
#pragma once

#include <mujoco/mujoco.h>

#include <optional>
#include <string>
#include <vector>

#include <hardware_interface/system_interface.hpp>

#include "hri_core/mujoco_robot.hpp"

namespace hri_controllers {

class MujocoSystem : public hardware_interface::SystemInterface {
 public:
  ~MujocoSystem() override;
  hardware_interface::CallbackReturn on_init(const hardware_interface::HardwareInfo& info) override;
  std::vector<hardware_interface::StateInterface> export_state_interfaces() override;
  std::vector<hardware_interface::CommandInterface> export_command_interfaces() override;
  hardware_interface::CallbackReturn on_activate(const rclcpp_lifecycle::State& previous) override;
  hardware_interface::return_type read(const rclcpp::Time& time, const rclcpp::Duration& period) override;
  hardware_interface::return_type write(const rclcpp::Time& time, const rclcpp::Duration& period) override;
  hardware_interface::return_type perform_command_mode_switch(const std::vector<std::string>& start,
                                                              const std::vector<std::string>& stop) override;

  uint64_t nonfinite_commands() const { return nonfinite_; }
  uint64_t discarded_cycles() const { return discarded_; }

 private:
  mjModel* model_ = nullptr;
  mjData* data_ = nullptr;
  std::optional<hri_core::rt::MujocoRobot> robot_;
  hri_core::rt::RobotState rs_;
  hri_core::interaction::VecN tau_;
  int n_ = 0;
  std::vector<double> pos_, vel_, eff_, cmd_;
  bool position_commands_ = false;  // the tag lists <joint>/position commands
  bool gravity_compensation_ = true; // write() adds g(q) at the measured q to the effort command
  std::vector<double> pos_cmd_;      // <joint>/position commands (NaN until written)
  uint64_t discarded_ = 0;           // cycles whose effort was discarded (a position command unset)
  double ft_[6]{};    // force.x/y/z, torque.x/y/z (EE frame)
  double push_[3]{};  // force.x/y/z (world)
  std::string ft_name_, push_name_;
  uint64_t nonfinite_ = 0;
  std::vector<std::string> effort_names_;  // <joint>/effort
  std::vector<char> claimed_;              // per joint: a controller commands its effort
  int n_claimed_ = 0;                      // 0: the brakes hold (the model is not stepped)
  bool braked_ = false;                    // the brakes stopped the model (velocities zeroed)
};

}  // namespace hri_controllers
