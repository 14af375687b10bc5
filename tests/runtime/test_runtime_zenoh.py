"""Zenoh backend against a real Zenoh router (router-mode session opened in-process on a free
loopback port, standing in for rmw_zenohd) and real client sessions. A plain ``zenoh`` session
plays the foreign ROS 2 peer: it sees exactly the keys, tokens and bytes rmw_zenoh would.

No wall-clock assertions: ``wait_until`` only bounds how long a condition may take to hold."""
import os
import socket
import subprocess
import sys
import time

import pytest
import zenoh

from hri_runtime import msgs
from hri_runtime.impl import wire
from hri_runtime.context import TransportUnavailableError
from hri_runtime.qos import QOS_LATCHED
from hri_runtime.node import Node
from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams, router_answers, start_router
from ..stack_launch import free_port, wait_for  # noqa: E402  (bounded waits, free ports)

STRING_HASH = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
ADD_TWO_INTS_HASH = "RIHS01_e118de6bf5eeb66a2491b5bda11202e7b68f198d6f67922cf30364858239c81a"
WAIT_S = 10.0


def raw_sees_token(raw, *fragments):
    """The foreign session (through the router) knows a liveliness token containing all
    fragments, so the router also knows the entity declared before that token."""
    replies = raw.liveliness().get("@ros2_lv/**", timeout=1.0)
    return any(r.ok is not None and all(f in str(r.ok.key_expr) for f in fragments) for r in replies)


@pytest.fixture
def make_ctx(zenoh_router):
    made = []

    def make(**kw):
        params = ZenohParams.defaults().with_(connect_endpoints=[zenoh_router], **kw)
        ctx = ZenohContext(params)
        ctx.spin_in_background()
        made.append(ctx)
        return ctx

    yield make
    for c in made:
        c.shutdown()
        c.close()


@pytest.fixture
def raw(zenoh_router):
    """A plain zenoh client session: the foreign peer."""
    c = zenoh.Config()
    c.insert_json5("mode", '"client"')
    c.insert_json5("connect/endpoints", f'["{zenoh_router}"]')
    c.insert_json5("scouting/multicast/enabled", "false")
    s = zenoh.open(c)
    yield s
    s.close()


def test_defaults_listen_on_loopback_only():
    p = ZenohParams.defaults()
    assert p.router_listen_endpoints == ("tcp/127.0.0.1:7447",) or "HRI_ZENOH_ROUTER_LISTEN" in os.environ
    assert all("127.0.0.1" in e for e in p.listen_endpoints)
    assert p.mode == "client" and p.multicast_scouting is False


def test_pubsub_roundtrip_with_attachment(make_ctx):
    a, b = make_ctx(), make_ctx()
    talker = Node("talker", context=a)
    listener = Node("listener", context=b)
    got, metas = [], []
    sub = listener.create_subscription("std_msgs/msg/String", "chatter", lambda m: got.append(m.data))
    handle = sub._handle  # the backend's subscription: record the meta it hands to the node
    real_deliver = handle._deliver
    handle._deliver = lambda data, meta: (metas.append(wire.message_info(*meta)), real_deliver(data, meta))
    pub = talker.create_publisher("std_msgs/msg/String", "chatter")
    assert wait_for(lambda: pub.get_subscription_count() == 1)
    for i in range(5):
        pub.publish(msgs.new("std_msgs/msg/String", data=f"hello {i}"))
    assert wait_for(lambda: len(got) == 5)
    assert got == [f"hello {i}" for i in range(5)]
    assert [m.sequence_number for m in metas] == [1, 2, 3, 4, 5]
    assert {m.publisher_gid for m in metas} == {pub._raw.gid}
    assert all(m.source_timestamp_ns > 1_600_000_000 * 10**9 for m in metas)
    assert metas[0].key == "0/chatter/std_msgs::msg::dds_::String_/" + STRING_HASH
    assert a.drop_counts() == {} and b.drop_counts() == {}
    # ready CDR bytes (as rclpy allows) on the same publisher; a message of another type is refused
    pub.publish(bytearray(msgs.serialize(msgs.new("std_msgs/msg/String", data="raw"))))
    with pytest.raises(msgs.EncodeError, match="expected std_msgs/msg/String"):
        pub.publish(msgs.new("std_msgs/msg/Bool", data=True))
    assert wait_for(lambda: len(got) == 6) and got[-1] == "raw"
    assert pub.published == 6 and sub.received == 6 and metas[-1].sequence_number == 6


