"""The C++ InteractionController's parameters (generate_parameter_library's YAML) are generated from
parameters.yaml and agree with it: names, defaults, bounds, read-only vs live (pure Python; no ROS)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hri_runtime.config.tree import ConfigError, load_declarations, load_robot_config
from hri_runtime.parameter_library import gpl
from hri_runtime.parameter_library.typed import leaves

PKG = Path(__file__).resolve().parents[1]
SPEC = PKG / "gpl_spec.yaml"


@pytest.fixture(scope="module")
def spec():
    return gpl.load_spec(SPEC)


@pytest.fixture(scope="module")
def doc(spec):
    return yaml.safe_load((PKG / spec["output"]).read_text())[spec["namespace"]]


def _entry(doc, dotted):
    node = doc
    for part in dotted.split("."):
        node = node[part]
    return node


def test_the_committed_yaml_is_the_generated_one(spec):
    text = gpl.render(spec, "src/hri_controllers/gpl_spec.yaml")
    assert (PKG / spec["output"]).read_text() == text, (
        "regenerate: python -m hri_runtime.parameter_library.gpl src/hri_controllers/gpl_spec.yaml")
    assert gpl.main([str(SPEC), "--check"]) == 0


def test_every_interaction_key_has_its_name_default_and_type(doc):
    decl = load_declarations()
    found = list(leaves(decl.spec("interaction"), ("interaction",)))
    assert len(found) > 60
    for path, leaf in found:
        e = _entry(doc, ".".join(path))
        assert e["default_value"] == gpl.flatten_value(leaf, leaf.get("default")), path
        want = {"float": "double", "int": "int", "bool": "bool", "str": "string", "enum": "string"}.get(leaf["type"])
        if want:
            assert e["type"] == want, path
        else:
            assert e["type"].endswith("_array"), path


def test_bounds_and_enums_become_validators(doc):
    rate = _entry(doc, "interaction.rate_hz")
    # at most one of the library's range validators per key (the descriptor holds one range)
    assert rate["validation"] == {"hri_controllers::validators::gt": [0.0], "lt_eq<>": [10000.0]}
    prio = _entry(doc, "interaction.rt.priority")
    assert prio["validation"] == {"bounds<>": [1, 99]}
    assert _entry(doc, "interaction.blend_s")["validation"] == {"bounds<>": [0.0, 10.0]}
    assert _entry(doc, "interaction.mode")["validation"] == {"one_of<>": [["impedance", "admittance", "hybrid"]]}
    k = _entry(doc, "interaction.impedance.stiffness_diag")["validation"]
    assert k == {"fixed_size<>": [6], "hri_controllers::validators::elements_gt": [0.0],
                 "hri_controllers::validators::elements_le": [1000000.0]}
    full = _entry(doc, "interaction.impedance.stiffness_full")
    assert full["type"] == "double_array" and full["default_value"] == []
    assert full["validation"] == {"hri_controllers::validators::empty_or_size": [36]}
    axes = _entry(doc, "interaction.hybrid.compliant_axes")
    assert axes["type"] == "int_array" and axes["default_value"] == [0, 0, 0, 1, 1, 1]


def test_live_keys_are_the_interaction_nodes_and_the_rest_is_read_only(spec, doc):
    from hri_interaction.core.live import LAW, LIVE

    # the controller's live keys are the node's, interaction.law included (docs/hardware.md)
    live = set(LIVE)
    assert LAW in live
    assert set(spec["live"]) == live
    for path, _ in leaves(load_declarations().spec("interaction"), ("interaction",)):
        dotted = ".".join(path)
        assert _entry(doc, dotted)["read_only"] is (dotted not in live), dotted


def test_the_robot_values_fill_the_same_names(spec):
    cfg = load_robot_config("fr3", overrides=["interaction.impedance.stiffness_full=" + str(
        [[float(i == j) * 100 for j in range(6)] for i in range(6)])])
    v = gpl.parameter_values(spec, cfg, model_file="/tmp/m.mjb")
    assert v["joints"]["names"] == cfg["joints"]["names"]
    assert v["interaction"]["impedance"]["stiffness_full"] == [float(i == j) * 100 for i in range(6) for j in range(6)]
    assert "damping_full" not in v["interaction"]["impedance"]    # null: left out (the default [] stands)
    assert v["model_file"] == "/tmp/m.mjb"
    with pytest.raises(KeyError):
        gpl.parameter_values(spec, cfg, not_a_parameter=1)


def test_what_the_library_cannot_hold_is_refused(spec):
    bad = dict(spec, keys=["joints.named_positions_deg"])       # a map
    with pytest.raises(ConfigError):
        gpl.document(bad)
    bad = dict(spec, live=["interaction.nope"])
    with pytest.raises(ConfigError):
        gpl.document(bad)


def test_descriptions_are_safe_in_a_cpp_string_literal(doc):
    """generate_parameter_library writes each description into a C++ string literal unescaped."""
    def walk(node, path=()):
        if "type" in node and "description" in node:
            yield ".".join(path), node["description"]
            return
        for k, v in node.items():
            if isinstance(v, dict):
                yield from walk(v, path + (k,))

    found = list(walk(doc))
    assert len(found) > 80
    for name, desc in found:
        assert '"' not in desc and "\\" not in desc and "\n" not in desc, name


def test_no_key_has_two_descriptor_ranges(doc):
    """Each of the library's range validators sets the descriptor's range, a sequence of at most
    one (rosidl bounded): two on a key overflow it when the parameter is declared."""
    ranges = ("gt<>", "lt<>", "gt_eq<>", "lt_eq<>", "bounds<>")

    def walk(node, path=()):
        if isinstance(node.get("type"), str):
            v = list(node.get("validation") or {})
            n = [k for k in v if k in ranges]
            assert len(n) <= 1, (".".join(path), n)
            # the library sizes the range by the validator's position: it must come first
            assert not n or v[0] == n[0], (".".join(path), v)
            return
        for k, v in node.items():
            if isinstance(v, dict):
                walk(v, path + (k,))
    walk(doc)
