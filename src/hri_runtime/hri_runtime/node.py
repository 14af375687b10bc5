"""The Node API: one node code on every backend (inproc, zenoh, rclpy).

    from hri_runtime.node import Node, run_node
    class Foo(Node):
        def __init__(self, **kw):
            super().__init__("foo", **kw)        # kw: context=, namespace=, parameters=, remap=
            self.pub = self.create_publisher("geometry_msgs/msg/Twist", "cmd_vel", qos=10)
            self.create_subscription("std_msgs/msg/String", "chatter", self.on_msg, qos=10)
            self.create_service("std_srvs/srv/Trigger", "~/reset", self.on_reset)
            self.cli = self.create_client("std_srvs/srv/Trigger", "/other/reset")
            self.create_timer(0.04, self.tick)
            self.declare_parameter("rate_hz", 25.0, {"range": (1.0, 1000.0)})
    def main(argv=None): return run_node(Foo, argv)

Messages are rosbags dataclasses (``hri_runtime.msgs``); every backend carries CDR bytes, so
``publish`` serializes and delivery deserializes (a malformed payload is dropped, counted in
``node.rejected`` per (endpoint, cause) and logged once per cause, rate limited).

Names: node names and topic/service names are validated at creation (``InvalidNameError``);
relative names get the namespace, ``~`` the node's fully qualified name, remaps apply after
(see ``hri_runtime.names``). Parameters: ``parameters=`` overrides (and params files / ``-p``
from ``--ros-args``) apply on ``declare_parameter``; types and ranges are enforced
(``ParameterError``). A parameter set at run time is applied or refused, never "successful"
without effect: read-only (startup) unless declared with ``on_set`` (see ``declare_parameter``).
``use_sim_time`` (declared by every node, read-only): the clock follows ``/clock``.

The backend interface is ``hri_runtime.context.Context`` (what a backend must implement is
written in its module docstring).
"""
from __future__ import annotations

import dataclasses
import faulthandler
import logging
import signal
import sys
import threading
import time
from typing import Any, Callable, Optional

from hri_runtime import errors, msgs, provenance, signals
from hri_runtime.client import Client
from hri_runtime.clock import Clock, SimClock, Time
from hri_runtime.context import Context, get_default_context
from hri_runtime.logging import NodeLogger, RosoutHandler
from hri_runtime.names import fqn, resolve, validate_namespace, validate_node_name
from hri_runtime.parameters_gen import RuntimeNodeParams
from hri_runtime.parameter import (Parameter, ParameterDescriptor, ParameterError, ParameterNotDeclaredError,
                     RosArgs, SetParametersResult, check_value, param_type_of, parse_ros_args)
from hri_runtime.publisher import Publisher
from hri_runtime.qos import QOS_CLOCK, QOS_ROSOUT, qos_profile
from hri_runtime.service import Service
from hri_runtime.subscription import Subscription
from hri_runtime.timer import Timer

__all__ = ["Node", "run_node"]

log = logging.getLogger("hri.runtime")
STOP_TIMEOUT = "runtime.node.stop_timeout_s"
_reject_interval_cache: list[float] = []


def reject_log_interval_s() -> float:
    """``runtime.node.reject_log_interval_s`` of the declared defaults (read once)."""
    if not _reject_interval_cache:
        _reject_interval_cache.append(RuntimeNodeParams.defaults().reject_log_interval_s)
    return _reject_interval_cache[0]


# --------------------------------------------------------------------------- node

