// hri_runtime._cdr: the CDR (XCDR1) codec of ROS 2 messages, driven by per-type plans.
//
// Contract with Python (everything this extension reads from Python objects; nothing else):
//
// 1. Plan description, built by hri_runtime.impl.cdr_plan.describe (documented there):
//      (type_name: str, cls: type, ops: tuple)
//      op = (code: int, name: str | None, arg: int, n: int, sub: description | None, dtype_num: int)
//    code / arg use the numbers of enum OpCode / enum Kind below; the extension exports them as
//    OP_CODES / KIND_CODES (name -> number) and cdr_plan takes its numbers from there.
//    compile_plan(description) -> plan (an opaque capsule).
// 2. Messages: instances of the plan's cls (or of any class whose __msgtype__ equals type_name);
//    fields are read and set as attributes named as in the ops. Decoded messages are made with
//    cls.__new__ (no __init__), primitive arrays/sequences become numpy arrays of dtype_num.
// 3. The msgs front: make_front(plans, slow_serialize, slow_deserialize, decode_error) returns
//    C functions (serialize(msg, type_name=None), deserialize(data, type_name)) that look the
//    type name (as given, or msg.__msgtype__) up in the dict ``plans`` {type name: plan} and run
//    that plan; a missing entry, keyword arguments or an encode error go to the slow Python
//    function (hri_runtime.msgs fills ``plans`` there). A decode error is raised as decode_error.
//
// Wire: the bytes are those of rosbags' serialize_cdr bit for bit (the op list is rosbags' CDR
// code generator turned into data, padding ops included):
//
//   payload = 00 01 00 00 (CDR_LE; 00 00 00 00 = CDR_BE accepted on decode) + body
//   body    = fields in order; primitives little endian; string = uint32 (len + 1), bytes, NUL;
//             sequence = uint32 count + elements; padding zero bytes, offsets counted from the
//             end of the header; at most 3 trailing padding bytes accepted on decode.
//
// serialize(plan, msg) -> bytes and deserialize(plan, data) -> msg are METH_FASTCALL functions
// (no pybind11 dispatcher on the hot path). Every length is checked against the bytes left
// before anything is allocated: malformed input raises DecodeError, never crashes. Encode errors
// (wrong type, int out of range, wrong array length) raise EncodeError whose message starts with
// the field path ("sensor_msgs/msg/JointState.header.stamp.sec: ..."). The GIL is held
// throughout (Python objects are read and built); encoding writes straight into the bytes object
// it returns.
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace py = pybind11;

// numpy through its public C API only (numpy/arrayobject.h: PyArray_NDIM, PyArray_DATA, ...; the
// table is imported in the module init), never a mirror of its structs
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL hri_runtime_numpy_c_api
#include <numpy/arrayobject.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the hri_runtime CDR codec assumes a little-endian host"
#endif

