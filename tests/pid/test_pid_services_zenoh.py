"""The tuning node's services over a real Zenoh router: the node in one Zenoh session, a client
node in another (as a remote ROS 2 client would call them, CDR on the wire). A manual recording
from topics, saved as a motion and replayed; the sign-flip step; every joint reset to one
configuration; "Save Results" exporting the run in the thesis's folder layout; bad requests
refused with one sentence and counted, changing nothing. Waits only bound how long a condition
may take to hold; nothing is timed."""
from __future__ import annotations

import json
import math
import socket
import time

import pytest

from hri_runtime import msgs
from hri_runtime.node import Node
from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams, start_router

from hri_pid_tuning.messages import MOTION_SRV, TUNE_SRV
from hri_pid_tuning.nodes.tuning_node import PidTuningNode
from hri_pid_tuning.report import read_run
from hri_pid_tuning.session import TuningSession
from ..stack_launch import free_port, wait_for  # noqa: E402  (bounded waits, free ports)

WAIT_S = 60.0            # a service may run a simulated test on 2 shared cores
TRIGGER = "std_srvs/srv/Trigger"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pid_zenoh")
    ep = f"tcp/127.0.0.1:{free_port()}"
    router = start_router([ep])
    params = ZenohParams.defaults().with_(connect_endpoints=[ep], service_timeout_s=WAIT_S)
    a, b = ZenohContext(params), ZenohContext(params)
    tuner = PidTuningNode(session=TuningSession.create("humanoid_arm", "s2"), context=a, parameters={
        "pid_tuning.node.configuration_path": str(tmp / "pid.json"),
        "pid_tuning.node.results_dir": str(tmp / "results"), "pid_tuning.node.motions_dir": str(tmp / "motions")})
    client = Node("pid_client", context=b)
    a.spin_in_background()
    b.spin_in_background()
    yield tuner, client, tmp
    for c in (a, b):
        c.shutdown()
        c.close()
    router.close()


def call(client, srv_type, name, **fields):
    cli = client.create_client(srv_type, f"/pid_tuning/{name}")
    assert cli.wait_for_service(WAIT_S), name
    return cli.call(msgs.new(srv_type + "_Request", **fields), timeout_s=WAIT_S)


def test_record_save_motion_replay_flip_reset_all_and_save_results(stack):
    tuner, client, tmp = stack
    joints = tuner.server.joints
    base = [float(q) for q in tuner.session.plant.base_pose_rad]
    sp_pub = client.create_publisher("sensor_msgs/msg/JointState", "/joint_setpoints", qos=10)
    js_pub = client.create_publisher("sensor_msgs/msg/JointState", "/joint_states", qos=10)
    r = call(client, TRIGGER, "record_start")
    assert r.success, r.message
    i = joints.index("shoulder_y")
    sent = 60
    for k in range(sent):                    # the operator waves shoulder_y; the robot lags 1 deg
        sp = list(base)
        sp[i] += math.radians(8.0) * math.sin(2 * math.pi * k / sent)
        sp_pub.publish(msgs.new("sensor_msgs/msg/JointState", name=joints, position=sp))
        # two topics have no order between them: the state goes out once the set-point is in
        assert wait_for(lambda: tuner.server.setpoints.get("shoulder_y") == sp[i])
        m = msgs.new("sensor_msgs/msg/JointState", name=joints, position=[x - math.radians(1.0) for x in sp])
        m.header.stamp.sec, m.header.stamp.nanosec = 10 + k // 50, (k % 50) * 20_000_000
        js_pub.publish(m)
        assert wait_for(lambda: tuner.session.runner.recorded_frames == k + 1)
    r = call(client, TRIGGER, "record_stop")
    assert r.success, r.message
    ev = json.loads(r.message)["evaluation"]
    assert ev["Samples"] == sent * len(joints) and ev["AvgAbsoluteError"] == pytest.approx(1.0)
    r = call(client, MOTION_SRV, "save_motion", motion="wave")
    assert r.success, r.message
    assert json.loads(r.result_json)["motions"] == ["wave"]
    assert json.loads((tmp / "motions" / "wave.json").read_text())["joints_deg"].keys() == set(joints)
    r = call(client, MOTION_SRV, "replay", motion="wave")
    assert r.success, r.message
    res = json.loads(r.result_json)
    assert list(res["motions"]) == ["wave"] and res["motions"]["wave"]["joints"]["shoulder_y"]["Samples"] > 0
    # Save Results: the replay's test data in the thesis's layout, with the configuration
    r = call(client, TRIGGER, "save")
    assert r.success and "exported" in r.message, r.message
    (folder,) = list((tmp / "results").iterdir())
    run = read_run(folder)
    assert run["run"]["motions"] == ["wave"] and set(run["motions"]["wave"]["joints"]) == set(joints)
    assert run["motions"]["wave"]["evaluation"] == res["motions"]["wave"]["evaluation"]
    assert json.loads((tmp / "pid.json").read_text())["mapping"].keys() == set(joints)
    # every joint to one configuration, acknowledged
    r = call(client, TUNE_SRV, "apply_all", gains=[6.0, 0.5, 0.3])
    assert r.success, r.message
    assert all(tuner.session.storage.acknowledged[j].to_dict() == {"kp": 6.0, "ki": 0.5, "kd": 0.3}
               for j in joints)
    # the sign-flip step of the hand (0 deg in the base pose: +30 -> -30 deg and back)
    r = call(client, TUNE_SRV, "flip", joint="hand")
    assert r.success, r.message
    assert json.loads(r.result_json)["motions"]["flip_hand"]["joints"]["hand"]["SetpointChanges"] == 2


def test_bad_requests_are_refused_over_the_router_and_change_nothing(stack):
    tuner, client, tmp = stack
    g0 = dict(tuner.session.storage.local)
    rejected0 = dict(tuner.server.rejected)
    for srv_type, name, fields, cause in (
            (MOTION_SRV, "replay", {"motion": "../pid"}, "bad_name"),
            (MOTION_SRV, "replay", {"motion": "nosuch"}, "unknown_motion"),
            (MOTION_SRV, "save_motion", {"motion": "a/b"}, "bad_name"),
            (TUNE_SRV, "apply_all", {"gains": [1.0]}, "wrong_length"),
            (TUNE_SRV, "apply_all", {"gains": [1.0, -1.0, 0.0]}, "negative_gain"),
            (TUNE_SRV, "flip", {"joint": "elbow"}, "out_of_range"),
            (TUNE_SRV, "flip", {"joint": "knee"}, "unknown_joint")):
        r = call(client, srv_type, name, **fields)
        assert not r.success and "\n" not in r.message and r.message, (name, fields)
        assert json.loads(r.result_json)["cause"] == cause
    assert tuner.session.storage.local == g0
    counted = {k: v - rejected0.get(k, 0) for k, v in tuner.server.rejected.items() if v != rejected0.get(k, 0)}
    assert counted == {"bad_name": 2, "unknown_motion": 1, "wrong_length": 1, "negative_gain": 1,
                       "out_of_range": 1, "unknown_joint": 1}
