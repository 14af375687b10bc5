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


def test_composed_nodes_script_at_t_and_recorded_by_the_bag_recorder(tmp_path):
    """Lockstep.inproc: the script of step t runs with the context at t (its message is in the
    step's timers' view), the node timers due at t run after it, the bag recorder logs at the
    simulated time, close() closes the file and destroys the nodes."""
    from hri_runtime import msgs
    from hri_runtime.bag.recording import McapReader

    ls = Lockstep.inproc(0.001)
    ctx = ls.context
    node = Node("ticker", context=ctx)
    got, seen_at_tick = [], []
    node.create_subscription("std_msgs/msg/String", "/cmd", lambda m: got.append((ctx.now_ns(), m.data)), qos=10)
    out = node.create_publisher("std_msgs/msg/String", "/out", qos=10)
    node.create_timer(0.002, lambda: (seen_at_tick.append((ctx.now_ns(), len(got))),
                                      out.publish(msgs.new("std_msgs/msg/String", data=str(len(got))))))
    script = Node("script", context=ctx)
    cmd = script.create_publisher("std_msgs/msg/String", "/cmd", qos=10)
    ls.record(tmp_path / "run.mcap", ["/cmd", "/out"])

    def before(t: float) -> None:
        assert ctx.now_ns() == ls.clock.now_ns()           # the script runs at t
        if ls.steps % 2 == 0:
            cmd.publish(msgs.new("std_msgs/msg/String", data=f"{t:.3f}"))

    ls.run_until(0.006, before)
    assert [ns for ns, _ in got] == [0, 2_000_000, 4_000_000]
    # the timer at t = 2, 4 ms sees the message the script sent at that t (2 and 3 of them)
    assert seen_at_tick == [(2_000_000, 2), (4_000_000, 3)]
    ls.close()
    assert ctx.nodes == []
    rd = McapReader(tmp_path / "run.mcap")
    rec = [(m.topic, m.log_time_ns, m.msg.data) for m in rd.messages()]
    assert ("/cmd", 2_000_000, "0.002") in rec and ("/out", 4_000_000, "3") in rec
    assert sum(1 for r in rec if r[0] == "/cmd") == 3 and sum(1 for r in rec if r[0] == "/out") == 2


def test_step_until_stops_at_the_first_step_boundary_where_the_predicate_holds():
    """step_until: whole steps until the predicate holds (a timer's effect at t is seen before
    the step at t + dt); a predicate that never holds returns False after timeout_s."""
    ls = Lockstep.inproc(0.001)
    node = Node("ticker", context=ls.context)
    fired = []
    node.create_timer(0.005, lambda: fired.append(ls.context.now_ns()))
    assert ls.step_until(lambda: len(fired) == 2, 1.0)
    assert fired == [5_000_000, 10_000_000] and ls.clock.now_ns() == 11_000_000
    assert ls.step_until(lambda: True, 0.0) and ls.steps == 11
    assert not ls.step_until(lambda: False, 0.003) and ls.clock.now_ns() == 14_000_000
    ls.close()
