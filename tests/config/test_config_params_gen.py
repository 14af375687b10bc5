"""The typed parameter classes generated from the packages' parameters.yaml (``make params``):
the committed modules are exactly what the generator writes, their classes hold exactly the
declared keys with the declared defaults, every robot's config builds them, and a bad value
is refused through the one validation path."""
from __future__ import annotations

import dataclasses
import importlib
import typing
from pathlib import Path

import pytest

from hri_runtime.config.tree import ConfigError, is_leaf_spec, list_robots, load_declarations, load_robot_config
from hri_runtime.parameter_library.typed import Params, class_name
from hri_runtime.parameter_library.codegen import CORE_SECTIONS, GENERATED_NAME, generated_files

REPO = Path(__file__).resolve().parents[2]


def _module_of(path: Path):
    package = path.parent.name
    return importlib.import_module(f"{package}.{GENERATED_NAME[:-3]}")


def test_the_committed_modules_are_what_the_generator_writes():
    files = generated_files(REPO / "config")
    packages = {p.parent.name for p in (REPO / "src").glob("*/parameters.yaml")}
    assert {p.parent.name for p in files} == packages | {"hri_core"}     # one module per package + the core
    stale = [str(p.relative_to(REPO)) for p, text in files.items()
             if not p.is_file() or p.read_text(encoding="utf-8") != text]
    assert not stale, f"out of date: {stale}: run `make params`"
    assert generated_files(REPO / "config") == files                    # deterministic


def _sections(node: dict, prefix: str):
    for key, child in node.items():
        if not is_leaf_spec(child):
            yield from _sections(child, f"{prefix}.{key}")
    yield prefix, node


@pytest.mark.parametrize("path", sorted(p for p in generated_files(REPO / "config") if p.parent.name != "hri_core"),
                         ids=lambda p: p.parent.name)
def test_each_declared_section_has_a_class_with_the_declared_keys_and_defaults(path):
    module = _module_of(path)
    declarations = load_declarations()
    owned = [s for s, f in declarations.files.items() if Path(f).parent.name == path.parent.name]
    assert owned
    for top in owned:
        for section, spec in _sections(declarations.schema[top], top):
            cls = getattr(module, class_name(section))
            assert issubclass(cls, Params) and cls.SECTION == section
            assert [f.name for f in dataclasses.fields(cls)] == list(spec), section
            hints = typing.get_type_hints(cls)
            fields = {f.name: f for f in dataclasses.fields(cls)}
            for name, child in spec.items():
                if not is_leaf_spec(child):
                    assert hints[name] is getattr(module, class_name(f"{section}.{name}"))
                    assert fields[name].default_factory is hints[name]
                    continue
                declared = child.get("default")
                if "${" in str(declared) or fields[name].default is dataclasses.MISSING:
                    continue                       # expanded when made / a mapping (factory)
                expected = tuple(declared) if isinstance(declared, list) else declared
                if child["type"] in ("float", "number") and isinstance(declared, int):
                    expected = float(declared)
                assert fields[name].default == expected, (section, name)
                if isinstance(fields[name].default, float):
                    assert child["type"] in ("float", "number"), (section, name)


@pytest.mark.parametrize("robot", list_robots())
def test_every_robot_config_builds_every_generated_class(robot):
    cfg = load_robot_config(robot)
    declarations = load_declarations()
    for path in generated_files(REPO / "config"):
        if path.parent.name == "hri_core":
            continue
        module = _module_of(path)
        for top, file in declarations.files.items():
            if Path(file).parent.name != path.parent.name:
                continue
            params = getattr(module, class_name(top)).from_tree(cfg)
            assert dataclasses.asdict(params)            # every nested class built
    float_key = getattr(importlib.import_module("hri_safety.parameters_gen"), "SafetyParams").from_tree(cfg)
    assert isinstance(float_key.ee_speed_max_m_s, float)
    assert isinstance(float_key.workspace_min_m, tuple)


def test_a_bad_value_is_refused_in_one_line_by_from_config_and_the_constructor():
    from hri_arm_teleop.parameters_gen import TeleopClutchParams

    cfg = load_robot_config("fr3")
    with pytest.raises(ConfigError, match=r"teleop\.clutch\.position_scale: -1 – expected a value > 0"):
        TeleopClutchParams.from_config({**cfg["teleop"]["clutch"], "position_scale": -1})
    with pytest.raises(ConfigError, match="did you mean 'mapping_frame'"):
        TeleopClutchParams.from_config({**cfg["teleop"]["clutch"], "maping_frame": "tool"})
    with pytest.raises(ConfigError, match="one of"):
        TeleopClutchParams(mapping_frame="sideways")
    with pytest.raises(dataclasses.FrozenInstanceError):
        TeleopClutchParams.defaults().position_scale = 2.0


def test_the_core_classes_derive_from_the_generated_ones_and_take_every_robots_values():
    core = importlib.import_module("hri_core.parameters_gen")
    for section, user in CORE_SECTIONS.items():
        module, name = user.rsplit(".", 1)
        cls = getattr(importlib.import_module(module), name)
        base = getattr(core, class_name(section))
        assert issubclass(cls, base)
        spec = load_declarations().spec(section)
        assert [f.name for f in dataclasses.fields(base)] == [k for k, v in spec.items() if is_leaf_spec(v)]
        for robot in list_robots():
            node = load_robot_config(robot)
            for part in section.split("."):
                node = node[part]
            assert isinstance(cls.from_config(node), cls)
    text = (REPO / "cpp" / "hri_core" / GENERATED_NAME).read_text()
    assert "hri_runtime" not in text.split('"""', 2)[-1]                 # the core imports no workspace package


def test_the_cli_check_reports_a_stale_module(tmp_path, capsys):
    import shutil

    from hri_runtime.parameter_library.codegen import main

    shutil.copytree(REPO / "config", tmp_path / "config")
    for declared in (REPO / "src").glob("*/parameters.yaml"):
        package = tmp_path / "src" / declared.parent.name
        (package / declared.parent.name).mkdir(parents=True)
        shutil.copy(declared, package / "parameters.yaml")
    (tmp_path / "cpp" / "hri_core").mkdir(parents=True)
    assert main(tmp_path / "config", check=True) == 1                  # hri_core's module is missing
    assert main(tmp_path / "config") == 0 and main(tmp_path / "config", check=True) == 0
    yaml = tmp_path / "src" / "hri_safety" / "parameters.yaml"
    yaml.write_text(yaml.read_text().replace("default: 0.25", "default: 0.2", 1))
    capsys.readouterr()
    assert main(tmp_path / "config", check=True) == 1
    assert "hri_safety/parameters_gen.py is out of date: run `make params`" in capsys.readouterr().err
