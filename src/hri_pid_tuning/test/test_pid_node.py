"""The tuning node on hri_runtime's in-process context: services through CDR, a client node
calls them like a remote ROS client would; bad requests are rejected and counted."""
import json
import math

import pytest

from hri_runtime import inproc
from hri_runtime import msgs  # noqa: E402
from hri_runtime.node import Node  # noqa: E402

from hri_pid_tuning.nodes.tuning_node import PidTuningNode  # noqa: E402
from hri_pid_tuning.messages import TUNE_SRV  # noqa: E402
from hri_pid_tuning.session import TuningSession  # noqa: E402


@pytest.fixture()
def env(tmp_path):
    ctx = inproc.InprocContext(start_time_s=100.0)
    session = TuningSession.create("humanoid_arm", "s2", clock=lambda: 1.7e9)
    node = PidTuningNode(session=session, context=ctx,
                         parameters={"pid_tuning.node.configuration_path": str(tmp_path / "pid.json"),
                                     "pid_tuning.node.results_dir": str(tmp_path / "results"),
                                     "pid_tuning.node.motions_dir": str(tmp_path / "motions")})
    client = Node("pid_client", context=ctx)
    status = []
    client.create_subscription("hri_interfaces/msg/PidTuningStatus", "/pid_tuning/status", status.append)
    return ctx, node, client, status, tmp_path


def call(ctx, client, srv_type, name, **fields):
    cli = client.create_client(srv_type, name)
    fut = cli.call_async(msgs.new(srv_type + "_Request", **fields))
    assert ctx.spin_until(fut.done, timeout_s=5.0)
    return fut.result()


def test_auto_tune_apply_evaluate_over_services(env):
    ctx, node, client, status, _ = env
    r = call(ctx, client, TUNE_SRV, "/pid_tuning/auto_tune", joint="hand", heuristic="classic")
    assert r.success, r.message
    res = json.loads(r.result_json)
    assert res["tuning"]["hand"]["applied"] == "classic" and res["tuning"]["hand"]["relay"]["ok"]
    classic = res["tuning"]["hand"]["heuristics"]["classic"]
    assert node.session.storage.acknowledged["hand"].to_dict() == pytest.approx(classic)
    r = call(ctx, client, TUNE_SRV, "/pid_tuning/apply", joint="hand", heuristic="pd_control")
    assert r.success and json.loads(r.result_json)["gains"] == res["tuning"]["hand"]["heuristics"]["pd_control"]
    r = call(ctx, client, TUNE_SRV, "/pid_tuning/apply", joint="hand", gains=[2.0, 0.5, 0.05])
    assert r.success and node.session.storage.local["hand"].to_dict() == {"kp": 2.0, "ki": 0.5, "kd": 0.05}
    r = call(ctx, client, TUNE_SRV, "/pid_tuning/evaluate", joint="hand")
    assert r.success, r.message
    ev = json.loads(r.result_json)["motions"]["step_hand"]["evaluation"]
    assert ev["SetpointChanges"] == 2 and ev["AvgAbsoluteError"] > 0
    assert node.session.runner.results[-1].evaluation.avg_absolute_error == \
        pytest.approx(ev["AvgAbsoluteError"])
    # status topic carries the acknowledged gains (timer on the fake clock)
    ctx.spin_for(1.01)
    hand = {g.joint: g for g in status[-1].gains}["hand"] if status else None
    assert hand is not None and (hand.kp, hand.ki, hand.kd, hand.acknowledged) == (2.0, 0.5, 0.05, True)


def test_bad_requests_rejected_over_services(env):
    ctx, node, client, status, _ = env
    g0 = dict(node.session.storage.local)
    for fields in ({"joint": "knee"}, {"joint": "hand", "heuristic": "magic"}):
        r = call(ctx, client, TUNE_SRV, "/pid_tuning/auto_tune", **fields)
        assert not r.success and ("unknown joint" in r.message or "unknown heuristic" in r.message)
    r = call(ctx, client, TUNE_SRV, "/pid_tuning/apply", joint="hand", gains=[1.0, math.nan, 0.0])
    assert not r.success and "finite" in r.message
    r = call(ctx, client, TUNE_SRV, "/pid_tuning/apply", joint="hand", gains=[1.0])
    assert not r.success
    r = call(ctx, client, "std_srvs/srv/Trigger", "/pid_tuning/record_stop")
    assert not r.success and "no manual recording" in r.message
    assert node.session.storage.local == g0
    assert node.server.rejected == {"unknown_joint": 1, "unknown_heuristic": 1, "non_finite": 1,
                                    "wrong_length": 1, "not_recording": 1}


def test_manual_recording_from_topics_and_save_load(env):
    ctx, node, client, status, tmp_path = env
    joints = node.server.joints
    sp = client.create_publisher("sensor_msgs/msg/JointState", "/joint_setpoints", qos=10)
    js = client.create_publisher("sensor_msgs/msg/JointState", "/joint_states", qos=10)
    assert call(ctx, client, "std_srvs/srv/Trigger", "/pid_tuning/record_start").success
    for k in range(20):
        sp.publish(msgs.new("sensor_msgs/msg/JointState", name=joints, position=[0.2] * len(joints)))
        js.publish(msgs.new("sensor_msgs/msg/JointState", name=joints,
                            position=[0.2 - math.radians(1.0)] * len(joints)))
        ctx.spin_for(0.02)
    # malformed samples: dropped and counted, never recorded
    js.publish(msgs.new("sensor_msgs/msg/JointState", name=joints[:2], position=[0.0]))
    js.publish(msgs.new("sensor_msgs/msg/JointState", name=joints[:2], position=[0.0, 0.0]))
    js.publish(msgs.new("sensor_msgs/msg/JointState", name=joints, position=[math.nan] * len(joints)))
    ctx.spin_for(0.02)
    assert node.rejected_count("joint_states", "length_mismatch") == 1
    assert node.rejected_count("joint_states", "missing_joint") == 1
    assert node.rejected_count("joint_states", "non_finite") == 1
    r = call(ctx, client, "std_srvs/srv/Trigger", "/pid_tuning/record_stop")
    assert r.success
    ev = json.loads(r.message)["evaluation"]
    assert ev["AvgAbsoluteError"] == pytest.approx(1.0) and ev["Samples"] == 20 * len(joints)
    r = call(ctx, client, "std_srvs/srv/Trigger", "/pid_tuning/save")
    assert r.success and "exported" in r.message
    (folder,) = list((tmp_path / "results").iterdir())              # the recording's test data too
    assert json.loads((folder / "run.json").read_text())["motions"] == ["recording"]
    saved = json.loads((tmp_path / "pid.json").read_text())
    assert set(saved["mapping"]) == set(joints)
    node.server.apply("hand", gains=[9.0, 0.0, 0.0])
    assert call(ctx, client, "std_srvs/srv/Trigger", "/pid_tuning/load").success
    assert node.session.storage.local["hand"].to_dict() == saved["mapping"]["hand"]
    assert call(ctx, client, "std_srvs/srv/Trigger", "/pid_tuning/reset").success
