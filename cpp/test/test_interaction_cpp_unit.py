"""Builds and runs cpp/test/cpp/test_interaction_unit.cpp (InteractionTick, owner hri_interaction)
with g++ directly: every law x filter x mode, 2000 gated ticks each with the SafetyChecker, zero
heap allocations inside the tick loop, NaN state held, workspace violation freezes. Cached under
build/cpp_tests/ by the hash of its sources."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CPP = Path(__file__).resolve().parents[1]
REPO = CPP.parent
SRC = CPP / "test" / "cpp" / "test_interaction_unit.cpp"


def eigen_include() -> Path:
    for root in map(Path, sys.path):
        p = root / "cmeel.prefix" / "include" / "eigen3"
        if (p / "Eigen" / "Core").is_file():
            return p
    p = Path("/usr/include/eigen3")
    if (p / "Eigen" / "Core").is_file():
        return p
    pytest.skip("Eigen headers not found (pip install cmeel-eigen)")


def build() -> Path:
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    files = [SRC, *sorted((CPP / "include" / "hri_core").glob("*.hpp"))]
    h = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]
    out_dir = REPO / "build" / "cpp_tests"
    exe = out_dir / f"test_interaction_unit_{h}"
    if not exe.exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = exe.with_suffix(".tmp")
        # -Wno-maybe-uninitialized: a GCC false positive inside Eigen's SelfAdjointEigenSolver / LLT
        cmd = [cxx, "-std=c++17", "-O2", "-march=x86-64-v2", "-Wall", "-Werror", "-Wno-maybe-uninitialized",
               f"-I{CPP / 'include'}", f"-I{eigen_include()}", str(SRC), "-o", str(tmp)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr[-4000:]
        tmp.rename(exe)
        for old in out_dir.glob("test_interaction_unit_*"):
            if old != exe:
                old.unlink(missing_ok=True)
    return exe


def test_interaction_tick_cpp_unit():
    exe = build()
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    print(res.stdout)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 failures, 0 heap allocations" in res.stdout
