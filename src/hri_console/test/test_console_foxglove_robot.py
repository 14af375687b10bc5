"""Foxglove's 3D panel inputs through the bridge: /robot_description (latched: a client that comes
after the one publication still gets it), /tf_static and /tf with their ros2msg schemas, from the
real robot_state node (hri_sim) fed joint states, and the URDF's package:// meshes answered by
fetchAsset (no ROS here), on the in-process runtime."""
from __future__ import annotations

import json
import struct
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import foxglove  # noqa: F401  (required: a missing install fails here)
from rosbags.typesys import Stores, get_typestore
from websockets.sync.client import connect

from hri_runtime import msgs
from hri_runtime.config.tree import load_robot_config
from hri_runtime.geometry import time_from_seconds
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node

from hri_console.nodes.foxglove_node import FoxgloveNode
from hri_sim.models import mesh_file_for_uri
from hri_sim.nodes.robot_state_node import RobotStateNode

TS = get_typestore(Stores.ROS2_HUMBLE)
SUBPROTOCOLS = ["foxglove.sdk.v1", "foxglove.websocket.v1"]


def _advertised(ws, topics) -> dict:
    adv: dict = {}
    while not set(topics) <= set(adv):
        m = ws.recv(timeout=10)
        if isinstance(m, str) and json.loads(m).get("op") == "advertise":
            adv.update({ch["topic"]: ch for ch in json.loads(m)["channels"]})
    return adv


@pytest.fixture()
def stack():
    cfg = load_robot_config("fr3")
    ctx = InprocContext(start_time_s=3.0)
    rs = RobotStateNode(cfg=cfg, context=ctx)
    ctx.spin_for(0.05)
    fg = FoxgloveNode(cfg=cfg, context=ctx, parameters={"console.foxglove.port": 0})
    ctx.spin_for(0.05)
    owner = Node("sim_owner", context=ctx)
    yield cfg, ctx, rs, fg, owner
    fg.destroy_node()
    rs.destroy_node()


def test_robot_description_tf_static_and_tf_reach_a_foxglove_client(stack):
    cfg, ctx, rs, fg, owner = stack
    js_pub = owner.create_publisher("sensor_msgs/msg/JointState", "/joint_states")
    names = list(cfg["joints"]["names"])
    q = np.deg2rad(cfg["joints"]["named_positions_deg"]["home"])
    topics = ["/tf", "/tf_static", "/robot_description"]
    with connect(f"ws://127.0.0.1:{fg.port}/", subprotocols=SUBPROTOCOLS, open_timeout=10,
                 max_size=None) as ws:
        adv = _advertised(ws, topics)
        assert adv["/tf"]["schemaName"] == "tf2_msgs/msg/TFMessage"
        assert adv["/tf_static"]["schemaName"] == "tf2_msgs/msg/TFMessage"
        assert adv["/robot_description"]["schemaName"] == "std_msgs/msg/String"
        for t in topics:
            assert adv[t]["schemaEncoding"] == "ros2msg" and adv[t]["encoding"] == "cdr"
        assert "geometry_msgs/TransformStamped[] transforms" in adv["/tf"]["schema"]
        ids = {adv[t]["id"]: t for t in topics}
        ws.send(json.dumps({"op": "subscribe", "subscriptions": [
            {"id": i, "channelId": c} for i, c in enumerate(ids)]}))
        sub_topic = {i: ids[c] for i, c in enumerate(ids)}
        got: dict = {}
        for k in range(400):
            if k % 4 == 0:
                hdr = msgs.new("std_msgs/msg/Header", frame_id="", stamp=time_from_seconds(rs.get_clock().now_s()))
                js_pub.publish(msgs.new("sensor_msgs/msg/JointState", header=hdr, name=names, position=q.tolist(),
                                        velocity=[0.0] * len(names), effort=[0.0] * len(names)))
                ctx.spin_for(0.01)
            try:
                m = ws.recv(timeout=0.05)
            except TimeoutError:
                continue
            if isinstance(m, bytes) and m[0] == 1:
                sub_id, _ = struct.unpack_from("<IQ", m, 1)
                topic = sub_topic[sub_id]
                type_name = "std_msgs/msg/String" if topic == "/robot_description" else "tf2_msgs/msg/TFMessage"
                got.setdefault(topic, TS.deserialize_cdr(m[13:], type_name))
            if set(got) == set(topics):
                break
        assert set(got) == set(topics), f"received only {sorted(got)}"
        urdf = got["/robot_description"].data
        assert urdf == rs.urdf and ET.fromstring(urdf).get("name") == "fr3"
        static = {(t.header.frame_id, t.child_frame_id) for t in got["/tf_static"].transforms}
        assert ("fr3_link7", "hand") in static and ("fr3_link7", cfg["frames"]["ee"]) in static
        moving = {t.child_frame_id: t for t in got["/tf"].transforms}
        assert set(moving) == {f"fr3_link{i}" for i in range(1, 8)}
        # the TF of joint 4 is its origin rotated by q4 about z: its quaternion encodes the angle
        t4 = moving["fr3_link4"].transform.rotation
        assert abs(np.linalg.norm([t4.x, t4.y, t4.z, t4.w]) - 1.0) < 1e-12
        # the URDF's meshes are served by fetchAsset, byte for byte
        uri = next(m.get("filename") for m in ET.fromstring(urdf).iter("mesh"))
        assert uri.startswith("package://hri_sim/meshes/fr3/")
        ws.send(json.dumps({"op": "fetchAsset", "uri": uri, "requestId": 9}))
        for _ in range(100):
            m = ws.recv(timeout=10)
            if isinstance(m, bytes) and m[0] == 4:
                req, status, elen = struct.unpack_from("<IBI", m, 1)
                assert req == 9 and status == 0, m[10:10 + elen]
                assert m[10 + elen:] == mesh_file_for_uri(uri).read_bytes()
                break
        else:
            pytest.fail("no fetchAsset response")
        ws.send(json.dumps({"op": "fetchAsset", "uri": "package://hri_sim/meshes/fr3/../../../etc/passwd",
                            "requestId": 10}))
        for _ in range(100):
            m = ws.recv(timeout=10)
            if isinstance(m, bytes) and m[0] == 4:
                req, status, _ = struct.unpack_from("<IBI", m, 1)
                assert req == 10 and status == 1          # refused: leaves the model folder
                break


