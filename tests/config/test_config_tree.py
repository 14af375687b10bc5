"""The configuration tree: merge rules, expansion, provenance, and a corpus of broken configs.

Broken configs are checked through the real CLI (`hri config check`) in a subprocess: one line
on stderr, exit code 2, no traceback, and the line names file, key path, value and expectation.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hri_runtime.config.tree import ConfigError, deep_merge, list_robots, load, load_robot_config
from hri_core.safety import arm_limits

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "config"
CORPUS = yaml.safe_load((Path(__file__).parent / "broken_configs.yaml").read_text())


def _copy_tree(tmp_path: Path) -> Path:
    """The config tree and every package's parameter declarations, laid out as the workspace
    (config/, src/<pkg>/parameters.yaml): the copy is found and read like the sources."""
    root = tmp_path / "config"
    shutil.copytree(CONFIG, root)
    for declared in sorted((REPO / "src").glob("*/parameters.yaml")):
        target = tmp_path / "src" / declared.parent.name
        target.mkdir(parents=True)
        shutil.copy(declared, target / declared.name)
    return root


def _merge_patch(base, patch):
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            if value == "__delete__":
                out.pop(key, None)
            else:
                out[key] = _merge_patch(out.get(key), value)
        return out
    return patch


def _apply_raw(root: Path, case: dict) -> None:
    """The corpus's raw edits: text appended, text written as latin-1 bytes, generated text."""
    for rel, text in case.get("append", {}).items():
        with open(root / rel, "a", encoding="utf-8") as fh:
            fh.write(text)
    for rel, text in case.get("write_bytes", {}).items():
        (root / rel).write_bytes(text.encode("latin-1"))
    for rel, gen in case.get("generate", {}).items():
        (root / rel).write_text(gen["head"] + gen["repeat"] * gen["times"] + gen["tail"])
    for rel, target in case.get("symlink", {}).items():
        (root / rel).unlink(missing_ok=True)
        (root / rel).symlink_to(target)


def _limit_memory() -> None:  # runs in the child: any input is refused in bounded memory
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


MEMORY_LIMIT_BYTES = 1 << 30


def _apply(root: Path, patch: dict) -> None:
    for rel, change in patch.items():
        path = root / rel
        if isinstance(change, str):
            path.write_text(change)
        else:
            current = yaml.safe_load(path.read_text()) if path.exists() else {}
            path.write_text(yaml.safe_dump(_merge_patch(current, change), sort_keys=False, allow_unicode=True))


def _hri(*args: str, cwd: Path, limit_memory: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hri_runtime.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          preexec_fn=_limit_memory if limit_memory else None)


