"""Backend selection for the network backends: HRI_TRANSPORT=zenoh builds a ZenohContext from
the config (router from HRI_ZENOH_CONNECT); the rclpy backend is imported lazily and refuses
clearly where rclpy does not exist (as in `make test`'s .venv; `make ros2-ci` runs it on rclpy)."""
import importlib.util
import socket
import sys

import pytest

from hri_runtime import context as ctxmod
from hri_runtime.context import TransportUnavailableError
from hri_runtime.impl.zenoh_backend import ZenohContext, start_router
from ..stack_launch import free_port  # noqa: E402  (bounded waits, free ports)


def test_hri_transport_zenoh_builds_a_zenoh_context_on_the_configured_router(monkeypatch):
    ep = f"tcp/127.0.0.1:{free_port()}"
    router = start_router([ep])
    try:
        monkeypatch.setenv("HRI_TRANSPORT", "zenoh")
        monkeypatch.setenv("HRI_ZENOH_CONNECT", f"[{ep}]")
        monkeypatch.setenv("ROS_DOMAIN_ID", "7")
        ctx = ctxmod.make_context()
        try:
            assert isinstance(ctx, ZenohContext)
            assert ctx.params.connect_endpoints == (ep,) and ctx.params.domain_id == 7
        finally:
            ctx.shutdown()
            ctx.close()
    finally:
        router.close()


def test_importing_the_rclpy_backend_does_not_import_rclpy():
    import hri_runtime.impl.rclpy_backend  # noqa: F401
    assert "rclpy" not in sys.modules or importlib.util.find_spec("rclpy") is not None


@pytest.mark.skipif(importlib.util.find_spec("rclpy") is not None, reason="rclpy is installed here")
def test_rclpy_backend_refuses_clearly_without_ros(monkeypatch):
    monkeypatch.setenv("HRI_TRANSPORT", "rclpy")
    with pytest.raises(TransportUnavailableError) as e:
        ctxmod.make_context()
    assert "ROS 2 installation" in str(e.value) and "HRI_TRANSPORT=zenoh" in str(e.value)


def test_discover_sees_another_session_at_once():
    import time
    from hri_runtime.node import Node
    from hri_runtime.impl.zenoh_backend import ZenohParams
    ep = f"tcp/127.0.0.1:{free_port()}"
    router = start_router([ep])
    params = ZenohParams.defaults().with_(connect_endpoints=[ep])
    a = ZenohContext(params)
    try:
        n = Node("talker", context=a, namespace="robot1")
        n.create_publisher("std_msgs/msg/String", "chatter")
        b = ZenohContext(params)            # the router knows a's tokens once b sees them
        try:
            end = time.monotonic() + 10.0
            while (("/robot1/talker" not in b.graph().nodes or "/robot1/chatter" not in b.graph().topics)
                   and time.monotonic() < end):
                time.sleep(0.01)
        finally:
            b.close()
        d = ZenohContext(params)            # a one-shot CLI: queries instead of waiting
        try:
            g = d.discover(timeout_s=5.0)
            assert "/robot1/talker" in g.nodes
            assert g.topics["/robot1/chatter"] == {"std_msgs/msg/String"}
        finally:
            d.close()
    finally:
        a.close()
        router.close()


def test_peer_mode_session_talks_to_a_client_session():
    """mode: peer is rmw_zenoh's own session mode (listening on loopback only by default)."""
    import time
    from hri_runtime import msgs
    from hri_runtime.node import Node
    from hri_runtime.impl.zenoh_backend import ZenohParams
    ep = f"tcp/127.0.0.1:{free_port()}"
    router = start_router([ep])
    base = ZenohParams.defaults().with_(connect_endpoints=[ep])
    peer, client = ZenohContext(base.with_(mode="peer")), ZenohContext(base)
    try:
        for c in (peer, client):
            c.spin_in_background()
        got = []
        Node("listener", context=client).create_subscription("std_msgs/msg/String", "peer_chatter",
                                                             lambda m: got.append(m.data))
        pub = Node("talker", context=peer).create_publisher("std_msgs/msg/String", "peer_chatter")
        end = time.monotonic() + 10
        while pub.get_subscription_count() < 1 and time.monotonic() < end:
            time.sleep(0.01)
        pub.publish(msgs.new("std_msgs/msg/String", data="from a peer"))
        while not got and time.monotonic() < end:
            time.sleep(0.01)
        assert got == ["from a peer"]
    finally:
        for c in (peer, client):
            c.shutdown()
            c.close()
        router.close()


def test_nodes_reconnect_after_the_router_restarts():
    """A restarted router (hri launch or rmw_zenohd) gets the sessions, their subscribers and
    tokens back without restarting the nodes."""
    import time
    from hri_runtime import msgs
    from hri_runtime.node import Node
    from hri_runtime.impl.zenoh_backend import ZenohParams
    ep = f"tcp/127.0.0.1:{free_port()}"
    router = start_router([ep])
    params = ZenohParams.defaults().with_(connect_endpoints=[ep])
    a, b = ZenohContext(params), ZenohContext(params)
    try:
        for c in (a, b):
            c.spin_in_background()
        got = []
        Node("l", context=b).create_subscription("std_msgs/msg/String", "restart_topic",
                                                 lambda m: got.append(m.data))
        pub = Node("t", context=a).create_publisher("std_msgs/msg/String", "restart_topic")
        end = time.monotonic() + 10
        while pub.get_subscription_count() < 1 and time.monotonic() < end:
            time.sleep(0.01)
        router.close()
        router = start_router([ep])
        end = time.monotonic() + 20
        while not got and time.monotonic() < end:
            pub.publish(msgs.new("std_msgs/msg/String", data="after restart"))
            time.sleep(0.05)
        assert got and got[0] == "after restart"
        assert {"/l", "/t"} <= set(b.graph().nodes)
    finally:
        for c in (a, b):
            c.shutdown()
            c.close()
        router.close()


@pytest.mark.parametrize("kind", ["inproc", "zenoh", "rclpy"])
def test_declare_parameter_returns_a_parameter_with_value_on_every_backend(kind):
    """As rclpy: ``declare_parameter`` returns a Parameter, a node reads ``.value`` (the Node
    class is the same on every backend; an override from ``parameters=`` wins)."""
    if kind == "rclpy" and importlib.util.find_spec("rclpy") is None:
        pytest.skip("no rclpy here")
    from hri_runtime.node import Node
    from hri_runtime.parameter import Parameter
    router = None
    if kind == "zenoh":
        from hri_runtime.impl.zenoh_backend import ZenohParams
        ep = f"tcp/127.0.0.1:{free_port()}"
        router = start_router([ep])
        ctx = ZenohContext(ZenohParams.defaults().with_(connect_endpoints=[ep]))
    else:
        ctx = ctxmod.make_context(kind)
    try:
        n = Node("params_probe", context=ctx, parameters={"port": 0})
        rate, port = n.declare_parameter("rate_hz", 25.0), n.declare_parameter("port", 7400)
        assert isinstance(rate, Parameter) and (rate.value, port.value) == (25.0, 0)
        assert n.get_parameter("port").value == 0
        n.destroy_node()
    finally:
        ctx.shutdown()
        ctx.close()
        if router is not None:
            router.close()
