"""The executor's per-sample path (hri_runtime._cdr RunLock / Inline / Delivery through
Executor.delivery): run inline only when the executor spins idle, else queue in order; decode,
reject malformed payloads, errors to on_error; the run lock is a lock."""
import threading

import pytest

from hri_runtime import msgs
from hri_runtime.executors import Executor, SubQueue

T = "std_msgs/msg/String"


def _payload(text: str) -> bytes:
    return msgs.serialize(msgs.new(T, data=text), T)


class _Sub:
    """What a Subscription wires: a queue, a callback, a reject sink."""

    def __init__(self, ex: Executor, raw: bool = False, maxlen=None, callback=None):
        self.got, self.threads, self.rejected, self.lock_held = [], [], [], []
        self.ex = ex
        self.q = SubQueue(None, maxlen)
        self.deliver = ex.delivery(self.q, callback or self.on_msg, None if raw else msgs.deserialize, T,
                                   self.rejected.append, msgs.DecodeError)

    def on_msg(self, m):
        self.got.append(m if isinstance(m, bytes) else m.data)
        self.threads.append(self.ex.callback_thread)
        self.lock_held.append(self.ex.run_lock.locked())


def _spinning(ex: Executor, inline: bool = True) -> Executor:
    ex.inline = inline
    ex.thread_id = -1 & 0xFFFF          # "some thread spins" (the delivering thread is not it)
    return ex


def test_run_lock_is_a_lock():
    ex = Executor()
    lock = ex.run_lock
    assert not lock.locked()
    assert lock.acquire(False) and lock.locked()
    assert not lock.acquire(False) and not lock.acquire(timeout=0.01)
    with pytest.raises(ValueError):
        lock.acquire(False, 1.0)
    lock.release()
    with pytest.raises(RuntimeError, match="unlocked"):
        lock.release()
    with lock:
        assert lock.locked()
    assert not lock.locked()
    # a blocking acquire waits (GIL released) until the holder lets go
    lock.acquire()
    got = threading.Event()
    t = threading.Thread(target=lambda: (lock.acquire(), got.set(), lock.release()))
    t.start()
    assert not got.wait(0.05)
    lock.release()
    t.join(5.0)
    assert got.is_set() and not lock.locked()


def test_not_spinning_queues_and_the_executor_runs_decoded():
    ex = Executor()
    ex.inline = True                    # enabled, but nobody spins
    s = _Sub(ex)
    s.deliver(_payload("a"), ("att", "key"))
    s.deliver(_payload("b"))
    assert s.got == [] and len(s.q.items) == 2 and ex.inline_runs == 0
    assert ex.run_one() and ex.run_one() and not ex.run_one()
    assert s.got == ["a", "b"] and s.deliver.received == 2 and ex.callbacks_run == 2


def test_spinning_idle_runs_inline_holding_the_lock():
    ex = _spinning(Executor())
    s = _Sub(ex)
    s.deliver(_payload("x"), None)
    assert s.got == ["x"] and not s.q.items
    assert s.threads == [threading.get_ident()] and s.lock_held == [True]
    assert ex.callback_thread is None and not ex.run_lock.locked()
    assert ex.inline_runs == 1 and ex.callbacks_run == 1


def test_inline_disabled_or_busy_or_backlog_queues_in_arrival_order():
    ex = _spinning(Executor(), inline=False)
    s = _Sub(ex)
    s.deliver(_payload("1"))
    assert s.got == [] and len(s.q.items) == 1
    ex.inline = True                    # backlog: a queued item exists, so the next one queues too
    s.deliver(_payload("2"))
    assert s.got == [] and len(s.q.items) == 2
    while ex.run_one():
        pass
    assert s.got == ["1", "2"]
    with ex.run_lock:                   # a callback runs elsewhere: queue
        s.deliver(_payload("3"))
    assert s.got == ["1", "2"] and len(s.q.items) == 1
    ex.run_one()
    s.deliver(_payload("4"))            # idle again: inline
    assert s.got == ["1", "2", "3", "4"] and ex.inline_runs == 1


