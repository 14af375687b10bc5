"""``gamepad_node``: gamepad -> the same 3-cycle pulses as the VR path (the Tino VR design: gamepad testing
represents VR behaviour exactly: same ``RisingEdge``, same ``PulseGenerator``, same topic).

In: ``sensor_msgs/Joy`` on ``pulse.topics.joy`` -- from the standard ``joy`` node on ROS 2, or
``joy_evdev`` (this package: a Linux evdev device, the same arrays) without ROS; the launch files
start one of them with ``input:=gamepad``. Parameters: ``robot`` and the keys of
``pulse.gamepad``, ``pulse.pulse``, ``pulse.node``, ``pulse.topics`` by their dotted path, the
robot config's value as default. ``pulse.node.input`` other than ``gamepad`` (or ``vr``, a
launch's default) refuses to start.
Out: ``/base_cmd`` (geometry_msgs/Twist) at ``pulse.pulse.rate_hz``, ``/pulse/command_head``.
"""
from __future__ import annotations

from typing import Optional

from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config

from hri_pulse.core import GamepadCore, PulseConfig
from hri_pulse.messages import command_head_msg, pulse_twist


class GamepadNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("gamepad", **kw)
        cfg = declare_config(self, ("pulse.gamepad", "pulse.pulse", "pulse.node", "pulse.topics"), cfg, robot="tino")
        p = PulseConfig.from_config(cfg["pulse"])
        g, T = p.gamepad, p.topics
        self.core = GamepadCore(g, p.pulse, start_s=self.now())
        self.pub_cmd = self.create_publisher("geometry_msgs/msg/Twist", T.base_cmd, qos=10)
        self.pub_chead = self.create_publisher("geometry_msgs/msg/Vector3Stamped", T.command_head, qos=10)
        self.published = 0
        self.create_subscription("sensor_msgs/msg/Joy", T.joy, self.on_joy, qos=10)
        self.create_timer(p.node.tick_period_s, self.tick)
        self.get_logger().info(f"gamepad: Joy on {T.joy}, pulses on {T.base_cmd}")

    def now(self) -> float:
        return self.get_clock().now_s()

    def on_joy(self, msg) -> None:
        now = self.now()
        if not self.core.on_joy(list(msg.buttons), now):
            self.get_logger().warning("gamepad: Joy message with too few buttons (ignored)", throttle_duration_sec=5.0)
            return
        self._emit(now)

    def _emit(self, now: float) -> None:
        for e in self.core.due(now):
            self.pub_cmd.publish(pulse_twist(e))
            self.published += 1
            if e.index == 0 and e.command is not None:
                self.pub_chead.publish(command_head_msg(e))      # the gamepad has no head: zero

    def tick(self) -> None:
        self._emit(self.now())


def main(argv=None):
    return run_node(GamepadNode, argv)
