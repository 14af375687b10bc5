// hri_core._hri_core.rt: the 1 kHz real-time loop (cpp/include/hri_core/rt.hpp) and the MuJoCo
// robot (cpp/include/hri_core/mujoco_robot.hpp, built when the mujoco wheel's headers and library
// were found: HRI_WITH_MUJOCO). The loop thread never touches Python; step(n) and stop() release
// the GIL. API: docs/realtime.md.
#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "hri_core/rt.hpp"
#include "py_check.hpp"
#ifdef HRI_WITH_MUJOCO
#include "hri_core/mujoco_robot.hpp"
#endif

namespace py = pybind11;

namespace {
namespace I = hri_core::interaction;
namespace R = hri_core::rt;
namespace Sf = hri_core::safety;
using hri_core::se3::Mat4;
using hri_core::se3::Mat6;
using hri_core::se3::Vec3;
using hri_core::se3::Vec6;

const char* const kModes[] = {"impedance", "admittance", "hybrid"};

int law_index(const std::string& law) {
  for (int i = 0; i < I::kNumLaws; ++i)
    if (law == I::kLawNames[i]) return i;
  throw std::invalid_argument("RtLoop.set_law: unknown law '" + law + "' (lie | cartesian | gic | lie_osd)");
}

int mode_index(const py::object& mode) {
  if (py::isinstance<py::str>(mode)) {
    const std::string m = mode.cast<std::string>();
    for (int i = 0; i < 3; ++i)
      if (m == kModes[i]) return i;
    throw std::invalid_argument("RtLoop.set_mode: unknown mode '" + m + "' (impedance | admittance | hybrid)");
  }
  const int i = mode.cast<int>();
  if (i < 0 || i > 2) throw std::invalid_argument("RtLoop.set_mode: mode index must be 0, 1 or 2");
  return i;
}

py::dict stats(const R::Histogram& h) {
  py::dict d;
  d["p50"] = h.quantile_us(0.50);
  d["p99"] = h.quantile_us(0.99);
  d["max"] = h.max_us();
  d["mean"] = h.mean_us();
  d["count"] = h.count();
  return d;
}

py::list flag_names(uint32_t bits, const char* const* names, int n) {
  py::list l;
  for (int i = 0; i < n; ++i)
    if (bits & (1u << i)) l.append(names[i]);
  return l;
}

/// The Python-facing loop: the RtLoop plus the references that keep its robot and checker alive.
struct PyRtLoop {
  std::unique_ptr<R::RtLoop> loop;
};

/// The state dict of `s`; `timing`: with the thread's period / cost statistics and status (a
/// lockstep state after a step has none: None).
py::dict state_dict(R::RtLoop& L, const R::LoopState& s, bool timing) {
  py::dict d;
  d["ticks"] = s.ticks;
  d["time_s"] = s.time_s;
  d["q"] = I::VecN(s.q);
  d["dq"] = I::VecN(s.dq);
  d["tau"] = I::VecN(s.tau);
  d["world_T_ee"] = Mat4(s.world_T_ee);
  d["world_T_ref"] = Mat4(s.world_T_ref);
  d["world_T_d"] = Mat4(s.world_T_d);
  d["wrench_body"] = Vec6(s.wrench_body);
  d["lam"] = Vec6(s.lam);
  d["lam_dot"] = Vec6(s.lam_dot);
  d["K"] = Mat6(s.K);
  d["D"] = Mat6(s.D);
  d["energy_j"] = s.energy_j;
  d["dissipated_j"] = s.dissipated_j;
  d["min_energy_j"] = s.min_energy_j;
  d["energy_violations"] = s.violations;
  d["pc_saturations"] = s.saturations;
  d["flags"] = flag_names(s.flags & ~I::SAFETY_FREEZE, I::kTickFlagNames, I::kNumTickFlags);
  d["flag_bits"] = s.flags;
  d["safety_flags"] = flag_names(s.safety_flags, Sf::kFlagNames, Sf::kNumFlags);
  d["safety_flag_bits"] = s.safety_flags;
  py::dict ft;
  for (int i = 0; i < I::kNumTickFlags; ++i) ft[I::kTickFlagNames[i]] = s.flag_ticks[i];
  for (int i = 0; i < Sf::kNumFlags; ++i)
    ft[(std::string("safety_") + Sf::kFlagNames[i]).c_str()] = s.safety_flag_ticks[i];
  d["flag_ticks"] = ft;
  d["sigma_min"] = s.sigma_min;
  d["mode"] = kModes[s.mode];
  d["law"] = I::kLawNames[s.law];
  d["law_blending"] = s.law_blending;
  d["law_refusals"] = s.law_refusals;
  d["frozen"] = s.frozen;
  d["missed"] = s.missed;
  d["read_failures"] = s.read_failures;
  d["commands_applied"] = s.commands_applied;
  if (!timing) {
    d["period_error_us"] = py::none();
    d["tick_cost_us"] = py::none();
    d["running"] = false;
    d["rate_hz"] = L.config().rate_hz;
    return d;
  }
  d["period_error_us"] = stats(L.period_hist());
  d["tick_cost_us"] = stats(L.cost_hist());
  const R::RtStatus& st = L.rt_status();
  py::dict rt;
  rt["sched_fifo"] = st.sched_fifo;
  rt["priority"] = st.priority;
  rt["mlockall"] = st.mlockall;
  rt["cpu"] = st.cpu;
  rt["note"] = st.note;
  d["rt"] = rt;
  d["running"] = L.running();
  d["rate_hz"] = L.config().rate_hz;
  return d;
}

#ifdef HRI_WITH_MUJOCO
/// The mjModel*/mjData* of a python mujoco MjModel and MjData, checked: TypeError unless they are
/// those types (of the mujoco module this process imported), ValueError unless `data` was made from
/// `model` (stepping a data with another model's sizes writes past its arena).
std::pair<const mjModel*, mjData*> mj_pointers(const py::object& model, const py::object& data,
                                               const std::string& what) {
  // the two classes, looked up once per process (mj_step is called at every physics step)
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<std::pair<py::object, py::object>> types;
  const auto& [model_t, data_t] = types.call_once_and_store_result([] {
    const py::module_ mujoco = py::module_::import("mujoco");
    return std::make_pair(py::object(mujoco.attr("MjModel")), py::object(mujoco.attr("MjData")));
  }).get_stored();
  if (!py::isinstance(model, model_t))
    throw py::type_error(what + ": model must be a mujoco.MjModel, got " + std::string(py::str(py::type::of(model).attr("__name__"))));
  if (!py::isinstance(data, data_t))
    throw py::type_error(what + ": data must be a mujoco.MjData, got " + std::string(py::str(py::type::of(data).attr("__name__"))));
  const auto mp = model.attr("_address").cast<uintptr_t>();
  if (data.attr("model").attr("_address").cast<uintptr_t>() != mp)
    throw py::value_error(what + ": data was made from another model (mujoco.MjData(model) of this model)");
  return {reinterpret_cast<const mjModel*>(mp), reinterpret_cast<mjData*>(data.attr("_address").cast<uintptr_t>())};
}

/// ValueError unless an array has one value per joint of the robot (after py_check's <= kMaxDof).
void dof_check(const R::RobotInterface& r, long n, const std::string& what) {
  if (n != r.dof())
    throw py::value_error(what + " has " + std::to_string(n) + " values, the robot " + std::to_string(r.dof()) +
                          " joints");
}
#endif

}  // namespace

