"""The workspace keeps the layout of the design card and valid ament_python packages."""
from __future__ import annotations

import configparser
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ALL_PACKAGES = sorted(p.parent for p in (REPO / "src").glob("*/package.xml")) + [REPO / "cpp"]
# hri_interfaces (rosidl) and hri_controllers (the ros2_control plugins, C++) are the ament_cmake
# packages; every other package is ament_python.
INTERFACES = REPO / "src" / "hri_interfaces"
CONTROLLERS = REPO / "src" / "hri_controllers"
PACKAGES = [p for p in ALL_PACKAGES if p not in (INTERFACES, CONTROLLERS)]
# Executables go to lib/<pkg> (ros2 run); the `hri` command of hri_runtime goes to bin (on PATH).
SCRIPT_DIR = {"hri_runtime": "$base/bin"}


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
    want = SCRIPT_DIR.get(name, f"$base/lib/{name}")
    assert cfg.get("develop", "script_dir") == want
    assert cfg.get("install", "install_scripts") == want
    setup_py = (pkg_dir / "setup.py").read_text()
    assert "share/ament_index/resource_index/packages" in setup_py
    assert re.search(rf"package_name\s*=\s*['\"]{name}['\"]", setup_py), f"{name}: setup.py name"
    assert (pkg_dir / name / "__init__.py").is_file()


def test_interfaces_package_is_rosidl_with_every_interface_in_cmake():
    root = ET.parse(INTERFACES / "package.xml").getroot()
    assert root.find("export/build_type").text == "ament_cmake"
    assert "rosidl_interface_packages" in [e.text for e in root.findall("member_of_group")]
    files = sorted(f.relative_to(INTERFACES).as_posix() for f in INTERFACES.glob("*/*") if f.suffix in (".msg", ".srv"))
    assert files, "no interfaces"
    cmake = (INTERFACES / "CMakeLists.txt").read_text()
    assert "rosidl_generate_interfaces" in cmake


def test_controllers_package_is_ament_cmake_exporting_its_plugins():
    """hri_controllers: an ament_cmake package whose pluginlib description names the controller
    and the system it builds, exported for controller_interface and hardware_interface."""
    root = ET.parse(CONTROLLERS / "package.xml").getroot()
    assert root.get("format") == "3" and root.find("export/build_type").text == "ament_cmake"
    for base in ("controller_interface", "hardware_interface"):
        assert root.find(f"export/{base}").get("plugin") == "${prefix}/hri_controllers.xml"
    lib = ET.parse(CONTROLLERS / "hri_controllers.xml").getroot()
    classes = {c.get("name"): c.get("base_class_type") for c in lib.findall("class")}
    assert classes == {"hri_controllers/InteractionController": "controller_interface::ControllerInterface",
                       "hri_controllers/MujocoSystem": "hardware_interface::SystemInterface"}
    cmake = (CONTROLLERS / "CMakeLists.txt").read_text()
    assert "pluginlib_export_plugin_description_file(controller_interface hri_controllers.xml)" in cmake
    assert "pluginlib_export_plugin_description_file(hardware_interface hri_controllers.xml)" in cmake
    src = "".join(f.read_text() for f in (CONTROLLERS / "src").glob("*.cpp"))
    for cls, base in (("InteractionController", "controller_interface::ControllerInterface"),
                      ("MujocoSystem", "hardware_interface::SystemInterface")):
        assert f"PLUGINLIB_EXPORT_CLASS(hri_controllers::{cls}, {base})" in src


def test_python_packages_are_split_into_core_and_nodes():
    """Every package of nodes splits pure logic from its adapters; hri_runtime is the middleware
    itself (as rclpy: the node API at the top, subpackages as ROS 2's tools, internals in impl/)."""
    for pkg_dir in PACKAGES:
        if pkg_dir.name in ("cpp", "hri_runtime"):
            continue
        assert (pkg_dir / pkg_dir.name / "core").is_dir(), pkg_dir
        assert (pkg_dir / pkg_dir.name / "nodes").is_dir(), pkg_dir


#: the guide for a thin node (docs/CONVENTIONS.md "Layout"): declarations and wiring fit in it
NODE_MAX_LINES = 150


