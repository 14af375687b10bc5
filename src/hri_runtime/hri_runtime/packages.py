"""Package lookup (as ``ament_index_python.packages``): a package's share and prefix
directories and its executables, with or without a ROS installation."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Optional

__all__ = ["PackageNotFoundError", "find_pkg_share", "find_pkg_prefix", "find_executable"]


class PackageNotFoundError(LookupError):
    """No share directory for the package (AMENT_PREFIX_PATH, the venv, installed sources)."""


def find_pkg_share(pkg: str) -> str:
    """share directory of a package: AMENT_PREFIX_PATH/<p>/share/<pkg>, <venv>/share/<pkg>, or
    (editable installs) the source directory holding its package.xml."""
    for prefix in [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p] + [sys.prefix]:
        d = Path(prefix) / "share" / pkg
        if (d / "package.xml").exists():
            return str(d)
    import importlib.util

    spec = importlib.util.find_spec(pkg)
    if spec is not None and spec.origin:
        src = Path(spec.origin).resolve().parent.parent
        if (src / "package.xml").exists():
            return str(src)
    ws = Path(__file__).resolve().parents[3] / "src" / pkg
    if (ws / "package.xml").exists():
        return str(ws)
    raise PackageNotFoundError(f"package '{pkg}' not found "
                               f"(AMENT_PREFIX_PATH, {sys.prefix}/share, installed Python packages)")


def find_pkg_prefix(pkg: str) -> str:
    return str(Path(find_pkg_share(pkg)).parent.parent)


def find_executable(pkg: str, exe: str) -> Optional[str]:
    cands: list[Path] = []
    for d in [p for p in os.environ.get("HRI_LAUNCH_PATH", "").split(os.pathsep) if p]:
        cands += [Path(d) / pkg / exe, Path(d) / exe]
    for prefix in [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p] + [sys.prefix]:
        cands.append(Path(prefix) / "lib" / pkg / exe)
    cands.append(Path(sys.executable).parent / exe)
    for c in cands:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return shutil.which(exe)

