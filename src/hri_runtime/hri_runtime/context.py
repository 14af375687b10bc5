"""Backend interface (``Context``, ``ThreadedContext``), the graph and the default context.

The executor every backend shares is ``hri_runtime.executors``; QoS is ``hri_runtime.qos``.

What a backend implements (subclass ``ThreadedContext`` for a real transport such as Zenoh or
rclpy: it brings the executor thread, wall-clock timers, spin/shutdown; the backend only moves
bytes). Every payload is CDR bytes with the 4-byte header (``hri_runtime.msgs``); the Node layer
serializes and deserializes, the backend never sees a message object.

    class MyContext(ThreadedContext):
        kind = "zenoh"
        def create_publisher(self, node, topic, type_name, qos) -> RawPublisher
            # topic: fully qualified, remapped ('/ns/chatter'); type_name 'pkg/msg/T'
            # returns an object with .publish(data: bytes) and .destroy()
            #   (optionally .get_subscription_count() -> int, and
            #   .publish_messages(serialize, type_name) -> publish(msg or bytes): serialize and
            #   put in one call, .published counting its puts)
        def create_subscription(self, node, topic, type_name, qos, deliver) -> Handle
            # call deliver(data: bytes, meta: dict | None) for every sample, from ANY thread
            # (it queues: keep-last depth and the callback run on the executor thread; with
            # inline_callbacks it may run the callback right there, see "Threads" below).
            # Handle has .destroy()
        def create_service(self, node, name, srv_type, qos, on_request) -> Handle
            # srv_type 'pkg/srv/X'; for every request call on_request(data: bytes, respond)
            # from any thread; respond(response_data: bytes) is called later (from the
            # executor thread) exactly once, or never if the request was malformed.
        def create_client(self, node, name, srv_type, qos) -> RawClient
            # .call(data, on_response, on_error): send request bytes; later call
            #   on_response(response_bytes) or on_error(exception), from any thread.
            # .service_is_ready() -> bool, .destroy()
        # optional overrides:
        def now_s(self) -> float            # ROS time of the backend (default wall time)
        def add_node(self, node) / remove_node(self, node)   # e.g. liveliness tokens
        def graph(self) -> Graph            # node names, topics and types (hri node/topic list)
        def close(self)                     # release the session (after shutdown)

``Context`` attributes every backend has: ``executor`` (an ``Executor``), ``ros_args``
(``params.RosArgs`` applied to every node created on it, as rclpy's context arguments),
``nodes`` (list), ``rosout_enabled`` (nodes publish their log lines on /rosout) and
``parameter_services_enabled`` (the six rcl parameter services + /parameter_events, for
``ros2 param``); both False on InprocContext. Everything a backend hands over goes through
``deliver``/``on_request``/``on_response``, which queue work for the executor.

Threads (decision, docs/ros2-interop.md "Callback threads"): the guarantee is ROS 2's, not
"one particular thread": callbacks of one context (all its nodes; rclpy's default mutually
exclusive callback group) never run concurrently, and the messages of one subscription are
handled in arrival order. ``ThreadedContext`` runs every callback while holding
``Executor.run_lock``. A backend with ``inline_callbacks = True`` (Zenoh, config
``runtime.zenoh.inline_callbacks``, default on) lets ``deliver`` run the subscription callback
directly on the transport thread when the executor is spinning and idle (nothing queued, no
callback running), which saves a thread handoff per message;
otherwise the item is queued and the executor thread runs it. Timers, service handlers,
responses and done callbacks always run on the executor thread. A blocking ``call()`` from any
callback (inline or not) is refused (``RuntimeError``: it would deadlock). InprocContext is
unaffected (no threads).

Selection (``get_default_context``): ``HRI_TRANSPORT=auto|rclpy|zenoh|inproc``; auto = rclpy
if importable, else zenoh. Backends are imported lazily: ``hri_runtime.impl.zenoh_backend.ZenohContext``
and ``hri_runtime.impl.rclpy_backend.RclpyContext``.
"""
from __future__ import annotations

import logging
import os
import threading
import time
import traceback
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from hri_runtime.executors import Executor
from hri_runtime.parameter import RosArgs
from hri_runtime.qos import QoSProfile
from hri_runtime.signals import StopFlag

__all__ = ["Context", "ThreadedContext", "Graph", "GraphEndpoint", "get_default_context",
           "set_default_context", "reset_default_context", "make_context", "transport_name",
           "TransportUnavailableError"]

log = logging.getLogger("hri.runtime")


# --------------------------------------------------------------------------- graph

