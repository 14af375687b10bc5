"""``gamepad_node``: gamepad -> the same 3-cycle pulses as the VR path (the Tino VR design: gamepad testing
represents VR behaviour exactly: same ``RisingEdge``, same ``PulseGenerator``, same topic).

Source ``pulse.gamepad.source``: ``joy`` (``sensor_msgs/Joy`` on ``pulse.topics.joy`` from the
standard ``joy`` node) or ``evdev`` (Linux input device whose name contains
``pulse.gamepad.device_name``; python-evdev imported lazily). A missing device or library is one
clear log line and a retry every ``retry_period_s`` - never a crash. Parameters: ``robot`` and
the keys of ``pulse.gamepad``, ``pulse.pulse``, ``pulse.node``, ``pulse.topics`` by their dotted
path (e.g. ``pulse.gamepad.source``), the robot config's value as default.
Out: ``/base_cmd`` (geometry_msgs/Twist) at ``pulse.pulse.rate_hz``, ``/pulse/command_head``.
"""
from __future__ import annotations

from typing import Optional, Set

from hri_runtime import msgs
from hri_runtime.geometry import time_from_seconds
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config

from hri_pulse.core import GamepadCore, PulseConfig


class EvdevSource:
    """Pressed-button set from a Linux evdev device; ``poll()`` is non-blocking."""

    def __init__(self, device_name: str, key_names: dict, log):
        self.device_name = device_name
        self.key_names = key_names          # button name -> evdev key name
        self.log = log
        self.dev = None
        self.pressed: Set[str] = set()
        self._codes = {}

    def open(self) -> bool:
        try:
            import evdev  # type: ignore
        except ImportError:
            self.log.error("gamepad: python-evdev is not installed (pip install evdev); retrying")
            return False
        try:
            for path in evdev.list_devices():
                d = evdev.InputDevice(path)
                if self.device_name.lower() in d.name.lower():
                    self.dev = d
                    self._codes = {evdev.ecodes.ecodes[k]: n for n, k in self.key_names.items()
                                   if k in evdev.ecodes.ecodes}
                    self.log.info(f"gamepad: using {d.name} at {path}")
                    return True
        except OSError as exc:
            self.log.error(f"gamepad: cannot list input devices ({exc}); retrying")
            return False
        self.log.error(f"gamepad: no input device named like '{self.device_name}' (pulse.gamepad.device_name); retrying")
        return False

    def poll(self) -> Optional[Set[str]]:
        """New pressed set, or None if nothing changed; raises OSError when the device is gone."""
        changed = False
        while True:
            ev = self.dev.read_one()
            if ev is None:
                break
            if ev.type == 1 and ev.code in self._codes:      # EV_KEY
                name = self._codes[ev.code]
                (self.pressed.add if ev.value else self.pressed.discard)(name)
                changed = True
        return set(self.pressed) if changed else None


class GamepadNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("gamepad", **kw)
        cfg = declare_config(self, ("pulse.gamepad", "pulse.pulse", "pulse.node", "pulse.topics"), cfg, robot="tino")
        p = PulseConfig.from_config(cfg["pulse"])
        g, T = p.gamepad, p.topics
        self.source = g.source
        self.core = GamepadCore(g, p.pulse, start_s=self.now())
        self.pub_cmd = self.create_publisher("geometry_msgs/msg/Twist", T.base_cmd, qos=10)
        self.pub_chead = self.create_publisher("geometry_msgs/msg/Vector3Stamped", T.command_head, qos=10)
        self.published = 0
        self.evdev: Optional[EvdevSource] = None
        if self.source == "joy":
            self.create_subscription("sensor_msgs/msg/Joy", T.joy, self.on_joy, qos=10)
        else:
            self.evdev = EvdevSource(g.device_name, g.evdev_buttons, self.get_logger())
        self.create_timer(p.node.tick_period_s, self.tick)
        self.get_logger().info(f"gamepad: source {self.source}, pulses on {T.base_cmd}")

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
            self.pub_cmd.publish(msgs.new("geometry_msgs/msg/Twist",
                                          linear=msgs.new("geometry_msgs/msg/Vector3", x=float(e.state)),
                                          angular=msgs.new("geometry_msgs/msg/Vector3", z=float(e.direction))))
            self.published += 1
            if e.index == 0 and e.command is not None:
                self.pub_chead.publish(msgs.new(
                    "geometry_msgs/msg/Vector3Stamped",
                    header=msgs.new("std_msgs/msg/Header", stamp=time_from_seconds(e.t_s), frame_id="head"),
                    vector=msgs.new("geometry_msgs/msg/Vector3")))

    def tick(self) -> None:
        now = self.now()
        if self.evdev is not None:
            if self.evdev.dev is None:
                if self.core.retry_due(now):
                    self.evdev.open()
            else:
                try:
                    pressed = self.evdev.poll()
                except OSError as exc:
                    self.get_logger().error(f"gamepad: device lost ({exc}); idle, retrying")
                    self.evdev.dev = None
                    self.core.device_lost(now)
                    pressed = None
                if pressed is not None:
                    self.core.on_buttons(pressed, now)
        self._emit(now)


def main(argv=None):
    return run_node(GamepadNode, argv)
