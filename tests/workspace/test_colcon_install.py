"""The installed layout: `colcon build` of the workspace's Python packages into a temporary
directory, then a node run from install/ (not the sources): its MJCF, the config tree and the
`hri` command all come from the install space. Runs without ROS (colcon-ros builds ament_python
packages without it); a few tens of seconds of packaging, no duration asserted."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COLCON = shutil.which("colcon", path=str(Path(sys.executable).parent)) or shutil.which("colcon")
pytestmark = pytest.mark.slow
# colcon is a required dependency (requirements): missing = a failure, never a skip
assert COLCON is not None, "colcon not installed (make venv installs it from the requirements)"


# every package declaring config sections (src/<pkg>/parameters.yaml): a robot file is checked
# against all of them
DECLARING_PACKAGES = sorted(p.parent.name for p in (REPO / "src").glob("*/parameters.yaml"))


def _sourced(install: Path, command: str) -> list[str]:
    return ["bash", "-c", f". '{install}/setup.sh' && {command}"]


def _assert_urdf_meshes_installed(share: Path) -> None:
    import xml.etree.ElementTree as ET

    from hri_sim.core.urdf import urdf_from_mujoco
    from hri_sim.models import arm_asset_root, load_arm
    from hri_sim.core.urdf import mesh_uri_function

    from hri_runtime.config.tree import list_arms

    for robot in list_arms(REPO / "config"):
        text = urdf_from_mujoco(load_arm(robot, actuation="torque"), robot_name=robot, root_link="b",
                                ee_site="attachment_site", ee_link="e", movable={},
                                mesh_uri=mesh_uri_function(robot, "package", arm_asset_root(robot)))
        uris = {m.get("filename") for m in ET.fromstring(text).iter("mesh")}
        assert uris and all(u.startswith("package://hri_sim/") for u in uris)
        missing = [u for u in uris if not (share / u[len("package://"):]).is_file()]
        assert missing == [], f"{robot}: meshes not installed: {missing[:3]}"


def test_colcon_install_runs_a_node_from_install(tmp_path):
    build, install, log = tmp_path / "build", tmp_path / "install", tmp_path / "log"
    r = subprocess.run([COLCON, "--log-base", str(log), "build", "--base-paths", str(REPO / "src"),
                        "--build-base", str(build), "--install-base", str(install),
                        "--packages-select", *DECLARING_PACKAGES, "--packages-ignore", "hri_interfaces",
                        "--event-handlers", "console_cohesion+"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    share = install / "hri_runtime" / "share" / "hri_runtime"
    assert (share / "config" / "robots" / "fr3.yaml").is_file() and (share / "launch" / "tino.launch.yaml").is_file()
    for package in DECLARING_PACKAGES:   # the parameter declarations come from share/<pkg>/ of each package
        assert (install / package / "share" / package / "parameters.yaml").is_file(), package
    site = next((install / "hri_sim" / "lib").glob("python3*/site-packages"))
    assert (site / "hri_sim" / "mjcf" / "tino.xml").is_file(), "hri_sim must install its MJCF"
    # every package:// mesh URI of each arm's /robot_description resolves in the install space
    _assert_urdf_meshes_installed(install / "hri_sim" / "share")
    assert (share / "interfaces" / "hri_interfaces" / "msg" / "AtomicState.msg").is_file()
    # `hri` on PATH once the workspace is sourced (colcon's PATH hook for <prefix>/bin)
    env = {k: v for k, v in os.environ.items() if k not in ("HRI_CONFIG_ROOT", "AMENT_PREFIX_PATH", "PYTHONPATH")}
    # hri_interfaces types without the sources (hri_interfaces itself is not built without ROS)
    probe = ("import hri_runtime, sys; from hri_runtime import msgs; "
             "assert '/install/' in hri_runtime.__file__, hri_runtime.__file__; "
             "print(msgs.rihs01('hri_interfaces/msg/AtomicState'))")
    r = subprocess.run(_sourced(install, f'command -v hri && hri config check && "{sys.executable}" -c "{probe}"'),
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.splitlines()[0] == str(install / "hri_runtime" / "bin" / "hri"), \
        r.stdout + r.stderr
    from hri_runtime import msgs

    assert r.stdout.split()[-1] == msgs.rihs01("hri_interfaces/msg/AtomicState"), r.stdout
    # tino_sim from install/, outside the source tree: MJCF from install/, config from share/
    node = subprocess.Popen(_sourced(install, "exec tino_sim_path --ros-args -p robot:=tino".replace(
        "tino_sim_path", str(install / "hri_sim" / "lib" / "hri_sim" / "tino_sim"))),
        cwd=tmp_path, env=dict(env, HRI_TRANSPORT="inproc", PYTHONUNBUFFERED="1"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        end = time.monotonic() + 120
        while time.monotonic() < end:
            line = node.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "simulating" in line:
                break
        assert any("simulating" in ln and str(site / "hri_sim" / "mjcf" / "tino.xml") in ln for ln in lines), \
            "".join(lines)
    finally:
        node.send_signal(signal.SIGINT)
        out, _ = node.communicate(timeout=60)
    text = "".join(lines) + out
    assert node.returncode == 0 and "Traceback" not in text, text