void bind_rt(py::module_& root) {
  // every Eigen argument is checked before it is converted (py_check.hpp); the setters answer
  // False to a non-finite value (their contract), so these are not Finite<>
  using CMat4 = hri_core::py_check::Checked<Mat4>;
  using CMat6 = hri_core::py_check::Checked<Mat6>;
  using CVec6 = hri_core::py_check::Checked<Vec6>;
  using CVec3 = hri_core::py_check::Checked<Vec3>;
  using CVecN = hri_core::py_check::Checked<I::VecN>;
  using FVecN = hri_core::py_check::Finite<I::VecN>;
  py::module_ m = root.def_submodule(
      "rt", "The 1 kHz real-time loop: read -> InteractionTick -> write on a C++ thread with absolute "
            "deadlines (docs/realtime.md).");
  m.attr("TickParams") = root.attr("interaction").attr("TickParams");
#ifdef HRI_WITH_MUJOCO
  m.attr("HAS_MUJOCO") = true;
#else
  m.attr("HAS_MUJOCO") = false;
#endif

  py::class_<R::LoopConfig>(m, "LoopConfig", "Thread and timing configuration (config interaction.rt).")
      .def(py::init<>())
      .def_readwrite("rate_hz", &R::LoopConfig::rate_hz, "Hz; every tick's dt = 1 / rate_hz")
      .def_readwrite("sched_fifo", &R::LoopConfig::sched_fifo, "try SCHED_FIFO (fallback reported)")
      .def_readwrite("priority", &R::LoopConfig::priority, "SCHED_FIFO priority")
      .def_readwrite("lock_memory", &R::LoopConfig::lock_memory, "try mlockall (only if permitted)")
      .def_readwrite("cpu", &R::LoopConfig::cpu, "pin the thread to this CPU, -1 = no pinning")
      .def_readwrite("wrench_from_robot", &R::LoopConfig::wrench_from_robot,
                     "measured wrench from the robot's read() (else set_wrench)")
      .def_readwrite("max_force_n", &R::LoopConfig::max_force_n)
      .def_readwrite("max_torque_nm", &R::LoopConfig::max_torque_nm)
      .def_readwrite("trace_capacity", &R::LoopConfig::trace_capacity,
                     "ticks of wake/cost times recorded (bench; 0 = none)");

  // the fields are writable numpy views of the reading (a test may poison one entry); the
  // attributes themselves are not assignable (nothing of another size gets in)
  py::class_<R::RobotState>(m, "RobotState",
                            "One read() of a robot: q, dq, world_T_ee, body_twist (w, v), body_jacobian "
                            "(6, n), gravity g(q), coriolis c(q, dq), mass_matrix M(q) (n, n), wrench_body (moment, "
                            "force) in the EE frame, time_s (the attributes of hri_interaction's ArmState).")
      .def_property_readonly("q", [](R::RobotState& s) -> I::VecN& { return s.q; })
      .def_property_readonly("dq", [](R::RobotState& s) -> I::VecN& { return s.dq; })
      .def_property_readonly("world_T_ee", [](R::RobotState& s) -> Mat4& { return s.world_T_ee; })
      .def_property_readonly("body_twist", [](R::RobotState& s) -> Vec6& { return s.body_twist; })
      .def_property_readonly("body_jacobian", [](R::RobotState& s) -> I::MatJ& { return s.body_jacobian; })
      .def_property_readonly("gravity", [](R::RobotState& s) -> I::VecN& { return s.gravity; })
      .def_property_readonly("coriolis", [](R::RobotState& s) -> I::VecN& { return s.coriolis; })
      .def_property_readonly("mass_matrix", [](R::RobotState& s) -> I::MatN& { return s.mass_matrix; })
      .def_property_readonly("wrench_body", [](R::RobotState& s) -> Vec6& { return s.wrench_body; })
      .def_property_readonly("time_s", [](const R::RobotState& s) { return s.time_s; });

  py::class_<R::RobotInterface>(m, "RobotInterface",
                                "The read/write interface of one arm (C++ only: drivers derive from "
                                "hri_core::rt::RobotInterface, see docs/realtime.md).")
      .def_property_readonly("dof", &R::RobotInterface::dof);

#ifdef HRI_WITH_MUJOCO
  // mujoco.mj_step releases the GIL on every call: with another Python thread of the process
  // runnable (a middleware's spin thread), each step then waits for the GIL up to the interpreter's
  // switch interval (5 ms), so a Python loop of 1 ms steps falls ever further behind its clock.
  // This one holds the GIL: a Python loop of steps is preempted only between steps, as any Python.
  m.def(
      "mj_step",
      [](const py::object& model, const py::object& data, int nstep) {
        if (nstep < 0) throw py::value_error("mj_step: nstep must be >= 0, got " + std::to_string(nstep));
        const auto [mp, dp] = mj_pointers(model, data, "mj_step");
        R::mj_steps(mp, dp, nstep);
      },
      py::arg("model"), py::arg("data"), py::arg("nstep") = 1,
      "mujoco.mj_step(model, data, nstep) holding the GIL (the simulators' stepping: hri_sim.tino, "
      "hri_sim.arm_sim; docs/realtime.md \"Stepping from Python\"). TypeError unless a mujoco "
      "MjModel and MjData, ValueError when data is another model's or nstep < 0.");

  py::class_<R::MujocoRobot, R::RobotInterface>(
      m, "MujocoRobot",
      "MujocoRobot(model, data, joint_names, ee_site): the python mujoco MjModel/MjData stepped "
      "through MuJoCo's C API by the loop (one torque actuator per joint, named like the joint). "
      "While the loop thread runs it owns `data`.")
      .def(py::init([](py::object model, py::object data, const std::vector<std::string>& joints,
                       const std::string& site) {
             const auto [mp, dp] = mj_pointers(model, data, "MujocoRobot");
             return std::make_unique<R::MujocoRobot>(mp, dp, joints, site);
           }),
           py::arg("model"), py::arg("data"), py::arg("joint_names"), py::arg("ee_site"),
           py::keep_alive<1, 2>(), py::keep_alive<1, 3>())
      .def_property_readonly("timestep", &R::MujocoRobot::timestep)
      // the calls the loop makes, from Python (hri_sim.arm_sim.ArmSim, mode torque): every array
      // checked (py_check.hpp) and sized to the robot's joints before it reaches the model
      .def(
          "read",
          [](R::MujocoRobot& r) {
            R::RobotState s;
            s.resize(r.dof());
            r.read(s);
            return s;
          },
          "RobotState of the current model state (nothing stepped)")
      .def(
          "write",
          [](R::MujocoRobot& r, const FVecN& tau) {
            dof_check(r, tau->size(), "MujocoRobot.write: tau");
            r.write(tau);
          },
          py::arg("tau"), "joint torques for one physics step (mj_step2 then mj_step1); finite, one per joint")
      .def(
          "set_external_wrench",
          [](R::MujocoRobot& r, const CVec3& f, const CVec3& t) {
            if (!f->allFinite() || !t->allFinite()) return false;
            r.set_external_wrench(f, t);
            return true;
          },
          py::arg("force_world"), py::arg("torque_world"),
          "scripted push on the EE (world frame, force at the site point) from the next write; "
          "False (and the last one kept) when not finite")
      .def(
          "set_state",
          [](R::MujocoRobot& r, const CVecN& q, const CVecN& dq) {
            dof_check(r, q->size(), "MujocoRobot.set_state: q");
            dof_check(r, dq->size(), "MujocoRobot.set_state: dq");
            r.set_state(q, dq);
          },
          py::arg("q"), py::arg("dq"),
          "the model at a measured (q, dq), not stepped (position and velocity stages recomputed)");
#endif

  py::class_<PyRtLoop>(
      m, "RtLoop",
      "RtLoop(params: TickParams, config: LoopConfig, robot, world_T_d=None, safety=None): the 1 kHz "
      "loop. start()/stop() run it on a real-time thread (absolute deadlines); step(n) runs n "
      "ticks in lockstep on the caller's thread. Setters are lock-free (applied at the next tick).")
      .def(py::init([](const I::TickParams& p, const R::LoopConfig& c, R::RobotInterface* robot,
                       std::optional<CMat4> world_T_d, std::optional<Sf::SafetyChecker*> safety) {
             Sf::SafetyChecker* chk = safety ? *safety : nullptr;
             if (const char* e = I::params_error(p, chk)) throw std::invalid_argument(e);
             if (robot == nullptr) throw std::invalid_argument("RtLoop: robot is None");
             if (robot->dof() != p.n)
               throw std::invalid_argument("RtLoop: robot has " + std::to_string(robot->dof()) +
                                           " joints, params.n = " + std::to_string(p.n));
             if (!(c.rate_hz > 0 && std::isfinite(c.rate_hz)))
               throw std::invalid_argument("RtLoop: rate_hz must be finite and > 0");
#ifdef HRI_WITH_MUJOCO
             if (auto* mj = dynamic_cast<R::MujocoRobot*>(robot)) {
               if (std::abs(mj->timestep() * c.rate_hz - 1.0) > 1e-9)
                 throw std::invalid_argument("RtLoop: MuJoCo timestep " + std::to_string(mj->timestep()) +
                                             " s != 1 / rate_hz");
             }
#endif
             if (world_T_d && !(**world_T_d).allFinite())
               throw std::invalid_argument("RtLoop: world_T_d must be finite");
             auto L = std::make_unique<PyRtLoop>();
             L->loop = std::make_unique<R::RtLoop>(p, c, robot, world_T_d ? &**world_T_d : nullptr, chk);
             return L;
           }),
           py::arg("params"), py::arg("config"), py::arg("robot"), py::arg("world_T_d") = py::none(),
           py::arg("safety") = py::none(), py::keep_alive<1, 4>(), py::keep_alive<1, 6>())
      .def("start", [](PyRtLoop& L) { L.loop->start(); }, py::call_guard<py::gil_scoped_release>(),
           "spawn the real-time thread (no-op when running)")
      .def("stop", [](PyRtLoop& L) { L.loop->stop(); }, py::call_guard<py::gil_scoped_release>(),
           "stop and join the thread (idempotent)")
      .def_property_readonly("running", [](PyRtLoop& L) { return L.loop->running(); })
      .def_property_readonly("dt", [](PyRtLoop& L) { return L.loop->dt(); })
      .def(
          "step",
          [](PyRtLoop& L, long n) {
            if (n < 0) throw std::invalid_argument("RtLoop.step: n must be >= 0");
            py::gil_scoped_release nogil;
            L.loop->step(n);
          },
          py::arg("n") = 1, "n ticks in lockstep (no thread, no sleep); RuntimeError while running")
      .def(
          "set_target",
          [](PyRtLoop& L, const CMat4& T) {
            if (!T->allFinite()) return false;
            L.loop->set_target(T);
            return true;
          },
          py::arg("world_T_target"))
      .def(
          "set_gains",
          [](PyRtLoop& L, const CMat6& K, const CMat6& D, double blend_s) {
            if (!K->allFinite() || !D->allFinite() || !std::isfinite(blend_s)) return false;
            L.loop->set_gains(K, D, blend_s);
            return true;
          },
          py::arg("K"), py::arg("D"), py::arg("blend_s"))
      .def(
          "set_admittance",
          [](PyRtLoop& L, const CMat6& M, const CMat6& D, const CMat6& K) {
            if (!M->allFinite() || !D->allFinite() || !K->allFinite()) return false;
            L.loop->set_admittance(M, D, K);
            return true;
          },
          py::arg("M"), py::arg("D"), py::arg("K"))
      .def(
          "set_mode",
          [](PyRtLoop& L, const py::object& mode, double settle_s) {
            L.loop->set_mode(mode_index(mode), std::isfinite(settle_s) ? settle_s : -1.0);
            return true;
          },
          py::arg("mode"), py::arg("settle_s") = -1.0,
          "mode name or index; settle_s: tightened twist bound for this long from the next tick")
      .def("set_frozen", [](PyRtLoop& L, bool f) { L.loop->set_frozen(f); }, py::arg("frozen"))
      .def(
          "set_law",
          [](PyRtLoop& L, const std::string& law, double blend_s) {
            L.loop->set_law(law_index(law),
                            std::isfinite(blend_s) ? blend_s : 0.0);
            return true;
          },
          py::arg("law"), py::arg("blend_s") = 0.0,
          "the torque law from the next tick on, the command blended over blend_s (the tick checks "
          "interaction.law_switch_error there again: refused = unchanged, counted in law_refusals)")
      .def("hold", [](PyRtLoop& L, bool on) { L.loop->hold(on); }, py::arg("on"),
           "the stop input: True = hold the EE pose measured at the next tick (reference and target "
           "re-anchored there, admittance zeroed, frozen); False = release (no jump back)")
      .def(
          "set_wrench",
          [](PyRtLoop& L, const CVec6& w, bool ok) {
            const bool fin = w->allFinite();
            L.loop->set_wrench(fin ? Vec6(*w) : Vec6(Vec6::Zero()), ok && fin);
            return fin;
          },
          py::arg("wrench_body"), py::arg("ok") = true)
      .def(
          "set_push",
          [](PyRtLoop& L, const CVec3& f, const CVec3& t) {
            if (!f->allFinite() || !t->allFinite()) return false;
            L.loop->set_push(f, t);
            return true;
          },
          py::arg("force_world"), py::arg("torque_world") = Vec3::Zero())
      .def("reset_filter", [](PyRtLoop& L) { L.loop->reset_filter(); })
      .def("reset_stats", [](PyRtLoop& L) { L.loop->reset_stats(); })
      .def(
          "state",
          [](PyRtLoop& L) {
            R::LoopState s;
            L.loop->state(s);
            return state_dict(*L.loop, s, true);
          },
          "snapshot dict (docs/realtime.md): q, dq, world_T_ee, wrench_body as the last tick read them")
      .def(
          "state_after_step",
          [](PyRtLoop& L) {
            R::LoopState s;
            L.loop->state_after_step(s);
            return state_dict(*L.loop, s, false);
          },
          "lockstep: the state dict with q, dq, world_T_ee, wrench_body of the arm after the last step "
          "(the robot read now), period_error_us / tick_cost_us None; RuntimeError while running")
      .def("apply_pending", [](PyRtLoop& L) { L.loop->apply_pending(); },
           "lockstep: the commands given so far taken now (as the next tick would first) and shown "
           "in state(); RuntimeError while running")
      .def(
          "last_tau",
          [](PyRtLoop& L) { return I::VecN(L.loop->last_tau()); },
          "lockstep: the last tick's command (N·m per joint); RuntimeError while running")
      .def(
          "trace",
          [](PyRtLoop& L) {
            if (L.loop->running()) throw std::runtime_error("RtLoop.trace: stop() the loop first");
            const size_t n = L.loop->trace_len();
            py::array_t<int64_t> wake(n), cost(n);
            std::copy(L.loop->trace_wake_ns().begin(), L.loop->trace_wake_ns().begin() + n, wake.mutable_data());
            std::copy(L.loop->trace_cost_ns().begin(), L.loop->trace_cost_ns().begin() + n, cost.mutable_data());
            py::dict d;
            d["wake_ns"] = wake;
            d["cost_ns"] = cost;
            return d;
          },
          "after stop(): wake times and cycle costs (ns, CLOCK_MONOTONIC) of the first trace_capacity ticks");
}
