"""The whole Tino chain in one process, deterministic: headset datagrams (``hri_pulse.emulator``
plans, what ``hri vr-emulate`` sends) over a real loopback UDP socket -> ``vr_interface_node``
(hri_pulse) -> ``atomic_node`` (driver ``topic``) -> ``tino_sim`` (MuJoCo), i.e. the nodes of
``launch/tino.launch.yaml``, on ``InprocContext`` (simulated clock, spins of ``step_s`` =
config ``atomic.node.period_s``, the atomic node's own timer period).

Used by ``hri atomic demo`` (the README's ``make run``) and ``tests/atomic/test_atomic_e2e.py``.
"""
from __future__ import annotations

import select
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from hri_runtime import msgs
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node


class Headset:
    """Sends an emulator plan over real loopback UDP, each datagram at its plan time on the
    simulated clock; ``run(duration_s)`` continues where the previous call stopped. Feedback
    datagrams from the node are drained and counted. ``step_s``: spin granularity (s); the chain
    passes config ``atomic.node.period_s`` (``Chain.headset``). When the node requires
    authentication (``pulse.auth``) the plan is sealed with its key file, a new session per headset,
    as ``hri vr-emulate`` does."""

    def __init__(self, ctx, vr, plan, step_s: float):
        from hri_pulse.core.auth import Sealer
        from hri_pulse.emulator import seal_plan

        if not step_s > 0:
            raise ValueError(f"step_s must be > 0, got {step_s!r}")
        auth = Sealer.from_params(vr.core.cfg.auth)
        if auth is not None:
            seal_plan(plan, auth)
        self.ctx, self.vr, self.plan, self.step_s = ctx, vr, plan, step_s
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.t0, self.i, self.feedback = ctx.now_s(), 0, 0

    def run(self, duration_s: float) -> None:
        ctx, dg = self.ctx, self.plan.datagrams
        t_end = ctx.now_s() + duration_s
        while ctx.now_s() < t_end - 1e-9:
            sent = False
            while self.i < len(dg) and dg[self.i].t_s <= ctx.now_s() - self.t0 + 1e-9:
                self.sock.sendto(dg[self.i].data, ("127.0.0.1", self.vr.port))
                sent, self.i = True, self.i + 1
            if sent:      # loopback delivery is immediate; wait until readable before the node drains
                select.select([self.vr.udp.sock], [], [], 0.5)
            ctx.spin_for(self.step_s)
            try:
                while True:
                    self.sock.recv(4096)
                    self.feedback += 1
            except BlockingIOError:
                pass

    def close(self) -> None:
        self.sock.close()


class StateWatch(Node):
    """Records atomic_state (as dicts) and /diagnostics; optionally writes the plot topics to MCAP
    (``hri_runtime.bag.recording.McapWriter``, simulated time) so ``hri atomic plot`` reads it."""

    def __init__(self, topics: dict, writer=None, **kw):
        super().__init__("atomic_e2e_watch", **kw)
        self.states, self.diags, self.writer = [], [], writer
        self.reset_pub = self.create_publisher("std_msgs/msg/Bool", topics["reset"], qos=10)
        self.create_subscription("hri_interfaces/msg/AtomicState", topics["atomic_state"], self._state, qos=10000)
        self.create_subscription("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics", self.diags.append, qos=100)
        if writer is not None:
            for key, typ in (("leg_state", "sensor_msgs/msg/JointState"), ("leg_rpm", "std_msgs/msg/Float64"),
                             ("cmd_vel", "geometry_msgs/msg/Twist")):
                self.create_subscription(typ, topics[key], self._writer_cb(topics[key]), qos=10000)
        self._topic_state = topics["atomic_state"]

    def _writer_cb(self, topic):
        return lambda m: self.writer.write(topic, m, t_s=self.get_clock().now_s())

    def _state(self, m) -> None:
        self.states.append(msgs.to_dict(m))
        if self.writer is not None:
            self.writer.write(self._topic_state, m, t_s=self.get_clock().now_s())

    def movements(self) -> list[int]:
        """States entered from idle, in order (one entry per executed movement)."""
        out, prev = [], 0
        for s in self.states:
            if s["state"] != prev and s["state"] != 0:
                out.append(s["state"])
            prev = s["state"]
        return out


