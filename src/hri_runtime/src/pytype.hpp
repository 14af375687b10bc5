// Helpers for the extension types of hri_runtime._cdr written against the CPython C-API
// (zenoh_hot_path.cpp, executor_hot_path.cpp): GC support over a type's owned references,
// read-only counters, close(), and the type set-up.
#pragma once

#include <pybind11/pybind11.h>

namespace hri_pytype {

// A type T lists its owned references in Refs<T>::list (and the doc of its close() in
// Refs<T>::close_doc when it has one).
template <class T>
struct Refs;

template <class T>
int traverse(PyObject* self, visitproc visit, void* arg) {
  for (PyObject* T::*m : Refs<T>::list) Py_VISIT(reinterpret_cast<T*>(self)->*m);
  return 0;
}

template <class T>
int clear(PyObject* self) {
  for (PyObject* T::*m : Refs<T>::list) Py_CLEAR(reinterpret_cast<T*>(self)->*m);
  return 0;
}

template <class T>
void dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  clear<T>(self);
  Py_TYPE(self)->tp_free(self);
}

// a new reference to v in slot (the old one released)
inline void set_ref(PyObject*& slot, PyObject* v) {
  Py_INCREF(v);
  Py_XSETREF(slot, v);
}

// a counter member as a Python int (a read-only property)
template <class T, long long T::*M>
PyObject* get_count(PyObject* self, void*) {
  return PyLong_FromLongLong(reinterpret_cast<T*>(self)->*M);
}

template <class T>
PyObject* close(PyObject* self, PyObject*) {
  reinterpret_cast<T*>(self)->closed = 1;
  Py_RETURN_NONE;
}

template <class T>
PyMethodDef close_methods[] = {{"close", close<T>, METH_NOARGS, Refs<T>::close_doc},
                               {nullptr, nullptr, 0, nullptr}};

// A GC type with Refs<T> (vc_offset > 0: callable through vectorcall at that offset).
template <class T>
void ready(PyTypeObject& t, const char* name, const char* doc, Py_ssize_t vc_offset, initproc init,
           PyMethodDef* methods, PyGetSetDef* getset) {
  t.tp_name = name;
  t.tp_doc = doc;
  t.tp_basicsize = sizeof(T);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
  t.tp_new = PyType_GenericNew;
  t.tp_init = init;
  t.tp_traverse = traverse<T>;
  t.tp_clear = clear<T>;
  t.tp_dealloc = dealloc<T>;
  if (vc_offset > 0) {
    t.tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
    t.tp_call = PyVectorcall_Call;
    t.tp_vectorcall_offset = vc_offset;
  }
  t.tp_methods = methods;
  t.tp_getset = getset;
  if (PyType_Ready(&t) < 0) throw pybind11::error_already_set();
}

}  // namespace hri_pytype