def test_bad_joint_states_are_rejected_and_counted(stack):
    cfg, ctx, rs, fg, owner = stack
    js_pub = owner.create_publisher("sensor_msgs/msg/JointState", "/joint_states")
    seen = []
    owner.create_subscription("tf2_msgs/msg/TFMessage", "/tf", seen.append)
    names = list(cfg["joints"]["names"])
    js_pub.publish(msgs.new("sensor_msgs/msg/JointState", name=names, position=[0.0] * 3))
    js_pub.publish(msgs.new("sensor_msgs/msg/JointState", name=names, position=[float("nan")] * 7))
    js_pub.publish(msgs.new("sensor_msgs/msg/JointState", name=["x"], position=[0.0]))
    ctx.spin_for(0.05)
    assert seen == []
    assert {c: rs.rejected_count(cause=c) for c in ("length_mismatch", "not_finite", "unknown_joints")} == \
        {"length_mismatch": 1, "not_finite": 1, "unknown_joints": 1}
    assert rs.loop_counters()["inputs_rejected"] == 3        # the runtime's count (logged at exit)
    js_pub.publish(msgs.new("sensor_msgs/msg/JointState", name=names[:2], position=[0.1, 0.2]))
    ctx.spin_for(0.05)
    assert [t.child_frame_id for t in seen[0].transforms] == ["fr3_link1", "fr3_link2"]


def test_the_foxglove_layout_has_a_3d_panel_with_the_robot():
    from pathlib import Path

    layout = json.loads((Path(__file__).resolve().parents[3] / "docs" / "foxglove-layout.json").read_text())
    cfg = load_robot_config("fr3")
    panels = {k: v for k, v in layout["configById"].items() if k.startswith("3D!")}
    assert panels, "no 3D panel"
    (name, panel), = panels.items()
    urdf = [lay for lay in panel["layers"].values() if lay["layerId"] == "foxglove.Urdf"]
    assert urdf and urdf[0]["sourceType"] == "topic" and urdf[0]["topic"] in cfg["console"]["foxglove"]["topics"]
    assert panel["followTf"] == cfg["frames"]["base"]
    assert name in json.dumps(layout["layout"])          # the panel is placed in the layout
