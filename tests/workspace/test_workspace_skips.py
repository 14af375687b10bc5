"""No silent skips: a missing or broken build of the workspace's own code, or a missing required
dependency, fails the tests instead of skipping them; every skip that remains states its reason
(pytest.ini's -rs prints each with the count in the closing line)."""
from __future__ import annotations

import ast
import importlib.metadata
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _requirement_names() -> set[str]:
    """Distribution names (PEP 503 normalised) in requirements.in (the ranges of the lock)."""
    names = set()
    for line in (REPO / "requirements.in").read_text().splitlines():
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line.split("#", 1)[0])
        if m:
            names.add(re.sub(r"[-_.]+", "-", m.group(1)).lower())
    return names


def _required_modules() -> set[str]:
    """Top-level import names of the workspace's packages and of the required distributions."""
    inits = [*(REPO / "src").glob("*/*/__init__.py"), *(REPO / "cpp").glob("*/__init__.py")]
    own = {p.parent.name for p in inits if p.parent.name.startswith("hri_")}
    wanted = _requirement_names()
    deps = set()
    for dist in importlib.metadata.distributions():
        if re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower() in wanted:
            deps |= _top_level_modules(dist)
    return own | deps


def _top_level_modules(dist) -> set[str]:
    """The importable top-level names a distribution installs (from its file list: wheels built
    by maturin or meson have no top_level.txt, which packages_distributions() needs on 3.10)."""
    names = set()
    for f in dist.files or ():
        top = f.parts[0]
        if top.endswith((".dist-info", ".data")) or top in ("..", "__pycache__") or top.startswith("_"):
            continue
        if len(f.parts) > 1 or f.suffix in (".py", ".so"):
            names.add(top.split(".")[0])
    return names


def _call_name(node: ast.Call) -> str:
    return ast.unparse(node.func)


def _has_reason(node: ast.Call, positional: int) -> bool:
    """A non-empty reason: the ``positional``-th argument or ``reason=``/``msg=``."""
    args = list(node.args[positional:positional + 1]) + [k.value for k in node.keywords
                                                         if k.arg in ("reason", "msg")]
    return any(not (isinstance(a, ast.Constant) and not a.value) for a in args)


def skip_problems(source: str, filename: str, required: set[str]) -> list[str]:
    """The silent skips in one test file: importorskip of a required module, a skip without its
    reason."""
    bad = []
    for n in ast.walk(ast.parse(source, filename)):
        if not isinstance(n, ast.Call):
            continue
        name = _call_name(n)
        where = f"{filename}:{n.lineno}"
        if name.endswith("importorskip") and n.args and isinstance(n.args[0], ast.Constant):
            mod = str(n.args[0].value)
            if mod.split(".")[0] in required:
                bad.append(f"{where}: importorskip({mod!r}) of a required module: import it")
        elif name in ("pytest.skip", "skip") and not _has_reason(n, 0):
            bad.append(f"{where}: pytest.skip() without a reason")
        elif name.endswith("mark.skip") and not _has_reason(n, 0):
            bad.append(f"{where}: pytest.mark.skip without a reason")
        elif name.endswith("mark.skipif") and not _has_reason(n, 1):
            bad.append(f"{where}: pytest.mark.skipif without reason=")
    # a bare @pytest.mark.skip decorator (no call) has no reason either
    bad += [f"{filename}:{n.lineno}: bare @pytest.mark.skip" for n in ast.walk(ast.parse(source))
            if isinstance(n, (ast.FunctionDef, ast.ClassDef))
            for d in n.decorator_list if not isinstance(d, ast.Call) and ast.unparse(d).endswith("mark.skip")]
    return bad


def _test_files() -> list[Path]:
    dirs = [REPO / "tests", REPO / "cpp" / "test", *(REPO / "src").glob("*/test")]
    return sorted(f for d in dirs for f in d.rglob("*.py"))


def test_required_modules_include_the_workspace_and_its_dependencies():
    req = _required_modules()
    assert {"hri_core", "hri_runtime", "hri_interaction", "hri_sim"} <= req
    assert {"mujoco", "zenoh", "websockets", "numpy", "yaml", "playwright", "foxglove"} <= req
    assert "rclpy" not in req     # ROS 2 is optional for `make test` (tests/ros2 skip with a reason)


def test_no_test_skips_for_a_missing_build_or_required_dependency_or_without_a_reason():
    req = _required_modules()
    bad = []
    for f in _test_files():
        bad += skip_problems(f.read_text(), str(f.relative_to(REPO)), req)
    assert bad == []


@pytest.mark.parametrize("snippet, flagged", [
    ('pytest.importorskip("hri_core.se3")', True),
    ('x = pytest.importorskip("hri_runtime._cdr", reason="not built")', True),
    ('pytest.importorskip("mujoco")', True),
    ('pytest.importorskip("zenoh", reason="no zenoh")', True),
    ('pytest.importorskip("rclpy", reason="ROS 2 not sourced")', False),
    ('pytest.skip()', True),
    ('pytest.skip("")', True),
    ('pytest.skip("chromium absent: browser tests NOT RUN")', False),
    ('pytest.skip(reason=msg)', False),
    ('pytestmark = pytest.mark.skipif(x is None)', True),
    ('pytestmark = pytest.mark.skipif(x is None, reason="no openssl")', False),
    ('@pytest.mark.skip\ndef test_a(): pass', True),
    ('@pytest.mark.skip(reason="flaky")\ndef test_a(): pass', False),
])
def test_the_guard_flags_silent_skips(snippet, flagged):
    assert bool(skip_problems(snippet, "t.py", {"hri_core", "hri_runtime", "mujoco", "zenoh"})) is flagged
