"""Builds and runs cpp/test/cpp/test_interaction_unit.cpp (InteractionTick, owner hri_interaction)
with g++ directly: every law x filter x mode, 2000 gated ticks each with the SafetyChecker, zero
heap allocations inside the tick loop, NaN state held, workspace violation freezes. The build is
cached (see conftest.py)."""
from __future__ import annotations

import subprocess

# -Wno-maybe-uninitialized: a GCC false positive inside Eigen's SelfAdjointEigenSolver / LLT
EXTRA_FLAGS = ("-Wno-maybe-uninitialized",)
CPP_BUILDS = [("test_interaction_unit", EXTRA_FLAGS)]   # built ahead, side by side (conftest.py)


def test_interaction_tick_cpp_unit(cpp_test_binary):
    exe = cpp_test_binary(*CPP_BUILDS[0])
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    print(res.stdout)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 failures, 0 heap allocations" in res.stdout
