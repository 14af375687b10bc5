"""ROS 2 names: validation and resolution (rcl's rules, the subset nodes use).

Resolution of a topic/service name ``n`` for a node ``node`` in namespace ``ns``:

    "/a/b"   -> "/a/b"                      absolute
    "~/a"    -> ns + "/node/a"  (ns "/" -> "/node/a")   private
    "~"      -> ns + "/node"
    "a/b"    -> ns + "/a/b"                 relative
then remap rules ``from:=to`` apply to the resolved name: ``from`` and ``to`` are themselves
resolved in the node's namespace, and the first rule whose ``from`` equals the name wins.
A rule may be restricted to one node: ``nodename:from:=to``.
"""
from __future__ import annotations

import re

__all__ = ["NameError_", "InvalidNameError", "validate_node_name", "validate_namespace",
           "validate_topic_name", "resolve", "fqn"]

_TOKEN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TOPIC_TOKEN = re.compile(r"^[A-Za-z0-9_]+$")   # tokens after the first may start with a digit


class InvalidNameError(ValueError):
    """A node name, namespace, topic or service name that is not a valid ROS 2 name."""


NameError_ = InvalidNameError


def validate_node_name(name: str) -> str:
    if not isinstance(name, str) or not _TOKEN.match(name or ""):
        raise InvalidNameError(
            f"invalid node name {name!r}: must be non-empty, [A-Za-z_][A-Za-z0-9_]*, no '/'")
    return name


def validate_namespace(ns: str) -> str:
    """'' or 'a' or '/a/b' -> '/' or '/a' or '/a/b' (always absolute, no trailing '/')."""
    if ns is None:
        ns = ""
    if not isinstance(ns, str):
        raise InvalidNameError(f"invalid namespace {ns!r}: not a string")
    n = ns if ns.startswith("/") else "/" + ns
    if n != "/":
        n = n.rstrip("/") if n.endswith("/") and len(n) > 1 else n
        toks = n[1:].split("/")
        if not all(_TOKEN.match(t) for t in toks):
            raise InvalidNameError(
                f"invalid namespace {ns!r}: tokens must match [A-Za-z_][A-Za-z0-9_]* separated by single '/'")
    return n


def fqn(namespace: str, name: str) -> str:
    ns = validate_namespace(namespace)
    return ("/" if ns == "/" else ns + "/") + name


def validate_topic_name(name: str, kind: str = "topic") -> str:
    """Checks a (possibly relative or private) topic/service name before resolution."""
    if not isinstance(name, str) or not name:
        raise InvalidNameError(f"invalid {kind} name {name!r}: empty")
    body = name
    if body.startswith("~"):
        body = body[1:]
        if body and not body.startswith("/"):
            raise InvalidNameError(f"invalid {kind} name {name!r}: '~' must be followed by '/'")
        body = body[1:]
        if not body:
            return name
    elif body.startswith("/"):
        body = body[1:]
    if not body or body.endswith("/") or "//" in body:
        raise InvalidNameError(f"invalid {kind} name {name!r}: empty token, '//' or trailing '/'")
    toks = body.split("/")
    if not _TOKEN.match(toks[0]) and not (name.startswith(("/", "~")) and _TOPIC_TOKEN.match(toks[0])):
        raise InvalidNameError(
            f"invalid {kind} name {name!r}: token {toks[0]!r} must match [A-Za-z_][A-Za-z0-9_]*")
    for t in toks[1:]:
        if not _TOPIC_TOKEN.match(t):
            raise InvalidNameError(f"invalid {kind} name {name!r}: token {t!r} must match [A-Za-z0-9_]+")
    return name


def _expand(name: str, node: str, ns: str) -> str:
    ns = validate_namespace(ns)
    base = "" if ns == "/" else ns
    if name.startswith("/"):
        return name
    if name == "~":
        return f"{base}/{node}"
    if name.startswith("~/"):
        return f"{base}/{node}/{name[2:]}"
    return f"{base}/{name}"


def resolve(name: str, node: str, namespace: str = "/", remaps: dict[str, str] | None = None,
            kind: str = "topic") -> str:
    """Fully qualified name of ``name`` for node ``node`` in ``namespace``, after remaps."""
    validate_topic_name(name, kind)
    full = _expand(name, node, namespace)
    for src, dst in (remaps or {}).items():
        if src.startswith("__"):
            continue
        if ":" in src and not src.startswith(("/", "~")):
            target, _, src = src.partition(":")
            if target != node:
                continue
        try:
            if _expand(src, node, namespace) == full:
                validate_topic_name(dst, kind)
                return _expand(dst, node, namespace)
        except InvalidNameError:
            continue
    return full
