"""The whole Tino chain in one process, deterministic: headset datagrams (``hri_pulse.emulator``
plans, what ``hri vr-emulate`` sends) over a real loopback UDP socket -> ``vr_interface_node``
(hri_pulse) -> ``atomic_node`` (driver ``topic``) -> ``tino_sim`` (MuJoCo), i.e. the nodes of
``launch/tino.launch.yaml``, on the in-process context stepped by the runtime's lockstep runner
(``hri_runtime.lockstep.Lockstep``, steps of config ``atomic.node.period_s``, the atomic node's
own timer period), recorded by the runtime's bag recorder. :func:`build_embedded`: the same
runner with the atomic node alone on its embedded simulation (driver ``sim``), pulses published
by the probe, one controller update per ``atomic.control_period_s``.

Used by ``hri atomic demo`` (the README's ``make run``; ``--chain sim``: the embedded one),
``tests/atomic/test_atomic_e2e.py`` and ``tests/atomic/test_atomic_sim.py``.
"""
from __future__ import annotations

import select
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from hri_runtime import msgs
from hri_runtime.inproc import InprocContext
from hri_runtime.lockstep import Lockstep
from hri_runtime.node import Node

#: what ``run_sequence`` records (``atomic.topics`` keys; ``hri atomic plot`` reads them)
RECORDED = ("atomic_state", "leg_state", "leg_rpm", "cmd_vel")


class Headset:
    """Sends an emulator plan over real loopback UDP as the lockstep runner's script: each
    datagram in the first step at or after its plan time (counted from the headset's creation),
    before the nodes' timers of that step; ``run(duration_s)`` continues where the previous call
    stopped. Feedback datagrams from the node are drained and counted. When the node requires
    authentication (``pulse.auth``) the plan is sealed with its key file, a new session per headset,
    as ``hri vr-emulate`` does."""

    def __init__(self, lockstep: Lockstep, vr, plan):
        from hri_pulse.core.auth import Sealer
        from hri_pulse.emulator import seal_plan

        auth = Sealer.from_params(vr.core.cfg.auth)
        if auth is not None:
            seal_plan(plan, auth)
        self.lockstep, self.vr, self.plan = lockstep, vr, plan
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.t0, self.i, self.feedback = lockstep.now_s(), 0, 0

    def _send_due(self, t: float) -> None:
        dg = self.plan.datagrams
        sent = False
        while self.i < len(dg) and dg[self.i].t_s <= t - self.t0 + 1e-9:
            self.sock.sendto(dg[self.i].data, ("127.0.0.1", self.vr.port))
            sent, self.i = True, self.i + 1
        if sent:      # loopback delivery is immediate; wait until readable before the node drains
            select.select([self.vr.udp.sock], [], [], 0.5)
        self._drain()

    def _drain(self) -> None:
        try:
            while True:
                self.sock.recv(4096)
                self.feedback += 1
        except BlockingIOError:
            pass

    def run(self, duration_s: float) -> None:
        self.lockstep.run_until(self.lockstep.now_s() + duration_s, before=self._send_due)
        self._drain()

    def close(self) -> None:
        self.sock.close()