namespace {

// primitive kinds (byte = int8 and char = uint8 as in rosbags) and op codes: exported as
// KIND_CODES / OP_CODES, from which hri_runtime.impl.cdr_plan takes its numbers
namespace Kind {
enum : int { BOOL = 0, I8, U8, I16, U16, I32, U32, I64, U64, F32, F64, STR };
}
constexpr const char* kKindNames[] = {"bool",   "int8",   "uint8", "int16",   "uint16",  "int32",
                                      "uint32", "int64",  "uint64", "float32", "float64", "string"};
constexpr int kKindSize[] = {1, 1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 0};

namespace OpCode {
enum : int { ALIGN = 0, SCALAR, ARRAY, SEQ, MSG, MSG_ARRAY, MSG_SEQ };
}
constexpr const char* kOpNames[] = {"ALIGN", "SCALAR", "ARRAY", "SEQ", "MSG", "MSG_ARRAY", "MSG_SEQ"};

constexpr const char* kCapsuleName = "hri_runtime._cdr.Plan";

PyObject* g_encode_error = nullptr;
PyObject* g_decode_error = nullptr;
PyObject* g_empty_tuple = nullptr;
PyObject* g_str_msgtype = nullptr;
PyTypeObject* g_np_bool_type = nullptr;

struct Plan;

struct Op {
  int code = 0;
  PyObject* name = nullptr;  // interned field name (owned)
  std::string name_s;
  int arg = 0;               // kind / alignment
  Py_ssize_t n = 0;          // fixed length / alignment after a sequence count
  std::shared_ptr<Plan> sub;
  int dtype_num = -1;
};

struct Plan {
  std::string type_name;
  PyObject* type_name_obj = nullptr;  // owned
  PyTypeObject* cls = nullptr;        // owned
  bool generic_setattr = false;       // cls uses object's __setattr__/__getattribute__
  bool generic_getattr = false;
  mutable size_t size_hint = 64;      // bytes of the last message encoded (the next one's allocation)
  std::vector<Op> ops;
  ~Plan() {
    for (auto& op : ops) Py_XDECREF(op.name);
    Py_XDECREF(type_name_obj);
    Py_XDECREF(reinterpret_cast<PyObject*>(cls));
  }
};

// ------------------------------------------------------------------------------ errors
struct Fail {
  std::string path;  // "a.b[3].c" (prefixes added while unwinding)
  std::string msg;
};

[[noreturn]] void fail(std::string msg) { throw Fail{std::string(), std::move(msg)}; }

std::string py_str(PyObject* o) {
  if (!o) return std::string("?");
  PyObject* s = PyObject_Str(o);
  if (!s) {
    PyErr_Clear();
    return std::string("?");
  }
  Py_ssize_t n = 0;
  const char* c = PyUnicode_AsUTF8AndSize(s, &n);
  std::string out = c ? std::string(c, static_cast<size_t>(n)) : std::string("?");
  if (!c) PyErr_Clear();
  Py_DECREF(s);
  return out;
}

// The pending Python exception becomes a Fail ("TypeName: message").
[[noreturn]] void fail_from_py(const std::string& ctx) {
  PyObject *t = nullptr, *v = nullptr, *tb = nullptr;
  PyErr_Fetch(&t, &v, &tb);
  PyErr_NormalizeException(&t, &v, &tb);
  std::string s = ctx;
  if (t) s += std::string(reinterpret_cast<PyTypeObject*>(t)->tp_name) + ": " + py_str(v);
  Py_XDECREF(t);
  Py_XDECREF(v);
  Py_XDECREF(tb);
  fail(s);
}

void prefix(Fail& f, const std::string& part) {
  if (f.path.empty() || f.path[0] == '[')
    f.path = part + f.path;
  else
    f.path = part + "." + f.path;
}

const char* type_name_of(PyObject* o) { return Py_TYPE(o)->tp_name; }

// ------------------------------------------------------------------------------ encode
// The output is written straight into a bytes object (PyBytes_FromStringAndSize(NULL, n), filled
// before anything else sees it; public C API only), allocated with the size of this plan's last
// message: a message of that size (every message of a fixed-size type) is returned as it is, with
// no copy. A larger one moves to a bigger bytes object (doubling); one that ends shorter than its
// allocation is copied once into a bytes object of its length.
struct Out {
  PyObject* bytes = nullptr;  // owned (refcount 1) until take()
  char* data = nullptr;
  size_t cap = 0;
  size_t len = 0;
  explicit Out(size_t hint) { grow(std::max<size_t>(hint, 8)); }
  ~Out() { Py_XDECREF(bytes); }
  Out(const Out&) = delete;
  Out& operator=(const Out&) = delete;
  void grow(size_t want) {
    PyObject* next = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(want));
    if (!next) {
      PyErr_Clear();
      fail("out of memory");
    }
    if (bytes) {
      std::memcpy(PyBytes_AS_STRING(next), data, len);
      Py_DECREF(bytes);
    }
    bytes = next;
    data = PyBytes_AS_STRING(bytes);
    cap = want;
  }
  void reserve(size_t extra) {
    if (len + extra > cap) grow(std::max(cap * 2, len + extra + 256));
  }
  // the bytes object of exactly len bytes (nullptr with an exception set on failure)
  PyObject* take() {
    if (len != cap) return PyBytes_FromStringAndSize(data, static_cast<Py_ssize_t>(len));
    PyObject* r = bytes;
    bytes = nullptr;
    return r;
  }
  // offsets counted from the end of the 4-byte header
  void align(size_t a) {
    const size_t body = len - 4;
    const size_t pad = ((body + a - 1) & ~(a - 1)) - body;
    if (pad) {
      reserve(pad);
      std::memset(data + len, 0, pad);
      len += pad;
    }
  }
  template <class T>
  void put(T v) {
    reserve(sizeof(T));
    std::memcpy(data + len, &v, sizeof(T));
    len += sizeof(T);
  }
  void put_bytes(const void* p, size_t n) {
    reserve(n);
    if (n) std::memcpy(data + len, p, n);
    len += n;
  }
};

long long as_ll(PyObject* v, bool* overflow_pos) {
  // an int or an object with __index__ (numpy integers); floats and strings are rejected
  *overflow_pos = false;
  PyObject* idx = nullptr;
  if (!PyLong_Check(v)) {
    if (PyFloat_Check(v)) fail(std::string("expected an integer, got float"));
    idx = PyNumber_Index(v);
    if (!idx) {
      PyErr_Clear();
      fail(std::string("expected an integer, got ") + type_name_of(v));
    }
    v = idx;
  }
  int ovf = 0;
  long long x = PyLong_AsLongLongAndOverflow(v, &ovf);
  if (x == -1 && PyErr_Occurred()) {
    Py_XDECREF(idx);
    fail_from_py("");
  }
  if (ovf > 0) {
    unsigned long long u = PyLong_AsUnsignedLongLong(v);
    Py_XDECREF(idx);
    if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
      PyErr_Clear();
      fail(std::string("integer out of range"));
    }
    *overflow_pos = true;
    return static_cast<long long>(u);
  }
  Py_XDECREF(idx);
  if (ovf < 0) fail(std::string("integer out of range"));
  return x;
}

template <class T>
void put_int(Out& o, PyObject* v, const char* tname) {
  bool big = false;
  long long x = as_ll(v, &big);
  if constexpr (std::is_same_v<T, uint64_t>) {
    if (!big && x < 0) fail(std::string("integer ") + std::to_string(x) + " out of range for " + tname);
    o.put<uint64_t>(static_cast<uint64_t>(x));
  } else {
    if (big || x < static_cast<long long>(std::numeric_limits<T>::min()) ||
        x > static_cast<long long>(std::numeric_limits<T>::max()))
      fail(std::string("integer ") + (big ? py_str(v) : std::to_string(x)) + " out of range for " + tname);
    o.put<T>(static_cast<T>(x));
  }
}

double as_double(PyObject* v) {
  if (PyFloat_Check(v)) return PyFloat_AS_DOUBLE(v);
  if (PyUnicode_Check(v) || PyBytes_Check(v) || PyByteArray_Check(v))
    fail(std::string("expected a float, got ") + type_name_of(v));
  double d = PyFloat_AsDouble(v);  // int (exact range check), __float__, __index__
  if (d == -1.0 && PyErr_Occurred()) {
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      fail(std::string("expected a float, got ") + type_name_of(v));
    }
    fail_from_py("");
  }
  return d;
}