@dataclass(frozen=True)
class GraphEndpoint:
    """One publisher / subscription / service / client of the graph with its QoS (``hri topic
    info -v``, QoS matching of ``hri topic echo``). ``qos``: an object with reliability,
    durability, history, depth (and optional deadline_s/lifespan_s/liveliness_lease_s)."""
    kind: str                       # PUBLISHER | SUBSCRIPTION | SERVICE | CLIENT
    name: str                       # topic / service, fully qualified
    type_name: str
    node_fqn: str
    qos: Any = None
    gid: Optional[bytes] = None
    type_hash: Optional[str] = None


@dataclass
class Graph:
    nodes: list[str] = field(default_factory=list)                       # fully qualified
    topics: dict[str, set] = field(default_factory=dict)                 # fqn -> {types}
    services: dict[str, set] = field(default_factory=dict)
    publishers: dict[str, list[str]] = field(default_factory=dict)       # topic -> [node fqn]
    subscribers: dict[str, list[str]] = field(default_factory=dict)
    endpoints: list[GraphEndpoint] = field(default_factory=list)        # every endpoint with QoS


# --------------------------------------------------------------------------- interface

class TransportUnavailableError(RuntimeError):
    """The selected backend cannot be used (module missing, rclpy not installed, ...)."""


class Context(ABC):
    """Backend interface: see the module docstring for what a backend must implement."""

    kind = "abstract"
    rosout_enabled = True
    parameter_services_enabled = True

    def __init__(self) -> None:
        self.ros_args = RosArgs()
        self.nodes: list = []
        self._shutdown = StopFlag()     # shutdown() runs in a node's signal handler too: no lock
        self.executor = self._make_executor()

    # ---- executor / life cycle (ThreadedContext and InprocContext implement these)
    @abstractmethod
    def _make_executor(self) -> Executor: ...

    @abstractmethod
    def spin(self, timeout_s: Optional[float] = None) -> None:
        """Run callbacks until shutdown() (or for timeout_s)."""

    @abstractmethod
    def wait_future(self, future, timeout_s: Optional[float]) -> bool:
        """Block until future is done (inproc: spin; threaded: wait). True if done."""

    def shutdown(self) -> None:
        self._shutdown.set()
        self.executor.wake()

    def ok(self) -> bool:
        return not self._shutdown.is_set()

    def close(self) -> None:
        """Release transport resources (after shutdown)."""

    # ---- clock
    def now_s(self) -> float:
        return time.time()

    # ---- graph bookkeeping
    def add_node(self, node) -> None:
        self.nodes.append(node)

    def remove_node(self, node) -> None:
        if node in self.nodes:
            self.nodes.remove(node)

    def graph(self) -> Graph:
        """Local graph (this process); network backends override with discovery."""
        g = Graph()
        for n in self.nodes:
            fqn = n.get_fully_qualified_name()
            g.nodes.append(fqn)
            for p in n._publishers:
                g.topics.setdefault(p.topic_name, set()).add(p.msg_type)
                g.publishers.setdefault(p.topic_name, []).append(fqn)
                g.endpoints.append(GraphEndpoint("PUBLISHER", p.topic_name, p.msg_type, fqn, p.qos))
            for s in n._subscriptions:
                g.topics.setdefault(s.topic_name, set()).add(s.msg_type)
                g.subscribers.setdefault(s.topic_name, []).append(fqn)
                g.endpoints.append(GraphEndpoint("SUBSCRIPTION", s.topic_name, s.msg_type, fqn, s.qos))
            for s in n._services:
                g.services.setdefault(s.srv_name, set()).add(s.srv_type)
                g.endpoints.append(GraphEndpoint("SERVICE", s.srv_name, s.srv_type, fqn, s.qos))
            for c in getattr(n, "_clients", []):
                g.endpoints.append(GraphEndpoint("CLIENT", c.srv_name, c.srv_type, fqn, c.qos))
        return g

    # ---- transport (bytes only)
    @abstractmethod
    def create_publisher(self, node, topic: str, type_name: str, qos: QoSProfile): ...

    @abstractmethod
    def create_subscription(self, node, topic: str, type_name: str, qos: QoSProfile,
                            deliver: Callable[[bytes, Optional[dict]], None]): ...

    @abstractmethod
    def create_service(self, node, name: str, srv_type: str, qos: QoSProfile,
                       on_request: Callable[[bytes, Callable[[bytes], None]], None]): ...

    @abstractmethod
    def create_client(self, node, name: str, srv_type: str, qos: QoSProfile): ...


