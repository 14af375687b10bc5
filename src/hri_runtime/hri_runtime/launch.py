"""``hri launch``: ROS 2 YAML launch files without ROS (the files ``ros2 launch`` runs).

Subset (launch / launch_ros YAML frontend):
- ``arg`` {name, default, description}; ``let`` {name, value}; ``set_env``/``set-env`` {name, value}
- ``node`` {pkg, exec, name, namespace, param: [{name, value} | {from: file}], remap: [{from, to}],
  respawn, respawn_delay, output, args, ros_args, env: [{name, value}]}
- ``executable`` {cmd, name, args, output, respawn}
- ``group`` {if, unless, scoped, namespace, children: [...]}, ``push-ros-namespace`` {namespace}
- ``include`` {file, arg: [{name, value}]}
- ``if`` / ``unless`` on every entity ("true"/"1" or "false"/"0" after substitution)
- substitutions ``$(var n)``, ``$(env N [default])``, ``$(optenv N [default])``, ``$(dirname)``,
  ``$(filename)``, ``$(find-pkg-share pkg)``, ``$(find-pkg-prefix pkg)``, ``$(anon n)``,
  ``$(eval 'python expr')`` (arithmetic/comparisons only), nested (innermost first).

Each node is a separate process started as ros2 launch does:
``<exec> [args] --ros-args -r __node:=<name> -r __ns:=<ns> -p k:=v ... --params-file f -r a:=b``.
The executable is looked up in ``$HRI_LAUNCH_PATH`` (``<dir>/<pkg>/<exec>`` or ``<dir>/<exec>``),
``<prefix>/lib/<pkg>/<exec>`` (ROS layout), the venv's bin directory, then ``PATH``.

Supervision: children run in their own session with PDEATHSIG=SIGTERM (they die with the
launcher); their output is prefixed ``[name]``; a node that exits is reported with its exit code
and its last log lines; ``respawn`` restarts it after ``respawn_delay`` (default
``runtime.launch.respawn_delay_s``); Ctrl-C / SIGTERM: SIGINT to every child, SIGTERM after
``runtime.launch.sigterm_timeout_s``, SIGKILL after ``runtime.launch.sigkill_timeout_s``.
Transport: ``HRI_TRANSPORT`` is resolved once and passed to every child; for zenoh the launcher
uses the router answering on ``runtime.zenoh.router_listen_endpoints`` (``hri router``,
``rmw_zenohd``) and watches it (an ERROR every ``runtime.launch.router_check_period_s`` while it is
gone), or starts one in-process (stopping with this launch) when none answers.
"""
from __future__ import annotations

import argparse
import ast
import ctypes
import itertools
import logging
import operator
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from . import errors

__all__ = ["LaunchError", "NodeSpec", "LaunchDescription", "parse_launch_file", "Launcher",
           "LaunchParams", "find_executable", "find_pkg_share", "main"]

log = logging.getLogger("hri.launch")


class LaunchError(ValueError):
    """A launch file that cannot be parsed or resolved (file, entity and reason in the text)."""


# --------------------------------------------------------------------------- parameters

@dataclass(frozen=True)
class LaunchParams:
    sigterm_timeout_s: float = 5.0      # ros2 launch default
    sigkill_timeout_s: float = 5.0
    respawn_delay_s: float = 0.0        # launch_ros default
    log_tail_lines: int = 20
    router_probe_timeout_s: float = 0.5
    poll_period_s: float = 0.05
    router_check_period_s: float = 1.0   # watchdog of an external router

    @classmethod
    def from_config(cls, section: dict) -> "LaunchParams":
        return cls(**{k: section[k] for k in cls.__dataclass_fields__ if k in section})

    @classmethod
    def defaults(cls, config_root: str | Path | None = None) -> "LaunchParams":
        """``runtime.launch`` of ``config/_defaults.yaml`` (the launcher runs before any robot
        config is chosen)."""
        from . import config as cfgmod

        root = Path(config_root) if config_root else cfgmod.find_config_root()
        data = cfgmod.read_yaml(root / cfgmod.DEFAULTS_FILE)
        return cls.from_config(((data or {}).get("runtime") or {}).get("launch") or {})


# --------------------------------------------------------------------------- model

@dataclass
class NodeSpec:
    name: str                                   # label (node name or executable name)
    cmd: list[str]                              # full command line
    pkg: str = ""
    exec: str = ""
    node_name: Optional[str] = None
    namespace: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    params_files: list[str] = field(default_factory=list)
    remaps: list[tuple[str, str]] = field(default_factory=list)
    respawn: bool = False
    respawn_delay_s: Optional[float] = None
    output: str = "screen"
    env: dict[str, str] = field(default_factory=dict)
    missing_executable: bool = False


@dataclass
class LaunchDescription:
    file: str
    nodes: list[NodeSpec] = field(default_factory=list)
    args: dict[str, str] = field(default_factory=dict)       # declared args (final values)
    env: dict[str, str] = field(default_factory=dict)        # set_env


# --------------------------------------------------------------------------- lookup

