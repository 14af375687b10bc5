"""Builds and runs the C++ unit tests (cpp/test/cpp/test_core_unit.cpp) with g++ directly.

The executable covers se3 round trips, the safety checker (basic cases, a fuzz of 1,000,000
random commands with NaN/Inf/huge/exactly-at-limit/rate jumps, zero heap allocations counted by
a replaced operator new) and a planar POE model.  The build is cached (see conftest.py).
"""
from __future__ import annotations

import subprocess


CPP_BUILDS = [("test_core_unit", ())]   # built ahead, side by side (conftest.py)


def test_cpp_unit_tests_pass(cpp_test_binary):
    exe = cpp_test_binary(*CPP_BUILDS[0])
    res = subprocess.run([str(exe), "1000000"], capture_output=True, text=True, timeout=120)
    print(res.stdout)
    assert res.returncode == 0, res.stdout + res.stderr
