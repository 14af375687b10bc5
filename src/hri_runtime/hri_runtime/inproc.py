"""In-process backend: a deterministic executor with a fake clock, no threads.

    ctx = InprocContext(start_time_s=0.0)
    a, b = Talker(context=ctx), Listener(context=ctx)
    ctx.spin_for(1.0)      # advance the fake clock by 1 s: timers fire in time order,
                           # messages/requests/responses are delivered in FIFO order
    ctx.spin_once()        # run one ready callback (at the current time); False if none
    ctx.spin_until(lambda: b.got, timeout_s=2.0)

Semantics (the same as the network backends, minus the network):
- Every message crosses as CDR bytes (serialized on publish, deserialized on delivery).
- Matching: same fully qualified name; a publisher and subscription of different types do not
  match (counted in ``type_mismatches``), as in ROS.
- Keep-last depth per subscription: when more than ``depth`` messages wait, the oldest is dropped.
- TRANSIENT_LOCAL: a transient-local publisher keeps its last ``depth`` messages; a new
  transient-local subscription receives them on creation (volatile ones do not, as in DDS).
- Services: a request is handled by the server's callback on the next executor step; a call to
  a service without a server fails its future with ``ServiceUnavailableError``.
- Time: integer nanoseconds internally (no float drift over long runs); ``now_s()`` in seconds.
  spin_for(dt): repeat { run all ready work; advance the clock to the earliest timer deadline
  <= end; fire it }; then set the clock to end and run the ready work once more.
- A user callback that raises propagates out of spin_* (tests see the bug) unless
  ``raise_callback_errors=False`` (then it is logged and counted).
"""
from __future__ import annotations

import logging
import time
import traceback
from typing import Callable, Optional

from hri_runtime.context import Context, ThreadedContext
from hri_runtime.executors import Executor
from hri_runtime.qos import QoSProfile

__all__ = ["InprocContext", "ThreadedInprocContext"]

log = logging.getLogger("hri.runtime.inproc")


class _Pub:
    def __init__(self, ctx: "InprocContext", node, topic: str, type_name: str, qos: QoSProfile):
        self.ctx, self.node, self.topic, self.type_name, self.qos = ctx, node, topic, type_name, qos
        self.history: list[bytes] = []

    def publish(self, data: bytes) -> None:
        if self.qos.transient_local:
            self.history.append(data)
            if len(self.history) > max(1, self.qos.depth):
                del self.history[0]
        for sub in list(self.ctx._subs.get(self.topic, [])):
            if sub.type_name != self.type_name:
                self.ctx.type_mismatches += 1
                continue
            sub.deliver(data, None)

    def get_subscription_count(self) -> int:
        return sum(1 for s in self.ctx._subs.get(self.topic, []) if s.type_name == self.type_name)

    def destroy(self) -> None:
        lst = self.ctx._pubs.get(self.topic, [])
        if self in lst:
            lst.remove(self)


class _Sub:
    def __init__(self, ctx, node, topic, type_name, qos, deliver):
        self.ctx, self.node, self.topic, self.type_name, self.qos, self.deliver = \
            ctx, node, topic, type_name, qos, deliver

    def destroy(self) -> None:
        lst = self.ctx._subs.get(self.topic, [])
        if self in lst:
            lst.remove(self)


class _Srv:
    def __init__(self, ctx, node, name, srv_type, on_request):
        self.ctx, self.node, self.name, self.srv_type, self.on_request = ctx, node, name, srv_type, on_request

    def destroy(self) -> None:
        if self.ctx._srvs.get(self.name) is self:
            del self.ctx._srvs[self.name]


class _Cli:
    def __init__(self, ctx, node, name, srv_type):
        self.ctx, self.node, self.name, self.srv_type = ctx, node, name, srv_type

    def _server(self):
        s = self.ctx._srvs.get(self.name)
        return s if s is not None and s.srv_type == self.srv_type else None

    def service_is_ready(self) -> bool:
        return self._server() is not None

    def call(self, data: bytes, on_response: Callable[[bytes], None],
             on_error: Callable[[BaseException], None]) -> None:
        srv = self._server()
        if srv is None:
            from hri_runtime.client import ServiceUnavailableError

            on_error(ServiceUnavailableError(f"no server for service {self.name} ({self.srv_type})"))
            return
        done = []

        def respond(resp: bytes) -> None:
            if done:
                return
            done.append(True)
            on_response(resp)

        srv.on_request(data, respond)

    def destroy(self) -> None:
        pass


class _InprocBus:
    """Topic/service registry of the in-process transport (shared by both inproc contexts)."""

    def _init_bus(self) -> None:
        self.type_mismatches = 0
        self._pubs: dict[str, list[_Pub]] = {}
        self._subs: dict[str, list[_Sub]] = {}
        self._srvs: dict[str, _Srv] = {}

    # ---- transport
    def create_publisher(self, node, topic, type_name, qos):
        p = _Pub(self, node, topic, type_name, qos)
        self._pubs.setdefault(topic, []).append(p)
        return p

    def create_subscription(self, node, topic, type_name, qos, deliver):
        s = _Sub(self, node, topic, type_name, qos, deliver)
        self._subs.setdefault(topic, []).append(s)
        if qos.transient_local:
            for p in self._pubs.get(topic, []):
                if p.qos.transient_local and p.type_name == type_name:
                    for data in p.history[-qos.depth:] if qos.queue_len else p.history:
                        deliver(data, None)
        return s

    def create_service(self, node, name, srv_type, qos, on_request):
        if name in self._srvs:
            log.warning("a second server for %s replaces the first (in-process backend)", name)
        s = _Srv(self, node, name, srv_type, on_request)
        self._srvs[name] = s
        return s

    def create_client(self, node, name, srv_type, qos):
        return _Cli(self, node, name, srv_type)