def find_pkg_share(pkg: str) -> str:
    """share directory of a package: AMENT_PREFIX_PATH/<p>/share/<pkg>, <venv>/share/<pkg>, or
    (editable installs) the source directory holding its package.xml."""
    for prefix in [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p] + [sys.prefix]:
        d = Path(prefix) / "share" / pkg
        if (d / "package.xml").exists():
            return str(d)
    import importlib.util

    spec = importlib.util.find_spec(pkg)
    if spec is not None and spec.origin:
        src = Path(spec.origin).resolve().parent.parent
        if (src / "package.xml").exists():
            return str(src)
    ws = Path(__file__).resolve().parents[3] / "src" / pkg
    if (ws / "package.xml").exists():
        return str(ws)
    raise LaunchError(f"$(find-pkg-share {pkg}): package '{pkg}' not found "
                      f"(AMENT_PREFIX_PATH, {sys.prefix}/share, installed Python packages)")


def find_pkg_prefix(pkg: str) -> str:
    return str(Path(find_pkg_share(pkg)).parent.parent)


def find_executable(pkg: str, exe: str) -> Optional[str]:
    cands: list[Path] = []
    for d in [p for p in os.environ.get("HRI_LAUNCH_PATH", "").split(os.pathsep) if p]:
        cands += [Path(d) / pkg / exe, Path(d) / exe]
    for prefix in [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p] + [sys.prefix]:
        cands.append(Path(prefix) / "lib" / pkg / exe)
    cands.append(Path(sys.executable).parent / exe)
    for c in cands:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return shutil.which(exe)


# --------------------------------------------------------------------------- substitutions

_SUBST = re.compile(r"\$\(([^$()]*)\)")
_EVAL_MAX_CHARS = 256        # $(eval ...) expression length
_EVAL_MAX_INT_BITS = 256     # any integer operand or result
_EVAL_MAX_ITEMS = 1024       # any string / list / tuple operand or result
_EVAL_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
                ast.Pow: operator.pow}
_EVAL_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
                ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
                ast.NotIn: lambda a, b: a not in b}


