"""rclpy backend of hri_runtime: the same node code on a real ROS 2 install (run on Jazzy).

Without ROS only its lazy import and its refusal are tested
(``tests/runtime/test_runtime_zenoh_backends.py``); ``make ros2-ci`` (CI) runs the end-to-end
tests ``tests/ros2/`` on it with ROS 2 Jazzy from PyPI's ros-jazzy-* wheels (rclpy,
rmw_fastrtps_cpp), ``make ros2-test`` on a sourced ROS 2. It needs rclpy and the generated
Python packages of the message types only (no rosidl_runtime_py: ``interface_class``).
docs/ros2-interop.md says what is proven where.

Design: the backend only moves CDR bytes, so hri_runtime.msgs (rosbags) is the one codec on every
backend and rclpy's generated message classes are used only to tell rmw the type:

* publisher: ``rclpy`` publisher of the type's class; ``publish(bytes)`` (rclpy publishes a
  ``bytes`` argument as a serialized message, rclpy/publisher.py ``publish_raw``);
* subscription: ``create_subscription(..., raw=True)``: the callback gets the serialized bytes
  (with the 4-byte CDR header, as hri_runtime.msgs expects) and only queues them (``deliver``);
* service: rclpy has no raw services, so a request (an rclpy message) is turned into our CDR
  (``_cdr_of``: its fields, then hri_runtime.msgs) and handed to the node's executor; the rclpy
  callback (in a reentrant group, run on the executor's service pool: ``_executor_class``) waits
  for the response bytes, deserializes them into the response class and returns it;
* client: request bytes -> ``deserialize_message`` -> ``call_async``; the result goes back to
  bytes for the node layer the same way.

``rclpy.serialization.serialize_message`` is not used for that: on rmw_fastrtps_cpp its buffer
is as long as Fast CDR's size estimate (up to 8 bytes past the message), which our decoder
refuses as trailing bytes; walking the fields gives the exact CDR on every rmw.

Threads: rclpy's executor spins on a background thread and only hands bytes over; the node's
callbacks run on the one executor thread of ``ThreadedContext`` (as on the Zenoh backend).
Names arrive fully qualified and remapped by the node layer, so rclpy is initialised without the
process' ``--ros-args`` (they would be applied twice).
"""
from __future__ import annotations

import atexit
import functools
import importlib
import logging
import os
import threading
import time
import weakref
from typing import Callable, Optional

from hri_runtime.context import Graph, GraphEndpoint, ThreadedContext, TransportUnavailableError
from hri_runtime.qos import QoSProfile, qos_profile

log = logging.getLogger("hri.runtime.rclpy")

__all__ = ["RclpyContext", "get_message", "get_service", "interface_class"]


def _import_rclpy():
    try:
        import rclpy
        import rclpy.context
        import rclpy.executors
        import rclpy.qos
        import rclpy.serialization
        from rclpy.callback_groups import ReentrantCallbackGroup
    except ImportError as e:
        raise TransportUnavailableError(
            "HRI_TRANSPORT=rclpy needs a ROS 2 installation (source /opt/ros/<distro>/setup.bash); "
            f"rclpy is not importable here ({e}). Use HRI_TRANSPORT=zenoh without ROS.") from e
    return rclpy, get_message, get_service, ReentrantCallbackGroup


