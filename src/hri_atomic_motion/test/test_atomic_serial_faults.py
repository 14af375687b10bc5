"""Serial faults fail safe: the atomic node with driver ``serial`` against a pty standing
in for the microcontroller, on the in-process runtime (simulated clock, one tick per step).

* the device stops reading: writes never block, the fault ``device_fault`` latches within
  ``stall_timeout_s`` + one period of the first byte the device refused;
* the device stops reporting: the same fault within ``stall_timeout_s`` + one period;
* the device vanishes (EIO): the fault latches on the next tick, no exception reaches the
  executor, one log line;
and in every case /diagnostics goes ERROR, a system stop is requested (``serial_fault``), motor
commands stop, and the node keeps publishing its state and diagnostics.

Head and audio (``/head_cmd``, ``/audio_cmd`` -> the MCU's ``H`` / ``A`` lines) on the same pty:
bounded (clamped, counted), rate limited (``atomic.head.rate_hz``, the latest wins), a non-finite
command rejected and never sent, the head refused while the system stop holds, and a stalled or
unplugged device latching the same fault while head commands stream."""
from __future__ import annotations

import copy
import logging
import os
import select
import tty

import pytest

import math

from hri_runtime import msgs
from hri_runtime.config.tree import load_robot_config
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node

from hri_atomic_motion.core.line_protocol import LineParser, encode
from hri_atomic_motion.nodes.atomic_node import AtomicNode
from hri_safety.nodes.stop_listener import STOP_REQUEST_TOPIC, STOP_REQUEST_TYPE


class Watch(Node):
    def __init__(self, topics, **kw):
        super().__init__("watch", **kw)
        self.diag, self.state, self.requests = [], [], []
        self.create_subscription("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics",
                                 lambda m: self.diag.append((self.get_clock().now_s(), m)), qos=1000)
        self.create_subscription("hri_interfaces/msg/AtomicState", topics["atomic_state"],
                                 lambda m: self.state.append((self.get_clock().now_s(), m)), qos=10000)
        self.create_subscription(STOP_REQUEST_TYPE, STOP_REQUEST_TOPIC, self.requests.append, qos=100)


@pytest.fixture
def rig(caplog):
    yield from _rig(supervisor=False)


@pytest.fixture
def heard_rig(caplog):
    """The rig with the stop supervisor heard (released): the head may move."""
    yield from _rig(supervisor=True)


def _rig(supervisor: bool):
    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    cfg = copy.deepcopy(load_robot_config("tino"))
    cfg["atomic"]["serial"]["port"] = os.ttyname(slave)
    ctx = InprocContext(start_time_s=50.0)
    node = AtomicNode(cfg=cfg, context=ctx, parameters={"atomic.node.driver": "serial"})
    watch = Watch(cfg["atomic"]["topics"], context=ctx)
    if supervisor:
        from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

        StopSupervisorNode(context=ctx)
    os.set_blocking(master, False)
    state = {"master": master}
    yield ctx, node, watch, cfg, state
    node.destroy_node()
    watch.destroy_node()
    for fd in (state["master"], slave):
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


def period(cfg):
    return cfg["atomic"]["node"]["period_s"]


def mcu_report(master, node, ticks=400):
    """One encoder report, and wait (wall clock, not asserted) until the kernel delivered it to
    the node's side of the pty (a pty passes bytes on asynchronously)."""
    os.write(master, encode("E", ticks, 0, 0.0))
    select.select([node.link.port.fileno()], [], [], 0.5)


def drain(master):
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except (BlockingIOError, OSError):
            return out
        if not chunk:
            return out
        out += chunk


def step(ctx, cfg, n=1):
    for _ in range(n):
        ctx.spin_for(period(cfg))


def healthy_start(ctx, node, cfg, master):
    for _ in range(20):
        mcu_report(master, node)
        step(ctx, cfg)
        drain(master)
    assert node.link.fault is None and node.link.last is not None


