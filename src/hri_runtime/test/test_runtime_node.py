"""Node API on the in-process backend: pub/sub, services, timers, parameters, names, sim time,
bad input. Simulated time only (InprocContext's fake clock)."""
import pytest

from hri_runtime import msgs
from hri_runtime.qos import QoSProfile
from hri_runtime.inproc import InprocContext
from hri_runtime.names import InvalidNameError
from hri_runtime.client import ServiceUnavailableError
from hri_runtime.node import Node
from hri_runtime.parameter import ParameterError, ParameterNotDeclaredError


class Listener(Node):
    def __init__(self, topic="chatter", qos=10, **kw):
        super().__init__("listener", **kw)
        self.got = []
        self.sub = self.create_subscription("std_msgs/msg/String", topic, lambda m: self.got.append(m.data), qos=qos)


def test_pub_sub_roundtrip_through_cdr():
    ctx = InprocContext()
    talker = Node("talker", context=ctx)
    pub = talker.create_publisher("std_msgs/msg/String", "chatter", qos=10)
    lis = Listener(context=ctx)
    pub.publish(msgs.new("std_msgs/msg/String", data="hello"))
    assert lis.got == []                 # nothing runs until the executor spins
    ctx.spin_once()
    assert lis.got == ["hello"]
    assert pub.get_subscription_count() == 1


def test_keep_last_depth_drops_oldest():
    ctx = InprocContext()
    pub = Node("talker", context=ctx).create_publisher("std_msgs/msg/String", "/chatter", qos=10)
    lis = Listener(qos=3, context=ctx)
    for i in range(7):
        pub.publish(msgs.new("std_msgs/msg/String", data=str(i)))
    ctx.spin_for(0.0)
    assert lis.got == ["4", "5", "6"] and lis.sub.dropped == 4


def test_transient_local_latching_only_for_transient_local_subscribers():
    ctx = InprocContext()
    latched = QoSProfile(depth=2, durability="transient_local")
    pub = Node("talker", context=ctx).create_publisher("std_msgs/msg/String", "/map", qos=latched)
    for s in ("a", "b", "c"):
        pub.publish(msgs.new("std_msgs/msg/String", data=s))
    late = Listener(topic="/map", qos=latched, context=ctx)
    volatile = Node("v", context=ctx)
    vgot = []
    volatile.create_subscription("std_msgs/msg/String", "/map", vgot.append, qos=10)
    ctx.spin_for(0.1)
    assert late.got == ["b", "c"] and vgot == []


def test_type_mismatch_does_not_match():
    ctx = InprocContext()
    pub = Node("talker", context=ctx).create_publisher("std_msgs/msg/Bool", "chatter")
    lis = Listener(context=ctx)
    pub.publish(msgs.new("std_msgs/msg/Bool", data=True))
    ctx.spin_for(0.1)
    assert lis.got == [] and ctx.type_mismatches == 1


def test_malformed_cdr_is_counted_and_the_executor_keeps_running(caplog):
    ctx = InprocContext()
    pub = Node("talker", context=ctx).create_publisher("std_msgs/msg/String", "chatter")
    lis = Listener(context=ctx)
    for _ in range(3):
        pub.publish(b"\x00\x01\x00\x00\xff\xff\xff\x7f")    # raw bytes: a string of 2 GB
    pub.publish(msgs.new("std_msgs/msg/String", data="ok"))
    with caplog.at_level("WARNING"):
        ctx.spin_for(0.1)
    assert lis.got == ["ok"]
    assert lis.rejected == {("/chatter", "malformed_cdr"): 3}
    assert sum("malformed_cdr" in r.getMessage() for r in caplog.records) == 1   # logged once


def test_timers_fire_in_time_order_on_the_fake_clock():
    ctx = InprocContext(start_time_s=10.0)
    n = Node("timers", context=ctx)
    log = []
    n.create_timer(0.3, lambda: log.append(("slow", round(n.get_clock().now_s(), 9))))
    t = n.create_timer(0.1, lambda: log.append(("fast", round(n.get_clock().now_s(), 9))))
    ctx.spin_for(0.35)
    assert log == [("fast", 10.1), ("fast", 10.2), ("slow", 10.3), ("fast", 10.3)]
    t.cancel()
    ctx.spin_for(0.3)
    assert log[-1] == ("slow", 10.6) and len(log) == 5
    # 1000 steps of 1 ms: integer nanoseconds, no drift
    m = Node("drift", context=ctx)
    ticks = []
    m.create_timer(0.001, lambda: ticks.append(1))
    for _ in range(1000):
        ctx.spin_for(0.001)
    assert len(ticks) == 1000


