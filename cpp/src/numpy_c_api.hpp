// numpy's public C API (numpy/arrayobject.h) for the paths that read or make arrays without
// pybind11's conversion (py_batch.hpp's np_single/np_new/check_out, se3's single-call path):
// an array's layout only through numpy's own accessors (PyArray_NDIM, PyArray_DIMS,
// PyArray_TYPE, PyArray_FLAGS, PyArray_DATA), never a mirror of its struct, so it holds across
// numpy 1.x/2.x and every CPython the workspace builds for. One table of numpy's C API per
// extension: module.cpp defines HRI_CORE_IMPORT_NUMPY and imports it before any binding.
#pragma once

#include <pybind11/pybind11.h>  // Python.h first

#ifndef NPY_NO_DEPRECATED_API
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#endif
#define PY_ARRAY_UNIQUE_SYMBOL hri_core_numpy_c_api
#ifndef HRI_CORE_IMPORT_NUMPY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>
