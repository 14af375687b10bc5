"""ros2cli parity of the hri CLI, one test per command, on a threaded in-process graph (the same
code runs on the Zenoh graph): service list/type/call, interface list/show, topic info -v,
topic echo (QoS auto-match, --timeout), param dump/load/describe, bag info, offered QoS in
recordings, Python logging of a node process on /rosout."""
import logging

import yaml

from hri_runtime import msgs
from hri_runtime.qos import QoSProfile
from hri_runtime.inproc import ThreadedInprocContext
from hri_runtime.logging import RosoutHandler
from hri_runtime.node import Node
from hri_runtime.bag.recording import McapReader, McapWriter, Recorder, bag_main
from hri_runtime.cli.service import interface_main, service_main
from hri_runtime.cli.topic import param_main, topic_main


def _server():
    ctx = ThreadedInprocContext()
    n = Node("switch", context=ctx, namespace="demo")
    state = {"on": False}

    def on_set(req, resp):
        state["on"] = bool(req.data)
        resp.success, resp.message = True, f"now {'on' if req.data else 'off'}"
        return resp

    n.create_service("std_srvs/srv/SetBool", "enable", on_set)
    return ctx, state


def test_service_list_type_call(capsys):
    ctx, _ = _server()
    assert service_main(["list", "-t"], context=ctx) == 0
    out = capsys.readouterr().out.splitlines()
    assert "/demo/enable [std_srvs/srv/SetBool]" in out
    assert "/demo/switch/get_parameters [rcl_interfaces/srv/GetParameters]" in out
    ctx, _ = _server()
    assert service_main(["type", "/demo/enable"], context=ctx) == 0
    assert capsys.readouterr().out == "std_srvs/srv/SetBool\n"
    ctx, state = _server()
    assert service_main(["call", "/demo/enable", "std_srvs/srv/SetBool", "{data: true}"], context=ctx) == 0
    out = capsys.readouterr().out
    assert state["on"] is True
    assert "requester: making request: std_srvs.srv.SetBool_Request(data=True)" in out
    assert "response:\nstd_srvs.srv.SetBool_Response(success=True, message='now on')" in out
    # the type may be omitted (taken from the graph); a bad request is one line, exit 2
    ctx, state = _server()
    assert service_main(["call", "/demo/enable", "{data: false}"], context=ctx) == 0 and state["on"] is False
    capsys.readouterr()
    ctx, _ = _server()
    assert service_main(["call", "/demo/enable", "std_srvs/srv/SetBool", "{nope: 1}"], context=ctx) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_interface_list_and_show(capsys):
    assert interface_main(["list"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Messages:\n") and "\nServices:\n" in out and out.endswith("Actions:\n")
    assert "    std_msgs/msg/String\n" in out and "    std_srvs/srv/Trigger\n" in out
    assert "    rcl_interfaces/srv/DescribeParameters\n" in out
    assert interface_main(["show", "std_srvs/srv/SetBool"]) == 0
    assert capsys.readouterr().out == "bool data\n---\nbool success\nstring message\n"
    assert interface_main(["show", "geometry_msgs/msg/Pose"]) == 0
    assert capsys.readouterr().out == "geometry_msgs/Point position\ngeometry_msgs/Quaternion orientation\n"
    assert interface_main(["show", "nope/msg/Missing"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown message type")


def test_topic_info_verbose_shows_qos_and_endpoints(capsys):
    ctx = ThreadedInprocContext()
    Node("talker", context=ctx).create_publisher("std_msgs/msg/String", "/chatter",
                                                 qos=QoSProfile(depth=1, durability="transient_local"))
    Node("listener", context=ctx, namespace="ns").create_subscription(
        "std_msgs/msg/String", "/chatter", lambda m: None, qos=QoSProfile(depth=5, reliability="best_effort"))
    assert topic_main(["info", "-v", "/chatter"], context=ctx) == 0
    out = capsys.readouterr().out
    assert out.startswith("Type: std_msgs/msg/String\n\nPublisher count: 1\n\nNode name: talker\n"
                          "Node namespace: /\nTopic type: std_msgs/msg/String\nEndpoint type: PUBLISHER\n")
    assert ("QoS profile:\n  Reliability: RELIABLE\n  History (Depth): KEEP_LAST (1)\n"
            "  Durability: TRANSIENT_LOCAL\n  Lifespan: Infinite\n") in out
    assert "Subscription count: 1\n\nNode name: listener\nNode namespace: /ns\n" in out
    assert "  Reliability: BEST_EFFORT\n  History (Depth): KEEP_LAST (5)\n  Durability: VOLATILE\n" in out


def test_echo_matches_transient_local_rosout_and_reports_timeout(capsys):
    ctx = ThreadedInprocContext()
    n = Node("talker", context=ctx)
    n.get_logger().warn("hello before anyone listens")   # (pytest: root level WARNING)
    assert topic_main(["echo", "/rosout", "--once", "--timeout", "30"], context=ctx) == 0
    out = capsys.readouterr().out
    assert "msg: hello before anyone listens" in out and "name: talker" in out
    ctx = ThreadedInprocContext()
    Node("talker", context=ctx).create_publisher("std_msgs/msg/String", "/quiet")
    assert topic_main(["echo", "/quiet", "--once", "--timeout", "0.3"], context=ctx) == 1
    err = capsys.readouterr().err
    assert err == "error: --timeout 0.3 s expired: 0 of 1 message(s) received on /quiet\n"


def _param_node():
    ctx = ThreadedInprocContext()
    n = Node("ctl", context=ctx)
    n.declare_parameter("gain", 2.5, {"range": (0.0, 10.0), "description": "P gain"}, on_set=lambda v: None)
    n.declare_parameter("mode", "track")                       # startup only (read-only)
    n.declare_parameter("limits.max_rpm", 120, on_set=lambda v: None)
    return ctx, n


def test_param_describe_dump_load(tmp_path, capsys):
    ctx, _ = _param_node()
    assert param_main(["describe", "/ctl", "gain"], context=ctx) == 0
    out = capsys.readouterr().out
    assert out.startswith("Parameter name: gain\n  Type: double\n  Description: P gain\n  Constraints:\n")
    assert "    Min value: 0.0\n    Max value: 10.0\n" in out and "type: 3" not in out
    ctx, _ = _param_node()
    assert param_main(["dump", "/ctl"], context=ctx) == 0
    dumped = capsys.readouterr().out
    data = yaml.safe_load(dumped)
    assert data["/ctl"]["ros__parameters"]["gain"] == 2.5
    assert data["/ctl"]["ros__parameters"]["limits"] == {"max_rpm": 120}
    assert data["/ctl"]["ros__parameters"]["use_sim_time"] is False
    # load the dump after editing it: every parameter set, as ros2 param load prints it
    data["/ctl"]["ros__parameters"]["gain"] = 4.0
    data["/ctl"]["ros__parameters"]["limits"]["max_rpm"] = 90
    f = tmp_path / "ctl.yaml"
    f.write_text(yaml.safe_dump(data))
    ctx, n = _param_node()
    assert param_main(["load", "/ctl", str(f)], context=ctx) == 0
    out = capsys.readouterr().out
    assert "Set parameter gain successful\n" in out and "Set parameter limits.max_rpm successful\n" in out
    assert n.get_parameter("gain").value == 4.0 and n.get_parameter("limits.max_rpm").value == 90
    # out of range: that one fails (exit 1), a file for another node is one line, exit 2
    data["/ctl"]["ros__parameters"]["gain"] = 50.0
    f.write_text(yaml.safe_dump(data))
    ctx, n = _param_node()
    assert param_main(["load", "/ctl", str(f)], context=ctx) == 1
    assert "Set parameter gain failed" in capsys.readouterr().out and n.get_parameter("gain").value == 2.5
    f.write_text("/other:\n  ros__parameters: {gain: 1.0}\n")
    ctx, _ = _param_node()
    assert param_main(["load", "/ctl", str(f)], context=ctx) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_bag_info_and_offered_qos(tmp_path, capsys):
    f = tmp_path / "run.mcap"
    latched = QoSProfile(depth=1, durability="transient_local")
    with McapWriter(f) as w:
        w.add_channel("/chatter", "std_msgs/msg/String", qos=QoSProfile(depth=10))
        w.add_channel("/state", "std_msgs/msg/String", qos=latched)
        for i in range(11):                         # 10 Hz over 1 s
            w.write("/chatter", msgs.new("std_msgs/msg/String", data=str(i)), t_s=100.0 + 0.1 * i)
        w.write("/state", msgs.new("std_msgs/msg/String", data="TRACK"), t_s=100.5)
    assert bag_main(["info", str(f)]) == 0
    out = capsys.readouterr().out
    assert "Storage id:        mcap\n" in out and "Duration:          1.000000000s\n" in out
    assert "Messages:          12\n" in out
    assert ("Topic information: Topic: /chatter | Type: std_msgs/msg/String | Count: 11 | "
            "Serialization Format: cdr | Rate: 10.00 Hz | QoS: RELIABLE, VOLATILE, KEEP_LAST (10)") in out
    assert "Topic: /state | Type: std_msgs/msg/String | Count: 1 | Serialization Format: cdr | Rate: - | " \
           "QoS: RELIABLE, TRANSIENT_LOCAL, KEEP_LAST (1)" in out
    assert bag_main(["info", str(tmp_path / "missing.mcap")]) == 2
    assert capsys.readouterr().err.startswith("error: cannot read")


def test_recorder_writes_offered_qos_profiles_as_rosbag2(tmp_path):
    from mcap.reader import make_reader

    ctx = ThreadedInprocContext()
    talker = Node("talker", context=ctx)
    pub = talker.create_publisher("std_msgs/msg/String", "/state", qos=QoSProfile(depth=1, durability="transient_local"))
    pub.publish(msgs.new("std_msgs/msg/String", data="latched"))
    rec_node = Node("rec", context=ctx)
    f = tmp_path / "rec.mcap"
    with McapWriter(f) as w:
        rec = Recorder(rec_node, w, ["/state"])
        ctx.spin_in_background()
        ctx.wait_future
        import time
        end = time.monotonic() + 10
        while w.count < 1 and time.monotonic() < end:
            time.sleep(0.01)
        rec.stop()
    ctx.shutdown()
    with open(f, "rb") as fh:
        ch = next(c for c in make_reader(fh).get_summary().channels.values() if c.topic == "/state")
    prof = yaml.safe_load(ch.metadata["offered_qos_profiles"])
    assert prof[0]["durability"] == "transient_local" and prof[0]["reliability"] == "reliable"
    assert prof[0]["history"] == "keep_last" and prof[0]["depth"] == 1 and prof[0]["liveliness"] == "automatic"
    assert prof[0]["deadline"] == {"sec": 0, "nsec": 0}
    assert set(prof[0]) >= {"history", "deadline", "lifespan", "liveliness", "liveliness_lease_duration",
                            "avoid_ros_namespace_conventions"}
    assert McapReader(f).message_counts() == {"/state": 1}     # the latched sample was matched


def test_module_loggers_of_a_node_process_reach_rosout():
    ctx = ThreadedInprocContext()
    arm = Node("arm_teleop", context=ctx)
    got = []
    Node("watch", context=ctx).create_subscription("rcl_interfaces/msg/Log", "/rosout", got.append,
                                                   qos=QoSProfile(depth=100, durability="transient_local"))
    h = RosoutHandler(arm)
    root = logging.getLogger()
    root.addHandler(h)
    old = logging.getLogger("hri_arm_teleop").level
    logging.getLogger("hri_arm_teleop").setLevel(logging.INFO)
    try:
        logging.getLogger("hri_arm_teleop.core.clutch").info("clutch engaged at t=%.3f s", 1.5)
        logging.getLogger("hri_arm_teleop.core.pipeline").error("SAFETY_HOLD: %s", "workspace")
        arm.get_logger().warn("own line")
    finally:
        root.removeHandler(h)
        logging.getLogger("hri_arm_teleop").setLevel(old)
    ctx.spin_in_background()
    import time
    end = time.monotonic() + 10
    while len([m for m in got if m.name.startswith("arm_teleop")]) < 3 and time.monotonic() < end:
        time.sleep(0.01)
    ctx.shutdown()
    lines = {(m.name, m.msg, m.level) for m in got}
    assert ("arm_teleop.hri_arm_teleop.core.clutch", "clutch engaged at t=1.500 s", 20) in lines
    assert ("arm_teleop.hri_arm_teleop.core.pipeline", "SAFETY_HOLD: workspace", 40) in lines
    assert ("arm_teleop", "own line", 30) in lines
    assert sum(1 for m in got if m.msg == "own line") == 1          # not twice


def test_run_node_routes_the_process_logging_to_rosout():
    """A node run by run_node (what every node executable does): a record of a module logger
    logged from the node's code reaches /rosout; the handler is gone after the node ends."""
    import threading
    import time

    from hri_runtime.node import run_node

    ctx = ThreadedInprocContext()
    got = []
    Node("watch", context=ctx).create_subscription("rcl_interfaces/msg/Log", "/rosout", got.append,
                                                   qos=QoSProfile(depth=100, durability="transient_local"))

    class Arm(Node):
        def __init__(self, **kw):
            super().__init__("arm_teleop", **kw)
            self.create_timer(0.01, lambda: logging.getLogger("hri_arm_teleop.core.pipeline").warning(
                "SAFETY_HOLD: workspace"))

    t = threading.Thread(target=run_node, args=(Arm, [], ctx), daemon=True)
    t.start()
    end = time.monotonic() + 20
    while not any(m.msg == "SAFETY_HOLD: workspace" for m in got) and time.monotonic() < end:
        time.sleep(0.01)
    ctx.shutdown()
    t.join(20)
    assert any(m.name == "arm_teleop.hri_arm_teleop.core.pipeline" and m.msg == "SAFETY_HOLD: workspace"
               for m in got)
    assert not any(isinstance(h, RosoutHandler) for h in logging.getLogger().handlers)


def test_topic_info_of_an_unknown_topic(capsys):
    assert topic_main(["info", "/nope"], context=ThreadedInprocContext()) == 1
    assert capsys.readouterr().err == "Unknown topic '/nope'\n"


def test_echo_qos_options_and_node_info_services(capsys):
    from hri_runtime.cli.topic import node_main

    ctx = ThreadedInprocContext()
    n = Node("talker", context=ctx)
    n.get_logger().warn("cached line")
    # forcing VOLATILE (ros2 topic echo --qos-durability volatile): the cached line is not delivered
    assert topic_main(["echo", "/rosout", "--once", "--timeout", "0.5", "--qos-durability", "volatile"],
                      context=ctx) == 1
    assert "expired" in capsys.readouterr().err
    ctx, _ = _server()
    assert node_main(["info", "/demo/switch"], context=ctx) == 0
    out = capsys.readouterr().out
    assert "  Service Servers:\n" in out and "    /demo/enable: std_srvs/srv/SetBool\n" in out
    assert "    /demo/switch/get_parameters: rcl_interfaces/srv/GetParameters\n" in out
    assert out.rstrip().endswith("Service Clients:")
