// pybind11 bindings of hri_core::safety (submodule hri_core._hri_core.safety).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "hri_core/safety.hpp"
#include "py_batch.hpp"

namespace py = pybind11;
using hri_core::py_batch::Arr;
namespace Sf = hri_core::safety;

namespace {

// a (n,) vector; joint: n counts joints (more than kMaxDof: the one message naming the limit)
std::vector<double> vec_of(const Arr& a, const char* name, py::ssize_t n, bool joint = true) {
  if (joint && a.ndim() == 1) hri_core::py_check::joints(a.shape(0), std::string("SafetyLimits: ") + name);
  if (a.ndim() != 1 || (n >= 0 && a.shape(0) != n))
    throw py::value_error(std::string("SafetyLimits: ") + name + " must be a vector of length " +
                          (n >= 0 ? std::to_string(n) : std::string("n")));
  return std::vector<double>(a.data(), a.data() + a.shape(0));
}

Sf::SafetyLimits make_limits(const Arr& q_min, const Arr& q_max, const Arr& v_max, const Arr& a_max,
                             const Arr& tau_max, const Arr& tau_rate_max, const Arr& ws_min,
                             const Arr& ws_max, double ee_speed_max, double stale_after_s) {
  static_assert(Sf::kMaxDof == hri_core::py_check::kMaxJoints);
  Sf::SafetyLimits L;
  if (q_min.ndim() != 1) throw py::value_error("SafetyLimits: q_min must be a vector of length n");
  hri_core::py_check::joints(q_min.shape(0), "SafetyLimits: q_min");
  const py::ssize_t n = q_min.shape(0);
  const auto qmin = vec_of(q_min, "q_min", n);
  L.n = static_cast<int>(n);
  const auto qmax = vec_of(q_max, "q_max", n), vm = vec_of(v_max, "v_max", n), am = vec_of(a_max, "a_max", n),
             tm = vec_of(tau_max, "tau_max", n), trm = vec_of(tau_rate_max, "tau_rate_max", n),
             wmin = vec_of(ws_min, "workspace_min", 3, false),
             wmax = vec_of(ws_max, "workspace_max", 3, false);
  for (int j = 0; j < L.n; ++j) {
    L.q_min[j] = qmin[j];
    L.q_max[j] = qmax[j];
    L.v_max[j] = vm[j];
    L.a_max[j] = am[j];
    L.tau_max[j] = tm[j];
    L.tau_rate_max[j] = trm[j];
  }
  for (int k = 0; k < 3; ++k) {
    L.workspace_min[k] = wmin[k];
    L.workspace_max[k] = wmax[k];
  }
  L.ee_speed_max = ee_speed_max;
  L.stale_after_s = stale_after_s;
  const std::string why = L.validate();
  if (!why.empty()) throw py::value_error("SafetyLimits: " + why);
  return L;
}

py::array_t<double> arr_of(const double* p, py::ssize_t m) {
  py::array_t<double> a(m);
  std::copy(p, p + m, a.mutable_data());
  return a;
}

struct PyResult {
  py::object q = py::none(), qd = py::none(), tau = py::none(), ee_pos = py::none(), ee_vel = py::none();
  uint32_t flags = 0;
  bool ok = true, rejected = false;
  double worst_ratio = 0.0;
  std::string worst_check;
  int worst_step = -1, worst_index = -1;
  py::dict counts;
  std::vector<std::string> violations;
};

void shape_of(const std::optional<Arr>& a, const char* name, py::ssize_t width, int& H, int& horizon_form) {
  if (!a) return;
  int h, form;
  if (a->ndim() == 1 && a->shape(0) == width) {
    h = 1;
    form = 0;
  } else if (a->ndim() == 2 && a->shape(1) == width) {
    h = static_cast<int>(a->shape(0));
    form = 1;
  } else {
    throw py::value_error(std::string("SafetyChecker.check: ") + name + " must be (" + std::to_string(width) +
                          ",) or (H, " + std::to_string(width) + ")");
  }
  if (H >= 0 && (h != H || form != horizon_form))
    throw py::value_error("SafetyChecker.check: all inputs must have the same horizon shape");
  H = h;
  horizon_form = form;
}

py::array_t<double> out_like(const Arr& a) {
  std::vector<py::ssize_t> shp(a.shape(), a.shape() + a.ndim());
  return py::array_t<double>(shp);
}

}  // namespace

