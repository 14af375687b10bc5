// The per-message path of hri_runtime.impl.zenoh_backend in C (part of the hri_runtime._cdr extension):
//
// * Putter(put, gid, destroyed_message): ``putter(data)`` puts
//   ``data`` with rmw_zenoh's 33-byte attachment (int64 LE sequence number from 1, int64 LE source
//   timestamp in ns since the Unix epoch, 0x10, the 16-byte GID) through ``put`` (a zenoh
//   Publisher's bound ``put``): one call from Python, the attachment written straight into a bytes
//   object, no Python frame. ``data`` is bytes (bytearray/memoryview are copied) or, after
//   ``serialize_with(serialize, type_name)``, a message: ``serialize(data, type_name)``
//   (hri_runtime.msgs.serialize, its errors raised as they are) gives the bytes. ``published`` counts the puts; ``close()`` makes
//   later calls raise RuntimeError.
// * SampleGate(key, deliver, slow, on_error): the callback of a subscriber on the exact key
//   ``key`` (so a sample's key is not read). Per sample it reads the payload and attachment
//   bytes; when the attachment is 33 bytes with the GID length byte 0x10 and the payload starts
//   with a CDR header and has a body, it calls ``deliver(payload, (attachment, key))``; anything
//   else goes to ``slow(sample, key, attachment, payload) -> bool`` (the full checks, drop
//   counting; True: deliver it all the same). Nothing raises into Zenoh's thread: an exception
//   is handed to ``on_error(cause, exception)`` ("internal" reading the sample, "deliver_failed"
//   from deliver). ``received`` counts delivered samples; after ``close()`` nothing is delivered.
//   The calling thread keeps its Python thread state from its first sample on (see
//   keep_thread_state).
// The checks and the byte layout are those of hri_runtime.impl.wire (tests compare both).
#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>
#include <ctime>

#include "pytype.hpp"

namespace py = pybind11;

namespace {

using hri_pytype::get_count;
using hri_pytype::Refs;
using hri_pytype::set_ref;

constexpr Py_ssize_t kGidSize = 16;
constexpr Py_ssize_t kAttachmentSize = 33;  // 8 seq + 8 timestamp + 1 length + 16 gid

PyObject* g_str_payload = nullptr;
PyObject* g_str_attachment = nullptr;
PyObject* g_str_to_bytes = nullptr;
PyObject* g_str_internal = nullptr;
PyObject* g_str_deliver_failed = nullptr;

// Zenoh calls a Python callback from its own (Rust) threads through PyGILState_Ensure/Release:
// a thread without a Python thread state gets a new one for every call, deleted again when the
// call returns (thread-locals, profilers and the state itself rebuilt per sample). The gate keeps
// one thread state for the whole life of such a thread: one PyGILState_Ensure never released
// (its counter stays above zero, so the per-call Ensure/Release pairs reuse that state).
thread_local bool t_thread_state_kept = false;

void keep_thread_state() {
  if (!t_thread_state_kept) {
    t_thread_state_kept = true;
    (void)PyGILState_Ensure();  // the GIL is held: only counts this thread state once more
  }
}

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// ------------------------------------------------------------------------------ Putter
struct Putter {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* put;
  PyObject* destroyed_message;
  // put's keyword arguments, reused from call to call while nothing else holds the dict:
  // zenoh-python's methods take (args tuple, kwargs dict) (abi3), a keyword argument costs a new
  // dict per call. The positional tuple is CPython's own (PyObject_VectorcallDict): a tuple
  // is never refilled once built.
  PyObject* kwargs;  // {"attachment": att}
  PyObject* serialize;  // serialize(msg, type_name) -> bytes, or None (bytes only)
  PyObject* type_name;
  long long seq;
  long long published;
  int closed;
  unsigned char tail[1 + kGidSize];
};

}  // namespace

template <>
struct hri_pytype::Refs<Putter> {
  static constexpr PyObject* Putter::*list[] = {&Putter::put, &Putter::destroyed_message, &Putter::kwargs,
                                                &Putter::serialize, &Putter::type_name};
  static constexpr const char* close_doc = "close(): later calls raise RuntimeError (the publisher was destroyed).";
};

