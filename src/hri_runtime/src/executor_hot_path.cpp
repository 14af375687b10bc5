// The executor's per-sample path in C (part of the hri_runtime._cdr extension), used by
// hri_runtime.executors.Executor and hri_runtime.subscription.Subscription:
//
// * RunLock(): the executor's run lock, a plain (non-reentrant) lock with threading.Lock's
//   interface: acquire(blocking=True, timeout=-1) -> bool, release(), locked(), ``with``. Every
//   callback of a context runs while holding it (ROS 2's mutually exclusive callback group).
// * Inline(ready, wake): what a delivering thread needs to know of its executor: ``lock`` (its
//   RunLock), ``ready`` (the executor's deque of queued work), ``wake()``, ``on_error(exc, where)``
//   (None: an exception of a callback propagates), ``enabled`` (Executor.inline), ``spinning``
//   (an executor thread spins), ``sim_timers`` (timers on a sim clock), ``callback_thread``
//   (ident of the thread running a callback inline, None: none) and ``runs`` (callbacks run
//   inline so far).
// * Delivery(inline, queue, enqueue, callback, deserialize, type_name, reject, decode_error): one
//   subscription's ``deliver(data, meta=None)``, called by the transport for every sample. When
//   the executor is enabled, spinning, idle (``ready`` empty) and not running a callback (the
//   lock is free), the callback runs right here, holding the lock, as ``run(data)``; otherwise
//   ``enqueue(queue, data, meta)`` (Executor.enqueue: the keep-last queue; the executor later
//   calls ``run(data, meta)``). ``run`` counts ``received``, then calls ``callback(data)`` when
//   ``deserialize`` is None (raw bytes) or ``callback(deserialize(data, type_name))``; a payload
//   that ``deserialize`` refuses with ``decode_error`` goes to ``reject(text)`` instead (the
//   callback is not called). After ``close()`` nothing runs inline (samples still go to
//   ``enqueue``, which drops them for an inactive queue) and ``run`` ignores its argument.
// An inline run does what Executor.run_one does for a queued item (same lock, same error
// handling, same counters); after it, ``wake()`` is called when work was queued meanwhile or
// sim timers exist (the executor thread checks them). The Python side is executors.py.
#include <pybind11/pybind11.h>

#include "pytype.hpp"

namespace py = pybind11;

