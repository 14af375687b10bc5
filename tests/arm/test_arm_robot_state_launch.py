"""`hri launch launch/fr3.launch.yaml` on the real Zenoh transport (router in-process on a free
loopback port) publishes what a ROS user's RViz / Foxglove needs: /joint_states (every joint with
position, velocity, effort, from the interaction loop's simulation), /robot_description and
/tf_static (latched: a subscriber that comes late gets them), and /tf moving the links; the EE
frame chained through /tf_static and /tf is where /ee_pose says the EE is."""
from __future__ import annotations

import socket
import threading
import xml.etree.ElementTree as ET

import numpy as np

import zenoh  # noqa: F401  (required: a missing install fails here)

from hri_runtime.node import Node  # noqa: E402
from hri_runtime.qos import QOS_LATCHED  # noqa: E402

from ..stack_launch import LaunchedStack, free_port, wait_for  # noqa: E402

JOINTS = [f"fr3_joint{i}" for i in range(1, 8)]


def _matrix(tr) -> np.ndarray:
    from hri_sim.core.urdf import quat_to_matrix

    t = np.eye(4)
    q = tr.rotation
    t[:3, :3] = quat_to_matrix((q.w, q.x, q.y, q.z))
    t[:3, 3] = (tr.translation.x, tr.translation.y, tr.translation.z)
    return t


class StateProbe(Node):
    def __init__(self, **kw):
        super().__init__("robot_state_probe", **kw)
        self.lock = threading.Lock()
        self.js, self.desc, self.ee = [], [], []
        self.tf: dict = {}
        self.tf_static: dict = {}
        self.create_subscription("sensor_msgs/msg/JointState", "/joint_states", self._on(self.js), qos=10)
        self.create_subscription("geometry_msgs/msg/PoseStamped", "/ee_pose", self._on(self.ee), qos=10)
        self.create_subscription("tf2_msgs/msg/TFMessage", "/tf", self._tf(self.tf), qos=100)
        # late subscribers (created after the stack published once): only the latch can answer
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


def test_fr3_launch_publishes_joint_states_robot_description_and_tf():
    with LaunchedStack("fr3.launch.yaml", f"vr_port:={free_port(socket.SOCK_DGRAM)}") as stack:
        ctx = stack.ctx
        # wait until the stack has been up (its /ee_pose flows) before the late subscriptions exist
        first = stack.add(Node("ee_watch", context=ctx))
        ee = []
        first.create_subscription("geometry_msgs/msg/PoseStamped", "/ee_pose", ee.append, qos=10)
        ctx.spin_in_background()
        assert wait_for(lambda: len(ee) > 0), "no /ee_pose from the stack"
        probe = stack.add(StateProbe(context=ctx))
        links = {f"fr3_link{i}" for i in range(1, 8)}
        done = lambda: probe.desc and probe.tf_static and links <= set(probe.tf) and len(probe.js) >= 20  # noqa: E731
        assert wait_for(done), (len(probe.desc), sorted(probe.tf_static), sorted(probe.tf), len(probe.js))
        with probe.lock:
            js = list(probe.js)
            tf, static, desc = dict(probe.tf), dict(probe.tf_static), probe.desc[-1].data
            ee_pose = probe.ee[-1] if probe.ee else ee[-1]
        for m in js:
            assert list(m.name) == JOINTS
            assert len(m.position) == len(m.velocity) == len(m.effort) == 7
            assert np.all(np.isfinite(m.position)) and np.all(np.isfinite(m.effort))
        stamps = [m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in js]
        assert all(b > a for a, b in zip(stamps, stamps[1:]))          # a stream, not one repeated sample
        robot = ET.fromstring(desc)
        assert robot.get("name") == "fr3"
        assert {j.get("name") for j in robot.findall("joint") if j.get("type") == "revolute"} == set(JOINTS)
        # chain fr3_base -> fr3_ee through /tf_static and /tf; the arm holds at home, so that is /ee_pose
        parents = {c: t for c, t in {**static, **tf}.items()}
        t, frame = np.eye(4), "fr3_ee"
        while frame != "fr3_base":
            step = parents[frame]
            t = _matrix(step.transform) @ t
            frame = step.header.frame_id
        p = ee_pose.pose.position
        assert ee_pose.header.frame_id == "fr3_base"
        assert np.linalg.norm(t[:3, 3] - [p.x, p.y, p.z]) < 2e-3, (t[:3, 3], p)
    assert "Traceback" not in stack.text, stack.text
