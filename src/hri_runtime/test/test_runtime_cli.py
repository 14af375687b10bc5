"""hri topic / hri node on a threaded in-process graph (the same code runs on the Zenoh graph)."""
import threading

import pytest

from hri_runtime import msgs
from hri_runtime.inproc import ThreadedInprocContext
from hri_runtime.node import Node
from hri_runtime.cli.topic import node_main, topic_main


@pytest.fixture
def graph():
    ctx = ThreadedInprocContext()
    talker = Node("talker", context=ctx, namespace="demo")
    pub = talker.create_publisher("std_msgs/msg/String", "chatter")
    talker.create_timer(0.01, lambda: pub.publish(msgs.new("std_msgs/msg/String", data="hello")))
    lis = Node("listener", context=ctx)
    got = []
    lis.create_subscription("geometry_msgs/msg/Twist", "/cmd_vel", got.append)
    yield ctx, got
    ctx.shutdown()


def test_topic_list_and_node_list(graph, capsys):
    ctx, _ = graph
    assert topic_main(["list", "-t"], context=ctx) == 0
    out = capsys.readouterr().out
    assert "/demo/chatter [std_msgs/msg/String]" in out and "/cmd_vel [geometry_msgs/msg/Twist]" in out


def test_node_list_and_info(capsys):
    ctx = ThreadedInprocContext()
    n = Node("talker", context=ctx, namespace="demo")
    n.create_publisher("std_msgs/msg/String", "chatter")
    Node("_ros2cli_daemon_0", context=ctx)      # hidden, as ros2 node list hides it
    assert node_main(["list"], context=ctx) == 0
    assert capsys.readouterr().out.split() == ["/demo/talker"]
    assert node_main(["list", "--all"], context=ctx) == 0
    assert capsys.readouterr().out.split() == ["/_ros2cli_daemon_0", "/demo/talker"]
    ctx2 = ThreadedInprocContext()
    n2 = Node("talker", context=ctx2, namespace="demo")
    n2.create_publisher("std_msgs/msg/String", "chatter")
    assert node_main(["info", "/demo/talker"], context=ctx2) == 0
    assert "/demo/chatter: std_msgs/msg/String" in capsys.readouterr().out


def test_echo_once_finds_the_type(graph, capsys):
    ctx, _ = graph
    assert topic_main(["echo", "/demo/chatter", "--once", "--timeout", "30"], context=ctx) == 0
    assert capsys.readouterr().out == "data: hello\n---\n"


def test_pub_builds_the_message_from_yaml(graph, capsys):
    ctx, got = graph
    assert topic_main(["pub", "/cmd_vel", "geometry_msgs/msg/Twist", "{linear: {x: 0.5}}", "-t", "2"],
                      context=ctx) == 0
    assert [m.linear.x for m in got] == [0.5, 0.5]
    assert topic_main(["pub", "/cmd_vel", "geometry_msgs/msg/Twist", "{linear: {q: 1}}"], context=ThreadedInprocContext()) == 2
    assert "no field" in capsys.readouterr().err


def test_hz_reports_a_rate(graph, capsys):
    ctx, _ = graph
    assert topic_main(["hz", "/demo/chatter", "--duration", "1.5"], context=ctx) == 0
    assert "average rate:" in capsys.readouterr().out
