"""The one lockstep runner and the one SimClock: step order, decimated tasks, in-process nodes on
the simulated clock, the worker hand-off."""
import pytest

from hri_runtime.clock import SimClock
from hri_runtime.inproc import InprocContext
from hri_runtime.lockstep import JobCancelled, Lockstep, WorkerLockstep
from hri_runtime.node import Node


def test_step_order_and_decimation():
    log = []
    sim_t = [0.0]

    def sim_step(dt):
        log.append(("sim", round(sim_t[0], 9)))
        sim_t[0] += dt

    ls = Lockstep(0.001, sim_step=sim_step)
    ls.every(lambda t: log.append(("fast", round(t, 9))))
    ls.every(lambda t: log.append(("slow", round(t, 9))), period_s=0.002)
    ls.after(lambda t: log.append(("after", round(t, 9))))
    n = ls.run_until(0.003, before=lambda t: log.append(("before", round(t, 9))))
    assert n == 3 and ls.steps == 3
    assert log[:5] == [("before", 0.0), ("fast", 0.0), ("slow", 0.0), ("sim", 0.0), ("after", 0.001)]
    assert [t for k, t in log if k == "slow"] == [0.0, 0.002]
    assert ls.clock() == pytest.approx(0.003) and ls.clock.now_ns() == 3_000_000


def test_integer_time_does_not_drift():
    ls = Lockstep(0.001)
    ls.run_for(10.0)
    assert ls.clock.now_ns() == 10_000_000_000


def test_task_period_must_be_whole_steps():
    ls = Lockstep(0.004)
    with pytest.raises(ValueError, match="whole number"):
        ls.every(lambda t: None, period_s=0.006)
    with pytest.raises(ValueError):
        Lockstep(0.0)


def test_clock_does_not_run_backwards():
    c = SimClock(1.0)
    with pytest.raises(ValueError):
        c.advance(-0.1)
    c.advance(0.5)
    assert c.now().nanoseconds == 1_500_000_000 and c() == c.now_s()


def test_inproc_nodes_run_on_the_lockstep_clock():
    ctx = InprocContext()
    node = Node("ticker", context=ctx)
    ls = Lockstep(0.001, context=ctx)
    fired_wall, fired_sim = [], []
    node.create_timer(0.01, lambda: fired_wall.append(ctx.now_s()))
    node.create_timer(0.005, lambda: fired_sim.append(ls.clock()), clock=ls.clock)
    ls.run_until(0.05)
    assert len(fired_wall) == 4 and len(fired_sim) == 9   # due at t = 0.05 run in the next step
    assert ctx.now_ns() == ls.clock.now_ns() - ls.period_ns
    ls.step()
    assert len(fired_wall) == 5 and len(fired_sim) == 10
    node.destroy_node()


def test_worker_lockstep_hand_off_and_cancel():
    wl = WorkerLockstep()
    flag = {"go": False}
    seen = []
    done = []

    def job():
        seen.append("start")
        wl.wait_until(lambda: flag["go"])
        seen.append("resumed")
        return 42

    wl.start("j", job, lambda r, e: done.append((r, e)))
    assert seen == ["start"] and wl.busy
    wl.poke()
    assert seen == ["start"]
    flag["go"] = True
    wl.poke()
    assert seen == ["start", "resumed"] and done == [(42, None)] and not wl.busy

    wl.start("k", lambda: wl.wait_until(lambda: False), lambda r, e: done.append((r, e)))
    wl.cancel()
    assert isinstance(done[-1][1], JobCancelled)
    with pytest.raises(RuntimeError):
        wl.wait_until(lambda: True)
