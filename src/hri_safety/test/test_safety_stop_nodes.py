"""Stop supervisor + StopListener on the in-process runtime (lockstep, simulated time)."""
from __future__ import annotations

from hri_runtime import msgs
from hri_runtime.config.tree import load_robot_config
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node

from hri_safety.core.stop import HEARTBEAT_TIMEOUT, NO_HEARTBEAT
from hri_safety.nodes.stop_listener import RESET_SERVICE, STOP_REQUEST_TYPE, STOP_TOPIC, STOP_TYPE, StopListener
from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

CFG = load_robot_config("fr3")


class Actuator(Node):
    def __init__(self, **kw):
        super().__init__("actuator", **kw)
        self.events: list = []
        self.stop = StopListener(self, on_change=lambda s, r: self.events.append((s, r)), params=CFG)


class Operator(Node):
    def __init__(self, **kw):
        super().__init__("operator", **kw)
        self.req = self.create_publisher(STOP_REQUEST_TYPE, "/safety/stop_request", qos=10)
        self.link = self.create_publisher("std_msgs/msg/Bool", CFG["pulse"]["topics"]["safe_stop"], qos=10)
        self.reset_cli = self.create_client("std_srvs/srv/Trigger", RESET_SERVICE)
        self.states: list = []
        self.create_subscription(STOP_TYPE, STOP_TOPIC, self.states.append, qos="latched")

    def request(self, source, reason=""):
        self.req.publish(msgs.new(STOP_REQUEST_TYPE, source=source, reason=reason))

    def reset(self):
        return self.reset_cli.call(msgs.new("std_srvs/srv/Trigger_Request"), timeout_s=1.0)


def _stack():
    ctx = InprocContext()
    act = Actuator(context=ctx)
    op = Operator(context=ctx)
    sup = StopSupervisorNode(cfg=CFG, context=ctx)
    return ctx, act, op, sup


def test_stopped_until_the_supervisor_speaks_then_free():
    ctx = InprocContext()
    act = Actuator(context=ctx)
    ctx.spin_for(2.0)
    assert act.stop.stopped and act.stop.reason == NO_HEARTBEAT and act.stop.watch.timeouts == 0
    StopSupervisorNode(cfg=CFG, context=ctx)
    ctx.spin_for(0.01)
    assert not act.stop.stopped and act.events == [(False, "")]


def test_console_request_latches_until_reset_and_link_false_never_releases():
    ctx, act, op, sup = _stack()
    ctx.spin_for(0.3)
    assert not act.stop.stopped
    op.request("console", "SAFE STOP from the console")
    ctx.spin_for(0.001)                        # published on change, not at the next heartbeat
    assert act.stop.stopped and act.stop.reason == "console: SAFE STOP from the console"
    op.link.publish(msgs.new("std_msgs/msg/Bool", data=True))
    op.link.publish(msgs.new("std_msgs/msg/Bool", data=False))    # the link is back: no release
    ctx.spin_for(5.0)
    assert act.stop.stopped and sup.latch.sources == ["console", "link_safe_stop"]
    assert sup.latch.ignored_releases == 1
    assert op.states[-1].stopped and list(op.states[-1].sources) == ["console", "link_safe_stop"]
    resp = op.reset()
    assert resp.success and "console" in resp.message
    ctx.spin_for(0.001)
    assert not act.stop.stopped
    assert [s for s, _ in act.events] == [False, True, False]


def test_heartbeat_rate_and_sequence():
    ctx, act, op, sup = _stack()
    ctx.spin_for(1.0)
    seqs = [int(s.heartbeat_seq) for s in op.states]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    # one heartbeat per period (plus the first one at start)
    assert abs(len(op.states) - (1.0 * sup.params.heartbeat_hz + 1)) <= 1


def test_supervisor_death_stops_the_actuator_within_the_bound_and_it_stays_latched():
    ctx, act, op, sup = _stack()
    ctx.spin_for(0.5)
    assert not act.stop.stopped
    t_last = op.states[-1].stamp.sec + op.states[-1].stamp.nanosec * 1e-9
    sup.destroy_node()                         # the stop source itself is gone
    p = act.stop.params
    t_stop = None
    while ctx.now_s() < t_last + 3 * p.bound_s:
        ctx.spin_for(0.001)
        if act.stop.stopped and t_stop is None:
            t_stop = ctx.now_s()
    assert t_stop is not None and act.stop.reason == HEARTBEAT_TIMEOUT
    assert t_last + p.timeout_s < t_stop <= t_last + p.bound_s + 1e-6
    # a new supervisor comes up, not stopped: the actuator still holds (no automatic restart) ...
    sup2 = StopSupervisorNode(cfg=CFG, context=ctx)
    ctx.spin_for(2.0)
    assert not sup2.latch.stopped and act.stop.stopped and act.stop.reason == HEARTBEAT_TIMEOUT
    # ... until an explicit reset
    assert op.reset().success
    ctx.spin_for(0.001)
    assert not act.stop.stopped


def test_malformed_requests_still_stop():
    ctx, act, op, sup = _stack()
    ctx.spin_for(0.2)
    op.request("", "")
    ctx.spin_for(0.001)
    assert act.stop.stopped and sup.latch.sources == ["unknown"]
