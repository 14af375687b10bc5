// Helpers for numpy single/batch bindings: an argument of trailing shape S may come as S
// (single) or (..., S) (batch); batch arguments must share the same leading shape, single
// arguments broadcast.  The output has the common leading shape + the output trailing shape.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "numpy_c_api.hpp"
#include "py_check.hpp"

namespace hri_core::py_batch {

namespace py = pybind11;
/// A float64 C-contiguous aligned ndarray, loaded after the dtype gate of py_check.hpp.
using Arr = py_check::Array;
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

/// Batch elements per worker thread below which map_n stays single-threaded.  Spawning and
/// joining a std::thread costs ~20-50 us (more on a loaded machine); the cheapest kernels that
/// opt in (se3 exp/log, 20-60 ns/element plus ~30 ns/element of output memory traffic) need
/// ~16k elements (~1 ms) per thread before that overhead is below a few percent.
inline constexpr ssize kParallelMinPerThread = 16384;
/// Batches at least this large run with the GIL released (cost of release/reacquire ~0.1 us,
/// negligible from here on; smaller batches keep it to stay as cheap as before).
inline constexpr ssize kReleaseGilMinBatch = 256;
/// Elements per work block of the parallel path (threads take blocks from a shared counter):
/// 4096 exp results are 512 KB, ~0.15 ms, small enough to rebalance, large enough that the
/// atomic increment per block is negligible.
inline constexpr ssize kParallelBlock = 4096;
/// Upper bound on worker threads, whatever hardware_concurrency() says.
inline constexpr unsigned kMaxBatchThreads = 16;

/// Maximum threads for parallel map_n (0 = automatic: hardware_concurrency(), capped at
/// kMaxBatchThreads; 1 = single-threaded).  Shared by every extension TU (C++17 inline variable).
inline std::atomic<int> g_batch_threads{0};

inline unsigned batch_threads(ssize n) {
  int want = g_batch_threads.load(std::memory_order_relaxed);
  unsigned t = want > 0 ? static_cast<unsigned>(want) : std::max(1u, std::thread::hardware_concurrency());
  t = std::min(t, kMaxBatchThreads);
  const ssize by_size = n / kParallelMinPerThread;
  return static_cast<unsigned>(std::max<ssize>(1, std::min<ssize>(t, by_size)));
}

inline std::string shape_str(const std::vector<ssize>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += std::to_string(v[i]) + (i + 1 < v.size() ? ", " : "");
  if (v.size() == 1) s += ",";
  return s + ")";
}

/// Validates a caller-supplied output array (numpy `out=` semantics, no casting, no copy): an
/// aligned, writeable, C-contiguous, native-endian float64 ndarray of exactly `shape`.
/// Returns its data pointer; throws TypeError (not an ndarray / wrong dtype) or ValueError.
inline double* check_out(const char* name, const py::object& out, const std::vector<ssize>& shape) {
  const std::string who = std::string(name) + ": out";
  if (!PyArray_Check(out.ptr()))
    throw py::type_error(who + " must be a numpy.ndarray, got " + std::string(py::str(py::type::of(out).attr("__name__"))));
  auto* a = reinterpret_cast<PyArrayObject*>(out.ptr());
  if (PyArray_TYPE(a) != NPY_DOUBLE || !PyArray_ISNOTSWAPPED(a))
    throw py::type_error(who + " must have dtype float64 (native byte order), got " +
                         std::string(py::str(out.attr("dtype"))));
  std::vector<ssize> have(PyArray_DIMS(a), PyArray_DIMS(a) + PyArray_NDIM(a));
  if (have != shape)
    throw py::value_error(who + " has shape " + shape_str(have) + ", expected " + shape_str(shape));
  if (!PyArray_IS_C_CONTIGUOUS(a)) throw py::value_error(who + " must be C-contiguous");
  if (!PyArray_ISALIGNED(a)) throw py::value_error(who + " must be aligned");
  if (!PyArray_ISWRITEABLE(a)) throw py::value_error(who + " is read-only");
  return static_cast<double*>(PyArray_DATA(a));
}

/// Runs f(in_ptrs, out_ptr) over the broadcast batch.  `name` is used in error messages.
/// out: None (a new array is returned) or an ndarray validated by check_out, filled and returned.
///   It may alias an input only exactly element-for-element (same data pointer, same element
///   size, e.g. inverse(T, out=T)); any other overlap is rejected.
/// parallel: f is a pure function of its inputs that touches no Python object; then a batch of
///   >= kReleaseGilMinBatch runs with the GIL released and, from 2 * kParallelMinPerThread
///   elements, over batch_threads(n) std::threads taking kParallelBlock-element blocks.  Every
///   element goes through the same `run` code whatever the split, so results are bit-identical.
template <size_t N, class F>
py::array map_n(const char* name, const std::array<Arg, N>& args, const std::vector<ssize>& out_trailing,
                F&& f, const py::object& out = py::none(), bool parallel = false) {
  std::vector<ssize> lead;
  bool have_lead = false;
  std::array<const double*, N> ptr{};
  std::array<ssize, N> step{};
  std::array<ssize, N> size{};
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
    size[i] = a.size();
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
  py::array result;
  double* obase;
  if (out.is_none()) {
    Arr fresh(out_shape);
    obase = fresh.mutable_data();
    result = std::move(fresh);
  } else {
    obase = check_out(name, out, out_shape);
    const auto* ob = reinterpret_cast<const char*>(obase);
    const auto* oe = reinterpret_cast<const char*>(obase + n * out_inner);
    for (size_t i = 0; i < N; ++i) {
      const auto* ib = reinterpret_cast<const char*>(ptr[i]);
      const auto* ie = reinterpret_cast<const char*>(ptr[i] + size[i]);
      const bool overlap = ib < oe && ob < ie && n * out_inner > 0 && size[i] > 0;
      const bool exact = ptr[i] == obase && step[i] == out_inner;
      if (overlap && !exact)
        throw py::value_error(std::string(name) + ": out overlaps argument " + std::to_string(i) +
                              " (only exact element-wise aliasing is allowed)");
    }
    result = py::reinterpret_borrow<py::array>(out);
  }
  // flatten: inline the whole per-element kernel (e.g. se3::exp, se3::log) into this loop.  Left
  // to itself GCC calls them out of line and reloads the returned matrix with wider loads than
  // it was stored with (store-forwarding stalls); see docs/benchmarks.md "Core".
  auto run = [&](ssize b0, ssize b1) __attribute__((flatten)) {
    std::array<const double*, N> p;
    for (size_t i = 0; i < N; ++i) p[i] = ptr[i] + step[i] * b0;
    double* o = obase + out_inner * b0;
    for (ssize b = b0; b < b1; ++b) {
      f(p, o);
      for (size_t i = 0; i < N; ++i) p[i] += step[i];
      o += out_inner;
    }
  };
  if (!parallel || n < kReleaseGilMinBatch) {
    run(0, n);
    return result;
  }
  {
    py::gil_scoped_release nogil;
    const unsigned nt = batch_threads(n);
    // Dynamic blocks from a shared counter rather than one fixed chunk per thread: on a shared,
    // oversubscribed machine a descheduled thread would otherwise hold the whole call up (slower
    // than one thread); here the running threads take its blocks.
    std::atomic<ssize> next{0};
    auto worker = [&] {
      for (ssize b0; (b0 = next.fetch_add(kParallelBlock, std::memory_order_relaxed)) < n;)
        run(b0, std::min(n, b0 + kParallelBlock));
    };
    std::vector<std::thread> workers;
    workers.reserve(nt);
    for (unsigned t = 1; t < nt; ++t) {
      try {
        workers.emplace_back(worker);
      } catch (...) {  // no thread available: the threads already running take every block
        break;
      }
    }
    worker();  // this thread takes blocks too
    for (auto& w : workers) w.join();
  }
  return result;
}

/// The data of `o` if it is an aligned, C-contiguous, native float64 ndarray of shape (d0,) (nd 1)
/// or (d0, d1) (nd 2); else nullptr (the caller falls back to the general path).
inline const double* np_single(PyObject* o, int nd, ssize d0, ssize d1 = 0) {
  if (!PyArray_Check(o)) return nullptr;
  auto* a = reinterpret_cast<PyArrayObject*>(o);
  const npy_intp* dims = PyArray_DIMS(a);
  if (PyArray_NDIM(a) != nd || dims[0] != d0 || (nd == 2 && dims[1] != d1)) return nullptr;
  if (!PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a)) return nullptr;
  if (PyArray_TYPE(a) != NPY_DOUBLE || !PyArray_ISNOTSWAPPED(a)) return nullptr;
  return static_cast<const double*>(PyArray_DATA(a));
}

/// A new float64 ndarray (d0,) or (d0, d1); *data points at its buffer.  New reference or nullptr.
inline PyObject* np_new(int nd, ssize d0, ssize d1, double** data) {
  npy_intp dims[2] = {d0, d1};
  PyObject* arr = PyArray_SimpleNew(nd, dims, NPY_DOUBLE);
  if (arr) *data = static_cast<double*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(arr)));
  return arr;
}

}  // namespace hri_core::py_batch
