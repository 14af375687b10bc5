"""``hri topic pub`` behaves like ``ros2 topic pub`` (ros2topic/verb/pub.py): one test per option,
each a real ``hri`` process on a real Zenoh router, heard by a real subscription in this process.

Nothing is timed: messages are counted (``--times``), a rate is shown by a period far longer than
the test (``-r 0.01``: the second message would come after 100 s), waits only bound how long a
condition may take to hold."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from hri_runtime import msgs
from hri_runtime.node import Node
from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams
from ..stack_launch import wait_for  # noqa: E402  (bounded waits, free ports)

HRI = [sys.executable, "-m", "hri_runtime.cli.main"]
WAIT_S = 30.0
STRING = "std_msgs/msg/String"


@pytest.fixture
def graph(zenoh_router):
    """This process's side of the graph: a session on the router and a way to listen."""
    ctx = ZenohContext(ZenohParams.defaults().with_(connect_endpoints=[zenoh_router]))
    ctx.spin_in_background()
    node = Node("pub_test_listener", context=ctx)

    class G:
        env = dict(os.environ, HRI_TRANSPORT="zenoh", HRI_ZENOH_CONNECT=f"[{zenoh_router}]", PYTHONUNBUFFERED="1")

        @staticmethod
        def listen(topic, qos=10, type_name=STRING, field=lambda m: m.data):
            got = []
            node.create_subscription(type_name, topic, lambda m: got.append(field(m)), qos=qos)
            return got

        @staticmethod
        def pub_endpoint(topic):
            eps = [e for e in ctx.graph().endpoints if e.kind == "PUBLISHER" and e.name == topic]
            return eps[0] if eps else None

        @staticmethod
        def run(*args, stdin=None):
            """``hri topic pub ...`` to its end: (returncode, stdout, stderr)."""
            p = subprocess.run(HRI + ["topic", "pub", *args], env=G.env, input=stdin, capture_output=True,
                               text=True, timeout=120)
            return p.returncode, p.stdout, p.stderr

        @staticmethod
        def start(*args):
            return subprocess.Popen(HRI + ["topic", "pub", *args], env=G.env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    yield G
    ctx.shutdown()
    ctx.close()


def interrupt(p):
    """Ctrl-C: (returncode, stdout, stderr)."""
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=WAIT_S)
    return p.returncode, out, err


def test_defaults_are_ros2_topic_pubs():
    from hri_runtime.cli.topic import _add_pub_arguments
    import argparse

    ap = argparse.ArgumentParser()
    _add_pub_arguments(ap)
    a = ap.parse_args(["/t", STRING])
    assert (a.values, a.rate, a.print, a.once, a.times, a.wait_matching_subscriptions, a.keep_alive,
            a.qos_profile) == ("{}", 1.0, 1, False, 0, None, 0.1, "default")


def test_without_once_or_times_it_repeats_until_ctrl_c(graph):
    got = graph.listen("/pub_repeat")
    p = graph.start("/pub_repeat", STRING, "{data: hi}", "-r", "50")
    try:
        assert wait_for(lambda: len(got) >= 3), p.stderr.read() if p.poll() is not None else got
        assert p.poll() is None                                  # still publishing
    finally:
        rc, out, err = interrupt(p)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == "publisher: beginning loop"
    assert lines[1:4] == ["publishing #1: std_msgs.msg.String(data='hi')", "",
                          "publishing #2: std_msgs.msg.String(data='hi')"]
    assert set(got) == {"hi"}


@pytest.mark.parametrize("flag", ["--once", "-1"])
def test_once_publishes_one_message_and_exits(graph, flag):
    topic = f"/pub_once{flag.count('-')}"
    got = graph.listen(topic)
    rc, out, err = graph.run(topic, STRING, "{data: one}", flag)
    assert rc == 0, err
    assert out == "publisher: beginning loop\npublishing #1: std_msgs.msg.String(data='one')\n\n"
    assert wait_for(lambda: got == ["one"]) and got == ["one"]


@pytest.mark.parametrize("flag", ["--times", "-t"])
def test_times_publishes_exactly_that_many(graph, flag):
    topic = f"/pub_times{flag.count('-')}"
    got = graph.listen(topic)
    rc, out, err = graph.run(topic, STRING, "{data: n}", flag, "5", "-r", "100")
    assert rc == 0, err
    assert wait_for(lambda: len(got) == 5)
    assert out.count("publishing #") == 5 and "publishing #5: " in out and got == ["n"] * 5


