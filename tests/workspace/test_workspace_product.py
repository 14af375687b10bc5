"""The repository reads as a product: sources cited by name (docs/references.md), no machine paths,
no history notes in docs or docstrings, and nodes that only use a core's public API."""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TEXT = (".py", ".md", ".yaml", ".xml", ".hpp", ".cpp", ".h", ".txt", ".cfg", ".toml", ".sh", ".json")


def _tracked_text_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    here = str(Path(__file__).relative_to(REPO))
    files = [REPO / f for f in out.splitlines()
             if f.endswith(TEXT) and not f.startswith("runs/") and f != here]
    return [f for f in files if f.is_file()]


def _hits(pattern: re.Pattern, files) -> list[str]:
    hits = []
    for f in files:
        for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{f.relative_to(REPO)}:{i}: {line.strip()[:120]}")
    return hits


def test_sources_are_cited_by_name_never_as_seed_documents():
    # "seed" as a random seed or an IK seed configuration is fine; a source document is not.
    files = _tracked_text_files()
    pattern = re.compile(r"\bseed[ -]?\d{3}\b|\bseed (table|§|doc|digest)|\bdigest[:,] |\bdigest \"", re.I)
    prose = re.compile(r"\(seed[,)]|seed / ", re.I)       # "0.41 mm (seed)" in a page
    assert _hits(pattern, files) + _hits(prose, [f for f in files if f.suffix == ".md"]) == []


def test_no_machine_paths():
    pattern = re.compile(r"(?<![\w.])/(work|home|Users|root)/[\w.]")
    assert _hits(pattern, _tracked_text_files()) == []


def test_docs_and_docstrings_name_no_issue_numbers():
    # history belongs in git, not in docs/docstrings ("issue #643" of rmw_zenoh is a citation)
    pattern = re.compile(r"\bissues? \d+\b", re.I)
    assert _hits(pattern, _tracked_text_files()) == []


def _node_files() -> list[Path]:
    src = REPO / "src"
    files = set(src.glob("*/*/nodes/*.py")) | set(src.glob("*/*/*_node.py"))
    return sorted(f for f in files if f.parent.name != "test")


@pytest.mark.parametrize("path", _node_files(), ids=lambda p: p.name)
def test_nodes_use_no_private_member_of_another_object(path):
    bad = []
    for n in ast.walk(ast.parse(path.read_text())):
        if (isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")
                and not (isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"))):
            bad.append(f"{path.name}:{n.lineno}: {ast.unparse(n)}")
    assert bad == []
