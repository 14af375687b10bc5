"""The locked environment: ``make`` installs exact versions with hashes from the lock files, and
the locks agree with the ranges they were compiled from (requirements*.in), for every CPython the
workspace supports. A range edited without ``make lock`` (or a lock edited by hand) fails here."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
PAIRS = (("requirements.in", "requirements.lock"), ("requirements-assets.in", "requirements-assets.lock"))


def _ranges(path: Path) -> dict[str, Requirement]:
    """The ranges of a requirements file, with the files it includes (``-r other.in``)."""
    out = {}
    for line in path.read_text().splitlines():
        text = line.split("#", 1)[0].strip()
        if text.startswith("-r "):
            out.update(_ranges(path.parent / text[3:].strip()))
        elif text:
            req = Requirement(text)
            out[canonicalize_name(req.name)] = req
    return out


def _pins(path: Path) -> list[tuple[str, Version, Marker | None, list[str]]]:
    """(name, version, marker, hashes) of every entry of a pip-style lock with hashes."""
    entries = []
    joined = path.read_text().replace("\\\n", " ")
    for line in joined.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9._-]+)==([^\s;]+)\s*(?:;\s*(.*?))?\s*((?:--hash=\S+\s*)*)", line.strip())
        assert match, f"{path.name}: not a pinned, hashed requirement: {line.strip()[:120]}"
        name, version, marker, hashes = match.groups()
        marker = Marker(marker.strip()) if marker and marker.strip() else None
        entries.append((canonicalize_name(name), Version(version), marker, hashes.split()))
    return entries


def _environment(python: str) -> dict[str, str]:
    return {"python_version": python, "python_full_version": f"{python}.0", "sys_platform": "linux",
            "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "extra": ""}


@pytest.mark.parametrize("python", PYTHONS)
@pytest.mark.parametrize("source,lock", PAIRS)
def test_lock_pins_every_range_with_a_version_it_allows(source, lock, python):
    ranges, pins = _ranges(REPO / source), _pins(REPO / lock)
    env = _environment(python)
    chosen: dict[str, list[Version]] = {}
    for name, version, marker, hashes in pins:
        assert hashes and all(h.startswith("--hash=sha256:") for h in hashes), f"{lock}: {name} has no sha256 hash"
        if marker is None or marker.evaluate(env):
            chosen.setdefault(name, []).append(version)
    for name, versions in chosen.items():
        assert len(versions) == 1, f"{lock}: {name} pinned {len(versions)} times for CPython {python}"
    for name, req in ranges.items():
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        assert name in chosen, f"{lock} does not pin {name} for CPython {python}: run `make lock`"
        assert req.specifier.contains(chosen[name][0], prereleases=True), \
            f"{lock} pins {name}=={chosen[name][0]} outside {source}'s range {req.specifier}: run `make lock`"


@pytest.mark.parametrize("source,lock", PAIRS)
def test_lock_names_its_source_and_the_command_that_refreshes_it(source, lock):
    text = (REPO / lock).read_text()
    assert "make lock" in text.splitlines()[1]
    direct = {n for n, *_ in _pins(REPO / lock) if f"-r {source}" in text}
    assert set(_ranges(REPO / source)) <= direct
    # every direct requirement is annotated as coming from the ranges file (compiled, not typed)
    blocks = re.split(r"\n(?=\S)", text)
    for name in _ranges(REPO / source):
        block = next((b for b in blocks if canonicalize_name(b.split("==", 1)[0]) == name), None)
        assert block is not None and f"-r {source}" in block, f"{lock}: {name} not compiled from {source}"


def test_make_installs_only_from_the_locks():
    """The venv recipe installs third-party code only with --require-hashes from the locks."""
    mk = (REPO / "Makefile").read_text()
    recipe = re.search(r"^\$\(VENV\)/\.deps:(.*)\n((?:\t.*\n)+)", mk, re.M)
    assert recipe, "Makefile has no $(VENV)/.deps rule"
    assert set(recipe.group(1).split()) == {lock for _, lock in PAIRS}
    installs = [ln.strip() for ln in recipe.group(2).splitlines() if "pip install" in ln.replace("$(PIP)", "pip")]
    assert installs, "the .deps recipe installs nothing"
    for cmd in installs:
        assert "--require-hashes" in cmd and re.search(r"-r requirements(-assets)?\.lock\b", cmd), cmd
    assert not (REPO / "requirements.txt").exists(), "ranges live in requirements.in, versions in the lock"


def test_the_ros2_lock_pins_every_range_of_the_workspace_too():
    """requirements-ros2.lock (``make ros2-ci``'s venv, CPython 3.11 only) pins the Jazzy wheels and,
    through ``-r requirements.in``, every range of the workspace: a range added to requirements.in
    without ``make ros2-lock`` fails here, not first in CI's ROS 2 step."""
    ranges, pins = _ranges(REPO / "requirements-ros2.in"), _pins(REPO / "requirements-ros2.lock")
    assert "make ros2-lock" in (REPO / "requirements-ros2.lock").read_text().splitlines()[1]
    env = _environment("3.11")
    chosen = {name: version for name, version, marker, hashes in pins
              if hashes and (marker is None or marker.evaluate(env))}
    for name, req in ranges.items():
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        assert name in chosen, f"requirements-ros2.lock does not pin {name}: run `make ros2-lock`"
        assert req.specifier.contains(chosen[name], prereleases=True), \
            f"requirements-ros2.lock pins {name}=={chosen[name]} outside its range {req.specifier}: run `make ros2-lock`"