def test_rate_paces_the_loop(graph):
    """-r 0.01: the first message at once, the next one 100 s later, so Ctrl-C after the first
    leaves exactly one; -r 200 -t 4 ends after its four."""
    got = graph.listen("/pub_rate")
    p = graph.start("/pub_rate", STRING, "{data: slow}", "-r", "0.01", "-t", "2")
    try:
        assert wait_for(lambda: len(got) == 1)
    finally:
        rc, out, err = interrupt(p)
    assert rc == 0 and out.count("publishing #") == 1 and got == ["slow"], err
    got2 = graph.listen("/pub_rate2")
    rc, out, err = graph.run("/pub_rate2", STRING, "{data: fast}", "--rate", "200", "-t", "4")
    assert rc == 0 and wait_for(lambda: len(got2) == 4), err


def test_print_shows_every_nth(graph):
    got = graph.listen("/pub_print")
    rc, out, err = graph.run("/pub_print", STRING, "{data: p}", "-t", "4", "-r", "100", "-p", "2")
    assert rc == 0, err
    assert [ln for ln in out.splitlines() if ln] == [
        "publisher: beginning loop", "publishing #2: std_msgs.msg.String(data='p')",
        "publishing #4: std_msgs.msg.String(data='p')"]
    assert wait_for(lambda: len(got) == 4)


def test_wait_matching_subscriptions_waits_for_that_many(graph):
    """-w 2 --once: it waits (and says so) while fewer than two subscriptions match, then both
    get the one message."""
    p = graph.start("/pub_wait", STRING, "{data: w}", "--once", "-w", "2")
    try:
        assert p.stdout.readline() == "Waiting for at least 2 matching subscription(s)...\n"
        first = graph.listen("/pub_wait")
        assert wait_for(lambda: graph.pub_endpoint("/pub_wait") is not None)
        assert p.poll() is None and first == []               # one is not enough
        second = graph.listen("/pub_wait")
        assert wait_for(lambda: first == ["w"] and second == ["w"])
        rc, out, err = p.wait(timeout=WAIT_S), p.stdout.read(), p.stderr.read()
    finally:
        if p.poll() is None:
            interrupt(p)
    assert rc == 0, err
    assert "publisher: beginning loop\npublishing #1: std_msgs.msg.String(data='w')\n" in out


def test_wait_zero_publishes_without_a_subscriber_and_max_wait_gives_up(graph):
    rc, out, err = graph.run("/pub_nobody", STRING, "{data: x}", "--once", "-w", "0")
    assert rc == 0 and "Waiting" not in out and "publishing #1: " in out, err
    rc, out, err = graph.run("/pub_nobody", STRING, "{data: x}", "--once", "--max-wait-time-secs", "0.5")
    assert rc == 1 and "publisher: beginning loop" not in out
    assert err.strip().splitlines() == ["error: timed out waiting for subscribers: expected 1 but only got 0"]


def test_keep_alive_keeps_the_publisher_after_its_last_message(graph):
    got = graph.listen("/pub_keep")
    p = graph.start("/pub_keep", STRING, "{data: k}", "--once", "--keep-alive", "1000")
    try:
        assert wait_for(lambda: got == ["k"])
        assert p.poll() is None and graph.pub_endpoint("/pub_keep") is not None   # still there
    finally:
        rc, _, err = interrupt(p)
    assert rc == 0, err
    assert wait_for(lambda: graph.pub_endpoint("/pub_keep") is None)           # gone with it


@pytest.mark.parametrize("args, expect", [
    (["--qos-profile", "sensor_data"], dict(reliability="best_effort", durability="volatile", depth=5)),
    (["--qos-profile", "action_status_default"], dict(reliability="reliable", durability="transient_local", depth=1)),
    (["--qos-depth", "7"], dict(depth=7, history="keep_last")),
    (["--qos-history", "keep_all"], dict(history="keep_all")),
    (["--qos-reliability", "best_effort"], dict(reliability="best_effort")),
    (["--qos-durability", "transient_local"], dict(durability="transient_local", depth=10)),
], ids=["profile", "profile_tl", "depth", "history", "reliability", "durability"])
def test_qos_options_set_the_offered_qos(graph, args, expect):
    topic = f"/pub_qos_{abs(hash(tuple(args)))}"
    p = graph.start(topic, STRING, "{data: q}", "-w", "0", "--keep-alive", "1000", *args)
    try:
        assert wait_for(lambda: graph.pub_endpoint(topic) is not None)
        q = graph.pub_endpoint(topic).qos
        assert {k: getattr(q, k) for k in expect} == expect
    finally:
        rc, _, err = interrupt(p)
    assert rc == 0, err