void bind_safety(py::module_& root) {
  py::module_ m = root.def_submodule(
      "safety",
      "Safety checker: joint position/velocity/acceleration, torque and torque rate, Cartesian "
      "workspace box and end-effector speed, NaN/Inf, command staleness. Clamp AND flag: the "
      "caller must freeze/hold on any flag (result.ok is False).");

  py::dict flags;
  for (int i = 0; i < Sf::kNumFlags; ++i) flags[Sf::kFlagNames[i]] = 1u << i;
  m.attr("FLAGS") = flags;

  py::class_<Sf::SafetyLimits>(m, "SafetyLimits",
                               "Limits in SI units (rad, rad/s, rad/s^2, N·m, N·m/s, m, m/s, s); build with "
                               "SafetyLimits(**hri_core.safety.arm_limits(cfg).as_kwargs()).")
      .def(py::init(&make_limits), py::arg("q_min"), py::arg("q_max"), py::arg("v_max"), py::arg("a_max"),
           py::arg("tau_max"), py::arg("tau_rate_max"), py::arg("workspace_min"), py::arg("workspace_max"),
           py::arg("ee_speed_max"), py::arg("stale_after_s"))
      .def_property_readonly("n", [](const Sf::SafetyLimits& L) { return L.n; })
      .def_property_readonly("q_min", [](const Sf::SafetyLimits& L) { return arr_of(L.q_min, L.n); })
      .def_property_readonly("q_max", [](const Sf::SafetyLimits& L) { return arr_of(L.q_max, L.n); })
      .def_property_readonly("v_max", [](const Sf::SafetyLimits& L) { return arr_of(L.v_max, L.n); })
      .def_property_readonly("a_max", [](const Sf::SafetyLimits& L) { return arr_of(L.a_max, L.n); })
      .def_property_readonly("tau_max", [](const Sf::SafetyLimits& L) { return arr_of(L.tau_max, L.n); })
      .def_property_readonly("tau_rate_max", [](const Sf::SafetyLimits& L) { return arr_of(L.tau_rate_max, L.n); })
      .def_property_readonly("workspace_min", [](const Sf::SafetyLimits& L) { return arr_of(L.workspace_min, 3); })
      .def_property_readonly("workspace_max", [](const Sf::SafetyLimits& L) { return arr_of(L.workspace_max, 3); })
      .def_readonly("ee_speed_max", &Sf::SafetyLimits::ee_speed_max)
      .def_readonly("stale_after_s", &Sf::SafetyLimits::stale_after_s);

  py::class_<PyResult>(m, "SafetyResult",
                       "Result of SafetyChecker.check: clamped (or, if rejected, hold) outputs q, qd, tau, "
                       "ee_pos, ee_vel (None when not given); flags (bitmask of FLAGS); ok (no flag); "
                       "rejected (non-finite / stale / bad dt: outputs are the hold command); violations "
                       "(names); counts (violating entries per check); worst_check, worst_ratio "
                       "(|value|/limit, > 1 is a violation), worst_step, worst_index (joint or axis; -1 n/a).")
      .def_readonly("q", &PyResult::q)
      .def_readonly("qd", &PyResult::qd)
      .def_readonly("tau", &PyResult::tau)
      .def_readonly("ee_pos", &PyResult::ee_pos)
      .def_readonly("ee_vel", &PyResult::ee_vel)
      .def_readonly("flags", &PyResult::flags)
      .def_readonly("ok", &PyResult::ok)
      .def_readonly("rejected", &PyResult::rejected)
      .def_readonly("worst_ratio", &PyResult::worst_ratio)
      .def_readonly("worst_check", &PyResult::worst_check)
      .def_readonly("worst_step", &PyResult::worst_step)
      .def_readonly("worst_index", &PyResult::worst_index)
      .def_readonly("counts", &PyResult::counts)
      .def_readonly("violations", &PyResult::violations)
      .def("__repr__", [](const PyResult& r) {
        std::string v;
        for (const auto& s : r.violations) v += (v.empty() ? "" : ",") + s;
        return "SafetyResult(ok=" + std::string(r.ok ? "True" : "False") + ", rejected=" +
               (r.rejected ? "True" : "False") + ", violations=[" + v + "], worst=" + r.worst_check + ":" +
               std::to_string(r.worst_ratio) + ")";
      });

  py::class_<Sf::SafetyChecker>(
      m, "SafetyChecker",
      "SafetyChecker(limits: SafetyLimits). Stateful: remembers the last committed command (history) "
      "for the rate checks of the next one. Use reset(q=..., qd=..., tau=..., ee_pos=...) with the "
      "robot's measured state before the first command.")
      .def(py::init<const Sf::SafetyLimits&>(), py::arg("limits"))
      .def_property_readonly("limits", &Sf::SafetyChecker::limits)
      .def(
          "reset",
          [](Sf::SafetyChecker& c, std::optional<Arr> q, std::optional<Arr> qd, std::optional<Arr> tau,
             std::optional<Arr> ee) {
            const int n = c.limits().n;
            auto chk = [](const std::optional<Arr>& a, int w, const char* name) -> const double* {
              if (!a) return nullptr;
              if (a->ndim() != 1 || a->shape(0) != w)
                throw py::value_error(std::string("SafetyChecker.reset: ") + name + " must have shape (" +
                                      std::to_string(w) + ",)");
              return a->data();
            };
            c.reset(chk(q, n, "q"), chk(qd, n, "qd"), chk(tau, n, "tau"), chk(ee, 3, "ee_pos"));
          },
          py::arg("q") = py::none(), py::arg("qd") = py::none(), py::arg("tau") = py::none(),
          py::arg("ee_pos") = py::none(),
          "Seed the history with the measured state (None = unknown; rate checks of that part are "
          "skipped until a command is committed).")
      .def(
          "check",
          [](Sf::SafetyChecker& c, std::optional<Arr> q, double dt_s, double now_s, double stamp_s,
             std::optional<Arr> qd, std::optional<Arr> tau, std::optional<Arr> ee_pos, std::optional<Arr> ee_vel,
             int advance) {
            const int n = c.limits().n;
            int H = -1, form = -1;
            shape_of(q, "q", n, H, form);
            shape_of(qd, "qd", n, H, form);
            shape_of(tau, "tau", n, H, form);
            shape_of(ee_pos, "ee_pos", 3, H, form);
            shape_of(ee_vel, "ee_vel", 3, H, form);
            if (H < 0) throw py::value_error("SafetyChecker.check: give at least one of q, qd, tau, ee_pos, ee_vel");
            Sf::Command cmd;
            Sf::Output out;
            PyResult pr;
            cmd.horizon = H;
            cmd.dt_s = dt_s;
            cmd.now_s = now_s;
            cmd.stamp_s = stamp_s;
            py::array_t<double> oq, oqd, otau, oee, oev;
            if (q) { oq = out_like(*q); cmd.q = q->data(); out.q = oq.mutable_data(); pr.q = oq; }
            if (qd) { oqd = out_like(*qd); cmd.qd = qd->data(); out.qd = oqd.mutable_data(); pr.qd = oqd; }
            if (tau) { otau = out_like(*tau); cmd.tau = tau->data(); out.tau = otau.mutable_data(); pr.tau = otau; }
            if (ee_pos) { oee = out_like(*ee_pos); cmd.ee_pos = ee_pos->data(); out.ee_pos = oee.mutable_data(); pr.ee_pos = oee; }
            if (ee_vel) { oev = out_like(*ee_vel); cmd.ee_vel = ee_vel->data(); out.ee_vel = oev.mutable_data(); pr.ee_vel = oev; }
            const Sf::Result r = c.check(cmd, out, advance);
            pr.flags = r.flags;
            pr.ok = r.ok;
            pr.rejected = r.rejected;
            pr.worst_ratio = r.worst_ratio;
            const int wi = Sf::flag_index(r.worst_flag);
            pr.worst_check = wi >= 0 ? Sf::kFlagNames[wi] : "";
            pr.worst_step = r.worst_step;
            pr.worst_index = r.worst_index;
            for (int i = 0; i < Sf::kNumFlags; ++i) {
              if (r.flags & (1u << i)) {
                pr.violations.emplace_back(Sf::kFlagNames[i]);
                pr.counts[Sf::kFlagNames[i]] = r.counts[i];
              }
            }
            return pr;
          },
          py::arg("q") = py::none(), py::kw_only(), py::arg("dt_s"), py::arg("now_s"), py::arg("stamp_s"),
          py::arg("qd") = py::none(), py::arg("tau") = py::none(), py::arg("ee_pos") = py::none(),
          py::arg("ee_vel") = py::none(), py::arg("advance") = -1,
          R"doc(check(q=None, *, dt_s, now_s, stamp_s, qd=None, tau=None, ee_pos=None, ee_vel=None, advance=-1) -> SafetyResult

One command (arrays (n,) / (3,)) or a horizon (H, n) / (H, 3) with step dt_s [s].
Checks q_min <= q <= q_max, |dq/dt| <= v_max, |d2q/dt2| <= a_max (differences against the
previous row, row 0 against the history), |qd| <= v_max and |dqd/dt| <= a_max, |tau| <= tau_max
and |dtau/dt| <= tau_rate_max, workspace_min <= ee_pos <= workspace_max and the ee speed
(|ee_vel|, or |d ee_pos/dt| when ee_vel is absent) <= ee_speed_max, every value finite, and
|now_s - stamp_s| <= stale_after_s.  Outputs are clamped into the limits (priority position >
velocity > acceleration); a non-finite value, stale stamp or bad dt rejects the whole command
(hold outputs).  The first `advance` output rows (-1: all, 0: none) become the history.)doc")
      .def("totals", [](const Sf::SafetyChecker& c) {
        py::dict d;
        for (int i = 0; i < Sf::kNumFlags; ++i) d[Sf::kFlagNames[i]] = c.totals()[i];
        return d;
      }, "Number of check() calls that raised each flag since construction.")
      .def_property_readonly("checks_total", &Sf::SafetyChecker::checks_total)
      .def_property_readonly("rejected_total", &Sf::SafetyChecker::rejected_total)
      .def_property_readonly("has_history", &Sf::SafetyChecker::has_history);
}