@functools.lru_cache(maxsize=None)
def _executor_class(rclpy):
    """The backend's rclpy executor (a class made once, when rclpy is first imported): rclpy's
    ``SingleThreadedExecutor``, except that a service's callback runs on a pool of
    ``workers`` threads.

    Every handler here only hands bytes over, except a service callback, which waits for the
    node's answer (a node's service may itself call a service, whose response this thread
    delivers). rclpy's ``MultiThreadedExecutor`` sends every ready callback to its pool. Per
    spin it then scans the list of every callback not yet finished. When the pool fell behind (its
    threads wait for the GIL), that list grew, and each scan cost more: a spiral. It was seen on
    ``tino_sim``: 92 % of a core while idle, its simulation starved, atomic's stall latched
    (docs/ros2-interop.md "The rclpy backend's executor"). Here a callback runs on this thread at
    once, which is what rclpy's single-threaded executor does."""
    from concurrent.futures import ThreadPoolExecutor

    from rclpy.executors import (ConditionReachedException, ExternalShutdownException, ShutdownException,
                                 TimeoutException)
    from rclpy.service import Service

    class _Executor(rclpy.executors.Executor):
        def __init__(self, *, context, workers: int):
            super().__init__(context=context)
            self._pool = ThreadPoolExecutor(workers, thread_name_prefix="hri-rclpy-service")

        def spin_once(self, timeout_sec: Optional[float] = None) -> None:
            try:
                handler, entity, _node = self.wait_for_ready_callbacks(timeout_sec=timeout_sec)
            except (ShutdownException, ExternalShutdownException, TimeoutException, ConditionReachedException):
                return
            if isinstance(entity, Service):
                self._pool.submit(handler)
                return
            handler()
            if handler.exception() is not None:
                raise handler.exception()

        def shutdown(self, timeout_sec: Optional[float] = None) -> bool:
            done = super().shutdown(timeout_sec)
            self._pool.shutdown(wait=False)
            return done

    return _Executor


def interface_class(type_name: str, kind: str):
    """The rosidl-generated Python class of ``<pkg>/<kind>/<Name>`` (or ``<pkg>/<Name>``), kind
    ``msg`` or ``srv``: what rosidl_runtime_py.utilities' get_message/get_service look up
    (rosidl_runtime_py is not needed for this, nor installed by every ROS 2 distribution of rclpy)."""
    parts = type_name.split("/")
    if len(parts) == 3 and parts[1] == kind:
        pkg, name = parts[0], parts[2]
    elif len(parts) == 2:
        pkg, name = parts
    else:
        raise ValueError(f"invalid {kind} type name '{type_name}' (expected <pkg>/{kind}/<Name>)")
    try:
        module = importlib.import_module(f"{pkg}.{kind}")
    except ModuleNotFoundError as e:
        raise ValueError(f"{kind} type '{type_name}': package '{pkg}' has no generated Python {kind} "
                         f"module ({e}); is it built and on the path?") from e
    cls = getattr(module, name, None)
    if cls is None:
        raise ValueError(f"{kind} type '{type_name}': '{pkg}.{kind}' has no '{name}'")
    return cls


def get_message(type_name: str):
    return interface_class(type_name, "msg")


def get_service(type_name: str):
    return interface_class(type_name, "srv")


def _rclpy_qos(rclpy, qos: QoSProfile):
    q = rclpy.qos
    return q.QoSProfile(
        depth=int(qos.depth),
        history=q.HistoryPolicy.KEEP_ALL if qos.history == "keep_all" else q.HistoryPolicy.KEEP_LAST,
        reliability=(q.ReliabilityPolicy.BEST_EFFORT if qos.reliability == "best_effort"
                     else q.ReliabilityPolicy.RELIABLE),
        durability=(q.DurabilityPolicy.TRANSIENT_LOCAL if qos.durability == "transient_local"
                    else q.DurabilityPolicy.VOLATILE))


def _plain(value):
    """An rclpy message as plain data (dicts, lists, numbers, strings) for msgs.from_dict."""
    if hasattr(value, "get_fields_and_field_types"):
        return {k: _plain(getattr(value, k)) for k in value.get_fields_and_field_types()}
    if isinstance(value, (bytes, bytearray)):
        return list(value)
    if isinstance(value, (list, tuple)) or type(value).__name__ in ("ndarray", "array"):
        return [_plain(x) for x in value]
    return value


def _cdr_of(rclpy_msg, type_name: str) -> bytes:
    """Our CDR bytes of an rclpy message of ``type_name`` (exact on every rmw; module docstring)."""
    from hri_runtime import msgs

    return msgs.serialize(msgs.from_dict(type_name, _plain(rclpy_msg)), type_name)


class _Handle:
    def __init__(self, ctx: "RclpyContext", rcl_node, entity, destroy: Callable):
        self.ctx, self.rcl_node, self.entity, self._destroy = ctx, rcl_node, entity, destroy

    def destroy(self) -> None:
        self.ctx._rcl_quiesce()
        try:
            self._destroy(self.entity)
        except Exception:  # noqa: BLE001 - node already destroyed
            pass


