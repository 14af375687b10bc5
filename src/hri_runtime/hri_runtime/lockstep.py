"""Lockstep: simulated time advanced in fixed steps, the work of each step run in a fixed order.
The one way to compose and drive a stack in one process: the real node classes on an in-process
context, stepped on one simulated clock, recorded by the runtime's bag recorder.

    ls = Lockstep.inproc(0.001)                         # a new InprocContext on the lockstep clock
    sup = StopSupervisorNode(cfg=cfg, context=ls.context)   # the real nodes, composed in-process
    rec = ls.record("run.mcap", ["/ee_pose", ...])      # hri_runtime.bag.recording.Recorder
    ls.run_until(2.0, before=operator)                  # before(t): the caller's script, first
    ls.close()                                          # recording closed, nodes destroyed

    ls = Lockstep(0.001, clock, sim_step=sim.advance)   # without nodes: sim_step(dt_s) per step
    ls.every(pipe.tick, period_s=0.004)                 # fn(t): every 4th step (t = step start)

One step at simulated time ``t`` (the clock reads ``t`` while it runs):

1. with a ``context`` (an ``InprocContext``): the context is brought to ``t``: the work due before
   ``t`` runs, the timers due at ``t`` wait;
2. ``before(t)`` (the caller's script: operator packets, a scripted person, ...; a message it
   publishes is delivered at ``t``);
3. with a ``context``: its ready work at ``t`` is run — queued messages/requests/responses and
   the timers due at ``t`` of its in-process nodes, in time order — then timers on this clock
   (``create_timer(..., clock=clock)``);
4. the due tasks in registration order: ``fn(t)``; a task with ``period_s`` (or ``every=k``)
   runs on every k-th step counted from its registration;
5. ``sim_step(dt_s)``: the simulator advances one step;
6. the clock advances by the step (integer nanoseconds: no drift over long runs);
7. ``after(t + dt)`` hooks (recording the state the step produced).

:class:`WorkerLockstep` is the other half of lockstep: a plain synchronous loop (a tuning job,
an experiment) run on a worker thread in strict turns with the executor thread, so a core that
calls ``plant.step()`` synchronously can drive a robot that is another node.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional

from hri_runtime.clock import SimClock

__all__ = ["Lockstep", "JobCancelled", "WorkerLockstep"]


class Lockstep:
    """Fixed-step driver of one :class:`SimClock` (see the module doc for the order in a step)."""

    def __init__(self, period_s: float, clock: Optional[SimClock] = None, *,
                 sim_step: Optional[Callable[[float], Any]] = None, context=None):
        if not (period_s > 0.0):
            raise ValueError(f"lockstep period must be > 0 s, got {period_s!r}")
        self.period_ns = max(1, int(round(period_s * 1e9)))
        if clock is None:
            clock = SimClock(context.now_s() if context is not None else 0.0)
        self.clock = clock
        self.sim_step = sim_step
        self.context = context
        self.steps = 0
        self._tasks: list[list] = []          # [every_k, phase, fn]
        self._after: list[Callable[[float], Any]] = []
        self.recorders: list = []             # (node, recorder, writer) of record()

    @classmethod
    def inproc(cls, period_s: float, start_time_s: float = 0.0, **kw) -> "Lockstep":
        """A lockstep runner with a new ``InprocContext`` (``self.context``) at ``start_time_s``:
        the nodes created on it are composed in this process and stepped by it."""
        from hri_runtime.inproc import InprocContext

        return cls(period_s, SimClock(start_time_s), context=InprocContext(start_time_s=start_time_s), **kw)

    def record(self, path, topics: list[str], types: Optional[dict[str, str]] = None,
               library: str = "hri_runtime", node_name: str = "recorder"):
        """Record ``topics`` of the context into the MCAP file ``path`` with the runtime's bag
        recorder (``hri_runtime.bag.recording.Recorder`` on a node of the context: the file a live
        ``hri record`` writes; log time = the simulated clock). Create it after the nodes whose
        topics it records (a topic is matched by its publishers' type unless ``types`` names it).
        Closed by :meth:`close`. Returns the ``Recorder``."""
        from hri_runtime.bag.recording import McapWriter, Recorder
        from hri_runtime.node import Node

        if self.context is None:
            raise RuntimeError("record(): a lockstep runner without a context has no topics")
        node = Node(node_name, context=self.context)
        writer = McapWriter(path, library=library)
        rec = Recorder(node, writer, topics=list(topics), types=types)
        self.recorders.append((node, rec, writer))
        return rec

    def close(self) -> None:
        """Deliver what is still queued, stop the recorders and close their files, destroy the
        context's nodes."""
        if self.context is not None:
            self.context.spin_for(0.0)
        for node, rec, writer in self.recorders:
            rec.stop()
            writer.close()
        self.recorders.clear()
        if self.context is not None:
            for node in list(getattr(self.context, "nodes", [])):
                node.destroy_node()

    @property
    def period_s(self) -> float:
        return self.period_ns * 1e-9

    def now_s(self) -> float:
        """The simulated time (with a context spun ahead directly: the context's, see
        :meth:`spin_context`)."""
        self._follow_context()
        return self.clock.now_s()

    def _follow_context(self) -> None:
        if self.context is not None:
            ahead_ns = self.context.now_ns() - self.clock.now_ns()
            if ahead_ns > 0:
                self.clock.advance_ns(ahead_ns)

    def every(self, fn: Callable[[float], Any], period_s: Optional[float] = None,
              every: Optional[int] = None) -> Callable[[float], Any]:
        """Run ``fn(t)`` every ``every`` steps (or every ``period_s``, a whole number of steps;
        default: every step), starting with the next step. Returns ``fn``."""
        if period_s is not None and every is not None:
            raise ValueError("every(): give period_s or every, not both")
        k = 1 if every is None else int(every)
        if period_s is not None:
            k = int(round(period_s * 1e9 / self.period_ns))
            if k < 1 or abs(k * self.period_ns - period_s * 1e9) > 1.0:
                raise ValueError(f"task period {period_s} s is not a whole number of lockstep "
                                 f"steps of {self.period_s} s")
        if k < 1:
            raise ValueError(f"every={every}: must be >= 1")
        self._tasks.append([k, self.steps, fn])
        return fn

    def after(self, fn: Callable[[float], Any]) -> Callable[[float], Any]:
        """Run ``fn(t_new)`` at the end of every step, after the clock advanced. Returns ``fn``."""
        self._after.append(fn)
        return fn

    def step(self, before: Optional[Callable[[float], Any]] = None) -> None:
        if self.context is not None:
            self.spin_context(fire_at_end=False)
        t = self.clock.now_s()
        if before is not None:
            before(t)
        if self.context is not None:
            self.spin_context()
        for k, phase, fn in self._tasks:
            if (self.steps - phase) % k == 0:
                fn(t)
        if self.sim_step is not None:
            self.sim_step(self.period_s)
        self.steps += 1
        self.clock.advance_ns(self.period_ns)
        if self._after:
            t_new = self.clock.now_s()
            for fn in self._after:
                fn(t_new)

    def spin_context(self, fire_at_end: bool = True) -> None:
        """Bring the context's time to the clock's and run its ready work (steps 1 and 3;
        ``fire_at_end`` False: the timers due now wait). A context spun ahead directly (a test's
        ``ctx.spin_for``, a service call waiting for its response) takes the clock with it: one
        time for both."""
        self._follow_context()
        self.context.spin_for((self.clock.now_ns() - self.context.now_ns()) * 1e-9, fire_at_end=fire_at_end)

    def run_until(self, t_end_s: float, before: Optional[Callable[[float], Any]] = None) -> int:
        """Step while the clock is before ``t_end_s`` (within 1 ns); returns the steps run."""
        end_ns = int(round(t_end_s * 1e9))
        n = 0
        self._follow_context()
        while self.clock.now_ns() < end_ns:
            self.step(before)
            n += 1
        return n

    def run_for(self, duration_s: float, before: Optional[Callable[[float], Any]] = None) -> int:
        """``round(duration_s / period)`` steps; returns that number."""
        n = int(round(duration_s * 1e9 / self.period_ns))
        for _ in range(n):
            self.step(before)
        return n

    def step_until(self, predicate: Callable[[], bool], timeout_s: float,
                   before: Optional[Callable[[float], Any]] = None) -> bool:
        """Step until ``predicate()`` holds (checked before every step: a job's result, a
        service's response) or ``timeout_s`` of simulated time have passed; returns
        ``predicate()``."""
        self._follow_context()
        end_ns = self.clock.now_ns() + int(round(timeout_s * 1e9))
        while not predicate():
            if self.clock.now_ns() >= end_ns:
                return bool(predicate())
            self.step(before)
        return True


# ------------------------------------------------------------------------------------------------
class JobCancelled(BaseException):
    """Raised in a cancelled job's worker (not an Exception: nothing inside may swallow it)."""


class WorkerLockstep:
    """One synchronous job at a time on a worker thread, strictly alternating with the executor
    thread: exactly one of them runs at any time, so the node stays single-threaded and, under
    ``InprocContext``, the whole run is deterministic in simulated time.

    Executor side: :meth:`start` (runs the job until its first wait), :meth:`poke` after every
    event (a message, a response, a timer) – resumes the worker when its condition holds and
    returns when it waits again or ends; ``on_done(result, exc)`` runs on the executor thread.
    Worker side: :meth:`wait_until`."""

    def __init__(self, thread_prefix: str = "job") -> None:
        self._cv = threading.Condition()
        self._turn = "executor"
        self._pred: Callable[[], bool] | None = None
        self._worker: threading.Thread | None = None
        self._done_cb = None
        self._finished = False
        self._result: Any = None
        self._exc: BaseException | None = None
        self._cancel = False
        self._prefix = thread_prefix
        self.name = ""

    @property
    def busy(self) -> bool:
        return self._worker is not None

    def in_worker(self) -> bool:
        return self._worker is not None and threading.current_thread() is self._worker

    def start(self, name: str, fn: Callable[[], Any],
              on_done: Callable[[Any, BaseException | None], None]) -> None:
        if self.busy:
            raise RuntimeError(f"job {self.name!r} is still running")
        self.name, self._done_cb, self._finished, self._cancel = name, on_done, False, False
        self._result, self._exc, self._pred = None, None, None

        def body():
            with self._cv:
                self._cv.wait_for(lambda: self._turn == "worker")
            try:
                self._result = fn()
            except BaseException as exc:   # noqa: BLE001 – handed to on_done, never lost
                self._exc = exc
            with self._cv:
                self._finished = True
                self._turn = "executor"
                self._cv.notify_all()

        self._worker = threading.Thread(target=body, name=f"{self._prefix}-{name}", daemon=True)
        self._worker.start()
        self._switch()

    def _switch(self) -> None:
        with self._cv:
            self._turn = "worker"
            self._cv.notify_all()
            self._cv.wait_for(lambda: self._turn == "executor")
        if self._finished:
            self._worker.join()
            self._worker = None
            cb, self._done_cb = self._done_cb, None
            if cb is not None:
                cb(self._result, self._exc)

    def poke(self) -> None:
        """Executor thread: resume the worker if what it waits for has happened."""
        if self._worker is None or self.in_worker():
            return
        pred = self._pred
        if self._cancel or (pred is not None and pred()):
            self._pred = None
            self._switch()

    def cancel(self) -> None:
        """Executor thread: the waiting job raises JobCancelled and ends."""
        self._cancel = True
        self.poke()

    def wait_until(self, pred: Callable[[], bool]) -> None:
        """Worker thread: give the turn to the executor until ``pred()`` (checked there) holds."""
        if not self.in_worker():
            raise RuntimeError("wait_until outside the running job (it would block the executor)")
        if self._cancel:
            raise JobCancelled("job cancelled")
        with self._cv:
            self._pred = pred
            self._turn = "executor"
            self._cv.notify_all()
            self._cv.wait_for(lambda: self._turn == "worker")
        if self._cancel:
            raise JobCancelled("job cancelled")
