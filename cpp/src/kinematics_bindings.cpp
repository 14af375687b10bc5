// pybind11 bindings of hri_core::kinematics (submodule hri_core._hri_core.kinematics).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "hri_core/kinematics.hpp"
#include "py_batch.hpp"

namespace py = pybind11;
using namespace hri_core::py_batch;
namespace K = hri_core::kinematics;

namespace {

K::VecN vecn(const Arr& a, int n, const char* what) {
  if (a.ndim() != 1 || a.shape(0) != n)
    throw py::value_error(std::string(what) + " must have shape (" + std::to_string(n) + ",), got " + shape_str(a));
  K::VecN v(n);
  for (int i = 0; i < n; ++i) v[i] = a.data()[i];
  return v;
}

K::Mat4 mat4(const Arr& a, const char* what) {
  if (a.ndim() != 2 || a.shape(0) != 4 || a.shape(1) != 4)
    throw py::value_error(std::string(what) + " must have shape (4, 4), got " + shape_str(a));
  return CRowMap<4, 4>(a.data());
}

K::PoeModel make_model(const Arr& screws, const Arr& home) {
  static_assert(K::kMaxDof == hri_core::py_check::kMaxJoints);
  if (screws.ndim() != 2 || screws.shape(1) != 6)
    throw py::value_error("PoeModel: screws must have shape (n, 6) (rows (w, v)), got " + shape_str(screws));
  hri_core::py_check::joints(screws.shape(0), "PoeModel: screws of shape " + shape_str(screws));
  const int n = static_cast<int>(screws.shape(0));
  K::Screws S(6, n);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < 6; ++k) S(k, i) = screws.data()[i * 6 + k];
  const K::Mat4 M = mat4(home, "PoeModel: home");
  if (!S.allFinite() || !M.allFinite()) throw py::value_error("PoeModel: screws and home must be finite");
  return K::PoeModel(S, M);
}

py::array_t<double> jac_out(const K::Jac& J) {
  py::array_t<double> a({py::ssize_t(6), py::ssize_t(J.cols())});
  Eigen::Map<Eigen::Matrix<double, 6, Eigen::Dynamic, Eigen::RowMajor>>(a.mutable_data(), 6, J.cols()) = J;
  return a;
}

py::array_t<double> mat4_out(const K::Mat4& T) {
  py::array_t<double> a({4, 4});
  RowMap<4, 4>{a.mutable_data()} = T;
  return a;
}

// q: (n,) -> single; (N, n) -> batch: returns stacked outputs.
template <class F>
py::array per_q(const K::PoeModel& m, const Arr& q, const std::vector<ssize>& out_trailing, F f) {
  const ssize n = m.dof();
  return map_n<1>("PoeModel", {Arg{&q, {n}}}, out_trailing, [&](const auto& p, double* o) {
    K::VecN qq(n);
    for (ssize i = 0; i < n; ++i) qq[i] = p[0][i];
    f(qq, o);
  });
}

}  // namespace

// ------------------------------------------------------------------ single-q fast path
// fk / fk_jacobian_body / fk_jacobian_space / jacobian_body / jacobian_space are replaced by
// METH_FASTCALL method descriptors handling q as a float64 (n,) ndarray without the pybind11
// dispatcher; anything else (batches, lists, keywords) goes to the general method (_<name>_generic).
namespace kfast {
enum Which { FK = 0, FKJB, FKJS, JB, JS, NWHICH };
PyObject* g_generic[NWHICH] = {};

template <int W>
PyObject* call(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kw) {
  if (nargs == 1 && kw == nullptr) {
    const K::PoeModel* m = nullptr;
    try {
      m = &py::cast<const K::PoeModel&>(py::handle(self));
    } catch (...) {
      m = nullptr;
    }
    if (m) {
      const int n = m->dof();
      if (const double* qp = np_single(args[0], 1, n)) {
        const K::VecN q = Eigen::Map<const K::VecN>(qp, n);
        double *to, *jo;
        if (W == FK) {
          PyObject* T = np_new(2, 4, 4, &to);
          if (!T) return nullptr;
          RowMap<4, 4>{to} = m->fk(q);
          return T;
        }
        K::Mat4 T;
        K::Jac J;
        if (W == FKJB || W == JB) m->fk_jacobian_body(q, T, J);
        else m->fk_jacobian_space(q, T, J);
        PyObject* Jo = np_new(2, 6, n, &jo);
        if (!Jo) return nullptr;
        Eigen::Map<Eigen::Matrix<double, 6, Eigen::Dynamic, Eigen::RowMajor>>(jo, 6, n) = J;
        if (W == JB || W == JS) return Jo;
        PyObject* To = np_new(2, 4, 4, &to);
        if (!To) {
          Py_DECREF(Jo);
          return nullptr;
        }
        RowMap<4, 4>{to} = T;
        PyObject* tup = PyTuple_New(2);
        if (!tup) {
          Py_DECREF(Jo);
          Py_DECREF(To);
          return nullptr;
        }
        PyTuple_SET_ITEM(tup, 0, To);
        PyTuple_SET_ITEM(tup, 1, Jo);
        return tup;
      }
    }
  }
  // general path: generic(self, *args, **kw)
  PyObject* buf[16];
  const Py_ssize_t nkw = kw ? PyTuple_GET_SIZE(kw) : 0;  // keyword values follow the positionals
  if (nargs + nkw > 15) return PyErr_Format(PyExc_TypeError, "too many arguments");
  buf[0] = self;
  for (Py_ssize_t i = 0; i < nargs + nkw; ++i) buf[i + 1] = args[i];
  return PyObject_Vectorcall(g_generic[W], buf, static_cast<size_t>(nargs + 1), kw);
}

template <int W>
void install(py::object cls, const char* name, const char* doc) {
  static PyMethodDef def{name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&call<W>)),
                         METH_FASTCALL | METH_KEYWORDS, doc};
  py::object generic = cls.attr("__dict__")[name];
  cls.attr((std::string("_") + name + "_generic").c_str()) = generic;
  g_generic[W] = generic.release().ptr();
  PyObject* d = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), &def);
  if (!d) throw py::error_already_set();
  cls.attr(name) = py::reinterpret_steal<py::object>(d);
}
}  // namespace kfast

