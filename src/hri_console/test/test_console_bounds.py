"""Hostile topics cannot grow the console without bound (issue: 5 /diagnostics messages with 20k
fake names gave 15 MB frames and 240 MB RSS): the health table keeps at most health_max_rows rows
(least recently refreshed evicted, expired rows removed), joint tables are bounded, and every state
frame is bounded in depth, items, strings and total values."""
import json

import pytest

from hri_runtime import msgs
from hri_runtime.config.tree import load_robot_config
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node

from hri_console.core.protocol import state_frame
from hri_console.nodes.console_node import ConsoleNode


@pytest.fixture(scope="module")
def cfg():
    return load_robot_config("fr3")


def diag_array(names, value_len=10):
    kv = [msgs.new("diagnostic_msgs/msg/KeyValue", key="k", value="v" * value_len)]
    return msgs.new("diagnostic_msgs/msg/DiagnosticArray", status=[
        msgs.new("diagnostic_msgs/msg/DiagnosticStatus", level=1, name=n, message="m", values=kv) for n in names])


def test_diagnostics_flood_keeps_the_table_bounded_and_real_rows_alive(cfg):
    ctx = InprocContext(start_time_s=10.0)
    node = ConsoleNode(cfg=cfg, context=ctx, parameters={"serve": False})
    pub = Node("attacker", context=ctx)
    diag = pub.create_publisher("diagnostic_msgs/msg/DiagnosticArray", cfg["console"]["topics"]["diagnostics"])
    st = cfg["console"]["state"]
    max_rows = st["health_max_rows"]
    diag.publish(diag_array(["hri_pulse: vr link"]))
    ctx.spin_for(0.1)
    for k in range(5):                                   # the flood
        diag.publish(diag_array([f"fake{k}_{i}" for i in range(20000)], value_len=5000))
        ctx.spin_for(0.01)
        diag.publish(diag_array(["hri_pulse: vr link"]))  # the real publisher keeps refreshing
        ctx.spin_for(0.01)
    snap = node.snapshot()
    assert len(snap["health"]) <= max_rows
    assert "hri_pulse: vr link" in snap["health"]
    assert node.rejected_count("diagnostics", "too_many_statuses") == 5
    text, _ = state_frame(1, 0.0, snap, node.params.forward)
    lim = node.params.forward
    assert len(text.encode()) < max_rows * (lim.max_string_chars + 200) + 100000
    # rows not refreshed for health_expire_s are removed
    ctx.spin_for(st["health_expire_s"] + 0.1)
    assert node.snapshot()["health"] == {}
    assert node.state.dropped["health_expired"] > 0 and node.state.dropped["health_evicted"] > 0


def test_joint_tables_are_bounded(cfg):
    ctx = InprocContext(start_time_s=10.0)
    node = ConsoleNode(cfg=cfg, context=ctx, parameters={"serve": False})
    pub = Node("attacker", context=ctx)
    js = pub.create_publisher("sensor_msgs/msg/JointState", cfg["teleop"]["topics"]["joint_states"])
    names = [f"j{i}" for i in range(50000)]
    js.publish(msgs.new("sensor_msgs/msg/JointState", name=names, position=[0.0] * len(names)))
    real = cfg["joints"]["names"]
    js.publish(msgs.new("sensor_msgs/msg/JointState", name=list(real), position=[0.1] * len(real)))
    ctx.spin_for(0.05)
    joints = node.snapshot()["robot"]["joints"]
    assert len(joints) <= cfg["console"]["state"]["health_max_rows"] + len(real)
    assert {j["name"] for j in joints} >= set(real)                 # configured joints always kept
    assert node.state.dropped["joints_ignored"] > 0


def test_state_frame_of_a_huge_snapshot_is_bounded(cfg):
    ctx = InprocContext(start_time_s=10.0)
    node = ConsoleNode(cfg=cfg, context=ctx, parameters={"serve": False})
    lim = node.params.forward
    snap = {"pid": {"status": {"gains": {f"j{i}": {"kp": 1.0, "note": "z" * 100000} for i in range(10000)}}}}
    text, cuts = state_frame(1, 0.0, snap, lim)
    assert cuts > 0 and len(json.loads(text)["pid"]["status"]["gains"]) == lim.max_items + 1
    assert len(text) < lim.max_nodes * (lim.max_string_chars // 8 + 10)
