"""The one YAML base-override configuration tree.

Every key is declared once, in the ``parameters.yaml`` of the package that owns its section
(type, default, unit, bounds, description, source; format in docs/configuration.md);
``config/robots/<robot>.yaml`` holds only what differs for that robot. Loading a robot:

1. start from the declared defaults, then the robot's override chain (a robot file may say
   ``extends: <other robot>``, e.g. a second instance of a model with a different port), then the
   command-line overrides;
2. merge: mappings merge recursively, scalars and lists are replaced whole;
3. expand ``${VAR}`` / ``${VAR:-default}`` from the environment (a string that is only a
   reference is re-read as YAML, so ``${PORT:-7447}`` gives the int 7447);
4. replace ``{robot_id}`` in keys and strings by the instance name;
5. validate against the declarations (bounds, lengths, ``_rules`` across keys).

Every error is one ``ConfigError`` naming the file, the key path, the value and what was
expected. ``hri config check`` turns it into one line on stderr and exit code 2.
"""
from __future__ import annotations

import copy
import difflib
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROBOTS_DIR = "robots"
PARAMETERS_FILE = "parameters.yaml"   # per package: src/<pkg>/parameters.yaml, share/<pkg>/parameters.yaml
RULES_KEY = "_rules"

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(ValueError):
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


# Workspaces whose files errors may name (the parent of each config root read): a file is shown
# relative to the working directory, else to one of these, else to an install prefix.
_DISPLAY_BASES: list[Path] = []


def _display_path(file: str | Path) -> str:
    """A path relative to the working directory when it is below it, else to the workspace of a
    config tree read (``config/robots/fr3.yaml``, ``src/hri_runtime/parameters.yaml``) or an
    install prefix (``share/hri_runtime/parameters.yaml``): an error never shows a machine path."""
    text = str(file)
    if text.startswith("<") or not Path(text).is_absolute() and ".." not in Path(text).parts:
        return text
    try:
        resolved = Path(text).resolve()
    except (OSError, RuntimeError):         # a symlink loop: the link's own path
        resolved = Path(os.path.abspath(text))
    for base in (*reversed(_DISPLAY_BASES), Path.cwd(), *_install_prefixes()):
        try:
            return str(resolved.relative_to(base.resolve()))
        except ValueError:
            continue
    return str(Path(*resolved.parts[-3:]))


def _remember_workspace(config_root: Path) -> None:
    base = Path(config_root).resolve().parent
    if base not in _DISPLAY_BASES:
        _DISPLAY_BASES.append(base)


