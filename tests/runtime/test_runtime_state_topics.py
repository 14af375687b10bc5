"""Every state topic answers a late subscriber at once (docs/ros2-interop.md "State topics"):
its publisher is TRANSIENT_LOCAL depth 1, so a subscriber created after the state was published
gets the current one from the publisher's cache, without the node publishing again.

Each topic's real node runs on two backends:
- in-process: the node publishes its state, then (the fake clock standing still: no timer can
  fire, nothing is published) a late TRANSIENT_LOCAL subscription receives it;
- Zenoh, on a real router: the node's context is spun until the state is out, then no more
  (nothing of that node runs), and ``hri topic echo --once`` from another session - QoS matched
  to the publisher, as ``ros2 topic echo`` does - prints it.
Nothing is timed; waits only bound how long a condition may take to hold."""
from __future__ import annotations

import socket
import time
from types import SimpleNamespace

import pytest
import yaml

from hri_runtime.config.tree import load_robot_config
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node
from hri_runtime.qos import QOS_LATCHED
from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams

WAIT_S = 30.0


# ---------------------------------------------------------------------------- the state publishers
# build(ctx, spin) -> node(s); spin(seconds) runs the context; each returns the published state's
# check: a function of the received message (True = the state the node holds)

def _supervisor(ctx, spin):
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    StopSupervisorNode(context=ctx)
    spin(0.3)
    return lambda m: m.stopped is False and m.heartbeat_seq >= 1


def _teleop_mode(ctx, spin):
    from hri_arm_teleop.nodes.arm_teleop_node import ArmTeleopNode
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    StopSupervisorNode(context=ctx)
    node = ArmTeleopNode(cfg=load_robot_config("fr3", overrides=["teleop.output=joint"]), context=ctx,
                         parameters={"teleop.vr.enabled": False})
    spin(0.5)
    assert node.pipe.mode == "HOLD"
    return lambda m: m.mode == "HOLD" and m.reason == ""


def _atomic_state(ctx, spin):
    from hri_atomic_motion.nodes.atomic_node import AtomicNode
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    StopSupervisorNode(context=ctx)
    node = AtomicNode(cfg=load_robot_config("tino"), context=ctx, parameters={"atomic.node.driver": "sim"})
    spin(0.3)
    node.ctrl.safe_stop(node.now())          # a latched fault: the state says so
    spin(0.05)
    return lambda m: m.fault == "link_safe_stop" and m.locked is False and m.state == 0


def _interaction_state(ctx, spin):
    from hri_interaction.nodes.interaction_node import InteractionNode
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    StopSupervisorNode(context=ctx)
    cfg = load_robot_config("fr3")
    InteractionNode(cfg=cfg, context=ctx, parameters={"interaction.engine": "python"})
    spin(0.1)
    return lambda m: m.mode == cfg["interaction"]["mode"] and m.ticks > 0 and m.driver == "sim"


def _link_safe_stop(ctx, spin):
    from hri_pulse.core.codec import UnityCodec, UnityPacket
    from hri_pulse.nodes.vr_interface_node import VrInterfaceNode

    node = VrInterfaceNode(context=ctx, parameters={"pulse.udp.port": 0})
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for seq in range(10):                   # a headset connects: 25 Hz packets
            tx.sendto(UnityCodec.encode(UnityPacket(0.0, 0.0, 0.0, 0, 0, 0.0, 0.0, seq)), ("127.0.0.1", node.port))
            spin(0.04)
    finally:
        tx.close()
    assert node.core.link.health.ever_connected
    return lambda m: m.data is False            # connected: no safe stop


def _pid_status(ctx, spin):
    from hri_pid_tuning.nodes.tuning_node import PidTuningNode

    PidTuningNode(context=ctx)
    spin(1.2)
    return lambda m: m.robot != "" and len(m.joints) > 0


def _pid_progress(ctx, spin):
    from hri_pid_tuning.nodes.tuning_node import PidTuningNode

    node = PidTuningNode(context=ctx)
    node.run_job("probe_job", lambda: None)
    spin(0.2)
    return lambda m: m.phase == "start" and m.detail == "probe_job"


STATE_TOPICS = {
    "/safety/stop": ("hri_interfaces/msg/SafetyStop", _supervisor),
    "/teleop/mode": ("hri_interfaces/msg/TeleopMode", _teleop_mode),
    "/atomic/state": ("hri_interfaces/msg/AtomicState", _atomic_state),
    "/interaction/state": ("hri_interfaces/msg/InteractionState", _interaction_state),
    "/link/safe_stop": ("std_msgs/msg/Bool", _link_safe_stop),
    "/pid_tuning/status": ("hri_interfaces/msg/PidTuningStatus", _pid_status),
    "/pid_tuning/progress": ("hri_interfaces/msg/TuningProgress", _pid_progress),
}


@pytest.mark.parametrize("topic", sorted(STATE_TOPICS))
def test_a_late_subscriber_gets_the_state_at_once_in_process(topic):
    type_name, build = STATE_TOPICS[topic]
    ctx = InprocContext()
    expected = build(ctx, ctx.spin_for)
    t = ctx.now_s()
    got = []
    Node("late_echo", context=ctx).create_subscription(type_name, topic, got.append, qos=QOS_LATCHED)
    while ctx.spin_once():                      # run what is ready; the clock stands still
        pass
    assert ctx.now_s() == t
    assert len(got) == 1 and expected(got[0]), got


@pytest.mark.parametrize("topic", sorted(STATE_TOPICS))
def test_echo_once_on_a_real_router_answers_from_the_publishers_cache(topic, zenoh_router, capsys):
    """``hri topic echo --once`` of a node whose context no longer runs: the answer can only come
    from the TRANSIENT_LOCAL cache (``hri topic info -v`` shows the publisher's durability)."""
    from hri_runtime.cli.topic import topic_main

    type_name, build = STATE_TOPICS[topic]
    params = ZenohParams.defaults().with_(connect_endpoints=[zenoh_router])
    ctx = ZenohContext(params)
    try:
        def spin(seconds):                     # run the node's callbacks for that long, then none
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                ctx.spin(timeout_s=0.01)

        expected = build(ctx, spin)
        seen = []                              # the state is out (a busy machine may be slow)
        Node("probe", context=ctx).create_subscription(type_name, topic, seen.append, qos=QOS_LATCHED)
        end = time.monotonic() + WAIT_S
        while not seen and time.monotonic() < end:
            ctx.spin(timeout_s=0.01)
        assert seen                            # from here on nothing of that context runs
        assert topic_main(["info", "-v", topic], context=ZenohContext(params)) == 0
        info = capsys.readouterr().out
        assert "Endpoint type: PUBLISHER" in info and "Durability: TRANSIENT_LOCAL" in info, info
        assert topic_main(["echo", topic, "--once", "--timeout", str(WAIT_S)], context=ZenohContext(params)) == 0
        out = capsys.readouterr().out
        assert out.endswith("---\n") and out.count("---\n") == 1, out
        assert expected(SimpleNamespace(**yaml.safe_load(out[:-len("---\n")]))), out
    finally:
        ctx.shutdown()
        ctx.close()