class Node:
    def __init__(self, name: str, context: Optional[Context] = None, namespace: str = "",
                 parameters: Optional[dict] = None, remap: Optional[dict] = None,
                 start_parameter_services: bool = True, **_ignored):
        ctx = context if context is not None else get_default_context()
        self.context = ctx
        args: RosArgs = getattr(ctx, "ros_args", None) or RosArgs()
        remaps = dict(args.remaps)
        remaps.update(remap or {})
        name = remaps.pop("__node", None) or remaps.pop("__name", None) or args.node_name or name
        namespace = remaps.pop("__ns", None) or args.namespace or namespace
        self._name = validate_node_name(name)
        self._namespace = validate_namespace(namespace)
        self._fqn = fqn(self._namespace, self._name)
        self._remaps = remaps
        self._overrides: dict[str, Any] = args.parameters_for(self._name, self._fqn)
        self._overrides.update(parameters or {})
        self._params: dict[str, Parameter] = {}
        self._descriptors: dict[str, ParameterDescriptor] = {}
        self._param_callbacks: list[Callable[[list[Parameter]], SetParametersResult]] = []
        self._param_appliers: dict[str, Callable[[Any], Optional[str]]] = {}
        self._param_services = None
        self._publishers: list[Publisher] = []
        self._subscriptions: list[Subscription] = []
        self._services: list[Service] = []
        self._clients: list[Client] = []
        self._timers: list[Timer] = []
        self.rejected: dict[tuple[str, str], int] = {}
        self._reject_logged: dict[tuple[str, str], float] = {}
        self._logger = NodeLogger(self._fqn)
        if args.log_level:
            self._logger.set_level(args.log_level)
        self._clock: Clock = Clock(ctx.now_s, getattr(ctx, "now_ns", None))
        use_sim = self.declare_parameter("use_sim_time", False).value
        if use_sim:
            self._clock = SimClock()
            self.create_subscription("rosgraph_msgs/msg/Clock", "/clock", self._on_clock, qos=QOS_CLOCK)
        if getattr(ctx, "rosout_enabled", True) and args.rosout:
            self._rosout = self.create_publisher("rcl_interfaces/msg/Log", "/rosout", qos=QOS_ROSOUT)
            self._rosout_busy = threading.local()
            self._logger.sink = self._to_rosout
        if getattr(ctx, "parameter_services_enabled", True) and start_parameter_services:
            from hri_runtime.parameter_service import ParameterServices

            self._param_services = ParameterServices(self)
            self._param_services.event(new=list(self._params.values()))
        ctx.add_node(self)
        self._destroyed = False

    # ---- identity
    def get_name(self) -> str:
        return self._name

    def get_namespace(self) -> str:
        return self._namespace

    def get_fully_qualified_name(self) -> str:
        return self._fqn

    def resolve_topic_name(self, topic: str, kind: str = "topic") -> str:
        return resolve(topic, self._name, self._namespace, self._remaps, kind)

    resolve_service_name = resolve_topic_name

    # ---- bad input
    def _endpoint_name(self, endpoint: str) -> str:
        """A topic or service name resolved as the node's endpoints are (``joint_states`` in
        namespace ``/left`` counts as ``/left/joint_states``); any other label as given."""
        try:
            return self.resolve_topic_name(endpoint)
        except (ValueError, TypeError):
            return endpoint

    def _reject(self, endpoint: str, cause: str, detail: str = "") -> None:
        """Count a rejected input per (endpoint, cause); log the first and then at most one
        line per runtime.node.reject_log_interval_s with the running count. A relative name is
        counted (and logged) resolved, like the endpoint it arrived on."""
        endpoint = self._endpoint_name(endpoint)
        key = (endpoint, cause)
        n = self.rejected.get(key, 0) + 1
        self.rejected[key] = n
        now = time.monotonic()
        last = self._reject_logged.get(key)
        if last is None or now - last >= reject_log_interval_s():
            self._reject_logged[key] = now
            self._logger.warn(f"dropped input on {endpoint} ({cause}, {n} so far): {detail}")

    def rejected_count(self, endpoint: Optional[str] = None, cause: Optional[str] = None) -> int:
        """Rejected inputs, all or of one endpoint (a relative name resolved) and/or cause."""
        endpoint = None if endpoint is None else self._endpoint_name(endpoint)
        return sum(n for (e, c), n in self.rejected.items()
                   if (endpoint is None or e == endpoint) and (cause is None or c == cause))

    def loop_counters(self) -> dict[str, int]:
        """What the runtime counted for this node: timer periods skipped because a call came late
        (missed deadlines), samples its keep-last subscription queues dropped, inputs rejected."""
        return {"timer_periods_missed": sum(getattr(t, "missed", 0) for t in self._timers),
                "messages_dropped": sum(getattr(s, "dropped", 0) for s in self._subscriptions),
                "inputs_rejected": self.rejected_count()}

    # ---- endpoints
    def create_publisher(self, msg_type: str, topic: str, qos: Any = 10) -> Publisher:
        t = msgs.normalize(msg_type)
        msgs.get(t)
        name = self.resolve_topic_name(topic)
        q = qos_profile(qos)
        raw = self.context.create_publisher(self, name, t, q)
        pub = Publisher(self, raw, name, t, q)
        self._publishers.append(pub)
        return pub

    def create_subscription(self, msg_type: str, topic: str, callback: Callable, qos: Any = 10,
                            raw: bool = False) -> Subscription:
        """callback(msg), mutually exclusive with the context's other callbacks (on the executor
        thread, or inline on the transport thread, see ``context`` "Threads"); raw=True gives
        the CDR bytes instead (no decode, as rclpy's raw subscriptions)."""
        t = msgs.normalize(msg_type)
        msgs.get(t)
        name = self.resolve_topic_name(topic)
        q = qos_profile(qos)
        sub = Subscription(self, name, t, callback, q, raw)
        self._subscriptions.append(sub)
        sub._handle = self.context.create_subscription(self, name, t, q, sub._deliver)
        return sub

    def create_service(self, srv_type: str, name: str, callback: Callable, qos: Any = 10, *,
                       deferred: bool = False) -> Service:
        """callback(request, response) -> response, on the executor thread. ``deferred=True``:
        callback(request, response, respond) returns nothing and calls ``respond(response)``
        once, later if need be (from the executor thread), to answer."""
        t = msgs.normalize(srv_type)
        full = self.resolve_topic_name(name, "service")
        q = qos_profile(qos)
        srv = Service(self, t, full, callback, q, deferred)
        srv._handle = self.context.create_service(self, full, t, q, srv._on_request)
        self._services.append(srv)
        return srv

    def create_client(self, srv_type: str, name: str, qos: Any = 10) -> Client:
        t = msgs.normalize(srv_type)
        msgs.srv_types(t)
        full = self.resolve_topic_name(name, "service")
        q = qos_profile(qos)
        raw = self.context.create_client(self, full, t, q)
        cli = Client(self, t, full, raw, q)
        self._clients.append(cli)
        return cli

    def create_timer(self, period_s: float, callback: Callable[[], None], clock: Optional[Clock] = None) -> Timer:
        """callback() every period_s seconds of the node's clock (sim time if use_sim_time)."""
        t = Timer(self.context.executor, float(period_s), callback, clock or self._clock, owner=self)
        self._timers.append(t)
        return self.context.executor.add_timer(t)

    def destroy_timer(self, t: Timer) -> None:
        self.context.executor.remove_timer(t)
        if t in self._timers:
            self._timers.remove(t)

    def destroy_publisher(self, p: Publisher) -> None:
        p.destroy()

    def destroy_subscription(self, s: Subscription) -> None:
        s.destroy()

    def destroy_service(self, s: Service) -> None:
        s.destroy()

    def destroy_client(self, c: Client) -> None:
        c.destroy()

    # ---- clock / logger
    def get_clock(self) -> Clock:
        return self._clock

    def _on_clock(self, msg) -> None:
        self._clock.set_ns(Time.from_msg(msg.clock).nanoseconds)

    def get_logger(self) -> NodeLogger:
        return self._logger

    _ROS_LEVELS = {logging.DEBUG: 10, logging.INFO: 20, logging.WARNING: 30, logging.ERROR: 40,
                   logging.CRITICAL: 50}

    def _to_rosout(self, level: int, text: str, child: str = "", **where) -> None:
        """rcl_interfaces/Log on /rosout (as rcl: name = node fqn without the leading '/',
        '/' -> '.'; a child logger ``child`` appends ``.child``; ``where``: file, function,
        line). Never raises, never recurses."""
        if getattr(self._rosout_busy, "on", False) or self._destroyed_flag():
            return
        self._rosout_busy.on = True
        try:
            name = self._fqn.lstrip("/").replace("/", ".") + (f".{child}" if child else "")
            self._rosout.publish(msgs.new("rcl_interfaces/msg/Log", stamp=self._clock.now().to_msg(),
                                          level=self._ROS_LEVELS.get(level, 20),
                                          name=name, msg=text, **where))
        except Exception:  # noqa: BLE001  (a log line must never break the node)
            pass
        finally:
            self._rosout_busy.on = False

    def _destroyed_flag(self) -> bool:
        return getattr(self, "_destroyed", False)

    # ---- parameters
    def declare_parameter(self, name: str, default: Any = None, descriptor: Any = None,
                          ignore_override: bool = False,
                          on_set: Optional[Callable[[Any], Optional[str]]] = None) -> Parameter:
        """Declare with a default; an override (parameters=, params file, -p) replaces it.
        descriptor: dict/ParameterDescriptor with type, range=(lo, hi[, step]), gt, lt, values,
        read_only, description; or a config key ("teleop.loop.base_rate_hz": type, range and
        description from its declaration in the owning package's parameters.yaml). Type from the default when not given. Raises
        ParameterError (wrong type, out of range, already declared).

        A set at run time is never "successful" without effect: a parameter is **read-only**
        (applied at startup; a set is refused with the reason, restart with ``-p`` to change it)
        unless ``on_set`` is given. ``on_set(value)`` applies a new value (already checked for
        type and range) to the running node and returns None, or returns / raises (ValueError)
        the reason it refuses it; the parameter keeps its old value then."""
        if not isinstance(name, str) or not name:
            raise ParameterError(f"invalid parameter name {name!r}")
        if name in self._params:
            raise ParameterError(f"parameter '{name}' is already declared on {self._fqn}")
        desc = ParameterDescriptor.coerce(descriptor)
        if on_set is None and not desc.read_only:
            desc = dataclasses.replace(desc, read_only=True)
        elif on_set is not None:
            self._param_appliers[name] = on_set
        if desc.type is None and default is not None:
            desc.type = param_type_of(default)
        value = default
        if not ignore_override and name in self._overrides:
            value = self._overrides[name]
        if value is not None:
            try:
                value = check_value(name, value, desc)
            except ParameterError as e:
                src = "override" if value is not default else "default"
                raise ParameterError(f"{self._fqn}: {e} ({src})") from None
        p = Parameter(name, value, (param_type_of(value) if desc.dynamic_typing and value is not None
                                    else desc.type or ""))
        self._params[name] = p
        self._descriptors[name] = desc
        if self._param_services is not None:
            self._param_services.event(new=[p])
        return p

    def report_parameter_value(self, name: str, value: Any) -> None:
        """The value a declared parameter resolved to at run time, where the declared one stands for
        "choose" (``teleop.vr.port`` 0 = any free port -> the port bound): ``param get`` answers it
        and a parameter event says it; nothing is applied (the node reports what it did)."""
        old = self.get_parameter(name)
        new = Parameter(name, value, old.type_ or param_type_of(value))
        self._params[name] = new
        if self._param_services is not None:
            self._param_services.event(changed=[new])

    def declare_parameters(self, namespace: str, parameters: list) -> list[Parameter]:
        out = []
        for item in parameters:
            n, *rest = item
            full = f"{namespace}.{n}" if namespace else n
            out.append(self.declare_parameter(full, *rest))
        return out

    def has_parameter(self, name: str) -> bool:
        return name in self._params

    def get_parameter(self, name: str) -> Parameter:
        try:
            return self._params[name]
        except KeyError:
            raise ParameterNotDeclaredError(f"parameter '{name}' is not declared on {self._fqn}") from None

    def get_parameter_or(self, name: str, alternative: Any = None) -> Parameter:
        return self._params.get(name, Parameter(name, alternative))

    def get_parameters(self, names: list[str]) -> list[Parameter]:
        return [self.get_parameter(n) for n in names]

    def get_parameter_descriptor(self, name: str) -> ParameterDescriptor:
        self.get_parameter(name)
        return self._descriptors[name]

    def add_on_set_parameters_callback(self, fn: Callable[[list[Parameter]], SetParametersResult]) -> None:
        self._param_callbacks.append(fn)

    def set_parameters(self, params: list[Parameter]) -> list[SetParametersResult]:
        return [self._set_one(p) for p in params]

    def set_parameter(self, name: str, value: Any) -> SetParametersResult:
        return self._set_one(Parameter(name, value))

    def record_parameter(self, name: str, value: Any) -> None:
        """The value of a settable parameter (declared with ``on_set``) that the node has already
        applied by another input (a topic, a service): stored without calling its applier, so
        ``get_parameters`` returns what runs, and announced on ``/parameter_events``.
        ParameterError when the value does not fit the declaration (nothing stored)."""
        if name not in self._param_appliers:
            raise ParameterError(f"parameter '{name}' is not settable at run time on {self._fqn}")
        desc = self._descriptors[name]
        value = check_value(name, value, desc)
        if value == self._params[name].value:
            return
        new = Parameter(name, value, param_type_of(value) if desc.dynamic_typing else (desc.type or param_type_of(value)))
        self._params[name] = new
        if self._param_services is not None:
            self._param_services.event(changed=[new])

    def _set_one(self, p: Parameter) -> SetParametersResult:
        if p.name not in self._params:
            return SetParametersResult(False, f"parameter '{p.name}' is not declared")
        desc = self._descriptors[p.name]
        if desc.read_only:
            try:
                same = bool(check_value(p.name, p.value, desc) == self._params[p.name].value)
            except (ParameterError, TypeError, ValueError):
                same = False
            if same:                         # its current value: nothing to apply (param load of a dump)
                return SetParametersResult(True)
            return SetParametersResult(False, f"parameter '{p.name}' is read-only: applied at startup only "
                                              f"(restart {self._fqn} with -p {p.name}:=<value> to change it)")
        try:
            value = check_value(p.name, p.value, desc)
        except ParameterError as e:
            return SetParametersResult(False, str(e))
        new = Parameter(p.name, value, param_type_of(value) if desc.dynamic_typing else (desc.type or param_type_of(value)))
        for cb in self._param_callbacks:
            r = cb([new])
            if r is not None and not r.successful:
                return r
        apply = self._param_appliers.get(p.name)
        if apply is not None:
            try:
                refused = apply(value)
            except (ValueError, TypeError, OSError) as e:
                refused = str(e) or type(e).__name__
            if refused:
                return SetParametersResult(False, f"{p.name}: {refused}")
        self._params[p.name] = new
        if self._param_services is not None:
            self._param_services.event(changed=[new])
        return SetParametersResult(True)

    # ---- life cycle
    def destroy_node(self) -> None:
        """Destroy every entity of the node. Holds the executor's run lock while it does (as
        rclpy destroys a node between callbacks): a callback running on a delivering thread
        finishes first, and none starts before the node's subscriptions and timers are gone, so
        no callback ever publishes on a destroyed publisher. From inside a callback (the lock is
        this thread's already), or when a callback does not end within ``DESTROY_WAIT_S``, it
        destroys without waiting."""
        if self._destroyed:
            return
        self._destroyed = True
        self._logger.sink = None
        ex = getattr(self.context, "executor", None)
        lock = getattr(ex, "run_lock", None)
        held = False
        if lock is not None and getattr(ex, "callback_thread", None) != threading.get_ident():
            held = lock.acquire(timeout=self.DESTROY_WAIT_S)
        try:
            for t in list(self._timers):
                self.destroy_timer(t)
            for c in list(self._clients):
                c.destroy()
            for s in list(self._services):
                s.destroy()
            for s in list(self._subscriptions):
                s.destroy()
            for p in list(self._publishers):
                p.destroy()
        finally:
            if held:
                lock.release()
        self.context.remove_node(self)

    DESTROY_WAIT_S = 2.0      # the longest a destroy waits for a running callback to end


