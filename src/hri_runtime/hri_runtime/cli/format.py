"""Output of the ``hri`` graph commands in ros2cli's formats (``ros2 topic info -v``, ``ros2
param describe``, QoS names), and the QoS a one-shot tool should request to hear every publisher.

QoS matching (as ``ros2 topic echo``/``rosbag2`` do): request RELIABLE only when every publisher
offers it, TRANSIENT_LOCAL only when every publisher offers it (so a late echo of ``/rosout``
receives the cached lines); with no publisher known: RELIABLE + VOLATILE (the ROS default).
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

from hri_runtime import msgs
from hri_runtime.context import Graph, GraphEndpoint
from hri_runtime.qos import QoSProfile

__all__ = ["qos_lines", "topic_info_lines", "matching_qos", "format_gid", "PARAM_TYPE_NAMES"]

# rcl_interfaces/msg/ParameterType -> the name ros2 param describe prints
PARAM_TYPE_NAMES = {0: "not set", 1: "boolean", 2: "integer", 3: "double", 4: "string",
                    5: "byte array", 6: "boolean array", 7: "integer array", 8: "double array",
                    9: "string array"}


def _duration(v: Optional[float]) -> str:
    if v is None or v <= 0 or v == float("inf"):
        return "Infinite"
    return f"{int(round(v * 1e9))} nanoseconds"


def qos_lines(qos: Any, indent: str = "  ") -> list[str]:
    """``QoS profile:`` block of ``ros2 topic info -v`` for one profile (None: unknown)."""
    if qos is None:
        return [f"{indent}(unknown)"]
    hist = str(getattr(qos, "history", "keep_last")).upper()
    depth = f" ({int(getattr(qos, 'depth', 0))})" if hist == "KEEP_LAST" else ""
    live = str(getattr(qos, "liveliness", "automatic")).upper()
    return [f"{indent}Reliability: {str(qos.reliability).upper()}",
            f"{indent}History (Depth): {hist}{depth}",
            f"{indent}Durability: {str(qos.durability).upper()}",
            f"{indent}Lifespan: {_duration(getattr(qos, 'lifespan_s', None))}",
            f"{indent}Deadline: {_duration(getattr(qos, 'deadline_s', None))}",
            f"{indent}Liveliness: {live}",
            f"{indent}Liveliness lease duration: {_duration(getattr(qos, 'liveliness_lease_s', None))}"]


def format_gid(gid: Optional[bytes]) -> str:
    return ".".join(f"{b:02x}" for b in gid) if gid else "(unknown)"


def _endpoint_lines(e: GraphEndpoint) -> list[str]:
    ns, _, name = e.node_fqn.rpartition("/")
    out = [f"Node name: {name}", f"Node namespace: {ns or '/'}", f"Topic type: {e.type_name}"]
    if e.type_hash:
        out.append(f"Topic type hash: {e.type_hash}")
    out += [f"Endpoint type: {e.kind}", f"GID: {format_gid(e.gid)}", "QoS profile:"]
    return out + qos_lines(e.qos) + [""]


def topic_info_lines(g: Graph, topic: str, verbose: bool = False) -> list[str]:
    """``ros2 topic info [-v]`` for ``topic`` (fully qualified)."""
    pubs = [e for e in g.endpoints if e.name == topic and e.kind == "PUBLISHER"]
    subs = [e for e in g.endpoints if e.name == topic and e.kind == "SUBSCRIPTION"]
    if not g.endpoints:      # a backend without endpoint details: counts from the node lists
        pubs_n, subs_n = len(g.publishers.get(topic, [])), len(g.subscribers.get(topic, []))
    else:
        pubs_n, subs_n = len(pubs), len(subs)
    type_line = f"Type: {', '.join(sorted(g.topics.get(topic, []))) or '(unknown)'}"
    if not verbose:
        return [type_line, f"Publisher count: {pubs_n}", f"Subscription count: {subs_n}"]
    out = [type_line, "", f"Publisher count: {pubs_n}", ""]
    for e in pubs:
        out += _endpoint_lines(e)
    out += [f"Subscription count: {subs_n}", ""]
    for e in subs:
        out += _endpoint_lines(e)
    return out


def matching_qos(g: Graph, topic: str, depth: int, publishers: Optional[Iterable[GraphEndpoint]] = None) -> QoSProfile:
    """The subscription QoS that hears every publisher of ``topic`` (see module doc)."""
    pubs = list(publishers) if publishers is not None else [
        e for e in g.endpoints if e.name == topic and e.kind == "PUBLISHER" and e.qos is not None]
    if not pubs:
        return QoSProfile(depth=depth)
    rel = "reliable" if all(e.qos.reliability == "reliable" for e in pubs) else "best_effort"
    dur = "transient_local" if all(e.qos.durability == "transient_local" for e in pubs) else "volatile"
    return QoSProfile(depth=depth, reliability=rel, durability=dur)


def describe_lines(d) -> list[str]:
    """``ros2 param describe`` of one rcl_interfaces/ParameterDescriptor."""
    out = [f"Parameter name: {d.name}", f"  Type: {PARAM_TYPE_NAMES.get(int(d.type), str(d.type))}"]
    if d.description:
        out.append(f"  Description: {d.description}")
    cons = []
    if d.read_only:
        cons.append("    Read only: true")
    if getattr(d, "dynamic_typing", False):
        cons.append("    Dynamic typing: true")
    for r in list(d.floating_point_range) + list(d.integer_range):
        cons += [f"    Min value: {r.from_value}", f"    Max value: {r.to_value}"]
        if r.step:
            cons.append(f"    Step: {r.step}")
    if d.additional_constraints:
        cons.append(f"    Additional constraints: {d.additional_constraints}")
    if cons:
        out += ["  Constraints:"] + cons
    return out


def dump_yaml(node_fqn: str, values: dict[str, Any]) -> str:
    """``ros2 param dump`` YAML: ``<node>: {ros__parameters: {...}}``, dotted names nested."""
    import yaml

    tree: dict[str, Any] = {}
    for name in sorted(values):
        *path, leaf = name.split(".")
        d = tree
        for p in path:
            d = d.setdefault(p, {})
        d[leaf] = values[name]
    return yaml.safe_dump({node_fqn: {"ros__parameters": tree}}, default_flow_style=False, sort_keys=True)


def param_file_items(path: str, node_fqn: str) -> list[tuple[str, Any]]:
    """(name, value) pairs of a parameter file for ``node_fqn`` (keys ``/node``, ``node``,
    ``/**`` or ``**`` as ``ros2 param load`` accepts; nested mappings become dotted names)."""
    import yaml

    with open(path, encoding="utf-8") as fh:
        try:
            data = yaml.safe_load(fh)
        except yaml.YAMLError as e:
            raise ValueError(f"{path}: not YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected '<node>: {{ros__parameters: {{...}}}}'")
    items: list[tuple[str, Any]] = []
    keys = [k for k in data if str(k) in (node_fqn, node_fqn.lstrip("/"), "/**", "**")]
    if not keys:
        raise ValueError(f"{path}: no parameters for {node_fqn} (keys: {sorted(map(str, data))})")

    def flat(prefix: str, d: dict) -> None:
        for k, v in d.items():
            name = f"{prefix}{k}"
            if isinstance(v, dict):
                flat(name + ".", v)
            else:
                items.append((name, v))

    for k in keys:
        sec = (data[k] or {}).get("ros__parameters") if isinstance(data[k], dict) else None
        if not isinstance(sec, dict):
            raise ValueError(f"{path}: {k}: expected a 'ros__parameters' mapping")
        flat("", sec)
    return items


def message_repr(msg, type_name: str) -> str:
    """rclpy's repr: ``std_srvs.srv.SetBool_Request(data=True)``."""
    def val(v: Any) -> str:
        if hasattr(v, "__dataclass_fields__"):
            return message_repr(v, msgs.type_name_of(v))
        if hasattr(v, "tolist"):
            v = v.tolist()
        return repr(v)

    fields = ", ".join(f"{k}={val(getattr(msg, k))}" for k in msg.__dataclass_fields__
                       if not k.startswith("__") and k != "structure_needs_at_least_one_member")
    return f"{type_name.replace('/', '.')}({fields})"
