"""Shared by the C++ unit-test runners: build a test program from cpp/test/cpp/ with g++
directly (no test framework), cached under build/cpp_tests/ by the hash of its sources."""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CPP = Path(__file__).resolve().parents[1]
REPO = CPP.parent
TEST_SRC = CPP / "test" / "cpp"


def eigen_include() -> Path:
    for root in map(Path, sys.path):
        p = root / "cmeel.prefix" / "include" / "eigen3"
        if (p / "Eigen" / "Core").is_file():
            return p
    p = Path("/usr/include/eigen3")
    if (p / "Eigen" / "Core").is_file():
        return p
    pytest.fail("Eigen headers not found (cmeel-eigen is a required dependency: make venv)")


def build_cpp_test(name: str, extra_flags: tuple[str, ...] = (), shared: bool = False) -> Path:
    """Compile cpp/test/cpp/<name>.cpp (rebuilt only when it, a test header or an hri_core
    header changed; older binaries of the same test are removed) and return the executable
    (shared=True: a shared library lib<name>_<hash>.so instead)."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.fail("no C++ compiler (g++ is needed to build the workspace)")
    src = TEST_SRC / f"{name}.cpp"
    files = [src, *sorted(TEST_SRC.glob("*.hpp")), *sorted((CPP / "include" / "hri_core").glob("*.hpp"))]
    # HRI_SANITIZE=address,undefined (`make asan`): built with the sanitizers, asserts on, into build/asan/
    sanitize = os.environ.get("HRI_SANITIZE", "").strip()
    if sanitize:
        extra_flags = (*extra_flags, "-O1", "-g1", "-UNDEBUG", "-fno-omit-frame-pointer", f"-fsanitize={sanitize}",
                       "-fno-sanitize-recover=all")
    if shared:
        extra_flags = (*extra_flags, "-shared", "-fPIC")
    h = hashlib.sha256(b"".join(f.read_bytes() for f in files) + " ".join(extra_flags).encode()).hexdigest()[:16]
    out_dir = REPO / "build" / ("asan/cpp_tests" if sanitize else "cpp_tests")
    stem, ext = (f"lib{name}", ".so") if shared else (name, "")
    exe = out_dir / f"{stem}_{h}{ext}"
    if exe.exists():
        return exe
    out_dir.mkdir(parents=True, exist_ok=True)
    # one compiler per program across processes (pytest-xdist workers, make asan beside make test):
    # the first builds, the others wait on the lock and then find it built
    with open(out_dir / f"{stem}_{h}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if exe.exists():
            return exe
        tmp = exe.with_name(f"{exe.name}.{os.getpid()}.tmp")
        cmd = [cxx, "-std=c++17", "-O2", "-march=x86-64-v2", "-Wall", "-Werror", *extra_flags,
               f"-I{CPP / 'include'}", f"-I{eigen_include()}", str(src), "-o", str(tmp)]
        # the compiler itself runs without the libasan that `make asan` preloads into python
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        res = subprocess.run(cmd, capture_output=True, text=True, env=env)
        assert res.returncode == 0, res.stderr[-4000:]
        tmp.rename(exe)
        for old in out_dir.glob(f"{stem}_*"):   # binaries (and locks) of older sources
            if not old.name.startswith(f"{stem}_{h}") and old.suffix in (ext, ".lock"):
                old.unlink(missing_ok=True)
    return exe


@pytest.fixture(scope="session")
def cpp_test_binary():
    """``cpp_test_binary(name, extra_flags=())`` -> path of the built test executable."""
    return build_cpp_test


def pytest_collection_finish(session):
    """Build the C++ test programs of the collected tests side by side, one compiler per core,
    before the first test runs (each is a single translation unit; one after the other they were
    most of `make asan`'s test time). A module lists its programs in CPP_BUILDS, as
    (name, extra_flags, shared) for build_cpp_test; its test builds (and checks) the same one and
    finds it cached. A failed build here is left to that test to report."""
    builds = {}
    for item in session.items:
        for b in getattr(getattr(item, "module", None), "CPP_BUILDS", ()):
            builds[b] = None
    if len(builds) < 2:
        return
    from concurrent.futures import ThreadPoolExecutor

    def build(b):
        try:
            build_cpp_test(*b)
        except BaseException:  # noqa: BLE001 -- reported by the test that builds it again
            pass

    with ThreadPoolExecutor(max_workers=min(len(builds), os.cpu_count() or 1)) as pool:
        list(pool.map(build, builds))
