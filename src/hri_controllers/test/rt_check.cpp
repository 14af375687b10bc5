// hri_controllers_rt_check: the InteractionController outside a controller manager, on loaned
// interfaces of the arm in MuJoCo (hri_core::rt::MujocoRobot, stepped here as the controller
// manager steps a system: read, update, write), configured from the parameter file that
// `hri sim ros2-control` writes. Checks, exit code 1 with the failing check on stderr:
//   1. update() allocates nothing: operator new and malloc counted on this thread only, over
//      2000 updates while tracking a moving reference (heartbeat on), after a warm-up;
//   2. before the first heartbeat the controller holds (frozen "system stop") and ignores a
//      reference; after it the EE follows a 2 cm step of the reference;
//   3. a heartbeat saying stopped holds the measured pose while the reference moves on;
//   4. without a robot description (none is given here) the F/T sensor ft_sensor.name is absent:
//      the controller claims the joints' interfaces only and runs (the admittance sees no wrench);
//   (the arm is stepped as MujocoSystem steps it: g(q) at the measured q added to the effort where
//   the parameter file has interaction.gravity_compensation false, the hardware's compensation)
//   5. the command interfaces it claims: <joint>/effort, and with ros2_control.position_command
//      measured <joint>/position as well, which after every update() (held, following, stopped)
//      holds exactly the position read in that cycle; deactivate leaves zero effort and the
//      position commands unset (NaN).
// Usage: hri_controllers_rt_check <controllers.yaml> <q0 rad per joint...> [--ros-args ...]
// (tests/ros2/test_ros2_control.py runs it with the robot's home pose, once per interaction.law:
// --ros-args -p interaction.law:=gic)
#include <dlfcn.h>
#include <malloc.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <geometry_msgs/msg/pose_stamped.hpp>
#include <hardware_interface/loaned_command_interface.hpp>
#include <hardware_interface/loaned_state_interface.hpp>
#include <hri_interfaces/msg/interaction_state.hpp>
#include <hri_interfaces/msg/safety_stop.hpp>
#include <lifecycle_msgs/msg/state.hpp>
#include <rclcpp/rclcpp.hpp>

#include "hri_controllers/interaction_controller.hpp"

// ---- allocation counter: operator new (cpp/test/cpp/alloc_counter.hpp) and malloc, on the
// updating thread only, while armed
#define ALLOC_COUNTER_ARMED false
#include "alloc_counter.hpp"
extern "C" void* __libc_malloc(size_t);
extern "C" void* malloc(size_t n) {
  if (t_alloc_armed) ++g_allocs;
  return __libc_malloc(n);
}

