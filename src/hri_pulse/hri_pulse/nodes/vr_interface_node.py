"""``vr_interface_node``: Unity headset (UDP, optionally ZeroMQ) -> 3-cycle base pulses
(:class:`hri_pulse.core.vr.VrCommandCore`; the messages: :mod:`hri_pulse.messages`).

Parameters: ``robot`` (default tino), :data:`SECTIONS` by dotted path, e.g. ``pulse.udp.port`` (0 =
any free port); off loopback without ``pulse.auth.mode`` refused at startup (one line, exit 2);
``pulse.link.kernel_flood_filter`` applies at run time, the others are read-only.

Out: ``/base_cmd`` every 1/rate_hz (3 identical messages per command, idle otherwise);
``/link/safe_stop`` (Bool, on change) and, while the link is lost, a stop request
(source ``link_loss``) on ``/safety/stop_request`` every ``1 / safety.stop.heartbeat_hz``
(docs/safety.md); ``/head_cmd``, ``/audio_cmd`` per accepted packet; ``/pulse/command_head``;
``/diagnostics``. In: ``/odom``, ``/skeleton`` -> feedback packets to the headset
(:class:`hri_pulse.core.feedback.FeedbackSource`) at ``pose_send_rate_hz`` / ``skeleton_send_rate_hz``.
Every tick (``pulse.node.tick_period_s``) drains the carriers on a bounded budget; on threaded backends
a waker posts one more drain per tick once the socket is readable (same budget: a flood never starves it).
"""
from __future__ import annotations

from typing import Optional

from hri_runtime import msgs
from hri_runtime.config.tree import ConfigError
from hri_runtime.diagnostics import Updater
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config
from hri_runtime.qos import QOS_LATCHED
from hri_safety.nodes.stop_listener import STOP_REQUEST_TOPIC, STOP_REQUEST_TYPE, stop_params

from hri_pulse import messages as m
from hri_pulse.carriers import CarrierSet, ReadableWaker
from hri_pulse.core import PulseConfig, VrCommandCore
from hri_pulse.core.feedback import FeedbackSource

SECTIONS = ("pulse.packet", "pulse.sequence", "pulse.auth", "pulse.pulse", "pulse.health", "pulse.link",
            "pulse.udp", "pulse.zmq", "pulse.feedback", "pulse.node", "pulse.topics", "safety.stop")


class VrInterfaceNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("vr_interface", **kw)
        cfg = declare_config(self, SECTIONS, cfg, robot="tino",
                             on_set={"pulse.link.kernel_flood_filter": lambda on: self.core.set_kernel_flood_filter(on)})
        self.params = p = PulseConfig.from_config(cfg["pulse"])
        # UDP (+ ZeroMQ): one budget per tick over both, feedback back on the carrier of the peer;
        # off loopback only authenticated packets (one line, exit 2 otherwise; docs/protocols.md)
        self.link = CarrierSet.open(p, "vr_interface")
        self.udp, self.zmq = self.link.udp, self.link.zmq
        try:
            self.core = VrCommandCore(p, clock=self.now, logger=self.get_logger(),
                                      stop_request_period_s=stop_params(cfg).period_s,
                                      host_filter=self.udp.host_filter)
        except ValueError as exc:                    # pulse.auth key file missing / malformed
            self.link.close()
            raise ConfigError(None, "pulse.auth", p.auth.key_file, str(exc)) from None
        T = p.topics
        self.pub_cmd = self.create_publisher("geometry_msgs/msg/Twist", T.base_cmd, qos=10)
        self.pub_stop = self.create_publisher("std_msgs/msg/Bool", T.safe_stop, qos=QOS_LATCHED)   # on change
        self.pub_stop_request = self.create_publisher(STOP_REQUEST_TYPE, STOP_REQUEST_TOPIC, qos=10)
        self.pub_head = self.create_publisher("geometry_msgs/msg/Vector3", T.head_cmd, qos=10)
        self.pub_audio = self.create_publisher("geometry_msgs/msg/Vector3", T.audio_cmd, qos=10)
        self.pub_chead = self.create_publisher("geometry_msgs/msg/Vector3Stamped", T.command_head, qos=10)
        self.diag = Updater(self, "unity", p.node.diagnostics_period_s, prefix="hri_pulse")
        self.diag.add("vr link", self._diagnose)
        self._link_status = None
        self.feedback = FeedbackSource(p.feedback.skeleton_max_joints)
        self.create_subscription("nav_msgs/msg/Odometry", T.pose, lambda msg: self.feedback.on_pose(
            *m.pose_parts(msg.pose.pose)), qos=10)
        self.create_subscription("geometry_msgs/msg/PoseArray", T.skeleton, lambda msg: self.feedback.on_skeleton(
            [(q.position.x, q.position.y, q.position.z) for q in msg.poses]), qos=10)
        self.create_timer(p.node.tick_period_s, self.tick)
        self.create_timer(p.node.diagnostics_period_s, self.publish_diagnostics)
        if p.feedback.enabled:
            self.create_timer(1.0 / p.health.pose_send_rate_hz, lambda: self._send("pose", self.feedback.pose_packet))
            self.create_timer(1.0 / p.health.skeleton_send_rate_hz,
                              lambda: self._send("skeleton", self.feedback.skeleton_packet))
        self.published = 0
        self._waker = None
        if getattr(self.context, "kind", "inproc") != "inproc" and hasattr(self.context, "executor"):
            # at most one event-driven drain per tick (re-armed by ``tick`` only): never ahead of the timers
            self._waker = ReadableWaker(self.udp.sock, lambda: self.context.executor.post(self._drain_event),
                                        name="vr_interface-waker")
        self.get_logger().info(f"vr_interface: udp {self.udp.address[0]}:{self.port}" + (
            f", zmq {p.zmq.sub_endpoint}" if self.zmq else "") + f", pulses on {T.base_cmd}, safe stop on {T.safe_stop}")

    def now(self) -> float:
        return self.get_clock().now_s()

    port = property(lambda self: self.udp.address[1], doc="the bound UDP port")
    stop_requests = property(lambda self: self.core.stop_requests, doc="link-loss stop requests published")

    def _drain_event(self) -> None:
        self._drain(self.now())

    def _drain(self, now: float) -> None:
        if self.link.left <= 0:
            return
        for data, peer in self.link.drain():
            pkt = self.core.on_datagram(data, peer, now)
            if pkt is not None:
                self.pub_head.publish(m.head_msg(self.core.head_rad(pkt)))
                self.pub_audio.publish(m.audio_msg(*self.core.audio(pkt)))
        res = self.core.tick(now)
        for e in res.emissions:
            self.pub_cmd.publish(m.pulse_twist(e))
            self.published += 1
            if e.index == 0 and e.command is not None:
                self.pub_chead.publish(m.command_head_msg(e))
        if res.safe_stop is not None:
            self.pub_stop.publish(msgs.new("std_msgs/msg/Bool", data=res.safe_stop))
        if res.stop_request:
            self.pub_stop_request.publish(m.link_loss_stop_request())

    def tick(self) -> None:
        now = self.now()
        self.link.new_cycle()
        self._drain(now)
        self.core.flood_check(now)
        if self._waker is not None:
            self._waker.arm()

    def _send(self, stream: str, packet) -> None:
        """A feedback packet of ``stream`` to the connected headset (none while nobody is)."""
        now = self.now()
        to = self.core.feedback(stream, now)
        if to is not None:
            self.link.send(packet(to[1], now), to[0])

    def publish_diagnostics(self) -> None:
        rep, vals, line = self.core.report(self.now(), self.params.feedback.enabled,
                                           flood_budget_hits=self.link.budget_exhausted)
        self._link_status = (rep, vals)
        self.diag.force_update()
        if line is not None:
            (self.get_logger().info if line[0] == 0 else self.get_logger().warning)(line[1])

    def _diagnose(self, stat) -> None:
        rep, vals = self._link_status
        stat.summary(int(rep.level), rep.message)
        for k, v in vals.items():
            stat.add(k, v)

    def destroy_node(self) -> None:
        if self._waker is not None:
            self._waker.close()
        self.link.close()
        super().destroy_node()


def main(argv=None):
    return run_node(VrInterfaceNode, argv)
