"""The sanitizer of `make asan` is live: a run with 0 reports means something.

Under `make asan` (HRI_SANITIZE set): the extensions imported are the -fsanitize=address,undefined
builds of build/asan/lib (they call into ASan and UBSan), libasan is loaded into this interpreter,
and a deliberately faulty C++ program (cpp/test/cpp/sanitizer_canary.cpp, built by the same
conftest as the C++ unit tests) and the same code as a shared library called from a Python child
with `make asan`'s own environment report a heap-buffer-overflow and a signed overflow, and nothing
when called correctly. Those reports are written to the test's own directory (log_path changed,
every other option kept), so they do not count as reports of the run.

Under `make test`: the .venv's extensions carry no sanitizer (the shipped build), and the canary
built with the sanitizers explicitly reports the same faults (the toolchain can do it).
"""
from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SANITIZE = os.environ.get("HRI_SANITIZE", "").strip()
EXTENSIONS = ("hri_core._hri_core", "hri_runtime._cdr")
CANARY_FLAGS = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g1", "-fno-omit-frame-pointer")
FAULTS = {  # canary argument -> (what, index) of hri_canary, the report's words
    "heap-overflow": ((0, 8), "ERROR: AddressSanitizer: heap-buffer-overflow"),
    "signed-overflow": ((1, 2), "runtime error: signed integer overflow"),
}
# ASan writes its report to log_path (build/asan/report.<pid> under `make asan`, counted there); the
# UBSan of GCC's combined runtime writes to stderr whatever log_path says (`make asan` runs pytest
# with --capture=sys and scans its stderr).
IN_LOG = {"heap-overflow"}
CPP_BUILDS = [("sanitizer_canary", CANARY_FLAGS, False),   # built ahead, side by side (conftest.py)
              ("sanitizer_canary", (*CANARY_FLAGS, "-DHRI_CANARY_LIB"), True)]


def _undefined_symbols(path: str) -> set[str]:
    nm = shutil.which("nm")
    assert nm, "nm (binutils, installed with g++) is needed to read the extension's symbols"
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    res = subprocess.run([nm, "-D", "--undefined-only", path], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    return {line.split()[-1] for line in res.stdout.splitlines() if line.strip()}


def _with_log_path(options: str, log: Path) -> str:
    kept = [o for o in options.split(":") if o and not o.startswith("log_path=")]
    return ":".join([*kept, f"log_path={log}"])


def _sanitizer_env(tmp_path: Path) -> dict[str, str]:
    """`make asan`'s environment with the reports sent to tmp_path/report.<pid>; under `make test`
    a minimal one of the same kind (libasan preloaded into the uninstrumented interpreter)."""
    env = dict(os.environ)
    if not SANITIZE:
        cxx = shutil.which("g++") or shutil.which("c++")
        libasan = subprocess.run([cxx, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
        assert Path(libasan).is_file(), f"libasan not found by {cxx}"
        env |= {"LD_PRELOAD": libasan, "ASAN_OPTIONS": "detect_leaks=0", "UBSAN_OPTIONS": "print_stacktrace=1"}
    for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        env[var] = _with_log_path(env.get(var, ""), tmp_path / "report")
    return env


def _reports(tmp_path: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in sorted(tmp_path.glob("report.*")))


def test_the_extensions_carry_the_sanitizers_exactly_under_make_asan():
    for name in EXTENSIONS:
        mod = importlib.import_module(name)
        syms = _undefined_symbols(mod.__file__)
        asan = any(s.startswith("__asan_report_") for s in syms)
        ubsan = any(s.startswith("__ubsan_handle_") for s in syms)
        if SANITIZE:
            lib = Path(os.environ["HRI_ASAN_LIB"]).resolve()
            assert Path(mod.__file__).resolve().is_relative_to(lib), f"{name} is not the sanitizer build: {mod.__file__}"
            assert asan and ubsan, f"{name} ({mod.__file__}) is not instrumented: asan={asan} ubsan={ubsan}"
        else:
            assert not (asan or ubsan), f"{name} ({mod.__file__}) of the .venv carries a sanitizer"
    maps = Path("/proc/self/maps").read_text()
    assert ("libasan" in maps) == bool(SANITIZE), "libasan is preloaded exactly under make asan"


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_faulty_cpp_program_is_reported(cpp_test_binary, tmp_path, fault):
    exe = cpp_test_binary(*CPP_BUILDS[0])
    env = _sanitizer_env(tmp_path)
    ok = subprocess.run([str(exe), "ok"], capture_output=True, text=True, env=env, timeout=60)
    assert ok.returncode == 0 and "canary ok returned" in ok.stdout, ok.stdout + ok.stderr
    assert _reports(tmp_path) == "" and "runtime error" not in ok.stderr, ok.stderr
    bad = subprocess.run([str(exe), fault], capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode != 0, bad.stdout + bad.stderr
    assert "returned" not in bad.stdout
    report = _reports(tmp_path) if fault in IN_LOG else bad.stderr
    assert FAULTS[fault][1] in report, report or bad.stderr
    assert re.search(r"sanitizer_canary\.cpp:\d+", report), report   # symbolized to the faulty line


CHILD = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
what, index = int(sys.argv[2]), int(sys.argv[3])
print("canary returned", lib.hri_canary(what, index), flush=True)
"""


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_faulty_library_inside_python_is_reported(cpp_test_binary, tmp_path, fault):
    lib = cpp_test_binary(*CPP_BUILDS[1])
    env = _sanitizer_env(tmp_path)
    if SANITIZE:
        assert "libasan" in env.get("LD_PRELOAD", ""), "make asan preloads libasan into python"
    (what, index) = FAULTS[fault][0]
    ok = subprocess.run([sys.executable, "-c", CHILD, str(lib), str(what), str(index - 1)],
                        capture_output=True, text=True, env=env, timeout=60)
    assert ok.returncode == 0 and "canary returned" in ok.stdout, ok.stdout + ok.stderr
    assert _reports(tmp_path) == "" and "runtime error" not in ok.stderr, ok.stderr
    bad = subprocess.run([sys.executable, "-c", CHILD, str(lib), str(what), str(index)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode != 0, bad.stdout + bad.stderr
    assert "canary returned" not in bad.stdout
    report = _reports(tmp_path) if fault in IN_LOG else bad.stderr
    assert FAULTS[fault][1] in report, report or bad.stderr
    assert re.search(r"sanitizer_canary\.cpp:\d+", report), report
