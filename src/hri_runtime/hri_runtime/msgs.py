"""ROS 2 messages without ROS: the rosbags Jazzy type store and its CDR codec.

One message representation for every backend (inproc, zenoh, rclpy): rosbags dataclasses.
Every message crosses a backend as CDR bytes exactly as rmw writes them:

    payload = encapsulation header (4 bytes) + XCDR1 body
    header  = 00 01 00 00   (CDR little endian; 00 00 00 00 = big endian, accepted on decode)
    body    = fields in declaration order, each aligned to min(size, 8) bytes counted from the
              end of the header; no trailing padding; an empty message carries one dummy byte.

    >>> serialize(new("std_msgs/msg/String", data="hello"), "std_msgs/msg/String").hex()
    '000100000600000068656c6c6f00'

Type names: "pkg/msg/Type", "pkg/Type" (taken as msg), "pkg/srv/Type" (a service: its two
messages are "pkg/srv/Type_Request" and "pkg/srv/Type_Response").

API: ``new``, ``get``, ``serialize``, ``deserialize``, ``definition``, ``normalize``,
``srv_types``, ``is_srv``, ``register_msg``, ``register_srv``, ``typestore``, ``type_name_of``.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Nodetype

__all__ = [
    "DecodeError", "EncodeError", "UnknownTypeError", "new", "get", "serialize", "deserialize",
    "definition", "normalize", "srv_types", "is_srv", "register_msg", "register_srv", "typestore",
    "type_name_of", "CDR_LE_HEADER", "to_dict", "to_yaml", "from_dict", "rihs01", "codec_backend",
]

CDR_LE_HEADER = b"\x00\x01\x00\x00"


class UnknownTypeError(KeyError):
    """A type name that is not in the type store (message or service)."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the sentence readable
        return str(self.args[0]) if self.args else "unknown type"


class DecodeError(ValueError):
    """Bytes that are not a valid CDR payload of the given type."""


class EncodeError(ValueError):
    """A message that cannot be serialized as the given type."""


# Standard services that rosbags' message store does not carry (it holds messages only).
_STANDARD_SRVS = {
    "std_srvs/srv/Empty": "---\n",
    "std_srvs/srv/Trigger": "---\nbool success\nstring message\n",
    "std_srvs/srv/SetBool": "bool data\n---\nbool success\nstring message\n",
    "example_interfaces/srv/AddTwoInts": "int64 a\nint64 b\n---\nint64 sum\n",
    "example_interfaces/srv/SetBool": "bool data\n---\nbool success\nstring message\n",
    "example_interfaces/srv/Trigger": "---\nbool success\nstring message\n",
}

# Default values written in the .msg files (rosbags' store keeps no defaults); rclpy uses them.
_MSG_DEFAULTS = {"geometry_msgs/msg/Quaternion": {"w": 1.0}}

_lock = threading.Lock()
_store = get_typestore(Stores.ROS2_JAZZY)
_srvs: dict[str, str] = {}
_codecs: dict[str, tuple[str, Any, Any]] = {}  # (hot path, see _codec) type name as given -> (normalized name, Msgdef, C++ plan)
_plans: dict[str, Any] = {}                      # (the C front's contract, see _codec) type name as given -> C++ plan
_news: dict[str, tuple] = {}                     # (hot path, see new) type name as given -> its constructor plan


def _clear_codecs() -> None:
    """Forget every cached codec (the type store changed)."""
    _codecs.clear()
    _plans.clear()
    _news.clear()


_INT_TYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "byte", "char", "octet"}
_FLOAT_TYPES = {"float32", "float64"}
_NP_DTYPES = {
    "bool": np.bool_, "byte": np.uint8, "char": np.uint8, "octet": np.uint8,
    "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
    "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
    "float32": np.float32, "float64": np.float64,
}


def typestore():
    """The process-wide rosbags type store (Jazzy + the services registered here)."""
    return _store


