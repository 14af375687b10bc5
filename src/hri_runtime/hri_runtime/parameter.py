"""Declared parameters (types, ranges) and the ``--ros-args`` subset ros2 launch passes.

Parameter types follow rcl: bool, integer, double, string, and arrays of them (byte arrays are
not used). A declared parameter keeps its type: a later value of another type is refused
(an integer for a double parameter is accepted and converted, as YAML writes ``1`` for 1.0).
A range (``floating_point_range`` / ``integer_range`` as rcl_interfaces, or ``range=(lo, hi)``)
is checked on declare and on every set: ``lo <= value <= hi`` (and on the ``step`` grid if given).

``--ros-args`` subset: ``-r from:=to`` / ``--remap``, ``-r __ns:=/x``, ``-r __node:=name``,
``-p name:=value`` / ``--param`` (value parsed as YAML, as ROS does), ``--params-file FILE``
(``node_name:`` / ``/ns/node_name:`` / ``/**:`` -> ``ros__parameters:``), ``--log-level LEVEL``;
``-e``/``--enclave`` accepted and ignored. Arguments outside ``--ros-args ... --`` are left to
the program.
"""
from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from typing import Any

import yaml

__all__ = ["Parameter", "ParameterDescriptor", "ParameterError", "ParameterNotDeclaredError",
           "SetParametersResult", "RosArgs", "parse_ros_args", "load_params_file", "param_type_of",
           "schema_descriptor", "spec_descriptor"]


class ParameterError(ValueError):
    """A parameter value of the wrong type or out of its declared range."""