def _short_repr(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----------------------------------------------------------------------------- locating


def find_config_root(start: Path | None = None) -> Path:
    """The config tree (the directory holding ``robots/``): ``$HRI_CONFIG_ROOT``, else the nearest
    ``config/`` above ``start`` (default: the working directory), else the workspace this module
    was installed from, else ``share/hri_runtime/config`` of an installed workspace
    (AMENT_PREFIX_PATH, sys.prefix)."""
    env = os.environ.get("HRI_CONFIG_ROOT")
    if env:
        if not (Path(env) / ROBOTS_DIR).is_dir():
            raise ConfigError("<environment>", "HRI_CONFIG_ROOT", env,
                              f"a config directory holding {ROBOTS_DIR}/")
        return Path(env)
    candidates = []
    here = (start or Path.cwd()).resolve()
    candidates.extend([here, *here.parents])
    module_dir = Path(__file__).resolve().parent
    candidates.extend(module_dir.parents)
    # an installed workspace (colcon install/, Docker): hri_runtime installs the tree to its share/
    candidates.extend(p / "share" / "hri_runtime" for p in _install_prefixes())
    for base in candidates:
        if (base / "config" / ROBOTS_DIR).is_dir():
            return base / "config"
    raise ConfigError(None, "", str(here), f"a config tree (config/{ROBOTS_DIR}/) above the "
                      "working directory, or HRI_CONFIG_ROOT set")


def _install_prefixes() -> list[Path]:
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    return [Path(p) for p in [*prefixes, sys.prefix]]


def parameter_files(config_root: str | Path | None = None) -> dict[str, Path]:
    """package -> its ``parameters.yaml``, found (first hit per package wins) in: the source tree
    next to the config tree (``<ws>/src/<pkg>/``), the install space holding the config tree
    (merged ``<prefix>/share/<pkg>/`` or isolated ``<install>/<pkg>/share/<pkg>/``), the
    AMENT_PREFIX_PATH prefixes and sys.prefix (with every package of the same isolated colcon
    install: a package's environment lists only its dependencies), and the source tree this
    module belongs to (an editable install)."""
    patterns: list[tuple[Path, str]] = []
    try:
        root = Path(config_root or find_config_root()).resolve()
    except ConfigError:                 # no config tree (a core used alone): the packages' own files
        root = None
    if root is not None:
        patterns.append((root.parent / "src", f"*/{PARAMETERS_FILE}"))
    if root is not None and root.parent.parent.name == "share":   # <prefix>/share/hri_runtime/config
        patterns.append((root.parent.parent, f"*/{PARAMETERS_FILE}"))
        patterns.append((root.parents[3], f"*/share/*/{PARAMETERS_FILE}"))
    for prefix in _install_prefixes():
        patterns.append((prefix / "share", f"*/{PARAMETERS_FILE}"))
        if (prefix.parent / ".colcon_install_layout").is_file():   # isolated: the sibling packages
            patterns.append((prefix.parent, f"*/share/*/{PARAMETERS_FILE}"))  # of the same install
    module_ws = Path(__file__).resolve().parents[4]          # <ws>/src/hri_runtime/hri_runtime/config/tree.py
    patterns.append((module_ws / "src", f"*/{PARAMETERS_FILE}"))
    found: dict[str, Path] = {}
    for base, pattern in patterns:
        if not base.is_dir():
            continue
        for path in sorted(base.glob(pattern)):
            found.setdefault(path.parent.name, path)
    return found


def list_robots(config_root: Path | None = None) -> list[str]:
    root = Path(config_root) if config_root else find_config_root()
    return sorted(p.stem for p in (root / ROBOTS_DIR).glob("*.yaml"))


# ----------------------------------------------------------------------------- reading


# Bounds of what a config (or launch) YAML file may be: anything beyond is refused in one line
# before it is parsed into Python objects (docs/configuration.md "Limits"). Not config keys:
# they guard the reading of the config tree itself.
MAX_FILE_BYTES = 1 << 20       # 1 MiB (the largest shipped parameters.yaml is < 64 KiB)
MAX_NESTING = 32               # nested mappings/sequences
MAX_NODES = 100_000            # scalars + collections, counting every alias expansion

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)   # libyaml when available (fast, no recursion)