void bind_kinematics(py::module_& root) {
  py::module_ m = root.def_submodule(
      "kinematics",
      "Product-of-exponentials kinematics (Chang 2026 app. B): T(q) = exp([S1]q1)...exp([Sn]qn) M, "
      "Jacobian rows (w, v), damped-least-squares IK.");

  py::class_<K::IkResult>(m, "IkResult", "q (n,), success, iterations, err_w [rad], err_v [m].")
      .def_property_readonly("q", [](const K::IkResult& r) {
        py::array_t<double> a(r.q.size());
        for (int i = 0; i < r.q.size(); ++i) a.mutable_data()[i] = r.q[i];
        return a;
      })
      .def_readonly("success", &K::IkResult::success)
      .def_readonly("iterations", &K::IkResult::iterations)
      .def_readonly("err_w", &K::IkResult::err_w)
      .def_readonly("err_v", &K::IkResult::err_v)
      .def("__repr__", [](const K::IkResult& r) {
        return "IkResult(success=" + std::string(r.success ? "True" : "False") + ", iterations=" +
               std::to_string(r.iterations) + ", err_w=" + std::to_string(r.err_w) + ", err_v=" +
               std::to_string(r.err_v) + ")";
      });

  auto cls = py::class_<K::PoeModel>(m, "_PoeModel", "Compiled POE model; use hri_core.kinematics.PoeModel.");
  cls
      .def(py::init(&make_model), py::arg("screws"), py::arg("home"),
           "screws: (n, 6) space screws (w, v) at q = 0 (one row per joint); home: (4, 4) ee pose at q = 0.")
      .def_property_readonly("dof", &K::PoeModel::dof)
      .def_property_readonly("screws", [](const K::PoeModel& p) {
        py::array_t<double> a({py::ssize_t(p.dof()), py::ssize_t(6)});
        for (int i = 0; i < p.dof(); ++i)
          for (int k = 0; k < 6; ++k) a.mutable_data()[i * 6 + k] = p.screws()(k, i);
        return a;
      })
      .def_property_readonly("home", [](const K::PoeModel& p) { return mat4_out(p.home()); })
      .def(
          "fk",
          [](const K::PoeModel& p, const Arr& q) {
            return per_q(p, q, {4, 4}, [&](const K::VecN& qq, double* o) { RowMap<4, 4>{o} = p.fk(qq); });
          },
          py::arg("q"), "fk(q: (n,) | (N, n)) -> (4, 4) | (N, 4, 4): base_T_ee.")
      .def(
          "jacobian_space",
          [](const K::PoeModel& p, const Arr& q) {
            const ssize n = p.dof();
            return per_q(p, q, {6, n}, [&](const K::VecN& qq, double* o) {
              Eigen::Map<Eigen::Matrix<double, 6, Eigen::Dynamic, Eigen::RowMajor>>(o, 6, n) = p.jacobian_space(qq);
            });
          },
          py::arg("q"), "jacobian_space(q) -> (6, n) | (N, 6, n): space Jacobian, rows (w, v).")
      .def(
          "jacobian_body",
          [](const K::PoeModel& p, const Arr& q) {
            const ssize n = p.dof();
            return per_q(p, q, {6, n}, [&](const K::VecN& qq, double* o) {
              Eigen::Map<Eigen::Matrix<double, 6, Eigen::Dynamic, Eigen::RowMajor>>(o, 6, n) = p.jacobian_body(qq);
            });
          },
          py::arg("q"), "jacobian_body(q) -> (6, n) | (N, 6, n): body Jacobian = Ad(T^-1) J_s, rows (w, v).")
      .def(
          "fk_jacobian_body",
          [](const K::PoeModel& p, const Arr& q) {
            K::Mat4 T;
            K::Jac J;
            p.fk_jacobian_body(vecn(q, p.dof(), "q"), T, J);
            return py::make_tuple(mat4_out(T), jac_out(J));
          },
          py::arg("q"), "fk_jacobian_body(q: (n,)) -> (T (4, 4), J_b (6, n)) in one pass.")
      .def(
          "fk_jacobian_space",
          [](const K::PoeModel& p, const Arr& q) {
            K::Mat4 T;
            K::Jac J;
            p.fk_jacobian_space(vecn(q, p.dof(), "q"), T, J);
            return py::make_tuple(mat4_out(T), jac_out(J));
          },
          py::arg("q"), "fk_jacobian_space(q: (n,)) -> (T (4, 4), J_s (6, n)) in one pass.")
      .def(
          "manipulability",
          [](const K::PoeModel& p, const Arr& q) { return K::PoeModel::manipulability(p.jacobian_space(vecn(q, p.dof(), "q"))); },
          py::arg("q"), "manipulability(q) -> sqrt(det(J J^T)) (position rows if n < 6); frame invariant.")
      .def(
          "condition_number",
          [](const K::PoeModel& p, const Arr& q) { return K::PoeModel::condition_number(p.jacobian_body(vecn(q, p.dof(), "q"))); },
          py::arg("q"), "condition_number(q) -> sigma_max / sigma_min of J_b (inf if singular).")
      .def(
          "ik_dls",
          [](const K::PoeModel& p, const Arr& target, const Arr& q0, double eps_w, double eps_v, double damping,
             int max_iterations, double nullspace_gain, double step_max, double lm_increase, double lm_decrease,
             std::optional<Arr> q_posture, std::optional<Arr> q_min, std::optional<Arr> q_max) {
            const int n = p.dof();
            K::IkParams prm{eps_w, eps_v, damping, max_iterations, nullspace_gain, step_max, lm_increase, lm_decrease};
            if (!(eps_w > 0 && eps_v > 0 && damping >= 0 && max_iterations >= 0 && lm_increase > 1.0 &&
                  lm_decrease > 0.0 && lm_decrease <= 1.0))
              throw py::value_error(
                  "ik_dls: eps_w, eps_v > 0, damping >= 0, max_iterations >= 0, lm_increase > 1, "
                  "0 < lm_decrease <= 1");
            std::optional<K::VecN> qp, lo, hi;
            if (q_posture) qp = vecn(*q_posture, n, "q_posture");
            if (q_min) lo = vecn(*q_min, n, "q_min");
            if (q_max) hi = vecn(*q_max, n, "q_max");
            const K::Mat4 Td = mat4(target, "target");
            const K::VecN q = vecn(q0, n, "q0");
            if (!Td.allFinite() || !q.allFinite()) throw py::value_error("ik_dls: non-finite target or q0");
            return p.ik_dls(Td, q, prm, qp ? &*qp : nullptr, lo ? &*lo : nullptr, hi ? &*hi : nullptr);
          },
          py::arg("target"), py::arg("q0"), py::kw_only(), py::arg("eps_w"), py::arg("eps_v"), py::arg("damping"),
          py::arg("max_iterations"), py::arg("nullspace_gain"), py::arg("step_max"), py::arg("lm_increase"),
          py::arg("lm_decrease"), py::arg("q_posture") = py::none(), py::arg("q_min") = py::none(), py::arg("q_max") = py::none(),
          "Raw IK: damped least squares with adaptive (Levenberg-Marquardt) damping and an active set at "
          "the joint limits (every parameter explicit); use PoeModel.ik_dls for config defaults.");
  kfast::install<kfast::FK>(cls, "fk", "fk(q: (n,) | (N, n)) -> (4, 4) | (N, 4, 4): base_T_ee.");
  kfast::install<kfast::FKJB>(cls, "fk_jacobian_body", "fk_jacobian_body(q: (n,)) -> (T (4, 4), J_b (6, n)) in one pass.");
  kfast::install<kfast::FKJS>(cls, "fk_jacobian_space", "fk_jacobian_space(q: (n,)) -> (T (4, 4), J_s (6, n)) in one pass.");
  kfast::install<kfast::JB>(cls, "jacobian_body", "jacobian_body(q) -> (6, n) | (N, 6, n): body Jacobian = Ad(T^-1) J_s, rows (w, v).");
  kfast::install<kfast::JS>(cls, "jacobian_space", "jacobian_space(q) -> (6, n) | (N, 6, n): space Jacobian, rows (w, v).");
}