def normalize(type_name: str) -> str:
    """'pkg/Type' -> 'pkg/msg/Type'; 'pkg/msg/Type', 'pkg/srv/Type(_Request)' unchanged;
    'pkg::msg::Type' and DDS names 'pkg::msg::dds_::Type_' are accepted too."""
    if not isinstance(type_name, str) or not type_name:
        raise UnknownTypeError(f"type name must be a non-empty string, got {type_name!r}")
    t = type_name.strip()
    if "::" in t:
        parts = [p for p in t.split("::") if p != "dds_"]
        if len(parts) == 3 and parts[2].endswith("_") and "dds_" in t:
            parts[2] = parts[2][:-1]
        t = "/".join(parts)
    parts = t.strip("/").split("/")
    if len(parts) == 2:
        return f"{parts[0]}/msg/{parts[1]}"
    if len(parts) == 3 and parts[1] in ("msg", "srv", "action"):
        return "/".join(parts)
    raise UnknownTypeError(f"'{type_name}' is not a ROS type name (expected 'pkg/msg/Type' or 'pkg/Type')")


def is_srv(type_name: str) -> bool:
    t = normalize(type_name)
    return t.split("/")[1] == "srv" and not t.endswith(("_Request", "_Response", "_Event"))


def register_msg(type_name: str, text: str) -> None:
    """Add a message definition (.msg text) to the type store, e.g. for hri_interfaces."""
    t = normalize(type_name)
    with _lock:
        _store.register(get_types_from_msg(text, t))
        _clear_codecs()


def register_srv(type_name: str, text: str) -> None:
    """Add a service definition (.srv text: request '---' response)."""
    t = normalize(type_name)
    if "---" not in text:
        raise ValueError(f"service definition of {t} has no '---' separator")
    req, resp = text.split("---", 1)
    with _lock:
        types = {}
        pkg, _, name = t.split("/")
        for part, suffix in ((req, "_Request"), (resp, "_Response")):
            # rosbags would file 'pkg/srv/X' under 'pkg/srv/msg/X': parse as msg, re-key as srv
            for key, val in get_types_from_msg(part, f"{pkg}/msg/{name}{suffix}").items():
                types[key.replace(f"{pkg}/msg/{name}{suffix}", t + suffix)] = val
        _store.register(types)
        _srvs[t] = text
        _clear_codecs()


for _name, _text in _STANDARD_SRVS.items():
    register_srv(_name, _text)


def srv_types(type_name: str) -> tuple[str, str]:
    """('pkg/srv/X_Request', 'pkg/srv/X_Response') of the service 'pkg/srv/X'."""
    t = normalize(type_name)
    if t.split("/")[1] != "srv":
        raise UnknownTypeError(f"'{type_name}' is not a service type (expected 'pkg/srv/Type')")
    if t not in _srvs:
        _autoload(t)
    if t not in _srvs:
        raise UnknownTypeError(
            f"unknown service type '{t}' (known: {', '.join(sorted(_srvs))}; add one with msgs.register_srv)")
    return t + "_Request", t + "_Response"


def get(type_name: str):
    """The rosbags dataclass of a message type."""
    t = normalize(type_name)
    try:
        return _store.types[t]
    except KeyError:
        pass
    if _autoload(t):
        return _store.types[t]
    else:
        raise UnknownTypeError(f"unknown message type '{t}' (not in the ROS 2 Jazzy type store; "
                               f"add it with msgs.register_msg)") from None


def _fielddefs(t: str):
    try:
        return _store.fielddefs[t][1]
    except KeyError:
        if _autoload(t):
            return _store.fielddefs[t][1]
        raise UnknownTypeError(f"unknown message type '{t}'") from None


_BUILTIN_FIELD_TYPES = {"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16",
                        "int32", "uint32", "int64", "uint64", "string", "wstring", "time", "duration"}
_autoload_failed: set = set()


def _interface_file(pkg: str, kind: str, name: str):
    """<share of pkg>/<kind>/<name>.<kind> (ROS layout; editable installs: the source dir), else
    <share of hri_runtime>/interfaces/<pkg>/<kind>/ (a workspace installed without ROS, where the
    ament_cmake package hri_interfaces is not built; hri_runtime installs a copy of its files)."""
    from pathlib import Path

    from hri_runtime.packages import find_pkg_share

    for share_of, sub in ((pkg, ""), ("hri_runtime", f"interfaces/{pkg}")):
        try:
            share = Path(find_pkg_share(share_of))
        except Exception:  # noqa: BLE001  (package not found)
            continue
        f = share / sub / kind / f"{name}.{kind}"
        if f.is_file():
            return f
    return None