def test_keep_last_drops_the_oldest_queued():
    ex = Executor()
    s = _Sub(ex, maxlen=2)
    for c in "abc":
        s.deliver(_payload(c))
    while ex.run_one():
        pass
    assert s.got == ["b", "c"] and s.q.dropped == 1


def test_malformed_payload_is_rejected_not_delivered():
    ex = _spinning(Executor())
    s = _Sub(ex)
    s.deliver(b"\x00\x01\x00\x00\xff\xff\xff\x7f")        # a string length far past the end
    s.deliver(b"\x07")                                   # not even a CDR header
    assert s.got == [] and len(s.rejected) == 2
    assert all(T in text for text in s.rejected)
    assert s.deliver.received == 2
    s.deliver(_payload("ok"))
    assert s.got == ["ok"]


def test_raw_subscription_gets_the_bytes():
    ex = _spinning(Executor())
    s = _Sub(ex, raw=True)
    p = _payload("r")
    s.deliver(p)
    assert s.got == [p]


def test_callback_error_goes_to_on_error_or_propagates():
    seen = []
    ex = _spinning(Executor(on_error=lambda e, where: seen.append((type(e), str(e), where))))

    def boom(_m):
        raise ValueError("bad callback")

    s = _Sub(ex, callback=boom)
    s.deliver(_payload("x"))                            # inline: handled, the lock released
    assert seen == [(ValueError, "bad callback", "callback")] and not ex.run_lock.locked()
    assert ex.callback_thread is None
    ex.on_error = None
    with pytest.raises(ValueError, match="bad callback"):
        s.deliver(_payload("y"))
    assert not ex.run_lock.locked() and ex.callback_thread is None


def test_closed_delivery_runs_nothing():
    ex = _spinning(Executor())
    s = _Sub(ex)
    s.q.active = False
    s.deliver.close()
    s.deliver(_payload("late"))
    s.deliver.run(_payload("late"))
    assert s.got == [] and not s.q.items and ex.inline_runs == 0


def test_inline_run_wakes_the_executor_for_sim_timers_and_new_work():
    wakes = []
    ex = _spinning(Executor(wake=lambda: wakes.append(1)))
    s = _Sub(ex)
    s.deliver(_payload("a"))
    assert wakes == []
    ex._inline.sim_timers = 1           # a sim-clock timer exists: the executor must look at it
    s.deliver(_payload("b"))
    assert wakes == [1]


def test_callback_can_be_replaced():
    ex = _spinning(Executor())
    s = _Sub(ex)
    other = []
    s.deliver.callback = lambda m: other.append(m.data)
    s.deliver(_payload("z"))
    assert other == ["z"] and s.got == []
    with pytest.raises(TypeError):
        s.deliver.callback = 3


def test_a_timer_late_by_a_period_runs_before_a_flood_of_queued_work_on_a_threaded_executor():
    """A node that cannot drain its messages still runs its timers (the threaded, wall-clock
    contexts): a timer late by a whole period goes before the queue, once, skipping its missed
    periods; a timer merely due waits for the queue, and without the rule (the in-process
    lockstep) queued work always goes first."""
    from hri_runtime.clock import Clock
    from hri_runtime.timer import Timer

    now = [0]
    clock = Clock(lambda: now[0] * 1e-9, lambda: now[0])
    for late_first in (True, False):
        ex = Executor()
        ex.late_timers_first = late_first
        runs = []
        ex.add_timer(Timer(ex, 0.005, lambda: runs.append("tick"), clock))
        for i in range(100):
            ex.post(lambda i=i: runs.append(i))
        now[0] += 5_000_000                       # due, not late: the queue goes first
        ex.run_one()
        assert runs == [0]
        now[0] += 5_000_000                       # late by a whole period
        ex.run_one()
        ex.run_one()
        if late_first:
            assert runs == [0, "tick", 1]
            assert ex.timers[0].missed == 1       # the skipped period is counted
        else:
            assert runs == [0, 1, 2]
        while ex.run_one():
            pass
        assert runs.count("tick") == 1 and [r for r in runs if r != "tick"] == list(range(100))