def test_timer_publishes_and_subscriber_sees_it_in_the_same_step():
    ctx = InprocContext()
    n = Node("talker", context=ctx)
    pub = n.create_publisher("std_msgs/msg/String", "chatter")
    n.create_timer(0.04, lambda: pub.publish(msgs.new("std_msgs/msg/String", data=f"{n.get_clock().now_s():.2f}")))
    lis = Listener(context=ctx)
    ctx.spin_for(0.2)
    assert lis.got == ["0.04", "0.08", "0.12", "0.16", "0.20"]


def test_service_round_trip_and_missing_server():
    ctx = InprocContext()
    srv = Node("adder", context=ctx)

    def add(req, resp):
        resp.sum = req.a + req.b
        return resp

    srv.create_service("example_interfaces/srv/AddTwoInts", "add_two_ints", add)
    cli_node = Node("client", context=ctx)
    cli = cli_node.create_client("example_interfaces/srv/AddTwoInts", "/add_two_ints")
    assert cli.wait_for_service(1.0)
    fut = cli.call_async(msgs.new("example_interfaces/srv/AddTwoInts_Request", a=2, b=40))
    assert not fut.done()
    ctx.spin_for(0.0)
    assert fut.done() and fut.result().sum == 42
    assert cli.call(msgs.new("example_interfaces/srv/AddTwoInts_Request", a=1, b=1), timeout_s=1.0).sum == 2
    other = cli_node.create_client("std_srvs/srv/Trigger", "nobody")
    assert not other.service_is_ready()
    f2 = other.call_async(msgs.new("std_srvs/srv/Trigger_Request"))
    ctx.spin_for(0.0)
    with pytest.raises(ServiceUnavailableError):
        f2.result()


def test_deferred_service_answers_when_the_job_is_done():
    ctx = InprocContext()
    srv_node = Node("adder", context=ctx)
    pending = []
    srv = srv_node.create_service("example_interfaces/srv/AddTwoInts", "add", lambda req, resp, respond:
                                  pending.append((req, resp, respond)), deferred=True)
    cli = Node("client", context=ctx).create_client("example_interfaces/srv/AddTwoInts", "/add")
    fut = cli.call_async(msgs.new("example_interfaces/srv/AddTwoInts_Request", a=2, b=40))
    ctx.spin_for(0.1)
    assert len(pending) == 1 and not fut.done() and srv.handled == 0
    req, resp, respond = pending[0]
    srv_node.create_timer(0.5, lambda: (setattr(resp, "sum", req.a + req.b), respond(resp), respond(resp)))
    ctx.spin_for(1.0)
    assert fut.done() and fut.result().sum == 42 and srv.handled == 1   # answered once


def test_malformed_service_request_is_rejected_without_reply():
    ctx = InprocContext()
    srv = Node("s", context=ctx)
    srv.create_service("std_srvs/srv/SetBool", "set", lambda req, resp: resp)
    cli = Node("c", context=ctx).create_client("std_srvs/srv/SetBool", "/set")
    fut = cli.call_async(b"\x00")          # shorter than a CDR header
    ctx.spin_for(0.1)
    assert not fut.done() and srv.rejected == {("/set", "malformed_cdr"): 1}


def test_parameters_types_ranges_and_overrides():
    ctx = InprocContext()
    n = Node("p", context=ctx, parameters={"rate_hz": 50, "gain": 7.0, "name": "x"})
    applied = []
    assert n.declare_parameter("rate_hz", 25.0, {"range": (1.0, 100.0)},
                               on_set=applied.append).value == 50.0                    # int -> double
    assert isinstance(n.get_parameter("rate_hz").value, float)
    with pytest.raises(ParameterError, match=r"gain.*7.0 out of range \[0.0, 5.0\]"):
        n.declare_parameter("gain", 1.0, {"range": (0.0, 5.0)})
    with pytest.raises(ParameterError, match="declared double"):
        Node("q", context=ctx, parameters={"rate_hz": "fast"}).declare_parameter("rate_hz", 25.0)
    assert n.declare_parameter("name", "default").value == "x"
    assert n.declare_parameter("unset", 3).value == 3
    r = n.set_parameter("rate_hz", 1000.0)
    assert not r.successful and "out of range" in r.reason
    assert n.get_parameter("rate_hz").value == 50.0
    assert n.set_parameter("rate_hz", 60).successful and n.get_parameter("rate_hz").value == 60.0
    assert applied == [60.0]                                   # the node applied it
    with pytest.raises(ParameterNotDeclaredError):
        n.get_parameter("nope")
    with pytest.raises(ParameterError, match="already declared"):
        n.declare_parameter("name", "y")
    n.declare_parameter("ro", 1, {"read_only": True})
    assert not n.set_parameter("ro", 2).successful


