"""The Foxglove bridge advertises its channels with ros2msg schemas and delivers CDR
messages to a plain WebSocket client (Foxglove WebSocket protocol, loopback, ephemeral port)."""
import json
import struct

import pytest

import foxglove  # noqa: F401  (required: a missing install fails here)
from rosbags.typesys import Stores, get_typestore  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from hri_console.foxglove_bridge import FoxgloveBridge  # noqa: E402

TS = get_typestore(Stores.ROS2_HUMBLE)
TOPICS = [("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray"), ("/chatter", "std_msgs/msg/String")]


def test_advertise_and_deliver():
    br = FoxgloveBridge(TOPICS, host="127.0.0.1", port=0)
    try:
        with connect(f"ws://127.0.0.1:{br.port}/", subprotocols=["foxglove.sdk.v1", "foxglove.websocket.v1"],
                     open_timeout=10) as ws:
            adv = {}
            while len(adv) < len(TOPICS):
                m = ws.recv(timeout=10)
                if isinstance(m, str):
                    d = json.loads(m)
                    if d.get("op") == "advertise":
                        for ch in d["channels"]:
                            adv[ch["topic"]] = ch
            for topic, type_name in TOPICS:
                ch = adv[topic]
                assert ch["schemaName"] == type_name and ch["schemaEncoding"] == "ros2msg"
                assert ch["encoding"] == "cdr" and ch["schema"]
            assert "DiagnosticStatus[] status" in adv["/diagnostics"]["schema"]
            chan_id = adv["/chatter"]["id"]
            ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": 7, "channelId": chan_id}]}))
            M = TS.types["std_msgs/msg/String"]
            for _ in range(200):
                br.publish("/chatter", M(data="hello"), log_time_ns=42)
                try:
                    m = ws.recv(timeout=0.1)
                except TimeoutError:
                    continue
                if isinstance(m, bytes) and m[0] == 1:  # MessageData
                    sub_id, log_time = struct.unpack_from("<IQ", m, 1)
                    assert sub_id == 7 and log_time == 42
                    msg = TS.deserialize_cdr(m[13:], "std_msgs/msg/String")
                    assert msg.data == "hello"
                    break
            else:
                pytest.fail("no MessageData received")
    finally:
        br.stop()


def test_node_forwards_runtime_topics_raw_with_the_node_clock():
    """The bridge node on the in-process runtime: a DiagnosticArray published by another node
    reaches a Foxglove WebSocket client as the same CDR, stamped with the (fake) node clock."""
    from hri_runtime import msgs
    from hri_runtime.config.tree import load_robot_config
    from hri_runtime.inproc import InprocContext
    from hri_runtime.node import Node

    from hri_console.nodes.foxglove_node import FoxgloveNode

    cfg = load_robot_config("fr3")
    ctx = InprocContext(start_time_s=5.0)
    node = FoxgloveNode(cfg=cfg, context=ctx, parameters={"console.foxglove.port": 0})
    pub = Node("talker", context=ctx).create_publisher("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics")
    msg = msgs.new("diagnostic_msgs/msg/DiagnosticArray", status=[msgs.new(
        "diagnostic_msgs/msg/DiagnosticStatus", level=1, name="hri_pulse: vr link", message="rate low")])
    try:
        with connect(f"ws://127.0.0.1:{node.port}/", subprotocols=["foxglove.sdk.v1", "foxglove.websocket.v1"],
                     open_timeout=10) as ws:
            adv = {}
            while len(adv) < len(cfg["console"]["foxglove"]["topics"]):
                m = ws.recv(timeout=10)
                if isinstance(m, str) and json.loads(m).get("op") == "advertise":
                    adv.update({ch["topic"]: ch for ch in json.loads(m)["channels"]})
            assert set(adv) == set(cfg["console"]["foxglove"]["topics"])
            ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": 3, "channelId": adv["/diagnostics"]["id"]}]}))
            for _ in range(200):
                pub.publish(msg)
                ctx.spin_for(0.01)
                try:
                    m = ws.recv(timeout=0.1)
                except TimeoutError:
                    continue
                if isinstance(m, bytes) and m[0] == 1:
                    sub_id, log_time = struct.unpack_from("<IQ", m, 1)
                    assert sub_id == 3 and 5.0e9 <= log_time < 8.0e9
                    got = TS.deserialize_cdr(m[13:], "diagnostic_msgs/msg/DiagnosticArray")
                    assert got.status[0].name == "hri_pulse: vr link" and got.status[0].level == 1
                    break
            else:
                pytest.fail("no MessageData received")
        assert node.forwarded["/diagnostics"] >= 1
    finally:
        node.destroy_node()