def assert_failed_safe(ctx, node, watch, cfg, kind):
    fault = node.ctrl.status()["fault"]
    assert fault == "device_fault" and node.link.fault.startswith(kind)
    n_state = len(watch.state)
    step(ctx, cfg, int(2 * cfg["atomic"]["node"]["diagnostics_period_s"] / period(cfg)))
    assert len(watch.state) > n_state                              # still serving its topics
    last = watch.diag[-1][1].status[0]
    assert last.level == 2 and "device_fault" in last.message
    assert [r.source for r in watch.requests] == ["serial_fault"]   # one stop request


def test_device_that_stops_reading_latches_within_the_stall_timeout(rig, caplog):
    ctx, node, watch, cfg, st = rig
    master = st["master"]
    healthy_start(ctx, node, cfg, master)
    t_refused = None
    for _ in range(200000):                          # the MCU keeps reporting but reads nothing
        mcu_report(master, node)
        step(ctx, cfg)
        if t_refused is None and node.link.pending_bytes:
            t_refused = ctx.now_s()
        if node.link.fault is not None:
            break
    t_fault = ctx.now_s()
    assert t_refused is not None
    assert t_fault - t_refused <= cfg["atomic"]["serial"]["stall_timeout_s"] + 2 * period(cfg) + 1e-9
    assert node.link.fault.startswith("stall")
    assert_failed_safe(ctx, node, watch, cfg, "stall")
    assert sum("fault latched: device_fault" in r.getMessage() for r in caplog.records
               if r.name.startswith("hri.")) == 1


def test_device_that_stops_reporting_latches_within_the_stall_timeout(rig):
    ctx, node, watch, cfg, st = rig
    master = st["master"]
    healthy_start(ctx, node, cfg, master)
    t_last = ctx.now_s()
    for _ in range(1000):
        step(ctx, cfg)
        drain(master)
        if node.link.fault is not None:
            break
    assert ctx.now_s() - t_last <= cfg["atomic"]["serial"]["stall_timeout_s"] + 2 * period(cfg) + 1e-9
    assert_failed_safe(ctx, node, watch, cfg, "stall")


def test_vanished_device_latches_at_once_without_a_traceback_flood(rig, caplog):
    ctx, node, watch, cfg, st = rig
    healthy_start(ctx, node, cfg, st["master"])
    os.close(st["master"])                           # unplugged: the pty's other side is gone (EIO)
    st["master"] = None
    caplog.clear()
    step(ctx, cfg, 2)
    assert node.link.fault is not None and node.link.fault.startswith("lost")
    assert_failed_safe(ctx, node, watch, cfg, "lost")
    step(ctx, cfg, 400)                              # 2 s of ticks: no more log lines, no exception
    assert not any(r.exc_info for r in caplog.records)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) <= 2 and all("fault latched: device_fault" in e for e in errors)   # controller + node


def test_explicit_reset_reopens_the_port_and_clears_the_fault(rig):
    """After a stall the fault holds until the operator's reset; the reset reopens the port, and
    the node runs again once the device reports (nothing restarts by itself)."""
    ctx, node, watch, cfg, st = rig
    master = st["master"]
    healthy_start(ctx, node, cfg, master)
    step(ctx, cfg, int(2 * cfg["atomic"]["serial"]["stall_timeout_s"] / period(cfg)) + 2)   # MCU silent
    assert node.ctrl.status()["fault"] == "device_fault"
    drain(master)
    for _ in range(10):                                   # the device is back: still latched
        mcu_report(master, node)
        step(ctx, cfg)
        drain(master)
    assert node.ctrl.status()["fault"] == "device_fault"
    pub = Node("operator", context=ctx).create_publisher("std_msgs/msg/Bool", cfg["atomic"]["topics"]["reset"])
    pub.publish(msgs.new("std_msgs/msg/Bool", data=True))
    for _ in range(20):
        mcu_report(master, node)
        step(ctx, cfg)
        drain(master)
    assert node.link.fault is None and node.ctrl.status()["fault"] is None
    assert node.link.last is not None