void put_string(Out& o, PyObject* v) {
  if (!PyUnicode_Check(v)) fail(std::string("expected a str, got ") + type_name_of(v));
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(v, &n);
  if (!s) fail_from_py("");
  if (static_cast<unsigned long long>(n) + 1 > 0xFFFFFFFFull) fail("string too long for CDR");
  o.reserve(4 + static_cast<size_t>(n) + 1);
  o.put<uint32_t>(static_cast<uint32_t>(n + 1));
  o.put_bytes(s, static_cast<size_t>(n));
  o.put<char>(0);
}

void put_scalar(Out& o, int kind, PyObject* v) {
  switch (kind) {
    case Kind::BOOL: {
      uint8_t b;
      if (v == Py_True)
        b = 1;
      else if (v == Py_False)
        b = 0;
      else if (Py_TYPE(v) == g_np_bool_type) {
        int t = PyObject_IsTrue(v);
        if (t < 0) fail_from_py("");
        b = static_cast<uint8_t>(t);
      } else if (PyLong_Check(v) || (!PyFloat_Check(v) && PyIndex_Check(v))) {
        bool big = false;
        long long x = as_ll(v, &big);
        if (big || (x != 0 && x != 1)) fail("expected a bool (or 0/1), got " + py_str(v));
        b = static_cast<uint8_t>(x);
      } else {
        fail(std::string("expected a bool, got ") + type_name_of(v));
      }
      o.put<uint8_t>(b);
      return;
    }
    case Kind::I8: put_int<int8_t>(o, v, "int8/byte"); return;
    case Kind::U8: put_int<uint8_t>(o, v, "uint8/char"); return;
    case Kind::I16: put_int<int16_t>(o, v, "int16"); return;
    case Kind::U16: put_int<uint16_t>(o, v, "uint16"); return;
    case Kind::I32: put_int<int32_t>(o, v, "int32"); return;
    case Kind::U32: put_int<uint32_t>(o, v, "uint32"); return;
    case Kind::I64: put_int<int64_t>(o, v, "int64"); return;
    case Kind::U64: put_int<uint64_t>(o, v, "uint64"); return;
    case Kind::F32: {
      const double d = as_double(v);
      const float f = static_cast<float>(d);
      if (std::isinf(f) && !std::isinf(d)) fail("float " + py_str(v) + " out of float32 range");
      o.put<float>(f);
      return;
    }
    case Kind::F64: o.put<double>(as_double(v)); return;
    case Kind::STR: put_string(o, v); return;
    default: fail("unknown primitive kind");
  }
}

// A primitive array/sequence value: numpy array of the field's dtype (copied as is), or anything
// np.asarray(value, dtype) accepts (lists, tuples, other dtypes; converted as numpy casts).
void put_prim_array(Out& o, const Op& op, PyObject* v, Py_ssize_t fixed_n, size_t align_nonempty) {
  const int kind = op.arg;
  const size_t esize = static_cast<size_t>(kKindSize[kind]);
  py::object owned;
  PyArrayObject* a = nullptr;
  if (PyArray_Check(v)) {
    auto* va = reinterpret_cast<PyArrayObject*>(v);
    // numbers only, checked before any cast: complex, object, strings, dates are refused
    const char k = PyArray_DESCR(va)->kind;
    if (k != 'b' && k != 'i' && k != 'u' && k != 'f')
      fail("expected an array of numbers, got dtype " + std::string(py::str(py::handle(v).attr("dtype"))));
    const int t = PyArray_TYPE(va);
    const bool same = t == op.dtype_num || (esize == 1 && kind != Kind::BOOL && (t == NPY_BYTE || t == NPY_UBYTE));
    if (PyArray_NDIM(va) == 1 && same && PyArray_IS_C_CONTIGUOUS(va) && PyArray_ISALIGNED(va) &&
        PyArray_ISNOTSWAPPED(va))
      a = va;
  }
  if (!a) {
    if (PyUnicode_Check(v) || PyBytes_Check(v))
      fail(std::string("expected a sequence of numbers, got ") + type_name_of(v));
    PyArray_Descr* descr = PyArray_DescrFromType(op.dtype_num);
    if (!descr) fail_from_py("");
    // steals descr; FORCECAST = np.asarray(value, dtype) semantics
    PyObject* r = PyArray_FromAny(v, descr, 0, 0,
                                  NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST | NPY_ARRAY_ENSUREARRAY,
                                  nullptr);
    if (!r) fail_from_py("cannot convert to an array: ");
    owned = py::reinterpret_steal<py::object>(r);
    a = reinterpret_cast<PyArrayObject*>(r);
    if (PyArray_NDIM(a) != 1) fail("expected a 1-D array, got " + std::to_string(PyArray_NDIM(a)) + " dimensions");
  }
  const Py_ssize_t n = PyArray_DIMS(a)[0];
  if (fixed_n >= 0) {
    if (n != fixed_n)
      fail("fixed array of length " + std::to_string(fixed_n) + ", got " + std::to_string(n));
  } else {
    if (static_cast<unsigned long long>(n) > 0xFFFFFFFFull) fail("sequence too long for CDR");
    o.put<uint32_t>(static_cast<uint32_t>(n));
    if (n && align_nonempty) o.align(align_nonempty);
  }
  const size_t bytes = static_cast<size_t>(n) * esize;
  if (kind == Kind::BOOL) {  // normalise to 0/1
    o.reserve(bytes);
    const auto* src = static_cast<const uint8_t*>(PyArray_DATA(a));
    for (Py_ssize_t i = 0; i < n; ++i) o.data[o.len + i] = src[i] ? 1 : 0;
    o.len += bytes;
  } else {
    o.put_bytes(PyArray_DATA(a), bytes);
  }
}

