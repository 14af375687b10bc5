"""The one YAML base-override configuration tree.

``config/_defaults.yaml`` holds every key with its default; ``config/robots/<robot>.yaml``
only what differs for that robot. Loading a robot:

1. read ``_defaults.yaml``, then the robot's override chain (a robot file may say
   ``extends: <other robot>``, e.g. a second instance of a model with a different port);
2. merge: mappings merge recursively, scalars and lists are replaced whole;
3. expand ``${VAR}`` / ``${VAR:-default}`` from the environment (a string that is only a
   reference is re-read as YAML, so ``${PORT:-7447}`` gives the int 7447);
4. replace ``{robot_id}`` in keys and strings by the instance name;
5. validate against the schema (``config/schema/*.yaml``, format in docs/configuration.md).

Every error is one ``ConfigError`` naming the file, the key path, the value and what was
expected. ``hri config check`` turns it into one line on stderr and exit code 2.
"""
from __future__ import annotations

import copy
import difflib
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DEFAULTS_FILE = "_defaults.yaml"
ROBOTS_DIR = "robots"
SCHEMA_DIR = "schema"
RULES_KEY = "_rules"

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(Exception):
    """A configuration problem, reported as one line: file: key.path: value – expected ..."""

    def __init__(self, file: str | Path | None, key_path: str, value: Any, expected: str):
        self.file = _display_path(file) if file is not None else "<merged>"
        self.key_path = key_path or "<root>"
        self.value = value
        self.expected = expected
        super().__init__(self.one_line())

    def one_line(self) -> str:
        shown = _short_repr(self.value)
        return f"{self.file}: {self.key_path}: {shown} – expected {self.expected}"