def test_foreign_peer_sees_exact_key_payload_and_attachment(make_ctx, raw):
    ctx = make_ctx()
    node = Node("talker", context=ctx, namespace="robot1")
    seen = []
    s = raw.declare_subscriber("0/**", lambda smp: seen.append(
        (str(smp.key_expr), smp.payload.to_bytes(), smp.attachment.to_bytes())))
    pub = node.create_publisher("std_msgs/msg/String", "chatter")
    assert wait_for(lambda: pub._raw._z.matching_status.matching)   # the raw subscriber is known
    pub.publish(msgs.new("std_msgs/msg/String", data="hello"))
    pub.publish(msgs.new("std_msgs/msg/String", data="hello"))
    assert wait_for(lambda: len(seen) == 2)
    s.undeclare()
    key, payload, att = seen[0]
    assert key == "0/robot1/chatter/std_msgs::msg::dds_::String_/" + STRING_HASH
    assert payload == bytes.fromhex("000100000600000068656c6c6f00")
    assert len(att) == 33 and att[:8] == (1).to_bytes(8, "little") and att[16] == 0x10
    assert seen[1][2][:8] == (2).to_bytes(8, "little")
    assert att[17:] == pub._raw.gid == seen[1][2][17:]


def test_liveliness_tokens_have_the_rmw_zenoh_format(make_ctx, raw):
    tokens = {}

    def on_token(smp):
        tokens[str(smp.key_expr)] = smp.kind

    lsub = raw.liveliness().declare_subscriber("@ros2_lv/**", on_token, history=True)
    ctx = make_ctx()
    node = Node("talker", context=ctx, namespace="robot1")
    node.create_publisher("std_msgs/msg/String", "chatter", qos=7)
    node.create_subscription("std_msgs/msg/String", "/rosout_like", lambda m: None, qos=QOS_LATCHED)
    node.create_service("example_interfaces/srv/AddTwoInts", "add_two_ints", lambda q, r: r)
    node.create_client("example_interfaces/srv/AddTwoInts", "/other/add_two_ints")
    z = ctx.zid
    ent = ctx._node_entities[id(node)].nid
    eid = {(ep.kind.value, ep.name): ep.eid for ep in ctx._endpoints}
    expected = {
        f"@ros2_lv/0/{z}/{ent}/{ent}/NN/%/%robot1/talker",
        f"@ros2_lv/0/{z}/{ent}/{eid['MP', '/robot1/chatter']}/MP/%/%robot1/talker/%robot1%chatter/std_msgs::msg::dds_::String_/{STRING_HASH}/::,7:,:,:,,",
        f"@ros2_lv/0/{z}/{ent}/{eid['MS', '/rosout_like']}/MS/%/%robot1/talker/%rosout_like/std_msgs::msg::dds_::String_/{STRING_HASH}/:1:,1:,:,:,,",
        f"@ros2_lv/0/{z}/{ent}/{eid['SS', '/robot1/add_two_ints']}/SS/%/%robot1/talker/%robot1%add_two_ints/example_interfaces::srv::dds_::AddTwoInts_/{ADD_TWO_INTS_HASH}/::,10:,:,:,,",
        f"@ros2_lv/0/{z}/{ent}/{eid['SC', '/other/add_two_ints']}/SC/%/%robot1/talker/%other%add_two_ints/example_interfaces::srv::dds_::AddTwoInts_/{ADD_TWO_INTS_HASH}/::,10:,:,:,,",
    }
    # the node layer adds its own endpoints (/rosout, /parameter_events, parameter services);
    # their tokens are built by the same code (golden-tested in test_runtime_wire.py)
    mine = {("MP", "/robot1/chatter"), ("MS", "/rosout_like"), ("SS", "/robot1/add_two_ints"),
            ("SC", "/other/add_two_ints")}
    expected |= {ep.token_key for ep in ctx._endpoints if (ep.kind.value, ep.name) not in mine}
    assert len(set(eid.values())) == len(eid)          # entity ids unique in the session
    assert wait_for(lambda: expected <= {k for k, v in tokens.items() if v == zenoh.SampleKind.PUT}), \
        "\n".join(sorted(expected) + ["--"] + sorted(tokens))
    ours = {k for k in tokens if f"/{z}/" in k}
    assert ours == expected
    # rmw_zenoh's parser accepts every one of them
    assert all(wire.parse_token(k) for k in ours)
    # and they go away with the node
    node.destroy_node()
    assert wait_for(lambda: all(tokens[k] == zenoh.SampleKind.DELETE for k in expected))
    lsub.undeclare()


