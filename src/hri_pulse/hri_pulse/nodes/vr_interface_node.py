"""``vr_interface_node``: Unity headset (UDP, optionally ZeroMQ) -> 3-cycle base pulses (issue 5).

Config: section ``pulse`` (docs/interfaces.md "Pulse"). Parameters: ``robot`` (config name,
default tino), ``port`` (-1 = ``pulse.udp.port``; 0 = any free port, for tests),
``bind_address`` ("" = ``pulse.udp.bind_address``), ``zmq`` ("config" | "true" | "false"),
``zmq_sub_endpoint`` / ``zmq_pub_endpoint`` ("" = config), ``kernel_flood_filter``
("config" | "true" | "false"; the only one applied at run time by ``hri param set``, the others
are read-only: applied at startup, a set is refused).

Out: ``/base_cmd`` (geometry_msgs/Twist: linear.x = state, angular.z = direction) every
1/rate_hz: 3 identical messages per command, idle (0) otherwise; ``/link/safe_stop``
(std_msgs/Bool, on change: true on disconnection, false on (re)connection) and, while the link is
lost, a latched stop request ``hri_interfaces/StopRequest(source="link_loss")`` on
``/safety/stop_request`` every ``1 / safety.stop.heartbeat_hz`` (a lost message or a router that
comes back later still latches the system stop; docs/safety.md); ``/head_cmd``
(geometry_msgs/Vector3, rad) per accepted packet; ``/pulse/command_head`` (Vector3Stamped, the
head captured with each command); ``/diagnostics``. In: ``/odom``, ``/skeleton`` -> feedback
packets to the headset at ``pose_send_rate_hz`` / ``skeleton_send_rate_hz``.

Receiving: every tick (``pulse.node.tick_period_s``) drains the carriers on a bounded budget
(``max_packets_per_cycle``). On threaded backends (zenoh/rclpy) a waker thread also posts a
drain to the executor as soon as the UDP socket is readable (low latency); at most one such
drain per tick, sharing the per-tick budget, so a flood can never starve the pulse timer.
"""
from __future__ import annotations

import select
import threading
from typing import Optional

from hri_runtime import msgs
from hri_runtime.config import ConfigError, load_robot_config
from hri_runtime.node import Node, run_node
from hri_runtime.geometry import time_from_seconds
from hri_safety.nodes.stop_listener import STOP_REQUEST_TOPIC, STOP_REQUEST_TYPE

from hri_pulse.carriers import UdpCarrier, ZmqCarrier
from hri_pulse.core import PulseConfig, VrCommandCore
from hri_pulse.core.feedback import encode_pose, encode_skeleton
from hri_pulse.core.health import LEVEL_NAMES

ZMQ_PEER = ZmqCarrier.PEER


def _v(p):
    return getattr(p, "value", p)


stamp = time_from_seconds


def diagnostic_array(t_s: float, name: str, hardware_id: str, level: int, message: str, values: dict):
    kv = [msgs.new("diagnostic_msgs/msg/KeyValue", key=str(k), value=str(v)) for k, v in values.items()]
    st = msgs.new("diagnostic_msgs/msg/DiagnosticStatus", level=int(level), name=name, message=message,
                  hardware_id=hardware_id, values=kv)
    return msgs.new("diagnostic_msgs/msg/DiagnosticArray",
                    header=msgs.new("std_msgs/msg/Header", stamp=stamp(t_s), frame_id=""), status=[st])


