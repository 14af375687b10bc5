// Module init of hri_core._hri_core: one submodule per area.
#include <pybind11/pybind11.h>

#include <Eigen/Core>

#define HRI_CORE_IMPORT_NUMPY
#include "numpy_c_api.hpp"

namespace py = pybind11;

// The build of this extension (hri_runtime.provenance): cpp/setup.py passes its compile flags.
#ifndef HRI_BUILD_FLAGS
#define HRI_BUILD_FLAGS "unknown (built without cpp/setup.py)"
#endif
#define HRI_STR2(x) #x
#define HRI_STR(x) HRI_STR2(x)
#if defined(__clang__)
#define HRI_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define HRI_COMPILER "gcc " __VERSION__
#else
#define HRI_COMPILER "unknown compiler"
#endif

void bind_se3(py::module_& m);
void bind_kinematics(py::module_& m);
void bind_safety(py::module_& m);
void bind_interaction(py::module_& m);
void bind_rt(py::module_& m);

PYBIND11_MODULE(_hri_core, m) {
  m.doc() = "hri_core compiled core (C++17, Eigen): se3, kinematics, safety, interaction, rt.";
  // numpy's C API table (import_array1 returns its argument from this lambda on failure)
  if ([]() -> int { import_array1(-1); return 0; }() < 0) throw py::error_already_set();
  bind_se3(m);
  bind_kinematics(m);
  bind_safety(m);
  bind_interaction(m);
  bind_rt(m);
  m.attr("BUILD_FLAGS") = HRI_BUILD_FLAGS;
  m.attr("COMPILER") = HRI_COMPILER;
  m.attr("EIGEN_VERSION") = HRI_STR(EIGEN_WORLD_VERSION) "." HRI_STR(EIGEN_MAJOR_VERSION) "." HRI_STR(EIGEN_MINOR_VERSION);
}