class InprocContext(_InprocBus, Context):
    kind = "inproc"
    rosout_enabled = False      # deterministic tests: no /rosout traffic unless asked
    parameter_services_enabled = False   # nor parameter services (set True to test them)

    def __init__(self, start_time_s: float = 0.0, raise_callback_errors: bool = True,
                 max_callbacks_per_step: int = 1_000_000):
        self._t_ns = int(round(start_time_s * 1e9))
        self.raise_callback_errors = raise_callback_errors
        self.max_callbacks_per_step = max_callbacks_per_step
        self.callback_errors = 0
        self._init_bus()
        super().__init__()

    def _make_executor(self) -> Executor:
        return Executor(on_error=None if self.raise_callback_errors else self._on_error)

    def _on_error(self, exc: BaseException, where: str) -> None:
        self.callback_errors += 1
        log.error("exception in %s:\n%s", where, "".join(traceback.format_exception(exc)))

    # ---- clock
    def now_s(self) -> float:
        return self._t_ns * 1e-9

    def now_ns(self) -> int:
        return self._t_ns

    # ---- executor
    def _drain(self) -> int:
        n = 0
        while self.executor.run_one():
            n += 1
            if n >= self.max_callbacks_per_step:
                raise RuntimeError(
                    f"more than {n} callbacks at t={self.now_s():.9f} s without time advancing "
                    f"(a publish/receive loop?)")
        return n

    def spin_once(self, timeout_s: float = 0.0) -> bool:
        """Run one ready callback at the current time. If none is ready and timeout_s > 0,
        advance the clock to the next timer deadline within timeout_s and fire it."""
        if self.executor.run_one():
            return True
        if timeout_s > 0:
            dl = self.executor.next_deadline_ns()
            end = self._t_ns + int(round(timeout_s * 1e9))
            if dl is not None and dl <= end:
                self._t_ns = max(self._t_ns, dl)
                return self.executor.run_one()
            self._t_ns = end
        return False

    def spin_for(self, seconds: float, fire_at_end: bool = True) -> None:
        """Advance the fake clock by ``seconds``, firing timers in time order and delivering
        all queued work between them. ``fire_at_end`` False: the clock stops at the end with the
        timers due exactly then still pending (the lockstep runner's script runs first)."""
        if seconds < 0:
            raise ValueError(f"spin_for({seconds}): time does not run backwards")
        end = self._t_ns + int(round(seconds * 1e9))
        while True:
            self._drain()
            dl = self.executor.next_deadline_ns()
            if dl is None or dl > end or (dl == end and not fire_at_end):
                break
            self._t_ns = max(self._t_ns, dl)
        self._t_ns = end
        if fire_at_end:
            self._drain()

    def spin_until(self, predicate: Callable[[], bool], timeout_s: float,
                   step_s: Optional[float] = None) -> bool:
        """Step (one callback, or one timer deadline) until predicate() holds or timeout_s of
        fake time have passed. Returns predicate()."""
        end = self._t_ns + int(round(timeout_s * 1e9))
        n = 0
        while not predicate():
            if self.executor.run_one():
                n += 1
                if n >= self.max_callbacks_per_step:
                    raise RuntimeError("spin_until: callback storm without time advancing")
                continue
            n = 0
            dl = self.executor.next_deadline_ns()
            if step_s is not None:
                nxt = self._t_ns + int(round(step_s * 1e9))
                dl = nxt if dl is None else min(dl, nxt)
            if dl is None:           # no timer: nothing can change any more
                return bool(predicate())
            if dl > end:
                self._t_ns = max(self._t_ns, end)
                self._drain()
                return bool(predicate())
            self._t_ns = max(self._t_ns, dl)
        return True

    def spin(self, timeout_s: Optional[float] = None) -> None:
        """Real-time pacing for run_node with HRI_TRANSPORT=inproc (single process): the fake
        clock follows the wall clock until shutdown() or timeout_s."""
        t0 = time.monotonic()
        last = t0
        while self.ok():
            now = time.monotonic()
            if timeout_s is not None and now - t0 >= timeout_s:
                return
            self.spin_for(now - last)
            last = now
            dl = self.executor.next_deadline_ns()
            wait = 0.05 if dl is None else min(0.05, max(0.0, (dl - self._t_ns) * 1e-9))
            time.sleep(wait)

    def wait_future(self, future, timeout_s: Optional[float]) -> bool:
        return self.spin_until(future.done, 3600.0 if timeout_s is None else timeout_s)


class ThreadedInprocContext(_InprocBus, ThreadedContext):
    """In-process transport with the threaded executor of the network backends: wall-clock
    time, callbacks on the thread that calls spin() (or spin_in_background()). For tests of the
    threaded machinery and for single-process tools; HRI_TRANSPORT=inproc uses InprocContext."""

    kind = "inproc-threaded"

    def __init__(self) -> None:
        self._init_bus()
        super().__init__()
