"""The URDF of each arm (hri_sim.core.urdf, from the MuJoCo model the simulation loads) parses with
urdfdom's check_urdf (and Pinocchio's reader when installed), and its forward kinematics through
the URDF tree (hri_sim.core.robot_state) equal MuJoCo's and the C++ core's (hri_core.kinematics)
to 1e-9 on 1000 random configurations per arm."""
from __future__ import annotations

import math
import os
import shutil
import subprocess
from pathlib import Path

import mujoco
import numpy as np
import pytest

from hri_core.kinematics import PoeModel
from hri_runtime.config.tree import list_arms, load_robot_config
from hri_sim.core.robot_state import UrdfError, UrdfTree, transform_tuple
from hri_sim.core.urdf import rpy_from_matrix, urdf_from_mujoco
from hri_sim.core.robot_state import rpy_to_matrix
from hri_sim.models import arm_asset_root, load_arm

ARMS = tuple(list_arms())   # every robot file of kind arm
N_CONFIGS = 1000
TOL = 1e-9


def _urdf(robot: str, uri=lambda p: Path(p).as_uri()):
    cfg = load_robot_config(robot)
    j = cfg["joints"]
    movable = {n: (math.radians(v), e) for n, v, e in zip(j["names"], j["velocity_max_deg_s"], j["torque_max_nm"])}
    model = load_arm(robot, actuation="torque")
    text = urdf_from_mujoco(model, robot_name=robot, root_link=cfg["frames"]["base"], ee_site="attachment_site",
                            ee_link=cfg["frames"]["ee"], movable=movable, mesh_uri=uri)
    return cfg, model, text


@pytest.fixture(scope="module", params=ARMS)
def arm(request):
    return (request.param, *_urdf(request.param))


def _check_urdf() -> str:
    exe = shutil.which("check_urdf")
    if exe is None:
        msg = "check_urdf ABSENT (apt-get install -y liburdfdom-tools): the urdfdom check did NOT run"
        if os.environ.get("CI"):
            pytest.fail(msg)          # a required tool in CI (.ci/run installs it)
        pytest.skip(msg)
    return exe


def test_check_urdf_parses_every_arm(arm, tmp_path):
    robot, cfg, model, text = arm
    f = tmp_path / f"{robot}.urdf"
    f.write_text(text)
    out = subprocess.run([_check_urdf(), str(f)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"root Link: {cfg['frames']['base']}" in out.stdout
    # every body of the model is a link; the EE link hangs below the flange body
    for b in range(1, model.nbody):
        assert model.body(b).name in out.stdout
    assert cfg["frames"]["ee"] in out.stdout


def test_check_urdf_rejects_a_broken_urdf(tmp_path):
    """The check can fail: a joint whose child link does not exist."""
    f = tmp_path / "bad.urdf"
    f.write_text('<robot name="x"><link name="a"/><joint name="j" type="fixed">'
                 '<parent link="a"/><child link="nowhere"/></joint></robot>')
    out = subprocess.run([_check_urdf(), str(f)], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0


def test_forward_kinematics_equal_mujoco_and_the_cpp_core(arm):
    robot, cfg, model, text = arm
    tree = UrdfTree.parse(text)
    names = list(cfg["joints"]["names"])
    assert [j.name for j in tree.movable] == names          # only the commanded joints move
    data = mujoco.MjData(model)
    site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, "attachment_site")
    poe = PoeModel.from_mujoco(model, "attachment_site", joints=names)
    qadr = [model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n)] for n in names]
    jids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in names]
    lo, hi = model.jnt_range[jids, 0], model.jnt_range[jids, 1]
    rng = np.random.default_rng(29)
    qs = rng.uniform(lo, hi, size=(N_CONFIGS, len(names)))
    poe_fk = poe.fk(qs)
    worst = {"mujoco": 0.0, "cpp": 0.0, "link": 0.0}
    bodies = [model.body(b).name for b in range(1, model.nbody)]
    for i, q in enumerate(qs):
        data.qpos[:] = model.qpos0
        data.qpos[qadr] = q
        mujoco.mj_kinematics(model, data)
        pos = dict(zip(names, q))
        t = tree.link_pose(cfg["frames"]["ee"], pos)
        mj = np.eye(4)
        mj[:3, :3] = data.site_xmat[site].reshape(3, 3)
        mj[:3, 3] = data.site_xpos[site]
        worst["mujoco"] = max(worst["mujoco"], float(np.abs(t - mj).max()))
        worst["cpp"] = max(worst["cpp"], float(np.abs(t - poe_fk[i]).max()))
        if i % 50 == 0:                                   # every link, not only the EE
            for b, name in enumerate(bodies, start=1):
                tl = tree.link_pose(name, pos)
                worst["link"] = max(worst["link"], float(np.abs(tl[:3, 3] - data.xpos[b]).max()),
                                    float(np.abs(tl[:3, :3] - data.xmat[b].reshape(3, 3)).max()))
    assert max(worst.values()) < TOL, worst