def read_yaml(path: Path) -> Any:
    """Read one YAML file; any problem becomes a ConfigError naming the file and the key/line:
    unreadable, larger than MAX_FILE_BYTES, not UTF-8, a syntax error, nesting deeper than
    MAX_NESTING, more than MAX_NODES nodes (aliases expanded), a key twice in one mapping."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ConfigError(path, "<file>", size, f"a file of at most {MAX_FILE_BYTES} bytes")
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(path, "", None, f"a readable file ({exc.strerror})") from None
    if len(raw) > MAX_FILE_BYTES:  # grew while reading
        raise ConfigError(path, "<file>", len(raw), f"a file of at most {MAX_FILE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(path, f"<line {line}, byte {exc.start}>", raw[exc.start: exc.start + 1],
                          "UTF-8 text") from None
    data = parse_yaml_text(text, path)
    return {} if data is None else data


def parse_yaml_text(text: str, file: Any = "<text>") -> Any:
    """Parse YAML text within the limits of :func:`read_yaml` (also for values from the
    environment and the command line); ``file`` names the source in errors."""
    if len(text) > MAX_FILE_BYTES:
        raise ConfigError(file, "<text>", len(text), f"at most {MAX_FILE_BYTES} characters")
    try:
        try:
            _scan_events(text, file)
        except yaml.YAMLError as exc:
            if _NESTING_REFUSED in str(exc):
                _rescan_shortest_too_deep(text, file, exc)
            raise
        data = yaml.load(text, Loader=_Loader)  # noqa: S506  (a safe loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown line"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if isinstance(exc, yaml.reader.ReaderError):     # a forbidden character: no mark, a position
            where = f"line {text[: exc.position].count(chr(10)) + 1}"
            problem = f"character #x{ord(exc.character) if isinstance(exc.character, str) else exc.character:04x}: {exc.reason}"
        raise ConfigError(file, f"<yaml {where}>", problem, "valid YAML syntax") from None
    return data


# The parser's own nesting limit (libyaml: 1000 levels) refuses with this text. Its scanner reads
# ahead across a run of openings before the first event, so that refusal can come before our
# MAX_NESTING check sees the 33rd level; the rescan below applies our rule to the text instead.
_NESTING_REFUSED = "exceeded maximum nesting depth"


def _rescan_shortest_too_deep(text: str, file: Any, refusal: Exception) -> None:
    """Raise the ConfigError of the shortest prefix of ``text`` that our scan refuses (too deep,
    or an earlier problem), so the line names the key path where MAX_NESTING is exceeded, the same
    whatever nesting limit the installed parser has. A prefix ends the text early: its syntax
    errors are not refusals. Only the parser's nesting refusal leads here (a few dozen scans)."""
    mark = getattr(refusal, "problem_mark", None)
    end = mark.index if mark is not None and 0 < mark.index <= len(text) else len(text)

    def refused(n: int) -> ConfigError | None:
        try:
            _scan_events(text[:n], file)
        except ConfigError as exc:
            return exc
        except yaml.YAMLError as exc:
            if _NESTING_REFUSED in str(exc):
                return ConfigError(file, "<root>", None, f"at most {MAX_NESTING} nested levels")
        return None

    lo, hi = 0, end          # refused(hi) holds (the parser's refusal happens within it)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if refused(mid) is None:
            lo = mid
        else:
            hi = mid
    raise refused(hi) or ConfigError(file, "<root>", None, f"at most {MAX_NESTING} nested levels")


def _scan_events(text: str, file: Any) -> None:
    """One pass over the parser events (libyaml, no Python recursion, nothing built) enforcing
    MAX_NESTING, MAX_NODES (an alias counts as the whole anchored node again: no "billion
    laughs"), aliases only to complete earlier anchors, and unique scalar keys per mapping."""
    stack: list[list] = []   # [kind, path, keys {key: line}, expecting_key, current key/index, nodes, anchor]
    anchors: dict[str, int] = {}
    total = 0

    def where(frame: list) -> tuple:
        if frame[0] == "map":
            return frame[1] + ((frame[4],) if frame[4] is not None else ())
        return frame[1] + (frame[4],)

    def child_done(nodes: int) -> None:
        if not stack:
            return
        parent = stack[-1]
        parent[5] += nodes
        if parent[0] == "map":
            parent[3] = not parent[3]
        else:
            parent[4] += 1

    for ev in yaml.parse(text, Loader=_Loader):
        if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            path: tuple = ()
            if stack:
                parent = stack[-1]
                if parent[0] == "map" and parent[3]:
                    raise ConfigError(file, _dotted(parent[1]) or "<root>", None,
                                      f"scalar mapping keys (a collection as a key on line {ev.start_mark.line + 1})")
                path = where(parent)
            if len(stack) >= MAX_NESTING:
                raise ConfigError(file, _dotted(path), f"line {ev.start_mark.line + 1}",
                                  f"at most {MAX_NESTING} nested levels")
            kind = "map" if isinstance(ev, yaml.MappingStartEvent) else "seq"
            stack.append([kind, path, {}, True, None if kind == "map" else 0, 1, ev.anchor])
        elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            frame = stack.pop()
            if frame[6] is not None:
                anchors[frame[6]] = frame[5]
            child_done(frame[5])
        elif isinstance(ev, (yaml.ScalarEvent, yaml.AliasEvent)):
            if isinstance(ev, yaml.AliasEvent):
                if ev.anchor not in anchors:
                    raise ConfigError(file, _dotted(where(stack[-1])) if stack else "<root>", f"*{ev.anchor}",
                                      "an alias of a complete earlier anchor (no recursive aliases)")
                nodes = anchors[ev.anchor]
                key = f"*{ev.anchor}"
            else:
                nodes = 1
                key = ev.value
                if ev.anchor is not None:
                    anchors[ev.anchor] = 1
            total += nodes
            if total > MAX_NODES:
                raise ConfigError(file, _dotted(where(stack[-1])) if stack else "<root>",
                                  f"line {ev.start_mark.line + 1}", f"at most {MAX_NODES} nodes (aliases expanded)")
            if stack and stack[-1][0] == "map" and stack[-1][3]:
                frame = stack[-1]
                line = ev.start_mark.line + 1
                if key in frame[2] and key != "<<":
                    raise ConfigError(file, _dotted(frame[1] + (key,)), key,
                                      f"each key once per mapping (again on line {line}, first on line {frame[2][key]})")
                frame[2][key] = line
                frame[4] = key
                frame[3] = False
                frame[5] += nodes
                continue
            child_done(nodes)
        if total > MAX_NODES:
            raise ConfigError(file, "<root>", total, f"at most {MAX_NODES} nodes (aliases expanded)")


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
    # Replacing a subtree: forget the origins below it, then record the new ones (only a
    # mapping has origins below it: a leaf replaced by a leaf costs no scan of all origins).
    if isinstance(base, dict):
        for known in [p for p in origin if p[: len(path)] == path and len(p) > len(path)]:
            del origin[known]
    origin.pop(path, None)          # a mapping replacing a leaf records only its own leaves
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
            return parse_yaml_text(expanded, file_of(path)) if expanded != "" else ""
        except ConfigError:
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