# ------------------------------------------------------------------------------ head and audio
class Headset(Node):
    """What vr_interface publishes: /head_cmd and /audio_cmd (geometry_msgs/Vector3)."""

    def __init__(self, topics, **kw):
        super().__init__("headset", **kw)
        self.head = self.create_publisher("geometry_msgs/msg/Vector3", topics["head"], qos=10)
        self.audio = self.create_publisher("geometry_msgs/msg/Vector3", topics["audio"], qos=10)

    def send_head(self, pitch, pan, tilt):
        self.head.publish(msgs.new("geometry_msgs/msg/Vector3", x=pitch, y=pan, z=tilt))

    def send_audio(self, volume, orientation_rad):
        self.audio.publish(msgs.new("geometry_msgs/msg/Vector3", x=volume, y=orientation_rad, z=0.0))


def still(master, node, cfg):
    """An encoder report at the leg's neutral position: the resting leg does not move (no stall)."""
    mcu_report(master, node, ticks=cfg["atomic"]["leg"]["neutral_ticks"])


def heard_start(ctx, node, cfg, master):
    """healthy_start, then until the supervisor's heartbeat released the node's stop."""
    healthy_start(ctx, node, cfg, master)
    for _ in range(400):
        if not node.stop.stopped:
            break
        still(master, node, cfg)
        step(ctx, cfg)
        drain(master)
    assert not node.stop.stopped


def mcu_lines(master, parser, kinds=("H", "A")):
    return [m for m in parser.feed(drain(master)) if m.kind in kinds]


def test_head_and_audio_reach_the_mcu_bounded_and_rate_limited(heard_rig):
    ctx, node, watch, cfg, st = heard_rig
    master = st["master"]
    heard_start(ctx, node, cfg, master)
    hs, parser = Headset(cfg["atomic"]["topics"], context=ctx), LineParser()
    head = cfg["atomic"]["head"]
    lo, hi = [math.radians(v) for v in head["position_min_deg"]], [math.radians(v) for v in head["position_max_deg"]]
    rate = head["rate_hz"]
    # the headset streams a slow pan sweep every tick (200 Hz) for 1 s
    sent, got = [], []
    n = int(round(1.0 / period(cfg)))
    for k in range(n):
        value = (0.1, 0.5 * k / n, -0.1)
        hs.send_head(*value)
        sent.append(value)
        still(master, node, cfg)
        step(ctx, cfg)
        got += mcu_lines(master, parser)
    heads = [m.fields for m in got if m.kind == "H"]
    assert 0.8 * rate <= len(heads) <= rate + 1                      # rate limited, not starved
    for f in heads:
        assert all(a <= v <= b for v, a, b in zip(f, lo, hi))
    got = []
    for _ in range(int(2 * rate) + 2):
        still(master, node, cfg)
        step(ctx, cfg)
        got += mcu_lines(master, parser)
    assert got and got[-1].fields == pytest.approx(sent[-1], abs=1e-4)    # the latest wins
    # out of bounds: clamped to the bound, flagged (counted), sent
    hs.send_head(3.0, -3.0, 0.0)
    hs.send_audio(250.0, -20.0)
    for _ in range(int(cfg["atomic"]["node"]["diagnostics_period_s"] / period(cfg)) + 2):
        still(master, node, cfg)
        step(ctx, cfg)
        got += mcu_lines(master, parser)
    h = [m.fields for m in got if m.kind == "H"][-1]
    a = [m.fields for m in got if m.kind == "A"][-1]
    assert h == pytest.approx((hi[0], lo[1], 0.0), abs=1e-4)
    pkt = cfg["pulse"]["packet"]
    assert a == pytest.approx((pkt["audio_volume_max"], -math.radians(pkt["audio_orientation_abs_max_deg"])), abs=1e-4)
    assert node.head_gate.counts["head_clamped"] == 1 and node.head_gate.counts["audio_clamped"] == 1
    values = {kv.key: kv.value for kv in watch.diag[-1][1].status[0].values}
    assert values["head_audio_head_clamped"] == "1" and values["head_audio_audio_clamped"] == "1"
    assert node.link.fault is None and node.link.dropped_writes == 0


