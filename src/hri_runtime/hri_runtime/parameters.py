"""Typed parameters and node parameters from the packages' parameter declarations.

Every config key is declared once, in the ``parameters.yaml`` of the package that owns its
section (type, default, unit, bounds, description, source, read_only; docs/configuration.md).
From that one declaration come:

* ``params_type("teleop.clutch")``: a frozen dataclass type whose fields are the declared keys
  of the section (a sub-section is a field holding its own params type), with
  ``from_config(section)`` (checked against the declaration) and ``defaults()``;
* ``declare_config(node, sections, cfg)``: every key of the sections declared as a node
  parameter named by its dotted path (``teleop.vr.port``), the robot config's value as default
  and a launch / ``-p`` override winning; returns the config tree with the node's values.
"""
from __future__ import annotations

import copy
import dataclasses
import keyword
import threading
from pathlib import Path
from typing import Any, Callable, Optional

from . import config as cfgmod
from .config import ConfigError, is_leaf_spec
from .params import spec_descriptor

__all__ = ["params_type", "declare_config", "NODE_PARAMETERS"]

NODE_PARAMETERS = "<node parameters>"   # the origin named by errors in values a node was given
_ROS_SCALARS = {"int", "float", "number", "bool", "str", "enum"}

_types: dict = {}


def _python_type(spec: dict) -> Any:
    kind = spec["type"]
    base = {"int": int, "float": float, "number": float, "bool": bool, "str": str, "enum": str,
            "list": tuple, "map": dict}.get(kind, Any)
    return Optional[base] if spec.get("nullable") and base is not Any else base


def _convert(spec: dict, value: Any) -> Any:
    """A validated config value as the field holds it: float leaves as float, lists as tuples."""
    if value is None:
        return None
    kind = spec["type"]
    if kind in ("float", "number") and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind == "list":
        item = spec.get("items") or {}
        return tuple(_convert(item, v) if is_leaf_spec(item) else v for v in value)
    if kind == "map":
        return copy.deepcopy(value)
    return value


def params_type(section: str, config_root: str | Path | None = None) -> type:
    """The frozen dataclass type of the declared section ``section`` (dotted), or with
    ``"<map>.*"`` of the values of a declared map whose ``values`` are structured (e.g.
    ``pid_tuning.setups.*``: one setup; checked as an entry of that map). Cached: one type per
    section and declaration set. Subclass it to add derived properties and methods."""
    declarations = cfgmod.load_declarations(config_root)
    if section.endswith(".*"):
        return _value_type_of(section[:-2], declarations)
    return _type_of(section, declarations)


def _value_type_of(map_section: str, declarations) -> type:
    key = (map_section + ".*", declarations)
    if key not in _types:
        try:
            spec = declarations.spec(map_section)
        except KeyError as exc:
            raise ConfigError(None, map_section, None, f"a declared map ({exc.args[0]})") from None
        values = spec.get("values") if is_leaf_spec(spec) and spec["type"] == "map" else None
        if not isinstance(values, dict) or is_leaf_spec(values):
            raise ConfigError(None, map_section, None, "a map whose values are structured (a `values` section)")

        def validate(value: dict) -> None:        # as an entry of the map: errors name its keys
            cfgmod.validate_section(map_section, {"<value>": value}, declarations)

        _types[key] = _make_type(map_section + ".*", values, declarations, validate)
    return _types[key]


def _type_of(section: str, declarations) -> type:
    key = (section, declarations)
    if key not in _types:
        try:
            spec = declarations.spec(section)
        except KeyError as exc:
            raise ConfigError(None, section, None, f"a declared section ({exc.args[0]})") from None
        if is_leaf_spec(spec):
            raise ConfigError(None, section, None, "a section (this is a single parameter)")
        _types[key] = _make_type(section, spec, declarations)
    return _types[key]


_checked = threading.local()      # set while from_config builds what it has just validated


def _make_type(section: str, spec: dict, declarations, validate: Callable[[dict], None] | None = None) -> type:
    """The params type of ``spec``; ``validate(values)`` checks a section's values (default: the
    declared ``section``; a map value's type passes its own, its sub-sections none: the value
    is checked whole)."""
    if validate is None:
        def validate(values: dict) -> None:
            cfgmod.validate_section(section, values, declarations)
    in_map_value = ".*" in section
    fields = []
    nested: dict[str, type] = {}
    path = tuple(section.split("."))
    file = str(declarations.files.get(path[0], "<declarations>"))
    for name, child in spec.items():
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise ConfigError(file, f"{section}.{name}", name, "a key usable as a field name")
        if is_leaf_spec(child):
            default = _convert(child, cfgmod.expand_env(child.get("default"), file, path + (name,)))
            if isinstance(default, dict):
                value = dataclasses.field(default_factory=lambda d=default: copy.deepcopy(d))
            else:
                value = dataclasses.field(default=default)
            fields.append((name, _python_type(child), value))
        elif in_map_value:
            nested[name] = _make_type(f"{section}.{name}", child, declarations, lambda _values: None)
            fields.append((name, nested[name], dataclasses.field(default_factory=nested[name])))
        else:
            nested[name] = _type_of(f"{section}.{name}", declarations)
            fields.append((name, nested[name], dataclasses.field(default_factory=nested[name])))

    def __post_init__(self):
        if not getattr(_checked, "active", False):
            validate(_plain(self, spec))

    def from_config(cls, values: dict):
        """An instance from the config section ``values`` (checked against the declaration:
        types, bounds, lengths, the cross-key rules within the section; ConfigError)."""
        validate(values)
        outer = getattr(_checked, "active", False)
        _checked.active = True
        try:
            return cls._build(values)
        finally:
            _checked.active = outer

    def _build(cls, values: dict):
        return cls(**{name: nested[name]._build(values[name]) if name in nested
                      else _convert(child, values[name]) for name, child in spec.items() if name in values})

    def defaults(cls):
        """An instance holding the declared defaults."""
        return cls()

    namespace = {"__post_init__": __post_init__, "from_config": classmethod(from_config),
                 "_build": classmethod(_build), "defaults": classmethod(defaults), "SECTION": section,
                 "__module__": __name__,
                 "__doc__": f"``{section}`` of the config tree (declared in the parameters.yaml of "
                            f"{Path(file).parent.name})."}
    cls_name = "".join(part.title().replace("_", "").replace("*", "Value") for part in path) + "Params"
    return dataclasses.make_dataclass(cls_name, fields, namespace=namespace, frozen=True)