// list/tuple (any sequence but str/bytes) as a fast sequence
py::object as_fast_seq(PyObject* v) {
  if (PyUnicode_Check(v) || PyBytes_Check(v) || PyByteArray_Check(v) || PyDict_Check(v))
    fail(std::string("expected a list, got ") + type_name_of(v));
  PyObject* s = PySequence_Fast(v, "expected a list");
  if (!s) {
    PyErr_Clear();
    fail(std::string("expected a list, got ") + type_name_of(v));
  }
  return py::reinterpret_steal<py::object>(s);
}

// Item i of a fast sequence, owned: Python code run meanwhile (__float__, a finalizer, another
// thread while the GIL is switched) may mutate a list; a size change is an error, never a crash.
py::object seq_item(PyObject* seq, Py_ssize_t i, Py_ssize_t n) {
  if (PySequence_Fast_GET_SIZE(seq) != n) fail("list changed size during serialization");
  return py::reinterpret_borrow<py::object>(PySequence_Fast_GET_ITEM(seq, i));
}

void put_msg(Out& o, const Plan& p, PyObject* msg);

// A fixed array (length must be op.n) or a sequence (uint32 count first) of non-primitive items
// (strings, messages): put_item writes one element, errors get the element index in their path.
template <class PutItem>
void put_items(Out& o, const Op& op, PyObject* v, bool fixed, PutItem put_item) {
  py::object seq = as_fast_seq(v);
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  if (fixed && n != op.n)
    fail("fixed array of length " + std::to_string(op.n) + ", got " + std::to_string(n));
  if (!fixed) o.put<uint32_t>(static_cast<uint32_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    try {
      py::object item = seq_item(seq.ptr(), i, n);
      put_item(item.ptr());
    } catch (Fail& f) {
      prefix(f, "[" + std::to_string(i) + "]");
      throw;
    }
  }
}

void put_field(Out& o, const Op& op, PyObject* v) {
  switch (op.code) {
    case OpCode::SCALAR: put_scalar(o, op.arg, v); return;
    case OpCode::ARRAY:
    case OpCode::SEQ: {
      const bool fixed = op.code == OpCode::ARRAY;
      if (op.arg != Kind::STR) {
        put_prim_array(o, op, v, fixed ? op.n : -1, fixed ? 0 : static_cast<size_t>(op.n));
        return;
      }
      put_items(o, op, v, fixed, [&](PyObject* item) {
        o.align(4);
        put_string(o, item);
      });
      return;
    }
    case OpCode::MSG: put_msg(o, *op.sub, v); return;
    case OpCode::MSG_ARRAY:
    case OpCode::MSG_SEQ: {
      const bool fixed = op.code == OpCode::MSG_ARRAY;
      put_items(o, op, v, fixed, [&](PyObject* item) {
        if (op.arg) o.align(static_cast<size_t>(op.arg));
        put_msg(o, *op.sub, item);
      });
      return;
    }
    default: fail("bad plan op");
  }
}

void put_msg(Out& o, const Plan& p, PyObject* msg) {
  if (Py_TYPE(msg) != p.cls) {  // another class is fine if it says it is this type (duck typing)
    PyObject* t = PyObject_GetAttr(msg, g_str_msgtype);
    int same = 0;
    if (t) {
      same = PyUnicode_Check(t) ? PyUnicode_Compare(t, p.type_name_obj) == 0 : 0;
      if (PyErr_Occurred()) PyErr_Clear();
      Py_DECREF(t);
    } else {
      PyErr_Clear();
    }
    if (!same) {
      std::string got = type_name_of(msg);
      if (PyDict_Check(msg)) got = "dict";
      fail("expected a " + p.type_name + " message, got " + got);
    }
  }
  for (const Op& op : p.ops) {
    if (op.code == OpCode::ALIGN) {
      o.align(static_cast<size_t>(op.arg));
      continue;
    }
    PyObject* v = (p.generic_getattr && Py_TYPE(msg) == p.cls) ? PyObject_GenericGetAttr(msg, op.name)
                                                                : PyObject_GetAttr(msg, op.name);
    if (!v) {
      PyErr_Clear();
      throw Fail{op.name_s, "missing field"};
    }
    py::object hold = py::reinterpret_steal<py::object>(v);
    try {
      put_field(o, op, v);
    } catch (Fail& f) {
      prefix(f, op.name_s);
      throw;
    }
  }
}

// ------------------------------------------------------------------------------ decode
struct In {
  const uint8_t* p;
  size_t len;
  size_t pos = 0;
  bool swap = false;
  void need(size_t n) const {
    if (pos > len || len - pos < n)
      fail("truncated: need " + std::to_string(n) + " bytes at offset " + std::to_string(pos) + ", " +
           std::to_string(pos > len ? 0 : len - pos) + " left");
  }
  void align(size_t a) { pos = (pos + a - 1) & ~(a - 1); }
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    if constexpr (sizeof(T) == 1) {
      std::memcpy(&v, p + pos, 1);
    } else {
      unsigned char b[sizeof(T)];
      std::memcpy(b, p + pos, sizeof(T));
      if (swap)
        for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
      std::memcpy(&v, b, sizeof(T));
    }
    pos += sizeof(T);
    return v;
  }
};

PyObject* checked(PyObject* o) {
  if (!o) fail_from_py("");
  return o;
}

