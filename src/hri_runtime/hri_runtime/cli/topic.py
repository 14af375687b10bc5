"""``hri topic list|echo|pub|hz|info`` and ``hri node list`` on the default context (HRI_TRANSPORT:
a Zenoh graph – ours or a ROS 2 rmw_zenoh one – or rclpy). Output as the ros2 CLI prints it.

Discovery: the graph is read after ``runtime.cli.discovery_wait_s`` (liveliness tokens arrive
asynchronously). hz: mean rate over a sliding window of ``runtime.cli.hz_window`` arrivals,
printed every ``runtime.cli.hz_print_period_s`` (wall clock; this is a measuring tool).
"""
from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import threading
import time
from typing import Optional

import yaml

from hri_runtime import errors, msgs
from hri_runtime.parameters_gen import RuntimeCliParams

__all__ = ["topic_main", "node_main", "param_main", "CliParams", "CliSession", "graph_parser",
           "add_namespace_argument", "get_remote_parameters"]


CliParams = RuntimeCliParams   # declared in hri_runtime's parameters.yaml


class CliSession:
    """Default context + a CLI node, spinning in the background (or paced, for inproc), and the
    CLI's parameters (``params``, ``runtime.cli``). ``CliSession.open(name)``: the session; when
    no transport can be opened, one line on stderr and exit 2 (``SystemExit``, as argparse)."""

    @classmethod
    def open(cls, name: str, context=None, namespace: str = "") -> "CliSession":
        try:
            return cls(name, context, namespace)
        except Exception as e:  # noqa: BLE001  (TransportUnavailableError, a router refusing us)
            print(f"error: {e}", file=sys.stderr)
            raise SystemExit(errors.EXIT_USAGE) from None

    def list_names(self, kind: str, show_types: bool) -> int:
        """``topic list`` / ``service list`` (kind: topics | services) after the discovery wait:
        one name a line (``-t``: with its types), sorted, the CLI node's own left out."""
        self.wait(self.params.discovery_wait_s)
        own = self.node.get_fully_qualified_name() + "/"
        names = getattr(self.ctx.graph(), kind)
        for n in sorted(names):
            if not n.startswith(own):
                print(f"{n} [{', '.join(sorted(names[n]))}]" if show_types else n)
        return 0

    def __init__(self, name: str, context=None, namespace: str = ""):
        from hri_runtime.context import get_default_context
        from hri_runtime.node import Node

        self.params = CliParams.defaults()
        self.ctx = context if context is not None else get_default_context()
        self.node = Node(name, context=self.ctx, namespace=namespace or "")
        self.stop = threading.Event()
        bg = getattr(self.ctx, "spin_in_background", None)
        self._threaded = bg is not None
        if bg is not None:
            bg()
        self._old = {}
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGINT, signal.SIGTERM):
                self._old[s] = signal.signal(s, lambda *_: self.stop.set())

    def wait(self, seconds: Optional[float], until=lambda: False) -> None:
        end = None if seconds is None else time.monotonic() + seconds
        while not self.stop.is_set() and not until():
            rem = None if end is None else end - time.monotonic()
            if rem is not None and rem <= 0:
                return
            step = 0.02 if rem is None else min(0.02, rem)
            if self._threaded:
                self.stop.wait(step)
            else:
                self.ctx.spin(timeout_s=step)

    def close(self) -> None:
        for s, h in self._old.items():
            signal.signal(s, h)
        self.node.destroy_node()
        self.ctx.shutdown()
        self.ctx.close()


