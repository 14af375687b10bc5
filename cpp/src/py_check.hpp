// The argument checks of every hri_core binding, in one place. An array argument is checked
// BEFORE anything is converted or copied into the core's storage: it must be readable as an array
// (else TypeError), have a real numeric dtype (int, uint or float; bool, complex, object, strings
// are a TypeError, never a silent cast), the right number of dimensions and shape, and at most
// kMaxDof (16) joints where its size is the joint count (ValueError naming that limit). Only then
// is it converted to float64, C-contiguous and aligned (a non-contiguous, misaligned, byte-swapped
// or integer input is copied, never read in place) and copied into the argument.
//
// The core's joint-sized Eigen types have a fixed capacity (MaxCols = kMaxDof, no heap): pybind11's
// own Eigen caster sizes them from the input before any size check, so a 17-joint input would be
// written past that capacity (Eigen's assert is compiled out with -DNDEBUG). Bindings therefore
// never take a core Eigen type directly:
//   Checked<T>   an Eigen matrix/vector argument (a T: binds to `const T&`), checked as above
//   Finite<T>    the same, and every entry finite (ValueError otherwise): for parameters whose NaN
//                would poison the state for good (gains, masses, a kinematic model)
//   checked(&C::method)   adapts a member function: its Eigen parameters become Checked<T>
//   Array        (py_batch.hpp's Arr) a float64 C-contiguous aligned ndarray of any shape, after the
//                same dtype gate; the binding checks its shape (py_batch::map_n, joints()).
//   joints(n, what)       the joint-count check with the one message naming the limit
// Inputs the math can take (NaN in a state or a pose) are passed on: the core flags them.
#pragma once

#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <Eigen/Core>
#include <string>
#include <type_traits>