// Short strings repeat in almost every stream (joint names, frame ids): a small direct-mapped
// cache of decoded str objects (keyed by their UTF-8 bytes) saves one decode + allocation per
// string. str is immutable, so sharing one object is safe; every access holds the GIL.
struct StrCache {
  static constexpr size_t kSlots = 512, kMaxLen = 64;
  struct Slot {
    uint32_t len = 0;
    char bytes[kMaxLen];
    PyObject* str = nullptr;  // owned
  };
  Slot slots[kSlots];
  static size_t slot_of(const char* p, size_t n) {
    uint64_t h = 1469598103934665603ull ^ n;  // FNV-1a
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
    return static_cast<size_t>(h ^ (h >> 29)) & (kSlots - 1);
  }
};
StrCache g_str_cache;

PyObject* get_string(In& in) {
  const uint32_t n = in.get<uint32_t>();
  const size_t at = in.pos - 4;
  if (n < 1 || n > in.len - in.pos)
    fail("invalid string length " + std::to_string(n) + " at offset " + std::to_string(at));
  if (in.p[in.pos + n - 1] != 0) fail("missing string terminator at offset " + std::to_string(in.pos + n - 1));
  const char* b = reinterpret_cast<const char*>(in.p + in.pos);
  const size_t len = n - 1;
  StrCache::Slot* slot = nullptr;
  if (len <= StrCache::kMaxLen) {
    slot = &g_str_cache.slots[StrCache::slot_of(b, len)];
    if (slot->str && slot->len == len && std::memcmp(slot->bytes, b, len) == 0) {
      in.pos += n;
      Py_INCREF(slot->str);
      return slot->str;
    }
  }
  PyObject* s = PyUnicode_DecodeUTF8(b, static_cast<Py_ssize_t>(len), "strict");
  if (!s) fail_from_py("string at offset " + std::to_string(at) + ": ");
  if (slot) {
    Py_XDECREF(slot->str);
    Py_INCREF(s);
    slot->str = s;
    slot->len = static_cast<uint32_t>(len);
    std::memcpy(slot->bytes, b, len);
  }
  in.pos += n;
  return s;
}

PyObject* get_scalar(In& in, int kind) {
  switch (kind) {
    case Kind::BOOL: return PyBool_FromLong(in.get<uint8_t>() != 0);
    case Kind::I8: return checked(PyLong_FromLong(in.get<int8_t>()));
    case Kind::U8: return checked(PyLong_FromLong(in.get<uint8_t>()));
    case Kind::I16: return checked(PyLong_FromLong(in.get<int16_t>()));
    case Kind::U16: return checked(PyLong_FromLong(in.get<uint16_t>()));
    case Kind::I32: return checked(PyLong_FromLong(in.get<int32_t>()));
    case Kind::U32: return checked(PyLong_FromUnsignedLong(in.get<uint32_t>()));
    case Kind::I64: return checked(PyLong_FromLongLong(in.get<int64_t>()));
    case Kind::U64: return checked(PyLong_FromUnsignedLongLong(in.get<uint64_t>()));
    case Kind::F32: return checked(PyFloat_FromDouble(static_cast<double>(in.get<float>())));
    case Kind::F64: return checked(PyFloat_FromDouble(in.get<double>()));
    case Kind::STR: return get_string(in);
    default: fail("unknown primitive kind");
  }
}

PyObject* get_prim_array(In& in, const Op& op, size_t n) {
  const size_t esize = static_cast<size_t>(kKindSize[op.arg]);
  in.need(n * esize);  // n <= len (checked by the caller), so n * esize cannot overflow
  npy_intp dims[1] = {static_cast<npy_intp>(n)};
  PyObject* arr = PyArray_SimpleNew(1, dims, op.dtype_num);
  if (!arr) fail_from_py("");
  auto* data = static_cast<uint8_t*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(arr)));
  const uint8_t* src = in.p + in.pos;
  const size_t bytes = n * esize;
  if (op.arg == Kind::BOOL) {
    for (size_t i = 0; i < n; ++i) data[i] = src[i] ? 1 : 0;
  } else if (in.swap && esize > 1) {
    for (size_t i = 0; i < n; ++i)
      for (size_t b = 0; b < esize; ++b) data[i * esize + b] = src[i * esize + esize - 1 - b];
  } else if (bytes) {
    std::memcpy(data, src, bytes);
  }
  in.pos += bytes;
  return arr;
}

PyObject* get_msg(In& in, const Plan& p);

// uint32 count of a sequence, checked as rosbags' check_sequence (count * minimum bytes left)
size_t get_count(In& in, size_t minimum) {
  const uint32_t n = in.get<uint32_t>();
  const unsigned long long need = static_cast<unsigned long long>(n) * minimum;
  if (in.pos > in.len || need > in.len - in.pos)
    fail("invalid sequence length " + std::to_string(n) + " at offset " + std::to_string(in.pos - 4));
  return n;
}