# ----------------------------------------------------------------------------- declarations


_TYPE_NAMES = {"int", "float", "number", "bool", "str", "enum", "list", "map", "any"}
# What a leaf declaration may say: its type and checks, and (documentation) its default, unit,
# description, the published source of its number, whether it may change at run time, who reads it.
_CHECK_KEYS = {"type", "min", "max", "gt", "lt", "nullable", "required", "values", "items", "length",
               "min_length", "max_length", "pattern", "required_when", "fields"}
_SPEC_KEYS = _CHECK_KEYS | {"default", "unit", "description", "source", "read_only", "reader", "access"}


def is_leaf_spec(node: Any) -> bool:
    return isinstance(node, dict) and isinstance(node.get("type"), str)


@dataclass(frozen=True, eq=False)
class Declarations:
    """Every package's parameter declarations merged: ``schema`` (the spec tree, ``_rules`` at
    its top), ``defaults`` (the declared defaults tree), ``origin`` (key path -> declaring file)
    and ``files`` (section -> declaring file)."""

    schema: dict
    defaults: dict
    origin: dict
    files: dict

    def spec(self, dotted: str) -> Any:
        """The spec (leaf) or the spec tree (section) at a dotted path; KeyError names it."""
        node: Any = self.schema
        for part in dotted.split("."):
            if not isinstance(node, dict) or is_leaf_spec(node) or part not in node:
                raise KeyError(f"no declared parameter or section '{dotted}'")
            node = node[part]
        return node


_declarations_cache: dict = {}


def load_declarations(config_root: str | Path | None = None) -> Declarations:
    """Read and check every package's ``parameters.yaml`` (see :func:`parameter_files`); each
    top-level section is declared by one package. Cached per file set and modification time."""
    files = parameter_files(config_root)
    stamp = []
    for pkg, path in sorted(files.items()):
        try:
            st = path.stat()
            stamp.append((pkg, str(path), st.st_mtime_ns, st.st_size))
        except OSError:
            stamp.append((pkg, str(path), None, None))
    key = tuple(stamp)
    if key not in _declarations_cache:
        if len(_declarations_cache) > 16:
            _declarations_cache.clear()
        _declarations_cache[key] = _read_declarations(files)
    return _declarations_cache[key]


def declared_defaults(config_root: str | Path | None = None) -> dict:
    """The tree of declared defaults (a copy; no environment expansion, no ``{robot_id}``)."""
    return copy.deepcopy(load_declarations(config_root).defaults)


