// Helpers for numpy single/batch bindings: an argument of trailing shape S may come as S
// (single) or (..., S) (batch); batch arguments must share the same leading shape, single
// arguments broadcast.  The output has the common leading shape + the output trailing shape.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <Eigen/Core>
#include <array>
#include <string>
#include <vector>

namespace hri_core::py_batch {

namespace py = pybind11;
using Arr = py::array_t<double, py::array::c_style | py::array::forcecast>;
using ssize = py::ssize_t;

template <int R, int C>
using RowMap = Eigen::Map<Eigen::Matrix<double, R, C, (C == 1 ? Eigen::ColMajor : Eigen::RowMajor)>>;
template <int R, int C>
using CRowMap =
    Eigen::Map<const Eigen::Matrix<double, R, C, (C == 1 ? Eigen::ColMajor : Eigen::RowMajor)>>;

inline std::string shape_str(const Arr& a) {
  std::string s = "(";
  for (ssize i = 0; i < a.ndim(); ++i) s += std::to_string(a.shape(i)) + (i + 1 < a.ndim() ? ", " : "");
  if (a.ndim() == 1) s += ",";
  return s + ")";
}

struct __attribute__((visibility("hidden"))) Arg {
  const Arr* a;
  std::vector<ssize> trailing;
};

/// Runs f(in_ptrs, out_ptr) over the broadcast batch.  `name` is used in error messages.
template <size_t N, class F>
py::array map_n(const char* name, const std::array<Arg, N>& args, const std::vector<ssize>& out_trailing,
                F&& f) {
  std::vector<ssize> lead;
  bool have_lead = false;
  std::array<const double*, N> ptr{};
  std::array<ssize, N> step{};
  for (size_t i = 0; i < N; ++i) {
    const Arr& a = *args[i].a;
    const auto& tr = args[i].trailing;
    const ssize k = static_cast<ssize>(tr.size());
    bool ok = a.ndim() >= k;
    ssize inner = 1;
    for (ssize j = 0; ok && j < k; ++j) {
      ok = a.shape(a.ndim() - k + j) == tr[j];
      inner *= tr[j];
    }
    if (!ok) {
      std::string want = "(..., ";
      for (ssize j = 0; j < k; ++j) want += std::to_string(tr[j]) + (j + 1 < k ? ", " : ")");
      if (k == 0) want = "scalar or (N,)";
      throw py::value_error(std::string(name) + ": argument " + std::to_string(i) + " has shape " +
                            shape_str(a) + ", expected " + want);
    }
    ptr[i] = a.data();
    const ssize nl = a.ndim() - k;
    if (nl > 0) {
      std::vector<ssize> l(a.shape(), a.shape() + nl);
      if (have_lead && l != lead)
        throw py::value_error(std::string(name) + ": batch shapes differ (" + shape_str(a) + ")");
      lead = l;
      have_lead = true;
      step[i] = inner;
    } else {
      step[i] = 0;
    }
  }
  ssize n = 1;
  for (ssize d : lead) n *= d;
  std::vector<ssize> out_shape = lead;
  ssize out_inner = 1;
  for (ssize d : out_trailing) {
    out_shape.push_back(d);
    out_inner *= d;
  }
  Arr out(out_shape);
  double* o = out.mutable_data();
  std::array<const double*, N> p = ptr;
  for (ssize b = 0; b < n; ++b) {
    f(p, o);
    for (size_t i = 0; i < N; ++i) p[i] += step[i];
    o += out_inner;
  }
  return std::move(out);
}

/// The data of `o` if it is an aligned, C-contiguous, native float64 ndarray of shape (d0,) (nd 1)
/// or (d0, d1) (nd 2); else nullptr (the caller falls back to the general path).
inline const double* np_single(PyObject* o, int nd, ssize d0, ssize d1 = 0) {
  using npy = py::detail::npy_api;
  const npy& api = npy::get();
  if (!api.PyArray_Check_(o)) return nullptr;
  const auto* a = py::detail::array_proxy(o);
  if (a->nd != nd || a->dimensions[0] != d0 || (nd == 2 && a->dimensions[1] != d1)) return nullptr;
  constexpr int need = npy::NPY_ARRAY_C_CONTIGUOUS_ | npy::NPY_ARRAY_ALIGNED_;
  if ((a->flags & need) != need) return nullptr;
  const auto* d = py::detail::array_descriptor_proxy(a->descr);
  if (d->type_num != npy::NPY_DOUBLE_ || d->byteorder == '>') return nullptr;
  return reinterpret_cast<const double*>(a->data);
}

/// A new float64 ndarray (d0,) or (d0, d1); *data points at its buffer.  New reference or nullptr.
inline PyObject* np_new(int nd, ssize d0, ssize d1, double** data) {
  using npy = py::detail::npy_api;
  const npy& api = npy::get();
  static PyObject* descr = api.PyArray_DescrFromType_(npy::NPY_DOUBLE_);
  Py_INCREF(descr);  // NewFromDescr steals it
  const Py_intptr_t dims[2] = {d0, d1};
  PyObject* arr = api.PyArray_NewFromDescr_(api.PyArray_Type_, descr, nd, dims, nullptr, nullptr, 0, nullptr);
  if (arr) *data = reinterpret_cast<double*>(py::detail::array_proxy(arr)->data);
  return arr;
}

}  // namespace hri_core::py_batch