namespace {
int failures = 0;
void check(bool ok, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) ++failures;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: hri_controllers_rt_check <controllers.yaml> <q0 rad per joint...> [--ros-args ...]\n");
    return 2;
  }
  rclcpp::init(1, argv);
  namespace hi = hardware_interface;
  const std::string name = "interaction_controller";
  auto ctrl = std::make_shared<hri_controllers::InteractionController>();
  std::vector<std::string> args{"--ros-args", "--params-file", argv[1]};
  std::vector<double> q0;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--ros-args") {
      args.insert(args.end(), argv + i + 1, argv + argc);
      break;
    }
    q0.push_back(std::atof(argv[i]));
  }
  rclcpp::NodeOptions opts;
  opts.arguments(args);
  if (ctrl->init(name, "", 1000, "", opts) != controller_interface::return_type::OK) {
    std::fprintf(stderr, "FAILED: init\n");
    return 1;
  }
  auto node = ctrl->get_node();
  const auto names = node->get_parameter("joints.names").as_string_array();
  const std::string model_file = node->get_parameter("model_file").as_string();
  const std::string site = node->get_parameter("interaction.ee_site").as_string();
  const int n = static_cast<int>(names.size());
  // the arm: the model stepped as MujocoSystem steps it
  mjModel* m = mj_loadModel(model_file.c_str(), nullptr);
  if (m == nullptr || static_cast<int>(q0.size()) != n) {
    std::fprintf(stderr, "FAILED: model %s not loaded, or %zu initial positions for %d joints\n", model_file.c_str(),
                 q0.size(), n);
    return 1;
  }
  mjData* d = mj_makeData(m);
  for (int j = 0; j < n; ++j) d->qpos[m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, names[j].c_str())]] = q0[j];
  hri_core::rt::MujocoRobot robot(m, d, names, site);
  hri_core::rt::RobotState rs;
  rs.resize(n);
  std::vector<double> pos(n), vel(n), eff(n, 0.0), posc(n, std::nan(""));
  std::vector<hi::LoanedStateInterface> states;
  std::vector<hi::LoanedCommandInterface> commands;
  std::vector<std::shared_ptr<hi::StateInterface>> keep_s;
  std::vector<std::shared_ptr<hi::CommandInterface>> keep_c;
  for (int j = 0; j < n; ++j) {
    keep_s.push_back(std::make_shared<hi::StateInterface>(names[j], "position", &pos[j]));
    keep_s.push_back(std::make_shared<hi::StateInterface>(names[j], "velocity", &vel[j]));
  }
  // (5) the command interfaces, in the order the controller asks for them (as the controller manager loans them)
  const auto wanted = ctrl->command_interface_configuration().names;
  int n_effort = 0, n_position = 0;
  for (const auto& w : wanted) {
    const auto slash = w.rfind('/');
    const std::string joint = w.substr(0, slash), iface = w.substr(slash + 1);
    int j = 0;
    while (j < n && names[j] != joint) ++j;
    double* v = j == n ? nullptr : iface == "effort" ? &eff[j] : iface == "position" ? &posc[j] : nullptr;
    if (v == nullptr) {
      std::fprintf(stderr, "FAILED: the controller asks for command interface %s\n", w.c_str());
      return 1;
    }
    (iface == "effort" ? n_effort : n_position) += 1;
    keep_c.push_back(std::make_shared<hi::CommandInterface>(joint, iface, v));
  }
  const std::string position_command = node->get_parameter("ros2_control.position_command").as_string();
  check(n_effort == n && n_position == (position_command == "measured" ? n : 0),
        "command interfaces claimed with ros2_control.position_command " + position_command + ": " +
            std::to_string(n_effort) + " effort, " + std::to_string(n_position) + " position");
  for (auto& s : keep_s) states.emplace_back(s);
  for (auto& c : keep_c) commands.emplace_back(c, nullptr);
  auto read = [&] {
    robot.read(rs);
    for (int j = 0; j < n; ++j) {
      pos[j] = rs.q(j);
      vel[j] = rs.dq(j);
    }
  };
  // gravity as MujocoSystem with its hardware parameter gravity_compensation: the system adds g(q)
  // at the measured q where the controller does not (the vendors' drivers' rule, docs/hardware.md)
  const bool controller_gravity = node->get_parameter("interaction.gravity_compensation").as_bool();
  std::fprintf(stderr, "ok: gravity compensated by the %s\n", controller_gravity ? "controller" : "system");
  hri_core::interaction::VecN tau(n);
  auto write = [&] {
    for (int j = 0; j < n; ++j) tau(j) = eff[j] + (controller_gravity ? 0.0 : rs.gravity(j));
    robot.write(tau);
  };
  read();
  ctrl->assign_interfaces(std::move(commands), std::move(states));
  node->configure();
  const std::string law = node->get_parameter("interaction.law").as_string();
  const std::string sensor = node->get_parameter("ft_sensor.name").as_string();
  check(ctrl->get_lifecycle_state().id() == lifecycle_msgs::msg::State::PRIMARY_STATE_INACTIVE,
        "configured with interaction.law " + law);
  // (4) the sensor is not in the (empty) robot description: not claimed
  check(ctrl->state_interface_configuration().names.size() == static_cast<size_t>(2 * n),
        "F/T sensor '" + sensor + "' absent from the robot description: " +
            std::to_string(ctrl->state_interface_configuration().names.size()) + " state interfaces claimed (joints only)");
  node->activate();
  check(ctrl->get_lifecycle_state().id() == lifecycle_msgs::msg::State::PRIMARY_STATE_ACTIVE, "activate");

  // the test's side: a stop supervisor's heartbeat and the reference, on this process's graph
  auto peer = std::make_shared<rclcpp::Node>("rt_check_peer");
  auto stop_pub = peer->create_publisher<hri_interfaces::msg::SafetyStop>("safety/stop",
                                                                          rclcpp::QoS(1).reliable().transient_local());
  auto ref_pub = peer->create_publisher<geometry_msgs::msg::PoseStamped>("interaction/reference", 10);
  hri_interfaces::msg::InteractionState last_state;
  bool have_state = false;
  auto state_sub = peer->create_subscription<hri_interfaces::msg::InteractionState>(
      "interaction/state", rclcpp::QoS(1).reliable().transient_local(),
      [&](const hri_interfaces::msg::InteractionState& s) { last_state = s, have_state = true; });
  rclcpp::executors::SingleThreadedExecutor exec;
  exec.add_node(node->get_node_base_interface());
  exec.add_node(peer);
  rclcpp::Time t(0, 0, RCL_ROS_TIME);
  const rclcpp::Duration period = rclcpp::Duration::from_nanoseconds(1000000);
  long position_cycles = 0, position_mismatches = 0;
  auto cycles = [&](int k, bool armed) {
    for (int i = 0; i < k; ++i) {
      read();
      t_alloc_armed = armed;
      ctrl->update(node->now(), period);
      t_alloc_armed = false;
      if (n_position > 0) {  // (5) the position commands: the positions read in this cycle, finite
        ++position_cycles;
        for (int j = 0; j < n; ++j) position_mismatches += !(std::isfinite(posc[j]) && posc[j] == pos[j]);
      }
      write();
    }
  };
  auto spin = [&](double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      exec.spin_some(std::chrono::milliseconds(5));
      cycles(5, false);
    }
  };
  auto ee = [&] {
    robot.read(rs);
    return Eigen::Vector3d(rs.world_T_ee.block<3, 1>(0, 3));
  };
  auto reference = [&](const Eigen::Vector3d& p, const Eigen::Matrix3d& R) {
    geometry_msgs::msg::PoseStamped msg;
    msg.header.stamp = node->now();
    msg.pose.position.x = p.x();
    msg.pose.position.y = p.y();
    msg.pose.position.z = p.z();
    const Eigen::Quaterniond q(R);
    msg.pose.orientation.x = q.x();
    msg.pose.orientation.y = q.y();
    msg.pose.orientation.z = q.z();
    msg.pose.orientation.w = q.w();
    ref_pub->publish(msg);
  };
  spin(1.0);
  const Eigen::Vector3d p0 = ee();
  robot.read(rs);
  const Eigen::Matrix3d R0 = rs.world_T_ee.topLeftCorner<3, 3>();
  // (2) no heartbeat yet: held, a reference is ignored
  reference(p0 + Eigen::Vector3d(0, -0.02, 0), R0);
  spin(1.0);
  check(have_state && last_state.frozen.rfind("system stop", 0) == 0, "held before the first heartbeat: '" + last_state.frozen + "'");
  check((ee() - p0).norm() < 0.001, "no motion before the first heartbeat");
  hri_interfaces::msg::SafetyStop hb;
  uint32_t seq = 0;
  auto heartbeat = [&](bool stopped) {
    hb.stopped = stopped;
    hb.heartbeat_seq = ++seq;
    hb.stamp = node->now();
    stop_pub->publish(hb);
  };
  for (int i = 0; i < 10; ++i) {
    heartbeat(false);
    spin(0.1);
  }
  check(last_state.frozen.empty(), "released by the heartbeat: '" + last_state.frozen + "'");
  reference(p0 + Eigen::Vector3d(0, -0.02, 0), R0);
  for (int i = 0; i < 20; ++i) {
    heartbeat(false);
    spin(0.1);
  }
  const Eigen::Vector3d p1 = ee();
  check(std::abs((p1 - p0).y() + 0.02) < 0.002, "follows a 2 cm step: dy = " + std::to_string((p1 - p0).y()));
  // (1) allocation-free update() while tracking a moving reference
  long allocs = 0;
  for (int k = 0; k < 20; ++k) {
    reference(p1 + Eigen::Vector3d(0, 0.001 * k, 0), R0);
    heartbeat(false);
    exec.spin_some(std::chrono::milliseconds(2));
    const long a0 = g_allocs.load();
    cycles(100, true);
    allocs += g_allocs.load() - a0;
  }
  check(allocs == 0, "update() allocated " + std::to_string(allocs) + " times in 2000 calls");
  // (3) stopped: holds while the reference moves on
  heartbeat(true);
  spin(0.3);
  const Eigen::Vector3d p2 = ee();
  for (int k = 0; k < 10; ++k) {
    reference(p2 + Eigen::Vector3d(0.002 * k, 0, 0), R0);
    heartbeat(true);
    spin(0.1);
  }
  check((ee() - p2).norm() < 0.001, "holds under the stop: moved " + std::to_string((ee() - p2).norm()) + " m");
  check(last_state.frozen.rfind("system stop", 0) == 0, "state says held: '" + last_state.frozen + "'");
  if (n_position > 0)
    check(position_cycles > 0 && position_mismatches == 0,
          "position commands equal the positions read in " + std::to_string(position_cycles) + " cycles (" +
              std::to_string(position_mismatches) + " joint values differ), held, following and stopped");
  node->deactivate();
  bool handed_over = true;
  for (int j = 0; j < n; ++j) handed_over &= eff[j] == 0.0 && (n_position == 0 || std::isnan(posc[j]));
  check(handed_over, n_position > 0 ? "deactivate: zero effort, position commands unset (NaN)" : "deactivate: zero effort");
  exec.remove_node(peer);
  exec.remove_node(node->get_node_base_interface());
  ctrl.reset();
  mj_deleteData(d);
  mj_deleteModel(m);
  rclcpp::shutdown();
  std::fprintf(stderr, "%s\n", failures ? "rt_check: FAILED" : "rt_check: all checks passed");
  return failures ? 1 : 0;
}
