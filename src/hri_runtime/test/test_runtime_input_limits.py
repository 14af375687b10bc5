"""Bounded readers of untrusted text: config YAML (size, encoding, nesting, aliases, duplicate
keys) and launch ``$(eval)`` (no Python eval, sizes checked before computing). In-process; the
same classes through the real CLI are in tests/config and tests/cli."""
from __future__ import annotations

import pytest

from hri_runtime import errors
from hri_runtime.config.tree import MAX_NESTING, MAX_NODES, ConfigError, parse_yaml_text, read_yaml
from hri_runtime.launch.launch_description import LaunchError
from hri_runtime.launch.substitutions import safe_eval


@pytest.mark.parametrize("text, key, expected", [
    ("a: 1\nb: 2\na: 3\n", "a", "again on line 3, first on line 1"),
    ("s:\n  - {x: 1, x: 2}\n", "s[0].x", "each key once"),
    ("a: " + "[" * (MAX_NESTING + 5), "a" + "[0]" * (MAX_NESTING - 1), f"at most {MAX_NESTING} nested"),
    ("a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcde", "bcdef")),
     None, f"at most {MAX_NODES} nodes"),
    ("a: &r [*r]\n", "a[0]", "complete earlier anchor"),
    ("? [1]\n: 2\n", "<root>", "scalar mapping keys"),
    ("a: [1\n", None, "valid YAML syntax"),
    ("a: !!python/object:os.system x\n", None, "valid YAML syntax"),
])
def test_hostile_yaml_is_one_config_error(text, key, expected):
    with pytest.raises(ConfigError) as e:
        parse_yaml_text(text, "f.yaml")
    line = e.value.one_line()
    assert "\n" not in line and line.startswith("f.yaml: ")
    assert expected in line
    if key is not None:
        assert e.value.key_path == key


def test_aliases_and_merge_keys_within_limits_still_load():
    assert parse_yaml_text("a: &x {k: 1}\nb: *x\nc: {<<: *x, j: 2}\n") == {
        "a": {"k": 1}, "b": {"k": 1}, "c": {"k": 1, "j": 2}}


def test_file_limits(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (2 << 20))
    with pytest.raises(ConfigError, match="a file of at most"):
        read_yaml(big)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(ConfigError) as e:
        read_yaml(latin)
    assert e.value.key_path == "<line 2, byte 11>" and "UTF-8" in e.value.expected


@pytest.mark.parametrize("expr, value", [
    ("1 + 2 * 3", 7), ("2 ** 10", 1024), ("3 if 1 > 2 else 4", 4), ("'a' + 'b'", "ab"),
    ("(1, 2) == (1, 2)", True), ("1 in [1, 2]", True), ("not 0 and 5", 5), ("7 // 2 - 7 % 2", 2),
])
def test_launch_eval_arithmetic(expr, value):
    assert safe_eval(expr) == value


@pytest.mark.parametrize("expr, reason", [
    ("9**9**9", "larger than 256 bits"),
    ("-2**300", "larger than 256 bits"),
    ("'a' * 100000", "longer than 1024 items"),
    ("[0] * 10**6", "longer than 1024 items"),
    ("'%999999999d' % 1", "string formatting"),
    ("__import__('os')", "only literals"),
    ("[].__class__", "only literals"),
    ("(lambda: 1)()", "only literals"),
    ("1/0", "ZeroDivisionError"),
    ("2.0 ** 100000", "OverflowError"),
    ("1 +", "not an expression"),
    ("1" * 300, "longer than 256 characters"),
])
def test_launch_eval_refuses_before_computing(expr, reason):
    with pytest.raises(LaunchError, match=reason):
        safe_eval(expr)


def test_input_error_classification():
    assert errors.is_input_error(ValueError("x")) and errors.is_input_error(OSError(98, "busy"))
    try:
        try:
            raise OSError(98, "Address already in use")
        except OSError as e:
            raise RuntimeError("cannot listen") from e
    except RuntimeError as wrapped:
        assert errors.is_input_error(wrapped)          # explained in the node's words
    assert not errors.is_input_error(RuntimeError("bug"))
    assert not errors.is_input_error(RecursionError())
    assert errors.one_line(ValueError("a\n  b")) == "a b"
