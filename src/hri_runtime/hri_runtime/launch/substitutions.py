"""Substitutions of the launch frontend: ``$(var n)``, ``$(env N [default])``, ``$(optenv N
[default])``, ``$(dirname)``, ``$(filename)``, ``$(find-pkg-share pkg)``, ``$(find-pkg-prefix
pkg)``, ``$(anon n)`` and ``$(eval 'expr')`` (as ``launch.substitutions.PythonExpression``, but
bounded: literals, arithmetic, comparisons and conditionals only; no names, calls or attributes),
nested innermost first, with limits on count and length."""
from __future__ import annotations

import ast
import itertools
import operator
import os
import re
import shlex
from pathlib import Path
from typing import Any

from hri_runtime.launch.launch_description import LaunchError
from hri_runtime.packages import PackageNotFoundError, find_pkg_prefix, find_pkg_share

__all__ = ["Scope", "substitute", "command_line", "truth", "safe_eval"]


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


def safe_eval(expr: str) -> Any:
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


class Scope:
    """What an entity sees: its file, the launch configurations (``vars``), the ROS namespace
    (``ns``), the environment and the remap rules of ``set_remap`` (``remaps``, applied to every
    node in the scope before its own, as launch_ros's ``ros_remaps``)."""

    def __init__(self, file: Path, vars: dict[str, str], ns: str, env: dict[str, str],
                 remaps: list | None = None):
        self.file, self.vars, self.ns, self.env = file, vars, ns, env
        self.remaps: list[tuple[str, str]] = list(remaps or [])

    def child(self, **kw) -> "Scope":
        s = Scope(self.file, dict(self.vars), self.ns, self.env, self.remaps)
        for k, v in kw.items():
            setattr(s, k, v)
        return s


_anon = itertools.count(1)
_MAX_SUBSTITUTIONS = 100       # $(...) expansions in one value
_MAX_SUBST_CHARS = 65536       # length of one value after substitution


def substitute(text: Any, scope: Scope, where: str) -> Any:
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


def _pieces(text: str, where: str) -> list[tuple[bool, str]]:
    """``text`` as literal pieces and top-level ``$(...)`` substitutions (nested substitutions and
    quoted parentheses stay inside theirs)."""
    out: list[tuple[bool, str]] = []
    start = 0
    while (j := text.find("$(", start)) >= 0:
        depth, quote, k = 0, None, j
        for k in range(j, len(text)):
            c = text[k]
            if quote:
                quote = None if c == quote else quote
            elif c in "'\"":
                quote = c
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    break
        if depth != 0:
            raise LaunchError(f"{where}: unclosed '$(' in {text!r}")
        if j > start:
            out.append((False, text[start:j]))
        out.append((True, text[j:k + 1]))
        start = k + 1
    if start < len(text):
        out.append((False, text[start:]))
    return out


def command_line(text: Any, scope: Scope, where: str) -> list[str]:
    """The arguments of ``cmd`` / ``args`` / ``ros_args`` as ``ros2 launch`` builds them (launch's
    ``ExecuteProcess._parse_cmdline``): literal text is split at whitespace (shlex), a
    substitution's result never is: it is one argument, or part of the one whose text it touches.
    (``ros_args: $(eval ...)`` giving ``-p a:=1`` is ONE argument there, which rcl refuses; the
    same launch file fails the same way here.)"""
    args: list[str] = []
    cur: list[str] = []

    def close() -> None:
        if cur:
            args.append("".join(cur))
            cur.clear()

    for is_subst, piece in _pieces(str(text), where):
        if is_subst:
            cur.append(str(substitute(piece, scope, where)))
            continue
        try:
            tokens = shlex.split(piece)
        except ValueError as exc:
            raise LaunchError(f"{where}: {exc} in {str(text)!r}") from None
        if not tokens:
            close()
            continue
        if piece[0].isspace():
            close()
        cur.append(tokens[0])
        if len(tokens) > 1:
            close()
            args.extend(tokens[1:-1])
            cur.append(tokens[-1])
        if piece[-1].isspace():
            close()
    close()
    return args


def _one_subst(body: str, scope: Scope, where: str) -> str:
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
    if kind == "dirname":       # absolute, as ROS 2's ThisLaunchFileDir
        return os.path.abspath(scope.file.parent)
    if kind == "filename":
        return scope.file.name
    if kind in ("find-pkg-share", "find-pkg-prefix"):
        try:
            return (find_pkg_share if kind == "find-pkg-share" else find_pkg_prefix)(args[0])
        except PackageNotFoundError as e:
            raise LaunchError(f"$({kind} {args[0]}): {e}") from None
    if kind == "anon":
        return f"{args[0] if args else 'anon'}_{os.getpid()}_{next(_anon)}"
    if kind == "eval":
        expr = body[len("eval"):].strip()
        if len(expr) >= 2 and expr[0] == expr[-1] and expr[0] in "'\"":
            expr = expr[1:-1]          # one quoted argument, as ROS 2: $(eval '"a" == "b"')
        return str(safe_eval(expr))
    raise LaunchError(f"{where}: unsupported substitution $({body}) "
                      f"(supported: var env optenv dirname filename find-pkg-share find-pkg-prefix anon eval)")


def truth(v: Any, where: str) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("true", "1"):
        return True
    if s in ("false", "0"):
        return False
    raise LaunchError(f"{where}: condition {v!r} is not true/false/1/0")