def test_graph_discovery_across_sessions(make_ctx):
    a, b = make_ctx(), make_ctx()
    n = Node("cam", context=a, namespace="robot1")
    n.create_publisher("sensor_msgs/msg/JointState", "joint_states")
    n.create_service("std_srvs/srv/Trigger", "~/reset", lambda q, r: r)
    assert wait_for(lambda: "/robot1/cam" in b.graph().nodes and "/robot1/joint_states" in b.graph().topics
                      and "/robot1/cam/reset" in b.graph().services)
    g = b.graph()
    assert g.topics["/robot1/joint_states"] == {"sensor_msgs/msg/JointState"}
    assert g.publishers["/robot1/joint_states"] == ["/robot1/cam"]
    assert g.services["/robot1/cam/reset"] == {"std_srvs/srv/Trigger"}


def test_service_round_trip(make_ctx):
    a, b = make_ctx(), make_ctx()
    server = Node("adder", context=a)

    def add(req, resp):
        resp.sum = req.a + req.b
        return resp

    server.create_service("example_interfaces/srv/AddTwoInts", "add_two_ints", add)
    client_node = Node("asker", context=b)
    cli = client_node.create_client("example_interfaces/srv/AddTwoInts", "add_two_ints")
    assert cli.wait_for_service(WAIT_S)
    for x in range(3):
        resp = cli.call(msgs.new("example_interfaces/srv/AddTwoInts_Request", a=x, b=40), timeout_s=WAIT_S)
        assert resp.sum == x + 40
    assert cli._raw._seq == 3


def test_service_reply_echoes_sequence_number_and_client_gid(make_ctx, raw):
    ctx = make_ctx()
    server = Node("adder", context=ctx)
    server.create_service("example_interfaces/srv/AddTwoInts", "add_two_ints",
                          lambda q, r: msgs.new("example_interfaces/srv/AddTwoInts_Response", sum=q.a + q.b))
    key = "0/add_two_ints/example_interfaces::srv::dds_::AddTwoInts_/" + ADD_TWO_INTS_HASH
    req = msgs.serialize(msgs.new("example_interfaces/srv/AddTwoInts_Request", a=2, b=3))
    gid = bytes(range(16))
    assert wait_for(lambda: raw_sees_token(raw, f"/{ctx.zid}/", "/SS/%/%/adder/%add_two_ints/"))
    replies = list(raw.get(key, payload=req, attachment=wire.pack_attachment(77, time.time_ns(), gid),
                           target=zenoh.QueryTarget.ALL_COMPLETE,
                           consolidation=zenoh.ConsolidationMode.NONE, timeout=WAIT_S))
    assert len(replies) == 1 and replies[0].ok is not None
    rep = replies[0].ok
    assert str(rep.key_expr) == key
    assert msgs.deserialize(rep.payload.to_bytes(), "example_interfaces/srv/AddTwoInts_Response").sum == 5
    seq, ts, rgid = wire.unpack_attachment(rep.attachment.to_bytes())
    assert (seq, rgid) == (77, gid) and ts > 0
    # a request without attachment is refused with an error reply and counted
    bad = list(raw.get(key, payload=req, target=zenoh.QueryTarget.ALL_COMPLETE,
                       consolidation=zenoh.ConsolidationMode.NONE, timeout=WAIT_S))
    assert len(bad) == 1 and bad[0].err is not None
    assert ctx.drop_counts()["service /add_two_ints [example_interfaces/srv/AddTwoInts]"] == {"no_attachment": 1}