namespace {

// the pending exception, normalized (a new reference; the error indicator is cleared)
PyObject* take_exception() {
  PyObject *type = nullptr, *exc = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &exc, &tb);
  PyErr_NormalizeException(&type, &exc, &tb);
  if (exc && tb) PyException_SetTraceback(exc, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  return exc;
}

// ------------------------------------------------------------------------------ RunLock
struct RunLock {
  PyObject_HEAD
  PyThread_type_lock lock;
  int held;
};

// acquire without waiting (the GIL stays held); true when acquired
bool try_acquire(RunLock* l) {
  if (!PyThread_acquire_lock(l->lock, NOWAIT_LOCK)) return false;
  l->held = 1;
  return true;
}

void release(RunLock* l) {
  l->held = 0;
  PyThread_release_lock(l->lock);
}

PyObject* runlock_new(PyTypeObject* type, PyObject*, PyObject*) {
  auto* self = reinterpret_cast<RunLock*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  self->lock = PyThread_allocate_lock();
  self->held = 0;
  if (!self->lock) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  return reinterpret_cast<PyObject*>(self);
}

void runlock_dealloc(PyObject* self_obj) {
  auto* self = reinterpret_cast<RunLock*>(self_obj);
  if (self->lock) {
    if (self->held) PyThread_release_lock(self->lock);
    PyThread_free_lock(self->lock);
  }
  Py_TYPE(self_obj)->tp_free(self_obj);
}

// acquire(blocking=True, timeout=-1): waits with the GIL released
PyObject* runlock_acquire(PyObject* self_obj, PyObject* args, PyObject* kwds) {
  auto* self = reinterpret_cast<RunLock*>(self_obj);
  static const char* kw[] = {"blocking", "timeout", nullptr};
  int blocking = 1;
  double timeout = -1.0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|pd", const_cast<char**>(kw), &blocking, &timeout)) return nullptr;
  if (!blocking && timeout != -1.0) {
    PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
    return nullptr;
  }
  if (timeout < 0 && timeout != -1.0) {
    PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
    return nullptr;
  }
  if (try_acquire(self)) Py_RETURN_TRUE;
  if (!blocking) Py_RETURN_FALSE;
  const PY_TIMEOUT_T us = timeout < 0 ? -1 : static_cast<PY_TIMEOUT_T>(timeout * 1e6);
  PyLockStatus r;
  Py_BEGIN_ALLOW_THREADS r = PyThread_acquire_lock_timed(self->lock, us, 0);
  Py_END_ALLOW_THREADS if (r != PY_LOCK_ACQUIRED) Py_RETURN_FALSE;
  self->held = 1;
  Py_RETURN_TRUE;
}

PyObject* runlock_release(PyObject* self_obj, PyObject*) {
  auto* self = reinterpret_cast<RunLock*>(self_obj);
  if (!self->held) {
    PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
    return nullptr;
  }
  release(self);
  Py_RETURN_NONE;
}

PyObject* runlock_enter(PyObject* self_obj, PyObject*) {
  PyObject* args = PyTuple_New(0);
  if (!args) return nullptr;
  PyObject* r = runlock_acquire(self_obj, args, nullptr);
  Py_DECREF(args);
  return r;
}

PyObject* runlock_exit(PyObject* self_obj, PyObject*) {
  PyObject* r = runlock_release(self_obj, nullptr);
  if (!r) return nullptr;
  Py_DECREF(r);
  Py_RETURN_FALSE;
}

PyObject* runlock_locked(PyObject* self_obj, PyObject*) {
  return PyBool_FromLong(reinterpret_cast<RunLock*>(self_obj)->held);
}

PyMethodDef runlock_methods[] = {
    {"acquire", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&runlock_acquire)),
     METH_VARARGS | METH_KEYWORDS, "acquire(blocking=True, timeout=-1) -> bool"},
    {"release", runlock_release, METH_NOARGS, "release(): RuntimeError when not held"},
    {"locked", runlock_locked, METH_NOARGS, "locked() -> bool"},
    {"__enter__", runlock_enter, METH_NOARGS, nullptr},
    {"__exit__", runlock_exit, METH_VARARGS, nullptr},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject RunLockType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ------------------------------------------------------------------------------ Inline
struct Inline {
  PyObject_HEAD
  PyObject* lock;  // RunLock
  PyObject* ready;
  PyObject* wake;
  PyObject* on_error;
  int enabled;
  int spinning;
  long long sim_timers;
  unsigned long callback_thread;  // 0: none
  long long runs;
};

}  // namespace

template <>
struct hri_pytype::Refs<Inline> {
  static constexpr PyObject* Inline::*list[] = {&Inline::lock, &Inline::ready, &Inline::wake, &Inline::on_error};
};

