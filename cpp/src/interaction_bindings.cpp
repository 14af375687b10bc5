// Hook for the interaction engineer (hri_interaction): C++ kernels bound into
// hri_core._hri_core (e.g. a submodule "interaction").  Registers nothing yet.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void bind_interaction(py::module_& /*m*/) {}