def test_the_fk_check_sees_a_wrong_joint_origin(arm):
    """Not vacuous: 1e-6 m on one joint origin is seen at the EE."""
    robot, cfg, model, text = arm
    tree = UrdfTree.parse(text)
    j = tree.movable[2]
    j.origin[0, 3] += 1e-6
    q = dict.fromkeys(cfg["joints"]["names"], 0.3)
    good = UrdfTree.parse(text)
    assert np.abs(tree.link_pose(cfg["frames"]["ee"], q) - good.link_pose(cfg["frames"]["ee"], q)).max() > 5e-7


def test_inertias_limits_and_meshes_come_from_the_model(arm):
    import xml.etree.ElementTree as ET

    robot, cfg, model, text = arm
    root = ET.fromstring(text)
    links = {l.get("name"): l for l in root.findall("link")}
    for b in range(1, model.nbody):
        inertial = links[model.body(b).name].find("inertial")
        if model.body_mass[b] > 0:
            assert float(inertial.find("mass").get("value")) == pytest.approx(model.body_mass[b], rel=1e-15)
            ine = inertial.find("inertia")
            assert [float(ine.get(k)) for k in ("ixx", "iyy", "izz")] == pytest.approx(model.body_inertia[b], rel=1e-15)
        else:
            assert inertial is None
    joints = {j.get("name"): j for j in root.findall("joint")}
    for n, v, e in zip(cfg["joints"]["names"], cfg["joints"]["velocity_max_deg_s"], cfg["joints"]["torque_max_nm"]):
        lim = joints[n].find("limit")
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n)
        if model.jnt_limited[jid]:
            assert float(lim.get("lower")) == model.jnt_range[jid, 0] and float(lim.get("upper")) == model.jnt_range[jid, 1]
        else:                               # an unlimited hinge (the Gen3's joints 1, 3, 5, 7)
            assert joints[n].get("type") == "continuous" and lim.get("lower") is None and lim.get("upper") is None
        assert float(lim.get("velocity")) == pytest.approx(math.radians(v)) and float(lim.get("effort")) == e
    meshes = [m.get("filename") for m in root.iter("mesh")]
    assert meshes and all(m.startswith("file:///") for m in meshes)
    assert all(Path(m[len("file://"):]).is_file() for m in meshes)   # every mesh resolves


def test_package_uris_are_relative_to_the_model_folder():
    from hri_sim.core.urdf import mesh_uri_function

    root = arm_asset_root("fr3")
    _, _, text = _urdf("fr3", mesh_uri_function("fr3", "package", root))
    import xml.etree.ElementTree as ET

    meshes = [m.get("filename") for m in ET.fromstring(text).iter("mesh")]
    assert meshes and all(m.startswith("package://hri_sim/meshes/fr3/") for m in meshes)
    assert all((root / m[len("package://hri_sim/meshes/fr3/"):]).is_file() for m in meshes)