def _setup_logging(level: Optional[str]) -> None:
    """Configure logging only for a process nobody configured yet (a node executable); an
    embedding program (or pytest) keeps its own root level and handlers."""
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(stream=sys.stderr, format="[%(levelname)s] [%(created).3f] %(message)s")
        root.setLevel((level or "INFO").upper())


def _stop_deadline(timeout_s: float) -> None:
    """A node process that is stopping gets ``timeout_s`` (``runtime.node.stop_timeout_s``) to end:
    then faulthandler's own thread (no GIL needed) prints the stack of every thread and exits with
    code 1. A shutdown stuck in a C call that holds the GIL (seen: rclpy's ``destroy_when_not_in_use``
    spinning at 95 % of a core) runs no Python signal handler, so neither a launcher's SIGTERM nor
    the PDEATHSIG of a killed launcher would end it; only SIGKILL would."""
    faulthandler.dump_traceback_later(timeout_s, exit=True)


def _process_exit(rc: int, as_process: bool) -> int:
    """A node executable (``main()`` with no argv) that fails ends its process with ``rc`` even when
    its ``main`` drops the return value of run_node (a console script then exits 0)."""
    if as_process and rc != 0:
        errors.exit_process(rc)
    return rc


def _package_of(node_class) -> str:
    """The workspace package a node class comes from (its module's top level, e.g. hri_pulse)."""
    return (getattr(node_class, "__module__", "") or "hri_runtime").split(".")[0]


