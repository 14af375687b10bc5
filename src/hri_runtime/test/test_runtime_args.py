"""--ros-args subset, params files, default-context selection, run_node start-up errors."""
import logging
import os
import signal
import threading

import pytest

from hri_runtime import context as hctx
from hri_runtime import msgs
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node, run_node
from hri_runtime.parameter import parse_ros_args


def test_parse_ros_args_subset(tmp_path):
    pf = tmp_path / "p.yaml"
    pf.write_text("/**:\n  ros__parameters:\n    robot: fr3\n    gains: {kp: 2.0}\n"
                  "/arm/teleop:\n  ros__parameters:\n    robot: ur5e\n"
                  "other:\n  ros__parameters:\n    robot: nope\n")
    a = parse_ros_args(["own", "--ros-args", "-r", "__node:=teleop", "-r", "__ns:=/arm",
                        "-r", "chatter:=/talk", "-p", "rate_hz:=50", "-p", "flag:=true",
                        "-p", "name:=abc", "-p", "empty:=", "--params-file", str(pf), "--log-level", "debug", "--", "tail"])
    assert a.unparsed == ["own", "tail"] and a.node_name == "teleop" and a.namespace == "/arm"
    assert a.remaps == {"chatter": "/talk"} and a.log_level == "debug"
    assert a.params == {"rate_hz": 50, "flag": True, "name": "abc", "empty": ""}
    p = a.parameters_for("teleop", "/arm/teleop")
    assert p["robot"] == "ur5e" and p["gains.kp"] == 2.0 and p["rate_hz"] == 50
    with pytest.raises(ValueError, match="name:=value"):
        parse_ros_args(["--ros-args", "-p", "novalue"])


def test_context_args_apply_to_nodes(tmp_path):
    ctx = InprocContext()
    ctx.ros_args = parse_ros_args(["--ros-args", "-r", "__ns:=/r1", "-r", "chatter:=/talk", "-p", "gain:=2.5"])
    n = Node("n", context=ctx)
    assert n.get_fully_qualified_name() == "/r1/n"
    assert n.create_publisher("std_msgs/msg/String", "chatter").topic_name == "/talk"
    assert n.declare_parameter("gain", 1.0).value == 2.5


def test_transport_selection(monkeypatch):
    assert hctx.transport_name({"HRI_TRANSPORT": "inproc"}) == "inproc"
    auto = hctx.transport_name({})
    assert auto in ("rclpy", "zenoh")
    with pytest.raises(hctx.TransportUnavailableError, match="auto|rclpy|zenoh|inproc"):
        hctx.transport_name({"HRI_TRANSPORT": "dds"})
    monkeypatch.setenv("HRI_TRANSPORT", "inproc")
    hctx.reset_default_context()
    try:
        assert isinstance(hctx.get_default_context(), InprocContext)
    finally:
        hctx.reset_default_context()


def test_missing_backend_module_gives_a_clear_error(monkeypatch):
    monkeypatch.setitem(hctx.BACKENDS, "rclpy", ("hri_runtime.no_such_backend", "X"))
    with pytest.raises(hctx.TransportUnavailableError, match="does not exist yet"):
        hctx.make_context("rclpy")


class Ranged(Node):
    def __init__(self, **kw):
        super().__init__("ranged", **kw)
        self.declare_parameter("rate_hz", 25.0, {"range": (1.0, 100.0)})
        self.create_timer(0.1, self.tick)
        self.ticks = 0

    def tick(self):
        self.ticks += 1
        if self.ticks == 3:
            self.context.shutdown()


def test_run_node_bad_parameter_is_one_clear_line(capsys):
    rc = run_node(Ranged, ["--ros-args", "-p", "rate_hz:=5000.0"], context=InprocContext())
    assert rc == 2 and "out of range" in capsys.readouterr().err


def test_run_node_spins_until_shutdown():
    ctx = InprocContext()
    assert run_node(Ranged, ["--ros-args", "-r", "__node:=r2"], context=ctx) == 0
    assert not ctx.ok() and ctx.nodes == []


class Dropping(Ranged):
    """Five samples into its own depth-2 subscription before the executor spins: 3 dropped."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.create_subscription("std_msgs/msg/String", "chatter", lambda m: None, qos=2)
        pub = self.create_publisher("std_msgs/msg/String", "chatter", qos=10)
        for k in range(5):
            pub.publish(msgs.new("std_msgs/msg/String", data=str(k)))


def test_run_node_logs_the_loop_counters_at_shutdown(caplog):
    caplog.set_level(logging.INFO)
    assert run_node(Dropping, [], context=InprocContext()) == 0
    lines = [r.getMessage() for r in caplog.records if "loop counters" in r.getMessage()]
    assert len(lines) == 1 and lines[0].endswith(
        "loop counters: timer_periods_missed 0, messages_dropped 3, inputs_rejected 0; dropped per topic: /chatter 3")


class _RecordingContext(InprocContext):
    closed = 0

    def close(self) -> None:
        type(self).closed += 1
        super().close()


class Broken(Node):
    def __init__(self, **kw):
        super().__init__("broken", **kw)
        raise ModuleNotFoundError("No module named 'hri_pid_tuning.srv'")   # what killed it on rclpy


def test_run_node_closes_the_context_on_every_start_up_failure(capsys):
    ctx = _RecordingContext()
    assert run_node(Broken, [], context=ctx) == 1          # a bug: exit 1, traceback logged, no raise
    assert _RecordingContext.closed == 1 and not ctx.ok()
    rc = run_node(Ranged, ["--ros-args", "-p", "rate_hz:=5000.0"], context=_RecordingContext())
    assert rc == 2 and _RecordingContext.closed == 2      # bad input: one line, context closed too
