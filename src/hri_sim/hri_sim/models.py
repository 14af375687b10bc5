"""Where the MuJoCo models come from.

The FR3 model with meshes ships in the ``franky-sim`` wheel (Apache-2.0), installed with
``--no-deps``. We only read its asset files; its Python package is never imported.
``MENAGERIE_ROOT`` (a MuJoCo Menagerie checkout) is honoured when a user has one.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent / "mjcf"


class ModelNotFoundError(FileNotFoundError):
    """A robot model is not installed on this machine; the message says how to get it."""


def _package_dir(dist_module: str) -> Path | None:
    # find_spec on a top-level name locates the package without executing its __init__.
    spec = importlib.util.find_spec(dist_module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def fr3_xml_path() -> Path:
    """Path of the FR3 MJCF (with meshes) shipped in the franky-sim wheel."""
    menagerie = os.environ.get("MENAGERIE_ROOT")
    if menagerie:
        candidate = Path(menagerie) / "franka_fr3" / "fr3.xml"
        if candidate.is_file():
            return candidate
    pkg = _package_dir("franky_sim")
    if pkg is not None:
        candidate = pkg / "assets" / "fr3.xml"
        if candidate.is_file():
            return candidate
    raise ModelNotFoundError(
        "FR3 model not found: install it with `.venv/bin/pip install --no-deps franky-sim` "
        "(done by `make`), or set MENAGERIE_ROOT to a MuJoCo Menagerie checkout."
    )


def fr3_spec():
    """The FR3 as a ``mujoco.MjSpec`` ready to compile (or to edit: sites, actuators, sensors).

    franky-sim's fr3.xml says ``meshdir="assets"`` but ships its meshes in ``assets/meshes``
    (its own simulator rewrites the path); we point the spec at the real directory."""
    import mujoco

    path = fr3_xml_path()
    spec = mujoco.MjSpec.from_file(str(path))
    mesh_dir = path.parent / "meshes"
    if mesh_dir.is_dir():
        spec.meshdir = str(mesh_dir)
    return spec


def fr3_model():
    """The compiled FR3 ``mujoco.MjModel`` as shipped (position actuators, no extras)."""
    return fr3_spec().compile()