def test_a_parameter_set_is_applied_or_refused_never_a_silent_success():
    """Without on_set a parameter is read-only (startup); on_set applies or refuses with a reason."""
    ctx = InprocContext()
    n = Node("p", context=ctx)
    n.declare_parameter("port", 5005)
    r = n.set_parameter("port", 25999)
    assert not r.successful and "read-only" in r.reason and "-p port:=" in r.reason
    assert n.get_parameter("port").value == 5005 and n.get_parameter_descriptor("port").read_only
    assert not n.set_parameter("use_sim_time", True).successful
    assert n.set_parameter("port", 5005).successful           # its current value: nothing to apply
    state = {"v": 1.0}

    def apply(v):
        if v > 10.0:
            return "above what the driver takes"
        state["v"] = v
        return None

    n.declare_parameter("speed", 1.0, on_set=apply)
    assert n.set_parameter("speed", 2.5).successful and state["v"] == 2.5
    r = n.set_parameter("speed", 20.0)
    assert not r.successful and r.reason == "speed: above what the driver takes"
    assert n.get_parameter("speed").value == 2.5 and state["v"] == 2.5

    def boom(v):
        raise ValueError("cannot rebind now")

    n.declare_parameter("x", 1, on_set=boom)
    r = n.set_parameter("x", 2)
    assert not r.successful and "cannot rebind now" in r.reason and n.get_parameter("x").value == 1


def test_names_namespaces_private_and_remaps():
    ctx = InprocContext()
    n = Node("cam", context=ctx, namespace="robot1", remap={"image": "/camera/raw", "cam:info": "meta"})
    assert n.get_fully_qualified_name() == "/robot1/cam"
    assert n.create_publisher("std_msgs/msg/String", "chatter").topic_name == "/robot1/chatter"
    assert n.create_publisher("std_msgs/msg/String", "/abs").topic_name == "/abs"
    assert n.create_publisher("std_msgs/msg/String", "~/status").topic_name == "/robot1/cam/status"
    assert n.create_publisher("std_msgs/msg/String", "image").topic_name == "/camera/raw"
    assert n.create_publisher("std_msgs/msg/String", "info").topic_name == "/robot1/meta"
    m = Node("other", context=ctx, remap={"__ns": "/x", "__node": "renamed"})
    assert m.get_fully_qualified_name() == "/x/renamed"
    for bad in ("9lives", "a b", "a/b", ""):
        with pytest.raises(InvalidNameError):
            Node(bad, context=ctx)
    for bad in ("a//b", "chat ter", "x/", "~x", "1abc"):
        with pytest.raises(InvalidNameError):
            n.create_publisher("std_msgs/msg/String", bad)


def test_use_sim_time_follows_clock_topic():
    ctx = InprocContext(start_time_s=100.0)
    n = Node("sim", context=ctx, parameters={"use_sim_time": True})
    fired = []
    n.create_timer(0.5, lambda: fired.append(n.get_clock().now_s()))
    assert n.get_clock().now_s() == 0.0
    clock_pub = Node("clock", context=ctx).create_publisher("rosgraph_msgs/msg/Clock", "/clock", qos=1)
    ctx.spin_for(5.0)                      # wall/fake time passes, sim time does not
    assert fired == []
    for k in range(1, 5):                  # sim time 0.25 s per step
        clock_pub.publish(msgs.new("rosgraph_msgs/msg/Clock", clock={"sec": 0, "nanosec": 250_000_000 * k}))
        ctx.spin_for(0.0)
    assert n.get_clock().now_s() == 1.0 and fired == [0.5, 1.0]


