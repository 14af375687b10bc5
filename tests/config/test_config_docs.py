"""docs/configuration.md is generated from the declarations; every declared key documents itself."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hri_runtime.config.tree import RULES_KEY, is_leaf_spec, load_declarations

REPO = Path(__file__).resolve().parents[2]


def test_configuration_doc_is_up_to_date():
    result = subprocess.run([sys.executable, "-m", "hri_runtime.cli.main", "config", "docs", "--check"],
                            cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_every_declared_key_has_a_description():
    missing = []

    def walk(node, prefix):
        for key, spec in node.items():
            if key == RULES_KEY:
                continue
            dotted = f"{prefix}.{key}" if prefix else key
            if is_leaf_spec(spec):
                if not spec.get("description"):
                    missing.append(dotted)
            else:
                walk(spec, dotted)

    walk(load_declarations(REPO / "config").schema, "")
    assert not missing, f"declared keys without description: {missing}"