class _RawPublisher(_Handle):
    def publish(self, data: bytes) -> None:
        self.entity.publish(bytes(data))

    def get_subscription_count(self) -> int:
        return int(self.entity.get_subscription_count())


class _RawClient(_Handle):
    def __init__(self, ctx, rcl_node, entity, srv_class, srv_type: str):
        super().__init__(ctx, rcl_node, entity, rcl_node.destroy_client)
        self.srv_class = srv_class
        self.response_type = f"{srv_type}_Response"

    def call(self, data: bytes, on_response, on_error) -> None:
        ser = self.ctx._rclpy.serialization
        try:
            req = ser.deserialize_message(bytes(data), self.srv_class.Request)
        except Exception as e:  # noqa: BLE001
            on_error(e)
            return
        fut = self.entity.call_async(req)

        def done(f) -> None:
            exc = f.exception()
            if exc is not None:
                on_error(exc)
            else:
                try:
                    data = _cdr_of(f.result(), self.response_type)
                except Exception as e:  # noqa: BLE001
                    on_error(e)
                    return
                on_response(data)

        fut.add_done_callback(done)

    def service_is_ready(self) -> bool:
        return bool(self.entity.service_is_ready())


class RclpyContext(ThreadedContext):
    """Backend on a real ROS 2 install (see module docstring)."""

    kind = "rclpy"

    def __init__(self, service_timeout_s: Optional[float] = None):
        rclpy, get_message, get_service, Reentrant = _import_rclpy()
        self._rclpy, self._get_message, self._get_service = rclpy, get_message, get_service
        self._group = Reentrant()
        self._rcl_ctx = rclpy.context.Context()
        rclpy.init(args=[], context=self._rcl_ctx)      # names are already resolved by hri
        self._rcl_exec = _executor_class(rclpy)(context=self._rcl_ctx, workers=max(2, os.cpu_count() or 2))
        self._rcl_nodes: dict[int, object] = {}
        self._lock = threading.Lock()
        self.service_timeout_s = service_timeout_s
        super().__init__()
        self._rcl_thread = threading.Thread(target=self._rcl_spin, name="hri-rclpy-spin", daemon=True)
        self._rcl_thread.start()
        self._closed = False
        # a context left open at interpreter exit makes rclpy abort the process ("terminate called
        # without an active exception"): close it then, if its owner did not
        atexit.register(_close_at_exit, weakref.ref(self))

    def _rcl_spin(self) -> None:
        from rclpy.exceptions import InvalidHandle

        while self._rclpy.ok(context=self._rcl_ctx) and self.ok():
            try:
                self._rcl_exec.spin_once(timeout_sec=self.max_wait_s)
            except InvalidHandle:
                # an entity destroyed while this wait set was being built (rclpy's executor
                # handles that when taking, not when adding a QoS event handler): the next
                # spin_once builds the wait set without it
                continue

    def _rcl_quiesce(self) -> None:
        """After shutdown(): wait until the spin thread has left rclpy's executor, so destroying an
        entity never races a wait set being built (a traceback in that thread at Ctrl-C)."""
        if not self.ok() and self._rcl_thread is not threading.current_thread():
            self._rcl_thread.join(timeout=2.0)

    def _rcl_node(self, node):
        with self._lock:
            n = self._rcl_nodes.get(id(node))
            if n is None:
                n = self._rclpy.create_node(node.get_name(), namespace=node.get_namespace(),
                                            context=self._rcl_ctx, use_global_arguments=False,
                                            start_parameter_services=False)
                self._rcl_exec.add_node(n)
                self._rcl_nodes[id(node)] = n
            return n

    def add_node(self, node) -> None:
        super().add_node(node)
        self._rcl_node(node)

    def remove_node(self, node) -> None:
        super().remove_node(node)
        with self._lock:
            n = self._rcl_nodes.pop(id(node), None)
        if n is not None:
            self._rcl_quiesce()
            self._rcl_exec.remove_node(n)
            n.destroy_node()

    # ---- transport
    def create_publisher(self, node, topic, type_name, qos):
        n = self._rcl_node(node)
        pub = n.create_publisher(self._get_message(type_name), topic,
                                 _rclpy_qos(self._rclpy, qos_profile(qos)))
        return _RawPublisher(self, n, pub, n.destroy_publisher)

    def create_subscription(self, node, topic, type_name, qos, deliver):
        n = self._rcl_node(node)
        sub = n.create_subscription(self._get_message(type_name), topic,
                                    lambda data: deliver(bytes(data), None),
                                    _rclpy_qos(self._rclpy, qos_profile(qos)), raw=True,
                                    callback_group=self._group)
        return _Handle(self, n, sub, n.destroy_subscription)

    def create_service(self, node, name, srv_type, qos, on_request):
        n = self._rcl_node(node)
        srv_class = self._get_service(srv_type)
        ser = self._rclpy.serialization

        def callback(request, response):
            box: dict = {}
            ev = threading.Event()

            def respond(data: bytes) -> None:
                box["data"] = data
                ev.set()

            on_request(_cdr_of(request, f"{srv_type}_Request"), respond)
            # the node answers, or drops a request it cannot take: bounded by service_timeout_s and
            # by the context's life (a waiting callback must not hold up the shutdown)
            end = None if self.service_timeout_s is None else time.monotonic() + self.service_timeout_s
            while not ev.wait(self.max_wait_s):
                if not self.ok() or (end is not None and time.monotonic() >= end):
                    break
            if "data" not in box:
                log.warning("service %s: no response from the node; returning the default", name)
                return response
            return ser.deserialize_message(box["data"], srv_class.Response)

        srv = n.create_service(srv_class, name, callback, qos_profile=_rclpy_qos(self._rclpy, qos_profile(qos)),
                               callback_group=self._group)
        return _Handle(self, n, srv, n.destroy_service)

    def create_client(self, node, name, srv_type, qos):
        n = self._rcl_node(node)
        srv_class = self._get_service(srv_type)
        cli = n.create_client(srv_class, name, qos_profile=_rclpy_qos(self._rclpy, qos_profile(qos)),
                              callback_group=self._group)
        return _RawClient(self, n, cli, srv_class, srv_type)

    # ---- graph / clock / life cycle
    def now_s(self) -> float:
        return time.time()

    def graph(self) -> Graph:
        with self._lock:
            nodes = list(self._rcl_nodes.values())
        g = Graph()
        if not nodes:
            return g
        n = nodes[0]
        for name, ns in n.get_node_names_and_namespaces():
            g.nodes.append(("" if ns == "/" else ns) + "/" + name)
        def endpoint(kind: str, topic: str, i) -> GraphEndpoint:
            try:
                qos = qos_profile(i.qos_profile)      # rmw enums -> our names; unknown -> None
            except ValueError:
                qos = None
            return GraphEndpoint(kind, topic, i.topic_type, i.node_namespace.rstrip("/") + "/" + i.node_name,
                                 qos, bytes(i.endpoint_gid))

        for topic, types in n.get_topic_names_and_types():
            g.topics[topic] = set(types)
            pubs = [endpoint("PUBLISHER", topic, i) for i in n.get_publishers_info_by_topic(topic)]
            subs = [endpoint("SUBSCRIPTION", topic, i) for i in n.get_subscriptions_info_by_topic(topic)]
            g.publishers[topic] = [e.node_fqn for e in pubs]
            g.subscribers[topic] = [e.node_fqn for e in subs]
            g.endpoints += pubs + subs
        for srv, types in n.get_service_names_and_types():
            g.services[srv] = set(types)
        return g

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.ok():
            self.shutdown()
        # the spin thread leaves its loop within max_wait_s of shutdown(); destroying nodes or the
        # executor under it aborts the process ("terminate called without an active exception")
        if self._rcl_thread is not threading.current_thread():
            self._rcl_thread.join()
        with self._lock:
            nodes = list(self._rcl_nodes.values())
            self._rcl_nodes.clear()
        for n in nodes:
            try:
                self._rcl_exec.remove_node(n)
                n.destroy_node()
            except Exception:  # noqa: BLE001
                pass
        self._rcl_exec.shutdown()
        self._rclpy.try_shutdown(context=self._rcl_ctx)


def _close_at_exit(ref) -> None:
    ctx = ref()
    if ctx is not None:
        try:
            ctx.close()
        except Exception:  # noqa: BLE001 - exiting anyway
            log.debug("closing the rclpy context at exit", exc_info=True)