def _autoload(t: str) -> bool:
    """Load 'pkg/msg/X' from <pkg share>/msg/X.msg or 'pkg/srv/X(_Request|_Response)' from
    <pkg share>/srv/X.srv, the ROS package layout (dependencies of the same package first)."""
    if t in _autoload_failed:
        return False
    try:
        pkg, kind, name = t.split("/")
    except ValueError:
        return False
    if kind == "srv":
        base = name.removesuffix("_Request").removesuffix("_Response")
        f = _interface_file(pkg, "srv", base)
        if f is None:
            _autoload_failed.add(t)
            return False
        text = f.read_text(encoding="utf-8")
        _load_deps(pkg, text)
        register_srv(f"{pkg}/srv/{base}", text)
        return True
    if kind != "msg":
        return False
    f = _interface_file(pkg, "msg", name)
    if f is None:
        _autoload_failed.add(t)
        return False
    text = f.read_text(encoding="utf-8")
    _autoload_failed.add(t)             # guards against cycles while loading dependencies
    _load_deps(pkg, text)
    _autoload_failed.discard(t)
    register_msg(t, text)
    return True


def _load_deps(pkg: str, text: str) -> None:
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("---"):
            continue
        ftype = line.split()[0].split("[")[0].split("<=")[0]
        if ftype in _BUILTIN_FIELD_TYPES or "=" in line.split()[0]:
            continue
        dep = normalize(ftype if "/" in ftype else f"{pkg}/{ftype}")
        if dep not in _store.fielddefs:
            _autoload(dep)


def _zero(desc) -> Any:
    kind, rest = desc
    if kind == Nodetype.BASE:
        prim = rest[0]
        if prim == "string" or prim == "wstring":
            return ""
        if prim == "bool":
            return False
        if prim in _FLOAT_TYPES:
            return 0.0
        return 0
    if kind == Nodetype.NAME:
        return new(rest)
    if kind == Nodetype.ARRAY:
        sub, n = rest
        if sub[0] == Nodetype.BASE and sub[1][0] in _NP_DTYPES:
            return np.zeros(n, dtype=_NP_DTYPES[sub[1][0]])
        return [_zero(sub) for _ in range(n)]
    if kind == Nodetype.SEQUENCE:
        sub = rest[0]
        if sub[0] == Nodetype.BASE and sub[1][0] in _NP_DTYPES:
            return np.zeros(0, dtype=_NP_DTYPES[sub[1][0]])
        return []
    raise UnknownTypeError(f"unsupported field kind {kind}")


def _coerce(desc, value, where: str) -> Any:
    """Accept python lists for primitive arrays, dicts for nested messages."""
    kind, rest = desc
    if kind == Nodetype.NAME:
        if isinstance(value, dict):
            return new(rest, **value)
        return value
    if kind in (Nodetype.ARRAY, Nodetype.SEQUENCE):
        sub = rest[0]
        if sub[0] == Nodetype.BASE and sub[1][0] in _NP_DTYPES:
            if isinstance(value, np.ndarray) and value.dtype.kind not in "biuf":   # as the C++ codec
                raise EncodeError(f"{where}: expected an array of numbers, got dtype {value.dtype}")
            arr = np.asarray(value, dtype=_NP_DTYPES[sub[1][0]])
            if arr.ndim != 1:
                raise EncodeError(f"{where}: expected a 1-D array, got shape {arr.shape}")
            if kind == Nodetype.ARRAY and arr.shape[0] != rest[1]:
                raise EncodeError(f"{where}: fixed array of length {rest[1]}, got {arr.shape[0]}")
            return arr
        if sub[0] == Nodetype.NAME:
            return [_coerce(sub, v, f"{where}[{i}]") for i, v in enumerate(value)]
        return list(value)
    return value


_ZERO_EACH_TIME = object()      # a field default made anew for every message (mutable: arrays, messages)


def _new_plan(type_name: str) -> tuple:
    """(normalized name, class, field names, [(name, desc, coerced, default)]) of a type:
    ``coerced`` False for a primitive field (taken as given), ``default`` the immutable default
    or ``_ZERO_EACH_TIME``."""
    t = normalize(type_name)
    cls = get(t)
    defs = _fielddefs(t)
    dflt = _MSG_DEFAULTS.get(t, {})
    fields = []
    for name, desc in defs:
        base = desc[0] == Nodetype.BASE
        default = dflt[name] if name in dflt else (_zero(desc) if base else _ZERO_EACH_TIME)
        fields.append((name, desc, not base, default))
    plan = (t, cls, frozenset(n for n, _ in defs), tuple(fields))
    _news[type_name] = plan
    return plan