PyObject* get_field(In& in, const Op& op) {
  switch (op.code) {
    case OpCode::SCALAR: return get_scalar(in, op.arg);
    case OpCode::ARRAY:
    case OpCode::SEQ: {
      const bool fixed = op.code == OpCode::ARRAY;
      size_t n;
      if (fixed) {
        n = static_cast<size_t>(op.n);
      } else {
        n = get_count(in, op.arg == Kind::STR ? 5 : static_cast<size_t>(kKindSize[op.arg]));
        if (op.arg != Kind::STR && n && op.n) in.align(static_cast<size_t>(op.n));
      }
      if (op.arg != Kind::STR) return get_prim_array(in, op, n);
      py::object list = py::reinterpret_steal<py::object>(checked(PyList_New(static_cast<Py_ssize_t>(n))));
      for (size_t i = 0; i < n; ++i) {
        in.align(4);
        PyList_SET_ITEM(list.ptr(), static_cast<Py_ssize_t>(i), get_string(in));
      }
      return list.release().ptr();
    }
    case OpCode::MSG: return get_msg(in, *op.sub);
    case OpCode::MSG_ARRAY:
    case OpCode::MSG_SEQ: {
      const bool fixed = op.code == OpCode::MSG_ARRAY;
      const size_t n = fixed ? static_cast<size_t>(op.n) : get_count(in, 1);
      py::object list = py::reinterpret_steal<py::object>(checked(PyList_New(static_cast<Py_ssize_t>(n))));
      for (size_t i = 0; i < n; ++i) {
        if (op.arg) in.align(static_cast<size_t>(op.arg));
        PyList_SET_ITEM(list.ptr(), static_cast<Py_ssize_t>(i), get_msg(in, *op.sub));
      }
      return list.release().ptr();
    }
    default: fail("bad plan op");
  }
}

PyObject* get_msg(In& in, const Plan& p) {
  // object.__new__(cls) (the dataclass __init__ is not run), then the fields set as attributes
  // (measured fastest on 3.11: a prebuilt __dict__ or tp_alloc without tp_new are slower).
  py::object obj = py::reinterpret_steal<py::object>(checked(p.cls->tp_new(p.cls, g_empty_tuple, nullptr)));
  for (const Op& op : p.ops) {
    if (op.code == OpCode::ALIGN) {
      in.align(static_cast<size_t>(op.arg));
      continue;
    }
    py::object v = py::reinterpret_steal<py::object>(get_field(in, op));
    // names are interned at plan build: skip PyObject_SetAttr's per-call interning
    const int rc = p.generic_setattr ? PyObject_GenericSetAttr(obj.ptr(), op.name, v.ptr())
                                     : PyObject_SetAttr(obj.ptr(), op.name, v.ptr());
    if (rc < 0) fail_from_py("");
  }
  return obj.release().ptr();
}

// ------------------------------------------------------------------------------ plans
std::shared_ptr<Plan> build_plan(py::handle desc, std::unordered_map<PyObject*, std::shared_ptr<Plan>>& memo) {
  auto it = memo.find(desc.ptr());
  if (it != memo.end()) return it->second;
  auto t = desc.cast<py::tuple>();
  if (t.size() != 3) throw py::value_error("plan description: (type_name, cls, ops) expected");
  auto plan = std::make_shared<Plan>();
  plan->type_name = t[0].cast<std::string>();
  plan->type_name_obj = t[0].ptr();
  Py_INCREF(plan->type_name_obj);
  if (!PyType_Check(t[1].ptr())) throw py::type_error("plan description: cls must be a class");
  plan->cls = reinterpret_cast<PyTypeObject*>(t[1].ptr());
  Py_INCREF(t[1].ptr());
  plan->generic_setattr = plan->cls->tp_setattro == PyObject_GenericSetAttr;
  plan->generic_getattr = plan->cls->tp_getattro == PyObject_GenericGetAttr;
  for (py::handle oh : t[2].cast<py::tuple>()) {
    auto ot = oh.cast<py::tuple>();
    if (ot.size() != 6) throw py::value_error("plan op: 6-tuple expected");
    Op op;
    op.code = ot[0].cast<int>();
    op.arg = ot[2].cast<int>();
    op.n = ot[3].cast<Py_ssize_t>();
    op.dtype_num = ot[5].cast<int>();
    if (op.code < OpCode::ALIGN || op.code > OpCode::MSG_SEQ) throw py::value_error("plan op: bad code");
    if (op.code == OpCode::ALIGN) {
      if (op.arg != 1 && op.arg != 2 && op.arg != 4 && op.arg != 8) throw py::value_error("plan op: bad alignment");
    } else {
      if (!PyUnicode_Check(ot[1].ptr())) throw py::type_error("plan op: field name must be a str");
      op.name = ot[1].ptr();
      Py_INCREF(op.name);
      PyUnicode_InternInPlace(&op.name);
      op.name_s = ot[1].cast<std::string>();
    }
    if (op.code == OpCode::SCALAR || op.code == OpCode::ARRAY || op.code == OpCode::SEQ) {
      if (op.arg < Kind::BOOL || op.arg > Kind::STR) throw py::value_error("plan op: bad primitive kind");
      if (op.arg != Kind::STR && op.code != OpCode::SCALAR && op.dtype_num < 0)
        throw py::value_error("plan op: primitive array without a numpy dtype");
    }
    if ((op.code == OpCode::ARRAY || op.code == OpCode::MSG_ARRAY) && op.n < 0)
      throw py::value_error("plan op: negative array length");
    if ((op.code == OpCode::SEQ && op.n != 0 && op.n != 2 && op.n != 4 && op.n != 8) ||
        ((op.code == OpCode::MSG_ARRAY || op.code == OpCode::MSG_SEQ) && op.arg != 0 && op.arg != 1 &&
         op.arg != 2 && op.arg != 4 && op.arg != 8))
      throw py::value_error("plan op: bad alignment");
    if (op.code >= OpCode::MSG) op.sub = build_plan(ot[4], memo);
    plan->ops.push_back(std::move(op));
  }
  memo[desc.ptr()] = plan;
  return plan;
}

void capsule_destructor(PyObject* cap) {
  delete static_cast<std::shared_ptr<Plan>*>(PyCapsule_GetPointer(cap, kCapsuleName));
}

const Plan* plan_of(PyObject* cap) {
  if (!PyCapsule_CheckExact(cap)) return nullptr;
  auto* sp = static_cast<std::shared_ptr<Plan>*>(PyCapsule_GetPointer(cap, kCapsuleName));
  if (!sp) {
    PyErr_Clear();
    return nullptr;
  }
  return sp->get();
}