def graph_parser(prog: str, description: str, what: str):
    """The parser of ``hri topic`` / ``hri service`` with its ``list [-t]`` subcommand (``what``:
    "topics" / "services"); returns (parser, subparsers) for the other subcommands."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help=f"the {what} of the graph").add_argument(
        "-t", "--show-types", action="store_true", help="with their types")
    return ap, sub


def add_namespace_argument(p: argparse.ArgumentParser) -> None:
    """``--namespace NS``: the CLI node's namespace, so a relative topic, service or node name
    resolves in it (``--namespace left echo ee_pose`` is ``/left/ee_pose``), as for any node started
    with ``-r __ns:=/left``; an absolute name stays as given."""
    p.add_argument("--namespace", type=errors.namespace, default="", metavar="NS",
                   help="resolve relative names in this namespace (e.g. left: ee_pose is /left/ee_pose)")


def get_remote_parameters(node, target: str, names: list[str], timeout_s: float) -> Optional[dict]:
    """{name: value} of parameters of the node ``target`` (resolved against ``node``'s namespace)
    through its get_parameters service, a value None where the parameter is not set; None when the
    service does not answer within ``timeout_s``."""
    from hri_runtime.parameter_service import SERVICES, from_value_msg, register_interfaces

    register_interfaces()
    srv = SERVICES["get_parameters"]
    req_t, _ = msgs.srv_types(srv)
    full = node.resolve_topic_name(target, "service")
    cli = node.create_client(srv, f"{full.rstrip('/')}/get_parameters")
    try:
        if not cli.wait_for_service(timeout_s):
            return None
        r = cli.call(msgs.new(req_t, names=list(names)), timeout_s=timeout_s)
    except Exception:  # noqa: BLE001  (no answer in time)
        return None
    finally:
        node.destroy_client(cli)
    return {n: (None if v.type == 0 else from_value_msg(v)) for n, v in zip(names, r.values)}


def _resolve_type(sess: CliSession, topic: str, given: Optional[str], wait_s: float) -> str:
    if given:
        return msgs.normalize(given)
    sess.wait(wait_s, until=lambda: bool(sess.ctx.graph().topics.get(topic)))
    types = sess.ctx.graph().topics.get(topic, set())
    if len(types) != 1:
        raise SystemExit(f"error: cannot determine the type of {topic}"
                         + (f" (several: {sorted(types)})" if types else " (not in the graph; give the type)"))
    return next(iter(types))


def _check_topic_args(a: argparse.Namespace) -> None:
    """Refuse a bad topic name, message type or field value before any transport is opened
    (UsageError / UnknownTypeError: one line, exit 2 through the ``hri`` dispatcher)."""
    from hri_runtime.names import validate_topic_name

    if getattr(a, "topic", None) is not None:
        validate_topic_name(a.topic)
    if getattr(a, "type", None):
        msgs.get(a.type)
    if a.cmd == "pub":
        if a.stdin:
            a.values = sys.stdin.read()
        if a.max_wait_time_secs is not None and _pub_wait_count(a) == 0:
            raise errors.UsageError("--max-wait-time-secs is only effective with --wait-matching-subscriptions, "
                                    "--once or --times")
        if a.qos_depth is not None and a.qos_depth < 0:
            raise errors.UsageError(f"--qos-depth {a.qos_depth}: an integer >= 0")
        a.qos = _pub_qos(a)          # an 'unknown' policy: ValueError
        try:
            fields = yaml.safe_load(a.values)
        except yaml.YAMLError as e:
            raise errors.UsageError(f"values {a.values!r}: not valid YAML ({' '.join(str(e).split())})") from None
        if fields is not None and not isinstance(fields, dict):
            raise errors.UsageError(f"values {a.values!r}: a YAML mapping of the fields, e.g. \"{{data: hi}}\"")
        try:
            msgs.from_dict(a.type, msgs.stamp_fields(a.type, fields or {})[0])
        except (TypeError, ValueError) as e:
            raise errors.UsageError(f"values {a.values!r}: {errors.one_line(e)}") from None


def _pub_times(a: argparse.Namespace) -> int:
    """Messages to publish (0 = until Ctrl-C), as ros2 topic pub: --once = 1, else --times."""
    return 1 if a.once else a.times


def _pub_wait_count(a: argparse.Namespace) -> int:
    """Matching subscriptions to wait for: -w, else 1 with --once/--times and 0 otherwise."""
    return a.wait_matching_subscriptions if a.wait_matching_subscriptions is not None \
        else int(_pub_times(a) != 0)


def _pub_qos(a: argparse.Namespace):
    """The publisher's QoS: the --qos-profile preset, the --qos-* overrides (ros2topic's
    profile_configure_short_keys: depth 0 keeps the preset's), then what a publisher offers for
    system_default / best_available policies (hri_runtime.qos.offered_qos)."""
    from hri_runtime.qos import RMW_PRESETS, offered_qos
    from hri_runtime.impl.wire import RMW_ZENOH_DEFAULT_DEPTH

    q = RMW_PRESETS[a.qos_profile]
    over = {k: v for k, v in (("history", a.qos_history), ("durability", a.qos_durability),
                              ("reliability", a.qos_reliability), ("liveliness", a.qos_liveliness)) if v}
    if a.qos_liveliness_lease_duration_seconds is not None and a.qos_liveliness_lease_duration_seconds >= 0:
        over["liveliness_lease_s"] = a.qos_liveliness_lease_duration_seconds
    if a.qos_depth:
        over["depth"] = a.qos_depth
    q = dataclasses.replace(q, **over)
    if q.durability == "transient_local" and q.depth == 0:
        q = dataclasses.replace(q, depth=1)
    return offered_qos(q, RMW_ZENOH_DEFAULT_DEPTH)


def _add_pub_arguments(p: argparse.ArgumentParser) -> None:
    """``ros2 topic pub``'s arguments (ros2topic/verb/pub.py): names, defaults and meaning."""
    from hri_runtime.qos import DURABILITY, HISTORY, LIVELINESS, RELIABILITY, RMW_PRESETS

    p.add_argument("topic", help="name of the topic to publish to (e.g. '/chatter')")
    add_namespace_argument(p)
    p.add_argument("type", help="type of the message (e.g. 'std_msgs/msg/String')")
    g = p.add_mutually_exclusive_group()
    g.add_argument("values", nargs="?", default="{}",
                   help="values to fill the message with in YAML (e.g. \"{data: hello}\"), "
                        "otherwise the message is published with default values")
    g.add_argument("--stdin", action="store_true", help="read the values from standard input")
    p.add_argument("-r", "--rate", metavar="N", type=errors.positive_float, default=1.0,
                   help="publishing rate in Hz (default: 1)")
    p.add_argument("-p", "--print", metavar="N", type=int, default=1,
                   help="only print every N-th published message (default: 1; 0: none)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("-1", "--once", action="store_true", help="publish one message and exit")
    g.add_argument("-t", "--times", type=errors.nonnegative_int, default=0,
                   help="publish this number of times and then exit (default: 0, until Ctrl-C)")
    p.add_argument("-w", "--wait-matching-subscriptions", type=errors.nonnegative_int, default=None,
                   help="wait until finding this number of matching subscriptions (default: 1 with "
                        "-1/--once/--times, otherwise 0)")
    p.add_argument("--max-wait-time-secs", type=errors.positive_float, default=None,
                   help="give up waiting for the subscriptions after this many seconds (default: wait endlessly)")
    p.add_argument("--keep-alive", metavar="N", type=errors.positive_float, default=0.1,
                   help="keep the publisher alive for N seconds after the last message (default: 0.1)")
    p.add_argument("-n", "--node-name", help="name of the publishing node")
    names = lambda table: sorted(table, key=table.get)  # noqa: E731  (rmw enum order, as ros2cli)
    p.add_argument("--qos-profile", choices=list(RMW_PRESETS), default="default",
                   help="QoS preset profile to publish with (default: default)")
    p.add_argument("--qos-depth", metavar="N", type=int,
                   help="queue size to publish with (overrides the depth of --qos-profile)")
    p.add_argument("--qos-history", choices=names(HISTORY),
                   help="history to publish with (overrides --qos-profile's, default: keep_last)")
    p.add_argument("--qos-reliability", choices=names(RELIABILITY),
                   help="reliability to publish with (overrides --qos-profile's)")
    p.add_argument("--qos-durability", choices=names(DURABILITY),
                   help="durability to publish with (overrides --qos-profile's)")
    p.add_argument("--qos-liveliness", choices=[k for k in names(LIVELINESS) if k != "manual_by_node"],
                   help="liveliness to publish with (overrides --qos-profile's)")
    p.add_argument("--qos-liveliness-lease-duration-seconds", type=float,
                   help="liveliness lease duration to publish with (overrides --qos-profile's)")


def _pub(sess: "CliSession", a: argparse.Namespace, topic: str) -> int:
    """The publish loop of ``ros2 topic pub``: wait for ``-w`` matching subscriptions (a line
    every ``pub_wait_log_period_s``), ``publisher: beginning loop``, then one message at once and
    one every 1/rate s on the session's clock until ``times`` are out or Ctrl-C, each printed
    ``publishing #N: <repr>`` (every ``--print``-th) followed by an empty line; then linger
    ``--keep-alive`` s so the last one leaves before the session closes."""
    from hri_runtime.geometry import time_from_seconds
    from hri_runtime.cli.format import message_repr

    cp = sess.params
    values, stamps = msgs.stamp_fields(a.type, yaml.safe_load(a.values) or {})
    msg = msgs.from_dict(a.type, values)
    pub = sess.node.create_publisher(a.type, topic, qos=a.qos)
    want, times = _pub_wait_count(a), _pub_times(a)
    t0 = time.monotonic()
    next_log = t0
    while pub.get_subscription_count() < want and not sess.stop.is_set():
        now = time.monotonic()
        if now >= next_log:
            print(f"Waiting for at least {want} matching subscription(s)...", flush=True)
            next_log = now + cp.pub_wait_log_period_s
        if a.max_wait_time_secs is not None and now - t0 >= a.max_wait_time_secs:
            print(f"error: timed out waiting for subscribers: expected {want} but only got "
                  f"{pub.get_subscription_count()}", file=sys.stderr)
            return 1
        sess.wait(cp.pub_wait_poll_s)
    if sess.stop.is_set():
        return 0
    print("publisher: beginning loop", flush=True)
    type_name = msgs.normalize(a.type)
    period = 1.0 / a.rate
    count = 0
    next_t = time.monotonic()
    while not sess.stop.is_set() and (times == 0 or count < times):
        count += 1
        if stamps:                               # `auto` / `now`: the node clock's time, each message
            now = time_from_seconds(sess.node.get_clock().now_s())
            for path in stamps:
                obj = msg
                for k in path[:-1]:
                    obj = getattr(obj, k)
                setattr(obj, path[-1], now)
        if a.print and count % a.print == 0:
            print(f"publishing #{count}: {message_repr(msg, type_name)}\n", flush=True)
        pub.publish(msg)
        if times and count >= times:
            break
        next_t += period
        sess.wait(max(0.0, next_t - time.monotonic()))
    sess.wait(a.keep_alive)
    return 0


def topic_main(argv: Optional[list[str]] = None, context=None) -> int:
    ap, sub = graph_parser("hri topic", "Topics of the ROS graph.", "topics")
    p = sub.add_parser("info", help="type, publisher and subscription counts of a topic")
    p.add_argument("topic")
    add_namespace_argument(p)
    p.add_argument("-v", "--verbose", action="store_true",
                   help="every publisher and subscription with its node, GID and QoS (ros2 topic info -v)")
    p = sub.add_parser("echo", help="print the messages of a topic")
    p.add_argument("topic")
    p.add_argument("type", nargs="?")
    add_namespace_argument(p)
    p.add_argument("--once", action="store_true")
    p.add_argument("-n", "--count", type=errors.positive_int)
    p.add_argument("--timeout", type=errors.nonnegative_float, help="give up after this many seconds")
    p.add_argument("--qos-reliability", choices=["reliable", "best_effort"],
                   help="instead of matching the publishers (ros2 topic echo's option)")
    p.add_argument("--qos-durability", choices=["volatile", "transient_local"],
                   help="instead of matching the publishers (ros2 topic echo's option)")
    p.add_argument("--qos-depth", type=errors.positive_int,
                   help="keep-last depth (default: runtime.cli.echo_queue_depth)")
    _add_pub_arguments(sub.add_parser("pub", help="publish a message at a rate until Ctrl-C, or "
                                                  "--once / --times (ros2 topic pub)"))
    p = sub.add_parser("hz", help="measure the rate of a topic")
    p.add_argument("topic")
    p.add_argument("type", nargs="?")
    add_namespace_argument(p)
    p.add_argument("--duration", type=errors.positive_float)
    a = ap.parse_args(argv)
    try:
        _check_topic_args(a)     # bad names, types and values: one line before connecting to anything
    except (ValueError, msgs.UnknownTypeError) as e:
        return errors.print_error("hri topic", e)
    sess = CliSession.open(getattr(a, "node_name", None) or "hri_topic", context, getattr(a, "namespace", ""))
    cp = sess.params
    try:
        if a.cmd == "list":
            return sess.list_names("topics", a.show_types)
        if a.cmd == "info":
            sess.wait(cp.discovery_wait_s)
            g = sess.ctx.graph()
            name = sess.node.resolve_topic_name(a.topic)
            from hri_runtime.cli.format import topic_info_lines

            if name not in g.topics:
                print(f"Unknown topic '{name}'", file=sys.stderr)      # ros2 topic info's words
                return 1
            print("\n".join(topic_info_lines(g, name, a.verbose)))
            return 0
        topic = sess.node.resolve_topic_name(a.topic)
        if a.cmd == "echo":
            t = _resolve_type(sess, topic, a.type, cp.discovery_wait_s)
            want = 1 if a.once else a.count
            n = [0]

            def on_msg(m):
                if want is not None and n[0] >= want:
                    return
                n[0] += 1
                print(msgs.to_yaml(m))
                print("---", flush=True)

            from hri_runtime.cli.format import matching_qos

            sess.wait(cp.discovery_wait_s, until=lambda: bool(sess.ctx.graph().publishers.get(topic)))
            qos = matching_qos(sess.ctx.graph(), topic, a.qos_depth or cp.echo_queue_depth)
            qos = dataclasses.replace(qos, reliability=a.qos_reliability or qos.reliability,
                                      durability=a.qos_durability or qos.durability)
            sess.node.create_subscription(t, topic, on_msg, qos=qos)
            sess.wait(a.timeout, until=lambda: want is not None and n[0] >= want)
            short = n[0] < want if want is not None else n[0] == 0
            if a.timeout is not None and short and not sess.stop.is_set():
                print(f"error: --timeout {a.timeout:g} s expired: {n[0]} of {want or 'any'} message(s) "
                      f"received on {topic}", file=sys.stderr)
                return 1
            return 0
        if a.cmd == "pub":
            return _pub(sess, a, topic)
        if a.cmd == "hz":
            t = _resolve_type(sess, topic, a.type, cp.discovery_wait_s)
            stamps: list[float] = []
            lock = threading.Lock()

            def on_raw(_data):
                with lock:
                    stamps.append(time.monotonic())
                    if len(stamps) > cp.hz_window:
                        del stamps[0]

            sess.node.create_subscription(t, topic, on_raw, qos=cp.echo_queue_depth, raw=True)
            end = None if a.duration is None else time.monotonic() + a.duration
            while not sess.stop.is_set() and (end is None or time.monotonic() < end):
                sess.wait(cp.hz_print_period_s)
                with lock:
                    s = list(stamps)
                if len(s) < 2:
                    print("no new messages", flush=True)
                    continue
                dts = [b - c for b, c in zip(s[1:], s[:-1])]
                mean = sum(dts) / len(dts)
                std = (sum((d - mean) ** 2 for d in dts) / len(dts)) ** 0.5
                print(f"average rate: {1.0 / mean:.3f}\n\tmin: {min(dts):.6f}s max: {max(dts):.6f}s "
                      f"std dev: {std:.5f}s window: {len(s)}", flush=True)
            return 0
    finally:
        sess.close()
    return 2


def node_main(argv: Optional[list[str]] = None, context=None) -> int:
    ap = argparse.ArgumentParser(prog="hri node", description="Nodes of the ROS graph.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list", help="the nodes of the graph")
    p.add_argument("-a", "--all", action="store_true",
                   help="also hidden nodes (a name starting with '_', e.g. ros2cli's daemon), as ros2 node list -a")
    p = sub.add_parser("info", help="a node's subscriptions, publishers, services and clients")
    p.add_argument("node")
    add_namespace_argument(p)
    a = ap.parse_args(argv)
    sess = CliSession.open("hri_node", context, getattr(a, "namespace", ""))
    cp = sess.params
    try:
        sess.wait(cp.discovery_wait_s)
        g = sess.ctx.graph()
        me = sess.node.get_fully_qualified_name()
        if a.cmd == "list":
            for n in sorted(set(g.nodes) - {me}):
                if a.all or not n.rsplit("/", 1)[-1].startswith("_"):
                    print(n)
            return 0
        try:
            name = sess.node.resolve_topic_name(a.node)       # relative: in --namespace
        except ValueError as e:
            return errors.print_error("hri node", e)
        if name not in g.nodes:
            print(f"error: node {name} not found", file=sys.stderr)
            return 1
        print(name)
        print("  Subscribers:")
        for t, ns in sorted(g.subscribers.items()):
            if name in ns:
                print(f"    {t}: {', '.join(sorted(g.topics.get(t, [])))}")
        print("  Publishers:")
        for t, ns in sorted(g.publishers.items()):
            if name in ns:
                print(f"    {t}: {', '.join(sorted(g.topics.get(t, [])))}")
        for title, kind in (("  Service Servers:", "SERVICE"), ("  Service Clients:", "CLIENT")):
            print(title)       # as ros2 node info (from the endpoint list, where the backend has one)
            for e in sorted({(e.name, e.type_name) for e in g.endpoints if e.kind == kind and e.node_fqn == name}):
                print(f"    {e[0]}: {e[1]}")
        return 0
    finally:
        sess.close()


def param_main(argv: Optional[list[str]] = None, context=None) -> int:
    """``hri param list|get|set|describe <node> [name] [value]`` through the node's rcl parameter
    services (works on any node with them: ours on zenoh/rclpy, or a ROS 2 node over rmw_zenoh)."""
    from hri_runtime.parameter_service import SERVICES, from_value_msg, register_interfaces, to_value_msg

    ap = argparse.ArgumentParser(prog="hri param", description="Parameters of a node (ros2 param).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list", help="the parameter names of a node")
    p.add_argument("node")
    for c, h in (("get", "the value of a parameter"), ("describe", "type, description and constraints of a parameter")):
        p = sub.add_parser(c, help=h)
        p.add_argument("node")
        p.add_argument("name")
    p = sub.add_parser("set", help="set a parameter (refused if read-only or out of its bounds)")
    p.add_argument("node")
    p.add_argument("name")
    p.add_argument("value", help="YAML value (1, 1.0, true, hello, '[1, 2]')")
    p = sub.add_parser("dump", help="every parameter as ros2 param dump writes it (YAML on stdout)")
    p.add_argument("node")
    p = sub.add_parser("load", help="set the parameters of a ros2 param dump file")
    p.add_argument("node")
    p.add_argument("file")
    ap.add_argument("--timeout", type=float, default=None, help="seconds to wait for the node's service")
    for p in sub.choices.values():
        add_namespace_argument(p)
    a = ap.parse_args(argv)
    register_interfaces()
    sess = CliSession.open("hri_param", context, a.namespace)
    cp = sess.params
    timeout_s = a.timeout if a.timeout is not None else cp.service_timeout_s
    try:
        node = sess.node.resolve_topic_name(a.node, "service")     # relative: in --namespace
    except ValueError as e:
        sess.close()
        return errors.print_error("hri param", e)
    short = {"list": "list_parameters", "get": "get_parameters", "set": "set_parameters",
             "describe": "describe_parameters", "dump": "list_parameters",
             "load": "set_parameters"}[a.cmd]
    load_items = None
    if a.cmd == "load":
        from hri_runtime.cli.format import param_file_items

        try:
            load_items = param_file_items(a.file, node)
        except (OSError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            sess.close()
            return 2
    srv = SERVICES[short]
    req_t, _ = msgs.srv_types(srv)
    try:
        cli = sess.node.create_client(srv, f"{node}/{short}")
        if not cli.wait_for_service(timeout_s):
            print(f"error: node {node} has no {short} service (not running, or parameter services off)",
                  file=sys.stderr)
            return 1
        if a.cmd == "list":
            r = cli.call(msgs.new(req_t), timeout_s=timeout_s)
            for n in r.result.names:
                print(f"  {n}")
        elif a.cmd == "get":
            r = cli.call(msgs.new(req_t, names=[a.name]), timeout_s=timeout_s)
            v = r.values[0]
            if v.type == 0:
                print(f"Parameter not set: {a.name}")
                return 1
            print(f"Value is: {from_value_msg(v)}")
        elif a.cmd == "describe":
            from hri_runtime.cli.format import describe_lines

            r = cli.call(msgs.new(req_t, names=[a.name]), timeout_s=timeout_s)
            print("\n".join(describe_lines(r.descriptors[0])))
        elif a.cmd == "dump":
            from hri_runtime.cli.format import dump_yaml

            names = list(cli.call(msgs.new(req_t), timeout_s=timeout_s).result.names)
            get_t, _ = msgs.srv_types(SERVICES["get_parameters"])
            getc = sess.node.create_client(SERVICES["get_parameters"], f"{node}/get_parameters")
            r = getc.call(msgs.new(get_t, names=names), timeout_s=timeout_s)
            print(dump_yaml(node, {n: from_value_msg(v) for n, v in zip(names, r.values)}), end="")
        elif a.cmd == "load":
            rc = 0
            for name, val in load_items:
                par = msgs.new("rcl_interfaces/msg/Parameter", name=name, value=to_value_msg(val))
                res = cli.call(msgs.new(req_t, parameters=[par]), timeout_s=timeout_s).results[0]
                if res.successful:
                    print(f"Set parameter {name} successful")
                else:
                    print(f"Set parameter {name} failed: {res.reason}")
                    rc = 1
            return rc
        else:
            from hri_runtime.parameter import parse_yaml_value

            val = parse_yaml_value(a.value)
            par = msgs.new("rcl_interfaces/msg/Parameter", name=a.name, value=to_value_msg(val))
            r = cli.call(msgs.new(req_t, parameters=[par]), timeout_s=timeout_s)
            res = r.results[0]
            if not res.successful:
                print(f"Setting parameter failed: {res.reason}")
                return 1
            print("Set parameter successful")
        return 0
    except TimeoutError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        sess.close()
