"""End to end, deterministic: emulator plan (`hri vr-emulate`'s generator) over a real UDP socket ->
vr_interface_node (hri_pulse) -> atomic_node (driver ``topic``) -> tino_sim node (MuJoCo), i.e. the
three nodes of launch/tino.launch.yaml, on the in-process runtime (simulated clock, 5 ms spins).

Checks: every delivered pulse gives exactly one movement and the simulated robot does it (yaw /
distance of state 3, extension of state 2); when the link dies the link_safe_stop fault latches, the
robot stops (leg motor 0, base still) and stays stopped for new pulses until /atomic/reset."""
from __future__ import annotations

import json
import math
import select
import socket

import pytest
from hri_pulse import emulator
from hri_runtime import msgs
from hri_runtime.config import load_robot_config
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node

STEP_S = 0.005


class Monitor(Node):
    def __init__(self, topics, **kw):
        super().__init__("atomic_e2e_monitor", **kw)
        self.states, self.diags = [], []
        self.create_subscription("std_msgs/msg/String", topics["atomic_state"],
                                 lambda m: self.states.append(json.loads(m.data)), qos=10000)
        self.create_subscription("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics", self.diags.append, qos=100)
        self.reset_pub = self.create_publisher("std_msgs/msg/Bool", topics["reset"], qos=10)

    def movements(self):
        """States entered from idle (the JSON of every atomic tick), in order."""
        out, prev = [], 0
        for s in self.states:
            if s["state"] != prev and s["state"] != 0:
                out.append(s["state"])
            prev = s["state"]
        return out


class Headset:
    """Sends an emulator plan over real loopback UDP, each datagram at its plan time on the
    simulated clock; ``run(duration_s)`` continues where the previous call stopped."""

    def __init__(self, ctx, vr, sock, plan):
        self.ctx, self.vr, self.sock, self.plan = ctx, vr, sock, plan
        self.t0, self.i = ctx.now_s(), 0

    def run(self, duration_s):
        ctx, dg = self.ctx, self.plan.datagrams
        t_end = ctx.now_s() + duration_s
        while ctx.now_s() < t_end - 1e-9:
            sent = False
            while self.i < len(dg) and dg[self.i].t_s <= ctx.now_s() - self.t0 + 1e-9:
                self.sock.sendto(dg[self.i].data, ("127.0.0.1", self.vr.port))
                sent, self.i = True, self.i + 1
            if sent:      # loopback delivery is immediate; wait until readable before the node drains
                select.select([self.vr.udp.sock], [], [], 0.5)
            ctx.spin_for(STEP_S)
            try:
                while True:
                    self.sock.recv(4096)   # feedback (pose/skeleton) from the node: drained, not checked
            except BlockingIOError:
                pass


def send(ctx, vr, sock, plan, duration_s):
    Headset(ctx, vr, sock, plan).run(duration_s)


@pytest.fixture
def rig():
    from hri_pulse.nodes.vr_interface_node import VrInterfaceNode
    from hri_sim.tino_node import TinoSimNode

    from hri_atomic_motion.nodes.atomic_node import AtomicNode
    cfg = load_robot_config("tino")
    ctx = InprocContext(start_time_s=0.0)
    vr = VrInterfaceNode(context=ctx, parameters={"port": 0})
    sim = TinoSimNode(cfg=cfg, context=ctx)
    at = AtomicNode(cfg=cfg, context=ctx, parameters={"driver": "topic"})
    mon = Monitor(cfg["atomic"]["topics"], context=ctx)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.setblocking(False)
    yield cfg, ctx, vr, sim, at, mon, sock
    sock.close()
    for n in (vr, sim, at, mon):
        n.destroy_node()


def test_vr_emulator_to_simulated_tino_one_movement_per_pulse_then_safe_stop(rig):
    cfg, ctx, vr, sim, at, mon, sock = rig
    a = cfg["atomic"]
    # 3 right, 3 forward, 1, 2 (leg held extended), then the headset dies at 11 s; duplicated packets
    sc = {"duration_s": 12.0,
          "actions": [{"at_s": 0.5, "state": 3, "angular": 1}, {"at_s": 3.0, "state": 3, "angular": 0},
                      {"at_s": 5.5, "state": 1}, {"at_s": 8.0, "state": 2}],
          "impairments": {"duplicate": 0.3, "stop_at_s": 11.0}}
    plan = emulator.plan(sc, cfg["pulse"]["emulator"], seed=5)
    assert plan.delivered_actions() == [0, 1, 2, 3]
    hs = Headset(ctx, vr, sock, plan)
    hs.run(2.8)
    x0, y0, yaw_right = sim.sim.base_pose()
    assert yaw_right == pytest.approx(-a["base"]["move_angular_rad_s"] * a["base"]["move_s"], rel=0.03)
    hs.run(2.6)           # state 3 forward along the new heading
    x1, y1, yaw1 = sim.sim.base_pose()
    assert math.hypot(x1 - x0, y1 - y0) == pytest.approx(a["base"]["move_linear_m_s"] * a["base"]["move_s"],
                                                         rel=0.03)
    assert yaw1 == pytest.approx(yaw_right, abs=0.01)
    hs.run(4.0)           # state 1 nudge, then state 2 extension + hold
    assert abs(sim.sim.leg_ticks() - a["leg"]["max_extension_ticks"]) <= 10
    assert mon.movements() == [3, 3, 1, 2]   # one movement per pulse (3 messages + duplicates each)
    assert [(c.state, c.direction) for c in at.ctrl.started] == [(3, 1), (3, 0), (1, 0), (2, 0)]
    assert at.ctrl.fault is None
    # the link dies at 11 s: safe stop after pulse.health.disconnect_timeout_s, fault latched, robot stops
    hs.run(3.4 + cfg["pulse"]["health"]["disconnect_timeout_s"])
    assert at.ctrl.fault is not None and at.ctrl.fault.value == "link_safe_stop"
    assert mon.states[-1]["fault"] == "link_safe_stop" and mon.states[-1]["state"] == 0
    diag = [s for d in mon.diags for s in d.status if s.name.startswith("atomic")][-1]
    assert diag.level == 2 and "link_safe_stop" in diag.message
    assert sim.sim.leg_rpm_cmd == 0.0 and sim.sim.base_twist() == pytest.approx((0.0, 0.0), abs=1e-3)
    # the headset comes back: the pulse reaches atomic but is refused (latched), the robot stays still
    pose = sim.sim.base_pose()
    plan2 = emulator.plan({"duration_s": 3.0, "actions": [{"at_s": 0.5, "state": 3, "angular": -1}]},
                          cfg["pulse"]["emulator"], seed=6)
    send(ctx, vr, sock, plan2, 3.0)
    assert len(at.ctrl.started) == 4 and at.ctrl.counts["rejected_fault"] >= 1
    assert sim.sim.base_pose() == pytest.approx(pose, abs=1e-4)
    # explicit reset, then the next pulse moves the robot again (left turn)
    mon.reset_pub.publish(msgs.new("std_msgs/msg/Bool", data=True))
    ctx.spin_for(0.1)
    assert at.ctrl.fault is None
    plan3 = emulator.plan({"duration_s": 2.5, "actions": [{"at_s": 0.2, "state": 3, "angular": -1}]},
                          cfg["pulse"]["emulator"], seed=7)
    send(ctx, vr, sock, plan3, 2.5)
    assert [(c.state, c.direction) for c in at.ctrl.started][-1] == (3, -1)
    assert sim.sim.base_pose()[2] - pose[2] == pytest.approx(
        a["base"]["move_angular_rad_s"] * a["base"]["move_s"], rel=0.03)
