"""``stop_supervisor``: the stop authority of a stack (docs/safety.md "System stop contract").

In:  ``/safety/stop_request`` (hri_interfaces/msg/StopRequest: source, reason) from the console,
     vr_interface's link monitor, drivers, safety checks; ``pulse.topics.safe_stop``
     (``/link/safe_stop``, std_msgs/Bool, true = stop; false is ignored: only a reset releases).
Srv: ``/safety/reset`` (std_srvs/srv/Trigger): the explicit reset; clears every latched source,
     refused (success false, the sentence names the source) while a source is still requested.
Out: ``/safety/stop`` (hri_interfaces/msg/SafetyStop, reliable, TRANSIENT_LOCAL, depth 1) at once
     on every change and every ``1 / safety.stop.heartbeat_hz`` as the heartbeat; ``/diagnostics``
     (ERROR while stopped) on change and with every ``safety.stop.heartbeat_hz``-th heartbeat.

Parameters (read-only, from the declarations: src/hri_safety/parameters.yaml, src/hri_pulse/...):
``robot`` (config name, default fr3), ``robot_id``, ``safety.stop.heartbeat_hz``,
``safety.stop.timeout_s``, ``safety.stop.max_sources``, ``pulse.topics.safe_stop``; the robot
config's values are the defaults, ``-p`` / launch overrides win.
"""
from __future__ import annotations

from typing import Optional

from hri_runtime import msgs
from hri_runtime.diagnostics import ERROR, OK, Updater
from hri_runtime.parameter_library.typed import declare_config, params_type
from hri_runtime.qos import QOS_LATCHED
from hri_runtime.node import Node, run_node

from hri_safety.core.stop import StopLatch, StopParams
from hri_safety.nodes.stop_listener import (RESET_SERVICE, STOP_REQUEST_TOPIC, STOP_REQUEST_TYPE, STOP_TOPIC,
                                            STOP_TYPE)


class StopSupervisorNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("stop_supervisor", **kw)
        self.cfg = declare_config(self, ("safety.stop", "pulse.topics.safe_stop"), cfg=cfg)
        self.params = StopParams.from_tree(self.cfg)
        self.latch = StopLatch(self.params)
        self.seq = 0
        link_topic = params_type("pulse.topics").from_tree(self.cfg).safe_stop    # hri_pulse's (it depends on us)
        self.pub = self.create_publisher(STOP_TYPE, STOP_TOPIC, qos=QOS_LATCHED)
        # /diagnostics with every round(heartbeat_hz)-th heartbeat (about 1 s) and on every change
        self.diag = Updater(self, "stop_supervisor", max(1, round(self.params.heartbeat_hz)) * self.params.period_s,
                            prefix="safety")
        self.diag.add("system stop", self._diagnose)
        self.create_subscription(STOP_REQUEST_TYPE, STOP_REQUEST_TOPIC, self.on_request, qos=10)
        self.create_subscription("std_msgs/msg/Bool", link_topic, self.on_link_safe_stop, qos=10)
        self.create_service("std_srvs/srv/Trigger", RESET_SERVICE, self.on_reset)
        self.create_timer(self.params.period_s, self.publish)
        self.publish()
        self.get_logger().info(f"stop supervisor: {STOP_TOPIC} every {self.params.period_s:g} s, actuators stop "
                               f"{self.params.timeout_s:g} s after the last heartbeat; requests on "
                               f"{STOP_REQUEST_TOPIC} and {link_topic}, reset {RESET_SERVICE}")

    def now(self) -> float:
        return self.get_clock().now_s()

    # ------------------------------------------------------------------ inputs
    def request(self, source: str, reason: str) -> bool:
        """Latch a stop (also what the callbacks call); publishes at once when it changes the state."""
        if self.latch.request(source, reason, self.now()):
            self._latched()
            return True
        return False

    def on_request(self, msg) -> None:
        self.request(msg.source, msg.reason)

    def on_link_safe_stop(self, msg) -> None:
        if self.latch.on_link_safe_stop(bool(msg.data), self.now()):
            self._latched()

    def _latched(self) -> None:
        self.get_logger().error(f"STOP latched: {self.latch.reason} (sources: {', '.join(self.latch.sources)})")
        self.publish(changed=True)

    def on_reset(self, _req, resp):
        was = self.latch.sources
        ok, line = self.latch.reset(self.now())
        resp.success, resp.message = ok, line
        if not ok:
            self.get_logger().warning(line)
            return resp
        self.get_logger().warning(f"RESET ({line})" if was else line)
        self.publish(changed=True)
        return resp

    # ------------------------------------------------------------------ output
    def publish(self, changed: bool = False) -> None:
        t = self.get_clock().now()
        self.pub.publish(msgs.new(STOP_TYPE, stamp=t.to_msg(), stopped=self.latch.stopped,
                                  reason=self.latch.reason, sources=self.latch.sources,
                                  heartbeat_seq=self.seq % (1 << 32), reset_count=self.latch.reset_count % (1 << 32)))
        if changed:
            self.diag.force_update()
        else:
            self.diag.update()
        self.seq += 1

    def _diagnose(self, stat) -> None:
        lt = self.latch
        stat.summary(ERROR if lt.stopped else OK, f"STOPPED: {lt.reason}" if lt.stopped else "running")
        for k, v in {**lt.status(), "heartbeat_seq": self.seq, "heartbeat_hz": self.params.heartbeat_hz,
                     "timeout_s": self.params.timeout_s}.items():
            stat.add(k, v)


def main(argv=None):
    return run_node(StopSupervisorNode, argv)
