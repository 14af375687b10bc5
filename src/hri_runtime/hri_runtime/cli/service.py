"""``hri service list|type|call`` and ``hri interface list|show``, as ``ros2 service`` and
``ros2 interface`` print them (on the HRI_TRANSPORT context; a ROS 2 graph over rmw_zenoh too).

``service call`` resolves the type from the graph when it is not given, builds the request from
YAML (``"{data: true}"``) and prints ``requester: making request: ...`` / ``response:`` like
ros2cli, with messages written as ``pkg.srv.Type_Request(field=value)``. ``interface list``
shows every type the runtime can (de)serialize: the ROS 2 Jazzy type store, the services it
knows, and the ``msg/``/``srv/`` files of the workspace packages (``hri_interfaces``)."""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Optional

import yaml

from hri_runtime import msgs
from hri_runtime.cli.format import message_repr  # noqa: F401 (re-exported)
from hri_runtime.cli.topic import CliSession, graph_parser

__all__ = ["service_main", "interface_main", "message_repr"]

_TYPE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*/(srv/)?[A-Za-z][A-Za-z0-9_]*$")


def service_main(argv: Optional[list[str]] = None, context=None) -> int:
    ap, sub = graph_parser("hri service", "Services of the ROS graph (ros2 service).", "services")
    p = sub.add_parser("type", help="the type of a service")
    p.add_argument("service")
    p = sub.add_parser("call", help="call a service and print the response")
    p.add_argument("service")
    p.add_argument("type", nargs="?", help="pkg/srv/Type (default: from the graph)")
    p.add_argument("values", nargs="?", default="{}", help="YAML of the request, e.g. \"{data: true}\"")
    p.add_argument("--timeout", type=float, help="seconds to wait for the server and the reply")
    a = ap.parse_args(argv)
    sess = CliSession.open("hri_service", context)
    cp = sess.params
    try:
        if a.cmd == "list":
            return sess.list_names("services", a.show_types)
        name = sess.node.resolve_topic_name(a.service)
        if a.cmd == "type":
            sess.wait(cp.discovery_wait_s, until=lambda: bool(sess.ctx.graph().services.get(name)))
            types = sorted(sess.ctx.graph().services.get(name, []))
            if not types:
                print(f"error: service {name} not found", file=sys.stderr)
                return 1
            print("\n".join(types))
            return 0
        # call: 'hri service call /srv "{data: true}"' (type omitted) is accepted too
        srv_type, values = a.type, a.values
        if srv_type is not None and not _TYPE_NAME.match(srv_type) and a.values == "{}":
            srv_type, values = None, a.type
        timeout_s = a.timeout if a.timeout is not None else cp.service_timeout_s
        if srv_type is None:
            sess.wait(timeout_s, until=lambda: bool(sess.ctx.graph().services.get(name)))
            types = sorted(sess.ctx.graph().services.get(name, []))
            if len(types) != 1:
                print(f"error: cannot determine the type of service {name}"
                      + (f" (several: {types})" if types else " (not in the graph; give the type)"),
                      file=sys.stderr)
                return 1
            srv_type = types[0]
        try:
            req_t, resp_t = msgs.srv_types(srv_type)
            req = msgs.from_dict(req_t, yaml.safe_load(values) or {})
        except (yaml.YAMLError, TypeError, ValueError, msgs.UnknownTypeError) as e:
            print(f"error: {str(e).splitlines()[0]}", file=sys.stderr)
            return 2
        cli = sess.node.create_client(msgs.normalize(srv_type), name)
        if not cli.wait_for_service(timeout_s):
            print(f"error: service {name} not available within {timeout_s:g} s", file=sys.stderr)
            return 1
        print(f"requester: making request: {message_repr(req, req_t)}\n")
        try:
            resp = cli.call(req, timeout_s=timeout_s)
        except Exception as e:  # noqa: BLE001  (TimeoutError, ServiceCallError)
            print(f"error: {str(e).splitlines()[0]}", file=sys.stderr)
            return 1
        print(f"response:\n{message_repr(resp, resp_t)}\n")
        return 0
    finally:
        sess.close()


def _workspace_interfaces() -> dict[str, str]:
    """'pkg/msg/X' / 'pkg/srv/X' -> file, from the msg/ and srv/ folders of the workspace's
    packages (the source tree next to the config tree, or installed shares)."""
    from hri_runtime.config.tree import find_config_root

    out: dict[str, str] = {}
    try:
        src = find_config_root().parent / "src"
    except Exception:  # noqa: BLE001
        return out
    for kind in ("msg", "srv"):
        for f in sorted(src.glob(f"*/{kind}/*.{kind}")):
            out[f"{f.parent.parent.name}/{kind}/{f.stem}"] = str(f)
    return out


def _all_interfaces() -> tuple[list[str], list[str]]:
    store = msgs.typestore()
    ws = _workspace_interfaces()
    srvs = set(msgs._srvs) | {t for t in ws if "/srv/" in t}
    messages = {t for t in store.types if "/msg/" in t} | {t for t in ws if "/msg/" in t}
    return sorted(messages), sorted(srvs)


def interface_main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="hri interface", description="Message and service types (ros2 interface).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list", help="every known message and service type")
    g = p.add_mutually_exclusive_group()
    g.add_argument("-m", "--only-msgs", action="store_true")
    g.add_argument("-s", "--only-srvs", action="store_true")
    p = sub.add_parser("show", help="the definition of a type")
    p.add_argument("type", help="pkg/msg/Type or pkg/srv/Type")
    a = ap.parse_args(argv)
    from hri_runtime.parameter_service import register_interfaces

    register_interfaces()
    if a.cmd == "list":
        messages, services = _all_interfaces()
        if not a.only_srvs:
            print("Messages:")
            print("".join(f"    {t}\n" for t in messages), end="")
        if not a.only_msgs:
            print("Services:")
            print("".join(f"    {t}\n" for t in services), end="")
        if not (a.only_msgs or a.only_srvs):
            print("Actions:")
        return 0
    try:
        t = msgs.normalize(a.type)
        f = _workspace_interfaces().get(t)
        if f is not None:
            text = Path(f).read_text(encoding="utf-8")
        else:
            text = msgs.definition(t)
            if not msgs.is_srv(t):
                text = text.split("\n" + "=" * 80, 1)[0]
    except msgs.UnknownTypeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(text.rstrip("\n"))
    return 0
