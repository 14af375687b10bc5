"""Provenance of a result: the git commit, the package version and the build of the compiled core.

[Chang 2026, chapter 11, "Real-Time C++ Core", "Reproducibility Provenance"]: a version tuple of
(git commit, package version, Eigen version) goes with every result file and every controller
start-up log. Ours: :func:`provenance` (a dict), :func:`line` (one line for logs and benchmark
headers), :func:`metadata` (flat strings, an MCAP metadata record). Every result writer and
``run_node``'s start-up line use these, nothing else computes them.

* ``commit``: ``git rev-parse HEAD`` of the checkout this module runs from, with ``-dirty`` when
  tracked files differ from it. Not a checkout (an installed wheel or colcon install: this file
  lies outside any git work tree, or in an ignored folder of one), or no ``git`` program:
  ``unknown (...)`` saying why -- never an error.
* ``version``: the distribution version of the package that writes the result
  (``importlib.metadata``), ``unknown (not installed)`` when it has none.
* ``build``: ``hri_core``'s compile flags, compiler and Eigen version as compiled into the
  extension (``hri_core._hri_core.BUILD_FLAGS``, ``COMPILER``, ``EIGEN_VERSION``); ``hri_core
  not built`` when the extension is missing.

Computed once per process (a few ``git`` calls, bounded by a timeout) and cached.
"""
from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

__all__ = ["provenance", "line", "metadata", "git_commit", "build_info"]

GIT_TIMEOUT_S = 5.0


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S)


@functools.lru_cache(maxsize=None)
def git_commit(source: str = __file__) -> str:
    """The commit of the git checkout ``source`` (a file) belongs to, ``-dirty`` appended when
    tracked files are modified; ``unknown (<why>)`` when there is none."""
    path = Path(source).resolve()
    try:
        inside = _git(["rev-parse", "--is-inside-work-tree"], path.parent)
        if inside.returncode != 0 or inside.stdout.strip() != "true" or \
                _git(["check-ignore", "-q", path.name], path.parent).returncode == 0:
            # outside any work tree, or inside one but ignored (a .venv, build/ or install/ copy)
            return "unknown (not a git checkout: installed package)"
        head = _git(["rev-parse", "HEAD"], path.parent)
        if head.returncode != 0:
            return "unknown (git rev-parse failed)"
        dirty = _git(["status", "--porcelain", "--untracked-files=no"], path.parent)
    except FileNotFoundError:
        return "unknown (git not installed)"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown (git: {type(exc).__name__})"
    return head.stdout.strip() + ("-dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")


def build_info() -> str:
    """hri_core's build: compile flags, compiler, Eigen version (compiled into the extension), of
    the core this process has loaded. The runtime never imports the maths core (both are bottom
    layers, tests/workspace/test_workspace_layout.py), so a process without it says so."""
    ext = sys.modules.get("hri_core._hri_core")
    if ext is None:
        return "hri_core not loaded in this process"
    flags = getattr(ext, "BUILD_FLAGS", None)
    if flags is None:
        return "hri_core built without build information (rebuild it: make venv)"
    return f"{flags}; compiler {ext.COMPILER}; Eigen {ext.EIGEN_VERSION}"


@functools.lru_cache(maxsize=None)
def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown (not installed)"


def provenance(package: str = "hri_runtime") -> dict:
    """``{"package", "version", "commit", "build"}`` of a result written by ``package``."""
    return {"package": package, "version": _version(package), "commit": git_commit(), "build": build_info()}


def line(package: str = "hri_runtime") -> str:
    """One line: ``<package> <version>, commit <sha>, build <flags; compiler; Eigen>``."""
    p = provenance(package)
    return f"{p['package']} {p['version']}, commit {p['commit']}, build {p['build']}"


def metadata(package: str = "hri_runtime") -> dict:
    """The provenance as str -> str (an MCAP metadata record, a JSON object)."""
    return {k: str(v) for k, v in provenance(package).items()}
