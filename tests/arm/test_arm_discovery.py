"""Adding an arm is adding its robot file (Chang 2026, table 9.2: "code changed: 0").

- the arms are the robot files of kind ``arm`` (``hri_runtime.config.tree.list_arms``); the arm tests
  (tests/arm, tests/interaction, hri_sim's URDF/FK checks, the C++ core's IK) run over that list;
- no source file names an arm: the model, its joints, flange and meshes come from the robot file's
  ``sim.model`` (``hri_sim.models``), the launch from launch/arm.launch.yaml ``robot:=<arm>``;
- a robot file copied under a new name, in a copy of the config tree, is an arm the simulation
  loads and the launch file starts, with no other change.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import mujoco
import pytest

from hri_runtime.config.tree import list_arms, list_robots, load_robot_config
from hri_runtime.launch.frontend import LaunchError, parse_launch_file

REPO = Path(__file__).resolve().parents[2]
ARM_LAUNCH = REPO / "launch" / "arm.launch.yaml"
# The default robot of the CLIs and nodes (``--robot`` default) and the PID tuning's arm plant
# (Webel's tool tuned on the FR3): the one arm source files may name.
DEFAULT_ARM = "fr3"
SOURCE_SUFFIXES = {".py", ".cpp", ".hpp", ".h", ".cc", ".js", ".ts", ".cs", ".html"}


def _source_files():
    for top in ("src", "cpp", "clients", "tools"):
        for path in sorted((REPO / top).rglob("*")):
            rel = path.relative_to(REPO)
            if (path.suffix in SOURCE_SUFFIXES and path.is_file()
                    and not {"test", "tests", "build", "node_modules", "__pycache__"} & set(rel.parts)
                    and not any(p.endswith(".egg-info") for p in rel.parts)):
                yield rel, path


def test_the_arms_are_the_robot_files_of_kind_arm():
    arms = list_arms()
    assert {"fr3", "ur5e", "iiwa14", "gen3", "xarm7"} <= set(arms)
    for robot in list_robots():
        assert (robot in arms) == (load_robot_config(robot)["robot"]["kind"] == "arm"), robot


def test_no_source_file_names_an_arm():
    """Every arm but the default one: its name appears in no source file (docstrings included), so
    nothing but its robot file can have been written to add it."""
    arms = [a for a in list_arms() if a != DEFAULT_ARM]
    pattern = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, arms)) + r")(?![A-Za-z0-9_])", re.I)
    hits, scanned = [], 0
    for rel, path in _source_files():
        scanned += 1
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            hits.append(f"{rel}:{line}: {m.group(0)}")
    assert scanned > 100                       # the scan saw the sources
    assert hits == [], "source files name an arm (put it in its robot file):\n" + "\n".join(hits[:20])


@pytest.mark.parametrize("robot", list_arms())
def test_arm_launch_file_starts_the_stack_of_any_arm(robot):
    nodes = {n.exec: n for n in parse_launch_file(ARM_LAUNCH, {"robot": robot}).nodes}
    assert {"stop_supervisor", "arm_teleop", "interaction", "robot_state"} <= set(nodes)
    assert all(n.params.get("robot") == robot for n in nodes.values() if "robot" in n.params)
    assert nodes["arm_teleop"].params["teleop.output"] == "cartesian"
    joint = {n.exec for n in parse_launch_file(ARM_LAUNCH, {"robot": robot, "output": "joint"}).nodes}
    assert "interaction" not in joint and "arm_teleop" in joint


def test_arm_launch_file_needs_the_robot():
    with pytest.raises(LaunchError, match="robot:=VALUE"):
        parse_launch_file(ARM_LAUNCH, {})


ARG_CASES = [{}, {"output": "joint"}, {"console": "true", "console_port": "0"}, {"vr_port": "0"},
             {"interaction_mode": "admittance"}]


@pytest.mark.parametrize("robot", [a for a in list_arms() if (REPO / "launch" / f"{a}.launch.yaml").is_file()])
def test_a_named_arm_launch_file_is_the_arm_launch_file_with_its_robot(robot):
    """launch/<arm>.launch.yaml (the arms that have one) starts exactly what arm.launch.yaml
    robot:=<arm> starts, for every argument: a change to one that the other lacks fails here."""
    own = REPO / "launch" / f"{robot}.launch.yaml"

    def expand(path, args):
        desc = parse_launch_file(path, args)
        return sorted((n.pkg, n.exec, n.name, n.namespace, sorted((k, str(v)) for k, v in n.params.items()),
                       sorted(n.remaps), sorted(n.env.items()), n.params_files) for n in desc.nodes)

    for args in ARG_CASES:
        assert expand(own, args) == expand(ARM_LAUNCH, {"robot": robot, **args}), args


def test_a_new_robot_file_alone_is_a_new_arm(tmp_path, monkeypatch):
    """The xArm 7's robot file copied as ``myarm.yaml`` into a copy of the config tree: listed as an
    arm, its MuJoCo model loads with the config's joints and the flange site, and arm.launch.yaml
    starts its stack. Nothing else was added."""
    from hri_sim.models import load_arm

    root = tmp_path / "config"
    shutil.copytree(REPO / "config", root)
    src = (root / "robots" / "xarm7.yaml").read_text()
    (root / "robots" / "myarm.yaml").write_text(src.replace("model: xarm7", "model: myarm"))
    monkeypatch.setenv("HRI_CONFIG_ROOT", str(root))
    assert "myarm" in list_arms(root)
    cfg = load_robot_config("myarm", config_root=root)
    model = load_arm("myarm", actuation="torque")
    for name in cfg["joints"]["names"]:
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name) >= 0, name
    assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, "attachment_site") >= 0
    nodes = {n.exec: n for n in parse_launch_file(ARM_LAUNCH, {"robot": "myarm"}).nodes}
    assert nodes["interaction"].params["robot"] == "myarm"
