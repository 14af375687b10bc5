"""``Executor``: the work queue every backend shares (subscription queues, posted callbacks,
timers), and ``SubQueue``, one subscription's keep-last queue."""
from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable, Optional

from .timer import Timer

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
    timers in (deadline, creation) order.

    ``inline`` (threaded backends that opt in, e.g. Zenoh): ``enqueue`` runs the subscription
    callback directly on the delivering (transport) thread when the executor is spinning, idle
    (nothing queued anywhere) and not running a callback; otherwise it queues as usual. Every
    callback, inline or on the executor thread, runs while holding ``run_lock``, so the ROS 2
    guarantee of a node's default (mutually exclusive) callback group holds: no two callbacks of
    one context ever run at the same time, and items of one subscription run in arrival order
    (an item is only run inline when nothing is queued, and a queued item is popped and run
    under the same lock). What changes: *which* thread runs a callback (as with rclpy's
    MultiThreadedExecutor). ``callback_thread`` is the ident of the thread running a callback
    now (deadlock guard of blocking service calls).

    ``on_error(exc, where)``: what to do when a user callback raises (inproc: re-raise so tests
    see it; threaded: log with traceback and continue)."""

    def __init__(self, wake: Callable[[], None] | None = None,
                 on_error: Callable[[BaseException, str], None] | None = None):
        self._lock = threading.Lock()
        self._ready: deque = deque()
        self.timers: list[Timer] = []
        self._wake = wake or (lambda: None)
        self.on_error = on_error
        self._seq = 0
        self.callbacks_run = 0
        self.thread_id: Optional[int] = None
        self.inline = False
        self.inline_runs = 0
        self.sim_timers = 0          # timers on a sim clock (an inline run wakes the executor for them)
        self.run_lock = threading.Lock()
        self.callback_thread: Optional[int] = None

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def wake(self) -> None:
        self._wake()

    def post(self, fn: Callable[[], None]) -> None:
        with self._lock:
            self._ready.append(fn)
        self._wake()

    def enqueue(self, q: SubQueue, data: Any, meta: Any = None) -> None:
        """Queue a sample for q (its callback is later called as ``q.callback(data, meta)``):
        keep-last maxlen drops the oldest (counted in q.dropped). With ``inline``: run q's
        callback right here when the executor is idle (see class doc). Backends call this
        directly (``functools.partial(enqueue, q)``): one call per sample, no tuple unless the
        sample has to wait in the queue."""
        if self.inline and self.thread_id is not None and self.run_lock.acquire(False):
            try:
                # nothing ready (implies q has nothing queued either): a deque's truth value is
                # read atomically; an item queued concurrently arrived concurrently (no order)
                if not self._ready and q.active:
                    self.callback_thread = threading.get_ident()
                    self.inline_runs += 1
                    self.callbacks_run += 1
                    try:                              # _run inlined: one frame less per sample
                        q.callback(data, meta)
                    except Exception as e:  # noqa: BLE001
                        if self.on_error is None:
                            raise
                        self.on_error(e, "callback")
                    finally:
                        self.callback_thread = None
                    if self._ready or self.sim_timers:
                        self._wake()                  # work queued meanwhile / sim timers to check
                    return
            finally:
                self.run_lock.release()
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
            self.sim_timers += bool(t.clock.is_sim)
        self._wake()
        return t

    def remove_timer(self, t: Timer) -> None:
        t.cancel()
        with self._lock:
            if t in self.timers:
                self.timers.remove(t)
                self.sim_timers -= bool(t.clock.is_sim)

    def has_ready(self) -> bool:
        return bool(self._ready)

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
        self.callbacks_run += 1
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001
            if self.on_error is None:
                raise
            self.on_error(e, where)

    def next_due_timer(self) -> Optional[Timer]:
        best = None
        for t in list(self.timers):
            if t._due() and (best is None or (t.next_ns, t.seq) < (best.next_ns, best.seq)):
                best = t
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

