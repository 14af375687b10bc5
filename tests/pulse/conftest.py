"""E2E helpers: the real node on the in-process runtime (simulated clock) + real UDP sockets."""
import select
import socket

import pytest
from hri_runtime.config.tree import load_robot_config
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node

# s, one step of the simulated clock = one vr_interface_node tick (pulse.node.tick_period_s)
STEP_S = float(load_robot_config("tino")["pulse"]["node"]["tick_period_s"])


class Recorder(Node):
    """Listens to what the pulse node publishes, with the simulated receive time."""

    def __init__(self, topics, **kw):
        super().__init__("pulse_test_recorder", **kw)
        self.cmd, self.stop, self.diag, self.head = [], [], [], []
        self.create_subscription("geometry_msgs/msg/Twist", topics["base_cmd"],
                                 lambda m: self.cmd.append((self.t(), int(m.linear.x), int(m.angular.z))), qos=1000)
        self.create_subscription("std_msgs/msg/Bool", topics["safe_stop"],
                                 lambda m: self.stop.append((self.t(), bool(m.data))), qos=100)
        self.create_subscription("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics",
                                 lambda m: self.diag.append(m), qos=100)
        self.create_subscription("geometry_msgs/msg/Vector3Stamped", topics["command_head"],
                                 lambda m: self.head.append(m), qos=100)

    def t(self):
        return self.get_clock().now_s()

    def pulses(self):
        """Rising edges of the /base_cmd stream: [(t, state, direction, n_messages)]."""
        out, prev = [], (0, 0)
        for t, s, d in self.cmd:
            if s and (s, d) != prev:
                out.append([t, s, d, 1])
            elif s and out:
                out[-1][3] += 1
            prev = (s, d) if s else (0, 0)
        return [tuple(p) for p in out]


class Headset:
    """Sends an emulator plan over real UDP in simulated time, step by step."""

    def __init__(self, target):
        self.target = target
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.others = {}
        self.feedback = []

    def send(self, d):
        s = self.sock
        if d.source is not None:
            s = self.others.get(d.source)
            if s is None:
                s = self.others[d.source] = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind((d.source, 0))
        try:
            s.sendto(d.data, self.target)
        except OSError:
            pass

    def recv_feedback(self):
        while True:
            try:
                self.feedback.append(self.sock.recv(4096))
            except BlockingIOError:
                return

    def close(self):
        self.sock.close()
        for s in self.others.values():
            s.close()


def run_plan(ctx, node, headset, plan, t_end, t0=None):
    """Send every datagram when the simulated time reaches its send time, spin one node tick
    (``STEP_S``) at a time."""
    t0 = ctx.now_s() if t0 is None else t0
    i, dg = 0, plan.datagrams
    while ctx.now_s() < t0 + t_end - 1e-9:
        now = ctx.now_s() - t0
        sent = False
        while i < len(dg) and dg[i].t_s <= now + 1e-9:
            headset.send(dg[i])
            sent = sent or dg[i].source is None
            i += 1
        if sent:   # loopback delivery is immediate; make sure before the node drains (headset
            # datagrams only: a flood from another host may be dropped by the kernel filter)
            select.select([node.udp.sock], [], [], 0.05)
        ctx.spin_for(STEP_S)
        headset.recv_feedback()
    return i


@pytest.fixture(scope="session")
def pulse_cfg():
    return load_robot_config("tino")["pulse"]


@pytest.fixture(params=["kernel filter"])
def rig(pulse_cfg, request):
    from hri_pulse.nodes.vr_interface_node import VrInterfaceNode
    ctx = InprocContext(start_time_s=1000.0)
    node = VrInterfaceNode(context=ctx, parameters={"pulse.udp.port": 0,
                                                    "pulse.link.kernel_flood_filter": request.param == "kernel filter"})
    rec = Recorder(pulse_cfg["topics"], context=ctx)
    hs = Headset(("127.0.0.1", node.port))
    yield ctx, node, rec, hs
    hs.close()
    node.destroy_node()
    rec.destroy_node()


@pytest.fixture
def send_plan():
    return run_plan


@pytest.fixture
def recorder_cls():
    return Recorder


@pytest.fixture
def headset_cls():
    return Headset
