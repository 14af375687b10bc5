"""Builds and runs cpp/test/cpp/test_rt_unit.cpp (hri_core::rt, the 1 kHz real-time loop) with g++
directly: triple buffer, histogram, RtLoop in lockstep and on its thread, and the MuJoCo robot on a
3-joint MJCF arm through MuJoCo's C API (libmujoco + headers of the mujoco wheel) — zero heap
allocations inside the cycle in every case. The build is cached (see conftest.py)."""
from __future__ import annotations

import subprocess
from pathlib import Path


EXTRA_FLAGS = ("-Wno-maybe-uninitialized", "-pthread")

ARM_XML = """
<mujoco model="rt_test_arm">
  <option timestep="0.001" integrator="implicitfast"/>
  <worldbody>
    <body name="l1" pos="0 0 0.1">
      <joint name="j1" type="hinge" axis="0 0 1" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.04" mass="2"/>
      <body name="l2" pos="0 0 0.3">
        <joint name="j2" type="hinge" axis="0 1 0" damping="0.1"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.035" mass="1.5"/>
        <body name="l3" pos="0.3 0 0">
          <joint name="j3" type="hinge" axis="0 1 0" damping="0.1"/>
          <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.03" mass="1"/>
          <site name="ee" pos="0.25 0 0"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="j1" joint="j1"/>
    <motor name="j2" joint="j2"/>
    <motor name="j3" joint="j3"/>
  </actuator>
</mujoco>
"""


def mujoco_flags() -> tuple[str, ...]:
    """Compile/link flags for the mujoco wheel's libmujoco (as cpp/setup.py), or () without it."""
    import importlib.util

    spec = importlib.util.find_spec("mujoco")
    if spec is None or not spec.submodule_search_locations:
        return ()
    root = Path(list(spec.submodule_search_locations)[0])
    libs = sorted(root.glob("libmujoco.so*"))
    if not libs or not (root / "include" / "mujoco" / "mujoco.h").is_file():
        return ()
    return ("-DHRI_WITH_MUJOCO", f"-I{root / 'include'}", "-Wl,--no-as-needed", str(libs[-1]),
            f"-Wl,-rpath,{root}")


CPP_BUILDS = [("test_rt_unit", EXTRA_FLAGS + mujoco_flags())]   # built ahead, side by side (conftest.py)


def test_rt_loop_cpp_unit(cpp_test_binary, tmp_path):
    mj = mujoco_flags()
    assert mj, "the mujoco wheel (libmujoco + headers, a required dependency) is not installed"
    exe = cpp_test_binary("test_rt_unit", EXTRA_FLAGS + mj)
    xml = tmp_path / "arm.xml"
    xml.write_text(ARM_XML)
    res = subprocess.run([str(exe), str(xml)], capture_output=True, text=True, timeout=120)
    print(res.stdout)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "mujoco: dy under 5 N" in res.stdout
    assert "0 failures, 0 heap allocations" in res.stdout