def test_a_late_timer_fires_once_and_counts_the_periods_it_skipped():
    """Late by several periods (sim time jumps 0.1 -> 0.45 s): one call, the deadlines 0.3 and
    0.4 s are skipped and counted (``Timer.missed``, the node's ``loop_counters``, logged by
    ``run_node`` at shutdown)."""
    ctx = InprocContext()
    n = Node("late", context=ctx, parameters={"use_sim_time": True})
    fired = []
    t = n.create_timer(0.1, lambda: fired.append(n.get_clock().now_s()))
    clock_pub = Node("clock", context=ctx).create_publisher("rosgraph_msgs/msg/Clock", "/clock", qos=1)
    for ns in (100_000_000, 450_000_000, 500_000_000):
        clock_pub.publish(msgs.new("rosgraph_msgs/msg/Clock", clock={"sec": 0, "nanosec": ns}))
        ctx.spin_for(0.0)
    assert fired == [0.1, 0.45, 0.5] and t.missed == 2
    assert n.loop_counters() == {"timer_periods_missed": 2, "messages_dropped": 0, "inputs_rejected": 0}


def test_loop_counters_count_keep_last_drops_and_rejected_inputs():
    ctx = InprocContext()
    talker = Node("talker", context=ctx)
    pub = talker.create_publisher("std_msgs/msg/String", "chatter", qos=10)
    lis = Listener(qos=2, context=ctx)
    for k in range(5):                     # the executor does not spin: depth 2 keeps the last 2
        pub.publish(msgs.new("std_msgs/msg/String", data=str(k)))
    ctx.spin_for(0.0)
    assert lis.got == ["3", "4"]
    assert lis.loop_counters()["messages_dropped"] == 3
    lis._reject("chatter", "malformed_cdr", "test")
    assert lis.loop_counters()["inputs_rejected"] == 1


def test_callback_exception_propagates_in_tests_and_is_counted_when_asked():
    ctx = InprocContext()
    n = Node("boom", context=ctx)
    n.create_timer(0.1, lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        ctx.spin_for(0.1)
    ctx2 = InprocContext(raise_callback_errors=False)
    m = Node("boom", context=ctx2)
    ok = []
    m.create_timer(0.1, lambda: 1 / 0)
    m.create_timer(0.1, lambda: ok.append(1))
    ctx2.spin_for(0.3)
    assert ctx2.callback_errors == 3 and ok == [1, 1, 1]


def test_spin_until_and_destroy_node():
    ctx = InprocContext()
    n = Node("t", context=ctx)
    cnt = []
    n.create_timer(0.25, lambda: cnt.append(1))
    assert ctx.spin_until(lambda: len(cnt) >= 3, timeout_s=10.0)
    assert ctx.now_s() == pytest.approx(0.75)
    assert not ctx.spin_until(lambda: len(cnt) >= 100, timeout_s=1.0)
    n.destroy_node()
    c0 = len(cnt)
    ctx.spin_for(1.0)
    assert len(cnt) == c0 and n not in ctx.nodes


def test_parameter_descriptor_from_the_config_schema():
    ctx = InprocContext()
    n = Node("p", context=ctx, parameters={"base_rate_hz": 0.0, "mode": "peer"})
    with pytest.raises(ParameterError, match="must be > 0"):        # schema: gt 0
        n.declare_parameter("base_rate_hz", 500.0, "teleop.loop.base_rate_hz")
    assert n.declare_parameter("mode", "client", "runtime.zenoh.mode").value == "peer"
    assert not n.set_parameter("mode", "router").successful          # enum [client, peer]
    d = n.get_parameter_descriptor("mode")
    assert d.type == "string" and "session mode" in d.description
    m = Node("q", context=ctx, parameters={"base_rate_hz": 20000.0})
    with pytest.raises(ParameterError, match=r"out of range \[None, 10000\]"):
        m.declare_parameter("base_rate_hz", 500.0, "teleop.loop.base_rate_hz")
    with pytest.raises(ParameterError, match="no config schema entry"):
        m.declare_parameter("x", 1.0, "teleop.nope")


def test_log_lines_go_to_rosout_latched():
    ctx = InprocContext(start_time_s=3.0)
    ctx.rosout_enabled = True                 # network backends: on by default
    n = Node("talker", context=ctx, namespace="demo")
    n.get_logger().warn("low battery")
    n.get_logger().debug("not enabled: not published")
    late = Node("viewer", context=ctx)
    got = []
    late.create_subscription("rcl_interfaces/msg/Log", "/rosout", got.append,
                             qos=QoSProfile(depth=1000, durability="transient_local"))
    ctx.spin_for(0.0)
    mine = [m for m in got if m.name == "demo.talker"]
    assert [(m.level, m.msg, m.stamp.sec) for m in mine] == [(30, "low battery", 3)]
    quiet = Node("quiet", context=InprocContext())
    assert all(p.topic_name != "/rosout" for p in quiet._publishers)
