"""The arm stack on the real Zenoh transport, separate processes: `hri launch
launch/fr3.launch.yaml` (router in-process on a free loopback port; the stop supervisor, the
`arm_teleop` node (cartesian output) and the `interaction` node running the C++ real-time loop
with the MuJoCo FR3 inside) + the scripted VR operator of `hri arm-emulate` over real UDP: the
arm draws the first clutch stroke (-y in the base frame) through /interaction/reference; a mode
switch on /interaction/mode (what the console sends) reaches the loop; a SAFE STOP request holds
the arm. The nodes run on wall-clock time, so waits are bounded guards; only where the arm went
and what the nodes report is asserted, never how long it took."""
from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest

import zenoh  # noqa: F401  (required: a missing install fails here)

from hri_runtime.node import Node  # noqa: E402
from hri_runtime.qos import QoSProfile  # noqa: E402

from ..stack_launch import LaunchedStack, free_port, wait_for  # noqa: E402


class Probe(Node):
    def __init__(self, **kw):
        super().__init__("arm_e2e_probe", **kw)
        self.lock = threading.Lock()
        self.ee, self.modes, self.states = [], [], []
        self.create_subscription("hri_interfaces/msg/InteractionState", "/interaction/state", self.on_state, qos=10)
        self.mode_pub = self.create_publisher("std_msgs/msg/String", "/interaction/mode", qos=10)
        self.stop_pub = self.create_publisher("hri_interfaces/msg/StopRequest", "/safety/stop_request", qos=10)
        self.create_subscription("geometry_msgs/msg/PoseStamped", "/ee_pose", self.on_ee, qos=10)
        # latched: a late joiner still reads the mode arm_teleop published before discovery
        self.create_subscription("hri_interfaces/msg/TeleopMode", "/teleop/mode", self.on_mode,
                                 qos=QoSProfile(depth=10, durability="transient_local"))

    def on_ee(self, m):
        with self.lock:
            self.ee.append([m.pose.position.x, m.pose.position.y, m.pose.position.z])

    def on_state(self, m):
        with self.lock:
            self.states.append(m)

    def state(self):
        with self.lock:
            return self.states[-1] if self.states else None

    def on_mode(self, m):
        with self.lock:
            self.modes.append(m.mode)

    def last(self):
        with self.lock:
            return np.array(self.ee[-1]) if self.ee else None


@pytest.mark.parametrize("auth", [False, True], ids=["plain", "authenticated"])
def test_launch_plus_arm_emulate_moves_the_simulated_arm(auth, request):
    """``authenticated``: HRI_VR_AUTH=required and the key in HRI_VR_KEY_FILE (docs/protocols.md
    "Authentication"): the launched node and `hri arm-emulate` both take the key from the
    environment; an unsealed packet is dropped (bad_size)."""
    if auth:
        request.getfixturevalue("vr_keys")            # sets HRI_VR_AUTH / HRI_VR_KEY_FILE
    vr_port = free_port(socket.SOCK_DGRAM)
    with LaunchedStack("fr3.launch.yaml", f"vr_port:={vr_port}") as stack:
        probe = stack.add(Probe(context=stack.ctx))
        stack.spin()
        assert wait_for(lambda: probe.last() is not None), "no /ee_pose from the arm_teleop node"
        # the operator starts once arm_teleop has seen the stop released: a stroke streamed while it
        # still holds its start-up STOP is ignored (as on the real arm)
        assert wait_for(lambda: probe.modes and probe.modes[-1] == "HOLD"), f"arm_teleop not ready: {probe.modes}"
        p0 = probe.last()
        from hri_arm_teleop.emulate import main as emulate

        # 1 s settle, clutch pressed, then the hand moves -y at 5 cm/s: 10 cm in the 3 s after
        assert emulate(["--host", "127.0.0.1", "--port", str(vr_port), "--seconds", "3.2"]) == 0
        moved = lambda: (p := probe.last()) is not None and p0[1] - p[1] > 0.08  # noqa: E731
        assert wait_for(moved, 30.0), f"EE did not follow the stroke: {p0} -> {probe.last()}"
        p1 = probe.last()
        assert abs(p1[0] - p0[0]) < 0.005 and abs(p1[2] - p0[2]) < 0.005   # a straight stroke
        with probe.lock:
            modes = list(probe.modes)
        assert "TRACK" in modes and "SAFETY_HOLD" not in modes
        st = probe.state()
        assert st is not None and st.driver == "sim" and st.ticks > 1000 and st.energy_violations == 0
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:      # an unsealed 56-byte packet
            from hri_arm_teleop.core import vr_packet as vp

            s.sendto(vp.encode(vp.ControllerPose(10 ** 6, 0.0, (0.0, 1.2, 0.4), (0, 0, 0, 1))), ("127.0.0.1", vr_port))
        # the console's mode switch reaches the 1 kHz loop
        from hri_runtime import msgs

        probe.mode_pub.publish(msgs.new("std_msgs/msg/String", data="admittance"))
        assert wait_for(lambda: probe.state().mode == "admittance", 10.0), probe.state()
        # SAFE STOP: the loop holds (frozen), arm_teleop reads STOP, the arm stays where it is
        probe.stop_pub.publish(msgs.new("hri_interfaces/msg/StopRequest", source="console", reason="e2e test"))
        assert wait_for(lambda: bool(probe.state().frozen), 10.0), probe.state()
        assert wait_for(lambda: "STOP" in probe.modes, 10.0), probe.modes
        p_stop = probe.last()
        time.sleep(1.0)
        assert np.linalg.norm(probe.last() - p_stop) < 0.002
    text = stack.text
    assert "clutch engaged" in text and "SAFETY_HOLD" not in text, text
    assert ("packet dropped (bad_size)" in text) == auth, text