PyObject* encode(const Plan* p, PyObject* msg) {
  try {
    Out o(p->size_hint);
    const char hdr[4] = {0, 1, 0, 0};
    o.put_bytes(hdr, 4);
    put_msg(o, *p, msg);
    p->size_hint = o.len;
    return o.take();
  } catch (Fail& f) {
    std::string m = p->type_name + (f.path.empty() ? "" : "." + f.path) + ": " + f.msg;
    PyErr_SetString(g_encode_error, m.c_str());
    return nullptr;
  } catch (...) {
    PyErr_SetString(g_encode_error, (p->type_name + ": internal error").c_str());
    return nullptr;
  }
}

PyObject* decode(const Plan* p, PyObject* obj) {
  Py_buffer view{};
  const uint8_t* data;
  size_t len;
  bool release = false;
  if (PyBytes_CheckExact(obj)) {
    data = reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(obj));
    len = static_cast<size_t>(PyBytes_GET_SIZE(obj));
  } else if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) == 0) {
    data = static_cast<const uint8_t*>(view.buf);
    len = static_cast<size_t>(view.len);
    release = true;
  } else {  // not a contiguous buffer: whatever bytes(obj) accepts, as the rosbags path does
    PyErr_Clear();
    PyObject* b = PyObject_Bytes(obj);
    if (!b) return nullptr;
    PyObject* r = decode(p, b);
    Py_DECREF(b);
    return r;
  }
  PyObject* result = nullptr;
  try {
    if (len < 4) fail("payload of " + std::to_string(len) + " bytes is shorter than the 4-byte CDR header");
    if (data[0] != 0 || data[1] > 1) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "%02x%02x%02x%02x", data[0], data[1], data[2], data[3]);
      fail(std::string("bad CDR encapsulation header ") + hex + " (expected 00 01 or 00 00)");
    }
    In in{data + 4, len - 4};
    in.swap = data[1] == 0;
    result = get_msg(in, *p);
    if (in.pos + 3 < in.len) {
      Py_DECREF(result);
      result = nullptr;
      fail("CDR message size mismatch: " + std::to_string(in.len - in.pos) + " trailing bytes");
    }
  } catch (Fail& f) {
    PyErr_SetString(g_decode_error, (p->type_name + ": malformed CDR (" + f.msg + ")").c_str());
    result = nullptr;
  } catch (...) {
    PyErr_SetString(g_decode_error, (p->type_name + ": malformed CDR (internal error)").c_str());
    result = nullptr;
  }
  if (release) PyBuffer_Release(&view);
  return result;
}

// serialize(plan, msg) / deserialize(plan, data): the argument checks are the same
template <PyObject* (*Codec)(const Plan*, PyObject*)>
PyObject* with_plan(const char* what, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_Format(PyExc_TypeError, "%s takes 2 arguments", what);
    return nullptr;
  }
  const Plan* p = plan_of(args[0]);
  if (!p) {
    PyErr_Format(PyExc_TypeError, "%s: first argument is not a cdr plan", what);
    return nullptr;
  }
  return Codec(p, args[1]);
}

PyObject* py_serialize(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return with_plan<encode>("serialize(plan, msg)", args, nargs);
}

PyObject* py_deserialize(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return with_plan<decode>("deserialize(plan, data)", args, nargs);
}

// ------------------------------------------------------------------------------ msgs front
// msgs.serialize / msgs.deserialize as C functions (saves the Python frame, ~70 ns a call):
// self = (plans, slow_serialize, slow_deserialize, decode_error). The plan is plans[type name]
// (contract 3 in the file header); anything else (no entry yet, keyword arguments, an encode
// error) goes to the Python function, which fills ``plans``, falls back to rosbags and words the
// errors.
// The plan of key, owned (``plans`` may be cleared while the call runs Python code: the plan
// must outlive the call), or an empty object.
py::object cached_plan(PyObject* plans, PyObject* key, const Plan** plan) {
  *plan = nullptr;
  if (!PyUnicode_CheckExact(key)) return py::object();
  PyObject* pl = PyDict_GetItemWithError(plans, key);  // borrowed
  if (!pl) {
    PyErr_Clear();
    return py::object();
  }
  if (!(*plan = plan_of(pl))) return py::object();
  return py::reinterpret_borrow<py::object>(pl);
}

PyObject* front_serialize(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (!kwnames && (nargs == 1 || nargs == 2)) {
    PyObject* key = nargs == 2 ? args[1] : Py_None;
    PyObject* owned = nullptr;
    if (key == Py_None) {
      key = owned = PyObject_GetAttr(args[0], g_str_msgtype);
      if (!key) PyErr_Clear();
    }
    const Plan* p = nullptr;
    py::object hold = key ? cached_plan(PyTuple_GET_ITEM(self, 0), key, &p) : py::object();
    Py_XDECREF(owned);
    if (p) {
      PyObject* r = encode(p, args[0]);
      if (r || !PyErr_ExceptionMatches(g_encode_error)) return r;
      PyErr_Clear();  // the Python path coerces, retries and words the error
    }
  }
  return PyObject_Vectorcall(PyTuple_GET_ITEM(self, 1), args, static_cast<size_t>(nargs), kwnames);
}

