"""Tino's URDF (hri_sim.core.urdf from the model the Tino simulation steps, hri_sim.tino.tino_model):
rooted at the base body (the planar base is odom -> base on /tf, not a joint), every joint of
joints.names with the config's velocity / effort limits, parses with urdfdom's check_urdf and with
Pinocchio, and its forward kinematics equal MuJoCo's to 1e-9 on 1000 random configurations."""
from __future__ import annotations

import math
import subprocess
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest

from hri_runtime.config.tree import load_robot_config
from hri_sim.core.robot_state import UrdfTree
from hri_sim.core.urdf import urdf_from_mujoco
from hri_sim.tino import TinoSimParams, tino_model

from .test_sim_urdf import _check_urdf

N_CONFIGS = 1000
TOL = 1e-9


@pytest.fixture(scope="module")
def tino():
    cfg = load_robot_config("tino")
    j = cfg["joints"]
    movable = {n: (math.radians(v), e) for n, v, e in zip(j["names"], j["velocity_max_deg_s"], j["torque_max_nm"])}
    model = tino_model(TinoSimParams.from_tree(cfg))
    text = urdf_from_mujoco(model, robot_name="tino", root_link=cfg["frames"]["base"], root_body="base",
                            ee_site=None, ee_link=cfg["frames"]["ee"], movable=movable, mesh_uri=str)
    return cfg, model, text


def test_config_names_every_joint_of_the_model_but_the_planar_base(tino):
    cfg, model, _ = tino
    names = list(cfg["joints"]["names"])
    assert cfg["robot"]["dof"] == len(names)
    hinges = {model.joint(j).name for j in range(model.njnt)} - {"base_x", "base_y", "base_yaw"}
    assert set(names) == hinges