def _plain(instance, spec: dict) -> dict:
    """The declared fields of a params instance as a config section (lists, dicts)."""
    out = {}
    for name, child in spec.items():
        value = getattr(instance, name)
        if not is_leaf_spec(child):
            out[name] = _plain(value, child)
        else:
            out[name] = _unfreeze(value)
    return out


def _unfreeze(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_unfreeze(v) for v in value]
    return value


# ----------------------------------------------------------------------------- node parameters


def declare_config(node, sections, cfg: Optional[dict] = None, *, robot: str = "fr3",
                   on_set: Optional[dict[str, Callable[[Any], Optional[str]]]] = None) -> dict:
    """Declare ``robot``, ``robot_id`` and every key of ``sections`` (dotted section paths) as
    node parameters with descriptors from the declarations; return the config tree with the
    node's values in it, re-validated (ConfigError naming ``<node parameters>``).

    ``cfg`` is the robot's merged config (default: ``load_robot_config(robot, robot_id)`` with
    the node's ``robot`` / ``robot_id`` parameters). A key's default is the config's value; an
    override (``-p teleop.vr.port:=0``, launch ``parameters:``, a params file, the node's
    ``parameters=``) wins. Keys without a ROS parameter type (map, any, lists of those) stay as
    in the config. ``on_set``: dotted name -> applier for the keys settable at run time (all
    others are read-only)."""
    if isinstance(sections, str):
        sections = (sections,)
    on_set = dict(on_set or {})
    if cfg is not None:
        robot = str((cfg.get("robot") or {}).get("model") or robot)
    robot = _declared(node, "robot", robot, "robot config name (config/robots/<robot>.yaml)")
    robot_id = _declared(node, "robot_id", robot, "instance name ({robot_id} in frame names and topics)")
    if cfg is None:
        cfg = cfgmod.load_robot_config(robot, robot_id=robot_id)
    declarations = cfgmod.load_declarations()
    out = copy.deepcopy(cfg)
    changed: list[tuple] = []
    for section in sections:
        try:
            spec = declarations.spec(section)
        except KeyError as exc:
            raise ConfigError(None, section, None, f"a declared section ({exc.args[0]})") from None
        for path, leaf in _leaves(spec, tuple(section.split("."))):
            if not _is_ros_parameter(leaf):
                continue
            current = _lookup(cfg, path)
            if current is _MISSING:
                continue
            name = ".".join(path)
            default = list(current) if isinstance(current, tuple) else current
            param = node.declare_parameter(name, copy.deepcopy(default), spec_descriptor(leaf),
                                           on_set=on_set.pop(name, None))
            if param.value != default:
                _assign(out, path, param.value)
                changed.append(path)
    if on_set:
        raise ConfigError(None, sorted(on_set)[0], None, "on_set for a declared parameter of the sections")
    if changed:
        origin = {p: NODE_PARAMETERS for p in changed}
        cfgmod.validate(out, origin, ["<robot config>", NODE_PARAMETERS], declarations)
    return out


_MISSING = object()


def _declared(node, name: str, default: str, description: str) -> str:
    """The value of a string parameter, declared here unless the node declared it already."""
    if node.has_parameter(name):
        return node.get_parameter(name).value
    return node.declare_parameter(name, default, {"type": "string", "read_only": True,
                                                  "description": description}).value


def _leaves(spec: dict, path: tuple):
    if is_leaf_spec(spec):
        yield path, spec
        return
    for key, child in spec.items():
        yield from _leaves(child, path + (key,))


def _is_ros_parameter(spec: dict) -> bool:
    if spec["type"] in _ROS_SCALARS:
        return True
    item = spec.get("items") or {}
    return spec["type"] == "list" and is_leaf_spec(item) and item["type"] in _ROS_SCALARS


def _lookup(tree: Any, path: tuple) -> Any:
    for part in path:
        if not isinstance(tree, dict) or part not in tree:
            return _MISSING
        tree = tree[part]
    return tree


def _assign(tree: dict, path: tuple, value: Any) -> None:
    for part in path[:-1]:
        tree = tree[part]
    tree[path[-1]] = value