def run_node(node_class: Callable[..., Node], argv: Optional[list[str]] = None,
             context: Optional[Context] = None) -> int:
    """Parse the ``--ros-args`` subset, build the node on the default context (HRI_TRANSPORT),
    spin until SIGINT/SIGTERM, destroy cleanly. Returns the exit code (2 on bad arguments,
    parameters or names, with one clear line on stderr instead of a traceback)."""
    as_process = argv is None  # the node executable's main: the exit code ends the process
    argv = list(sys.argv[1:] if argv is None else argv)
    holder: dict = {"stop_timeout_s": RuntimeNodeParams.defaults().stop_timeout_s}

    def on_signal(signum, _frame):
        # installed before anything else (the context's import of rclpy/zenoh takes a while): a
        # Ctrl-C during start-up is a clean stop too (hri_runtime.signals). The first signal lets
        # a node under construction finish (then it stops); a second one (a launcher's SIGTERM
        # after its timeout) aborts the construction: exit 0 all the same, never a traceback
        again = "signal" in holder
        holder.setdefault("signal", signum)
        if as_process and not again:
            # stopping: from now on a launcher's SIGTERM also prints every thread's stack at the C
            # level, even while the main thread is blocked inside a C call (then this handler cannot run)
            faulthandler.register(signal.SIGTERM, all_threads=True, chain=True)
            _stop_deadline(holder["stop_timeout_s"])
        n, c = holder.get("node"), holder.get("ctx")
        (n.get_logger().info if n is not None else log.info)(f"signal {signum}: shutting down")
        if c is not None:
            c.shutdown()
        if again and holder.get("building"):
            holder["building"] = False
            raise KeyboardInterrupt
        if again and signum == signal.SIGTERM:      # a launcher's escalation: still stopping (the stacks
            log.warning("a second signal while stopping: the stack of every thread is on stderr")  # above)

    old = {}
    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGINT, signal.SIGTERM):
            old[s] = signal.signal(s, on_signal)
    if as_process and signals.requested():
        holder["signal"] = signals.requested()      # caught by signals.node_main while importing

    def restore() -> None:
        # A node executable is exiting: a second Ctrl-C (a terminal's, plus the one `ros2 launch`
        # forwards) or a launcher's SIGTERM must neither raise KeyboardInterrupt in interpreter-exit
        # joins nor kill it there (Python resets its own handlers to the default while it
        # finalizes, not an ignored signal): it is stopping already. In-process callers (tests,
        # `hri` subcommands) get their handlers back.
        if as_process:
            if threading.current_thread() is threading.main_thread():
                faulthandler.unregister(signal.SIGTERM)
                for s in old:
                    signal.signal(s, signal.SIG_IGN)
                # a launcher's SIGTERM while the exit is stuck (a thread the interpreter joins)
                # prints every thread's stack to stderr; the launcher's SIGKILL then ends it
                faulthandler.register(signal.SIGTERM, all_threads=True)
            return
        for s, h in old.items():
            signal.signal(s, h)

    try:
        args = parse_ros_args(argv)
        if STOP_TIMEOUT in args.params:    # -p runtime.node.stop_timeout_s:=... (checked as declared)
            holder["stop_timeout_s"] = RuntimeNodeParams(stop_timeout_s=args.params[STOP_TIMEOUT]).stop_timeout_s
    except ValueError as e:
        restore()
        print(f"error: {errors.one_line(e)}", file=sys.stderr)
        return _process_exit(errors.EXIT_USAGE, as_process)
    _setup_logging(args.log_level)
    if "signal" in holder:
        restore()
        return 0
    try:
        ctx = context if context is not None else get_default_context()
    except Exception as e:
        restore()
        if not errors.is_input_error(e):
            raise
        print(f"error: {errors.one_line(e)}", file=sys.stderr)
        return _process_exit(errors.EXIT_USAGE, as_process)
    ctx.ros_args = args
    holder["ctx"] = ctx

    def close_context() -> None:
        # on_signal stays installed while the context closes: a signal only repeats the shutdown
        try:
            ctx.shutdown()
        finally:
            ctx.close()

    if "signal" in holder:      # stopped while the context was being made: nothing to build
        close_context()
        restore()
        return 0
    try:
        holder["building"] = True
        node = node_class(context=ctx)
        holder["building"] = False
    except BaseException as e:  # noqa: BLE001 - every start-up failure closes the context
        holder["building"] = False
        try:
            close_context()
        except Exception:  # noqa: BLE001
            log.debug("closing the context after a failed start-up", exc_info=True)
        restore()
        if isinstance(e, KeyboardInterrupt) or "signal" in holder:
            return 0        # stopped during start-up (the context shut down under the node's constructor)
        if not isinstance(e, Exception):
            raise
        if errors.is_input_error(e):
            # a config error, a bad parameter or name, a busy port: one line, exit 2 (hri_runtime.errors)
            print(f"error: {errors.one_line(e)}", file=sys.stderr, flush=True)
            return _process_exit(errors.EXIT_USAGE, as_process)
        # a bug: the traceback, after the context is closed (rclpy aborts the process otherwise)
        log.error("%s: start-up failed", getattr(node_class, "__name__", "node"), exc_info=e)
        return _process_exit(errors.EXIT_FAILURE, as_process)
    holder["node"] = node
    rosout_handler = RosoutHandler(node)
    logging.getLogger().addHandler(rosout_handler)
    # the start-up line of every node process: what runs (hri_runtime.provenance)
    node.get_logger().info("started: " + provenance.line(_package_of(node_class)))
    try:
        if ctx.ok():
            ctx.spin()
    except KeyboardInterrupt:
        pass
    finally:
        if as_process and "signal" not in holder:
            _stop_deadline(holder["stop_timeout_s"])    # the spin ended without a signal: stopping all the same
        logging.getLogger().removeHandler(rosout_handler)
        try:
            try:
                c = node.loop_counters()
                per_topic = {}
                for sub in node._subscriptions:
                    if getattr(sub, "dropped", 0):
                        per_topic[sub.topic_name] = per_topic.get(sub.topic_name, 0) + sub.dropped
                node.get_logger().info("loop counters: " + ", ".join(f"{k} {v}" for k, v in c.items())
                                       + ("; dropped per topic: " + ", ".join(f"{t} {n}" for t, n in per_topic.items())
                                          if per_topic else ""))
            finally:
                node.destroy_node()
        finally:
            close_context()
            restore()
    return 0