def cls(type_name: str):
    """The message class of ``type_name`` (cached): ``cls(t)(**every_field)`` is ``new(t, ...)``
    without the defaults and the coercion, for hot paths that give every field as it is stored."""
    plan = _news.get(type_name) if type(type_name) is str else None
    return (plan if plan is not None else _new_plan(type_name))[1]


def new(type_name: str, **fields):
    """A message of ``type_name``; missing fields get zero defaults (recursively: nested
    messages built, numbers 0, strings '', arrays empty or zero-filled for fixed size), except
    where the .msg file declares a default (geometry_msgs/Quaternion w = 1, as rclpy).
    Primitive arrays may be given as lists (converted to numpy), nested messages as dicts."""
    plan = _news.get(type_name) if type(type_name) is str else None
    if plan is None:
        plan = _new_plan(type_name)
    t, cls, names, defs = plan
    if not names.issuperset(fields):
        raise TypeError(f"{t} has no field(s) {sorted(set(fields) - names)}; fields: {[d[0] for d in defs]}")
    kw = {}
    for name, desc, coerced, default in defs:
        if name in fields:
            kw[name] = _coerce(desc, fields[name], f"{t}.{name}") if coerced else fields[name]
        elif default is _ZERO_EACH_TIME:
            kw[name] = _zero(desc)
        else:
            kw[name] = default
    return cls(**kw)


def type_name_of(msg) -> str:
    """The 'pkg/msg/Type' name of a rosbags message instance."""
    t = getattr(msg, "__msgtype__", None)
    if not isinstance(t, str):
        raise EncodeError(f"{type(msg).__name__} is not a ROS message")
    return t


def _coerce_deep(msg, t: str) -> None:
    for name, desc in _fielddefs(t):
        v = getattr(msg, name)
        if desc[0] == Nodetype.NAME:
            if isinstance(v, dict):
                setattr(msg, name, new(desc[1], **v))
            else:
                _coerce_deep(v, desc[1])
        elif desc[0] in (Nodetype.ARRAY, Nodetype.SEQUENCE):
            nv = _coerce(desc, v, f"{t}.{name}")
            if desc[1][0][0] == Nodetype.NAME:
                for item in nv:
                    _coerce_deep(item, desc[1][0][1])
            setattr(msg, name, nv)


# Hot path (every publish / every received sample). Two caches keyed by the type name as given,
# filled together by ``_codec`` and cleared together by ``_clear_codecs`` (register_msg/srv):
# * ``_codecs``: (normalized name, rosbags Msgdef, C++ plan or None) for the Python functions
#   (rosbags is the reference codec and the fallback);
# * ``_plans``: {type name: C++ plan}, only the types the C++ codec handles. This dict is the
#   whole contract of the C front (``_cdr.make_front``, contract 3 in src/cdr_codec.cpp): a name
#   found there runs its plan in C, anything else calls the Python function below.
# The C++ codec is hri_runtime._cdr (plans from hri_runtime.impl.cdr_plan); without it (extension not
# built) or for a type with a kind it lacks (wstring, float128) rosbags' codec is used.
# Measured (bench/transport/codec.py): docs/benchmarks.md (Transport).
_cdr_state: list = []                        # [_cdr module or None], resolved on first use


class _NoCdrError(Exception):
    """Placeholder for the C++ codec's exceptions until it is loaded (never raised)."""


_cdr_ser = _cdr_de = None                    # _cdr.serialize / _cdr.deserialize
_CdrEncodeError = _CdrDecodeError = _NoCdrError


def _cdr_module():
    """The C++ codec extension (hri_runtime._cdr) or None (not built)."""
    global _cdr_ser, _cdr_de, _CdrEncodeError, _CdrDecodeError
    if not _cdr_state:
        try:
            from hri_runtime import _cdr as mod
        except ImportError:
            mod = None
        _cdr_state.append(mod)
    mod = _cdr_state[0]
    if mod is not None and _cdr_ser is not mod.serialize:
        _cdr_ser, _cdr_de = mod.serialize, mod.deserialize
        _CdrEncodeError, _CdrDecodeError = mod.EncodeError, mod.DecodeError
    return mod


def _compile_cpp_plan(t: str):
    if _cdr_module() is None:
        return None
    from hri_runtime.impl import cdr_plan

    try:
        return cdr_plan.compile_plan(t, _store)
    except cdr_plan.PlanUnsupported:  # wstring/float128 stay on rosbags
        return None