def test_call_without_server_fails_cleanly(make_ctx):
    ctx = make_ctx(service_timeout_s=0.5)
    n = Node("asker", context=ctx)
    cli = n.create_client("std_srvs/srv/Trigger", "/nobody/here")
    assert not cli.service_is_ready()
    fut = cli.call_async(msgs.new("std_srvs/srv/Trigger_Request"))
    assert fut.wait(WAIT_S)
    assert fut.exception() is not None and "no valid reply" in str(fut.exception())


def test_garbage_on_the_data_key_is_counted_and_the_subscriber_survives(make_ctx, raw):
    ctx = make_ctx()
    node = Node("listener", context=ctx)
    got = []
    node.create_subscription("std_msgs/msg/String", "garbage_chatter", lambda m: got.append(m.data))
    key = "0/garbage_chatter/std_msgs::msg::dds_::String_/" + STRING_HASH
    assert wait_for(lambda: raw_sees_token(raw, f"/{ctx.zid}/", "/MS/%/%/listener/%garbage_chatter/"))
    good_att = wire.pack_attachment(1, time.time_ns(), bytes(16))
    raw.put(key, b"\x00\x01\x00\x00\x06\x00\x00\x00hello\x00")                # no attachment
    raw.put(key, b"\x00\x01\x00\x00\x06\x00\x00\x00hello\x00", attachment=b"short")
    raw.put(key, b"this is not CDR", attachment=good_att)                   # no CDR header
    raw.put(key, b"\x00\x01\x00\x00\xff\xff\xff\x7fhel", attachment=good_att)  # CDR header, bad body
    raw.put("0/garbage_chatter/std_msgs::msg::dds_::String_/RIHS01_" + "0" * 64, msgs.serialize(
        msgs.new("std_msgs/msg/String", data="wrong hash")), attachment=good_att)
    raw.put("0/garbage_chatter/std_msgs::msg::dds_::Bool_/" + STRING_HASH, b"\x00\x01\x00\x00\x01",
            attachment=good_att)
    raw.put(key, msgs.serialize(msgs.new("std_msgs/msg/String", data="still alive")), attachment=good_att)
    # publishers of another type / type hash on the topic (rmw_zenoh tokens): the exact-key
    # subscription never receives their samples (above); each is counted once from the graph
    zid = str(raw.zid())
    tokens = [raw.liveliness().declare_token(wire.endpoint_token(
        0, zid, 0, eid, "MP", "/", "talker", "/garbage_chatter", type_name, type_hash, 10))
        for eid, type_name, type_hash in ((1, "std_msgs/msg/String", "RIHS01_" + "0" * 64),
                                          (2, "std_msgs/msg/Bool", STRING_HASH))]
    drops = {}
    assert wait_for(lambda: got == ["still alive"] and node.rejected_count() == 1 and drops.update(
        ctx.drop_counts().get("subscription /garbage_chatter [std_msgs/msg/String]", {})) is None
        and len(drops) == 5)
    assert drops == {"no_attachment": 1, "bad_attachment": 1, "bad_cdr_header": 1,
                     "hash_mismatch": 1, "type_mismatch": 1}
    assert node.rejected == {("/garbage_chatter", "malformed_cdr"): 1}
    ctx.discover(WAIT_S)                   # the same tokens again: still counted once
    assert ctx.drop_counts()["subscription /garbage_chatter [std_msgs/msg/String]"] == drops
    for tok in tokens:
        tok.undeclare()


def test_late_joining_transient_local_subscriber_gets_the_cached_sample(make_ctx):
    a = make_ctx()
    pub_node = Node("map_server", context=a)
    pub = pub_node.create_publisher("std_msgs/msg/String", "map_name", qos=QOS_LATCHED)
    pub.publish(msgs.new("std_msgs/msg/String", data="old"))
    pub.publish(msgs.new("std_msgs/msg/String", data="latched"))
    b = make_ctx()                       # joins after the publications
    got = []
    Node("late", context=b).create_subscription("std_msgs/msg/String", "map_name",
                                                lambda m: got.append(m.data), qos=QOS_LATCHED)
    assert wait_for(lambda: got == ["latched"])
    pub.publish(msgs.new("std_msgs/msg/String", data="live"))
    assert wait_for(lambda: got == ["latched", "live"])