namespace {

int inline_init(PyObject* self_obj, PyObject* args, PyObject* kwds) {
  auto* self = reinterpret_cast<Inline*>(self_obj);
  static const char* kw[] = {"ready", "wake", nullptr};
  PyObject *ready = nullptr, *wake = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO", const_cast<char**>(kw), &ready, &wake)) return -1;
  if (!PyCallable_Check(wake)) {
    PyErr_SetString(PyExc_TypeError, "wake must be callable");
    return -1;
  }
  PyObject* lock = runlock_new(&RunLockType, nullptr, nullptr);
  if (!lock) return -1;
  Py_XSETREF(self->lock, lock);
  hri_pytype::set_ref(self->ready, ready);
  hri_pytype::set_ref(self->wake, wake);
  hri_pytype::set_ref(self->on_error, Py_None);
  self->enabled = self->spinning = 0;
  self->sim_timers = self->runs = 0;
  self->callback_thread = 0;
  return 0;
}

template <int Inline::*M>
PyObject* get_flag(PyObject* self, void*) {
  return PyBool_FromLong(reinterpret_cast<Inline*>(self)->*M);
}

template <int Inline::*M>
int set_flag(PyObject* self, PyObject* value, void*) {
  const int v = value ? PyObject_IsTrue(value) : -1;
  if (v < 0) {
    if (!value) PyErr_SetString(PyExc_TypeError, "cannot delete this attribute");
    return -1;
  }
  reinterpret_cast<Inline*>(self)->*M = v;
  return 0;
}

PyObject* get_sim_timers(PyObject* self, void*) {
  return PyLong_FromLongLong(reinterpret_cast<Inline*>(self)->sim_timers);
}

int set_sim_timers(PyObject* self, PyObject* value, void*) {
  const long long v = value ? PyLong_AsLongLong(value) : -1;
  if (v == -1 && (!value || PyErr_Occurred())) {
    if (!value) PyErr_SetString(PyExc_TypeError, "cannot delete sim_timers");
    return -1;
  }
  reinterpret_cast<Inline*>(self)->sim_timers = v;
  return 0;
}

PyObject* get_callback_thread(PyObject* self, void*) {
  const unsigned long t = reinterpret_cast<Inline*>(self)->callback_thread;
  if (!t) Py_RETURN_NONE;
  return PyLong_FromUnsignedLong(t);
}

int set_callback_thread(PyObject* self, PyObject* value, void*) {
  unsigned long t = 0;
  if (value && value != Py_None) {
    t = PyLong_AsUnsignedLong(value);
    if (PyErr_Occurred()) return -1;
  }
  reinterpret_cast<Inline*>(self)->callback_thread = t;
  return 0;
}

PyObject* get_on_error(PyObject* self, void*) { return Py_NewRef(reinterpret_cast<Inline*>(self)->on_error); }

int set_on_error(PyObject* self, PyObject* value, void*) {
  if (!value || (value != Py_None && !PyCallable_Check(value))) {
    PyErr_SetString(PyExc_TypeError, "on_error must be callable or None");
    return -1;
  }
  hri_pytype::set_ref(reinterpret_cast<Inline*>(self)->on_error, value);
  return 0;
}

PyObject* get_lock(PyObject* self, void*) { return Py_NewRef(reinterpret_cast<Inline*>(self)->lock); }

PyGetSetDef inline_getset[] = {
    {"lock", get_lock, nullptr, "the executor's RunLock", nullptr},
    {"enabled", get_flag<&Inline::enabled>, set_flag<&Inline::enabled>, "run idle-time callbacks inline", nullptr},
    {"spinning", get_flag<&Inline::spinning>, set_flag<&Inline::spinning>, "an executor thread spins", nullptr},
    {"sim_timers", get_sim_timers, set_sim_timers, "timers on a sim clock", nullptr},
    {"callback_thread", get_callback_thread, set_callback_thread,
     "ident of the thread running a callback inline (None: none)", nullptr},
    {"on_error", get_on_error, set_on_error, "on_error(exc, where) or None (an exception propagates)", nullptr},
    {"runs", hri_pytype::get_count<Inline, &Inline::runs>, nullptr, "callbacks run inline so far", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject InlineType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ------------------------------------------------------------------------------ Delivery
struct Delivery {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* inl;  // Inline
  PyObject* queue;
  PyObject* enqueue;
  PyObject* callback;
  PyObject* deserialize;  // None: raw bytes to the callback
  PyObject* type_name;
  PyObject* reject;
  PyObject* decode_error;
  long long received;
  int closed;
};

}  // namespace

template <>
struct hri_pytype::Refs<Delivery> {
  static constexpr PyObject* Delivery::*list[] = {&Delivery::inl,         &Delivery::queue,     &Delivery::enqueue,
                                                  &Delivery::callback,    &Delivery::deserialize, &Delivery::type_name,
                                                  &Delivery::reject,      &Delivery::decode_error};
  static constexpr const char* close_doc = "close(): nothing runs inline any more and run() ignores its argument.";
};

namespace {

PyObject* call1(PyObject* fn, PyObject* arg) {
  PyObject* a[2] = {nullptr, arg};
  return PyObject_Vectorcall(fn, a + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
}

// the callback for data (decoded unless raw); a new reference, nullptr with an exception set
PyObject* run_data(Delivery* self, PyObject* data) {
  if (self->closed) Py_RETURN_NONE;
  ++self->received;
  if (self->deserialize == Py_None) return call1(self->callback, data);
  PyObject* a[3] = {nullptr, data, self->type_name};
  PyObject* msg = PyObject_Vectorcall(self->deserialize, a + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
  if (!msg) {
    if (!PyErr_ExceptionMatches(self->decode_error)) return nullptr;
    PyObject* exc = take_exception();
    PyObject* text = exc ? PyObject_Str(exc) : nullptr;
    Py_XDECREF(exc);
    if (!text) return nullptr;
    PyObject* r = call1(self->reject, text);
    Py_DECREF(text);
    return r;
  }
  PyObject* r = call1(self->callback, msg);
  Py_DECREF(msg);
  return r;
}

PyObject* g_str_where = nullptr;  // "callback"

// deliver(data, meta=None)
PyObject* delivery_call(PyObject* self_obj, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<Delivery*>(self_obj);
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs < 1 || nargs > 2 || kwnames) {
    PyErr_SetString(PyExc_TypeError, "deliver(data, meta=None) takes one or two positional arguments");
    return nullptr;
  }
  PyObject* data = args[0];
  PyObject* meta = nargs == 2 ? args[1] : Py_None;
  auto* g = reinterpret_cast<Inline*>(self->inl);
  auto* lock = reinterpret_cast<RunLock*>(g->lock);
  if (g->enabled && g->spinning && !self->closed && try_acquire(lock)) {
    // nothing queued (so this queue has nothing either): a deque's length is read atomically; an
    // item queued concurrently arrived concurrently (no order between the two)
    if (PyObject_Size(g->ready) == 0) {
      g->callback_thread = PyThread_get_thread_ident();
      ++g->runs;
      PyObject* r = run_data(self, data);
      bool failed = false;
      if (r) {
        Py_DECREF(r);
      } else if (g->on_error != Py_None && PyErr_ExceptionMatches(PyExc_Exception)) {
        PyObject* exc = take_exception();
        PyObject* call_args[3] = {nullptr, exc ? exc : Py_None, g_str_where};
        PyObject* h = PyObject_Vectorcall(g->on_error, call_args + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
        Py_XDECREF(exc);
        if (h)
          Py_DECREF(h);
        else
          failed = true;
      } else {
        failed = true;
      }
      g->callback_thread = 0;
      const bool wake = !failed && (PyObject_Size(g->ready) > 0 || g->sim_timers > 0);
      release(lock);
      if (failed) return nullptr;
      if (wake) {
        PyObject* w = PyObject_CallNoArgs(g->wake);
        if (!w) return nullptr;
        Py_DECREF(w);
      }
      Py_RETURN_NONE;
    }
    release(lock);
  }
  PyObject* a[4] = {nullptr, self->queue, data, meta};
  return PyObject_Vectorcall(self->enqueue, a + 1, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
}

// run(data, meta=None): the queue's callback (the executor holds the lock)
PyObject* delivery_run(PyObject* self_obj, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 1 || nargs > 2) {
    PyErr_SetString(PyExc_TypeError, "run(data, meta=None) takes one or two arguments");
    return nullptr;
  }
  return run_data(reinterpret_cast<Delivery*>(self_obj), args[0]);
}

int delivery_init(PyObject* self_obj, PyObject* args, PyObject* kwds) {
  auto* self = reinterpret_cast<Delivery*>(self_obj);
  static const char* kw[] = {"inline", "queue",  "enqueue",      "callback", "deserialize",
                             "type_name", "reject", "decode_error", nullptr};
  PyObject *inl, *queue, *enqueue, *callback, *deserialize, *type_name, *reject, *decode_error;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!OOOOUOO", const_cast<char**>(kw), &InlineType, &inl, &queue,
                                   &enqueue, &callback, &deserialize, &type_name, &reject, &decode_error))
    return -1;
  if (!PyCallable_Check(enqueue) || !PyCallable_Check(callback) || !PyCallable_Check(reject) ||
      (deserialize != Py_None && !PyCallable_Check(deserialize))) {
    PyErr_SetString(PyExc_TypeError, "enqueue, callback, reject (and deserialize unless None) must be callable");
    return -1;
  }
  if (!PyExceptionClass_Check(decode_error)) {
    PyErr_SetString(PyExc_TypeError, "decode_error must be an exception class");
    return -1;
  }
  hri_pytype::set_ref(self->inl, inl);
  hri_pytype::set_ref(self->queue, queue);
  hri_pytype::set_ref(self->enqueue, enqueue);
  hri_pytype::set_ref(self->callback, callback);
  hri_pytype::set_ref(self->deserialize, deserialize);
  hri_pytype::set_ref(self->type_name, type_name);
  hri_pytype::set_ref(self->reject, reject);
  hri_pytype::set_ref(self->decode_error, decode_error);
  self->received = self->closed = 0;
  self->vectorcall = delivery_call;
  return 0;
}

PyObject* get_callback(PyObject* self, void*) { return Py_NewRef(reinterpret_cast<Delivery*>(self)->callback); }

int set_callback(PyObject* self, PyObject* value, void*) {
  if (!value || !PyCallable_Check(value)) {
    PyErr_SetString(PyExc_TypeError, "callback must be callable");
    return -1;
  }
  hri_pytype::set_ref(reinterpret_cast<Delivery*>(self)->callback, value);
  return 0;
}

PyGetSetDef delivery_getset[] = {
    {"received", hri_pytype::get_count<Delivery, &Delivery::received>, nullptr, "samples run so far", nullptr},
    {"callback", get_callback, set_callback, "the subscription's callback", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMethodDef delivery_methods[] = {
    {"run", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&delivery_run)), METH_FASTCALL,
     "run(data, meta=None): decode data (unless raw) and call the callback (the executor holds the lock)"},
    {"close", hri_pytype::close<Delivery>, METH_NOARGS, hri_pytype::Refs<Delivery>::close_doc},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject DeliveryType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

void bind_executor_hot_path(py::module_& m) {
  g_str_where = PyUnicode_InternFromString("callback");
  RunLockType.tp_name = "hri_runtime._cdr.RunLock";
  RunLockType.tp_doc = "RunLock(): the executor's run lock (threading.Lock's interface).";
  RunLockType.tp_basicsize = sizeof(RunLock);
  RunLockType.tp_flags = Py_TPFLAGS_DEFAULT;
  RunLockType.tp_new = runlock_new;
  RunLockType.tp_dealloc = runlock_dealloc;
  RunLockType.tp_methods = runlock_methods;
  if (PyType_Ready(&RunLockType) < 0) throw py::error_already_set();
  hri_pytype::ready<Inline>(InlineType, "hri_runtime._cdr.Inline",
                            "Inline(ready, wake): the executor state a delivering thread reads.", 0, inline_init,
                            nullptr, inline_getset);
  hri_pytype::ready<Delivery>(
      DeliveryType, "hri_runtime._cdr.Delivery",
      "Delivery(inline, queue, enqueue, callback, deserialize, type_name, reject, decode_error): a subscription's "
      "deliver(data, meta=None).",
      offsetof(Delivery, vectorcall), delivery_init, delivery_methods, delivery_getset);
  m.add_object("RunLock", py::handle(reinterpret_cast<PyObject*>(&RunLockType)).inc_ref());
  m.add_object("Inline", py::handle(reinterpret_cast<PyObject*>(&InlineType)).inc_ref());
  m.add_object("Delivery", py::handle(reinterpret_cast<PyObject*>(&DeliveryType)).inc_ref());
}
