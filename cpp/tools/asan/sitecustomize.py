"""`make asan`: import the sanitizer builds of the compiled extensions instead of the .venv's.

On PYTHONPATH only in `make asan` (with HRI_ASAN_LIB = the build-lib directory of the
-fsanitize=address,undefined builds of hri_core._hri_core and hri_runtime._cdr). The .venv and its
in-place extensions stay as they are; only these two module names are redirected. A missing
sanitizer build is an ImportError, never a silent fallback to the normal build.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

MODULES = ("hri_core._hri_core", "hri_runtime._cdr")


class SanitizerBuilds(importlib.abc.MetaPathFinder):
    def __init__(self, lib: Path):
        self.lib = lib

    def find_spec(self, name, path=None, target=None):
        if name not in MODULES:
            return None
        pkg, mod = name.split(".")
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            f = self.lib / pkg / (mod + suffix)
            if f.is_file():
                return importlib.util.spec_from_file_location(
                    name, f, loader=importlib.machinery.ExtensionFileLoader(name, str(f)))
        raise ImportError(f"{name}: no sanitizer build in {self.lib / pkg} (`make asan` builds it)")


if os.environ.get("HRI_ASAN_LIB"):
    sys.meta_path.insert(0, SanitizerBuilds(Path(os.environ["HRI_ASAN_LIB"])))
