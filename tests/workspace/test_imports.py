"""Every module of every workspace package imports on its own, and no module imports itself back.

- Each module is imported in a fresh interpreter state (a child forked from a process that has
  imported nothing of the workspace), so a module that only works after another one was imported
  first, or an import cycle that only breaks in one import order, fails here. The parent has
  imported the third-party modules that the workspace imports at module level (numpy, scipy,
  mujoco, ...; never a workspace module), so each child pays only for the workspace's own code:
  a module that uses a name it did not import still fails (the cache holds modules, it binds no
  name in the child's module).
- The static check reads every ``import`` with ``ast`` – module level and inside functions (a
  function-level import hides a cycle, it does not remove it); imports under ``if TYPE_CHECKING:``
  are annotations only and do not count – and fails on any cycle between modules, and on any
  cycle between packages.
"""
from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# package name -> directory holding the import package
PACKAGE_DIRS = {p.parent.name: p.parent / p.parent.name
                for p in sorted((REPO / "src").glob("*/setup.py")) if (p.parent / p.parent.name).is_dir()}
PACKAGE_DIRS["hri_core"] = REPO / "cpp" / "hri_core"


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of every workspace package."""
    out: dict[str, Path] = {}
    for pkg, root in PACKAGE_DIRS.items():
        for f in sorted(root.rglob("*.py")):
            rel = f.relative_to(root.parent).with_suffix("")
            parts = list(rel.parts)
            if "test" in parts or "__pycache__" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = f
    return out


MODULES = _modules()

_DRIVER = textwrap.dedent("""
    import importlib, os, sys, traceback
    # argv: the third-party modules to import first (a failure here is left to the child that
    # imports it), "--", then the workspace modules
    split = sys.argv.index("--")
    for name in sys.argv[1:split]:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    assert not [m for m in sys.modules if m.split(".")[0] in WORKSPACE], "the parent imported the workspace"
    failed = 0
    for name in sys.argv[split + 1:]:
        pid = os.fork()
        if pid == 0:
            try:
                importlib.import_module(name)
            except BaseException:
                sys.stdout.write("FAIL " + name + "\\n" + traceback.format_exc(limit=6) + "\\n")
                sys.stdout.flush()
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        failed += status != 0
    sys.exit(1 if failed else 0)
""")


def _third_party_imports() -> list[str]:
    """The modules outside the workspace that workspace modules import at module level (top-level
    statements, including those under ``if``/``try``), dotted names."""
    out: set[str] = set()
    for path in MODULES.values():
        todo = list(ast.parse(path.read_text(encoding="utf-8")).body)
        while todo:
            node = todo.pop()
            if isinstance(node, (ast.If, ast.Try)):
                todo += [*node.body, *node.orelse, *getattr(node, "finalbody", []),
                         *(s for h in getattr(node, "handlers", []) for s in h.body)]
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                out.add(node.module)
    return sorted(m for m in out if m.split(".")[0] not in PACKAGE_DIRS and m != "__future__")


def test_every_module_imports_in_a_fresh_interpreter():
    assert len(MODULES) > 100 and "hri_runtime.node" in MODULES and "hri_core.se3" in MODULES
    third = _third_party_imports()
    assert "numpy" in third and "scipy.optimize" in third and not any(m.startswith("hri_") for m in third)
    driver = f"WORKSPACE = {sorted(PACKAGE_DIRS)!r}\n" + _DRIVER
    r = subprocess.run([sys.executable, "-c", driver, *third, "--", *sorted(MODULES)], capture_output=True,
                       text=True, timeout=600, cwd=REPO)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(name: str, path: Path) -> set[str]:
    """Workspace modules that module ``name`` imports (anywhere in its code)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    found: set[str] = set()

    def target(mod: str) -> None:
        # the module itself if it is one of ours, else the nearest package of ours above it
        parts = mod.split(".")
        while parts:
            cand = ".".join(parts)
            if cand in MODULES:
                if cand != name:
                    found.add(cand)
                return
            parts.pop()

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for sub in child.orelse:
                    walk(sub)
                continue
            if isinstance(child, ast.Import):
                for a in child.names:
                    target(a.name)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    parent = base[:len(base) - (child.level - 1)] if child.level > 1 else base
                    mod = ".".join(parent + ([child.module] if child.module else []))
                else:
                    mod = child.module or ""
                for a in child.names:
                    sub = f"{mod}.{a.name}"
                    target(sub if sub in MODULES else mod)
            walk(child)

    walk(tree)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


@pytest.fixture(scope="module")
def module_graph() -> dict[str, set[str]]:
    return {name: _imports(name, path) for name, path in MODULES.items()}


def test_the_static_import_reader_sees_function_level_imports(module_graph):
    # msgs finds interface files through the package lookup, inside a function
    assert "hri_runtime.packages" in module_graph["hri_runtime.msgs"]
    # ... and an annotation-only import (if TYPE_CHECKING) is not an import
    assert "hri_runtime.node" not in module_graph["hri_runtime.publisher"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_between_modules(module_graph):
    # a package's __init__ importing its own submodules is how packages work, not a cycle
    graph = {m: {d for d in deps if not (m.startswith(d + ".") and MODULES[d].name == "__init__.py")}
             for m, deps in module_graph.items()}
    cycles = _cycles(graph)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_no_import_cycle_between_packages(module_graph):
    pkg_graph: dict[str, set[str]] = {}
    for m, deps in module_graph.items():
        pkg_graph.setdefault(m.split(".")[0], set()).update(
            d.split(".")[0] for d in deps if d.split(".")[0] != m.split(".")[0])
    cycles = _cycles(pkg_graph)
    assert not cycles, "package import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


# what a core may not import: the node layer and the transports (a core is pure logic)
MIDDLEWARE = {f"hri_runtime.{m}" for m in (
    "node", "context", "inproc", "impl.zenoh_backend", "impl.rclpy_backend", "publisher",
    "subscription", "service", "client", "executors", "timer", "parameter_service",
    "launch.launch_service", "cli.launch")}


def test_the_middleware_list_names_real_modules():
    """A module renamed or moved must not silently leave the layer rule below checking nothing."""
    import importlib.util

    missing = sorted(m for m in MIDDLEWARE if importlib.util.find_spec(m) is None)
    assert not missing, missing


def test_layers_point_one_way(module_graph):
    """nodes -> cores -> runtime/maths, never back: no module of a ``core`` package imports a
    ``nodes`` module or the node layer / a transport of the runtime."""
    bad = []
    for m, deps in sorted(module_graph.items()):
        if ".core" not in m or not m.split(".")[1] == "core":
            continue
        for d in sorted(deps):
            if ".nodes" in d or d in MIDDLEWARE:
                bad.append(f"{m} -> {d}")
    assert not bad, bad