namespace {

// the bytes to put for a call's argument: bytes as they are, bytearray/memoryview copied, anything
// else serialize(msg, type_name) (when the putter has one); a new reference, nullptr on error
PyObject* payload_of(Putter* self, PyObject* arg) {
  if (PyBytes_CheckExact(arg)) return Py_NewRef(arg);
  if (PyByteArray_Check(arg) || PyMemoryView_Check(arg) || PyBytes_Check(arg)) return PyBytes_FromObject(arg);
  if (self->serialize == Py_None) {
    PyErr_Format(PyExc_TypeError, "putter(data): bytes expected, got %s", Py_TYPE(arg)->tp_name);
    return nullptr;
  }
  PyObject* call_args[3] = {nullptr, arg, self->type_name};
  PyObject* data = PyObject_Vectorcall(self->serialize, call_args + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
  if (data && !PyBytes_CheckExact(data)) {
    Py_SETREF(data, PyBytes_FromObject(data));
  }
  return data;
}

PyObject* putter_call(PyObject* self_obj, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<Putter*>(self_obj);
  if (PyVectorcall_NARGS(nargsf) != 1 || kwnames) {
    PyErr_SetString(PyExc_TypeError, "putter(data) takes one positional argument");
    return nullptr;
  }
  if (self->closed) {
    PyErr_SetObject(PyExc_RuntimeError, self->destroyed_message);
    return nullptr;
  }
  PyObject* data = payload_of(self, args[0]);
  if (!data) return nullptr;
  PyObject* att = PyBytes_FromStringAndSize(nullptr, kAttachmentSize);
  if (!att) {
    Py_DECREF(data);
    return nullptr;
  }
  char* p = PyBytes_AS_STRING(att);
  const int64_t seq = ++self->seq;  // the GIL is held: unique per publisher across threads
  const int64_t ts = now_ns();
  std::memcpy(p, &seq, 8);  // little-endian host (checked in cdr_codec.cpp)
  std::memcpy(p + 8, &ts, 8);
  std::memcpy(p + 16, self->tail, sizeof self->tail);
  // {"attachment": att}: the previous call's dict when only we hold it
  if (!self->kwargs || Py_REFCNT(self->kwargs) != 1) {
    Py_XSETREF(self->kwargs, PyDict_New());
    if (!self->kwargs) {
      Py_DECREF(att);
      Py_DECREF(data);
      return nullptr;
    }
  }
  const int set = PyDict_SetItem(self->kwargs, g_str_attachment, att);
  Py_DECREF(att);
  if (set < 0) {
    Py_DECREF(data);
    return nullptr;
  }
  PyObject* r = PyObject_VectorcallDict(self->put, &data, 1, self->kwargs);
  Py_DECREF(data);
  if (!r) return nullptr;
  Py_DECREF(r);
  ++self->published;
  Py_RETURN_NONE;
}

int putter_init(PyObject* self_obj, PyObject* args, PyObject* kwds) {
  auto* self = reinterpret_cast<Putter*>(self_obj);
  static const char* kw[] = {"put", "gid", "destroyed_message", nullptr};
  PyObject *put = nullptr, *msg = nullptr;
  Py_buffer gid{};
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "Oy*U", const_cast<char**>(kw), &put, &gid, &msg)) return -1;
  if (gid.len != kGidSize) {
    PyBuffer_Release(&gid);
    PyErr_Format(PyExc_ValueError, "gid must be %zd bytes, got %zd", kGidSize, gid.len);
    return -1;
  }
  if (!PyCallable_Check(put)) {
    PyBuffer_Release(&gid);
    PyErr_SetString(PyExc_TypeError, "put must be callable");
    return -1;
  }
  self->tail[0] = static_cast<unsigned char>(kGidSize);
  std::memcpy(self->tail + 1, gid.buf, kGidSize);
  PyBuffer_Release(&gid);
  set_ref(self->put, put);
  set_ref(self->destroyed_message, msg);
  set_ref(self->serialize, Py_None);
  set_ref(self->type_name, Py_None);
  self->seq = self->published = self->closed = 0;
  self->vectorcall = putter_call;
  return 0;
}