def _read_declarations(files: dict[str, Path]) -> Declarations:
    if not files:
        raise ConfigError(None, "", None, f"package parameter files ({PARAMETERS_FILE}) next to the "
                          "config tree or in an installed workspace")
    schema: dict = {RULES_KEY: []}
    defaults: dict = {}
    origin: dict = {}
    owner: dict = {}
    for pkg in _package_order(files):
        path = files[pkg]
        fragment = read_yaml(path)
        if not isinstance(fragment, dict):
            raise ConfigError(path, "", fragment, "a mapping of sections to parameter declarations")
        rules = fragment.pop(RULES_KEY, None) or []
        if not isinstance(rules, list):
            raise ConfigError(path, RULES_KEY, rules, "a list of rules")
        for section, node in fragment.items():
            if section in owner:
                raise ConfigError(path, str(section), None,
                                  f"each section declared by one package (also in {_display_path(owner[section])})")
            owner[section] = path
            _check_declaration(node, (section,), path)
            schema[section] = node
            defaults[section] = _defaults_of(node, (section,), origin, str(path))
        schema[RULES_KEY].extend(rules)
    return Declarations(schema=schema, defaults=defaults, origin=origin, files=owner)


def _package_order(files: dict) -> list[str]:
    """hri_runtime (the robot description) first, then the packages by name."""
    return sorted(files, key=lambda pkg: (pkg != "hri_runtime", pkg))


def _defaults_of(node: dict, path: tuple, origin: dict, file: str) -> dict:
    out: dict = {}
    for key, child in node.items():
        if is_leaf_spec(child):
            if "default" in child:
                out[key] = copy.deepcopy(child["default"])
                _record_origin(out[key], origin, file, path + (key,))
        else:
            out[key] = _defaults_of(child, path + (key,), origin, file)
    return out


def _check_declaration(node: Any, path: tuple, file: Path, top: bool = True) -> None:
    """A declaration typo must fail loudly, not validate nothing."""
    if is_leaf_spec(node):
        if node["type"] not in _TYPE_NAMES:
            raise ConfigError(file, _dotted(path), node["type"], f"one of {sorted(_TYPE_NAMES)}")
        unknown = set(node) - _SPEC_KEYS
        if unknown:
            raise ConfigError(file, _dotted(path), sorted(unknown), f"declaration keys among {sorted(_SPEC_KEYS)}")
        if "access" in node:          # a topic / service name's access class (hri_runtime.security.access)
            from hri_runtime.security.classes import check_access_declaration

            wanted = check_access_declaration(node["access"])
            if wanted:
                raise ConfigError(file, _dotted(path) + ".access", node["access"], wanted)
        if top and "default" not in node and node.get("required", True):
            raise ConfigError(file, _dotted(path), None, "a declared default (default: ...)")
        if "fields" in node:
            if node["type"] != "map" or not isinstance(node["fields"], dict):
                raise ConfigError(file, _dotted(path), node["fields"], "fields: a mapping of specs, on a map")
            for key, child in node["fields"].items():
                _check_declaration(child, path + (key,), file, top=False)
        for key in ("items", "values"):
            if is_leaf_spec(node.get(key)):
                _check_declaration(node[key], path, file, top=False)
        return
    if not isinstance(node, dict) or not node:
        raise ConfigError(file, _dotted(path), node, "a section mapping or a leaf declaration with 'type'")
    for key, child in node.items():
        _check_declaration(child, path + (key,), file, top)


def _origin_file(origin: dict, path: tuple, fallback: str) -> str:
    """The file that set this key, or the one that set its nearest ancestor (a list item's file
    is its list's)."""
    exact = origin.get(path)
    if exact is not None:
        return exact
    for cut in range(len(path), -1, -1):
        prefix = path[:cut]
        hits = [f for p, f in origin.items() if p[:cut] == prefix and len(p) >= cut]
        if hits:
            return hits[-1]
    return fallback


