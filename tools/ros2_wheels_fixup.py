"""Point the CMake exports of the ros-jazzy-* wheels at this venv's own headers (`make ros2-ci`).

The wheels were built in another image: their exported targets (e.g.
``share/std_msgs/cmake/export_std_msgs__rosidl_generator_pyExport.cmake``) name that image's
CPython and numpy include directories in ``INTERFACE_INCLUDE_DIRECTORIES``, so CMake refuses any
package that links them (rosidl's Python type support of src/hri_interfaces). This rewrites, in
the venv's installed ``*.cmake`` files only, every such directory that does not exist to the one
of the interpreter running this script (run it with the venv's python). Idempotent: a fixed file
names existing directories and is left alone. Any other missing include directory is an error.

    .venv-ros2/bin/python tools/ros2_wheels_fixup.py .venv-ros2
"""
from __future__ import annotations

import re
import sys
import sysconfig
from pathlib import Path

PROP = re.compile(r'(INTERFACE_INCLUDE_DIRECTORIES\s+")([^"]*)(")')


def replacement(path: str, py_inc: str, np_inc: str) -> str | None:
    p = path.rstrip("/")
    if re.search(r"/include/python\d+\.\d+$", p):
        return py_inc
    if p.endswith("/numpy/_core/include") or p.endswith("/numpy/core/include"):
        return np_inc
    return None


def fix(prefix: Path) -> tuple[int, list[str]]:
    import numpy

    py_inc, np_inc = sysconfig.get_paths()["include"], numpy.get_include()
    changed, unknown = 0, []
    files = [f for d in ("share", "lib") if (prefix / d).is_dir() for f in (prefix / d).rglob("*.cmake")]
    for f in files:
        text = f.read_text()
        if "INTERFACE_INCLUDE_DIRECTORIES" not in text:
            continue

        def sub(m: re.Match) -> str:
            out = []
            for d in m.group(2).split(";"):
                if d and "${" not in d and "$<" not in d and not Path(d).exists():
                    new = replacement(d, py_inc, np_inc)
                    if new is None:
                        unknown.append(f"{f.relative_to(prefix)}: {d}")
                    else:
                        d = new
                out.append(d)
            return m.group(1) + ";".join(out) + m.group(3)

        new_text = PROP.sub(sub, text)
        if new_text != text:
            f.write_text(new_text)
            changed += 1
    return changed, unknown


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: ros2_wheels_fixup.py <venv prefix>", file=sys.stderr)
        return 2
    prefix = Path(argv[0]).resolve()
    if Path(sys.prefix).resolve() != prefix:
        print(f"ros2_wheels_fixup.py: error: run it with {prefix}/bin/python (the venv whose headers to use)",
              file=sys.stderr)
        return 2
    changed, unknown = fix(prefix)
    print(f"ros2_wheels_fixup: {changed} CMake export file(s) pointed at this venv's CPython/numpy headers")
    if unknown:
        print("ros2_wheels_fixup: error: include directories that do not exist and are not CPython's or numpy's:\n  "
              + "\n  ".join(unknown), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