@dataclass
class Chain:
    cfg: dict
    ctx: InprocContext
    vr: Node
    sim: Node
    atomic: Node
    watch: StateWatch
    supervisor: Optional[Node] = None
    extra: list = field(default_factory=list)

    @property
    def step_s(self) -> float:
        """Spin granularity of the driver loop: config ``atomic.node.period_s`` (s)."""
        return float(self.cfg["atomic"]["node"]["period_s"])

    def headset(self, plan) -> Headset:
        """A headset sending ``plan`` to this chain's vr_interface, spinning ``step_s``; closed
        with the chain."""
        hs = Headset(self.ctx, self.vr, plan, self.step_s)
        self.extra.append(hs)
        return hs

    def close(self) -> None:
        for n in (self.vr, self.sim, self.atomic, self.watch, self.supervisor):
            if n is not None:
                n.destroy_node()
        for x in self.extra:
            x.close()


def build(cfg: dict, writer=None, start_time_s: float = 0.0) -> Chain:
    """The nodes of launch/tino.launch.yaml (with the stop supervisor) + a watcher on one
    InprocContext. vr_interface listens on an ephemeral loopback port (``chain.vr.port``)."""
    from hri_pulse.nodes.vr_interface_node import VrInterfaceNode
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode
    from hri_sim.nodes.tino_node import TinoSimNode

    from hri_atomic_motion.nodes.atomic_node import AtomicNode

    ctx = InprocContext(start_time_s=start_time_s)
    sup = StopSupervisorNode(cfg=cfg, context=ctx)
    vr = VrInterfaceNode(cfg=cfg, context=ctx, parameters={"pulse.udp.port": 0, "pulse.udp.bind_address": "127.0.0.1"})
    sim = TinoSimNode(cfg=cfg, context=ctx)
    at = AtomicNode(cfg=cfg, context=ctx, parameters={"atomic.node.driver": "topic"})
    watch = StateWatch(cfg["atomic"]["topics"], writer=writer, context=ctx)
    return Chain(cfg, ctx, vr, sim, at, watch, supervisor=sup)


def run_sequence(cfg: dict, sequence: list[tuple[int, int]], gap_s: float, mcap: Optional[Path] = None,
                 link_dies: bool = True, seed: int = 0) -> dict:
    """Pulses ``sequence`` [(state, direction)] every ``gap_s`` through the whole chain; then (when
    ``link_dies``) the headset stops and the run continues past the link timeout. Returns a summary."""
    from hri_pulse import emulator
    from hri_runtime.bag.recording import McapWriter

    first_s = 0.5
    last_s = first_s + gap_s * len(sequence)
    stop_at = last_s if link_dies else None
    imp = {"stop_at_s": stop_at} if link_dies else {}
    sc = {"duration_s": last_s + 0.5, "impairments": imp,
          "actions": [{"at_s": first_s + gap_s * i, "state": s, "angular": d} for i, (s, d) in enumerate(sequence)]}
    plan = emulator.plan(sc, cfg["pulse"]["emulator"], seed=seed)
    writer = McapWriter(mcap, library="hri_atomic_motion") if mcap is not None else None
    chain = build(cfg, writer)
    hs = Headset(chain.ctx, chain.vr, plan, chain.step_s)
    try:
        hs.run(last_s)
        if link_dies:
            hs.run(cfg["pulse"]["health"]["disconnect_timeout_s"] + 0.5)
        x, y, yaw = chain.sim.sim.base_pose()
        return {"pulses": len(sequence), "movements": chain.watch.movements(),
                "started": [(c.state, c.direction) for c in chain.atomic.ctrl.started],
                "fault": chain.atomic.ctrl.fault.value if chain.atomic.ctrl.fault else None,
                "leg_ticks": chain.sim.sim.leg_ticks(), "leg_rpm_cmd": chain.sim.sim.leg_rpm_cmd,
                "base_pose": (x, y, yaw), "base_twist": chain.sim.sim.base_twist(),
                "feedback_packets": hs.feedback, "t_s": chain.ctx.now_s()}
    finally:
        hs.close()
        chain.close()
        if writer is not None:
            writer.close()
