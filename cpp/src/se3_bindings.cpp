// pybind11 bindings of hri_core::se3 (submodule hri_core._hri_core.se3).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "hri_core/se3.hpp"
#include "py_batch.hpp"

namespace py = pybind11;
using namespace hri_core::py_batch;
namespace S = hri_core::se3;

namespace {

// Unary: in trailing shape -> out trailing shape.  `out=` (keyword-only) writes into a caller's
// float64 C-contiguous array of the result shape (no allocation) and returns it; large batches
// run with the GIL released, over threads (py_batch.hpp map_n, parallel=true).
template <int IR, int IC, int OR, int OC, class F>
void def1(py::module_& m, const char* name, F fn, const char* doc) {
  std::vector<ssize> tin = IC == 1 ? std::vector<ssize>{IR} : std::vector<ssize>{IR, IC};
  std::vector<ssize> tout = OC == 1 ? std::vector<ssize>{OR} : std::vector<ssize>{OR, OC};
  m.def(
      name,
      [name, fn, tin, tout](const Arr& x, const py::object& out) {
        return map_n<1>(
            name, {Arg{&x, tin}}, tout,
            [&](const auto& p, double* o) { RowMap<OR, OC>{o} = fn(CRowMap<IR, IC>(p[0])); }, out,
            /*parallel=*/true);
      },
      py::arg("x"), py::kw_only(), py::arg("out") = py::none(), doc);
}

}  // namespace

// ------------------------------------------------------------------ single-call fast path
// exp/log/compose/inverse/so3_exp/so3_log are replaced by METH_FASTCALL functions that handle the
// common single case (a C-contiguous float64 ndarray of the exact single shape) without the
// pybind11 dispatcher, and forward everything else (batches, lists, other dtypes, keywords) to the
// general pybind11 implementation (kept as _<name>_generic).
namespace fast {
// the single shape (r,) (c == 1) or (r, c): py_batch's np_single / np_new
inline const double* single(PyObject* o, int r, int c) { return np_single(o, c == 1 ? 1 : 2, r, c); }
inline PyObject* new_out(int r, int c, double** data) { return np_new(c == 1 ? 1 : 2, r, c, data); }

template <int IR, int IC, int OR, int OC, class Fn>
struct F1 {
  static inline PyObject* slow = nullptr;
  static PyObject* call(PyObject*, PyObject* const* args, size_t nargsf, PyObject* kw) {
    if (PyVectorcall_NARGS(nargsf) == 1 && kw == nullptr) {
      if (const double* x = single(args[0], IR, IC)) {
        double* o;
        PyObject* out = new_out(OR, OC, &o);
        if (!out) return nullptr;
        RowMap<OR, OC>{o} = Fn::f(CRowMap<IR, IC>(x));
        return out;
      }
    }
    return PyObject_Vectorcall(slow, args, nargsf, kw);
  }
};

template <int R, int C, int OR, int OC, class Fn>
struct F2 {
  static inline PyObject* slow = nullptr;
  static PyObject* call(PyObject*, PyObject* const* args, size_t nargsf, PyObject* kw) {
    if (PyVectorcall_NARGS(nargsf) == 2 && kw == nullptr) {
      const double* a = single(args[0], R, C);
      const double* b = a ? single(args[1], R, C) : nullptr;
      if (b) {
        double* o;
        PyObject* out = new_out(OR, OC, &o);
        if (!out) return nullptr;
        RowMap<OR, OC>{o} = Fn::f(CRowMap<R, C>(a), CRowMap<R, C>(b));
        return out;
      }
    }
    return PyObject_Vectorcall(slow, args, nargsf, kw);
  }
};

struct Exp { static S::Mat4 f(const S::Vec6& x) { return S::exp(x); } };
struct Log { static S::Vec6 f(const S::Mat4& x) { return S::log(x); } };
struct Inv { static S::Mat4 f(const S::Mat4& x) { return S::inverse(x); } };
struct So3Exp { static S::Mat3 f(const S::Vec3& x) { return S::so3_exp(x); } };
struct So3Log { static S::Vec3 f(const S::Mat3& x) { return S::so3_log(x); } };
struct Compose {
  template <class A, class B>
  static S::Mat4 f(const A& a, const B& b) {
    S::Mat4 T;
    T.noalias() = a * b;
    return T;
  }
};

template <class FT>
void install(py::module_& m, const char* name, const char* doc) {
  static PyMethodDef def{name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&FT::call)),
                         METH_FASTCALL | METH_KEYWORDS, doc};
  py::object generic = m.attr(name);
  m.attr((std::string("_") + name + "_generic").c_str()) = generic;
  FT::slow = generic.release().ptr();  // kept alive for the module's lifetime
  py::object modname = m.attr("__name__");
  PyObject* f = PyCFunction_NewEx(&def, nullptr, modname.ptr());
  if (!f) throw py::error_already_set();
  m.attr(name) = py::reinterpret_steal<py::object>(f);
}
}  // namespace fast