def _display_path(file: str | Path) -> str:
    """A path relative to the working directory when it is below it (shorter messages)."""
    text = str(file)
    if text.startswith("<"):
        return text
    try:
        return str(Path(text).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return text


def _short_repr(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----------------------------------------------------------------------------- locating


def find_config_root(start: Path | None = None) -> Path:
    """The config tree: ``$HRI_CONFIG_ROOT``, else the nearest ``config/`` above ``start``
    (default: the working directory), else the workspace this module was installed from."""
    env = os.environ.get("HRI_CONFIG_ROOT")
    if env:
        return Path(env)
    candidates = []
    here = (start or Path.cwd()).resolve()
    candidates.extend([here, *here.parents])
    module_dir = Path(__file__).resolve().parent
    candidates.extend(module_dir.parents)
    for base in candidates:
        if (base / "config" / DEFAULTS_FILE).is_file():
            return base / "config"
    raise ConfigError(None, "", str(here), f"a config tree (config/{DEFAULTS_FILE}) above the "
                      "working directory, or HRI_CONFIG_ROOT set")


def list_robots(config_root: Path | None = None) -> list[str]:
    root = Path(config_root) if config_root else find_config_root()
    return sorted(p.stem for p in (root / ROBOTS_DIR).glob("*.yaml"))


# ----------------------------------------------------------------------------- reading


def read_yaml(path: Path) -> Any:
    """Read one YAML file; a syntax error becomes a ConfigError with its line number."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(path, "", None, f"a readable file ({exc.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown line"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(path, f"<yaml {where}>", problem, "valid YAML syntax") from None
    return {} if data is None else data


# ----------------------------------------------------------------------------- merging


def deep_merge(base: Any, override: Any, origin: dict, file: str, path: tuple = ()) -> Any:
    """Merge ``override`` onto ``base``: mappings recursively, anything else replaced whole.

    ``origin`` maps every leaf key path (tuple) to the file that set it last."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            if key in merged:
                merged[key] = deep_merge(merged[key], value, origin, file, path + (key,))
            else:
                merged[key] = copy.deepcopy(value)
                _record_origin(value, origin, file, path + (key,))
        return merged
    # Replacing a subtree: forget the origins below it, then record the new ones.
    for known in [p for p in origin if p[: len(path)] == path and len(p) > len(path)]:
        del origin[known]
    _record_origin(override, origin, file, path)
    return copy.deepcopy(override)


def _record_origin(value: Any, origin: dict, file: str, path: tuple) -> None:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            _record_origin(child, origin, file, path + (key,))
    else:
        origin[path] = file


# ----------------------------------------------------------------------------- expansion


def _expand_env(value: Any, file_of, path: tuple) -> Any:
    if isinstance(value, dict):
        return {k: _expand_env(v, file_of, path + (k,)) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand_env(v, file_of, path + (i,)) for i, v in enumerate(value)]
    if not isinstance(value, str) or "${" not in value:
        return value

    def substitute(match: re.Match) -> str:
        name, default = match.group(1), match.group(2)
        if name in os.environ:
            return os.environ[name]
        if default is not None:
            return default
        raise ConfigError(file_of(path), _dotted(path), value,
                          f"environment variable {name} to be set (or a default: ${{{name}:-value}})")

    expanded = _ENV_REF.sub(substitute, value)
    if _ENV_REF.fullmatch(value):
        # A value that is only a reference takes the YAML type of what it expands to.
        try:
            return yaml.safe_load(expanded) if expanded != "" else ""
        except yaml.YAMLError:
            return expanded
    return expanded


def _resolve_robot_id(value: Any, robot_id: str) -> Any:
    if isinstance(value, dict):
        return {_resolve_robot_id(k, robot_id): _resolve_robot_id(v, robot_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_robot_id(v, robot_id) for v in value]
    if isinstance(value, str):
        return value.replace("{robot_id}", robot_id)
    return value


def _dotted(path: tuple) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


# ----------------------------------------------------------------------------- schema


_TYPE_NAMES = {"int", "float", "number", "bool", "str", "enum", "list", "map", "any"}
_SPEC_KEYS = {"type", "min", "max", "gt", "lt", "unit", "doc", "nullable", "required", "values",
              "items", "length", "min_length", "max_length", "pattern", "required_when", "reader"}


def is_leaf_spec(node: Any) -> bool:
    return isinstance(node, dict) and isinstance(node.get("type"), str)


def load_schema(config_root: Path) -> dict:
    """Merge every ``schema/*.yaml`` fragment into one schema tree."""
    schema: dict = {}
    origin: dict = {}
    schema_dir = Path(config_root) / SCHEMA_DIR
    for path in sorted(schema_dir.glob("*.yaml")):
        fragment = read_yaml(path)
        if not isinstance(fragment, dict):
            raise ConfigError(path, "", fragment, "a mapping of sections to specs")
        rules = fragment.pop(RULES_KEY, [])
        schema = deep_merge(schema, fragment, origin, str(path))
        schema.setdefault(RULES_KEY, []).extend(rules or [])
    _check_schema(schema, (), schema_dir)
    return schema


def _check_schema(node: Any, path: tuple, schema_dir: Path) -> None:
    """A schema typo must fail loudly, not validate nothing."""
    if is_leaf_spec(node):
        if node["type"] not in _TYPE_NAMES:
            raise ConfigError(schema_dir, _dotted(path), node["type"], f"one of {sorted(_TYPE_NAMES)}")
        unknown = set(node) - _SPEC_KEYS
        if unknown:
            raise ConfigError(schema_dir, _dotted(path), sorted(unknown), f"spec keys among {sorted(_SPEC_KEYS)}")
        return
    if not isinstance(node, dict):
        raise ConfigError(schema_dir, _dotted(path), node, "a section mapping or a leaf spec with 'type'")
    for key, child in node.items():
        if key == RULES_KEY and not path:
            continue
        _check_schema(child, path + (key,), schema_dir)


class _Validator:
    def __init__(self, config: dict, origin: dict, fallback_file: str):
        self.config = config
        self.origin = origin
        self.fallback_file = fallback_file

    def file_of(self, path: tuple) -> str:
        # The file that set this key, or the one that set its nearest ancestor.
        for cut in range(len(path), -1, -1):
            prefix = path[:cut]
            hits = [f for p, f in self.origin.items() if p[:cut] == prefix and len(p) >= cut]
            if hits and cut == len(path):
                exact = self.origin.get(path)
                return exact or hits[-1]
            if hits:
                return hits[-1]
        return self.fallback_file

    def fail(self, path: tuple, value: Any, expected: str) -> None:
        raise ConfigError(self.file_of(path), _dotted(path), value, expected)

    def lookup(self, dotted: str) -> Any:
        node: Any = self.config
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    # -- sections
    def section(self, schema: dict, value: Any, path: tuple) -> None:
        if not isinstance(value, dict):
            self.fail(path, value, "a mapping (section)")
        allowed = [k for k in schema if k != RULES_KEY]
        for key in value:
            if key not in schema:
                close = difflib.get_close_matches(str(key), [str(k) for k in allowed], n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                self.fail(path + (key,), value[key], f"a known key (unknown key '{key}'{hint})")
        for key, spec in schema.items():
            if key == RULES_KEY and not path:
                continue
            if key not in value:
                if is_leaf_spec(spec) and not spec.get("required", True):
                    continue
                self.fail(path + (key,), None, f"key '{key}' to be present ({self._describe(spec)})")
            self.node(spec, value[key], path + (key,))

    def node(self, spec: Any, value: Any, path: tuple) -> None:
        if is_leaf_spec(spec):
            self.leaf(spec, value, path)
        else:
            self.section(spec, value, path)

    # -- leaves
    def _describe(self, spec: Any) -> str:
        if not is_leaf_spec(spec):
            return "a section"
        kind = spec["type"]
        parts = [kind if kind != "enum" else f"one of {spec.get('values')}"]
        if kind == "list":
            item = spec.get("items")
            if item:
                parts = [f"list of {self._describe(item)}"]
            if "length" in spec:
                parts.append(f"length {spec['length']}")
        bounds = []
        for word, sym in (("gt", ">"), ("min", ">="), ("lt", "<"), ("max", "<=")):
            if word in spec:
                bounds.append(f"{sym} {spec[word]}")
        if bounds:
            parts.append(" and ".join(bounds))
        if "unit" in spec:
            parts.append(f"in {spec['unit']}")
        return ", ".join(parts)

    def leaf(self, spec: dict, value: Any, path: tuple) -> None:
        if value is None:
            when = spec.get("required_when")
            if spec.get("nullable") and not (when and self._condition(when)):
                return
            why = f" (required when {when})" if when else ""
            self.fail(path, value, f"{self._describe(spec)}{why}, not null")
        kind = spec["type"]
        if kind == "any":
            return
        if kind == "bool":
            if not isinstance(value, bool):
                self.fail(path, value, "a boolean (true/false)")
            return
        if kind in ("int", "float", "number"):
            self.number(spec, value, path)
            return
        if kind == "str":
            if not isinstance(value, str):
                self.fail(path, value, f"a string{self._unit(spec)}")
            pattern = spec.get("pattern")
            if pattern and not re.fullmatch(pattern, value):
                self.fail(path, value, f"a string matching /{pattern}/")
            return
        if kind == "enum":
            values = spec.get("values", [])
            if value not in values:
                close = difflib.get_close_matches(str(value), [str(v) for v in values], n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                self.fail(path, value, f"one of {values}{hint}")
            return
        if kind == "list":
            self.sequence(spec, value, path)
            return
        if kind == "map":
            if not isinstance(value, dict):
                self.fail(path, value, "a mapping")
            item = spec.get("values")
            if isinstance(item, dict):
                for key, child in value.items():
                    self.node(item, child, path + (key,))
            return

    @staticmethod
    def _unit(spec: dict) -> str:
        return f" in {spec['unit']}" if "unit" in spec else ""

    def number(self, spec: dict, value: Any, path: tuple) -> None:
        kind = spec["type"]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(path, value, f"{'an integer' if kind == 'int' else 'a number'}{self._unit(spec)}")
        if kind == "int" and not isinstance(value, int):
            self.fail(path, value, f"an integer{self._unit(spec)}")
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(path, value, f"a finite number{self._unit(spec)}")
        unit = self._unit(spec)
        if "min" in spec and value < spec["min"]:
            self.fail(path, value, f"a value >= {spec['min']}{unit}")
        if "max" in spec and value > spec["max"]:
            self.fail(path, value, f"a value <= {spec['max']}{unit}")
        if "gt" in spec and not value > spec["gt"]:
            self.fail(path, value, f"a value > {spec['gt']}{unit}")
        if "lt" in spec and not value < spec["lt"]:
            self.fail(path, value, f"a value < {spec['lt']}{unit}")

    def sequence(self, spec: dict, value: Any, path: tuple) -> None:
        if not isinstance(value, list):
            self.fail(path, value, f"a list ({self._describe(spec)})")
        length = spec.get("length")
        if length is not None:
            if isinstance(length, str):
                expected = self.lookup(length)
                if not isinstance(expected, int):
                    self.fail(path, value, f"a length given by {length}, which is not set")
                if len(value) != expected:
                    self.fail(path, value, f"a list of length {expected} ({length}), got {len(value)}")
            elif len(value) != length:
                self.fail(path, value, f"a list of length {length}, got {len(value)}")
        if "min_length" in spec and len(value) < spec["min_length"]:
            self.fail(path, value, f"a list of at least {spec['min_length']} items")
        if "max_length" in spec and len(value) > spec["max_length"]:
            self.fail(path, value, f"a list of at most {spec['max_length']} items")
        item = spec.get("items")
        if item is not None:
            if "unit" in spec and is_leaf_spec(item) and "unit" not in item:
                item = {**item, "unit": spec["unit"]}  # the list's unit applies to its items
            for index, child in enumerate(value):
                self.node(item, child, path + (index,))

    def _condition(self, when: dict) -> bool:
        return all(self.lookup(key) == expected for key, expected in when.items())

    # -- cross-key rules
    def rules(self, rules: list) -> None:
        for rule in rules:
            if "less" in rule:
                self._rule_less(*rule["less"])
            elif "within" in rule:
                self._rule_within(*rule["within"])
            elif "distinct" in rule:
                self._rule_distinct(rule["distinct"])
            else:
                raise ConfigError(None, RULES_KEY, rule, "a rule of kind less / within / distinct")

    def _paths(self, dotted: str) -> list[tuple]:
        # "a.b.*" expands to every child of a.b.
        parts = dotted.split(".")
        results: list[tuple] = [()]
        for part in parts:
            nxt = []
            for prefix in results:
                node = self.lookup(".".join(map(str, prefix))) if prefix else self.config
                if not isinstance(node, dict):
                    continue
                if part == "*":
                    nxt.extend(prefix + (k,) for k in node)
                elif part in node:
                    nxt.append(prefix + (part,))
            results = nxt
        return results

    def _rule_less(self, low_key: str, high_key: str) -> None:
        low, high = self.lookup(low_key), self.lookup(high_key)
        if low is None or high is None:
            return
        pairs = zip(low, high) if isinstance(low, list) else [(low, high)]
        for index, (lo, hi) in enumerate(pairs):
            if not lo < hi:
                path = tuple(low_key.split(".")) + ((index,) if isinstance(low, list) else ())
                self.fail(path, lo, f"a value below {high_key}{f'[{index}]' if isinstance(low, list) else ''} = {hi}")

    def _rule_within(self, value_key: str, low_key: str, high_key: str) -> None:
        low, high = self.lookup(low_key), self.lookup(high_key)
        if low is None or high is None:
            return
        for path in self._paths(value_key):
            values = self.lookup(".".join(map(str, path)))
            if values is None:
                continue
            if not isinstance(values, list) or len(values) != len(low):
                self.fail(path, values, f"a list of length {len(low)} (as {low_key})")
            for index, (v, lo, hi) in enumerate(zip(values, low, high)):
                if not (isinstance(v, (int, float)) and lo <= v <= hi):
                    self.fail(path + (index,), v, f"a value within [{lo}, {hi}] ({low_key}/{high_key})")

    def _rule_distinct(self, key: str) -> None:
        values = self.lookup(key)
        if isinstance(values, list) and len(set(map(str, values))) != len(values):
            dupes = sorted({str(v) for v in values if list(map(str, values)).count(str(v)) > 1})
            self.fail(tuple(key.split(".")), values, f"distinct entries (repeated: {dupes})")


# ----------------------------------------------------------------------------- public API


@dataclass
class LoadedConfig:
    """A merged, validated config with where each leaf came from."""

    robot: str
    robot_id: str
    data: dict
    origin: dict  # key path tuple -> file
    files: list[str]

    def origin_of(self, dotted: str) -> str:
        return self.origin.get(tuple(dotted.split(".")), "<default>")


def _override_chain(robot: str, root: Path) -> list[Path]:
    chain: list[Path] = []
    seen: set[str] = set()
    name = robot
    robots_dir = root / ROBOTS_DIR
    while name is not None:
        path = robots_dir / f"{name}.yaml"
        if not path.is_file():
            known = list_robots(root)
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            where = str(chain[0]) if chain else str(robots_dir)
            key = "extends" if chain else "robot"
            raise ConfigError(where, key, name, f"a robot with an override file in {_display_path(robots_dir)} "
                              f"(known: {', '.join(known)}){hint}")
        if name in seen:
            raise ConfigError(path, "extends", name, "an extends chain without cycles")
        seen.add(name)
        chain.append(path)
        data = read_yaml(path)
        name = data.get("extends") if isinstance(data, dict) else None
    return list(reversed(chain))


def load(robot: str, robot_id: str | None = None, config_root: str | Path | None = None,
         overrides: dict | list[str] | None = None) -> LoadedConfig:
    """Load, merge, expand and validate the config of one robot instance."""
    root = Path(config_root) if config_root else find_config_root()
    defaults_path = root / DEFAULTS_FILE
    origin: dict = {}
    data = read_yaml(defaults_path)
    if not isinstance(data, dict):
        raise ConfigError(defaults_path, "", data, "a mapping at the top level")
    _record_origin(data, origin, str(defaults_path), ())
    files = [str(defaults_path)]
    for path in _override_chain(robot, root):
        layer = read_yaml(path)
        if not isinstance(layer, dict):
            raise ConfigError(path, "", layer, "a mapping at the top level")
        layer.pop("extends", None)
        data = deep_merge(data, layer, origin, str(path))
        files.append(str(path))
    if overrides:
        layer = _overrides_to_tree(overrides)
        data = deep_merge(data, layer, origin, "<command line>")
        files.append("<command line>")

    def file_of(path: tuple) -> str:
        return origin.get(path, str(defaults_path))

    data = _expand_env(data, file_of, ())
    instance = robot_id or robot
    data = _resolve_robot_id(data, instance)
    origin = {tuple(_resolve_robot_id(list(k), instance)): v for k, v in origin.items()}
    schema = load_schema(root)
    validator = _Validator(data, origin, str(defaults_path))
    validator.section({k: v for k, v in schema.items() if k != RULES_KEY}, data, ())
    validator.rules(schema.get(RULES_KEY, []))
    return LoadedConfig(robot=robot, robot_id=instance, data=data, origin=origin, files=files)


def _overrides_to_tree(overrides: dict | list[str]) -> dict:
    """``["a.b=3", "c=x"]`` or ``{"a.b": 3}`` -> nested dict; values parsed as YAML."""
    items = overrides.items() if isinstance(overrides, dict) else []
    if isinstance(overrides, list):
        parsed = []
        for text in overrides:
            if "=" not in text:
                raise ConfigError("<command line>", text, text, "key.path=value")
            key, raw = text.split("=", 1)
            parsed.append((key, yaml.safe_load(raw)))
        items = parsed
    tree: dict = {}
    for key, value in items:
        node = tree
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return tree


def load_robot_config(robot: str, robot_id: str | None = None, config_root: str | Path | None = None,
                      overrides: dict | list[str] | None = None) -> dict:
    """The merged, validated config of one robot instance as a plain nested dict."""
    return load(robot, robot_id, config_root, overrides).data


def section(cfg: dict, dotted: str) -> Any:
    """``section(cfg, "pulse.udp")`` -> the sub-tree; KeyError names the missing part."""
    node: Any = cfg
    for part in dotted.split("."):
        node = node[part]
    return node


# ----------------------------------------------------------------------------- arm limits


@dataclass(frozen=True)
class ArmLimits:
    """Joint and Cartesian limits of an arm in SI units (converted from the config's degrees)."""

    joint_names: tuple[str, ...]
    q_min: Any  # rad
    q_max: Any  # rad
    v_max: Any  # rad/s
    a_max: Any  # rad/s^2
    tau_max: Any  # N·m
    tau_rate_max: Any  # N·m/s
    workspace_min: Any  # m, (3,)
    workspace_max: Any  # m, (3,)
    ee_speed_max: float  # m/s
    stale_after_s: float  # s

    def as_kwargs(self) -> dict:
        """Keyword arguments for ``hri_core.safety.SafetyLimits``."""
        return {k: getattr(self, k) for k in ("q_min", "q_max", "v_max", "a_max", "tau_max",
                                               "tau_rate_max", "workspace_min", "workspace_max",
                                               "ee_speed_max", "stale_after_s")}


def arm_limits(cfg: dict) -> ArmLimits:
    import numpy as np

    joints, safety = cfg["joints"], cfg["safety"]
    if cfg["robot"]["kind"] != "arm":
        raise ConfigError(None, "robot.kind", cfg["robot"]["kind"], "'arm' for arm limits")
    return ArmLimits(
        joint_names=tuple(joints["names"]),
        q_min=np.radians(joints["position_min_deg"]),
        q_max=np.radians(joints["position_max_deg"]),
        v_max=np.radians(joints["velocity_max_deg_s"]),
        a_max=np.radians(joints["acceleration_max_deg_s2"]),
        tau_max=np.asarray(joints["torque_max_nm"], dtype=float),
        tau_rate_max=np.asarray(joints["torque_rate_max_nm_s"], dtype=float),
        workspace_min=np.asarray(safety["workspace_min_m"], dtype=float),
        workspace_max=np.asarray(safety["workspace_max_m"], dtype=float),
        ee_speed_max=float(safety["ee_speed_max_m_s"]),
        stale_after_s=float(safety["command_stale_after_s"]),
    )


def named_position(cfg: dict, name: str):
    """A named joint position (``home``, ``hri_home``, ``zero``) in rad."""
    import numpy as np

    positions = cfg["joints"]["named_positions_deg"]
    if name not in positions:
        raise ConfigError(None, f"joints.named_positions_deg.{name}", None,
                          f"one of {sorted(positions)}")
    return np.radians(positions[name])
