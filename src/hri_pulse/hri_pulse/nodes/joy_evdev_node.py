"""``joy_evdev``: a Linux gamepad (evdev) -> ``sensor_msgs/Joy``, the standard ``joy`` node's
message, for the machines without ROS (``hri launch``; on ROS 2 the launch files start ``joy``'s
``joy_node`` instead). No python-evdev: the kernel's ``input_event`` records are read from the
device file (core.evdev decodes them).

Device: ``pulse.gamepad.device`` (``/dev/input/eventN``, or a pipe / plain file of the same
records, e.g. a recording or a test's writer), else the first input device whose name contains
``pulse.gamepad.device_name`` (sysfs). A missing device is one log line and a retry every
``retry_period_s``, never a crash. When the device vanishes (read error, or a pipe's writer
closes) one Joy with every button released and every axis 0 is published (whatever the device
held is let go: the arm's clutch releases, no pulse starts), then the device is looked for again.

Out: ``pulse.topics.joy`` (sensor_msgs/Joy, header frame ``joy``) on every device frame that
changes a value, and every ``1 / autorepeat_rate_hz`` while the device is open, as the ``joy``
node does. Parameters: ``robot`` and ``pulse.gamepad.*`` / ``pulse.topics.joy`` by dotted path;
a mapping naming an unknown evdev code is refused at start (one line, exit 2).
"""
from __future__ import annotations

import os
import stat
from typing import Optional

from hri_runtime import msgs
from hri_runtime.config.tree import ConfigError
from hri_runtime.geometry import time_from_seconds
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config, params_type

from hri_pulse.core.evdev import DeviceRetry, EvdevJoy, MappingError, absinfo_range, device_name, find_device

READ_CHUNK = 24 * 64          # up to 64 records per read
TICK_S = 0.005                # device polling period: a frame waits at most 5 ms to be published


class JoyEvdevNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("joy", **kw)
        cfg = declare_config(self, ("pulse.gamepad", "pulse.topics.joy"), cfg, robot="tino")
        g = self.g = params_type("pulse.gamepad").from_tree(cfg)
        try:
            self.joy = EvdevJoy.from_params(g)
        except MappingError as exc:
            raise ConfigError(None, exc.key, exc.value, exc.expected) from None
        self.topic = params_type("pulse.topics").from_tree(cfg).joy
        self.pub = self.create_publisher("sensor_msgs/msg/Joy", self.topic, qos=10)
        self.fd: Optional[int] = None
        self.path: Optional[str] = None
        self._fifo = self._writer_seen = False
        self.retry = DeviceRetry(g.retry_period_s, self.now())
        self.published = 0
        self.device_losses = 0
        self._last_pub = None
        self.create_timer(TICK_S, self.tick)
        self.get_logger().info(f"joy_evdev: Joy on {self.topic} from "
                               f"{g.device or 'the device named like ' + repr(g.device_name)}")

    def now(self) -> float:
        return self.get_clock().now_s()

    # ------------------------------------------------------------------ device
    def _open(self) -> bool:
        path = self.g.device or find_device(self.g.device_name)
        if not path:
            self.get_logger().error(f"joy_evdev: no input device named like '{self.g.device_name}' "
                                    f"(pulse.gamepad.device_name); retrying every {self.g.retry_period_s:g} s")
            return False
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            self.get_logger().error(f"joy_evdev: cannot open {path} ({exc.strerror}); retrying every "
                                    f"{self.g.retry_period_s:g} s")
            return False
        self.fd, self.path = fd, path
        self._fifo = stat.S_ISFIFO(os.fstat(fd).st_mode)
        self._writer_seen = False
        self.joy.reset()
        for i, code in enumerate(self.joy.axis_codes):       # a real device says its own ranges
            r = absinfo_range(fd, code)
            if r is not None:
                self.joy.set_range(i, *r)
        name = device_name(fd)
        self.get_logger().info(f"joy_evdev: reading {path}" + (f" ({name})" if name else ""))
        return True

    def _lost(self, why: str) -> None:
        self.get_logger().error(f"joy_evdev: {self.path} {why}; everything released, looking for the device again")
        try:
            os.close(self.fd)
        except OSError:
            pass
        self.fd = None
        self.device_losses += 1
        self.joy.end_of_stream()
        self.joy.reset()
        self.retry = DeviceRetry(self.g.retry_period_s, self.now() + self.g.retry_period_s)
        self._publish(self.now())

    def _read(self) -> bool:
        changed = False
        while self.fd is not None:
            try:
                data = os.read(self.fd, READ_CHUNK)
            except BlockingIOError:
                break
            except OSError as exc:
                self._lost(f"read failed ({exc.strerror})")
                break
            if not data:
                if self._fifo and self._writer_seen:     # the writer closed the pipe: the device is gone
                    self._lost("closed")
                break                       # a plain file at its end, a pipe without writer yet: nothing new
            self._writer_seen = True
            changed |= self.joy.feed(data)
        return changed

    # ------------------------------------------------------------------ output
    def _publish(self, now: float) -> None:
        self.pub.publish(msgs.new(
            "sensor_msgs/msg/Joy", header=msgs.new("std_msgs/msg/Header", stamp=time_from_seconds(now), frame_id="joy"),
            axes=[float(a) for a in self.joy.axes], buttons=[int(b) for b in self.joy.buttons]))
        self.published += 1
        self._last_pub = now

    def tick(self) -> None:
        now = self.now()
        if self.fd is None:
            if self.retry.due(now):
                self._open()
            return
        if self._read():
            self._publish(now)
        elif self.fd is not None and self.g.autorepeat_rate_hz > 0 and \
                (self._last_pub is None or now - self._last_pub >= 1.0 / self.g.autorepeat_rate_hz - 1e-9):
            self._publish(now)

    def destroy_node(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        return super().destroy_node()


def main(argv=None):
    return run_node(JoyEvdevNode, argv)
