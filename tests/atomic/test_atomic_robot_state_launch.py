"""`hri launch launch/tino.launch.yaml` on the real Zenoh transport publishes what a ROS user's RViz /
Foxglove needs for Tino: /joint_states (every joint of joints.names with position, velocity, effort,
from the Tino simulation), /robot_description and /tf_static (latched: a late subscriber gets
them), /tf for the movable joints, and odom -> base from the simulated base pose, so the head
frame chained through /tf and /tf_static sits where the URDF puts it on the moving base."""
from __future__ import annotations

import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

import zenoh  # noqa: F401  (required: a missing install fails here)

from hri_runtime.config import load_robot_config  # noqa: E402
from hri_runtime.node import Node  # noqa: E402
from hri_runtime.qos import QOS_LATCHED  # noqa: E402
from hri_runtime.zenoh_backend import ZenohContext, ZenohParams, router_answers  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 40.0


def free_port(kind=socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait(cond, what):
    end = time.monotonic() + WAIT_S
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def _matrix(tr) -> np.ndarray:
    from hri_sim.core.urdf import quat_to_matrix

    t = np.eye(4)
    q = tr.rotation
    t[:3, :3] = quat_to_matrix((q.w, q.x, q.y, q.z))
    t[:3, 3] = (tr.translation.x, tr.translation.y, tr.translation.z)
    return t


class StateProbe(Node):
    def __init__(self, odom_topic, **kw):
        super().__init__("tino_state_probe", **kw)
        self.lock = threading.Lock()
        self.js, self.desc, self.odom = [], [], []
        self.tf: dict = {}
        self.tf_static: dict = {}
        self.create_subscription("sensor_msgs/msg/JointState", "/joint_states", self._on(self.js), qos=100)
        self.create_subscription("nav_msgs/msg/Odometry", odom_topic, self._on(self.odom), qos=100)
        self.create_subscription("tf2_msgs/msg/TFMessage", "/tf", self._tf(self.tf), qos=100)
        self.create_subscription("std_msgs/msg/String", "/robot_description", self._on(self.desc), qos=QOS_LATCHED)
        self.create_subscription("tf2_msgs/msg/TFMessage", "/tf_static", self._tf(self.tf_static), qos=QOS_LATCHED)

    def _on(self, store):
        def cb(m):
            with self.lock:
                store.append(m)
        return cb

    def _tf(self, store):
        def cb(m):
            with self.lock:
                for t in m.transforms:
                    store[t.child_frame_id] = t
        return cb


def test_tino_launch_publishes_joint_states_robot_description_and_tf():
    cfg = load_robot_config("tino")
    names, base = list(cfg["joints"]["names"]), cfg["frames"]["base"]
    ep = f"tcp/127.0.0.1:{free_port()}"
    env = dict(os.environ, HRI_TRANSPORT="zenoh", HRI_ZENOH_ROUTER_LISTEN=f"[{ep}]", HRI_ZENOH_CONNECT=f"[{ep}]")
    launcher = subprocess.Popen([sys.executable, "-m", "hri_runtime.cli", "launch", "--router", ep,
                                 str(ROOT / "launch/tino.launch.yaml"), f"vr_port:={free_port(socket.SOCK_DGRAM)}"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    ctx = probe = None
    try:
        wait(lambda: launcher.poll() is None and router_answers(ep, 0.5), "the launcher's router")
        ctx = ZenohContext(ZenohParams.defaults().with_(connect_endpoints=[ep]))
        first = Node("js_watch", context=ctx)
        js0 = []
        first.create_subscription("sensor_msgs/msg/JointState", "/joint_states", js0.append, qos=10)
        ctx.spin_in_background()
        wait(lambda: len(js0) > 0, "/joint_states from tino_sim")
        time.sleep(0.5)                   # robot_state is up too (it starts with the others)
        probe = StateProbe(cfg["atomic"]["topics"]["odom"], context=ctx)   # late: only the latch answers
        links = {"leg", "wheel_left", "wheel_right", "head", "head_tilt_link", "head_pitch_link"}
        wait(lambda: probe.desc and probe.tf_static and (links | {base}) <= set(probe.tf) | set(probe.tf_static)
             and len(probe.js) >= 20 and probe.odom,
             "description, static and moving TF, joint states and odometry")
        with probe.lock:
            js, tf, static, desc, odom = list(probe.js), dict(probe.tf), dict(probe.tf_static), probe.desc[-1].data, \
                probe.odom[-1]
        for m in js:
            assert list(m.name) == names
            assert len(m.position) == len(m.velocity) == len(m.effort) == len(names)
            assert np.all(np.isfinite(m.position)) and np.all(np.isfinite(m.velocity)) and np.all(np.isfinite(m.effort))
        stamps = [m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in js]
        assert all(b > a for a, b in zip(stamps, stamps[1:]))
        robot = ET.fromstring(desc)
        assert robot.get("name") == "tino"
        assert {j.get("name") for j in robot.findall("joint") if j.get("type") != "fixed"} == set(names)
        # odom -> base from the simulated base pose (the odometry's frames)
        ob = tf[base]
        assert ob.header.frame_id == odom.header.frame_id == "odom" and odom.child_frame_id == base
        assert abs(ob.transform.translation.z - odom.pose.pose.position.z) < 1e-9
        assert ob.transform.translation.z > 0.0                  # the base frame above the floor
        # head pitch link: chained through /tf and /tf_static up to odom
        parents = {**static, **tf}
        t, frame = np.eye(4), "head_pitch_link"
        chain = []
        while frame != "odom":
            step = parents[frame]
            t = _matrix(step.transform) @ t
            chain.append(frame)
            frame = step.header.frame_id
        assert base in chain and "head" in chain
        assert math.isfinite(t[2, 3]) and t[2, 3] > 0.3       # the head is on top of the robot
    finally:
        if ctx is not None:
            ctx.shutdown()
            if probe is not None:
                probe.destroy_node()
            ctx.close()
        launcher.send_signal(signal.SIGINT)
        text, _ = launcher.communicate(timeout=WAIT_S)
    assert "Traceback" not in text, text
