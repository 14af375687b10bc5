"""`hri launch launch/tino.launch.yaml` on the real Zenoh transport publishes what a ROS user's RViz /
Foxglove needs for Tino: /joint_states (every joint of joints.names with position, velocity, effort,
from the Tino simulation), /robot_description and /tf_static (latched: a late subscriber gets
them), /tf for the movable joints, and odom -> base from the simulated base pose, so the head
frame chained through /tf and /tf_static sits where the URDF puts it on the moving base."""
from __future__ import annotations

import math
import socket
import time
import xml.etree.ElementTree as ET

import numpy as np

import zenoh  # noqa: F401  (required: a missing install fails here)

from hri_runtime.config.tree import load_robot_config  # noqa: E402
from hri_runtime.node import Node  # noqa: E402

from ..stack_launch import LaunchedStack, free_port, wait_for  # noqa: E402
from ..arm.test_arm_robot_state_launch import StateProbe, _matrix  # noqa: E402


def test_tino_launch_publishes_joint_states_robot_description_and_tf():
    cfg = load_robot_config("tino")
    names, base = list(cfg["joints"]["names"]), cfg["frames"]["base"]
    odom = []
    with LaunchedStack("tino.launch.yaml", f"vr_port:={free_port(socket.SOCK_DGRAM)}") as stack:
        ctx = stack.ctx
        first = stack.add(Node("js_watch", context=ctx))
        js0 = []
        first.create_subscription("sensor_msgs/msg/JointState", "/joint_states", js0.append, qos=10)
        ctx.spin_in_background()
        assert wait_for(lambda: len(js0) > 0), "no /joint_states from tino_sim"
        time.sleep(0.5)                   # robot_state is up too (it starts with the others)
        probe = stack.add(StateProbe(context=ctx))   # late: only the latches answer /robot_description and /tf_static
        probe.create_subscription("nav_msgs/msg/Odometry", cfg["atomic"]["topics"]["odom"], odom.append, qos=100)
        links = {"leg", "wheel_left", "wheel_right", "head", "head_tilt_link", "head_pitch_link"}
        frames = links | {base}
        assert wait_for(lambda: probe.desc and probe.tf_static and frames <= set(probe.tf) | set(probe.tf_static)
                        and len(probe.js) >= 20 and odom), \
            "no description, static and moving TF, joint states and odometry"
        with probe.lock:
            js, tf, static, desc = list(probe.js), dict(probe.tf), dict(probe.tf_static), probe.desc[-1].data
        odom = odom[-1]
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
    assert "Traceback" not in stack.text, stack.text
