"""hri_runtime.diagnostics: the diagnostic_updater-style Updater (tasks fill wrappers, one array
per period on the node's clock, force_update at once), in lockstep with simulated time."""
import pytest

from hri_runtime.diagnostics import ERROR, OK, STALE, WARN, DiagnosticStatusWrapper, Updater
from hri_runtime.inproc import InprocContext
from hri_runtime.lockstep import Lockstep
from hri_runtime.node import Node


def _stack(period_s=0.01):
    ctx = InprocContext(start_time_s=0.0)
    return Lockstep(period_s, context=ctx), ctx


def _listener(ctx, topic="/diagnostics"):
    got = []
    Node("listener", context=ctx).create_subscription("diagnostic_msgs/msg/DiagnosticArray", topic,
                                                      got.append, qos=100)
    return got


def test_wrapper_levels_and_values():
    st = DiagnosticStatusWrapper("n: t", "hw")
    st.summary(WARN, "slow")
    st.add("rate_hz", 24.5)
    st.add("ok", True)
    m = st.to_msg()
    assert (m.level, m.name, m.message, m.hardware_id) == (WARN, "n: t", "slow", "hw")
    assert [(kv.key, kv.value) for kv in m.values] == [("rate_hz", "24.5"), ("ok", "True")]
    for level in (OK, WARN, ERROR, STALE):
        st.summary(level, "")
    with pytest.raises(ValueError, match="diagnostic level"):
        st.summary(7, "no such level")


def test_updater_publishes_every_task_once_per_period_and_when_forced():
    ls, ctx = _stack()
    got = _listener(ctx)
    node = Node("driver", context=ctx)
    state = {"level": OK}
    up = Updater(node, "fr3", period_s=0.1)
    up.add("link", lambda s: (s.summary(state["level"], "link"), s.add("seq", 3)))
    up.add("motors", lambda s: s.summary(OK, "motors"))
    ls.every(lambda t: up.update())               # the node's tick calls update every 10 ms
    ls.run_for(0.35)                              # arrays at 0.00, 0.10, 0.20, 0.30
    assert up.published == 4 and len(got) == 4
    arr = got[-1]
    assert [s.name for s in arr.status] == ["driver: link", "driver: motors"]
    assert {s.hardware_id for s in arr.status} == {"fr3"} and arr.status[0].values[0].key == "seq"
    assert arr.header.stamp.sec == 0 and arr.header.stamp.nanosec == 300_000_000
    state["level"] = ERROR
    up.force_update()                             # at once, not at the next period
    ctx.spin_once()
    assert len(got) == 5 and got[-1].status[0].level == ERROR
    with pytest.raises(ValueError):
        Updater(node, "x", period_s=0.0)


def test_prefix_names():
    ctx = InprocContext()
    node = Node("stop_supervisor", context=ctx)
    assert Updater(node, "h", 1.0, prefix="safety").prefix == "safety"
    up = Updater(node, "h", 1.0, prefix="")
    up.add("interaction", lambda s: None)
    assert [s.name for s in up.statuses()] == ["interaction"]
