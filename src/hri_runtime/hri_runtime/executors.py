"""``Executor``: the work queue every backend shares (subscription queues, posted callbacks,
timers), and ``SubQueue``, one subscription's keep-last queue.

The per-sample path is C (``hri_runtime._cdr``, src/executor_hot_path.cpp): the run lock
(``RunLock``), the state a delivering thread reads (``Inline``) and a subscription's
``deliver`` (``Delivery``, made by :meth:`Executor.delivery`)."""
from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable, Optional

from hri_runtime import _cdr
from hri_runtime.timer import Timer

__all__ = ["Executor", "SubQueue"]


class SubQueue:
    """Per-subscription keep-last queue (the executor holds one ready token per queued item)."""
    __slots__ = ("callback", "maxlen", "items", "dropped", "active")

    def __init__(self, callback: Callable[[Any], None], maxlen: Optional[int]):
        self.callback = callback
        self.maxlen = maxlen
        self.items: deque = deque()
        self.dropped = 0
        self.active = True


class Executor:
    """Work queue shared by every backend: subscription queues, posted callbacks, timers.

    Thread safety: ``enqueue``/``post`` may be called from any thread; ``run_one`` only from
    the one executor thread. Order: queued work first (FIFO over all subscriptions), then due
    timers in (deadline, creation) order. With ``late_timers_first`` (the threaded, wall-clock
    contexts) a timer late by a whole period or more runs before the queued work: a flood of
    messages that the node cannot drain would otherwise starve its timers for good (seen: a Tino
    simulation node whose 5 ms step never ran under atomic's 1 kHz commands on rclpy, so its leg
    never moved), where rcl's wait set serves every ready timer once per round. In time, a late
    timer fires once and skips its missed periods, so it cannot starve the queue in turn. The
    in-process lockstep keeps the plain order (its results stay bit-identical).

    ``inline`` (threaded backends that opt in, e.g. Zenoh): a subscription's ``deliver`` (see
    :meth:`delivery`) runs the callback directly on the delivering (transport) thread when the
    executor is spinning, idle (nothing queued anywhere) and not running a callback; otherwise it
    queues as usual (:meth:`enqueue`). Every callback, inline or on the executor thread, runs while
    holding ``run_lock``, so the ROS 2 guarantee of a node's default (mutually exclusive) callback
    group holds: no two callbacks of one context ever run at the same time, and items of one
    subscription run in arrival order (an item is only run inline when nothing is queued, and a
    queued item is popped and run under the same lock). What changes: *which* thread runs a
    callback (as with rclpy's MultiThreadedExecutor). ``callback_thread`` is the ident of the
    thread running a callback now (deadlock guard of blocking service calls).

    ``on_error(exc, where)``: what to do when a user callback raises (inproc: re-raise so tests
    see it; threaded: log with traceback and continue)."""

    def __init__(self, wake: Callable[[], None] | None = None,
                 on_error: Callable[[BaseException, str], None] | None = None):
        self._lock = threading.Lock()
        self._ready: deque = deque()
        self.timers: list[Timer] = []
        self._wake = wake or (lambda: None)
        self._seq = 0
        self._callbacks_run = 0
        self._thread_id: Optional[int] = None
        self.late_timers_first = False   # see the class doc; set by ThreadedContext
        # what a delivering thread reads (C): run lock, ready deque, wake, on_error, flags
        self._inline = _cdr.Inline(self._ready, self._wake)
        self._inline.on_error = on_error
        self.run_lock = self._inline.lock

    # the state shared with the C delivery path
    on_error = property(lambda self: self._inline.on_error,
                        lambda self, fn: setattr(self._inline, "on_error", fn))
    inline = property(lambda self: self._inline.enabled,
                      lambda self, on: setattr(self._inline, "enabled", on))
    sim_timers = property(lambda self: self._inline.sim_timers,
                          doc="timers on a sim clock (an inline run wakes the executor for them)")
    inline_runs = property(lambda self: self._inline.runs, doc="callbacks run on a delivering thread")
    callbacks_run = property(lambda self: self._callbacks_run + self._inline.runs)

    @property
    def thread_id(self) -> Optional[int]:
        """Ident of the thread spinning this executor (None: nobody spins)."""
        return self._thread_id

    @thread_id.setter
    def thread_id(self, tid: Optional[int]) -> None:
        self._thread_id = tid
        self._inline.spinning = tid is not None

    @property
    def callback_thread(self) -> Optional[int]:
        return self._inline.callback_thread

    @callback_thread.setter
    def callback_thread(self, tid: Optional[int]) -> None:
        self._inline.callback_thread = tid

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def wake(self) -> None:
        self._wake()

    def post(self, fn: Callable[[], None]) -> None:
        with self._lock:
            self._ready.append(fn)
        self._wake()

    def delivery(self, q: SubQueue, callback: Callable[[Any], None], deserialize, type_name: str,
                 reject: Callable[[str], None], decode_error: type) -> "_cdr.Delivery":
        """A subscription's ``deliver(data, meta=None)`` (C, see the module doc): run inline when
        the executor is idle (see class doc), else :meth:`enqueue`. ``q.callback`` becomes its
        ``run`` (decode with ``deserialize(data, type_name)`` unless None, then ``callback``;
        a payload refused with ``decode_error`` goes to ``reject(text)``)."""
        d = _cdr.Delivery(self._inline, q, self.enqueue, callback, deserialize, type_name, reject, decode_error)
        q.callback = d.run
        return d

    def enqueue(self, q: SubQueue, data: Any, meta: Any = None) -> None:
        """Queue a sample for q (its callback is later called as ``q.callback(data, meta)``):
        keep-last maxlen drops the oldest (counted in q.dropped)."""
        item = (data, meta)
        with self._lock:
            if not q.active:
                return
            if q.maxlen is not None and len(q.items) >= q.maxlen:
                q.items.popleft()
                q.dropped += 1
                q.items.append(item)      # the dropped item's ready token delivers this one
                return
            q.items.append(item)
            self._ready.append(q)
        self._wake()

    def add_timer(self, t: Timer) -> Timer:
        with self._lock:
            self.timers.append(t)
            self._inline.sim_timers += bool(t.clock.is_sim)
        self._wake()
        return t

    def remove_timer(self, t: Timer) -> None:
        t.cancel()
        with self._lock:
            if t in self.timers:
                self.timers.remove(t)
                self._inline.sim_timers -= bool(t.clock.is_sim)

    def _pop(self):
        with self._lock:
            while self._ready:
                tok = self._ready.popleft()
                if isinstance(tok, SubQueue):
                    if tok.items:
                        item = tok.items.popleft()
                        if tok.active:
                            return tok.callback, item
                    continue
                return tok, ()
        return None, ()

    def _run(self, fn, args, where: str) -> None:
        self._callbacks_run += 1
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001
            if self.on_error is None:
                raise
            self.on_error(e, where)

    def next_due_timer(self, late: bool = False) -> Optional[Timer]:
        """The earliest due timer; ``late``: only one due by a whole period or more (starved)."""
        best, key = None, None
        for t in list(self.timers):
            if t._canceled or (key is not None and (t.next_ns, t.seq) >= key):
                continue            # (the clock is read only for a timer that would come first)
            if t.clock.now_ns() >= t.next_ns + (t.period_ns if late else 0):
                best, key = t, (t.next_ns, t.seq)
        return best

    def run_one(self) -> bool:
        """Run one piece of ready work (queued item first, else the earliest due timer)."""
        if not self.inline:
            return self._run_one()
        with self.run_lock:
            self.callback_thread = threading.get_ident()
            try:
                return self._run_one()
            finally:
                self.callback_thread = None

    def _run_one(self) -> bool:
        t = self.next_due_timer(late=True) if self.late_timers_first and self._ready else None
        if t is None:
            fn, args = self._pop()
            if fn is not None:
                self._run(fn, args, "callback")
                return True
            t = self.next_due_timer()
        if t is not None:
            self._run(t._fire, (), "timer")
            return True
        return False

    def next_deadline_ns(self, sim: bool = False) -> Optional[int]:
        """Earliest deadline among active timers on non-sim clocks (sim=False) or all."""
        ds = [t.next_ns for t in self.timers if not t._canceled and (sim or not t.clock.is_sim)]
        return min(ds) if ds else None