class _Validator:
    def __init__(self, config: dict, origin: dict, fallback_file: str, files: list[str] | None = None,
                 partial: bool = False):
        self.config = config
        self.partial = partial          # one section alone: a length given by a key outside it is not checked
        self.origin = origin
        self.fallback_file = fallback_file
        self.files = list(files or [fallback_file])   # merge order: defaults first, overrides later

    def latest_file(self, *paths: tuple) -> str:
        """Of the files that set these keys, the one latest in the merge chain: when a robot file
        makes a default inconsistent (a dof, a kind, a bound), the robot file is at fault."""
        found = [self.file_of(p) for p in paths]
        rank = {f: i for i, f in enumerate(self.files)}
        return max(found, key=lambda f: rank.get(f, len(rank)))

    def fail_among(self, path: tuple, related: list[tuple], value: Any, expected: str) -> None:
        raise ConfigError(self.latest_file(path, *related), _dotted(path), value, expected)

    def file_of(self, path: tuple) -> str:
        return _origin_file(self.origin, path, self.fallback_file)

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
            self.fail_among(path, [tuple(k.split(".")) for k in (when or {})],
                            value, f"{self._describe(spec)}{why}, not null")
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
            fields = spec.get("fields")
            if isinstance(fields, dict):       # a structured value: exactly these keys, each checked
                self.section(fields, value, path)
                return
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
            if isinstance(length, str):        # another key: an int, or a list whose length counts
                expected = self.lookup(length)
                if isinstance(expected, list):
                    expected = len(expected)
                if expected is None and self.partial:
                    return
                if expected is None:
                    self.fail_among(path, [tuple(length.split("."))], value,
                                    f"a length given by {length}, which is not set")
                if not isinstance(expected, int) or isinstance(expected, bool):
                    expected = None             # that key is wrong itself: its own check reports it
                if expected is not None and len(value) != expected:
                    self.fail_among(path, [tuple(length.split("."))], value,
                                    f"a list of length {expected} ({length}), got {len(value)}")
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
            elif "sum" in rule:
                self._rule_sum(*rule["sum"])
            elif "period_below" in rule:
                self._rule_period_below(*rule["period_below"])
            else:
                raise ConfigError(None, RULES_KEY, rule,
                                  "a rule of kind less / within / distinct / sum / period_below")

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
                self.fail_among(path, [tuple(high_key.split("."))], lo,
                                f"a value below {high_key}{f'[{index}]' if isinstance(low, list) else ''} = {hi}")

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
                    self.fail_among(path + (index,), [tuple(low_key.split(".")), tuple(high_key.split("."))],
                                    v, f"a value within [{lo}, {hi}] ({low_key}/{high_key})")

    def _rule_sum(self, key: str, total: float, tolerance: float = 1e-6) -> None:
        """``sum: [list_key, total(, tolerance)]``: the items of a list add up to ``total``."""
        values = self.lookup(key)
        if not isinstance(values, list) or not all(isinstance(v, (int, float)) for v in values):
            return                                   # type errors are reported by the schema
        got = sum(values)
        if abs(got - total) > tolerance:
            self.fail(tuple(key.split(".")), values, f"items summing to {total} (sum {got:.6g})")

    def _rule_period_below(self, period_key: str, rate_key: str) -> None:
        """``period_below: [timeout_s_key, rate_hz_key]``: the duration exceeds one period of the rate."""
        duration, rate = self.lookup(period_key), self.lookup(rate_key)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (duration, rate)) or rate <= 0:
            return
        if not duration > 1.0 / rate:
            self.fail_among(tuple(period_key.split(".")), [tuple(rate_key.split("."))], duration,
                            f"a value > one period of {rate_key} = {rate:g} Hz ({1.0 / rate:g} s)")

    def _rule_distinct(self, key: str) -> None:
        values = self.lookup(key)
        if isinstance(values, list) and len(set(map(str, values))) != len(values):
            dupes = sorted({str(v) for v in values if list(map(str, values)).count(str(v)) > 1})
            self.fail(tuple(key.split(".")), values, f"distinct entries (repeated: {dupes})")


