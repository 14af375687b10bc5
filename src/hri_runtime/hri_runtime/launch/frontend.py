"""The launch-file frontend: ROS 2 YAML launch files (the files ``ros2 launch`` runs) resolved
into a ``LaunchDescription``, without ROS.

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

Each node becomes one process started as ros2 launch does:
``<exec> [args] --ros-args -r __node:=<name> -r __ns:=<ns> -p k:=v ... --params-file f -r a:=b``.
The executable is looked up in ``$HRI_LAUNCH_PATH`` (``<dir>/<pkg>/<exec>`` or ``<dir>/<exec>``),
``<prefix>/lib/<pkg>/<exec>`` (ROS layout), the venv's bin directory, then ``PATH``
(``hri_runtime.packages.find_executable``). Running them: ``hri_runtime.launch.launch_service``.
"""
from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any, Optional

import yaml

from hri_runtime.launch.launch_description import LaunchDescription, LaunchError, NodeSpec
from hri_runtime.launch.substitutions import Scope, command_line, substitute, truth
from hri_runtime.packages import find_executable

__all__ = ["parse_launch_file"]


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
        from hri_runtime.config.tree import ConfigError, read_yaml

        try:   # the config tree's bounded reader: size, UTF-8, nesting, aliases, duplicate keys
            doc = read_yaml(path)
        except ConfigError as e:
            syntax = e.expected == "valid YAML syntax"
            raise LaunchError(f"{'not valid YAML: ' if syntax else ''}{e.one_line()}") from None
        if not isinstance(doc, dict) or "launch" not in doc:
            raise LaunchError(f"{path}: a YAML launch file is a mapping with a top-level 'launch:' list")
        scope = Scope(path, dict(scope_vars), ns, env)
        self._include_stack.append(key)
        try:
            self._entities(_as_list(doc["launch"], f"{path}: launch"), scope, top)
        finally:
            self._include_stack.pop()

    def _entities(self, ents: list, scope: Scope, top: bool) -> None:
        for i, ent in enumerate(ents):
            where = f"{scope.file}: entity {i + 1}"
            if not isinstance(ent, dict) or len(ent) != 1:
                raise LaunchError(f"{where}: each entity is a one-key mapping (arg/node/group/...), got {ent!r}")
            kind, body = next(iter(ent.items()))
            where = f"{where} ({kind})"
            body = body if body is not None else {}
            if not isinstance(body, dict):
                raise LaunchError(f"{where}: expected a mapping")
            if "if" in body and not truth(substitute(body["if"], scope, where), where):
                continue
            if "unless" in body and truth(substitute(body["unless"], scope, where), where):
                continue
            handler = getattr(self, "_e_" + kind.replace("-", "_"), None)
            if handler is None:
                raise LaunchError(f"{where}: unsupported entity '{kind}' (supported: arg, let, "
                                  f"set_env, node, executable, group, push-ros-namespace, include)")
            handler(body, scope, where, top)

    # ---- entities
    def _e_arg(self, b, scope: Scope, where, top):
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
            val = substitute(str(b["default"]), scope, where)
        else:
            raise LaunchError(f"{where}: launch argument '{name}' has no default; give it as {name}:=VALUE")
        scope.vars[name] = str(val)
        if top:
            self.out.args[name] = str(val)

    def _e_let(self, b, scope, where, top):
        scope.vars[b["name"]] = str(substitute(str(b.get("value", "")), scope, where))

    def _e_set_env(self, b, scope, where, top):
        scope.env[b["name"]] = str(substitute(str(b.get("value", "")), scope, where))
        self.out.env[b["name"]] = scope.env[b["name"]]

    _e_set_environment_variable = _e_set_env

    def _e_push_ros_namespace(self, b, scope, where, top):
        ns = substitute(b.get("namespace", b.get("ns", "")), scope, where)
        scope.ns = _ns_join(scope.ns, ns)

    _e_push_namespace = _e_push_ros_namespace

    def _e_group(self, b, scope, where, top):
        scoped = truth(substitute(b.get("scoped", True), scope, where), where)
        inner = scope.child() if scoped else scope
        if "namespace" in b:
            inner.ns = _ns_join(inner.ns, substitute(b["namespace"], scope, where))
        self._entities(_as_list(b.get("children"), f"{where}: children"), inner, top)

    def _e_include(self, b, scope, where, top):
        f = substitute(b.get("file", ""), scope, where)
        if not f:
            raise LaunchError(f"{where}: include needs a file")
        p = Path(f)
        if not p.is_absolute():
            p = scope.file.parent / p
        given = dict(scope.vars)
        for a in _as_list(b.get("arg"), where):
            given[a["name"]] = str(substitute(str(a.get("value", "")), scope, where))
        if str(p).endswith((".py", ".xml")):
            raise LaunchError(f"{where}: only YAML launch files can be included without ROS ({p})")
        self.parse_file(p, given, scope.ns, scope.env, top=False)

    def _e_executable(self, b, scope, where, top):
        cmd = command_line(b.get("cmd", ""), scope, where)
        if not cmd:
            raise LaunchError(f"{where}: executable needs cmd")
        extra = command_line(b.get("args", ""), scope, where)
        name = substitute(b.get("name", Path(cmd[0]).name), scope, where)
        self.out.nodes.append(NodeSpec(
            name=name, cmd=cmd + extra, exec=cmd[0],
            respawn=truth(substitute(b.get("respawn", False), scope, where), where),
            respawn_delay_s=float(substitute(b["respawn_delay"], scope, where)) if "respawn_delay" in b else None,
            output=str(b.get("output", "screen")), env=self._env(b, scope, where)))

    def _env(self, b, scope, where) -> dict[str, str]:
        env = dict(scope.env)
        for e in _as_list(b.get("env"), where):
            env[e["name"]] = str(substitute(str(e.get("value", "")), scope, where))
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
        pkg = substitute(b["pkg"], scope, where)
        exe = substitute(b["exec"], scope, where)
        name = substitute(b.get("name"), scope, where) if b.get("name") else None
        ns = _ns_join(scope.ns, substitute(b.get("namespace", ""), scope, where))
        from hri_runtime.names import InvalidNameError, validate_namespace, validate_node_name

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
                f = Path(substitute(str(p["from"]), scope, pw))
                if not f.is_absolute():
                    f = scope.file.parent / f
                if not f.exists():
                    raise LaunchError(f"{pw}: params file not found: {f}")
                files.append(str(f))
            elif "name" in p:
                v = p.get("value")
                if isinstance(v, str):
                    v = substitute(v, scope, pw)
                elif isinstance(v, list):
                    v = [substitute(x, scope, pw) for x in v]
                pname = str(substitute(p["name"], scope, pw))
                if isinstance(v, dict):          # nested parameters: 'gains: {kp: 1}' -> gains.kp
                    from hri_runtime.parameter import _flatten

                    flat: dict = {}
                    _flatten(pname, v, flat)
                    params.update({k: substitute(x, scope, pw) for k, x in flat.items()})
                else:
                    params[pname] = v
            else:
                raise LaunchError(f"{pw}: expected {{name, value}} or {{from: file}}")
        remaps = []
        for j, r in enumerate(_as_list(b.get("remap"), f"{where}: remap")):
            if not isinstance(r, dict) or "from" not in r or "to" not in r:
                raise LaunchError(f"{where}: remap {j + 1}: expected {{from, to}}")
            remaps.append((substitute(str(r["from"]), scope, where), substitute(str(r["to"]), scope, where)))
        path = find_executable(pkg, exe)
        missing = path is None
        if missing and self.check_executables:
            raise LaunchError(f"{where}: executable '{exe}' of package '{pkg}' not found "
                              f"(lib/{pkg}/{exe}, {Path(sys.executable).parent}, PATH); "
                              f"is the package installed (pip install -e src/{pkg})?")
        cmd = [path or exe]
        cmd += command_line(b.get("args", ""), scope, where)
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
        cmd += command_line(b.get("ros_args", ""), scope, where)
        prefix = b.get("launch-prefix", b.get("launch_prefix"))
        if prefix:
            cmd = shlex.split(substitute(str(prefix), scope, where)) + cmd
        self.out.nodes.append(NodeSpec(
            name=name or exe, cmd=cmd, pkg=pkg, exec=exe, node_name=name, namespace=ns,
            params=params, params_files=files, remaps=remaps,
            respawn=truth(substitute(b.get("respawn", False), scope, where), where),
            respawn_delay_s=float(substitute(str(b["respawn_delay"]), scope, where)) if "respawn_delay" in b else None,
            output=str(substitute(b.get("output", "screen"), scope, where)),
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

