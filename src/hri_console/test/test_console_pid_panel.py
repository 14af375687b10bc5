"""The console's PID tuning panel commands against the real tuning node (simulated humanoid arm)
on the in-process runtime: the evaluation kept for the table under the graph (test, flip,
recording, replay; discarded by a new recording), reset all PIDs, save a recording as a motion
and replay it, save results; malformed frames refused by the console before any service call."""
import json
import math
import threading

import pytest

from hri_runtime import msgs
from hri_runtime.config.tree import load_robot_config
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node

from hri_console.nodes.console_node import ConsoleNode


def run(ctx, node, frame):
    """A command on its own thread (as the server's worker runs it) while the context spins."""
    out = []
    th = threading.Thread(target=lambda: out.append(node.handle(json.dumps(frame))))
    th.start()
    while th.is_alive():
        ctx.spin_for(0.001)
        th.join(0.001)
    return out[0]


@pytest.fixture
def env(tmp_path):
    from hri_pid_tuning.nodes.tuning_node import PidTuningNode
    from hri_pid_tuning.session import TuningSession

    ctx = InprocContext(start_time_s=10.0)
    tuner = PidTuningNode(session=TuningSession.create("humanoid_arm", "s2"), context=ctx, parameters={
        "pid_tuning.node.configuration_path": str(tmp_path / "p.json"),
        "pid_tuning.node.results_dir": str(tmp_path / "results"),
        "pid_tuning.node.motions_dir": str(tmp_path / "motions")})
    node = ConsoleNode(cfg=load_robot_config("fr3"), context=ctx, parameters={"serve": False})
    ctx.spin_for(1.1)                 # one status message: the console knows the joints and gains
    return ctx, node, tuner, tmp_path


def test_evaluations_flip_and_reset_all(env):
    ctx, node, tuner, _ = env
    assert node.snapshot()["pid"]["evaluation"] is None
    r = run(ctx, node, {"type": "pid_start", "joint": "shoulder_y"})
    assert r["type"] == "ack", r
    ev = node.snapshot()["pid"]["evaluation"]
    run_ = tuner.session.runner.last_run
    assert ev["command"] == "pid_start" and list(ev["motions"]) == ["step_shoulder_y"]
    assert ev["evaluation"]["AvgAbsoluteError"] == pytest.approx(run_.evaluation.avg_absolute_error)
    assert ev["motions"]["step_shoulder_y"]["joints"]["elbow"] == \
        json.loads(json.dumps(run_.motions[0].joint_evaluations["elbow"].to_json()))
    r = run(ctx, node, {"type": "pid_flip", "joint": "hand"})
    assert r["type"] == "ack", r
    assert list(node.snapshot()["pid"]["evaluation"]["motions"]) == ["flip_hand"]
    r = run(ctx, node, {"type": "pid_flip", "joint": "elbow"})
    assert r["type"] == "reject" and r["cause"] == "service_refused" and "leaves its limits" in r["reason"]
    assert list(node.snapshot()["pid"]["evaluation"]["motions"]) == ["flip_hand"]     # a refusal keeps it
    r = run(ctx, node, {"type": "pid_apply_all", "gains": {"kp": 5.0, "ki": 0.5, "kd": 0.2}})
    assert r["type"] == "ack", r
    assert {j: g.to_dict() for j, g in tuner.session.storage.acknowledged.items()} == \
        {j: {"kp": 5.0, "ki": 0.5, "kd": 0.2} for j in tuner.server.joints}


def test_recording_saved_as_a_motion_replayed_and_saved(env):
    ctx, node, tuner, tmp = env
    joints = tuner.server.joints
    op = Node("operator", context=ctx)
    sp_pub = op.create_publisher("sensor_msgs/msg/JointState", "/joint_setpoints")
    js_pub = op.create_publisher("sensor_msgs/msg/JointState", "/joint_states")
    assert run(ctx, node, {"type": "pid_start", "joint": "hand"})["type"] == "ack"
    assert run(ctx, node, {"type": "pid_record", "joint": "hand"})["type"] == "ack"
    assert node.snapshot()["pid"]["evaluation"] is None          # a new recording discards the old data
    base = [float(q) for q in tuner.session.plant.base_pose_rad]
    for k in range(40):
        sp = list(base)
        sp[1] += math.radians(6.0) * math.sin(2 * math.pi * k / 40)
        sp_pub.publish(msgs.new("sensor_msgs/msg/JointState", name=joints, position=sp))
        m = msgs.new("sensor_msgs/msg/JointState", name=joints, position=[x - math.radians(0.5) for x in sp])
        m.header.stamp.sec, m.header.stamp.nanosec = 20, k * 20_000_000
        js_pub.publish(m)
        ctx.spin_for(0.02)
    r = run(ctx, node, {"type": "pid_stop"})
    assert r["type"] == "ack" and r["result"]["message"] == f"recording evaluated: {40 * len(joints)} samples"
    ev = node.snapshot()["pid"]["evaluation"]
    assert list(ev["motions"]) == ["recording"] and ev["evaluation"]["AvgAbsoluteError"] == pytest.approx(0.5)
    r = run(ctx, node, {"type": "pid_save_motion", "motion": "wave"})
    assert r["type"] == "ack", r
    ctx.spin_for(1.1)
    assert node.snapshot()["pid"]["status"]["motions"] == ["wave"]
    r = run(ctx, node, {"type": "pid_replay", "motion": "wave"})
    assert r["type"] == "ack", r
    assert list(node.snapshot()["pid"]["evaluation"]["motions"]) == ["wave"]
    r = run(ctx, node, {"type": "pid_replay", "motion": "nosuch"})
    assert r["type"] == "reject" and "unknown motion 'nosuch'; known: wave" in r["reason"]
    r = run(ctx, node, {"type": "pid_save"})
    assert r["type"] == "ack" and "exported to" in r["result"]["message"]
    (folder,) = list((tmp / "results").iterdir())
    assert json.loads((folder / "run.json").read_text())["motions"] == ["wave"]


@pytest.mark.parametrize("frame,cause", [
    ({"type": "pid_apply_all", "gains": {"kp": 1.0, "ki": 0.0}}, "missing_field"),
    ({"type": "pid_apply_all", "gains": {"kp": 1.0, "ki": 0.0, "kd": math.inf}}, "bad_value"),
    ({"type": "pid_apply_all", "gains": {"kp": -1.0, "ki": 0.0, "kd": 0.0}}, "out_of_range"),
    ({"type": "pid_apply_all"}, "missing_field"),
    ({"type": "pid_replay", "motion": "../../etc/passwd"}, "bad_field"),
    ({"type": "pid_replay", "motion": "wave.json"}, "bad_field"),
    ({"type": "pid_replay"}, "bad_field"),
    ({"type": "pid_save_motion", "motion": 7}, "bad_field"),
    ({"type": "pid_flip"}, "missing_field"),
    ({"type": "pid_flip", "joint": "a b"}, "bad_field"),
])
def test_malformed_panel_frames_are_refused_before_any_service_call(env, frame, cause):
    ctx, node, tuner, _ = env
    served, g0 = dict(tuner.server.served), dict(tuner.session.storage.local)
    raw = json.dumps(frame).replace("Infinity", "1e999")
    r = node.handle(raw)
    assert r["type"] == "reject" and r["cause"] == cause, r
    assert tuner.server.served == served and tuner.session.storage.local == g0 and tuner.server.rejected == {}