namespace hri_core::py_check {

namespace py = pybind11;

/// The joint limit of every fixed-capacity type of the core (interaction/kinematics/safety kMaxDof).
inline constexpr int kMaxJoints = 16;

inline std::string shape_str(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += std::to_string(a.shape(i)) + (i + 1 < a.ndim() ? ", " : "");
  if (a.ndim() == 1) s += ",";
  return s + ")";
}

inline std::string joints_error(const std::string& what, long long n) {
  return what + ": " + std::to_string(n) + " joints, hri_core supports at most " + std::to_string(kMaxJoints) +
         " (kMaxDof)";
}

/// ValueError naming the limit unless 1 <= n <= kMaxJoints (0 allowed when allow_zero).
inline void joints(long long n, const std::string& what, bool allow_zero = false) {
  if (n > kMaxJoints) throw py::value_error(joints_error(what, n));
  if (n < (allow_zero ? 0 : 1)) throw py::value_error(what + ": " + std::to_string(n) + " joints, need at least 1");
}

/// `src` as an ndarray with a real numeric dtype, nothing converted yet (np.asarray(src)).
/// TypeError for None, for what numpy cannot read as one array, and for bool/complex/object/str
/// dtypes; `want` ("expected an array of shape (4, 4)") starts the message.
inline py::array real_array(py::handle src, const std::string& want) {
  if (src.is_none()) throw py::type_error(want + ", got None");
  py::array a = py::array::ensure(src);  // np.asarray(src): a view of an ndarray, or a new array
  if (!a) throw py::type_error(want + ", got " + std::string(py::str(py::type::of(src).attr("__name__"))));
  const char k = a.dtype().kind();
  if (k != 'f' && k != 'i' && k != 'u')
    throw py::type_error(want + ", got dtype " + std::string(py::str(a.dtype())) + " (int or float numbers only)");
  return a;
}

/// `a` (from real_array) as float64, C-contiguous, aligned, native byte order: `a` itself when it
/// already is, else a copy (np.ascontiguousarray(a, float64)).
inline py::array as_float64(const py::array& a) {
  using npy = py::detail::npy_api;
  const npy& api = npy::get();
  PyObject* r = api.PyArray_FromAny_(
      a.ptr(), api.PyArray_DescrFromType_(npy::NPY_DOUBLE_), 0, 0,
      npy::NPY_ARRAY_C_CONTIGUOUS_ | npy::NPY_ARRAY_ALIGNED_ | npy::NPY_ARRAY_FORCECAST_ | npy::NPY_ARRAY_ENSUREARRAY_,
      nullptr);
  if (!r) throw py::error_already_set();
  return py::reinterpret_steal<py::array>(r);
}

// ------------------------------------------------------------------ Eigen arguments

/// An Eigen argument of type T, checked and then copied (load_eigen); converts to `const T&`.
template <class T>
struct Checked {
  T v;
  operator const T&() const { return v; }  // NOLINT: passed on as the T it holds
  const T& operator*() const { return v; }
  const T* operator->() const { return &v; }
};

/// The same, every entry finite.
template <class T>
struct Finite : Checked<T> {};

/// The shape T takes, for messages: "(4, 4)", "(6,)", "(6, n)", "(n,)".
template <class T>
std::string expected_shape() {
  auto dim = [](int d) { return d == Eigen::Dynamic ? std::string("n") : std::to_string(d); };
  return T::IsVectorAtCompileTime ? "(" + dim(T::SizeAtCompileTime) + ",)"
                                  : "(" + dim(T::RowsAtCompileTime) + ", " + dim(T::ColsAtCompileTime) + ")";
}

/// Checks `src` against T's shape (and its capacity for the joint dimension) and only then copies it
/// into `out`; `finite`: every entry must be finite.
template <class T>
void load_eigen(py::handle src, T& out, bool finite) {
  static_assert(std::is_same_v<typename T::Scalar, double>, "hri_core bindings take double matrices");
  constexpr int R = T::RowsAtCompileTime, C = T::ColsAtCompileTime;
  constexpr int MR = T::MaxRowsAtCompileTime, MC = T::MaxColsAtCompileTime;
  constexpr bool kJoints = R == Eigen::Dynamic || C == Eigen::Dynamic;  // the dynamic dimension is the joints
  static_assert(!(R == Eigen::Dynamic && C == Eigen::Dynamic), "one joint dimension at most");
  static_assert((R != Eigen::Dynamic || MR == kMaxJoints) && (C != Eigen::Dynamic || MC == kMaxJoints),
                "a dynamic dimension has the capacity kMaxDof");
  const std::string base = "expected an array of shape " + expected_shape<T>();
  const std::string want = base + (kJoints ? " with n <= " + std::to_string(kMaxJoints) + " joints" : "");
  const py::array a = real_array(src, want);
  const py::ssize_t nd = T::IsVectorAtCompileTime ? 1 : 2;
  if (a.ndim() != nd) throw py::value_error(want + ", got shape " + shape_str(a));
  py::ssize_t rows, cols;
  if (T::IsVectorAtCompileTime) {
    rows = R == 1 ? 1 : a.shape(0);
    cols = R == 1 ? a.shape(0) : 1;
  } else {
    rows = a.shape(0);
    cols = a.shape(1);
  }
  if ((R != Eigen::Dynamic && rows != R) || (C != Eigen::Dynamic && cols != C))
    throw py::value_error(want + ", got shape " + shape_str(a));
  if (kJoints) joints(R == Eigen::Dynamic ? rows : cols, base + ", got shape " + shape_str(a), /*allow_zero=*/true);
  // checked: the copy below fits T's storage
  const py::array f = as_float64(a);
  const auto* p = static_cast<const double*>(f.data());
  out.resize(rows, cols);
  for (py::ssize_t i = 0; i < rows; ++i)
    for (py::ssize_t j = 0; j < cols; ++j) out(i, j) = p[i * cols + j];
  if (finite && !out.allFinite()) throw py::value_error(want + " of finite numbers, got NaN or inf");
}

// ------------------------------------------------------------------ member functions

template <class A>
using arg_t = std::conditional_t<std::is_base_of_v<Eigen::MatrixBase<std::decay_t<A>>, std::decay_t<A>>,
                                 const Checked<std::decay_t<A>>&, A>;

/// `&C::f` as a callable whose Eigen parameters are Checked<T> (for .def of a member function).
template <class R, class C, class... A>
auto checked(R (C::*f)(A...)) {
  return [f](C& self, arg_t<A>... a) -> R { return (self.*f)(a...); };
}
template <class R, class C, class... A>
auto checked(R (C::*f)(A...) const) {
  return [f](const C& self, arg_t<A>... a) -> R { return (self.*f)(a...); };
}

/// A data member of Eigen type as a property whose setter takes a Checked<T> (def_readwrite's getter
/// is kept: a view of the member).
template <class Cls, class C, class T>
Cls& def_checked_readwrite(Cls& cls, const char* name, T C::*m, const char* doc = "") {
  cls.def_property(
      name, [m](C& self) -> T& { return self.*m; }, [m](C& self, const Checked<T>& v) { self.*m = *v; },
      py::return_value_policy::reference_internal, doc);
  return cls;
}

// ------------------------------------------------------------------ numpy arrays

/// A float64, C-contiguous, aligned ndarray of any shape (py_batch::Arr), loaded through real_array.
struct Array : py::array_t<double, py::array::c_style | py::array::forcecast> {
  using base = py::array_t<double, py::array::c_style | py::array::forcecast>;
  using base::base;
  Array() : base(py::ssize_t(0)) {}
};

}  // namespace hri_core::py_check

namespace pybind11::detail {

template <class T>
struct type_caster<hri_core::py_check::Checked<T>> {
  PYBIND11_TYPE_CASTER(hri_core::py_check::Checked<T>, make_caster<T>::name);
  bool load(handle src, bool) {
    hri_core::py_check::load_eigen<T>(src, value.v, false);
    return true;
  }
  static handle cast(const hri_core::py_check::Checked<T>& src, return_value_policy policy, handle parent) {
    return make_caster<T>::cast(src.v, policy, parent);
  }
};

template <class T>
struct type_caster<hri_core::py_check::Finite<T>> {
  PYBIND11_TYPE_CASTER(hri_core::py_check::Finite<T>, make_caster<T>::name);
  bool load(handle src, bool) {
    hri_core::py_check::load_eigen<T>(src, value.v, true);
    return true;
  }
  static handle cast(const hri_core::py_check::Checked<T>& src, return_value_policy policy, handle parent) {
    return make_caster<T>::cast(src.v, policy, parent);
  }
};

template <>
struct type_caster<hri_core::py_check::Array> {
  PYBIND11_TYPE_CASTER(hri_core::py_check::Array, const_name("numpy.ndarray[numpy.float64]"));
  bool load(handle src, bool) {
    namespace C = hri_core::py_check;
    const C::py::array f = C::as_float64(C::real_array(src, "expected an array"));
    value = reinterpret_borrow<C::Array>(f);
    return true;
  }
  static handle cast(const hri_core::py_check::Array& src, return_value_policy, handle) {
    return src.inc_ref();
  }
};

}  // namespace pybind11::detail