def _safe_eval(expr: str) -> Any:
    """``$(eval expr)``: literals, arithmetic, comparisons, and/or/not, ``a if c else b``, tuples and
    lists, evaluated by walking the syntax tree with bounded sizes (no Python ``eval``): every
    integer stays within _EVAL_MAX_INT_BITS bits and every string/sequence within _EVAL_MAX_ITEMS
    items, checked BEFORE an operation that could exceed them (``9**9**9`` is refused at once)."""
    where = f"$(eval {expr})"
    if len(expr) > _EVAL_MAX_CHARS:
        raise LaunchError(f"$(eval ...): expression longer than {_EVAL_MAX_CHARS} characters")
    try:
        tree = ast.parse(expr, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise LaunchError(f"{where}: not an expression ({getattr(e, 'msg', None) or e})") from None
    try:
        return _eval_node(tree.body, where)
    except (ArithmeticError, TypeError, ValueError) as e:
        if isinstance(e, LaunchError):
            raise
        raise LaunchError(f"{where}: {type(e).__name__}: {e}") from None


def _eval_bounded(value: Any, where: str) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _EVAL_MAX_INT_BITS:
        raise LaunchError(f"{where}: integer larger than {_EVAL_MAX_INT_BITS} bits")
    if isinstance(value, (str, list, tuple)) and len(value) > _EVAL_MAX_ITEMS:
        raise LaunchError(f"{where}: value longer than {_EVAL_MAX_ITEMS} items")
    return value


def _eval_binop(op: type, a: Any, b: Any, where: str) -> Any:
    ints = isinstance(a, int) and isinstance(b, int)
    if op is ast.Pow and ints and b > 0 and abs(a) > 1 and b * (abs(a).bit_length() - 1) > _EVAL_MAX_INT_BITS:
        raise LaunchError(f"{where}: integer larger than {_EVAL_MAX_INT_BITS} bits")
    if op is ast.Mult:
        for seq, n in ((a, b), (b, a)):
            if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * max(n, 0) > _EVAL_MAX_ITEMS:
                raise LaunchError(f"{where}: value longer than {_EVAL_MAX_ITEMS} items")
    if op is ast.Mod and isinstance(a, str):
        raise LaunchError(f"{where}: string formatting is not supported")
    return _eval_bounded(_EVAL_BINOPS[op](a, b), where)


def _eval_node(n: ast.AST, where: str) -> Any:
    if isinstance(n, ast.Constant) and isinstance(n.value, (int, float, str, bool, type(None))):
        return _eval_bounded(n.value, where)
    if isinstance(n, (ast.Tuple, ast.List)):
        items = [_eval_node(e, where) for e in n.elts]
        return _eval_bounded(tuple(items) if isinstance(n, ast.Tuple) else items, where)
    if isinstance(n, ast.UnaryOp) and type(n.op) in (ast.USub, ast.UAdd, ast.Not):
        v = _eval_node(n.operand, where)
        return not v if isinstance(n.op, ast.Not) else (-v if isinstance(n.op, ast.USub) else +v)
    if isinstance(n, ast.BinOp) and type(n.op) in _EVAL_BINOPS:
        return _eval_binop(type(n.op), _eval_node(n.left, where), _eval_node(n.right, where), where)
    if isinstance(n, ast.BoolOp):
        v: Any = None
        for e in n.values:
            v = _eval_node(e, where)
            if (isinstance(n.op, ast.And) and not v) or (isinstance(n.op, ast.Or) and v):
                return v
        return v
    if isinstance(n, ast.Compare) and all(type(o) in _EVAL_CMPOPS for o in n.ops):
        left = _eval_node(n.left, where)
        for op, comp in zip(n.ops, n.comparators):
            right = _eval_node(comp, where)
            if not _EVAL_CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(n, ast.IfExp):
        return _eval_node(n.body if _eval_node(n.test, where) else n.orelse, where)
    raise LaunchError(f"{where}: only literals, arithmetic, comparisons and conditionals are supported")


class _Scope:
    def __init__(self, file: Path, vars: dict[str, str], ns: str, env: dict[str, str]):
        self.file, self.vars, self.ns, self.env = file, vars, ns, env

    def child(self, **kw) -> "_Scope":
        s = _Scope(self.file, dict(self.vars), self.ns, self.env)
        for k, v in kw.items():
            setattr(s, k, v)
        return s


_anon = itertools.count(1)
_MAX_SUBSTITUTIONS = 100       # $(...) expansions in one value
_MAX_SUBST_CHARS = 65536       # length of one value after substitution


def _subst(text: Any, scope: _Scope, where: str) -> Any:
    if not isinstance(text, str):
        return text
    s = text
    for _ in range(_MAX_SUBSTITUTIONS):
        m = _SUBST.search(s)
        if not m:
            return s
        s = s[:m.start()] + _one_subst(m.group(1).strip(), scope, where) + s[m.end():]
        if len(s) > _MAX_SUBST_CHARS:
            raise LaunchError(f"{where}: substitution result longer than {_MAX_SUBST_CHARS} characters")
    if _SUBST.search(s):
        raise LaunchError(f"{where}: more than {_MAX_SUBSTITUTIONS} substitutions in one value "
                          f"(a variable that expands to itself?)")
    return s


def _one_subst(body: str, scope: _Scope, where: str) -> str:
    try:
        parts = shlex.split(body)
    except ValueError:
        parts = body.split()
    if not parts:
        raise LaunchError(f"{where}: empty substitution $()")
    kind, args = parts[0], parts[1:]
    if kind == "var":
        if not args or args[0] not in scope.vars:
            raise LaunchError(f"{where}: $(var {' '.join(args)}): undefined launch argument "
                              f"(defined: {sorted(scope.vars)})")
        return str(scope.vars[args[0]])
    if kind in ("env", "optenv"):
        if not args:
            raise LaunchError(f"{where}: $({kind}) needs a variable name")
        val = {**os.environ, **scope.env}.get(args[0])
        if val is not None:
            return val
        if len(args) > 1:
            return " ".join(args[1:])
        if kind == "optenv":
            return ""
        raise LaunchError(f"{where}: $(env {args[0]}): environment variable not set and no default")
    if kind == "dirname":
        return str(scope.file.parent)
    if kind == "filename":
        return scope.file.name
    if kind == "find-pkg-share":
        return find_pkg_share(args[0])
    if kind == "find-pkg-prefix":
        return find_pkg_prefix(args[0])
    if kind == "anon":
        return f"{args[0] if args else 'anon'}_{os.getpid()}_{next(_anon)}"
    if kind == "eval":
        expr = body[len("eval"):].strip()
        if len(expr) >= 2 and expr[0] == expr[-1] and expr[0] in "'\"":
            expr = expr[1:-1]          # one quoted argument, as ROS 2: $(eval '"a" == "b"')
        return str(_safe_eval(expr))
    raise LaunchError(f"{where}: unsupported substitution $({body}) "
                      f"(supported: var env optenv dirname filename find-pkg-share find-pkg-prefix anon eval)")


def _truth(v: Any, where: str) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("true", "1"):
        return True
    if s in ("false", "0"):
        return False
    raise LaunchError(f"{where}: condition {v!r} is not true/false/1/0")


# --------------------------------------------------------------------------- parser

def _as_list(v, where: str) -> list:
    if v is None:
        return []
    if isinstance(v, list):
        return v
    if isinstance(v, dict):
        return [v]
    raise LaunchError(f"{where}: expected a list, got {type(v).__name__}")


def _ns_join(base: str, ns: str) -> str:
    if not ns:
        return base
    if ns.startswith("/"):
        return ns.rstrip("/") or "/"
    b = base.rstrip("/")
    return f"{b}/{ns.strip('/')}"


def _dump_value(v: Any) -> str:
    if isinstance(v, str):
        return v
    return yaml.safe_dump(v, default_flow_style=True).strip().removesuffix("...").strip()


_MAX_INCLUDE_DEPTH = 32   # nested includes (a cycle is reported as such before this)


class _Parser:
    def __init__(self, cli_args: dict[str, str], check_executables: bool = True):
        self.cli_args = cli_args
        self.check_executables = check_executables
        self.out: Optional[LaunchDescription] = None
        self._seen_cli: set[str] = set()
        self._include_stack: list[Path] = []   # the files being parsed, outermost first

    def parse_file(self, path: Path, scope_vars: dict[str, str], ns: str, env: dict, top: bool):
        path = Path(path)
        key = path.resolve()
        if key in self._include_stack:
            chain = " -> ".join(p.name for p in [*self._include_stack[self._include_stack.index(key):], key])
            raise LaunchError(f"{path}: include cycle ({chain})")
        if len(self._include_stack) >= _MAX_INCLUDE_DEPTH:
            raise LaunchError(f"{path}: includes nested deeper than {_MAX_INCLUDE_DEPTH} files")
        if not path.is_file():
            raise LaunchError(f"launch file not found: {path}")
        from .config import ConfigError, read_yaml

        try:   # the config tree's bounded reader: size, UTF-8, nesting, aliases, duplicate keys
            doc = read_yaml(path)
        except ConfigError as e:
            syntax = e.expected == "valid YAML syntax"
            raise LaunchError(f"{'not valid YAML: ' if syntax else ''}{e.one_line()}") from None
        if not isinstance(doc, dict) or "launch" not in doc:
            raise LaunchError(f"{path}: a YAML launch file is a mapping with a top-level 'launch:' list")
        scope = _Scope(path, dict(scope_vars), ns, env)
        self._include_stack.append(key)
        try:
            self._entities(_as_list(doc["launch"], f"{path}: launch"), scope, top)
        finally:
            self._include_stack.pop()

    def _entities(self, ents: list, scope: _Scope, top: bool) -> None:
        for i, ent in enumerate(ents):
            where = f"{scope.file}: entity {i + 1}"
            if not isinstance(ent, dict) or len(ent) != 1:
                raise LaunchError(f"{where}: each entity is a one-key mapping (arg/node/group/...), got {ent!r}")
            kind, body = next(iter(ent.items()))
            where = f"{where} ({kind})"
            body = body if body is not None else {}
            if not isinstance(body, dict):
                raise LaunchError(f"{where}: expected a mapping")
            if "if" in body and not _truth(_subst(body["if"], scope, where), where):
                continue
            if "unless" in body and _truth(_subst(body["unless"], scope, where), where):
                continue
            handler = getattr(self, "_e_" + kind.replace("-", "_"), None)
            if handler is None:
                raise LaunchError(f"{where}: unsupported entity '{kind}' (supported: arg, let, "
                                  f"set_env, node, executable, group, push-ros-namespace, include)")
            handler(body, scope, where, top)

    # ---- entities
    def _e_arg(self, b, scope: _Scope, where, top):
        name = b.get("name")
        if not name:
            raise LaunchError(f"{where}: arg needs a name")
        if name in scope.vars and not top:
            val = scope.vars[name]                       # given by the including file
        elif top and name in self.cli_args:
            val = self.cli_args[name]
            self._seen_cli.add(name)
        elif name in scope.vars:
            val = scope.vars[name]
        elif "default" in b:
            val = _subst(str(b["default"]), scope, where)
        else:
            raise LaunchError(f"{where}: launch argument '{name}' has no default; give it as {name}:=VALUE")
        scope.vars[name] = str(val)
        if top:
            self.out.args[name] = str(val)

    def _e_let(self, b, scope, where, top):
        scope.vars[b["name"]] = str(_subst(str(b.get("value", "")), scope, where))

    def _e_set_env(self, b, scope, where, top):
        scope.env[b["name"]] = str(_subst(str(b.get("value", "")), scope, where))
        self.out.env[b["name"]] = scope.env[b["name"]]

    _e_set_environment_variable = _e_set_env

    def _e_push_ros_namespace(self, b, scope, where, top):
        ns = _subst(b.get("namespace", b.get("ns", "")), scope, where)
        scope.ns = _ns_join(scope.ns, ns)

    _e_push_namespace = _e_push_ros_namespace

    def _e_group(self, b, scope, where, top):
        scoped = _truth(_subst(b.get("scoped", True), scope, where), where)
        inner = scope.child() if scoped else scope
        if "namespace" in b:
            inner.ns = _ns_join(inner.ns, _subst(b["namespace"], scope, where))
        self._entities(_as_list(b.get("children"), f"{where}: children"), inner, top)

    def _e_include(self, b, scope, where, top):
        f = _subst(b.get("file", ""), scope, where)
        if not f:
            raise LaunchError(f"{where}: include needs a file")
        p = Path(f)
        if not p.is_absolute():
            p = scope.file.parent / p
        given = dict(scope.vars)
        for a in _as_list(b.get("arg"), where):
            given[a["name"]] = str(_subst(str(a.get("value", "")), scope, where))
        if str(p).endswith((".py", ".xml")):
            raise LaunchError(f"{where}: only YAML launch files can be included without ROS ({p})")
        self.parse_file(p, given, scope.ns, scope.env, top=False)

    def _e_executable(self, b, scope, where, top):
        cmd = shlex.split(_subst(str(b.get("cmd", "")), scope, where))
        if not cmd:
            raise LaunchError(f"{where}: executable needs cmd")
        extra = shlex.split(_subst(str(b.get("args", "")), scope, where))
        name = _subst(b.get("name", Path(cmd[0]).name), scope, where)
        self.out.nodes.append(NodeSpec(
            name=name, cmd=cmd + extra, exec=cmd[0],
            respawn=_truth(_subst(b.get("respawn", False), scope, where), where),
            respawn_delay_s=float(_subst(b["respawn_delay"], scope, where)) if "respawn_delay" in b else None,
            output=str(b.get("output", "screen")), env=self._env(b, scope, where)))

    def _env(self, b, scope, where) -> dict[str, str]:
        env = dict(scope.env)
        for e in _as_list(b.get("env"), where):
            env[e["name"]] = str(_subst(str(e.get("value", "")), scope, where))
        return env

    def _e_node(self, b, scope, where, top):
        for key in ("pkg", "exec"):
            if not b.get(key):
                raise LaunchError(f"{where}: node needs '{key}'")
        unknown = set(b) - {"pkg", "exec", "name", "namespace", "param", "remap", "respawn",
                            "respawn_delay", "output", "args", "ros_args", "env", "if", "unless",
                            "launch-prefix", "launch_prefix", "exec_name"}
        if unknown:
            raise LaunchError(f"{where}: unsupported node attribute(s) {sorted(unknown)}")
        pkg = _subst(b["pkg"], scope, where)
        exe = _subst(b["exec"], scope, where)
        name = _subst(b.get("name"), scope, where) if b.get("name") else None
        ns = _ns_join(scope.ns, _subst(b.get("namespace", ""), scope, where))
        from .names import InvalidNameError, validate_namespace, validate_node_name

        try:
            if name:
                validate_node_name(name)
            if ns:
                ns = validate_namespace(ns)
        except InvalidNameError as e:
            raise LaunchError(f"{where}: {e}") from None
        params: dict[str, Any] = {}
        files: list[str] = []
        for j, p in enumerate(_as_list(b.get("param"), f"{where}: param")):
            pw = f"{where}: param {j + 1}"
            if not isinstance(p, dict):
                raise LaunchError(f"{pw}: expected {{name, value}} or {{from: file}}")
            if "from" in p:
                f = Path(_subst(str(p["from"]), scope, pw))
                if not f.is_absolute():
                    f = scope.file.parent / f
                if not f.exists():
                    raise LaunchError(f"{pw}: params file not found: {f}")
                files.append(str(f))
            elif "name" in p:
                v = p.get("value")
                if isinstance(v, str):
                    v = _subst(v, scope, pw)
                elif isinstance(v, list):
                    v = [_subst(x, scope, pw) for x in v]
                pname = str(_subst(p["name"], scope, pw))
                if isinstance(v, dict):          # nested parameters: 'gains: {kp: 1}' -> gains.kp
                    from .params import _flatten

                    flat: dict = {}
                    _flatten(pname, v, flat)
                    params.update({k: _subst(x, scope, pw) for k, x in flat.items()})
                else:
                    params[pname] = v
            else:
                raise LaunchError(f"{pw}: expected {{name, value}} or {{from: file}}")
        remaps = []
        for j, r in enumerate(_as_list(b.get("remap"), f"{where}: remap")):
            if not isinstance(r, dict) or "from" not in r or "to" not in r:
                raise LaunchError(f"{where}: remap {j + 1}: expected {{from, to}}")
            remaps.append((_subst(str(r["from"]), scope, where), _subst(str(r["to"]), scope, where)))
        path = find_executable(pkg, exe)
        missing = path is None
        if missing and self.check_executables:
            raise LaunchError(f"{where}: executable '{exe}' of package '{pkg}' not found "
                              f"(lib/{pkg}/{exe}, {Path(sys.executable).parent}, PATH); "
                              f"is the package installed (pip install -e src/{pkg})?")
        cmd = [path or exe]
        cmd += shlex.split(_subst(str(b.get("args", "")), scope, where))
        cmd.append("--ros-args")
        if name:
            cmd += ["-r", f"__node:={name}"]
        if ns and ns != "/":
            cmd += ["-r", f"__ns:={ns}"]
        for f in files:
            cmd += ["--params-file", f]
        for k, v in params.items():
            cmd += ["-p", f"{k}:={_dump_value(v)}"]
        for a, c in remaps:
            cmd += ["-r", f"{a}:={c}"]
        cmd += shlex.split(_subst(str(b.get("ros_args", "")), scope, where))
        prefix = b.get("launch-prefix", b.get("launch_prefix"))
        if prefix:
            cmd = shlex.split(_subst(str(prefix), scope, where)) + cmd
        self.out.nodes.append(NodeSpec(
            name=name or exe, cmd=cmd, pkg=pkg, exec=exe, node_name=name, namespace=ns,
            params=params, params_files=files, remaps=remaps,
            respawn=_truth(_subst(b.get("respawn", False), scope, where), where),
            respawn_delay_s=float(_subst(str(b["respawn_delay"]), scope, where)) if "respawn_delay" in b else None,
            output=str(_subst(b.get("output", "screen"), scope, where)),
            env=self._env(b, scope, where), missing_executable=missing))


def parse_launch_file(path: str | os.PathLike, args: Optional[dict[str, str]] = None,
                      check_executables: bool = True) -> LaunchDescription:
    """Resolve a YAML launch file (with name:=value arguments) into the processes to start."""
    p = _Parser(dict(args or {}), check_executables)
    p.out = LaunchDescription(file=str(path))
    p.parse_file(Path(path), {}, "", {}, top=True)
    unknown = set(p.cli_args) - p._seen_cli
    if unknown:
        raise LaunchError(f"{path}: unknown launch argument(s) {sorted(unknown)} "
                          f"(declared: {sorted(p.out.args)})")
    names = [n.name for n in p.out.nodes]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        for n in p.out.nodes:       # label duplicates name#k like ros2 launch's name-k
            if n.name in dup:
                k = sum(1 for m in p.out.nodes[:p.out.nodes.index(n)] if m.name.split("#")[0] == n.name)
                if k:
                    n.name = f"{n.name}#{k + 1}"
    return p.out


# --------------------------------------------------------------------------- supervision

def _pdeathsig() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG: die with the launcher
    except Exception:  # noqa: BLE001
        pass


class _Proc:
    def __init__(self, spec: NodeSpec, tail: int):
        self.spec = spec
        self.popen: Optional[subprocess.Popen] = None
        self.tail: deque[str] = deque(maxlen=tail)
        self.starts = 0
        self.exit_codes: list[int] = []
        self.state = "pending"      # pending | running | exited | respawning
        self.respawn_at: Optional[float] = None
        self.readers: list[threading.Thread] = []


class Launcher:
    """Start and supervise the processes of a LaunchDescription.

    start(); wait(timeout_s) -> True when every process ended; shutdown() stops everything
    (SIGINT, then SIGTERM, then SIGKILL); events are printed to ``out`` and kept in ``events``."""

    def __init__(self, desc: LaunchDescription, params: Optional[LaunchParams] = None,
                 transport: Optional[str] = None, router: Optional[str] = "auto",
                 out=None):
        self.desc = desc
        self.params = params or LaunchParams.defaults()
        self.out = out or sys.stdout
        self.procs = [_Proc(s, self.params.log_tail_lines) for s in desc.nodes]
        self.events: list[str] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.router_session = None
        self.router_endpoint: Optional[str] = None
        self.router_lost = 0          # ERROR lines about a router gone (watchdog)
        from .context import transport_name

        self.transport = transport or transport_name()
        self.router_mode = router
        self.failed: Optional[_Proc] = None   # a node that exited with code 2 (failed to start)

    # ---- output
    def _say(self, text: str) -> None:
        line = f"[hri launch] {text}"
        with self._lock:
            self.events.append(text)
            print(line, file=self.out, flush=True)

    def status_line(self) -> str:
        parts = []
        for p in self.procs:
            s = p.state
            if p.state == "running" and p.popen is not None:
                s = f"running pid {p.popen.pid}"
            elif p.state == "exited" and p.exit_codes:
                s = f"exited {p.exit_codes[-1]}"
            parts.append(f"{p.spec.name}: {s}" + (f" (start {p.starts})" if p.starts > 1 else ""))
        return " | ".join(parts)

    # ---- router
    def _ensure_router(self) -> None:
        if self.transport != "zenoh" or self.router_mode in (None, "none", "off"):
            return
        try:
            from . import zenoh_backend as zb
        except ModuleNotFoundError:
            self._say("zenoh backend not available: no router started")
            return
        endpoints = [self.router_mode] if self.router_mode not in ("auto", None) else None
        zp = zb.ZenohParams.defaults()
        eps = endpoints or list(zp.router_listen_endpoints)
        self.router_endpoint = eps[0]
        self._router_check_period_s = self.params.router_check_period_s
        if zb.router_answers(eps[0], self.params.router_probe_timeout_s):
            self._say(f"zenoh router already answers on {eps[0]}: using it (watching it every "
                      f"{self._router_check_period_s:g} s)")
            self._router_watch = threading.Thread(target=self._watch_router, args=(eps[0], zb),
                                                  name="router-watch", daemon=True)
            self._router_watch.start()
            return
        self.router_session = zb.start_router(eps, zp)
        self._say(f"zenoh router started in-process on {', '.join(eps)} (it stops with this launch; "
                  f"`hri router` runs one of its own)")

    def _watch_router(self, endpoint: str, zb) -> None:
        """The external router this launch's nodes depend on: an ERROR (log and output) every
        check period while it does not answer, one line when it is back."""
        lost_since: Optional[float] = None
        while not self._stopping.wait(self._router_check_period_s):
            ok = zb.router_answers(endpoint, self.params.router_probe_timeout_s)
            if ok and lost_since is not None:
                self._say(f"zenoh router on {endpoint} is back after {time.monotonic() - lost_since:.1f} s")
                log.warning("zenoh router on %s is back", endpoint)
                lost_since = None
            elif not ok:
                lost_since = lost_since if lost_since is not None else time.monotonic()
                text = (f"ERROR: zenoh router on {endpoint} is GONE for {time.monotonic() - lost_since:.1f} s: "
                        f"the nodes of this launch cannot talk to each other; restart it (`hri router`)")
                self.router_lost += 1
                self._say(text)
                log.error(text)

    # ---- processes
    def _env(self, spec: NodeSpec) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.desc.env)
        env.update(spec.env)
        env["HRI_TRANSPORT"] = self.transport
        env.setdefault("PYTHONUNBUFFERED", "1")
        if self.router_endpoint and "HRI_ZENOH_CONNECT" not in env:
            env["HRI_ZENOH_CONNECT"] = f"[{self.router_endpoint}]"
        return env

    def _spawn(self, p: _Proc) -> None:
        try:
            p.popen = subprocess.Popen(
                p.spec.cmd, env=self._env(p.spec), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_pdeathsig)
        except OSError as e:
            p.state = "exited"
            p.exit_codes.append(-1)
            self._say(f"{p.spec.name}: cannot start {p.spec.cmd[0]}: {e}")
            return
        p.starts += 1
        p.state = "running"
        t = threading.Thread(target=self._pump, args=(p, p.popen), daemon=True)
        t.start()
        p.readers.append(t)
        self._say(f"started {p.spec.name} (pid {p.popen.pid}): {shlex.join(p.spec.cmd)}")

    def _pump(self, p: _Proc, popen: subprocess.Popen) -> None:
        assert popen.stdout is not None
        for raw in iter(popen.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            p.tail.append(line)
            if p.spec.output != "log":
                with self._lock:
                    print(f"[{p.spec.name}] {line}", file=self.out, flush=True)
        popen.stdout.close()

    def start(self) -> None:
        self._ensure_router()
        if self.transport == "inproc" and len(self.procs) > 1:
            self._say("HRI_TRANSPORT=inproc: nodes in separate processes cannot talk to each other")
        for p in self.procs:
            self._spawn(p)
        self._say(self.status_line())
        self._thread = threading.Thread(target=self._supervise, name="hri-launch", daemon=True)
        self._thread.start()

    def _supervise(self) -> None:
        while True:
            changed = False
            for p in self.procs:
                if p.state == "running" and p.popen is not None and p.popen.poll() is not None:
                    rc = p.popen.returncode
                    for t in p.readers:
                        t.join(timeout=1.0)
                    p.exit_codes.append(rc)
                    changed = True
                    if self._stopping.is_set():
                        p.state = "exited"
                        continue
                    last = "\n".join(f"    {line}" for line in p.tail)
                    self._say(f"{p.spec.name} (pid {p.popen.pid}) died with exit code {rc}"
                              + (f"; last lines:\n{last}" if last else ""))
                    if rc == errors.EXIT_USAGE:
                        # exit code 2 = bad config, argument or busy port: respawning cannot help;
                        # the whole launch fails (main() stops the other nodes, exit code 2)
                        p.state = "exited"
                        self.failed = p
                        self._say(self.status_line())
                        return
                    if p.spec.respawn:
                        d = p.spec.respawn_delay_s
                        d = self.params.respawn_delay_s if d is None else d
                        p.state = "respawning"
                        p.respawn_at = time.monotonic() + d
                        self._say(f"{p.spec.name}: respawning in {d:g} s")
                    else:
                        p.state = "exited"
                elif p.state == "respawning" and not self._stopping.is_set() \
                        and time.monotonic() >= (p.respawn_at or 0):
                    self._spawn(p)
                    changed = True
            if changed:
                self._say(self.status_line())
            if all(p.state in ("exited", "pending") for p in self.procs):
                return
            if self._stopping.is_set() and all(p.state != "running" for p in self.procs):
                for p in self.procs:
                    if p.state == "respawning":
                        p.state = "exited"
                return
            time.sleep(self.params.poll_period_s)

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout_s: Optional[float] = None) -> bool:
        if self._thread is None:
            return True
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _signal_all(self, sig: int) -> None:
        for p in self.procs:
            if p.popen is not None and p.popen.poll() is None:
                try:
                    os.killpg(p.popen.pid, sig)
                except ProcessLookupError:
                    pass

    def _wait_all(self, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        for p in self.procs:
            if p.popen is None:
                continue
            try:
                p.popen.wait(timeout=max(0.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                return False
        return True

    def shutdown(self) -> None:
        """SIGINT to every child (process group), SIGTERM after sigterm_timeout_s, SIGKILL after
        sigkill_timeout_s more; then the router. Idempotent."""
        if not self._stopping.is_set():
            self._stopping.set()
            self._say("shutting down: SIGINT to all nodes")
        self._signal_all(signal.SIGINT)
        if not self._wait_all(self.params.sigterm_timeout_s):
            self._say("nodes still running: SIGTERM")
            self._signal_all(signal.SIGTERM)
            if not self._wait_all(self.params.sigkill_timeout_s):
                self._say("nodes still running: SIGKILL")
                self._signal_all(signal.SIGKILL)
                self._wait_all(self.params.sigkill_timeout_s)
        self.wait(self.params.sigkill_timeout_s)
        for p in self.procs:
            if p.state != "exited":
                p.state = "exited"
        self._say(self.status_line())
        if self.router_session is not None:
            try:
                self.router_session.close()
            finally:
                self.router_session = None

    def failure_line(self) -> Optional[str]:
        """One line naming the node that failed to start and its own last words, or None."""
        p = self.failed
        if p is None:
            return None
        said = next((line.strip() for line in reversed(p.tail) if line.strip()), "")
        said = said[len("error:"):].strip() if said.startswith("error:") else said
        return (f"node '{p.spec.name}' failed to start (exit code {p.exit_codes[-1]})"
                + (f": {said}" if said else ""))

    def exit_code(self) -> int:
        codes = [p.exit_codes[-1] for p in self.procs if p.exit_codes]
        if self.failed is not None:
            return errors.EXIT_USAGE
        if self._stopping.is_set():
            return 0
        return 0 if all(c == 0 for c in codes) else 1


# --------------------------------------------------------------------------- CLI

def _split_cli(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    rest, args = [], {}
    for a in argv:
        if ":=" in a and not a.startswith("-"):
            k, v = a.split(":=", 1)
            args[k] = v
        else:
            rest.append(a)
    return rest, args


def main(argv: Optional[list[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    rest, largs = _split_cli(argv)
    ap = argparse.ArgumentParser(prog="hri launch", description="Run a ROS 2 YAML launch file without ROS "
                                 "(arguments as name:=value).")
    ap.add_argument("file", nargs="+", help="launch file(s); with --check several may be given")
    ap.add_argument("--check", action="store_true", help="parse and resolve only; print the processes")
    ap.add_argument("--print", dest="show", action="store_true", help="print the command lines, then run")
    ap.add_argument("--transport", choices=["auto", "rclpy", "zenoh", "inproc"],
                    help="overrides HRI_TRANSPORT for the nodes")
    ap.add_argument("--router", default="auto",
                    help="zenoh router endpoint to use (watched), started in-process only if nothing "
                         "answers there (default: runtime.zenoh.router_listen_endpoints), or 'none'")
    a = ap.parse_args(rest)
    if a.check:
        bad = 0
        for f in a.file:
            try:
                d = parse_launch_file(f, largs)
            except LaunchError as e:
                print(f"FAIL {f}: {errors.one_line(e)}", file=sys.stderr)
                bad += 1
                continue
            print(f"OK   {f}: {len(d.nodes)} process(es); args {d.args}")
            for n in d.nodes:
                print(f"       {n.name}: {shlex.join(n.cmd)}" + ("  [respawn]" if n.respawn else ""))
        return errors.EXIT_USAGE if bad else 0
    if len(a.file) != 1:
        print("error: give one launch file (several only with --check)", file=sys.stderr)
        return 2
    try:
        desc = parse_launch_file(a.file[0], largs)
    except LaunchError as e:
        print(f"hri launch: error: {errors.one_line(e)}", file=sys.stderr)
        return 2
    if a.transport:
        os.environ["HRI_TRANSPORT"] = a.transport
    try:
        launcher = Launcher(desc, router=a.router)
    except Exception as e:  # noqa: BLE001  (bad HRI_TRANSPORT)
        print(f"hri launch: error: {errors.one_line(e)}", file=sys.stderr)
        return 2
    if a.show:
        for n in desc.nodes:
            print(f"{n.name}: {shlex.join(n.cmd)}")
    stop = threading.Event()

    def on_signal(signum, _frame):
        stop.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            launcher.start()
        except Exception as e:  # noqa: BLE001  (router bind failure)
            print(f"hri launch: error: {errors.one_line(e)}", file=sys.stderr)
            launcher.shutdown()
            return 2
        while not stop.is_set() and launcher.running():
            stop.wait(launcher.params.poll_period_s)
        if launcher.failed is not None:
            launcher.shutdown()
            print(f"hri launch: error: {errors.one_line(launcher.failure_line())}", file=sys.stderr, flush=True)
            return errors.EXIT_USAGE
        if stop.is_set():
            launcher.shutdown()
        else:
            launcher._say("all processes have exited")
        return launcher.exit_code()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if launcher.router_session is not None:
            launcher.router_session.close()
if __name__ == "__main__":
    sys.exit(main())


def run_main(argv: Optional[list[str]] = None) -> int:
    """``hri run <pkg> <exec> [args...]``: ``ros2 run`` without ROS (same executable lookup as
    launch; the process replaces this one, so signals and the exit code are the node's)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print("usage: hri run <pkg> <exec> [args...] [--ros-args ...]", file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    pkg, exe, rest = argv[0], argv[1], argv[2:]
    path = find_executable(pkg, exe)
    if path is None:
        print(f"error: executable '{exe}' of package '{pkg}' not found "
              f"(lib/{pkg}/{exe}, {Path(sys.executable).parent}, PATH)", file=sys.stderr)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [path, *rest])
    return 0  # not reached
