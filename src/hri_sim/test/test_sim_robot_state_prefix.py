"""``robot_state.frame_prefix`` (robot_state_publisher's frame_prefix; docs/ros2-interop.md
"Namespaces"): two arms on one /tf. In a namespace the node's relative topics move with it, every
frame id it publishes on /tf and /tf_static carries the prefix, and the URDF keeps its link names."""
from __future__ import annotations

from hri_runtime import msgs
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node
from hri_runtime.qos import QOS_LATCHED

from hri_sim.nodes.robot_state_node import RobotStateNode


def test_frame_prefix_on_every_published_frame_in_the_nodes_namespace():
    ctx = InprocContext()
    node = RobotStateNode(context=ctx, namespace="left",
                          parameters={"robot": "fr3", "robot_state.frame_prefix": "left/"})
    probe = Node("probe", context=ctx)
    got = {"tf": [], "static": [], "desc": []}
    probe.create_subscription("tf2_msgs/msg/TFMessage", "/tf", got["tf"].append, qos=100)
    probe.create_subscription("tf2_msgs/msg/TFMessage", "/tf_static", got["static"].append, qos=QOS_LATCHED)
    probe.create_subscription("std_msgs/msg/String", "/left/robot_description", got["desc"].append, qos=QOS_LATCHED)
    js = probe.create_publisher("sensor_msgs/msg/JointState", "/left/joint_states", qos=10)
    ctx.spin_until(lambda: got["static"] and got["desc"], 10.0)
    joints = [j.name for j in node.tree.movable]
    js.publish(msgs.new("sensor_msgs/msg/JointState", name=joints, position=[0.1] * len(joints)))
    ctx.spin_until(lambda: got["tf"], 10.0)
    frames = [(t.header.frame_id, t.child_frame_id) for m in got["tf"] + got["static"] for t in m.transforms]
    assert frames and all(p.startswith("left/") and c.startswith("left/") for p, c in frames), frames[:4]
    links = {c[len("left/"):] for _, c in frames}
    urdf_links = {node.tree.root} | {j.child for j in node.tree.joints}
    assert links <= urdf_links and node.cfg["frames"]["ee"] in links
    assert "left/" not in got["desc"][-1].data                           # the URDF keeps its link names
    js.publish(msgs.new("sensor_msgs/msg/JointState", name=joints, position=[0.1] * len(joints)))
    n = len(got["tf"])
    other = probe.create_publisher("sensor_msgs/msg/JointState", "/joint_states", qos=10)   # another stack's
    other.publish(msgs.new("sensor_msgs/msg/JointState", name=joints, position=[0.2] * len(joints)))
    ctx.spin_for(0.2)
    assert len(got["tf"]) == n + 1                                        # only its own stack's joint states


def test_tino_odom_and_links_carry_the_prefix():
    """Two Tinos on one /tf: the base's odom -> base transform is prefixed like the links, so each
    robot's tree hangs from its own odom frame."""
    ctx = InprocContext()
    node = RobotStateNode(context=ctx, namespace="tino2",
                          parameters={"robot": "tino", "robot_state.frame_prefix": "tino2/"})
    probe = Node("probe", context=ctx)
    got = []
    probe.create_subscription("tf2_msgs/msg/TFMessage", "/tf", got.append, qos=100)
    odom = probe.create_publisher("nav_msgs/msg/Odometry", "/tino2/odom", qos=10)
    base = node.cfg["frames"]["base"]
    odom.publish(msgs.new("nav_msgs/msg/Odometry", header=msgs.new("std_msgs/msg/Header", frame_id="odom"),
                          child_frame_id=base, pose=msgs.new("geometry_msgs/msg/PoseWithCovariance", pose=msgs.new(
                              "geometry_msgs/msg/Pose", orientation=msgs.new("geometry_msgs/msg/Quaternion", w=1.0)))))
    ctx.spin_until(lambda: got, 10.0)
    frames = [(t.header.frame_id, t.child_frame_id) for m in got for t in m.transforms]
    assert frames == [("tino2/odom", f"tino2/{base}")]
