"""``hri router``: a standalone Zenoh router process, and ``hri launch`` using it: the launch
does not start its own, and while the router is gone it prints an ERROR every check period
until the router is back. Real processes, real Zenoh; waits are bounded, nothing timed."""
import io
import os
import signal
import socket
import subprocess
import sys
import time

from hri_runtime.launch.launch_description import LaunchDescription, NodeSpec
from hri_runtime.launch.launch_service import LaunchParams, Launcher
from hri_runtime.node import Node
from hri_runtime import msgs
from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams, router_answers
from ..stack_launch import free_port, wait_for  # noqa: E402  (bounded waits, free ports)

HRI = [sys.executable, "-m", "hri_runtime.cli.main"]
WAIT_S = 30.0


def start_router(ep):
    p = subprocess.Popen(HRI + ["router", "--listen", ep], stderr=subprocess.PIPE, text=True)
    assert wait_for(lambda: router_answers(ep, 0.2) or p.poll() is not None)
    assert p.poll() is None, p.stderr.read()
    return p


def stop(p):
    p.send_signal(signal.SIGINT)
    try:
        return p.wait(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.wait()


def test_router_carries_topics_between_two_sessions():
    ep = f"tcp/127.0.0.1:{free_port()}"
    r = start_router(ep)
    ctxs = []
    try:
        params = ZenohParams.defaults().with_(connect_endpoints=[ep])
        a, b = ZenohContext(params), ZenohContext(params)
        ctxs += [a, b]
        got = []
        Node("listener", context=b).create_subscription("std_msgs/msg/String", "/chatter", got.append)
        pub = Node("talker", context=a).create_publisher("std_msgs/msg/String", "/chatter")
        a.spin_in_background()
        b.spin_in_background()
        assert wait_for(lambda: pub.get_subscription_count() > 0)
        assert wait_for(lambda: (pub.publish(msgs.new("std_msgs/msg/String", data="hi")), bool(got))[1])
    finally:
        for c in ctxs:
            c.shutdown()
            c.close()
        assert stop(r) == 0
    assert "hri router: stopped" in r.stderr.read()


def test_launch_uses_the_router_and_warns_while_it_is_gone(monkeypatch):
    monkeypatch.setenv("HRI_TRANSPORT", "zenoh")
    ep = f"tcp/127.0.0.1:{free_port()}"
    r = start_router(ep)
    desc = LaunchDescription(file="<test>", nodes=[NodeSpec(name="sleeper", cmd=["sleep", "120"])])
    out = io.StringIO()
    launcher = Launcher(desc, LaunchParams(router_probe_timeout_s=0.2, poll_period_s=0.02,
                                           router_check_period_s=0.1, sigterm_timeout_s=2.0,
                                           sigkill_timeout_s=2.0), router=ep, out=out)
    try:
        launcher.start()
        assert launcher.router_session is None           # it did not start a router of its own
        assert any("already answers" in e for e in launcher.events)
        stop(r)
        assert wait_for(lambda: launcher.router_lost >= 2)     # repeated, not once
        gone = [e for e in launcher.events if e.startswith("ERROR: zenoh router on")]
        assert len(gone) >= 2 and "GONE" in gone[0] and ep in gone[0]
        r = start_router(ep)
        assert wait_for(lambda: any("is back" in e for e in launcher.events))
        n = launcher.router_lost
        time.sleep(0.5)       # a few check periods with the router up: no new ERROR
        assert launcher.router_lost == n
    finally:
        launcher.shutdown()
        stop(r)
    assert "[hri launch] ERROR: zenoh router on" in out.getvalue()


def test_router_bad_input_is_one_line(tmp_path):
    p = subprocess.run(HRI + ["router", "--listen", "tls/127.0.0.1:0"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "needs runtime.zenoh.tls" in p.stderr
    p = subprocess.run(HRI + ["router", "--set", f"runtime.zenoh.tls.root_ca_certificate={tmp_path}/none.pem",
                              "--set", "runtime.zenoh.tls.certificate=x", "--set", "runtime.zenoh.tls.private_key=y"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no such file" in p.stderr
    p = subprocess.run(HRI + ["router", "--set", "runtime.zenoh.access_control.enabled=maybe"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "expected a boolean" in p.stderr
    port = free_port()
    with socket.socket() as s:                      # the port is taken
        s.bind(("127.0.0.1", port))
        s.listen()
        p = subprocess.run(HRI + ["router", "--listen", f"tcp/127.0.0.1:{port}"], capture_output=True,
                           text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.startswith("hri router: error: cannot start a Zenoh router")


def test_echo_of_rosout_over_zenoh_gets_the_cached_lines(capsys):
    """ros2 topic echo /rosout on our Zenoh graph: the log line was published before the echo
    started; QoS matching (TRANSIENT_LOCAL) gets it from the publisher's cache; info -v shows it."""
    from hri_runtime.cli.topic import topic_main

    ep = f"tcp/127.0.0.1:{free_port()}"
    r = start_router(ep)
    params = ZenohParams.defaults().with_(connect_endpoints=[ep])
    a = ZenohContext(params)
    try:
        n = Node("talker", context=a)
        a.spin_in_background()
        n.get_logger().error("logged before anyone listened")
        assert topic_main(["echo", "/rosout", "--once", "--timeout", "30"], context=ZenohContext(params)) == 0
        out = capsys.readouterr().out
        assert "msg: logged before anyone listened" in out and "name: talker" in out
        assert topic_main(["info", "-v", "/rosout"], context=ZenohContext(params)) == 0
        out = capsys.readouterr().out
        assert "Node name: talker\n" in out and "Endpoint type: PUBLISHER\n" in out
        assert "  Durability: TRANSIENT_LOCAL\n" in out and "Topic type hash: RIHS01_" in out
        assert "GID: " in out and "GID: (unknown)" not in out
    finally:
        a.shutdown()
        a.close()
        stop(r)


def test_the_hri_commands_over_a_real_router(tmp_path):
    """The installed `hri` entry points on a Zenoh graph: service list/call, param dump/load,
    record + bag info (the recording carries the offered QoS of the latched publisher)."""
    import yaml

    ep = f"tcp/127.0.0.1:{free_port()}"
    r = start_router(ep)
    env = dict(os.environ, HRI_TRANSPORT="zenoh", HRI_ZENOH_CONNECT=f"[{ep}]")
    a = ZenohContext(ZenohParams.defaults().with_(connect_endpoints=[ep]))
    try:
        n = Node("ctl", context=a)
        n.declare_parameter("gain", 2.5, on_set=lambda v: None)
        calls = []
        n.create_service("std_srvs/srv/Trigger", "/ctl/reset",
                         lambda req, resp: (calls.append(1), setattr(resp, "success", True), resp)[2])
        latched = n.create_publisher("std_msgs/msg/String", "/ctl/state", qos="latched")
        latched.publish(msgs.new("std_msgs/msg/String", data="READY"))
        a.spin_in_background()

        def hri(*args):
            return subprocess.run(HRI + list(args), env=env, capture_output=True, text=True, timeout=120)

        p = hri("service", "list")
        assert p.returncode == 0 and "/ctl/reset" in p.stdout.split(), p.stderr
        p = hri("service", "call", "/ctl/reset", "std_srvs/srv/Trigger")
        assert p.returncode == 0 and "response:\nstd_srvs.srv.Trigger_Response(success=True" in p.stdout
        assert calls == [1]
        p = hri("param", "dump", "/ctl")
        assert p.returncode == 0 and yaml.safe_load(p.stdout)["/ctl"]["ros__parameters"]["gain"] == 2.5
        f = tmp_path / "ctl.yaml"
        f.write_text("/ctl:\n  ros__parameters:\n    gain: 4.0\n")
        p = hri("param", "load", "/ctl", str(f))
        assert p.returncode == 0 and p.stdout == "Set parameter gain successful\n"
        assert n.get_parameter("gain").value == 4.0
        bag = tmp_path / "state.mcap"
        p = hri("record", "-o", str(bag), "/ctl/state", "--duration", "3")
        assert p.returncode == 0, p.stderr
        p = hri("bag", "info", str(bag))
        assert p.returncode == 0
        assert ("Topic: /ctl/state | Type: std_msgs/msg/String | Count: 1 | Serialization Format: cdr | "
                "Rate: - | QoS: RELIABLE, TRANSIENT_LOCAL, KEEP_LAST (1)") in p.stdout
    finally:
        a.shutdown()
        a.close()
        stop(r)
