"""Serial faults fail safe: the atomic node with driver ``serial`` against a pty standing
in for the microcontroller, on the in-process runtime (simulated clock, one tick per step).

* the device stops reading: writes never block, the fault ``device_fault`` latches within
  ``stall_timeout_s`` + one period of the first byte the device refused;
* the device stops reporting: the same fault within ``stall_timeout_s`` + one period;
* the device vanishes (EIO): the fault latches on the next tick, no exception reaches the
  executor, one log line;
and in every case /diagnostics goes ERROR, a system stop is requested (``serial_fault``), motor
commands stop, and the node keeps publishing its state and diagnostics."""
from __future__ import annotations

import copy
import logging
import os
import select
import tty

import pytest

from hri_runtime import msgs
from hri_runtime.config.tree import load_robot_config
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node

from hri_atomic_motion.core.line_protocol import encode
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
    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    cfg = copy.deepcopy(load_robot_config("tino"))
    cfg["atomic"]["serial"]["port"] = os.ttyname(slave)
    ctx = InprocContext(start_time_s=50.0)
    node = AtomicNode(cfg=cfg, context=ctx, parameters={"atomic.node.driver": "serial"})
    watch = Watch(cfg["atomic"]["topics"], context=ctx)
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
