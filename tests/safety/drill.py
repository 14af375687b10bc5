"""Stop drill: exercise the system stop of a live stack over real sockets (tests, benchmark).

``Stack``: a combined stack in one domain (``stack_launch``): ``launch/fr3.launch.yaml`` (its stop
supervisor and the FR3 arm chain, VR over UDP) + Tino's ``vr_interface`` and ``atomic`` (embedded
MuJoCo) + the console, started by ``hri launch`` against a standalone ``hri router``
(``start_router``), so the router can be killed and restarted on its own; and the operator side:

- ``ArmHeadset``: VR controller poses at ``rate_hz`` (clutch held: the hand moves back and forth);
- ``TinoHeadset``: Unity packets at the pulse rate; ``press(state, angular)`` sends one action;
- ``ConsoleClient``: the page's WebSocket (a reader thread takes every frame; ``command`` returns
  the ack / reject of one command);
- ``StackWatch``: a node that records, with the wall time of arrival (``time.time()``), the arm's
  mode, EE pose, Tino's base / leg commands, the interaction state and the stop topics.

Wall-clock use only: tests assert behaviour with bounded waits, the benchmark measures.
"""
from __future__ import annotations

import json
import math
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from hri_runtime.geometry import matrix_from_pose
from hri_runtime.node import Node

from hri_safety.nodes.stop_listener import STOP_REQUEST_TOPIC, STOP_REQUEST_TYPE, STOP_TOPIC, STOP_TYPE

REPO = Path(__file__).resolve().parents[2]


def free_port(kind=socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait(cond: Callable[[], bool], what: str, timeout_s: float) -> None:
    """Poll ``cond`` until true; AssertionError naming ``what`` after ``timeout_s``."""
    end = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.01)


def stack_launch(path: Path, arm_output: str, udp_arm: int, udp_tino: int, http: int) -> Path:
    """Write the combined stack's launch file to ``path``."""
    path.write_text(f"""launch:
  - include:
      file: {REPO / "launch" / "fr3.launch.yaml"}
      arg: [{{name: vr_port, value: "{udp_arm}"}}, {{name: output, value: {arm_output}}}]
  - node: {{pkg: hri_pulse, exec: vr_interface_node, name: vr_interface, param: [{{name: robot, value: tino}}, {{name: pulse.udp.port, value: {udp_tino}}}]}}
  - node: {{pkg: hri_atomic_motion, exec: atomic_node, name: atomic, param: [{{name: robot, value: tino}}, {{name: atomic.node.driver, value: sim}}]}}
  - node: {{pkg: hri_console, exec: console_node, name: console, param: [{{name: robot, value: fr3}}, {{name: console.port, value: {http}}}]}}
""")
    return path


def start_router(hri: str, endpoint: str, log) -> subprocess.Popen:
    """``hri router --listen endpoint`` in its own process group (kill it with os.killpg)."""
    return subprocess.Popen([hri, "router", "--listen", endpoint], stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, cwd=REPO)


