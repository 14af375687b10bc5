"""`hri teleop-demo --output joint` (IK -> joint impedance) end to end: real UDP on loopback,
lockstep simulated time, artefacts written. The cartesian stack (the default): test_arm_stack.py."""
from __future__ import annotations

import json
import math

from hri_arm_teleop.demo import main


def test_teleop_demo_runs_the_whole_chain_and_writes_its_artefacts(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["--out", str(out), "--port", "0", "-q", "--output", "joint"]) == 0
    text = capsys.readouterr().out
    assert "tracking error" in text and "latency" in text and "link: connected" in text
    s = json.loads((out / "summary.json").read_text())
    assert s["engagements"] == 3
    from hri_runtime import provenance
    assert s["provenance"] == provenance.provenance("hri_arm_teleop")      # commit, version, build
    assert s["link"]["accepted"] == s["packets_sent"] > 1000   # every UDP packet made it
    assert s["link"]["rejected"] == {} and s["link"]["gaps"] == 0
    assert s["tracking_rms_error_m"] < 0.0015 and s["path_max_error_m"] < 0.003
    assert s["closing_error_m"] < 0.001
    assert s["joint_limit_margin_rad"] > 0
    assert math.isfinite(s["latency_wall_p99_s"])
    assert (out / "path.png").stat().st_size > 10_000
    assert (out / "teleop.mcap").stat().st_size > 10_000


def test_mcap_holds_ros2_messages(tmp_path):
    from mcap.reader import make_reader

    out = tmp_path / "run"
    assert main(["--out", str(out), "--port", "0", "-q", "--no-plot", "--output", "joint",
                 "--set", "teleop.demo.strokes=1", "--set", "teleop.demo.side_m=0.05"]) == 0
    with open(out / "teleop.mcap", "rb") as fh:
        reader = make_reader(fh)
        summary = reader.get_summary()
        topics = {c.topic: summary.schemas[c.schema_id].name for c in summary.channels.values()}
    assert topics["/ee_pose"] == "geometry_msgs/msg/PoseStamped"
    assert topics["/joint_states"] == "sensor_msgs/msg/JointState"
    assert "/teleop/mode" in topics
    from hri_runtime.bag.recording import McapReader

    rd = McapReader(out / "teleop.mcap")
    modes = [m.msg.mode for m in rd.messages(["/teleop/mode"])]
    assert modes[0] == "HOLD" and "TRACK" in modes
    ee = next(iter(rd.messages(["/ee_pose"]))).msg
    o = ee.pose.orientation
    assert abs(o.x ** 2 + o.y ** 2 + o.z ** 2 + o.w ** 2 - 1.0) < 1e-9 and abs(o.w) < 0.99  # a real pose
    assert ee.header.frame_id == "fr3_base"


def test_bad_config_is_one_clear_line(capsys):
    assert main(["--set", "teleop.clutch.position_scale=-1", "-q"]) == 2
    assert "config error" in capsys.readouterr().err