class ThreadedContext(Context):
    """Base of real-transport backends: one executor thread (the one calling ``spin``, or the
    background thread of ``spin_in_background``); wall-clock timers; sim-clock timers fire when
    /clock messages advance the node clock. A user callback that raises is logged with its
    traceback and counted (``callback_errors``); the executor keeps running."""

    kind = "threaded"
    max_wait_s = 0.1   # longest sleep between checks of the shutdown flag
    inline_callbacks = False   # Executor.inline: run idle-time subscription callbacks on the transport thread

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._kick = False
        self.callback_errors = 0
        super().__init__()
        self._bg: Optional[threading.Thread] = None

    def _make_executor(self) -> Executor:
        ex = Executor(wake=self._notify, on_error=self._on_error)
        ex.inline = self.inline_callbacks
        ex.late_timers_first = True       # wall clock: a message flood never starves a timer
        return ex

    def _notify(self) -> None:
        with self._cond:
            self._kick = True
            self._cond.notify_all()

    def _on_error(self, exc: BaseException, where: str) -> None:
        self.callback_errors += 1
        log.error("exception in %s (executor keeps running):\n%s", where,
                  "".join(traceback.format_exception(exc)))

    def spin(self, timeout_s: Optional[float] = None) -> None:
        ex = self.executor
        me = threading.get_ident()
        if ex.thread_id not in (None, me):
            raise RuntimeError("this context is already spinning on another thread")
        ex.thread_id = me
        end = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            while self.ok():
                if end is not None and time.monotonic() >= end:
                    return
                if ex.run_one():
                    continue
                dl = ex.next_deadline_ns()
                wait = self.max_wait_s
                if dl is not None:
                    wait = min(wait, max(0.0, dl * 1e-9 - self.now_s()))
                if end is not None:
                    wait = min(wait, max(0.0, end - time.monotonic()))
                with self._cond:
                    if not self._kick and wait > 0:
                        self._cond.wait(wait)
                    self._kick = False
        finally:
            ex.thread_id = None

    def spin_in_background(self) -> threading.Thread:
        """Start the executor on a daemon thread (for CLIs and tests that block elsewhere)."""
        if self._bg is None or not self._bg.is_alive():
            self._bg = threading.Thread(target=self.spin, name=f"hri-{self.kind}-executor", daemon=True)
            self._bg.start()
        return self._bg

    def shutdown(self) -> None:
        super().shutdown()
        self._notify()
        me = threading.get_ident()
        if (self._bg is not None and self._bg.is_alive() and me != self._bg.ident
                and self.executor.callback_thread != me):     # not from a (inline) callback
            self._bg.join(timeout=2.0)

    def wait_future(self, future, timeout_s: Optional[float]) -> bool:
        tid = self.executor.thread_id
        if tid == threading.get_ident() or self.executor.callback_thread == threading.get_ident():
            raise RuntimeError("call() from a callback would deadlock the executor; "
                               "use call_async() and a done callback")
        if tid is not None:          # another thread spins: just wait
            return future.wait(timeout_s)
        end = None if timeout_s is None else time.monotonic() + timeout_s
        while not future.done() and self.ok():   # nobody spins: spin here until done
            rem = None if end is None else end - time.monotonic()
            if rem is not None and rem <= 0:
                break
            self.spin(timeout_s=self.max_wait_s if rem is None else min(self.max_wait_s, rem))
        return future.done()


# --------------------------------------------------------------------------- selection

_default: Optional[Context] = None
_default_lock = threading.Lock()

BACKENDS = {
    "zenoh": ("hri_runtime.impl.zenoh_backend", "ZenohContext"),
    "rclpy": ("hri_runtime.impl.rclpy_backend", "RclpyContext"),
    "inproc": ("hri_runtime.inproc", "InprocContext"),
}


def transport_name(env: Optional[dict] = None) -> str:
    """HRI_TRANSPORT resolved: auto -> rclpy if importable, else zenoh."""
    import importlib.util

    env = os.environ if env is None else env
    t = (env.get("HRI_TRANSPORT") or "auto").strip().lower()
    if t not in ("auto", *BACKENDS):
        raise TransportUnavailableError(
            f"HRI_TRANSPORT={t!r} is not one of auto|rclpy|zenoh|inproc")
    if t == "auto":
        t = "rclpy" if importlib.util.find_spec("rclpy") is not None else "zenoh"
    return t


def make_context(kind: Optional[str] = None) -> Context:
    import importlib

    kind = kind or transport_name()
    mod_name, cls_name = BACKENDS[kind]
    try:
        mod = importlib.import_module(mod_name)
    except ModuleNotFoundError as e:
        if e.name == mod_name:
            raise TransportUnavailableError(
                f"HRI_TRANSPORT={kind}: backend module {mod_name} does not exist yet "
                f"(set HRI_TRANSPORT=inproc for a single process)") from None
        raise TransportUnavailableError(f"HRI_TRANSPORT={kind}: {e}") from e
    return getattr(mod, cls_name)()


def get_default_context() -> Context:
    """The process-wide context of the selected backend (created on first use)."""
    global _default
    with _default_lock:
        if _default is None or not _default.ok():
            _default = make_context()
        return _default


def set_default_context(ctx: Optional[Context]) -> None:
    global _default
    with _default_lock:
        _default = ctx


def reset_default_context() -> None:
    set_default_context(None)