class ParameterNotDeclaredError(ParameterError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "parameter not declared"


TYPES = ("bool", "integer", "double", "string", "bool_array", "integer_array", "double_array",
         "string_array")


def param_type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        if not value:
            return "string_array"   # rcl: an empty array has no element type; checked loosely
        inner = {param_type_of(v) for v in value}
        if inner == {"integer", "double"}:
            return "double_array"
        if len(inner) == 1 and next(iter(inner)) in ("bool", "integer", "double", "string"):
            return next(iter(inner)) + "_array"
    try:  # numpy scalars / arrays
        import numpy as np

        if isinstance(value, np.ndarray):
            return param_type_of(value.tolist())
        if isinstance(value, np.generic):
            return param_type_of(value.item())
    except ImportError:  # pragma: no cover
        pass
    raise ParameterError(f"unsupported parameter value {value!r} ({type(value).__name__}); "
                         f"allowed: {', '.join(TYPES)}")


@dataclass
class ParameterDescriptor:
    """type: one of TYPES (None = from the default); range = (lo, hi[, step]) for numbers."""
    type: str | None = None
    description: str = ""
    read_only: bool = False
    range: tuple | None = None
    dynamic_typing: bool = False
    gt: float | None = None             # exclusive lower bound (config schema 'gt')
    lt: float | None = None             # exclusive upper bound (config schema 'lt')
    values: tuple | None = None         # allowed values (config schema enum)

    @classmethod
    def coerce(cls, d) -> "ParameterDescriptor":
        if d is None:
            return cls()
        if isinstance(d, cls):
            return d
        if isinstance(d, str):
            return schema_descriptor(d)
        if isinstance(d, dict):
            d = dict(d)
            rng = d.pop("range", None)
            for key in ("floating_point_range", "integer_range"):
                r = d.pop(key, None)
                if r:
                    r = r[0] if isinstance(r, (list, tuple)) else r
                    get = (lambda k: r.get(k)) if isinstance(r, dict) else (lambda k: getattr(r, k, None))
                    rng = (get("from_value"), get("to_value"), get("step") or 0)
            if "min" in d or "max" in d:
                rng = (d.pop("min", None), d.pop("max", None))
            if "values" in d and d["values"] is not None:
                d["values"] = tuple(d["values"])
            unknown = set(d) - {"type", "description", "read_only", "dynamic_typing", "gt", "lt", "values"}
            if unknown:
                raise ParameterError(f"unknown descriptor keys {sorted(unknown)}")
            return cls(range=tuple(rng) if rng else None, **d)
        raise ParameterError(f"descriptor must be a dict or ParameterDescriptor, got {type(d).__name__}")


@dataclass
class Parameter:
    name: str
    value: Any
    type: str = ""

    @property
    def type_(self) -> str:
        return self.type


@dataclass
class SetParametersResult:
    successful: bool
    reason: str = ""


def check_value(name: str, value: Any, desc: ParameterDescriptor) -> Any:
    """The value converted to the declared type, or ParameterError with the reason."""
    typ = desc.type
    got = param_type_of(value)
    if typ and not desc.dynamic_typing and got != typ:
        if typ == "double" and got == "integer":
            value = float(value)
        elif typ == "double_array" and got in ("integer_array", "double_array"):
            value = [float(v) for v in value]
        elif got == "string_array" and not value and typ.endswith("_array"):
            value = []
        else:
            raise ParameterError(f"parameter '{name}': value {value!r} is {got}, declared {typ}")
    if isinstance(value, tuple):
        value = list(value)
    if desc.values is not None and value not in desc.values:
        raise ParameterError(f"parameter '{name}': value {value!r} not one of {list(desc.values)}")
    for v in (value if isinstance(value, list) else [value]):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if desc.gt is not None and not v > desc.gt:
            raise ParameterError(f"parameter '{name}': value {v!r} must be > {desc.gt}")
        if desc.lt is not None and not v < desc.lt:
            raise ParameterError(f"parameter '{name}': value {v!r} must be < {desc.lt}")
    if desc.range is not None and typ in ("integer", "double", "integer_array", "double_array", None):
        lo, hi = desc.range[0], desc.range[1]
        step = desc.range[2] if len(desc.range) > 2 else 0
        vals = value if isinstance(value, list) else [value]
        for v in vals:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            if isinstance(v, float) and math.isnan(v):
                raise ParameterError(f"parameter '{name}': NaN is outside any range")
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                raise ParameterError(f"parameter '{name}': value {v!r} out of range [{lo}, {hi}]")
            if step and lo is not None:
                k = (v - lo) / step
                if abs(k - round(k)) > 1e-9 and v != hi:
                    raise ParameterError(f"parameter '{name}': value {v!r} not on the step grid "
                                         f"{lo} + k*{step}")
    return value


_SCHEMA_TYPES = {"int": "integer", "float": "double", "number": "double", "bool": "bool",
                 "str": "string", "enum": "string"}
_schema_cache: dict = {}


def schema_descriptor(key: str, config_root=None) -> ParameterDescriptor:
    """A parameter descriptor from the declaration of the config key ``key`` (dotted, e.g.
    ``teleop.loop.base_rate_hz``; see :func:`spec_descriptor`)."""
    import hri_runtime.config.tree as cfgmod

    root = str(config_root or cfgmod.find_config_root())
    if root not in _schema_cache:
        _schema_cache[root] = cfgmod.load_declarations(root).schema
    node: Any = _schema_cache[root]
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ParameterError(f"no config schema entry '{key}'")
        node = node[part]
    if not (isinstance(node, dict) and isinstance(node.get("type"), str)):
        raise ParameterError(f"config schema entry '{key}' is a section, not a value")
    return spec_descriptor(node)


def spec_descriptor(spec: dict) -> ParameterDescriptor:
    """A parameter descriptor from one leaf declaration (a ``parameters.yaml`` entry): type,
    inclusive min/max as range, exclusive gt/lt, enum values, read_only, description + unit +
    source. A type without a ROS parameter type (map, any, lists of those) is dynamically typed."""
    t = spec["type"]
    if t == "list":
        inner = (spec.get("items") or {}).get("type", "any")
        typ = _SCHEMA_TYPES.get(inner, None)
        typ = typ + "_array" if typ else None
    else:
        typ = _SCHEMA_TYPES.get(t)
    rng = (spec.get("min"), spec.get("max")) if ("min" in spec or "max" in spec) else None
    doc = spec.get("description", "") + (f" [{spec['unit']}]" if spec.get("unit") else "")
    if spec.get("source"):
        doc += f" (source: {spec['source']})"
    return ParameterDescriptor(type=typ, description=doc, range=rng, gt=spec.get("gt"), lt=spec.get("lt"),
                               values=tuple(spec["values"]) if t == "enum" else None,
                               read_only=bool(spec.get("read_only", False)), dynamic_typing=typ is None)


# --------------------------------------------------------------------------- --ros-args

@dataclass
class RosArgs:
    remaps: dict[str, str] = field(default_factory=dict)      # from -> to (incl. node:from)
    params: dict[str, Any] = field(default_factory=dict)      # -p name:=value
    params_files: list[str] = field(default_factory=list)
    node_name: str | None = None                              # -r __node:=
    namespace: str | None = None                              # -r __ns:=
    log_level: str | None = None
    rosout: bool = True                                       # --disable-rosout-logs
    unparsed: list[str] = field(default_factory=list)         # the program's own arguments

    def parameters_for(self, node_name: str, fq_name: str) -> dict[str, Any]:
        """Parameters for one node: params files (in order; '/**' and matching node names),
        then -p values."""
        out: dict[str, Any] = {}
        for path in self.params_files:
            out.update(load_params_file(path, node_name, fq_name))
        out.update(self.params)
        return out


def _split_assign(arg: str, flag: str) -> tuple[str, str]:
    if ":=" not in arg:
        raise ValueError(f"{flag} expects 'name:=value', got {arg!r}")
    a, b = arg.split(":=", 1)
    return a, b


def parse_yaml_value(text: str) -> Any:
    """``-p name:=value``: YAML typed as ROS does ('1' int, '1.0' double, 'true' bool, '[1, 2]'
    list); an empty value is the empty string."""
    if not text.strip():
        return ""
    try:
        v = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return text if v is None and text.strip() not in ("", "~", "null") else v


def parse_ros_args(argv: list[str] | None) -> RosArgs:
    """Parse every ``--ros-args ... [--]`` block of argv (ros2 launch passes one)."""
    out = RosArgs()
    argv = list(argv or [])
    i, inside = 0, False
    while i < len(argv):
        a = argv[i]
        if a == "--ros-args":
            inside = True
            i += 1
            continue
        if not inside:
            out.unparsed.append(a)
            i += 1
            continue
        if a == "--":
            inside = False
            i += 1
            continue

        def nxt() -> str:
            if i + 1 >= len(argv):
                raise ValueError(f"{a} expects an argument")
            return argv[i + 1]

        if a in ("-r", "--remap"):
            src, dst = _split_assign(nxt(), a)
            if src == "__ns":
                out.namespace = dst
            elif src == "__node" or src == "__name":
                out.node_name = dst
            else:
                out.remaps[src] = dst
            i += 2
        elif a in ("-p", "--param"):
            name, val = _split_assign(nxt(), a)
            out.params[name] = parse_yaml_value(val)
            i += 2
        elif a == "--params-file":
            out.params_files.append(nxt())
            i += 2
        elif a == "--log-level":
            out.log_level = nxt().split(":")[-1]
            i += 2
        elif a in ("-e", "--enclave"):
            i += 2
        elif a == "--disable-rosout-logs":
            out.rosout = False
            i += 1
        elif a in ("--enable-rosout-logs", "--disable-stdout-logs",
                   "--enable-stdout-logs", "--disable-external-lib-logs"):
            i += 1
        else:
            raise ValueError(f"unsupported --ros-args argument {a!r}")
    return out


def _flatten(prefix: str, d: dict, out: dict) -> None:
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict):
            _flatten(key, v, out)
        else:
            out[key] = v


def load_params_file(path: str, node_name: str, fq_name: str) -> dict[str, Any]:
    """Parameters of one node from a ROS 2 params file (nested keys flattened with '.')."""
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f) or {}
    if not isinstance(doc, dict):
        raise ParameterError(f"{path}: a params file is a mapping of node names")
    out: dict[str, Any] = {}
    # wildcards first, then exact names (more specific wins), in file order within a kind
    matches: list[tuple[int, dict]] = []
    for key, body in doc.items():
        if not isinstance(body, dict) or "ros__parameters" not in body:
            continue
        k = str(key)
        pattern = k if k.startswith("/") else "/" + k
        exact = k in (node_name, fq_name) or pattern == fq_name
        wild = ("*" in k) and (fnmatch.fnmatchcase(fq_name, pattern.replace("/**", "*"))
                               or k in ("/**", "**"))
        if exact:
            matches.append((1, body["ros__parameters"] or {}))
        elif wild:
            matches.append((0, body["ros__parameters"] or {}))
    for _, params in sorted(matches, key=lambda m: m[0]):
        _flatten("", params, out)
    return out
