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

struct Arg {
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

}  // namespace hri_core::py_batch
