"""Tino's head and audio from the headset to the hardware: Unity packets over real UDP ->
vr_interface -> /head_cmd, /audio_cmd -> the atomic node's serial driver (a pty standing in for the
microcontroller: its H and A lines) and, from the same topics, the tino sim node (the model's head
actuators, its audio state). In-process runtime, simulated clock, one node tick per step."""
from __future__ import annotations

import math
import os
import select
import socket
import tty

import pytest

from hri_runtime.config.tree import load_robot_config
from hri_runtime.inproc import InprocContext

from hri_atomic_motion.core.line_protocol import LineParser, encode
from hri_pulse.core.codec import UnityCodec, UnityPacket


@pytest.fixture
def stack():
    from hri_atomic_motion.nodes.atomic_node import AtomicNode
    from hri_pulse.nodes.vr_interface_node import VrInterfaceNode
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode
    from hri_sim.nodes.tino_node import TinoSimNode

    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    os.set_blocking(master, False)
    cfg = load_robot_config("tino")
    ctx = InprocContext(start_time_s=10.0)
    vr = VrInterfaceNode(context=ctx, parameters={"pulse.udp.port": 0})
    at = AtomicNode(context=ctx, parameters={"atomic.node.driver": "serial", "atomic.serial.port": os.ttyname(slave)})
    sim = TinoSimNode(context=ctx)
    sup = StopSupervisorNode(context=ctx, parameters={"robot": "tino"})
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    yield ctx, cfg, vr, at, sim, sock, master
    sock.close()
    for n in (vr, at, sim, sup):
        n.destroy_node()
    for fd in (master, slave):
        os.close(fd)


def test_head_and_audio_reach_the_mcu_and_the_simulation_from_the_same_topics(stack):
    ctx, cfg, vr, at, sim, sock, master = stack
    assert cfg["pulse"]["topics"]["head_cmd"] == cfg["atomic"]["topics"]["head"]
    assert cfg["pulse"]["topics"]["audio_cmd"] == cfg["atomic"]["topics"]["audio"]
    neutral = cfg["atomic"]["leg"]["neutral_ticks"]
    period = cfg["atomic"]["node"]["period_s"]
    hi = cfg["atomic"]["head"]["position_max_deg"]
    parser, lines, seq = LineParser(), [], 0

    def run(seconds, head_deg=None, audio=None):
        nonlocal seq
        for k in range(int(round(seconds / period))):
            os.write(master, encode("E", neutral, 0, 0.0))            # the MCU reports, the leg rests
            if head_deg is not None and k % 8 == 0:                  # a packet every 40 ms
                pkt = UnityPacket(*head_deg, 0, 0, audio[0], audio[1], seq)
                seq += 1
                sock.sendto(UnityCodec.encode(pkt), ("127.0.0.1", vr.port))
                select.select([vr.udp.sock], [], [], 0.05)
            select.select([at.link.port.fileno()], [], [], 0.05)
            ctx.spin_for(period)
            try:
                lines.extend(m for m in parser.feed(os.read(master, 65536)) if m.kind in "HA")
            except BlockingIOError:
                pass

    run(1.0)                                                          # the supervisor is heard
    assert not at.stop.stopped and at.ctrl.status()["fault"] is None
    run(1.0, head_deg=(10.0, -20.0, 5.0), audio=(60.0, 90.0))
    heads = [m.fields for m in lines if m.kind == "H"]
    audios = [m.fields for m in lines if m.kind == "A"]
    want = tuple(math.radians(v) for v in (10.0, -20.0, 5.0))
    assert heads and heads[-1] == pytest.approx(want, abs=1e-4)
    assert audios == [pytest.approx((60.0, math.radians(90.0)), abs=1e-4)]     # unchanged: sent once
    # the simulation read the same topics: its head actuators hold the targets, its audio the command
    pan, tilt, pitch = (sim.sim.data.ctrl[a] for a in sim.sim._act_head)
    assert (pitch, pan, tilt) == pytest.approx(want)
    assert sim.sim.audio == pytest.approx((60.0, math.radians(90.0)))
    # a pan the packet allows (|angle| <= 180 deg) but the head does not: clamped on the way to the MCU
    lines.clear()
    run(0.5, head_deg=(10.0, 120.0, 5.0), audio=(60.0, 90.0))
    assert [m.fields for m in lines if m.kind == "H"][-1][1] == pytest.approx(math.radians(hi[1]), abs=1e-4)
    assert at.head_gate.counts["head_clamped"] > 0 and at.link.fault is None
