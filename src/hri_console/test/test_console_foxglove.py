"""The Foxglove bridge advertises its channels with ros2msg schemas and delivers CDR
messages to a plain WebSocket client (Foxglove WebSocket protocol, loopback, ephemeral port)."""
import json
import struct

import pytest

pytest.importorskip("foxglove")
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