def test_pinocchio_reads_the_urdf_with_the_same_kinematics(arm):
    import pinocchio as pin       # PyPI `pin`, locked (requirements.lock): missing = failure
    robot, cfg, model, text = arm
    pm = pin.buildModelFromXML(text)
    pd = pm.createData()
    names = list(cfg["joints"]["names"])
    tree = UrdfTree.parse(text)
    rng = np.random.default_rng(7)
    fid = pm.getFrameId(cfg["frames"]["ee"])
    for _ in range(100):
        q = np.zeros(pm.nq)
        qs = {}
        for n in names:
            v = float(rng.uniform(-1, 1))
            jm = pm.joints[pm.getJointId(n)]
            if jm.nq == 2:                 # a continuous joint: Pinocchio's (cos, sin)
                q[jm.idx_q:jm.idx_q + 2] = (math.cos(v), math.sin(v))
            else:
                q[jm.idx_q] = v
            qs[n] = v
        pin.framesForwardKinematics(pm, pd, q)
        assert np.abs(pd.oMf[fid].homogeneous - tree.link_pose(cfg["frames"]["ee"], qs)).max() < TOL


def test_rpy_round_trip_including_gimbal_lock():
    rng = np.random.default_rng(1)
    for rpy in list(rng.uniform(-3, 3, size=(200, 3))) + [(0.3, math.pi / 2, -0.2), (1.0, -math.pi / 2, 0.5)]:
        r = rpy_to_matrix(*rpy)
        assert np.abs(rpy_to_matrix(*rpy_from_matrix(r)) - r).max() < 1e-14


def test_transform_tuple_quaternion_matches_the_matrix():
    from hri_sim.core.urdf import quat_to_matrix

    rng = np.random.default_rng(2)
    for _ in range(200):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        t = np.eye(4)
        t[:3, :3] = quat_to_matrix(q)
        (_, (x, y, z, w)) = transform_tuple(t)
        assert np.abs(quat_to_matrix((w, x, y, z)) - t[:3, :3]).max() < 1e-14


@pytest.mark.parametrize("urdf, message", [
    ("not xml <", "not XML"),
    ('<robot name="x"><link name="a"/><link name="b"/></robot>', "exactly one root"),
    ('<robot name="x"><link name="a"/><link name="b"/><joint name="j" type="floating"><parent link="a"/>'
     '<child link="b"/></joint></robot>', "not supported"),
    ('<robot name="x"><link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/>'
     '<child link="b"/><origin xyz="0 nan 0"/></joint></robot>', "finite"),
])
def test_a_bad_urdf_is_one_clear_error(urdf, message):
    with pytest.raises(UrdfError, match=message):
        UrdfTree.parse(urdf)


def test_a_model_the_urdf_cannot_express_is_refused():
    model = load_arm("fr3", actuation="torque")
    kw = dict(robot_name="fr3", root_link="b", ee_link="e", mesh_uri=str)
    with pytest.raises(ValueError, match="not in the model"):
        urdf_from_mujoco(model, ee_site="attachment_site", movable={"nope": (1, 1)}, **kw)
    with pytest.raises(ValueError, match="EE site"):
        urdf_from_mujoco(model, ee_site="nope", movable={}, **kw)
    with pytest.raises(ValueError, match="already a body"):
        urdf_from_mujoco(model, ee_site="attachment_site", movable={}, **dict(kw, root_link="hand"))


def test_joint_positions_of_a_joint_state_or_why_it_is_refused():
    _, _, text = _urdf("fr3")
    tree = UrdfTree.parse(text)
    movable = [j.name for j in tree.movable]
    got, refused = tree.joint_positions([movable[0], "gripper_finger", movable[1]], [0.1, 5.0, -0.2])
    assert refused is None and got == {movable[0]: 0.1, movable[1]: -0.2}     # others ignored
    assert tree.joint_positions(movable[:2], [0.1]) == (None, ("length_mismatch", "2 names, 1 positions"))
    assert tree.joint_positions(movable[:2], [0.1, math.nan])[1][0] == "not_finite"
    assert tree.joint_positions(["knee"], [0.0])[1][0] == "unknown_joints"
