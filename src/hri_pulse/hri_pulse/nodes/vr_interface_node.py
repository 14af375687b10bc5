"""``vr_interface_node``: Unity headset (UDP, optionally ZeroMQ) -> 3-cycle base pulses.

Parameters: ``robot`` (config name, default tino) and every key of the config sections it reads
(``pulse.*`` but the gamepad and emulator keys, ``safety.stop.*``), named by their dotted path,
the robot config's value as default (docs/configuration.md), e.g. ``pulse.udp.port`` (0 = any
free port), ``pulse.udp.bind_address``, ``pulse.zmq.enabled``. A bind address (or a ZeroMQ tcp
endpoint) off loopback with ``pulse.auth.mode`` off is refused at startup (one line, exit 2). ``pulse.link.kernel_flood_filter``
is applied at run time by ``hri param set``; the others are read-only (applied at startup).

Out: ``/base_cmd`` (geometry_msgs/Twist: linear.x = state, angular.z = direction) every
1/rate_hz: 3 identical messages per command, idle (0) otherwise; ``/link/safe_stop``
(std_msgs/Bool, on change: true on disconnection, false on (re)connection) and, while the link is
lost, a latched stop request ``hri_interfaces/StopRequest(source="link_loss")`` on
``/safety/stop_request`` every ``1 / safety.stop.heartbeat_hz`` (a lost message or a router that
comes back later still latches the system stop; docs/safety.md); ``/head_cmd``
(geometry_msgs/Vector3, rad) and ``/audio_cmd`` (geometry_msgs/Vector3: x volume, y orientation rad,
z 0; the packet's range-checked audio fields) per accepted packet, read by the tino sim node and
the atomic node's hardware drivers; ``/pulse/command_head`` (Vector3Stamped, the
head captured with each command); ``/diagnostics``. In: ``/odom``, ``/skeleton`` -> feedback
packets to the headset at ``pose_send_rate_hz`` / ``skeleton_send_rate_hz``.

Receiving: every tick (``pulse.node.tick_period_s``) drains the carriers on a bounded budget
(``max_packets_per_cycle``). On threaded backends (zenoh/rclpy) a waker thread also posts a
drain to the executor as soon as the UDP socket is readable (low latency); at most one such
drain per tick, sharing the per-tick budget, so a flood can never starve the pulse timer.
"""
from __future__ import annotations

import math
from typing import Optional

from hri_runtime import msgs
from hri_runtime.config.tree import ConfigError
from hri_runtime.diagnostics import Updater
from hri_runtime.geometry import time_from_seconds
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config
from hri_runtime.qos import QOS_LATCHED
from hri_safety.nodes.stop_listener import STOP_REQUEST_TOPIC, STOP_REQUEST_TYPE, stop_params

from hri_pulse.carriers import CarrierSet, ReadableWaker
from hri_pulse.core import PulseConfig, VrCommandCore
from hri_pulse.core.feedback import encode_pose, encode_skeleton

SECTIONS = ("pulse.packet", "pulse.sequence", "pulse.auth", "pulse.pulse", "pulse.health", "pulse.link",
            "pulse.udp", "pulse.zmq", "pulse.feedback", "pulse.node", "pulse.topics", "safety.stop")


class VrInterfaceNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("vr_interface", **kw)
        cfg = declare_config(self, SECTIONS, cfg, robot="tino",
                             on_set={"pulse.link.kernel_flood_filter": self._set_kernel_flood_filter})
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
        # /diagnostics "hri_pulse: vr link", published by publish_diagnostics' timer
        self.diag = Updater(self, "unity", p.node.diagnostics_period_s, prefix="hri_pulse")
        self.diag.add("vr link", self._diagnose)
        self._link_status = None
        self._pose = None
        self._skel = []
        self.fb_enabled = p.feedback.enabled
        self.max_joints = p.feedback.skeleton_max_joints
        self.create_subscription("nav_msgs/msg/Odometry", T.pose, self.on_pose, qos=10)
        self.create_subscription("geometry_msgs/msg/PoseArray", T.skeleton, self.on_skeleton, qos=10)
        self.create_timer(p.node.tick_period_s, self.tick)
        self.create_timer(p.node.diagnostics_period_s, self.publish_diagnostics)
        if self.fb_enabled:
            self.create_timer(1.0 / p.health.pose_send_rate_hz, self.send_pose)
            self.create_timer(1.0 / p.health.skeleton_send_rate_hz, self.send_skeleton)
        self.published = 0
        self._waker = None
        if getattr(self.context, "kind", "inproc") != "inproc" and hasattr(self.context, "executor"):
            # at most one event-driven drain per tick: the waker is re-armed by ``tick`` only, so
            # posted drains can never crowd the executor queue ahead of the timers under a flood
            self._waker = ReadableWaker(self.udp.sock, lambda: self.context.executor.post(self._drain_event),
                                        name="vr_interface-waker")
        addr = self.udp.address
        self.get_logger().info(f"vr_interface: udp {addr[0]}:{addr[1]}"
                               + (f", zmq {p.zmq.sub_endpoint}" if self.zmq else "")
                               + f", pulses on {T.base_cmd}, safe stop on {T.safe_stop}")

    # ------------------------------------------------------------------ helpers
    def now(self) -> float:
        return self.get_clock().now_s()

    @property
    def port(self) -> int:
        return self.udp.address[1]

    def _drain_event(self) -> None:
        self._drain(self.now())

    def _drain(self, now: float) -> None:
        if self.link.left <= 0:
            return
        for data, peer in self.link.drain():
            pkt = self.core.on_datagram(data, peer, now)
            if pkt is not None:
                h = self.core.head_rad(pkt)
                self.pub_head.publish(msgs.new("geometry_msgs/msg/Vector3", x=h[0], y=h[1], z=h[2]))
                self.pub_audio.publish(msgs.new("geometry_msgs/msg/Vector3", x=float(pkt.audio_volume),
                                                y=math.radians(pkt.audio_orientation), z=0.0))
        self._emit(now)

    def _emit(self, now: float) -> None:
        res = self.core.tick(now)
        for e in res.emissions:
            self.pub_cmd.publish(msgs.new("geometry_msgs/msg/Twist",
                                          linear=msgs.new("geometry_msgs/msg/Vector3", x=float(e.state)),
                                          angular=msgs.new("geometry_msgs/msg/Vector3", z=float(e.direction))))
            self.published += 1
            if e.index == 0 and e.command is not None:
                h = e.command.head_rad
                self.pub_chead.publish(msgs.new(
                    "geometry_msgs/msg/Vector3Stamped",
                    header=msgs.new("std_msgs/msg/Header", stamp=time_from_seconds(e.t_s), frame_id="head"),
                    vector=msgs.new("geometry_msgs/msg/Vector3", x=h[0], y=h[1], z=h[2])))
        if res.safe_stop is not None:
            self.pub_stop.publish(msgs.new("std_msgs/msg/Bool", data=res.safe_stop))
        if res.stop_request:
            self.pub_stop_request.publish(msgs.new(STOP_REQUEST_TYPE, source="link_loss",
                                                   reason="headset link lost (no valid packet)"))

    # ------------------------------------------------------------------ timers / callbacks
    def tick(self) -> None:
        now = self.now()
        self.link.new_cycle()
        self._drain(now)
        self.core.flood_check(now)
        if self._waker is not None:
            self._waker.arm()

    def _set_kernel_flood_filter(self, enabled: bool) -> None:
        """``pulse.link.kernel_flood_filter`` at run time: on/off at the next tick; turning it off
        releases an engaged filter at once."""
        self.core.set_kernel_flood_filter(bool(enabled))

    @property
    def stop_requests(self) -> int:
        return self.core.stop_requests

    def on_pose(self, msg) -> None:
        p = msg.pose.pose
        self._pose = ((p.position.x, p.position.y, p.position.z),
                      (p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w))

    def on_skeleton(self, msg) -> None:
        self._skel = [(q.position.x, q.position.y, q.position.z) for q in msg.poses]

    def _send_feedback(self, stream: str, encode) -> None:
        now = self.now()
        to = self.core.feedback(stream, now)
        if to is None:
            return
        peer, seq = to
        self.link.send(encode(seq, now), peer)

    def send_pose(self) -> None:
        pos, ori = self._pose or ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
        self._send_feedback("pose", lambda seq, now: encode_pose(seq, now, pos, ori, self._pose is not None))

    def send_skeleton(self) -> None:
        self._send_feedback("skeleton", lambda seq, now: encode_skeleton(seq, now, self._skel, self.max_joints))

    def publish_diagnostics(self) -> None:
        now = self.now()
        rep, vals = self.core.status(now, tx_active=self.fb_enabled)
        vals["flood_budget_hits"] = self.link.budget_exhausted
        self._link_status = (rep, vals)
        self.diag.force_update()
        line = self.core.log_line(now, rep, vals)
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