def _codec(type_name: str) -> tuple[str, Any, Any]:
    c = _codecs.get(type_name)
    if c is None:
        t = normalize(type_name)
        get(t)
        c = (t, _store.get_msgdef(t), _compile_cpp_plan(t))
        _codecs[type_name] = c
        if c[2] is not None:
            _plans[type_name] = c[2]
    return c


def codec_backend(type_name: str) -> str:
    """'cpp' when (de)serialize of ``type_name`` runs in the C++ codec, else 'rosbags'."""
    return "rosbags" if _codec(type_name)[2] is None else "cpp"


def _check_type(msg, t: str) -> None:
    got = getattr(msg, "__msgtype__", None)
    if got != t:
        raise EncodeError(f"message is a {got or type(msg).__name__}, expected {t}")


def _serialize_cpp_retry(msg, t: str, plan, first: Exception) -> bytes:
    """The C++ codec refused ``msg``: wrong type -> EncodeError as the rosbags path says it;
    else coerce (dicts -> messages, as the rosbags path does) and retry once; still refused ->
    EncodeError naming the field (the C++ message: 'pkg/msg/T.field.path: why')."""
    _check_type(msg, t)
    try:
        _coerce_deep(msg, t)
    except Exception as e:  # noqa: BLE001
        raise EncodeError(str(first)) from e
    try:
        return _cdr_ser(plan, msg)
    except _CdrEncodeError as e:
        raise EncodeError(str(e)) from None


def serialize(msg, type_name: str | None = None) -> bytes:
    """CDR little endian with the 4-byte header, as ros2/rmw write it.

    (With the C++ codec, ``msgs.serialize`` is the C front built by ``_install_cpp_front``;
    this Python function is its fallback: first call of a type, rosbags types, encode errors.)"""
    c = _codecs.get(type_name) if type_name else None
    if c is None:
        c = _codec(type_name or type_name_of(msg))
    t, md, plan = c
    if plan is not None:          # C++ codec (checks the message type itself)
        try:
            return _cdr_ser(plan, msg)
        except _CdrEncodeError as e:
            return _serialize_cpp_retry(msg, t, plan, e)
    got = getattr(msg, "__msgtype__", None)
    if got != t:
        raise EncodeError(f"message is a {got or type(msg).__name__}, expected {t}")
    try:
        buf = bytearray(4 + md.getsize_cdr(0, msg, _store))
        buf[1] = 1                                   # CDR_LE encapsulation: 00 01 00 00
        md.serialize_cdr_le(memoryview(buf)[4:], 0, msg, _store)
        return bytes(buf)
    except Exception:  # lists for numpy arrays, dicts for messages: coerce once and retry
        try:
            _coerce_deep(msg, t)
            return bytes(_store.serialize_cdr(msg, t))
        except EncodeError:
            raise
        except Exception as e:
            raise EncodeError(f"cannot serialize {t}: {type(e).__name__}: {e}") from e


def deserialize(data: bytes | bytearray | memoryview, type_name: str):
    """Message from CDR bytes (either endianness). Raises DecodeError on any malformed input.

    (With the C++ codec, ``msgs.deserialize`` is the C front built by ``_install_cpp_front``;
    this Python function is its fallback: first call of a type, rosbags types.)"""
    c = _codecs.get(type_name)
    if c is None:
        c = _codec(type_name)
    t, md, plan = c
    if plan is not None:          # C++ codec
        try:
            return _cdr_de(plan, data)
        except _CdrDecodeError as e:
            raise DecodeError(str(e)) from None
    buf = data if type(data) is bytes else bytes(data)
    if len(buf) < 4:
        raise DecodeError(f"{t}: payload of {len(buf)} bytes is shorter than the 4-byte CDR header")
    if buf[0] != 0 or buf[1] not in (0, 1):
        raise DecodeError(f"{t}: bad CDR encapsulation header {buf[:4].hex()} (expected 00 01 or 00 00)")
    func = md.deserialize_cdr_le if buf[1] else md.deserialize_cdr_be
    try:
        # a bytes slice, not a memoryview: rosbags' string fields do bytes(view[a:b]).decode(),
        # which is faster on bytes
        msg, pos = func(buf[4:], 0, md.cls, _store)
    except Exception as e:
        raise DecodeError(f"{t}: malformed CDR ({type(e).__name__}: {e})") from e
    if pos + 4 + 3 < len(buf):                       # as rosbags: at most 3 padding bytes
        raise DecodeError(f"{t}: malformed CDR (CDR message size mismatch for {t!r})")
    return msg