def test_nodes_are_thin():
    """Every file under ``src/*/*/nodes/`` only declares parameters and wires topics, services and
    timers to a core object: at most NODE_MAX_LINES lines (the logic lives in ``core/``)."""
    files = sorted((REPO / "src").glob("*/*/nodes/*.py"))
    assert len(files) > 10, files
    long = {str(f.relative_to(REPO)): n for f in files if (n := len(f.read_text().splitlines())) > NODE_MAX_LINES}
    assert not long, long


def test_cores_import_no_middleware():
    """core/ is pure logic: no zenoh, no rclpy (the py_trees / py_trees_ros split)."""
    offenders = []
    for path in (REPO / "src").glob("*/*/core/**/*.py"):
        text = path.read_text()
        if re.search(r"^\s*(import|from)\s+(zenoh|rclpy)\b", text, re.M):
            offenders.append(str(path.relative_to(REPO)))
    assert not offenders, offenders


def _own_module(pkg_dir: Path) -> str:
    return "hri_core" if pkg_dir.name == "cpp" else pkg_dir.name


def _workspace_imports(pkg_dir: Path, names: set[str]) -> set[str]:
    """Workspace packages that the package's modules (not its tests) import."""
    own = _own_module(pkg_dir)
    found: set[str] = set()
    for f in (pkg_dir / own).rglob("*.py"):
        for m in re.finditer(r"^\s*(?:from|import)\s+(hri_[a-z_]+)", f.read_text(encoding="utf-8"), re.M):
            if m[1] in names and m[1] != own:
                found.add(m[1])
    return found


# The layers, bottom up: the runtime and the maths core import no workspace package; a package's
# core imports only those two layers (and other cores); nodes sit on top.
BOTTOM = {"hri_runtime", "hri_core"}


def test_package_imports_are_declared_and_the_dependency_graph_has_no_cycle():
    """nodes -> cores -> runtime/math, never back: every workspace package a package imports is
    an exec_depend of its package.xml, and the graph of those dependencies is acyclic."""
    pkgs = {_own_module(p): p for p in PACKAGES}
    names = set(pkgs) | {"hri_interfaces"}
    deps: dict[str, set[str]] = {}
    for name, pkg_dir in pkgs.items():
        root = ET.parse(pkg_dir / "package.xml").getroot()
        declared = {e.text for e in root.findall("exec_depend") + root.findall("depend")} & names
        imported = _workspace_imports(pkg_dir, names)
        assert imported <= declared, f"{name} imports {sorted(imported - declared)} without an exec_depend"
        deps[name] = declared - {"hri_interfaces"}
    state: dict[str, int] = {}

    def visit(n: str, path: list[str]) -> None:
        if state.get(n) == 1:
            raise AssertionError("dependency cycle: " + " -> ".join(path + [n]))
        if state.get(n) == 2:
            return
        state[n] = 1
        for d in sorted(deps.get(n, ())):
            visit(d, path + [n])
        state[n] = 2

    for n in sorted(deps):
        visit(n, [])
    for bottom in sorted(BOTTOM):
        assert not deps[bottom], (f"{bottom} depends on {sorted(deps[bottom])}: the runtime and the "
                                  f"maths core import no workspace package")
        assert not _workspace_imports(pkgs[bottom], names), f"{bottom} imports a workspace package"


def test_runtime_top_level_is_the_node_api_and_tool_folders():
    """hri_runtime reads like rclpy + launch + rosbag2 + ros2cli + sros2 (docs/CONVENTIONS.md
    "hri_runtime"): the node API at the top, one folder per ROS 2 tool; a new flat module
    (a ``launch_*`` or ``*_cli`` beside the node API) fails here until it is placed in its folder."""
    pkg = REPO / "src/hri_runtime/hri_runtime"
    node_api = {"__init__", "node", "publisher", "subscription", "service", "client", "timer",
                "clock", "executors", "task", "qos", "names", "context", "inproc", "lockstep",
                "logging", "signals", "parameter", "parameter_service", "msgs", "diagnostics",
                "geometry", "packages", "provenance", "errors", "parameters_gen"}
    folders = {"impl", "launch", "bag", "cli", "config", "parameter_library", "security"}
    top = {p.stem for p in pkg.glob("*.py")}
    subs = {p.name for p in pkg.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert top == node_api, {"unplaced": sorted(top - node_api), "missing": sorted(node_api - top)}
    assert subs == folders, {"unexpected": sorted(subs - folders), "missing": sorted(folders - subs)}