class ArmHeadset(threading.Thread):
    """VR controller poses (hri_arm_teleop's packet) while ``sending`` is set: the hand moves
    +-``amplitude_m`` along Unity y with period ``period_s``; ``clutch`` is what the button says."""

    def __init__(self, port: int, rate_hz: float = 50.0, amplitude_m: float = 0.04, period_s: float = 4.0):
        super().__init__(daemon=True)
        from hri_arm_teleop.core import vr_packet

        self._vp = vr_packet
        self.addr = ("127.0.0.1", port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sending = threading.Event()
        self.clutch = False
        self.quit = False
        self.seq = 0
        self.dt, self.amp, self.per = 1.0 / rate_hz, amplitude_m, period_s

    def run(self) -> None:
        t0 = time.monotonic()
        while not self.quit:
            t = time.monotonic() - t0
            if self.sending.is_set():
                y = 1.2 + self.amp * math.sin(2 * math.pi * t / self.per)
                pkt = self._vp.ControllerPose(self.seq, t, (0.0, y, 0.4), (0, 0, 0, 1), clutch=self.clutch)
                self.sock.sendto(self._vp.encode(pkt), self.addr)
                self.seq += 1
            time.sleep(self.dt)


class TinoHeadset(threading.Thread):
    """Unity command packets (hri_pulse's 32-byte format) at ``rate_hz`` while ``sending`` is set;
    ``press(state, angular)`` sends one action as ``press_packets`` packets."""

    def __init__(self, port: int, rate_hz: float, press_packets: int):
        super().__init__(daemon=True)
        from hri_pulse.core.codec import UNITY_FORMAT

        self._pack = struct.Struct(UNITY_FORMAT).pack
        self.addr = ("127.0.0.1", port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sending = threading.Event()
        self.period = 1.0 / rate_hz
        self.press_packets = press_packets
        self._pending = 0
        self._action = (0, 0)
        self._lock = threading.Lock()
        self.quit = False
        self.seq = 0

    def press(self, state: int, angular: int = 0) -> None:
        with self._lock:
            self._action, self._pending = (state, angular), self.press_packets

    def run(self) -> None:
        while not self.quit:
            if self.sending.is_set():
                with self._lock:
                    state, ang = self._action if self._pending > 0 else (0, 0)
                    self._pending = max(0, self._pending - 1)
                self.sock.sendto(self._pack(0.0, 0.0, 0.0, state, ang, 50.0, 0.0, self.seq), self.addr)
                self.seq = (self.seq + 1) % (1 << 31)
            time.sleep(self.period)


class ConsoleClient:
    """The console page's WebSocket. A reader thread consumes every frame (the server disconnects
    clients that do not read); ``command`` sends one command and returns its ack / reject;
    ``sent_at[id]`` is the wall time just before the send (the "click")."""

    def __init__(self, port: int, timeout_s: float):
        from websockets.sync.client import connect

        self.timeout_s = timeout_s
        self.ws = connect(f"ws://127.0.0.1:{port}/ws", open_timeout=timeout_s, ping_interval=None).__enter__()
        self.n = 0
        self.replies: dict = {}
        self.sent_at: dict = {}
        self.closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            while True:
                m = json.loads(self.ws.recv())
                if m.get("type") in ("ack", "reject"):
                    self.replies[m.get("id")] = m
        except Exception:  # noqa: BLE001  (the connection closed)
            self.closed = True

    def command(self, kind: str, **fields) -> dict:
        self.n += 1
        n = self.n
        self.sent_at[n] = time.time()
        self.ws.send(json.dumps({"type": kind, "id": n, **fields}))
        wait(lambda: n in self.replies or self.closed, f"the reply to {kind}", self.timeout_s)
        assert n in self.replies, f"console connection closed before the reply to {kind}"
        return self.replies[n]

    def close(self) -> None:
        self.ws.close()


class StackWatch(Node):
    """Records ``(wall time of arrival, value)`` of the outputs that show a stop."""

    def __init__(self, fr3: dict, tino: dict, **kw):
        super().__init__("stop_drill_watch", **kw)
        T = tino["atomic"]["topics"]
        self.lock = threading.Lock()
        self.modes, self.ee, self.twist, self.rpm = [], [], [], []
        self.stops, self.requests, self.frozen = [], [], []
        self.create_subscription("hri_interfaces/msg/TeleopMode", fr3["teleop"]["topics"]["mode"],
                                 lambda m: self._add(self.modes, m.mode), qos=100)
        self.create_subscription("geometry_msgs/msg/PoseStamped", fr3["teleop"]["topics"]["ee_pose"],
                                 lambda m: self._add(self.ee, matrix_from_pose(m)[:3, 3].copy()), qos=100)
        self.create_subscription("hri_interfaces/msg/InteractionState", fr3["interaction"]["topics"]["state"],
                                 lambda m: self._add(self.frozen, m.frozen), qos=100)
        self.create_subscription("geometry_msgs/msg/Twist", T["cmd_vel"],
                                 lambda m: self._add(self.twist, (m.linear.x, m.angular.z)), qos=1000)
        self.create_subscription("std_msgs/msg/Float64", T["leg_rpm"], lambda m: self._add(self.rpm, m.data),
                                 qos=1000)
        self.create_subscription(STOP_TYPE, STOP_TOPIC,
                                 lambda m: self._add(self.stops, (m.stopped, list(m.sources), m.reset_count)),
                                 qos="latched")
        self.create_subscription(STOP_REQUEST_TYPE, STOP_REQUEST_TOPIC,
                                 lambda m: self._add(self.requests, m.source), qos=100)

    def _add(self, lst: list, item) -> None:
        with self.lock:
            lst.append((time.time(), item))

    def since(self, lst: list, t0: float) -> list:
        with self.lock:
            return [x for t, x in lst if t >= t0]

    def first(self, lst: list, t0: float, pred: Callable) -> Optional[float]:
        """Arrival time of the first value after ``t0`` for which ``pred`` holds."""
        with self.lock:
            return next((t for t, x in lst if t >= t0 and pred(x)), None)

    def last(self, lst: list):
        with self.lock:
            return lst[-1][1] if lst else None


def arm_moved(ee: list) -> float:
    """Largest distance (m) of the EE from its first position in ``ee``."""
    return max((math.dist(p, ee[0]) for p in ee), default=0.0)


def base_moving(twists: list) -> bool:
    return any(abs(v) > 1e-6 or abs(w) > 1e-6 for v, w in twists)


class Stack:
    """The combined stack with its own router, the headsets, the console client and a watch.

        with Stack(tmp_dir, "cartesian", timeout_s=60) as st:
            st.drive()                                  # arm follows the hand, base drives
            st.console.command("safe_stop")
            t_kill = st.kill_router(); st.restart_router()
            st.stop_log_times("atomic", "stop_heartbeat_timeout", t_kill)

    ``actuators``: the nodes that hold / zero on a stop (their "SYSTEM STOP" log lines)."""

    def __init__(self, tmp: Path, arm_output: str, timeout_s: float, hri: Optional[str] = None):
        from hri_runtime.config.tree import load_robot_config

        self.tmp, self.arm_output, self.timeout_s = Path(tmp), arm_output, timeout_s
        self.hri = hri or str(Path(sys.executable).with_name("hri"))
        self.tino, self.fr3 = load_robot_config("tino"), load_robot_config("fr3")
        self.endpoint = f"tcp/127.0.0.1:{free_port()}"
        self.udp_arm, self.udp_tino = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_DGRAM)
        self.http = free_port()
        self.launch = stack_launch(self.tmp / "stack.launch.yaml", arm_output, self.udp_arm, self.udp_tino,
                                   self.http)
        self.actuators = ("atomic", "arm_teleop") + (("interaction",) if arm_output == "cartesian" else ())
        self.log_path = self.tmp / "launch.log"
        self._rlog = open(self.tmp / "router.log", "w")
        self._llog = open(self.log_path, "w")
        self.router = self.launcher = self.ctx = self.watch = self.arm = self.tino_hs = self.console = None

    def wait(self, cond: Callable[[], bool], what: str) -> None:
        wait(cond, what, self.timeout_s)

    def __enter__(self) -> "Stack":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams, router_answers

        self.router = start_router(self.hri, self.endpoint, self._rlog)
        self.wait(lambda: router_answers(self.endpoint, 0.5), "the router")
        env = dict(os.environ, HRI_TRANSPORT="zenoh", HRI_ZENOH_CONNECT=f"[{self.endpoint}]")
        self.launcher = subprocess.Popen([self.hri, "launch", "--transport", "zenoh", "--router", self.endpoint,
                                          str(self.launch)], env=env, stdout=self._llog, stderr=subprocess.STDOUT,
                                         start_new_session=True, cwd=REPO)
        self.ctx = ZenohContext(ZenohParams.defaults().with_(connect_endpoints=[self.endpoint]))
        w = self.watch = StackWatch(self.fr3, self.tino, context=self.ctx)
        self.ctx.spin_in_background()
        e = self.tino["pulse"]["emulator"]
        self.arm = ArmHeadset(self.udp_arm)
        self.tino_hs = TinoHeadset(self.udp_tino, e["rate_hz"], e["press_packets"])
        self.arm.start()
        self.tino_hs.start()
        self.wait(lambda: w.ee and w.twist and w.stops and w.last(w.stops)[0] is False, "the stack up, not stopped")
        self.console = ConsoleClient(self.http, self.timeout_s)

    def headsets(self, on: bool) -> None:
        for hs in (self.arm, self.tino_hs):
            (hs.sending.set if on else hs.sending.clear)()

    def drive(self, arm_m: float = 0.005) -> None:
        """Both headsets on, the clutch released then engaged (a fresh engage, as after a stop),
        a state-3 base pulse; returns once the EE moved ``arm_m`` and the base drives."""
        w = self.watch
        self.arm.clutch = False
        self.headsets(True)
        time.sleep(0.4)
        self.arm.clutch = True
        self.tino_hs.press(3, 0)
        t = time.time()
        self.wait(lambda: arm_moved(w.since(w.ee, t)) > arm_m, "the arm following the hand")
        self.wait(lambda: base_moving(w.since(w.twist, t)), "the base driving")

    def kill_router(self) -> float:
        """SIGKILL the router; returns the wall time just before."""
        t = time.time()
        os.killpg(self.router.pid, signal.SIGKILL)
        self.router.wait(10)
        return t

    def restart_router(self) -> None:
        from hri_runtime.impl.zenoh_backend import router_answers

        self.router = start_router(self.hri, self.endpoint, self._rlog)
        self.wait(lambda: router_answers(self.endpoint, 0.5), "the router back")
        t = time.time()
        self.wait(lambda: self.watch.since(self.watch.stops, t), "the stop state through the new router")

    def release(self, retry_s: float = 0.0) -> dict:
        """The console's RESET; waits until the supervisor publishes not stopped. ``retry_s``:
        repeat a reset the supervisor refuses (a cause still present, e.g. a headset reconnecting)
        or the console cannot reach yet (its service client rediscovering after a router restart)
        for that long."""
        end = time.monotonic() + retry_s
        r = self.console.command("release_stop")
        while r.get("cause") in ("service_refused", "unavailable") and time.monotonic() < end:
            time.sleep(0.2)
            r = self.console.command("release_stop")
        assert r["type"] == "ack", r
        self.wait(lambda: self.watch.last(self.watch.stops)[0] is False, "the supervisor released")
        return r

    def stop_log_times(self, node: str, reason: str, t_from: float) -> list[float]:
        """Wall times of ``node``'s "SYSTEM STOP: <reason>" log lines at or after ``t_from``."""
        text = self.log_path.read_text()
        return [float(t) for t in re.findall(rf"\[(\d+\.\d+)\] \[{node}\]: SYSTEM STOP: {re.escape(reason)}", text)
                if float(t) >= t_from]

    def close(self) -> None:
        for hs in (self.arm, self.tino_hs):
            if hs is not None:
                hs.quit = True
        if self.console is not None:
            self.console.close()
        if self.ctx is not None:
            self.ctx.shutdown()
            self.ctx.close()
        if self.launcher is not None:
            os.killpg(self.launcher.pid, signal.SIGINT)
            try:
                self.launcher.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.launcher.pid, signal.SIGKILL)
        if self.router is not None:
            try:
                os.killpg(self.router.pid, signal.SIGINT)
                self.router.wait(10)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(self.router.pid, signal.SIGKILL)
        self._llog.close()
        self._rlog.close()
        self.console = self.ctx = self.launcher = self.router = None