def test_shipped_tree_is_valid():
    result = _hri("config", "check", cwd=REPO)
    assert result.returncode == 0, result.stderr
    for robot in ("fr3", "ur5e", "iiwa14"):
        assert f"ok    {robot}" in result.stdout


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 40
    assert len({c["name"] for c in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("case", CORPUS, ids=[c["name"] for c in CORPUS])
def test_broken_config_gives_one_clear_line_and_exit_2(case, tmp_path):
    root = _copy_tree(tmp_path)
    _apply(root, case.get("patch", {}))
    _apply_raw(root, case)
    result = _hri("config", "check", *case.get("check", []), cwd=tmp_path, limit_memory=True)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    line = lines[0]
    assert line.startswith("config error: ")
    for fragment in case["expect"]:
        assert fragment in line, f"{fragment!r} not in {line!r}"
    for fragment in case.get("reject", []):
        assert fragment not in line, f"{fragment!r} in {line!r}"
    assert str(tmp_path) not in line and not re.search(r"(^|[\s:(])/[A-Za-z]", line), f"a machine path in {line!r}"


@pytest.mark.parametrize("name", ["required_key_missing_names_the_robot_file", "pathological_nesting"])
def test_config_error_names_files_relative_to_the_workspace_from_anywhere(name, tmp_path):
    """Run from outside the workspace (the config root given by HRI_CONFIG_ROOT): the line still
    names the robot file as ``config/robots/...`` and shows no machine path."""
    case = next(c for c in CORPUS if c["name"] == name)
    root = _copy_tree(tmp_path)
    _apply(root, case.get("patch", {}))
    _apply_raw(root, case)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run([sys.executable, "-m", "hri_runtime.cli.main", "config", "check", *case.get("check", [])],
                            cwd=elsewhere, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "HRI_CONFIG_ROOT": str(root)})
    assert result.returncode == 2, result.stderr
    line = result.stderr.strip()
    assert line.startswith("config error: config/robots/"), line
    assert str(tmp_path) not in line and "/tmp" not in line, line


def test_merge_rules_mappings_recursive_lists_and_scalars_whole():
    origin: dict = {}
    base = {"a": {"x": 1, "y": [1, 2, 3]}, "b": 2}
    merged = deep_merge(base, {"a": {"y": [9]}, "b": 3}, origin, "override")
    assert merged == {"a": {"x": 1, "y": [9]}, "b": 3}
    assert origin[("a", "y")] == "override" and ("a", "x") not in origin
    assert base == {"a": {"x": 1, "y": [1, 2, 3]}, "b": 2}  # inputs untouched


def test_env_expansion_typed_and_robot_id(tmp_path, monkeypatch):
    root = _copy_tree(tmp_path)
    _apply(root, {"robots/fr3.yaml": {"robot": {"description": "arm ${HRI_TEST_WHERE:-lab}"},
                                      "safety": {"ee_speed_max_m_s": "${HRI_TEST_SPEED:-0.2}"}}})
    cfg = load_robot_config("fr3", config_root=root)
    assert cfg["robot"]["description"] == "arm lab"
    assert cfg["safety"]["ee_speed_max_m_s"] == 0.2  # a pure reference takes the YAML type
    monkeypatch.setenv("HRI_TEST_SPEED", "0.1")
    monkeypatch.setenv("HRI_TEST_WHERE", "bay 2")
    cfg = load_robot_config("fr3", robot_id="fr3_right", config_root=root)
    assert cfg["safety"]["ee_speed_max_m_s"] == 0.1
    assert cfg["robot"]["description"] == "arm bay 2"
    assert cfg["frames"]["base"] == "fr3_right_base"


def test_two_instances_of_one_model_side_by_side():
    left = load("fr3", robot_id="fr3_left")
    right = load("fr3", robot_id="fr3_right")
    assert left.data["frames"]["ee"] == "fr3_left_ee"
    assert right.data["frames"]["ee"] == "fr3_right_ee"
    assert left.data["joints"] == right.data["joints"]


def test_provenance_names_the_file_of_each_leaf():
    loaded = load("fr3")
    assert loaded.origin_of("joints.names").endswith("config/robots/fr3.yaml")
    assert loaded.origin_of("safety.ee_speed_max_m_s").endswith("src/hri_safety/parameters.yaml")


def test_show_prints_every_leaf_with_its_source():
    result = _hri("config", "show", "fr3", cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert "position_min_deg: [-157.2" in result.stdout
    assert "# config/robots/fr3.yaml" in result.stdout
    assert "ee_speed_max_m_s: 0.25    # src/hri_safety/parameters.yaml" in result.stdout


def test_adding_a_robot_is_adding_one_override_file(tmp_path):
    """A new arm, a second FR3 instance (extends) – zero code changes."""
    root = _copy_tree(tmp_path)
    (root / "robots" / "lite6.yaml").write_text(yaml.safe_dump({
        "robot": {"model": "lite6", "kind": "arm", "manufacturer": "UFACTORY", "dof": 6},
        "joints": {
            "names": [f"joint{i}" for i in range(1, 7)],
            "position_min_deg": [-360, -150, -3.5, -360, -124, -360],
            "position_max_deg": [360, 150, 300, 360, 124, 360],
            "velocity_max_deg_s": [180, 180, 180, 360, 360, 360],
            "acceleration_max_deg_s2": [500] * 6,
            "torque_max_nm": [20] * 6,
            "torque_rate_max_nm_s": [500] * 6,
            "named_positions_deg": {"zero": [0] * 6, "home": [0, 35, 60, 0, 25, -20], "hri_home": None},
        },
    }))
    (root / "robots" / "fr3_left.yaml").write_text("extends: fr3\nsafety: {ee_speed_max_m_s: 0.1}\n")
    assert "lite6" in list_robots(root)
    cfg = load_robot_config("lite6", config_root=root)
    limits = arm_limits(cfg)
    assert limits.q_min.shape == (6,) and limits.joint_names[0] == "joint1"
    left = load("fr3_left", config_root=root)
    assert left.data["safety"]["ee_speed_max_m_s"] == 0.1
    assert left.data["joints"]["names"][0] == "fr3_joint1"
    assert left.data["frames"]["ee"] == "fr3_left_ee"
    result = _hri("config", "check", cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_every_shipped_robot_loads_and_arms_give_si_limits():
    for robot in list_robots():
        cfg = load_robot_config(robot)
        if cfg["robot"]["kind"] == "arm":
            limits = arm_limits(cfg)
            assert (limits.q_min < limits.q_max).all()
            assert limits.q_min.shape == (cfg["robot"]["dof"],)


def test_config_error_is_one_line_even_for_long_values():
    err = ConfigError("config/x.yaml", "a.b", list(range(1000)), "something")
    assert "\n" not in str(err) and len(str(err)) < 200


def test_every_parameter_file_is_installed_and_declares_its_own_sections():
    """src/<pkg>/parameters.yaml goes to share/<pkg>/ (an install finds it there), and the
    declarations of all packages together are what a robot is checked against."""
    from hri_runtime.config.tree import load_declarations, parameter_files

    files = parameter_files(CONFIG)
    assert set(files) == {p.parent.name for p in (REPO / "src").glob("*/parameters.yaml")}
    for package, path in files.items():
        assert "'parameters.yaml'" in (path.parent / "setup.py").read_text(), f"{package}: setup.py does not install it"
    owners = {section: Path(f).parent.name for section, f in load_declarations(CONFIG).files.items()}
    assert owners["robot"] == owners["joints"] == owners["runtime"] == "hri_runtime"
    assert owners["safety"] == "hri_safety" and owners["teleop"] == "hri_arm_teleop"