_serialize_py, _deserialize_py = serialize, deserialize


def _install_cpp_front() -> None:
    """With the C++ codec: ``serialize``/``deserialize`` become C functions over ``_plans`` that
    run the C++ plan of a cached type directly (no Python frame: ~70 ns less a call) and call the
    Python functions above for everything else."""
    global serialize, deserialize
    mod = _cdr_module()
    if mod is not None:
        serialize, deserialize = mod.make_front(_plans, _serialize_py, _deserialize_py, DecodeError)
    else:
        serialize, deserialize = _serialize_py, _deserialize_py


_install_cpp_front()


def definition(type_name: str) -> str:
    """Message definition text in the ros2msg format MCAP uses (dependencies appended after
    '=====' separators, as rosbag2 writes it). For a service: the .srv text."""
    t = normalize(type_name)
    if is_srv(t):
        srv_types(t)
        return _srvs[t]
    get(t)
    return _store.generate_msgdef(t, ros_version=2)[0]


def rihs01(type_name: str) -> str:
    """RIHS01 type hash string (``RIHS01_<sha256>``) of a message or service type, as rosidl
    computes it; loads the type and every type it references from their .msg/.srv files first."""
    from hri_runtime.impl.wire import type_hash

    t = normalize(type_name)
    if is_srv(t):
        srv_types(t)
    else:
        get(t)
    return type_hash(t, _store)


def to_dict(msg) -> Any:
    """Plain python data of a message (nested dicts, lists; numpy arrays -> lists)."""
    if hasattr(msg, "__msgtype__") and hasattr(msg, "__dataclass_fields__"):
        return {k: to_dict(getattr(msg, k)) for k in msg.__dataclass_fields__ if k != "__msgtype__"}
    if isinstance(msg, np.ndarray):
        return msg.tolist()
    if isinstance(msg, (list, tuple)):
        return [to_dict(v) for v in msg]
    if isinstance(msg, np.generic):
        return msg.item()
    return msg


def to_yaml(msg) -> str:
    """The message as ``ros2 topic echo`` prints it (YAML block style)."""
    import yaml

    return yaml.safe_dump(to_dict(msg), sort_keys=False, default_flow_style=False, width=100).rstrip("\n")


def stamp_fields(type_name: str, data: dict | None) -> tuple[dict, list[tuple[str, ...]]]:
    """``ros2 topic pub``'s ``auto`` and ``now`` values (rosidl_runtime_py's expand_header_auto /
    expand_time_now): a std_msgs/msg/Header given as ``auto`` or a builtin_interfaces/msg/Time
    given as ``now`` is left to its default in the returned data and listed as the path of the
    Time field to stamp at each publication (e.g. ``("header", "stamp")``)."""
    t = normalize(type_name)
    if not isinstance(data, dict):
        return data, []
    out, paths = dict(data), []
    for name, desc in _fielddefs(t):
        if name not in out or desc[0] != Nodetype.NAME:
            continue
        sub, v = normalize(desc[1]), out[name]
        if v == "auto" and sub == "std_msgs/msg/Header":
            out[name], paths = {}, paths + [(name, "stamp")]
        elif v == "now" and sub == "builtin_interfaces/msg/Time":
            out[name], paths = {}, paths + [(name,)]
        elif isinstance(v, dict):
            out[name], inner = stamp_fields(sub, v)
            paths += [(name,) + p for p in inner]
    return out, paths


def from_dict(type_name: str, data: dict | None):
    """A message from plain data (``ros2 topic pub`` YAML): missing fields get zero defaults."""
    t = normalize(type_name)
    data = dict(data or {})
    kw = {}
    for name, desc in _fielddefs(t):
        if name not in data:
            continue
        v = data.pop(name)
        if desc[0] == Nodetype.NAME and isinstance(v, dict):
            v = from_dict(desc[1], v)
        elif desc[0] in (Nodetype.ARRAY, Nodetype.SEQUENCE) and desc[1][0][0] == Nodetype.NAME:
            v = [from_dict(desc[1][0][1], x) if isinstance(x, dict) else x for x in v]
        kw[name] = v
    if data:
        raise TypeError(f"{t} has no field(s) {sorted(data)}; fields: {[n for n, _ in _fielddefs(t)]}")
    return new(t, **kw)