class VrInterfaceNode(Node):
    def __init__(self, **kw):
        super().__init__("vr_interface", **kw)
        robot = _v(self.declare_parameter("robot", "tino"))
        port = int(_v(self.declare_parameter("port", -1)))
        bind = str(_v(self.declare_parameter("bind_address", "")))
        zmq_sel = str(_v(self.declare_parameter("zmq", "config")))
        kf_sel = str(_v(self.declare_parameter(      # bool or "config"/"true"/"false" (-p x:=true is a bool)
            "kernel_flood_filter", "config", {"values": ["config", "true", "false", True, False],
                                              "dynamic_typing": True},
            on_set=self._set_kernel_flood_filter))).lower()
        zsub = str(_v(self.declare_parameter("zmq_sub_endpoint", "")))
        zpub = str(_v(self.declare_parameter("zmq_pub_endpoint", "")))
        full = load_robot_config(robot)
        self.cfg = cfg = full["pulse"]
        self.stop_request_period_s = 1.0 / float(full["safety"]["stop"]["heartbeat_hz"])
        self._stop_request_t: Optional[float] = None
        T = cfg["topics"]
        try:
            pcfg = PulseConfig.from_config(cfg)
        except ValueError as exc:                    # pulse.auth key file missing / malformed
            raise ConfigError(None, "pulse.auth", cfg["auth"]["key_file"], str(exc)) from None
        self.core = VrCommandCore(pcfg, clock=self.now, logger=None)
        self.core.link.log = self.get_logger()
        u = cfg["udp"]
        self.udp = UdpCarrier.bind(bind or u["bind_address"], u["port"] if port < 0 else port,
                                   u["rcvbuf_bytes"], u["max_packets_per_cycle"], u["max_datagram_bytes"])
        self.carriers = [self.udp]
        zmq_on = cfg["zmq"]["enabled"] if zmq_sel == "config" else zmq_sel.lower() == "true"
        self.zmq: Optional[ZmqCarrier] = None
        if zmq_on:
            z = cfg["zmq"]
            self.zmq = ZmqCarrier(zsub or z["sub_endpoint"], zpub or z["pub_endpoint"], z["rcvhwm"],
                                  u["max_packets_per_cycle"])
            self.carriers.append(self.zmq)
        lk = cfg["link"]
        self.kfilter = self._kfilter_of(kf_sel)
        self.kfilter_min_per_tick = float(lk["flood_filter_min_pps"]) * cfg["node"]["tick_period_s"]
        self.kfilter_hold_s = float(lk["flood_filter_hold_s"])
        self._kfilter_until = 0.0
        self._foreign_prev = 0
        self.feedback_port = int(u["feedback_port"])
        self.budget = int(u["max_packets_per_cycle"])
        self._budget_left = self.budget
        self.pub_cmd = self.create_publisher("geometry_msgs/msg/Twist", T["base_cmd"], qos=10)
        self.pub_stop = self.create_publisher("std_msgs/msg/Bool", T["safe_stop"], qos=10)
        self.pub_stop_request = self.create_publisher(STOP_REQUEST_TYPE, STOP_REQUEST_TOPIC, qos=10)
        self.stop_requests = 0
        self.pub_head = self.create_publisher("geometry_msgs/msg/Vector3", T["head_cmd"], qos=10)
        self.pub_chead = self.create_publisher("geometry_msgs/msg/Vector3Stamped", T["command_head"], qos=10)
        self.pub_diag = self.create_publisher("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics", qos=10)
        self._pose = None
        self._skel = []
        self._fb_seq = {"pose": 0, "skeleton": 0}
        self.fb_enabled = bool(cfg["feedback"]["enabled"])
        self.max_joints = int(cfg["feedback"]["skeleton_max_joints"])
        self.create_subscription("nav_msgs/msg/Odometry", T["pose"], self.on_pose, qos=10)
        self.create_subscription("geometry_msgs/msg/PoseArray", T["skeleton"], self.on_skeleton, qos=10)
        h = cfg["health"]
        self.create_timer(cfg["node"]["tick_period_s"], self.tick)
        self.create_timer(cfg["node"]["diagnostics_period_s"], self.publish_diagnostics)
        if self.fb_enabled:
            self.create_timer(1.0 / h["pose_send_rate_hz"], self.send_pose)
            self.create_timer(1.0 / h["skeleton_send_rate_hz"], self.send_skeleton)
        self._stop_published: Optional[bool] = None
        self.published = 0
        self._waker: Optional[threading.Thread] = None
        self._wake_armed = threading.Event()
        self._closing = False
        if getattr(self.context, "kind", "inproc") != "inproc" and hasattr(self.context, "executor"):
            self._wake_armed.set()
            self._waker = threading.Thread(target=self._wake_loop, name="vr_interface-waker", daemon=True)
            self._waker.start()
        addr = self.udp.address
        self.get_logger().info(f"vr_interface: udp {addr[0]}:{addr[1]}"
                               + (f", zmq {cfg['zmq']['sub_endpoint']}" if self.zmq else "")
                               + f", pulses on {T['base_cmd']}, safe stop on {T['safe_stop']}")

    # ------------------------------------------------------------------ helpers
    def now(self) -> float:
        return self.get_clock().now_s()

    @property
    def port(self) -> int:
        return self.udp.address[1]

    def _wake_loop(self) -> None:
        """Threaded backends: post a drain as soon as the UDP socket is readable."""
        while not self._closing:
            if not self._wake_armed.wait(0.1):
                continue
            try:
                r, _, _ = select.select([self.udp.sock], [], [], 0.1)
            except (OSError, ValueError):
                return
            if r and not self._closing:
                self._wake_armed.clear()
                self.context.executor.post(self._drain_event)

    def _drain_event(self) -> None:
        # at most one event-driven drain per tick: the waker is re-armed by ``tick`` only, so
        # posted drains can never crowd the executor queue ahead of the timers under a flood
        self._drain(self.now())

    def _drain(self, now: float) -> None:
        for carrier in self.carriers:
            if self._budget_left <= 0:
                return
            batch = carrier.drain(self._budget_left)
            self._budget_left -= len(batch)
            for data, peer in batch:
                pkt = self.core.on_datagram(data, peer, now)
                if pkt is not None:
                    h = self.core.head_rad(pkt)
                    self.pub_head.publish(msgs.new("geometry_msgs/msg/Vector3", x=h[0], y=h[1], z=h[2]))
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
                    header=msgs.new("std_msgs/msg/Header", stamp=stamp(e.t_s), frame_id="head"),
                    vector=msgs.new("geometry_msgs/msg/Vector3", x=h[0], y=h[1], z=h[2])))
        if self._stop_published is not self.core.safe_stop and self.core.link.health.ever_connected:
            self._stop_published = self.core.safe_stop
            self.pub_stop.publish(msgs.new("std_msgs/msg/Bool", data=self.core.safe_stop))
        if self.core.safe_stop and self.core.link.health.ever_connected:
            if self._stop_request_t is None or now - self._stop_request_t >= self.stop_request_period_s - 1e-9:
                self._stop_request_t = now
                self.stop_requests += 1
                self.pub_stop_request.publish(msgs.new(STOP_REQUEST_TYPE, source="link_loss",
                                                       reason="headset link lost (no valid packet)"))
        else:
            self._stop_request_t = None

    # ------------------------------------------------------------------ timers / callbacks
    def tick(self) -> None:
        now = self.now()
        self._budget_left = self.budget
        self._drain(now)
        if self.kfilter:
            self._flood_filter(now)
        if self._waker is not None:
            self._wake_armed.set()

    def _kfilter_of(self, sel) -> bool:
        lk = self.cfg["link"]
        sel = str(sel).lower()
        kf = lk["kernel_flood_filter"] if sel == "config" else sel == "true"
        return bool(kf) and bool(lk["peer_lock"])

    def _set_kernel_flood_filter(self, sel) -> None:
        """Parameter ``kernel_flood_filter`` at run time: on/off at the next tick; turning it off
        releases an engaged filter at once."""
        self.kfilter = self._kfilter_of(sel)
        if not self.kfilter and self.udp.filter_host is not None:
            self.udp.clear_host_filter()
            self.get_logger().info("vr link: kernel flood filter released (parameter)")

    def _flood_filter(self, now: float) -> None:
        """Under a flood from other hosts (>= flood_filter_min_pps foreign drops), move the peer
        lock into the kernel (BPF source-host filter) for flood_filter_hold_s, then re-evaluate.
        Released at once when the link times out, so any headset can connect again."""
        lr = self.core.link
        foreign = lr.rejected["foreign_peer"]
        d, self._foreign_prev = foreign - self._foreign_prev, foreign
        if self.udp.filter_host is not None:
            if now >= self._kfilter_until or not lr.health.connected:
                self.udp.clear_host_filter()
                self.get_logger().info("vr link: kernel flood filter released")
            return
        owner = lr.owner
        if d >= self.kfilter_min_per_tick and lr.health.connected and isinstance(owner, tuple):
            if self.udp.set_host_filter(owner[0]):
                self._kfilter_until = now + self.kfilter_hold_s
                self.get_logger().warning(
                    f"vr link: flood from other hosts ({d} datagrams in one tick): kernel filter admits "
                    f"only {owner[0]} for {self.kfilter_hold_s:g} s")

    def on_pose(self, msg) -> None:
        p = msg.pose.pose
        self._pose = ((p.position.x, p.position.y, p.position.z),
                      (p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w))

    def on_skeleton(self, msg) -> None:
        self._skel = [(q.position.x, q.position.y, q.position.z) for q in msg.poses]

    def _feedback_target(self):
        owner = self.core.link.owner
        if owner is None or not self.core.link.health.connected:
            return None, None
        if owner == ZMQ_PEER:
            return self.zmq, None
        host, port = owner
        return self.udp, (host, self.feedback_port or port)

    def send_pose(self) -> None:
        carrier, peer = self._feedback_target()
        if carrier is None:
            return
        now = self.now()
        pos, ori = self._pose or ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
        self._fb_seq["pose"] = (self._fb_seq["pose"] + 1) % (1 << 31)
        carrier.send(encode_pose(self._fb_seq["pose"], now, pos, ori, self._pose is not None), peer)
        self.core.link.health.on_send("pose", now)

    def send_skeleton(self) -> None:
        carrier, peer = self._feedback_target()
        if carrier is None:
            return
        now = self.now()
        self._fb_seq["skeleton"] = (self._fb_seq["skeleton"] + 1) % (1 << 31)
        carrier.send(encode_skeleton(self._fb_seq["skeleton"], now, self._skel, self.max_joints), peer)
        self.core.link.health.on_send("skeleton", now)

    def health_values(self, now: float) -> tuple:
        lr = self.core.link
        rep = lr.health.report(now, tx_active=self.fb_enabled)
        vals = {"connected": rep.connected, "peer": lr.owner, "received": lr.received, "accepted": lr.accepted,
                "commands": self.core.commands, "debounced": self.core.pulse.debounced,
                "safe_stop": self.core.safe_stop}
        for s in rep.streams.values():
            vals[f"{s.name}_rate_hz"] = f"{s.rate_hz:.2f}"
            vals[f"{s.name}_level"] = LEVEL_NAMES[s.level]
        vals.update({f"rejected_{k}": v for k, v in lr.rejected.items()})
        vals.update({f"seq_{k}": v for k, v in lr.tracker.c.as_dict().items()})
        vals["flood_budget_hits"] = sum(c.budget_exhausted for c in self.carriers)
        vals["kernel_filter_host"] = self.udp.filter_host or "-"
        vals["kernel_filter_engagements"] = self.udp.filter_engagements
        return rep, vals

    def publish_diagnostics(self) -> None:
        now = self.now()
        rep, vals = self.health_values(now)
        self.pub_diag.publish(diagnostic_array(now, "hri_pulse: vr link", "unity", rep.level, rep.message, vals))
        if self.core.link.health.log_due(now, rep.level):
            line = (f"vr link {LEVEL_NAMES[rep.level]}: {rep.message}; receive "
                    f"{rep.streams['receive'].rate_hz:.1f} Hz, accepted {vals['accepted']}/{vals['received']}, "
                    f"commands {vals['commands']}")
            (self.get_logger().info if rep.level == 0 else self.get_logger().warning)(line)

    def destroy_node(self) -> None:
        self._closing = True
        self._wake_armed.set()
        if self._waker is not None:
            self._waker.join(timeout=1.0)
        for c in self.carriers:
            c.close()
        super().destroy_node()


def main(argv=None):
    return run_node(VrInterfaceNode, argv)