def test_transient_local_reaches_a_subscriber_created_after_the_message(graph):
    p = graph.start("/pub_latched", STRING, "{data: latched}", "--once", "-w", "0", "--keep-alive", "1000",
                    "--qos-durability", "transient_local")
    try:
        assert wait_for(lambda: graph.pub_endpoint("/pub_latched") is not None)
        for line in ("publisher: beginning loop\n", "publishing #1: std_msgs.msg.String(data='latched')\n"):
            assert p.stdout.readline() == line          # published before anyone listened
        late = graph.listen("/pub_latched", qos="latched")
        assert wait_for(lambda: late == ["latched"])
    finally:
        interrupt(p)


def test_node_name_names_the_publishing_node(graph):
    p = graph.start("/pub_named", STRING, "{data: n}", "-n", "my_talker", "-w", "0", "--keep-alive", "1000")
    try:
        assert wait_for(lambda: graph.pub_endpoint("/pub_named") is not None)
        assert graph.pub_endpoint("/pub_named").node_fqn == "/my_talker"
    finally:
        interrupt(p)


def test_stdin_gives_the_values(graph):
    got = graph.listen("/pub_stdin")
    rc, out, err = graph.run("/pub_stdin", STRING, "--stdin", "--once", stdin="data: from stdin\n")
    assert rc == 0, err
    assert wait_for(lambda: got == ["from stdin"])


def test_auto_and_now_stamp_each_message(graph):
    """``header: auto`` / ``stamp: now`` (ros2 topic pub's values): stamped at each publication."""
    got = graph.listen("/pub_stamped", type_name="geometry_msgs/msg/PoseStamped",
                       field=lambda m: (m.header.stamp.sec, m.header.stamp.nanosec, m.header.frame_id))
    rc, out, err = graph.run("/pub_stamped", "geometry_msgs/msg/PoseStamped",
                             "{header: auto, pose: {orientation: {w: 1.0}}}", "-t", "2", "-r", "100")
    assert rc == 0, err
    assert wait_for(lambda: len(got) == 2)
    assert all(sec > 0 and frame == "" for sec, _, frame in got) and got[0] != got[1]
    stamps = graph.listen("/pub_now", type_name="std_msgs/msg/Header", field=lambda m: m.stamp.sec)
    rc, out, err = graph.run("/pub_now", "std_msgs/msg/Header", "{stamp: now, frame_id: base}", "--once")
    assert rc == 0 and wait_for(lambda: len(stamps) == 1) and stamps[0] > 0, err


@pytest.mark.parametrize("args, needle", [
    (["--once", "--times", "3"], "not allowed with argument"),
    (["-r", "0"], "--rate"),
    (["-t", "-1"], "--times"),
    (["-w", "-2"], "--wait-matching-subscriptions"),
    (["--keep-alive", "0"], "--keep-alive"),
    (["--qos-profile", "nosuch"], "--qos-profile"),
    (["--qos-reliability", "maybe"], "--qos-reliability"),
    (["--qos-reliability", "unknown"], "'unknown' cannot be offered"),
    (["--qos-depth=-1"], "--qos-depth -1"),
    (["--max-wait-time-secs", "1"], "only effective with"),
    (["{data: [x"], "not valid YAML"),
], ids=lambda v: v if isinstance(v, str) else "_".join(v))
def test_bad_arguments_are_one_line_and_exit_2(args, needle):
    argv = ["/bad", STRING] + (args if args[0].startswith("{") else ["{data: x}"] + args)
    p = subprocess.run(HRI + ["topic", "pub", *argv], env=dict(os.environ, HRI_TRANSPORT="inproc"),
                       capture_output=True, text=True, timeout=60)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and needle in lines[0], p.stderr