// serialize_with(serialize, type_name): later calls take messages too
PyObject* putter_serialize_with(PyObject* self_obj, PyObject* const* args, Py_ssize_t nargs) {
  auto* self = reinterpret_cast<Putter*>(self_obj);
  if (nargs != 2 || !PyCallable_Check(args[0]) || !PyUnicode_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "serialize_with(serialize: callable, type_name: str)");
    return nullptr;
  }
  set_ref(self->serialize, args[0]);
  set_ref(self->type_name, args[1]);
  Py_RETURN_NONE;
}

PyMethodDef putter_methods[] = {
    {"serialize_with", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&putter_serialize_with)),
     METH_FASTCALL, "serialize_with(serialize, type_name): later calls also take a message, put as serialize(msg, type_name)"},
    {"close", hri_pytype::close<Putter>, METH_NOARGS, hri_pytype::Refs<Putter>::close_doc},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef putter_getset[] = {
    {"published", get_count<Putter, &Putter::published>, nullptr, "samples put so far", nullptr},
    {"sequence_number", get_count<Putter, &Putter::seq>, nullptr, "sequence number of the last put (0: none yet)",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject PutterType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ------------------------------------------------------------------------------ SampleGate
struct SampleGate {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* deliver;
  PyObject* slow;
  PyObject* on_error;
  PyObject* key;  // the subscriber's key expression (str)
  long long received;
  int closed;
};

}  // namespace

template <>
struct hri_pytype::Refs<SampleGate> {
  static constexpr PyObject* SampleGate::*list[] = {&SampleGate::deliver, &SampleGate::slow, &SampleGate::on_error,
                                                    &SampleGate::key};
  static constexpr const char* close_doc = "close(): no sample is delivered any more.";
};

namespace {

// obj.<name>.to_bytes(), or None when obj.<name> is None; nullptr with an exception set on error
PyObject* zbytes_attr(PyObject* obj, PyObject* name) {
  PyObject* z = PyObject_GetAttr(obj, name);
  if (!z || z == Py_None) return z;
  PyObject* b = PyObject_CallMethodNoArgs(z, g_str_to_bytes);
  Py_DECREF(z);
  return b;
}

void report(SampleGate* self, PyObject* cause) {
  // the pending exception goes to on_error(cause, exc); an error in on_error is swallowed
  PyObject *type = nullptr, *exc = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &exc, &tb);
  PyErr_NormalizeException(&type, &exc, &tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  if (self->on_error && exc) {
    PyObject* r = PyObject_CallFunctionObjArgs(self->on_error, cause, exc, nullptr);
    if (r)
      Py_DECREF(r);
    else
      PyErr_Clear();
  }
  Py_XDECREF(exc);
}

bool fast_checks(PyObject* att, PyObject* payload) {
  if (!PyBytes_CheckExact(att) || PyBytes_GET_SIZE(att) != kAttachmentSize ||
      static_cast<unsigned char>(PyBytes_AS_STRING(att)[16]) != kGidSize)
    return false;
  if (!PyBytes_CheckExact(payload) || PyBytes_GET_SIZE(payload) <= 4) return false;
  const char* h = PyBytes_AS_STRING(payload);
  return h[0] == 0 && (h[1] == 0 || h[1] == 1) && h[2] == 0 && h[3] == 0;
}

PyObject* gate_call(PyObject* self_obj, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<SampleGate*>(self_obj);
  if (PyVectorcall_NARGS(nargsf) != 1 || kwnames) {
    PyErr_SetString(PyExc_TypeError, "gate(sample) takes one positional argument");
    return nullptr;
  }
  keep_thread_state();
  if (self->closed) Py_RETURN_NONE;
  PyObject* sample = args[0];
  PyObject *payload = nullptr, *att = nullptr, *meta = nullptr;
  payload = zbytes_attr(sample, g_str_payload);
  if (payload) att = zbytes_attr(sample, g_str_attachment);
  if (!att) {
    report(self, g_str_internal);
    goto done;
  }
  if (!fast_checks(att, payload)) {
    PyObject* r = PyObject_CallFunctionObjArgs(self->slow, sample, self->key, att, payload, nullptr);
    if (!r) {
      report(self, g_str_internal);
      goto done;
    }
    const int ok = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (ok != 1) {
      if (ok < 0) report(self, g_str_internal);
      goto done;
    }
    if (self->closed) goto done;
  }
  meta = PyTuple_Pack(2, att, self->key);
  if (!meta) {
    report(self, g_str_internal);
    goto done;
  }
  ++self->received;
  {
    PyObject* call_args[3] = {nullptr, payload, meta};
    PyObject* r = PyObject_Vectorcall(self->deliver, call_args + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
    if (r)
      Py_DECREF(r);
    else
      report(self, g_str_deliver_failed);
  }
done:
  Py_XDECREF(meta);
  Py_XDECREF(att);
  Py_XDECREF(payload);
  Py_RETURN_NONE;
}

int gate_init(PyObject* self_obj, PyObject* args, PyObject* kwds) {
  auto* self = reinterpret_cast<SampleGate*>(self_obj);
  static const char* kw[] = {"key", "deliver", "slow", "on_error", nullptr};
  PyObject *key = nullptr, *deliver = nullptr, *slow = nullptr, *on_error = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "UOOO", const_cast<char**>(kw), &key, &deliver, &slow, &on_error))
    return -1;
  if (!PyCallable_Check(deliver) || !PyCallable_Check(slow) || !PyCallable_Check(on_error)) {
    PyErr_SetString(PyExc_TypeError, "deliver, slow and on_error must be callable");
    return -1;
  }
  set_ref(self->deliver, deliver);
  set_ref(self->slow, slow);
  set_ref(self->on_error, on_error);
  set_ref(self->key, key);
  self->received = self->closed = 0;
  self->vectorcall = gate_call;
  return 0;
}

PyObject* gate_get_deliver(PyObject* self_obj, void*) {
  PyObject* d = reinterpret_cast<SampleGate*>(self_obj)->deliver;
  return Py_NewRef(d ? d : Py_None);
}

int gate_set_deliver(PyObject* self_obj, PyObject* value, void*) {
  if (!value || !PyCallable_Check(value)) {
    PyErr_SetString(PyExc_TypeError, "deliver must be callable");
    return -1;
  }
  set_ref(reinterpret_cast<SampleGate*>(self_obj)->deliver, value);
  return 0;
}

PyGetSetDef gate_getset[] = {
    {"received", get_count<SampleGate, &SampleGate::received>, nullptr, "samples delivered so far", nullptr},
    {"deliver", gate_get_deliver, gate_set_deliver, "deliver(payload, (attachment, key))", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject SampleGateType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

void bind_hot_path(py::module_& m) {
  g_str_payload = PyUnicode_InternFromString("payload");
  g_str_attachment = PyUnicode_InternFromString("attachment");
  g_str_to_bytes = PyUnicode_InternFromString("to_bytes");
  g_str_internal = PyUnicode_InternFromString("internal");
  g_str_deliver_failed = PyUnicode_InternFromString("deliver_failed");
  hri_pytype::ready<Putter>(
      PutterType, "hri_runtime._cdr.Putter",
      "Putter(put, gid, destroyed_message): putter(data) puts data with the rmw_zenoh attachment (after "
      "serialize_with(serialize, type_name): a message is serialized first).",
      offsetof(Putter, vectorcall), putter_init, putter_methods, putter_getset);
  hri_pytype::ready<SampleGate>(
      SampleGateType, "hri_runtime._cdr.SampleGate",
      "SampleGate(key, deliver, slow, on_error): gate(sample) checks a sample and delivers it.",
      offsetof(SampleGate, vectorcall), gate_init, hri_pytype::close_methods<SampleGate>, gate_getset);
  m.add_object("Putter", py::handle(reinterpret_cast<PyObject*>(&PutterType)).inc_ref());
  m.add_object("SampleGate", py::handle(reinterpret_cast<PyObject*>(&SampleGateType)).inc_ref());
}