PyObject* front_deserialize(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (!kwnames && nargs == 2) {
    const Plan* p = nullptr;
    py::object hold = cached_plan(PyTuple_GET_ITEM(self, 0), args[1], &p);
    if (p) {
      PyObject* r = decode(p, args[0]);
      if (!r && PyErr_ExceptionMatches(g_decode_error)) {  // -> msgs.DecodeError, same text
        PyObject *t = nullptr, *v = nullptr, *tb = nullptr;
        PyErr_Fetch(&t, &v, &tb);
        PyErr_NormalizeException(&t, &v, &tb);
        PyObject* text = v ? PyObject_Str(v) : nullptr;
        Py_XDECREF(t);
        Py_XDECREF(v);
        Py_XDECREF(tb);
        if (text) {
          PyErr_SetObject(PyTuple_GET_ITEM(self, 3), text);
          Py_DECREF(text);
        }
      }
      return r;
    }
  }
  return PyObject_Vectorcall(PyTuple_GET_ITEM(self, 2), args, static_cast<size_t>(nargs), kwnames);
}

PyMethodDef g_front_serialize_def{
    "serialize", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&front_serialize)),
    METH_FASTCALL | METH_KEYWORDS,
    "serialize($self, msg, type_name=None)\n--\n\nCDR little endian with the 4-byte header, as ros2/rmw write "
    "it (C++ codec; rosbags for types without a plan). EncodeError names the field."};
PyMethodDef g_front_deserialize_def{
    "deserialize", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&front_deserialize)),
    METH_FASTCALL | METH_KEYWORDS,
    "deserialize($self, data, type_name)\n--\n\nMessage from CDR bytes (either endianness). Raises DecodeError on any "
    "malformed input (C++ codec; rosbags for types without a plan)."};

PyMethodDef g_serialize_def{"serialize", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&py_serialize)),
                            METH_FASTCALL,
                            "serialize(plan, msg) -> bytes: CDR little endian with the 00 01 00 00 header."};
PyMethodDef g_deserialize_def{
    "deserialize", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&py_deserialize)), METH_FASTCALL,
    "deserialize(plan, data) -> msg: from CDR bytes (either endianness); DecodeError on malformed input."};

}  // namespace

void bind_hot_path(py::module_& m);           // zenoh_hot_path.cpp: Putter, SampleGate
void bind_executor_hot_path(py::module_& m);  // executor_hot_path.cpp: RunLock, Inline, Delivery

PYBIND11_MODULE(_cdr, m) {
  m.doc() = "CDR (XCDR1) codec of ROS 2 messages driven by plans from hri_runtime.impl.cdr_plan (bytes identical "
            "to rosbags' serialize_cdr); used through hri_runtime.msgs. Contract: the header of "
            "src/hri_runtime/src/cdr_codec.cpp and docs/ros2-interop.md.";
  g_encode_error = PyErr_NewException("hri_runtime._cdr.EncodeError", PyExc_ValueError, nullptr);
  g_decode_error = PyErr_NewException("hri_runtime._cdr.DecodeError", PyExc_ValueError, nullptr);
  g_empty_tuple = PyTuple_New(0);
  g_str_msgtype = PyUnicode_InternFromString("__msgtype__");
  // numpy's C API table (import_array1 returns its argument from this lambda on failure)
  if ([]() -> int { import_array1(-1); return 0; }() < 0) throw py::error_already_set();
  g_np_bool_type = &PyBoolArrType_Type;
  m.add_object("EncodeError", py::handle(g_encode_error).inc_ref());
  m.add_object("DecodeError", py::handle(g_decode_error).inc_ref());
  py::dict kinds, ops;
  for (int k = Kind::BOOL; k <= Kind::STR; ++k) kinds[kKindNames[k]] = k;
  for (int c = OpCode::ALIGN; c <= OpCode::MSG_SEQ; ++c) ops[kOpNames[c]] = c;
  m.attr("KIND_CODES") = kinds;
  m.attr("OP_CODES") = ops;
  m.def(
      "compile_plan",
      [](py::handle desc) {
        std::unordered_map<PyObject*, std::shared_ptr<Plan>> memo;
        auto plan = build_plan(desc, memo);
        return py::reinterpret_steal<py::object>(
            PyCapsule_New(new std::shared_ptr<Plan>(std::move(plan)), kCapsuleName, &capsule_destructor));
      },
      py::arg("desc"),
      "compile_plan(desc) -> plan: a compiled plan from (type_name, cls, ops) (see hri_runtime.impl.cdr_plan).");
  m.def(
      "make_front",
      [](py::dict plans, py::object slow_serialize, py::object slow_deserialize, py::object decode_error) {
        py::tuple self = py::make_tuple(plans, slow_serialize, slow_deserialize, decode_error);
        py::object ser = py::reinterpret_steal<py::object>(PyCFunction_NewEx(&g_front_serialize_def, self.ptr(), nullptr));
        py::object de = py::reinterpret_steal<py::object>(PyCFunction_NewEx(&g_front_deserialize_def, self.ptr(), nullptr));
        if (!ser || !de) throw py::error_already_set();
        return py::make_tuple(ser, de);
      },
      py::arg("plans"), py::arg("slow_serialize"), py::arg("slow_deserialize"), py::arg("decode_error"),
      "make_front(plans, slow_serialize, slow_deserialize, decode_error) -> (serialize, deserialize): "
      "msgs.serialize/deserialize in C over the dict plans {type name: plan} (see hri_runtime.msgs).");
  bind_hot_path(m);
  bind_executor_hot_path(m);
  py::object modname = m.attr("__name__");
  m.add_object("serialize", py::reinterpret_steal<py::object>(PyCFunction_NewEx(&g_serialize_def, nullptr, modname.ptr())));
  m.add_object("deserialize",
               py::reinterpret_steal<py::object>(PyCFunction_NewEx(&g_deserialize_def, nullptr, modname.ptr())));
}