def test_a_bad_head_or_audio_command_is_rejected_counted_and_never_sent(heard_rig):
    ctx, node, watch, cfg, st = heard_rig
    master = st["master"]
    heard_start(ctx, node, cfg, master)
    hs, parser = Headset(cfg["atomic"]["topics"], context=ctx), LineParser()
    hs.send_head(0.2, 0.1, 0.0)
    for _ in range(10):
        still(master, node, cfg)
        step(ctx, cfg)
    assert [m.fields for m in mcu_lines(master, parser)] == [pytest.approx((0.2, 0.1, 0.0))]
    for bad in ((float("nan"), 0.0, 0.0), (0.0, float("inf"), 0.0), (0.0, 0.0, -float("inf"))):
        hs.send_head(*bad)
    hs.send_audio(float("nan"), 0.0)
    for _ in range(20):
        still(master, node, cfg)
        step(ctx, cfg)
    assert mcu_lines(master, parser) == []                          # nothing reached the MCU
    t = cfg["atomic"]["topics"]
    assert node.rejected_count(t["head"], "non_finite") == 3 and node.rejected_count(t["audio"], "non_finite") == 1
    assert node.link.parser.rejected == {} and node.ctrl.status()["fault"] is None   # the link is healthy


def test_the_head_holds_while_the_system_stop_holds(heard_rig):
    ctx, node, watch, cfg, st = heard_rig
    master = st["master"]
    heard_start(ctx, node, cfg, master)
    hs, parser = Headset(cfg["atomic"]["topics"], context=ctx), LineParser()
    stopper = Node("console", context=ctx).create_publisher(STOP_REQUEST_TYPE, STOP_REQUEST_TOPIC, qos=10)
    stopper.publish(msgs.new(STOP_REQUEST_TYPE, source="console", reason="test"))
    for _ in range(10):
        still(master, node, cfg)
        step(ctx, cfg)
    assert node.stop.stopped
    drain(master)
    hs.send_head(0.3, 0.3, 0.3)
    hs.send_audio(30.0, 0.5)                                        # audio is no motion: it passes
    for _ in range(20):
        still(master, node, cfg)
        step(ctx, cfg)
    got = mcu_lines(master, parser)
    assert [m.kind for m in got] == ["A"] and node.head_gate.counts["head_refused_stop"] == 1


def test_a_device_that_stops_reading_while_the_head_streams_latches_the_stall(heard_rig):
    ctx, node, watch, cfg, st = heard_rig
    master = st["master"]
    heard_start(ctx, node, cfg, master)
    hs = Headset(cfg["atomic"]["topics"], context=ctx)
    t_refused = None
    for k in range(200000):                          # the MCU reports but reads nothing
        hs.send_head(0.1, 0.5 * math.sin(0.01 * k), 0.0)
        hs.send_audio(50.0 + 10.0 * math.sin(0.01 * k), 0.0)
        still(master, node, cfg)
        step(ctx, cfg)
        if t_refused is None and node.link.pending_bytes:
            t_refused = ctx.now_s()
        if node.link.fault is not None:
            break
    assert t_refused is not None and node.link.fault.startswith("stall")
    assert ctx.now_s() - t_refused <= cfg["atomic"]["serial"]["stall_timeout_s"] + 2 * period(cfg) + 1e-9
    assert node.ctrl.status()["fault"] == "device_fault"
    sent = node.head_gate.counts["head_sent"]
    drain(master)
    for _ in range(50):                              # faulted: the link writes nothing more
        hs.send_head(0.2, 0.2, 0.2)
        step(ctx, cfg)
    assert drain(master) == b"" and node.head_gate.counts["head_sent"] == sent


def test_an_unplugged_device_while_the_head_streams_latches_at_once_without_a_traceback(heard_rig, caplog):
    ctx, node, watch, cfg, st = heard_rig
    heard_start(ctx, node, cfg, st["master"])
    hs = Headset(cfg["atomic"]["topics"], context=ctx)
    hs.send_head(0.1, 0.1, 0.1)
    step(ctx, cfg)
    os.close(st["master"])
    st["master"] = None
    caplog.clear()
    for k in range(200):
        hs.send_head(0.1, 0.01 * k, 0.0)
        hs.send_audio(20.0, 0.01 * k)
        step(ctx, cfg)
    assert node.link.fault is not None and node.link.fault.startswith("lost")
    assert node.ctrl.status()["fault"] == "device_fault"
    assert not any(r.exc_info for r in caplog.records)
