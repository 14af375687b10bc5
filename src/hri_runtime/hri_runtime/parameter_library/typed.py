"""Typed parameters and node parameters from the packages' parameter declarations.

Every config key is declared once, in the ``parameters.yaml`` of the package that owns its
section (type, default, unit, bounds, description, source, read_only; docs/configuration.md).
From that one declaration come:

* the typed parameter classes: :class:`Params` is the base of the classes ``make params`` writes
  into each package's ``parameters_gen.py`` (``TeleopClutchParams``: a frozen dataclass whose
  fields are the declared keys of ``teleop.clutch``; a sub-section is a field holding its own
  class) with ``from_config(section)`` / ``from_tree(cfg)`` (checked against the declaration) and
  ``defaults()``; ``params_type("teleop.clutch")`` builds the same at run time;
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
from typing import Any, Callable, ClassVar, Optional, TypeVar

import hri_runtime.config.tree as cfgmod
from hri_runtime.config.tree import ConfigError, Declarations, is_leaf_spec
from hri_runtime.parameter import spec_descriptor

__all__ = ["Params", "params_type", "env_default", "declare_config", "NODE_PARAMETERS"]

NODE_PARAMETERS = "<node parameters>"   # the origin named by errors in values a node was given
_ROS_SCALARS = {"int", "float", "number", "bool", "str", "enum"}


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


_P = TypeVar("_P", bound="Params")
_checked = threading.local()      # set while from_config builds what it has just validated


class Params:
    """Base of the typed parameter classes: the generated ones (``<pkg>/parameters_gen.py``,
    written by ``make params`` from the package's ``parameters.yaml``) and those of
    :func:`params_type`. A subclass is a frozen dataclass whose fields are the declared keys of
    the section ``SECTION`` (dotted; ``"<map>.*"`` for one value of a map with structured values);
    a sub-section is a field holding its own params type. Construction, ``from_config`` and
    ``defaults`` check the values against the declaration, through the one validation path
    (``hri_runtime.config.tree.validate_section``)."""

    SECTION: ClassVar[str] = ""
    _DECLARATIONS: ClassVar[Optional[Declarations]] = None     # None: the workspace's declarations

    def __post_init__(self) -> None:
        if not getattr(_checked, "active", False):
            type(self)._validate(_plain(self, type(self)._spec()))

    @classmethod
    def from_config(cls: type[_P], values: dict) -> _P:
        """An instance from the config section ``values`` (checked against the declaration:
        types, bounds, lengths, the cross-key rules within the section; ConfigError)."""
        cls._validate(values)
        outer = getattr(_checked, "active", False)
        _checked.active = True
        try:
            return cls._build(values)
        finally:
            _checked.active = outer

    @classmethod
    def from_tree(cls: type[_P], cfg: dict) -> _P:
        """An instance from a whole config tree (``load_robot_config``): its section ``SECTION``."""
        if ".*" in cls.SECTION:
            raise TypeError(f"{cls.__name__} types one value of a map: use from_config(value)")
        return cls.from_config(cfgmod.section(cfg, cls.SECTION))

    @classmethod
    def defaults(cls: type[_P]) -> _P:
        """An instance holding the declared defaults."""
        return cls()

    @classmethod
    def _declarations(cls) -> Declarations:
        return cls._DECLARATIONS if cls._DECLARATIONS is not None else cfgmod.load_declarations()

    @classmethod
    def _spec(cls) -> dict:
        return _spec_of(cls.SECTION, cls._declarations())

    @classmethod
    def _validate(cls, values: Any) -> None:
        section = cls.SECTION
        if section.endswith(".*"):       # one value of a map: checked as an entry (errors name its keys)
            cfgmod.validate_section(section[:-2], {"<value>": values}, cls._declarations())
        elif ".*" not in section:        # (a sub-section of a map value is checked with its value)
            cfgmod.validate_section(section, values, cls._declarations())

    @classmethod
    def _build(cls: type[_P], values: dict) -> _P:
        fields = {f.name: f for f in dataclasses.fields(cls)}
        kwargs = {}
        for name, child in cls._spec().items():
            if name not in values:
                continue
            structured = fields[name].metadata.get(STRUCTURED)
            if structured is not None:              # a map with ``fields``: its class, or None
                kwargs[name] = None if values[name] is None else structured._build(values[name])
            elif is_leaf_spec(child):
                kwargs[name] = _convert(child, values[name])
            else:
                kwargs[name] = fields[name].default_factory._build(values[name])
        return cls(**kwargs)


def env_default(dotted: str) -> Callable[[], Any]:
    """The default factory of a key whose declared default holds ``${VAR}`` (expanded when an
    instance is made, converted as the field holds it)."""
    def factory() -> Any:
        declarations = cfgmod.load_declarations()
        spec = _spec_of(dotted, declarations)
        path = tuple(dotted.split("."))
        file = str(declarations.files.get(path[0], "<declarations>"))
        return _convert(spec, cfgmod.expand_env(spec.get("default"), file, path))
    return factory


def _spec_of(section: str, declarations: Declarations) -> Any:
    """The spec at a dotted path; ``*`` steps into the ``values`` of a map; a map with
    ``fields`` (a structured value) gives its fields."""
    parts = section.split(".")
    if "*" not in parts:
        node = declarations.spec(section)
    else:
        star = parts.index("*")
        node = declarations.spec(".".join(parts[:star]))["values"]
        for part in parts[star + 1:]:
            node = node[part] if not is_structured(node) else node["fields"][part]
    return node["fields"] if is_structured(node) else node


def is_structured(spec: Any) -> bool:
    """A map leaf whose value has declared ``fields`` (typed as its own params class)."""
    return is_leaf_spec(spec) and spec["type"] == "map" and isinstance(spec.get("fields"), dict)


STRUCTURED = "hri_params_structured"   # dataclass field metadata: the class of a structured map value


def params_type(section: str, config_root: str | Path | None = None) -> type:
    """The frozen dataclass type of the declared section ``section`` (dotted), or with
    ``"<map>.*"`` of the values of a declared map whose ``values`` are structured (e.g.
    ``pid_tuning.setups.*``: one setup; checked as an entry of that map), built at run time.
    Cached: one type per section and declaration set. Code uses the generated classes of the
    owning package (``<pkg>.parameters_gen``, the same base :class:`Params`); this builder is for
    declarations read at run time (another ``config_root``) and code that cannot import the owner."""
    declarations = cfgmod.load_declarations(config_root)
    if section.endswith(".*"):
        return _value_type_of(section[:-2], declarations)
    return _type_of(section, declarations)


_types: dict = {}


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
        _types[key] = _make_type(map_section + ".*", values, declarations)
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


def _make_type(section: str, spec: dict, declarations, structured: bool = False) -> type:
    """The params type of ``spec`` at ``section`` (a :class:`Params` dataclass; ``structured``:
    of the value of a map with ``fields``)."""
    in_map_value = ".*" in section or structured
    fields = []
    path = tuple(section.split("."))
    file = str(declarations.files.get(path[0], "<declarations>"))
    for name, child in spec.items():
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise ConfigError(file, f"{section}.{name}", name, "a key usable as a field name")
        if is_structured(child) and child.get("default") is None:
            nested = _make_type(f"{section}.{name}", child["fields"], declarations, structured=True)
            fields.append((name, Optional[nested], dataclasses.field(default=None, metadata={STRUCTURED: nested})))
        elif is_leaf_spec(child):
            default = _convert(child, cfgmod.expand_env(child.get("default"), file, path + (name,)))
            if isinstance(default, dict):
                value = dataclasses.field(default_factory=lambda d=default: copy.deepcopy(d))
            else:
                value = dataclasses.field(default=default)
            fields.append((name, _python_type(child), value))
        else:
            nested = (_make_type(f"{section}.{name}", child, declarations, structured) if in_map_value
                      else _type_of(f"{section}.{name}", declarations))
            fields.append((name, nested, dataclasses.field(default_factory=nested)))
    namespace = {"SECTION": section, "_DECLARATIONS": declarations, "__module__": __name__,
                 "__doc__": f"``{section}`` of the config tree (declared in the parameters.yaml of "
                            f"{Path(file).parent.name})."}
    cls_name = class_name(section)
    return dataclasses.make_dataclass(cls_name, fields, bases=(Params,), namespace=namespace, frozen=True)


def class_name(section: str) -> str:
    """``teleop.clutch`` -> ``TeleopClutchParams``; ``pid_tuning.setups.*`` -> ``PidTuningSetupsValueParams``."""
    return "".join(part.title().replace("_", "").replace("*", "Value") for part in section.split(".")) + "Params"


def _plain(instance, spec: dict) -> dict:
    """The declared fields of a params instance as a config section (lists, dicts)."""
    out = {}
    for name, child in spec.items():
        value = getattr(instance, name)
        if not is_leaf_spec(child):
            out[name] = _plain(value, child)
        elif isinstance(value, Params):        # a structured map value
            out[name] = _plain(value, child["fields"])
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
    in the config; a map with declared ``fields`` (a structured value) is declared field by field
    (``pid_tuning.initial_gains.kp``) where the config holds one. ``on_set``: dotted name ->
    applier for the keys settable at run time (all others are read-only)."""
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
        for path, leaf in leaves(spec, tuple(section.split(".")), fields=True):
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


def leaves(node: Any, path: tuple = (), fields: bool = False):
    """(dotted path tuple, leaf declaration) of every leaf under a declaration node, in order;
    with ``fields`` a structured map stands as its declared fields."""
    if fields and is_structured(node):
        for key, child in node["fields"].items():
            yield from leaves(child, path + (key,), fields)
    elif is_leaf_spec(node):
        yield path, node
    else:
        for key, child in node.items():
            if isinstance(child, dict):
                yield from leaves(child, path + (key,), fields)


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