class StateWatch(Node):
    """The test's probe: atomic_state (as dicts), /diagnostics, and publishers on ``reset`` and
    ``pulse``."""

    def __init__(self, topics: dict, **kw):
        super().__init__("atomic_e2e_watch", **kw)
        self.states, self.diags = [], []
        self.reset_pub = self.create_publisher("std_msgs/msg/Bool", topics["reset"], qos=10)
        self.pulse_pub = self.create_publisher("geometry_msgs/msg/Twist", topics["pulse"], qos=10)
        self.create_subscription("hri_interfaces/msg/AtomicState", topics["atomic_state"],
                                 lambda m: self.states.append(msgs.to_dict(m)), qos=10000)
        self.create_subscription("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics", self.diags.append, qos=100)

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
    lockstep: Lockstep
    vr: Optional[Node]          # None: build_embedded
    sim: Optional[Node]         # the tino_sim node; None: build_embedded (the atomic node's ``.sim``)
    atomic: Node
    watch: StateWatch
    supervisor: Optional[Node] = None
    extra: list = field(default_factory=list)

    @property
    def robot(self):
        """The simulated Tino (``hri_sim.tino.TinoSim``)."""
        return self.sim.sim if self.sim is not None else self.atomic.sim

    @property
    def ctx(self) -> InprocContext:
        return self.lockstep.context

    @property
    def step_s(self) -> float:
        """The lockstep step: config ``atomic.node.period_s`` (s)."""
        return self.lockstep.period_s

    def headset(self, plan) -> Headset:
        """A headset sending ``plan`` to this chain's vr_interface; closed with the chain."""
        hs = Headset(self.lockstep, self.vr, plan)
        self.extra.append(hs)
        return hs

    def pulse(self, state: int, direction: int = 0, period_s: float = 0.04, repeats: int = 3) -> None:
        """hri_pulse's pattern on the pulse topic: ``repeats`` identical messages ``period_s``
        apart (the runner stepped in between), then state 0."""
        from hri_pulse.messages import twist

        for _ in range(repeats):
            self.watch.pulse_pub.publish(twist(float(state), float(direction)))
            self.lockstep.run_for(period_s)
        self.watch.pulse_pub.publish(twist())

    def record(self, path: Path):
        """Record the plot topics (:data:`RECORDED`) with the runtime's bag recorder."""
        topics = self.cfg["atomic"]["topics"]
        return self.lockstep.record(path, [topics[k] for k in RECORDED], library="hri_atomic_motion")

    def close(self) -> None:
        """Recording closed, nodes destroyed, headsets closed."""
        self.lockstep.close()
        for x in self.extra:
            x.close()


def build(cfg: dict, start_time_s: float = 0.0) -> Chain:
    """The nodes of launch/tino.launch.yaml (with the stop supervisor) + a probe on one
    in-process context with its lockstep runner. vr_interface listens on an ephemeral loopback
    port (``chain.vr.port``)."""
    from hri_pulse.nodes.vr_interface_node import VrInterfaceNode
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode
    from hri_sim.nodes.tino_node import TinoSimNode

    from hri_atomic_motion.nodes.atomic_node import AtomicNode

    ls = Lockstep.inproc(float(cfg["atomic"]["node"]["period_s"]), start_time_s=start_time_s)
    ctx = ls.context
    sup = StopSupervisorNode(cfg=cfg, context=ctx)
    vr = VrInterfaceNode(cfg=cfg, context=ctx, parameters={"pulse.udp.port": 0, "pulse.udp.bind_address": "127.0.0.1"})
    sim = TinoSimNode(cfg=cfg, context=ctx)
    at = AtomicNode(cfg=cfg, context=ctx, parameters={"atomic.node.driver": "topic"})
    watch = StateWatch(cfg["atomic"]["topics"], context=ctx)
    return Chain(cfg, ls, vr, sim, at, watch, supervisor=sup)


def build_embedded(cfg: dict) -> Chain:
    """The stop supervisor, the atomic node on its embedded simulation (driver ``sim``, one
    update per ``atomic.control_period_s``) and the probe on one in-process context with its
    lockstep runner at that period."""
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    from hri_atomic_motion.nodes.atomic_node import AtomicNode

    period = float(cfg["atomic"]["control_period_s"])
    ls = Lockstep.inproc(period)
    sup = StopSupervisorNode(cfg=cfg, context=ls.context)
    at = AtomicNode(cfg=cfg, context=ls.context, parameters={"atomic.node.driver": "sim", "atomic.node.period_s": period})
    return Chain(cfg, ls, None, None, at, StateWatch(cfg["atomic"]["topics"], context=ls.context), supervisor=sup)


def run_sequence(cfg: dict, sequence: list[tuple[int, int]], gap_s: float, mcap: Optional[Path] = None,
                 link_dies: bool = True, seed: int = 0) -> dict:
    """Pulses ``sequence`` [(state, direction)] every ``gap_s`` through the whole chain; then (when
    ``link_dies``) the headset stops and the run continues past the link timeout. Returns a summary."""
    from hri_pulse import emulator

    first_s = 0.5
    last_s = first_s + gap_s * len(sequence)
    stop_at = last_s if link_dies else None
    imp = {"stop_at_s": stop_at} if link_dies else {}
    sc = {"duration_s": last_s + 0.5, "impairments": imp,
          "actions": [{"at_s": first_s + gap_s * i, "state": s, "angular": d} for i, (s, d) in enumerate(sequence)]}
    plan = emulator.plan(sc, cfg["pulse"]["emulator"], seed=seed)
    chain = build(cfg)
    if mcap is not None:
        chain.record(mcap)
    hs = chain.headset(plan)
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
        chain.close()