def test_check_urdf_parses_tino(tino, tmp_path):
    cfg, model, text = tino
    f = tmp_path / "tino.urdf"
    f.write_text(text)
    out = subprocess.run([_check_urdf(), str(f)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"root Link: {cfg['frames']['base']}" in out.stdout
    for n in ("leg", "wheel_left", "wheel_right", "torso", "head", "head_tilt_link", "head_pitch_link"):
        assert n in out.stdout


def test_root_link_is_the_base_body_with_its_inertia_and_no_floor(tino):
    cfg, model, text = tino
    root = ET.fromstring(text)
    links = {l.get("name"): l for l in root.findall("link")}
    assert "world" not in links and "base" not in links
    base = links[cfg["frames"]["base"]]
    b = model.body("base").id
    assert float(base.find("inertial/mass").get("value")) == pytest.approx(model.body_mass[b], rel=1e-15)
    assert len(base.findall("visual")) == 2           # chassis and caster; the floor plane is not the robot's
    joints = {j.get("name"): j for j in root.findall("joint")}
    assert not {"base_x", "base_y", "base_yaw"} & set(joints)


def test_limits_from_the_config_and_the_model(tino):
    cfg, model, text = tino
    joints = {j.get("name"): j for j in ET.fromstring(text).findall("joint")}
    j = cfg["joints"]
    for n, v, e in zip(j["names"], j["velocity_max_deg_s"], j["torque_max_nm"]):
        el = joints[n]
        lim = el.find("limit")
        assert float(lim.get("velocity")) == pytest.approx(math.radians(v)) and float(lim.get("effort")) == e
        jid = model.joint(n).id
        if model.jnt_limited[jid]:
            assert el.get("type") == "revolute"
            assert (float(lim.get("lower")), float(lim.get("upper"))) == tuple(model.jnt_range[jid])
        else:
            assert el.get("type") == "continuous"      # the wheels
    assert {n for n, el in joints.items() if el.get("type") == "continuous"} == {"wheel_left", "wheel_right"}


def _mj_link_poses(model, data, bodies):
    b0 = model.body("base").id
    w_T_base = np.eye(4)
    w_T_base[:3, :3] = data.xmat[b0].reshape(3, 3)
    w_T_base[:3, 3] = data.xpos[b0]
    inv = np.linalg.inv(w_T_base)
    out = {}
    for name in bodies:
        b = model.body(name).id
        t = np.eye(4)
        t[:3, :3] = data.xmat[b].reshape(3, 3)
        t[:3, 3] = data.xpos[b]
        out[name] = inv @ t
    return out


def test_forward_kinematics_equal_mujoco(tino):
    cfg, model, text = tino
    tree = UrdfTree.parse(text)
    names = list(cfg["joints"]["names"])
    assert [j.name for j in tree.movable] == names
    data = mujoco.MjData(model)
    bodies = [model.body(b).name for b in range(2, model.nbody)]      # every body below the base
    rng = np.random.default_rng(29)
    worst = 0.0
    for _ in range(N_CONFIGS):
        data.qpos[:] = model.qpos0
        q = {}
        for n in names:
            jid = model.joint(n).id
            lo, hi = model.jnt_range[jid] if model.jnt_limited[jid] else (-math.pi, math.pi)
            q[n] = float(rng.uniform(lo, hi))
            data.qpos[model.jnt_qposadr[jid]] = q[n]
        for n in ("base_x", "base_y", "base_yaw"):     # anywhere on the floor: relative poses are the same
            data.qpos[model.joint(n).qposadr[0]] = rng.uniform(-3, 3)
        mujoco.mj_kinematics(model, data)
        mj = _mj_link_poses(model, data, bodies)
        for name in bodies:
            worst = max(worst, float(np.abs(tree.link_pose(name, q) - mj[name]).max()))
    assert worst < TOL, worst


def test_pinocchio_reads_tino_with_the_same_kinematics(tino):
    import pinocchio as pin
    cfg, model, text = tino
    pm = pin.buildModelFromXML(text)
    pd = pm.createData()
    tree = UrdfTree.parse(text)
    names = list(cfg["joints"]["names"])
    rng = np.random.default_rng(7)
    for _ in range(100):
        q = pin.neutral(pm)
        qs = {}
        for n in names:
            v = float(rng.uniform(-1, 1))
            jm = pm.joints[pm.getJointId(n)]
            if jm.nq == 2:                              # continuous joint: (cos, sin)
                q[jm.idx_q], q[jm.idx_q + 1] = math.cos(v), math.sin(v)
            else:
                q[jm.idx_q] = v
            qs[n] = v
        pin.framesForwardKinematics(pm, pd, q)
        for link in ("head_pitch_link", "leg", "wheel_left"):
            fid = pm.getFrameId(link, pin.FrameType.BODY)
            assert np.abs(pd.oMf[fid].homogeneous - tree.link_pose(link, qs)).max() < TOL


def test_a_root_body_or_site_the_model_lacks_is_refused(tino):
    cfg, model, _ = tino
    kw = dict(robot_name="tino", root_link="r", ee_link="e", movable={}, mesh_uri=str)
    with pytest.raises(ValueError, match="root body"):
        urdf_from_mujoco(model, ee_site=None, root_body="nope", **kw)
    with pytest.raises(ValueError, match="not on the robot"):
        model2 = mujoco.MjModel.from_xml_string(
            '<mujoco><worldbody><site name="s"/><body name="b"><joint type="hinge"/>'
            '<geom size="0.1" mass="1"/></body></worldbody></mujoco>')
        urdf_from_mujoco(model2, ee_site="s", root_body="b", **kw)


def test_robot_state_node_turns_odometry_into_odom_to_base_and_rejects_a_bad_one():
    from hri_runtime import msgs
    from hri_runtime.inproc import InprocContext
    from hri_runtime.node import Node
    from hri_sim.nodes.robot_state_node import RobotStateNode

    ctx = InprocContext(start_time_s=0.0)
    node = RobotStateNode(context=ctx, parameters={"robot": "tino"})
    cfg = load_robot_config("tino")
    probe = Node("tf_probe", context=ctx)
    tf = []
    probe.create_subscription("tf2_msgs/msg/TFMessage", "/tf", lambda m: tf.extend(m.transforms), qos=100)
    pub = probe.create_publisher("nav_msgs/msg/Odometry", cfg["atomic"]["topics"]["odom"], qos=10)

    def odom(x, yaw):
        return msgs.new("nav_msgs/msg/Odometry", header=msgs.new("std_msgs/msg/Header", frame_id="odom"),
                        child_frame_id=cfg["frames"]["base"], pose=msgs.new(
                            "geometry_msgs/msg/PoseWithCovariance", pose=msgs.new(
                                "geometry_msgs/msg/Pose", position=msgs.new("geometry_msgs/msg/Point", x=x, z=0.05),
                                orientation=msgs.new("geometry_msgs/msg/Quaternion", z=math.sin(yaw / 2),
                                                     w=math.cos(yaw / 2)))))
    pub.publish(odom(1.5, 0.4))
    pub.publish(odom(float("nan"), 0.0))
    ctx.spin_for(0.05)
    assert [(t.header.frame_id, t.child_frame_id) for t in tf] == [("odom", cfg["frames"]["base"])]
    tr = tf[0].transform
    assert (tr.translation.x, tr.translation.z) == (1.5, 0.05)
    assert 2 * math.atan2(tr.rotation.z, tr.rotation.w) == pytest.approx(0.4, abs=1e-12)
    assert node.rejected_count(cfg["atomic"]["topics"]["odom"], "bad_pose") == 1
    node.destroy_node()