def test_humble_mode_puts_type_hash_not_supported(make_ctx, raw):
    ctx = make_ctx(humble=True)
    seen = []
    s = raw.declare_subscriber("0/humble_chatter/**", lambda smp: seen.append(str(smp.key_expr)))
    pub = Node("talker", context=ctx).create_publisher("std_msgs/msg/String", "humble_chatter")
    got = []
    Node("listener", context=ctx).create_subscription("std_msgs/msg/String", "humble_chatter",
                                                      lambda m: got.append(m.data))
    assert wait_for(lambda: pub.get_subscription_count() == 1)
    pub.publish(msgs.new("std_msgs/msg/String", data="hi"))
    assert wait_for(lambda: seen and got == ["hi"])
    assert seen[0] == "0/humble_chatter/std_msgs::msg::dds_::String_/TypeHashNotSupported"
    s.undeclare()


def test_router_helpers(zenoh_router):
    assert router_answers(zenoh_router, 1.0)
    with pytest.raises(TransportUnavailableError):
        start_router([zenoh_router])                  # the port is taken by the running router
    closed = f"tcp/127.0.0.1:{free_port()}"
    assert not router_answers(closed, 1.0)
    with pytest.raises(TransportUnavailableError) as e:
        ZenohContext(ZenohParams.defaults().with_(connect_endpoints=[closed]))
    assert "no Zenoh router" in str(e.value)


TALKER = """
import sys
from hri_runtime import msgs
from hri_runtime.node import Node, run_node
class Talker(Node):
    def __init__(self, **kw):
        super().__init__("proc_talker", **kw)
        self.pub = self.create_publisher("std_msgs/msg/String", "proc_chatter", qos=QOS)
        self.n = 0
        self.create_timer(0.02, self.tick)
    def tick(self):
        self.n += 1
        self.pub.publish(msgs.new("std_msgs/msg/String", data=f"msg {self.n}"))
from hri_runtime.qos import QOS_DEFAULT as QOS
sys.exit(run_node(Talker, sys.argv[1:]))
"""


