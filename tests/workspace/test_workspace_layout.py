"""The workspace keeps the layout of the design card and valid ament_python packages."""
from __future__ import annotations

import configparser
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = sorted(p.parent for p in (REPO / "src").glob("*/package.xml")) + [REPO / "cpp"]


def test_top_level_layout():
    for name in ("src", "config", "launch", "cpp", "docker", "tests", "bench", "docs",
                 "README.md", "colcon.meta", "docker-compose.yaml", "Makefile", ".ci/run"):
        assert (REPO / name).exists(), f"missing {name}"


def test_every_capability_has_a_package():
    names = {p.name for p in PACKAGES}
    for pkg in ("hri_runtime", "hri_pulse", "hri_atomic_motion", "hri_arm_teleop",
                "hri_interaction", "hri_pid_tuning", "hri_sim", "cpp"):
        assert pkg in names


@pytest.mark.parametrize("pkg_dir", PACKAGES, ids=[p.name for p in PACKAGES])
def test_ament_python_package(pkg_dir: Path):
    root = ET.parse(pkg_dir / "package.xml").getroot()
    assert root.tag == "package" and root.get("format") == "3"
    name = root.findtext("name")
    assert re.fullmatch(r"[a-z][a-z0-9_]*", name)
    assert root.find("export/build_type").text == "ament_python"
    for tag in ("version", "description", "maintainer", "license"):
        assert (root.findtext(tag) or "").strip(), f"{name}: <{tag}> empty"
    assert (pkg_dir / "resource" / name).is_file(), f"{name}: resource marker missing"
    cfg = configparser.ConfigParser()
    cfg.read(pkg_dir / "setup.cfg")
    assert cfg.get("develop", "script_dir") == f"$base/lib/{name}"
    assert cfg.get("install", "install_scripts") == f"$base/lib/{name}"
    setup_py = (pkg_dir / "setup.py").read_text()
    assert "share/ament_index/resource_index/packages" in setup_py
    assert re.search(rf"package_name\s*=\s*['\"]{name}['\"]", setup_py), f"{name}: setup.py name"
    assert (pkg_dir / name / "__init__.py").is_file()


def test_python_packages_are_split_into_core_and_nodes():
    for pkg_dir in PACKAGES:
        if pkg_dir.name in ("cpp",):
            continue
        assert (pkg_dir / pkg_dir.name / "core").is_dir(), pkg_dir
        assert (pkg_dir / pkg_dir.name / "nodes").is_dir(), pkg_dir


def test_cores_import_no_middleware():
    """core/ is pure logic: no zenoh, no rclpy (the py_trees / py_trees_ros split)."""
    offenders = []
    for path in (REPO / "src").glob("*/*/core/**/*.py"):
        text = path.read_text()
        if re.search(r"^\s*(import|from)\s+(zenoh|rclpy)\b", text, re.M):
            offenders.append(str(path.relative_to(REPO)))
    assert not offenders, offenders
