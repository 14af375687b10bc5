"""``keyboard_teleop``: the FR3 keyboard teleop design's keyboard EE teleop in a terminal (no X server: raw stdin),
and the gamepad (``sensor_msgs/Joy`` on ``teleop.gamepad.topic``) as the same keys.

Publishes the absolute target as ``geometry_msgs/PoseStamped`` on ``/ee_command`` at
``teleop.keyboard.publish_rate_hz`` (10 Hz). The initial target is the first ``/ee_pose`` received
(so the robot does not move when the keyboard starts); keys before that are ignored. ESC or
Ctrl-C quits. In tests, ``feed(bytes)`` injects key bytes instead of the terminal.
"""
from __future__ import annotations

import os
import select
import sys
from collections import deque
from typing import Optional

from hri_arm_teleop.core.gamepad import GamepadKeys
from hri_arm_teleop.core.keyboard import HELP, KeyboardTeleop, parse_keys
from hri_arm_teleop.parameters_gen import TeleopParams
from hri_runtime.parameters_gen import FramesParams
from hri_runtime.geometry import matrix_from_pose, pose_stamped_from_matrix
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config

LINES_KEPT = 200   # lines kept in ``KeyboardTeleopNode.lines`` (the last ones)


class KeyboardTeleopNode(Node):
    def __init__(self, cfg: Optional[dict] = None, use_terminal: bool = True, **kw):
        super().__init__("keyboard_teleop", **kw)
        self.cfg = declare_config(self, ("teleop.keyboard", "teleop.gamepad", "teleop.topics", "frames.base"), cfg=cfg)
        t = TeleopParams.from_tree(self.cfg)
        self.params = t.keyboard
        self.frame_id = FramesParams.from_tree(self.cfg).base
        self.core: Optional[KeyboardTeleop] = None
        self.pending: list[str] = []
        self.lines: deque[str] = deque(maxlen=LINES_KEPT)   # the last lines said (tests, no terminal)
        self.quit = False
        self._tty = None
        if use_terminal and sys.stdin.isatty():
            import termios
            import tty

            import atexit

            fd = sys.stdin.fileno()
            self._tty = (fd, termios.tcgetattr(fd))
            tty.setcbreak(fd)
            atexit.register(self.restore_terminal)  # never leave the shell in cbreak mode
            self.say(HELP)
        self.pub = self.create_publisher("geometry_msgs/msg/PoseStamped", t.topics.ee_command, qos=10)
        self.create_subscription("geometry_msgs/msg/PoseStamped", t.topics.ee_pose, self.on_ee_pose, qos=10)
        self.gamepad = GamepadKeys(t.gamepad)
        self.create_subscription("sensor_msgs/msg/Joy", t.gamepad.topic, self.on_joy, qos=10)
        self.create_timer(1.0 / self.params.publish_rate_hz, self.tick)

    def on_joy(self, msg) -> None:
        self.pending.extend(self.gamepad.update(list(msg.axes), list(msg.buttons)))

    def say(self, text: str) -> None:
        self.lines.append(text)
        if self._tty is not None:
            print(text, flush=True)

    def on_ee_pose(self, msg) -> None:
        if self.core is None:
            T = matrix_from_pose(msg)
            if T is not None:
                self.core = KeyboardTeleop(self.params, T)
                self.say("initial target = current end-effector pose; ready")

    def feed(self, data: bytes) -> None:
        self.pending.extend(parse_keys(data))

    def _read_terminal(self) -> None:
        if self._tty is None:
            return
        while select.select([self._tty[0]], [], [], 0.0)[0]:
            data = os.read(self._tty[0], 64)
            if not data:
                break
            self.feed(data)

    def tick(self) -> None:
        self._read_terminal()
        keys, self.pending = self.pending, []
        for k in keys:
            if k in ("esc", "\x03"):
                self.quit = True
                continue
            if self.core is None:
                continue
            text = self.core.handle(k)
            if text:
                self.say(text)
        if self.core is not None:
            self.pub.publish(pose_stamped_from_matrix(self.core.target, self.get_clock().now_s(), self.frame_id))
        if self.quit and self._tty is not None:
            self.restore_terminal()
            raise KeyboardInterrupt  # ESC: the runtime's spin loop ends the node

    def restore_terminal(self) -> None:
        if self._tty is not None:
            import termios

            termios.tcsetattr(self._tty[0], termios.TCSADRAIN, self._tty[1])
            self._tty = None


def main(argv=None):
    run_node(KeyboardTeleopNode, argv)