def test_separate_process_talker_seen_by_name_and_data(make_ctx, zenoh_router):
    ctx = make_ctx()
    got = []
    Node("listener", context=ctx).create_subscription("std_msgs/msg/String", "/ns1/proc_chatter",
                                                      lambda m: got.append(m.data))
    env = dict(os.environ, HRI_TRANSPORT="zenoh", HRI_ZENOH_CONNECT=f"[{zenoh_router}]")
    proc = subprocess.Popen([sys.executable, "-c", TALKER, "--ros-args", "-r", "__ns:=/ns1"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: "/ns1/proc_talker" in ctx.graph().nodes, 30.0), proc.stderr.read() if proc.poll() is not None else ""
        assert wait_for(lambda: len(got) >= 3, 30.0)
        assert all(m.startswith("msg ") for m in got)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0, err
    assert wait_for(lambda: "/ns1/proc_talker" not in ctx.graph().nodes)


def test_malformed_liveliness_tokens_are_counted_not_fatal(make_ctx, raw):
    ctx = make_ctx()
    bad = raw.liveliness().declare_token("@ros2_lv/0/abc/0/1/MP/%/%/n/%t/x::msg::dds_::Y_/h/::,10")
    good = raw.liveliness().declare_token("@ros2_lv/0/abc/0/0/NN/%/%/foreign_node")
    assert wait_for(lambda: "/foreign_node" in ctx.graph().nodes)
    assert wait_for(lambda: ctx.graph_drops.counts.get("bad_qos") == 1)
    assert ctx.drop_counts()["liveliness"] == {"bad_qos": 1}
    bad.undeclare()
    good.undeclare()
    assert wait_for(lambda: "/foreign_node" not in ctx.graph().nodes)


def _exclusion_probe():
    """Callbacks that record overlap (max number running at once), thread and order."""
    import threading
    lock = threading.Lock()
    st = {"active": 0, "max_active": 0, "threads": set(), "got": [], "ticks": 0}

    def enter():
        with lock:
            st["active"] += 1
            st["max_active"] = max(st["max_active"], st["active"])
        st["threads"].add(threading.get_ident())
        time.sleep(0.0005)            # widen the window in which an overlap would show
        with lock:
            st["active"] -= 1

    return st, enter


@pytest.mark.parametrize("inline", [True, False])
def test_callbacks_of_a_context_are_mutually_exclusive_and_ordered(make_ctx, inline):
    """ROS 2's guarantee for a node's default (mutually exclusive) callback group: callbacks
    never overlap, and a subscription's messages arrive in publication order. With
    runtime.zenoh.inline_callbacks (default) a subscription callback may run on Zenoh's thread
    when the executor is idle; with it off everything runs on the executor thread."""
    a, b = make_ctx(inline_callbacks=inline), make_ctx(inline_callbacks=inline)
    st, enter = _exclusion_probe()

    def on_msg(m):
        enter()
        st["got"].append(int(m.data))

    def tick():
        enter()
        st["ticks"] += 1

    def add(req, resp):
        resp.sum = req.a + req.b
        return resp

    Node("srv", context=a).create_service("example_interfaces/srv/AddTwoInts", "thread_add", add)
    node = Node("multi", context=b)
    node.create_subscription("std_msgs/msg/String", "thread_topic", on_msg, qos=1000)
    timer = node.create_timer(0.001, tick)
    pub = Node("pub", context=a).create_publisher("std_msgs/msg/String", "thread_topic", qos=1000)
    cli = node.create_client("example_interfaces/srv/AddTwoInts", "thread_add")
    assert wait_for(lambda: pub.get_subscription_count() == 1 and cli.service_is_ready())
    n = 200
    for i in range(n):
        pub.publish(msgs.new("std_msgs/msg/String", data=str(i)))
    fut = cli.call_async(msgs.new("example_interfaces/srv/AddTwoInts_Request", a=1, b=2))
    assert wait_for(lambda: fut.done() and len(st["got"]) == n and st["ticks"] >= 3)
    assert fut.result().sum == 3
    assert st["got"] == list(range(n))               # per-subscription order kept
    assert st["max_active"] == 1                     # never two callbacks of b at once
    timer.cancel()                                   # executor idle from now on
    for i in range(n, n + 5):                        # spaced: each one finds the executor idle
        pub.publish(msgs.new("std_msgs/msg/String", data=str(i)))
        assert wait_for(lambda: len(st["got"]) == i + 1)
    assert st["got"] == list(range(n + 5))
    assert st["max_active"] == 1
    if inline:
        assert b.executor.inline_runs > 0            # some ran on the delivering thread
    else:
        assert b.executor.inline_runs == 0
        assert st["threads"] == {b._bg.ident}        # all on b's one executor thread


def test_blocking_call_from_an_inline_callback_is_refused_not_deadlocked(make_ctx):
    """A subscription callback that runs inline (Zenoh thread, executor lock held) must not
    block on a service call (the reply needs the executor): refused as on the executor thread."""
    a, b = make_ctx(), make_ctx()
    Node("srv", context=a).create_service("example_interfaces/srv/AddTwoInts", "inl_add",
                                          lambda req, resp: resp)
    node = Node("inl", context=b)
    cli = node.create_client("example_interfaces/srv/AddTwoInts", "inl_add")
    errors = []

    def on_msg(_m):
        try:
            cli.call(msgs.new("example_interfaces/srv/AddTwoInts_Request"), timeout_s=1.0)
        except RuntimeError as e:
            errors.append(str(e))

    node.create_subscription("std_msgs/msg/String", "inl_topic", on_msg)
    pub = Node("pub", context=a).create_publisher("std_msgs/msg/String", "inl_topic")
    assert wait_for(lambda: pub.get_subscription_count() == 1 and cli.service_is_ready())
    pub.publish(msgs.new("std_msgs/msg/String", data="x"))
    assert wait_for(lambda: len(errors) == 1)
    assert "deadlock" in errors[0]
