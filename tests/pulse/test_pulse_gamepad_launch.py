"""`hri launch launch/tino.launch.yaml input:=gamepad` on the real Zenoh transport (router in-process on
a free port; stop supervisor, joy_evdev, gamepad_node, atomic, tino_sim, robot_state as processes):
one press of X -- injected as sensor_msgs/Joy on /joy (what the ROS 2 joy node publishes), or as
kernel input_event records through joy_evdev reading a pipe (the evdev path without ROS; there is
no /dev/uinput here) -- gives exactly one 3-cycle pulse of state 1 on /base_cmd and exactly one
movement of the atomic controller, as a VR press does. Wall clock: waits are bounded guards."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import zenoh  # noqa: F401  (required: a missing install fails here)

from hri_pulse.core import evdev as ev  # noqa: E402
from hri_runtime import msgs  # noqa: E402
from hri_runtime.config.tree import load_robot_config  # noqa: E402
from hri_runtime.node import Node  # noqa: E402

from ..stack_launch import HRI, LaunchedStack, free_port, stack_env, wait_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


class PipeDevice:
    """The writing end of a pipe joy_evdev reads as its device (the kernel's record format)."""

    def __init__(self, path: Path):
        self.path = path
        os.mkfifo(path)
        self.f = None
        self._t = threading.Thread(target=self._open, daemon=True)   # blocks until the reader opened it
        self._t.start()

    def _open(self):
        self.f = open(self.path, "wb", buffering=0)

    def ready(self) -> bool:
        return self.f is not None

    def write(self, data: bytes) -> None:
        self.f.write(data)

    def close(self) -> None:
        if self.f is not None:
            self.f.close()


class Watch(Node):
    def __init__(self, T, joy_topic, **kw):
        super().__init__("gamepad_launch_watch", **kw)
        self.lock = threading.Lock()
        self.states, self.cmd = [], []
        self.atomic_diag: dict = {}
        self.create_subscription("hri_interfaces/msg/AtomicState", T["atomic_state"],
                                 lambda m: self._add(self.states, msgs.to_dict(m)), qos=10000)
        self.create_subscription("geometry_msgs/msg/Twist", T["pulse"],
                                 lambda m: self._add(self.cmd, (int(m.linear.x), int(m.angular.z))), qos=10000)
        self.create_subscription("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics", self._diag, qos=100)
        self.joy = self.create_publisher("sensor_msgs/msg/Joy", joy_topic, qos=10)

    def _add(self, store, v):
        with self.lock:
            store.append(v)

    def _diag(self, arr):
        for st in arr.status:
            if st.name.startswith("atomic:"):
                self.atomic_diag = {v.key: v.value for v in st.values}

    def ready(self) -> bool:
        d = self.atomic_diag
        with self.lock:
            s = self.states[-1] if self.states else None
        return s is not None and s["system_stop"] == "" and s["fault"] == "" \
            and int(d.get("pulses_received", 0)) > 0 and int(d.get("leg_states_received", 0)) > 0

    def press(self, *idx, n=11):
        b = [0] * n
        for i in idx:
            b[i] = 1
        self.joy.publish(msgs.new("sensor_msgs/msg/Joy", axes=[0.0] * 8, buttons=b))

    def pulses(self):
        """Runs of non-idle /base_cmd messages: [(state, direction, length)]."""
        out, prev = [], (0, 0)
        with self.lock:
            cmd = list(self.cmd)
        for c in cmd:
            if c[0] and c == prev:
                out[-1][2] += 1
            elif c[0]:
                out.append([c[0], c[1], 1])
            prev = c
        return [tuple(p) for p in out]

    def movements(self):
        out, prev = [], 0
        with self.lock:
            states = list(self.states)
        for s in states:
            if s["state"] != prev and s["state"] != 0:
                out.append(s["state"])
            prev = s["state"]
        return out

    def idle(self) -> bool:
        with self.lock:
            return bool(self.states) and self.states[-1]["state"] == 0


@pytest.mark.parametrize("source", ["joy", "evdev"])
def test_tino_gamepad_press_is_one_pulse_and_one_movement(tmp_path, source):
    cfg = load_robot_config("tino")
    T, jb = cfg["atomic"]["topics"], cfg["pulse"]["gamepad"]["joy_buttons"]
    pad = tmp_path / "pad"
    dev = PipeDevice(pad) if source == "evdev" else None
    device = str(pad) if dev else str(tmp_path / "absent")      # joy: the reader finds no device, Joy comes from us
    try:
        with LaunchedStack("tino.launch.yaml", "input:=gamepad", f"joy_device:={device}", ros=False) as stack:
            ctx = stack.ctx
            w = stack.add(Watch(T, cfg["pulse"]["topics"]["joy"], context=ctx))
            ctx.spin_in_background()
            assert wait_for(w.ready), "atomic hearing the stop supervisor, gamepad_node's idle pulses and tino_sim"
            if dev:
                assert wait_for(dev.ready), "joy_evdev opening the pipe"
                dev.write(ev.key("BTN_NORTH", True) + ev.syn())          # X down ...
                time.sleep(0.3)                                          # (held: the reader repeats it at 20 Hz)
                dev.write(ev.key("BTN_NORTH", False) + ev.syn())         # ... and up
            else:
                for _ in range(6):                                       # X held 0.3 s, as the joy node repeats it
                    w.press(jb["x"])
                    time.sleep(0.05)
                for _ in range(4):
                    w.press()
                    time.sleep(0.05)
            assert wait_for(lambda: w.movements() == [1]), w.movements()      # the movement of state 1
            assert wait_for(w.idle), "the movement's end"
            time.sleep(1.0)                                              # nothing else follows
            assert w.pulses() == [(1, 0, 3)]                             # one 3-cycle pulse
            assert w.movements() == [1]
    finally:
        if dev:
            dev.close()
    text = stack.text
    assert stack.returncode == 0, text
    assert "Traceback" not in text, text
    assert "vr_interface" not in text, text                          # the headset path is not started
    assert ("joy_evdev: reading" in text) == (source == "evdev"), text


def test_tino_launch_refuses_keyboard_input():
    """Tino has no keyboard path: input:=keyboard is one clear line from vr_interface, no pulses."""
    ep = f"tcp/127.0.0.1:{free_port()}"
    out = subprocess.run(HRI + ["launch", "--check", str(ROOT / "launch/tino.launch.yaml"), "input:=keyboard"],
                         env=stack_env(ep, ros=False), capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0 and "pulse.node.input:=keyboard" in out.stdout, out.stdout + out.stderr
    exe = Path(sys.executable).parent / "vr_interface_node"
    out = subprocess.run([str(exe), "--ros-args", "-p", "pulse.node.input:=keyboard", "-p", "pulse.udp.port:=0"],
                         env=dict(stack_env(ep, ros=False), HRI_TRANSPORT="inproc"), capture_output=True, text=True,
                         timeout=60)
    lines = [ln for ln in (out.stdout + out.stderr).splitlines() if ln.strip()]
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stdout + out.stderr
    assert any("pulse.node.input" in ln and "keyboard" in ln for ln in lines), lines