void bind_se3(py::module_& root) {
  py::module_ m = root.def_submodule(
      "se3", "SE(3)/SO(3) Lie-group toolkit. Twist order (w, v), angular first. Every function "
             "accepts a single argument or a batch (..., shape) and broadcasts single arguments.");

  def1<6, 1, 4, 4>(m, "exp", [](const auto& x) { return S::exp(x); },
                   "exp(xi: (...,6)) -> (...,4,4): T = exp(hat(xi)), xi = (w, v).");
  def1<4, 4, 6, 1>(m, "log", [](const auto& x) { return S::log(x); },
                   "log(T: (...,4,4)) -> (...,6): principal log, |w| <= pi, log(exp(xi)) = xi.");
  def1<3, 1, 3, 3>(m, "so3_exp", [](const auto& x) { return S::so3_exp(x); },
                   "so3_exp(w: (...,3)) -> (...,3,3): Rodrigues R = I + sin(th)/th W + (1-cos th)/th^2 W^2.");
  def1<3, 3, 3, 1>(m, "so3_log", [](const auto& x) { return S::so3_log(x); },
                   "so3_log(R: (...,3,3)) -> (...,3): rotation vector, |w| in [0, pi] (exact near 0 and pi).");
  def1<4, 4, 4, 4>(m, "inverse", [](const auto& x) { return S::inverse(x); },
                   "inverse(T: (...,4,4)) -> (...,4,4): [[R^T, -R^T p], [0, 1]].");
  def1<4, 4, 6, 6>(m, "adjoint", [](const auto& x) { return S::adjoint(x); },
                   "adjoint(T: (...,4,4)) -> (...,6,6): Ad_T = [[R, 0], [p^ R, R]], Ad_T xi = vee(T hat(xi) T^-1).");
  def1<6, 1, 6, 6>(m, "ad", [](const auto& x) { return S::ad(x); },
                   "ad(xi: (...,6)) -> (...,6,6): [[w^, 0], [v^, w^]], ad(a) b = Lie bracket [a, b].");
  def1<6, 1, 6, 6>(m, "left_jacobian", [](const auto& x) { return S::left_jacobian(x); },
                   "left_jacobian(xi: (...,6)) -> (...,6,6): J_l = sum ad^k/(k+1)! = dexp_xi; "
                   "exp(xi + d) ~ exp(J_l d) exp(xi).");
  def1<6, 1, 6, 6>(m, "left_jacobian_inv", [](const auto& x) { return S::left_jacobian_inv(x); },
                   "left_jacobian_inv(xi: (...,6)) -> (...,6,6): J_l(xi)^-1 (closed form).");
  def1<6, 1, 6, 6>(m, "right_jacobian", [](const auto& x) { return S::right_jacobian(x); },
                   "right_jacobian(xi: (...,6)) -> (...,6,6): J_r(xi) = J_l(-xi); "
                   "exp(xi + d) ~ exp(xi) exp(J_r d).");
  def1<6, 1, 6, 6>(m, "right_jacobian_inv", [](const auto& x) { return S::right_jacobian_inv(x); },
                   "right_jacobian_inv(xi: (...,6)) -> (...,6,6): J_r(xi)^-1.");
  def1<3, 1, 3, 3>(m, "so3_left_jacobian", [](const auto& x) { return S::so3_left_jacobian(x); },
                   "so3_left_jacobian(w: (...,3)) -> (...,3,3): I + B W + C W^2.");
  def1<3, 1, 3, 3>(m, "so3_left_jacobian_inv", [](const auto& x) { return S::so3_left_jacobian_inv(x); },
                   "so3_left_jacobian_inv(w: (...,3)) -> (...,3,3): I - W/2 + D W^2.");
  def1<3, 1, 3, 3>(m, "so3_right_jacobian", [](const auto& x) { return S::so3_right_jacobian(x); },
                   "so3_right_jacobian(w: (...,3)) -> (...,3,3): J_l(-w).");
  def1<3, 1, 3, 3>(m, "so3_right_jacobian_inv", [](const auto& x) { return S::so3_right_jacobian_inv(x); },
                   "so3_right_jacobian_inv(w: (...,3)) -> (...,3,3): J_l(-w)^-1.");
  def1<4, 1, 3, 3>(m, "quat_to_rot", [](const auto& x) { return S::quat_to_rot(x); },
                   "quat_to_rot(q: (...,4) in ROS order (x, y, z, w)) -> (...,3,3); q is normalised first.");
  def1<3, 3, 4, 1>(m, "rot_to_quat", [](const auto& x) { return S::rot_to_quat(x); },
                   "rot_to_quat(R: (...,3,3)) -> (...,4): unit quaternion (x, y, z, w), w >= 0.");

  m.def(
      "hat",
      [](const Arr& x) -> py::array {
        const ssize last = x.ndim() ? x.shape(x.ndim() - 1) : 0;
        if (last == 3)
          return map_n<1>("hat", {Arg{&x, {3}}}, {3, 3},
                          [](const auto& p, double* o) { RowMap<3, 3>{o} = S::hat3(CRowMap<3, 1>(p[0])); });
        return map_n<1>("hat", {Arg{&x, {6}}}, {4, 4},
                        [](const auto& p, double* o) { RowMap<4, 4>{o} = S::hat6(CRowMap<6, 1>(p[0])); });
      },
      py::arg("x"),
      "hat(x: (...,3) -> (...,3,3) skew matrix | (...,6) twist (w, v) -> (...,4,4) [[w^, v], [0, 0]]).");
  m.def(
      "vee",
      [](const Arr& X) -> py::array {
        const ssize last = X.ndim() ? X.shape(X.ndim() - 1) : 0;
        if (last == 3)
          return map_n<1>("vee", {Arg{&X, {3, 3}}}, {3},
                          [](const auto& p, double* o) { RowMap<3, 1>{o} = S::vee3(CRowMap<3, 3>(p[0])); });
        return map_n<1>("vee", {Arg{&X, {4, 4}}}, {6},
                        [](const auto& p, double* o) { RowMap<6, 1>{o} = S::vee6(CRowMap<4, 4>(p[0])); });
      },
      py::arg("X"), "vee(X: (...,3,3) -> (...,3) | (...,4,4) -> (...,6) twist (w, v)); inverse of hat.");
  m.def(
      "left_jacobian_dot",
      [](const Arr& xi, const Arr& xid) {
        return map_n<2>("left_jacobian_dot", {Arg{&xi, {6}}, Arg{&xid, {6}}}, {6, 6}, [](const auto& p, double* o) {
          RowMap<6, 6>{o} = S::left_jacobian_dot(CRowMap<6, 1>(p[0]), CRowMap<6, 1>(p[1]));
        });
      },
      py::arg("xi"), py::arg("xi_dot"),
      "left_jacobian_dot(xi: (...,6), xi_dot: (...,6)) -> (...,6,6): d/dt J_l(xi(t)) = "
      "directional derivative of dexp_xi along xi_dot (Chang 2026 app. H, D_lambda term).");
  m.def(
      "so3_left_jacobian_dot",
      [](const Arr& w, const Arr& wd) {
        return map_n<2>("so3_left_jacobian_dot", {Arg{&w, {3}}, Arg{&wd, {3}}}, {3, 3},
                        [](const auto& p, double* o) {
                          RowMap<3, 3>{o} = S::so3_left_jacobian_dot(CRowMap<3, 1>(p[0]), CRowMap<3, 1>(p[1]));
                        });
      },
      py::arg("w"), py::arg("w_dot"), "so3_left_jacobian_dot(w: (...,3), w_dot: (...,3)) -> (...,3,3).");
  m.def(
      "compose",
      [](const Arr& A, const Arr& B) {
        return map_n<2>("compose", {Arg{&A, {4, 4}}, Arg{&B, {4, 4}}}, {4, 4}, [](const auto& p, double* o) {
          RowMap<4, 4>{o} = CRowMap<4, 4>(p[0]) * CRowMap<4, 4>(p[1]);
        });
      },
      py::arg("A"), py::arg("B"), "compose(A: (...,4,4), B: (...,4,4)) -> (...,4,4): A @ B.");
  m.def(
      "between",
      [](const Arr& X, const Arr& Y) {
        return map_n<2>("between", {Arg{&X, {4, 4}}, Arg{&Y, {4, 4}}}, {4, 4}, [](const auto& p, double* o) {
          RowMap<4, 4>{o} = S::between(CRowMap<4, 4>(p[0]), CRowMap<4, 4>(p[1]));
        });
      },
      py::arg("X"), py::arg("Y"), "between(X: (...,4,4), Y: (...,4,4)) -> (...,4,4): X^-1 Y (Y seen from X).");
  m.def(
      "plus",
      [](const Arr& X, const Arr& tau) {
        return map_n<2>("plus", {Arg{&X, {4, 4}}, Arg{&tau, {6}}}, {4, 4}, [](const auto& p, double* o) {
          RowMap<4, 4>{o} = S::plus(CRowMap<4, 4>(p[0]), CRowMap<6, 1>(p[1]));
        });
      },
      py::arg("X"), py::arg("tau"), "plus(X: (...,4,4), tau: (...,6)) -> (...,4,4): X exp(tau), tau = (w, v) in X's body frame.");
  m.def(
      "minus",
      [](const Arr& Y, const Arr& X) {
        return map_n<2>("minus", {Arg{&Y, {4, 4}}, Arg{&X, {4, 4}}}, {6}, [](const auto& p, double* o) {
          RowMap<6, 1>{o} = S::minus(CRowMap<4, 4>(p[0]), CRowMap<4, 4>(p[1]));
        });
      },
      py::arg("Y"), py::arg("X"), "minus(Y: (...,4,4), X: (...,4,4)) -> (...,6): log(X^-1 Y), so plus(X, minus(Y, X)) = Y.");
  m.def(
      "interpolate",
      [](const Arr& T0, const Arr& T1, const Arr& s) {
        return map_n<3>("interpolate", {Arg{&T0, {4, 4}}, Arg{&T1, {4, 4}}, Arg{&s, {}}}, {4, 4},
                        [](const auto& p, double* o) {
                          RowMap<4, 4>{o} = S::interpolate(CRowMap<4, 4>(p[0]), CRowMap<4, 4>(p[1]), *p[2]);
                        });
      },
      py::arg("T0"), py::arg("T1"), py::arg("s"),
      "interpolate(T0: (...,4,4), T1: (...,4,4), s: float | (N,)) -> (...,4,4): "
      "T0 exp(s log(T0^-1 T1)); s = 0 -> T0, s = 1 -> T1.");
  m.def(
      "set_batch_threads",
      [](int n) {
        if (n < 0) throw py::value_error("set_batch_threads: n must be >= 0 (0 = automatic), got " + std::to_string(n));
        g_batch_threads.store(n);
      },
      py::arg("n"),
      "set_batch_threads(n): maximum threads of batch calls (0 = automatic = hardware threads, "
      "1 = single-threaded).  Results are bit-identical whatever n.");
  m.def("get_batch_threads", []() { return g_batch_threads.load(); },
        "get_batch_threads() -> int: the setting of set_batch_threads (0 = automatic).");
  // single-call fast paths (see namespace fast); the docstrings repeat the general ones
  fast::install<fast::F1<6, 1, 4, 4, fast::Exp>>(m, "exp", "exp(xi: (...,6)) -> (...,4,4): T = exp(hat(xi)), xi = (w, v).");
  fast::install<fast::F1<4, 4, 6, 1, fast::Log>>(m, "log", "log(T: (...,4,4)) -> (...,6): principal log, |w| <= pi.");
  fast::install<fast::F1<4, 4, 4, 4, fast::Inv>>(m, "inverse", "inverse(T: (...,4,4)) -> (...,4,4): [[R^T, -R^T p], [0, 1]].");
  fast::install<fast::F1<3, 1, 3, 3, fast::So3Exp>>(m, "so3_exp", "so3_exp(w: (...,3)) -> (...,3,3): Rodrigues.");
  fast::install<fast::F1<3, 3, 3, 1, fast::So3Log>>(m, "so3_log", "so3_log(R: (...,3,3)) -> (...,3): rotation vector, |w| in [0, pi].");
  fast::install<fast::F2<4, 4, 4, 4, fast::Compose>>(m, "compose", "compose(A: (...,4,4), B: (...,4,4)) -> (...,4,4): A @ B.");
}