def validate_section(section: str, values: Any, declarations: Declarations | None = None,
                     file: str = "<params>", origin: dict | None = None) -> None:
    """Check one section alone (``values`` of the dotted ``section``) against its declaration and
    the ``_rules`` whose keys all lie inside it; a list length given by a key outside the section
    is not checked. Errors name the file ``origin`` (key path -> file) gives, else ``file``;
    raises ConfigError."""
    declarations = declarations or load_declarations()
    try:
        spec = declarations.spec(section)
    except KeyError as exc:
        raise ConfigError(file, section, None, f"a declared section ({exc.args[0]})") from None
    path = tuple(section.split("."))
    tree: dict = {}
    node = tree
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = values
    validator = _Validator(tree, origin or {}, file, [file, *sorted(set((origin or {}).values()))], partial=True)
    validator.node(spec, values, path)
    prefix = section + "."
    validator.rules([rule for rule in declarations.schema.get(RULES_KEY, [])
                     if all(key.startswith(prefix) for key in _rule_keys(rule))])


def _rule_keys(rule: dict) -> list[str]:
    keys: list[str] = []
    for args in rule.values():
        keys.extend(a for a in (args if isinstance(args, list) else [args]) if isinstance(a, str))
    return keys


def expand_env(value: Any, file: str, path: tuple = ()) -> Any:
    """``${VAR}`` / ``${VAR:-default}`` expanded in ``value`` (strings, lists, mappings), as the
    loader does; errors name ``file`` and the key path."""
    return _expand_env(value, lambda _p: file, path)


def validate(data: dict, origin: dict, files: list[str], declarations: Declarations | None = None) -> None:
    """Check a merged tree against the declarations: every section and key declared, every leaf
    its type and bounds, the ``_rules`` across keys. ``origin`` (key path -> file) and ``files``
    (merge order, latest last) name the file at fault; raises ConfigError."""
    declarations = declarations or load_declarations()
    schema = declarations.schema
    validator = _Validator(data, origin, files[0], files)
    validator.section({k: v for k, v in schema.items() if k != RULES_KEY}, data, ())
    validator.rules(schema.get(RULES_KEY, []))


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
        if not path.is_file() and not os.path.lexists(path):
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
    _remember_workspace(root)
    declarations = load_declarations(root)
    data = copy.deepcopy(declarations.defaults)
    origin: dict = dict(declarations.origin)
    files = sorted({str(f) for f in declarations.files.values()})
    fallback = files[0]
    chain = _override_chain(robot, root)
    for path in chain:
        layer = read_yaml(path)
        if not isinstance(layer, dict):
            raise ConfigError(path, "", layer, "a mapping at the top level")
        if not layer:
            raise ConfigError(path, "<file>", None, "a robot override file with content "
                              "(it is empty: at least `extends: <robot>` or the robot section)")
        layer.pop("extends", None)
        data = deep_merge(data, layer, origin, str(path))
        files.append(str(path))
    if overrides:
        layer = _overrides_to_tree(overrides)
        data = deep_merge(data, layer, origin, "<command line>")
        files.append("<command line>")

    def file_of(path: tuple) -> str:
        return _origin_file(origin, path, fallback)

    data = _expand_env(data, file_of, ())
    instance = robot_id or robot
    data = _resolve_robot_id(data, instance)
    origin = {tuple(_resolve_robot_id(list(k), instance)): v for k, v in origin.items()}
    try:
        validate(data, origin, files, declarations)
    except ConfigError as exc:
        # A declared default of null that no override set: a required key the robot file lacks.
        declared = {_display_path(f) for f in declarations.files.values()}
        if exc.value is None and exc.file in declared:
            raise ConfigError(chain[-1], exc.key_path, None, f"{exc.expected} (a required key: "
                              f"no default is declared, so the robot file must set it)") from None
        raise
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
            parsed.append((key, parse_yaml_text(raw, "<command line>")))
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


def named_position(cfg: dict, name: str):
    """A named joint position (``home``, ``hri_home``, ``zero``) in rad."""
    import numpy as np

    positions = cfg["joints"]["named_positions_deg"]
    if name not in positions:
        raise ConfigError(None, f"joints.named_positions_deg.{name}", None,
                          f"one of {sorted(positions)}")
    return np.radians(positions[name])
