"""One declaration per parameter: typed params and node parameters from the parameter files."""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from hri_runtime.config.tree import ConfigError, load_declarations, load_robot_config, parameter_files
from hri_runtime.context import reset_default_context, set_default_context
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node
from hri_runtime.parameter import ParameterError
from hri_runtime.parameter_library.typed import declare_config, params_type

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _inproc_default_context():
    """Nodes built here without a context use an in-process one (no router needed)."""
    set_default_context(InprocContext())
    yield
    reset_default_context()


def test_params_type_fields_are_the_declared_keys_with_their_defaults():
    clutch = params_type("teleop.clutch")
    spec = load_declarations().spec("teleop.clutch")
    assert [f.name for f in dataclasses.fields(clutch)] == list(spec)
    assert params_type("teleop.clutch") is clutch                      # one type per section
    p = clutch()
    assert p.position_scale == spec["position_scale"]["default"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.position_scale = 2.0
    nested = params_type("teleop").defaults()
    assert nested.clutch == p and isinstance(nested.tracking.base_T_track_xyz_m, tuple)


def test_from_config_and_the_constructor_check_the_declaration_in_one_line():
    clutch = params_type("teleop.clutch")
    cfg = load_robot_config("fr3")
    assert clutch.from_config(cfg["teleop"]["clutch"]).mapping_frame == cfg["teleop"]["clutch"]["mapping_frame"]
    with pytest.raises(ConfigError, match=r"teleop\.clutch\.position_scale: -1 – expected a value > 0"):
        clutch.from_config({**cfg["teleop"]["clutch"], "position_scale": -1})
    with pytest.raises(ConfigError, match="did you mean 'mapping_frame'"):
        clutch.from_config({**cfg["teleop"]["clutch"], "maping_frame": "tool"})
    with pytest.raises(ValueError, match="one of"):
        clutch(mapping_frame="sideways")
    stop = params_type("safety.stop")                                    # a cross-key rule inside the section
    with pytest.raises(ValueError, match="one period of safety.stop.heartbeat_hz"):
        stop(heartbeat_hz=10.0, timeout_s=0.05)


def test_a_subclass_adds_derived_properties():
    class Stop(params_type("safety.stop")):
        @property
        def period_s(self) -> float:
            return 1.0 / self.heartbeat_hz

    s = Stop.from_config({"heartbeat_hz": 20, "timeout_s": 0.5, "max_sources": 8})
    assert isinstance(s, Stop) and s.period_s == 0.05 and isinstance(s.heartbeat_hz, float)


def test_declare_config_declares_every_key_with_its_descriptor_and_the_config_default():
    cfg = load_robot_config("fr3")
    node = Node("declare_probe", parameters={"teleop.vr.port": 0, "teleop.clutch.position_scale": 0.5})
    try:
        out = declare_config(node, ("teleop.vr", "teleop.clutch", "safety.stop"), cfg=cfg)
        assert node.get_parameter("robot").value == "fr3" and node.get_parameter("robot_id").value == "fr3"
        assert node.get_parameter("safety.stop.heartbeat_hz").value == cfg["safety"]["stop"]["heartbeat_hz"]
        assert out["teleop"]["vr"]["port"] == 0                            # an override wins; 0 = any free port
        assert out["teleop"]["clutch"]["position_scale"] == 0.5
        assert cfg["teleop"]["vr"]["port"] != 0                            # the input tree is untouched
        desc = node.get_parameter_descriptor("teleop.clutch.mapping_frame")
        assert desc.type == "string" and desc.values == ("world", "tool") and desc.read_only
        assert desc.description
        port = node.get_parameter_descriptor("teleop.vr.port")
        assert port.type == "integer" and port.range == (0, 65535)
        assert {k: v for k, v in out.items() if k != "teleop"} == {k: v for k, v in cfg.items() if k != "teleop"}
    finally:
        node.destroy_node()


def test_declare_config_refuses_bad_overrides_in_one_line():
    cfg = load_robot_config("fr3")
    node = Node("declare_bad", parameters={"teleop.clutch.position_scale": -1.0})
    try:
        with pytest.raises(ParameterError, match="must be > 0"):
            declare_config(node, ("teleop.clutch",), cfg=cfg)
    finally:
        node.destroy_node()
    node = Node("declare_rule", parameters={"safety.stop.heartbeat_hz": 1.0})
    try:
        with pytest.raises(ConfigError, match=r"<node parameters>: safety\.stop\.timeout_s"):
            declare_config(node, ("safety.stop",), cfg=cfg)
    finally:
        node.destroy_node()


def test_declare_config_loads_the_robot_parameter_and_skips_mappings():
    node = Node("declare_load", parameters={"robot": "tino", "robot_id": "tino_2"})
    try:
        out = declare_config(node, ("pulse.gamepad",))
        assert out["robot"]["model"] == "tino" and out["frames"]["base"] == "tino_2_base"
        assert not node.has_parameter("pulse.gamepad.joy_buttons")        # a mapping: not a ROS parameter
    finally:
        node.destroy_node()


def test_declare_config_declares_a_structured_map_field_by_field():
    """A map with declared ``fields`` (``pid_tuning.initial_gains``: kp, ki, kd per joint) is
    declared field by field where the robot's config holds one; an override reaches the tree."""
    cfg = load_robot_config("fr3")
    node = Node("declare_fields", parameters={"pid_tuning.initial_gains.kd": [1.0] * 7})
    try:
        out = declare_config(node, ("pid_tuning.initial_gains",), cfg=cfg)
        ig = cfg["pid_tuning"]["initial_gains"]
        assert node.get_parameter("pid_tuning.initial_gains.kp").value == [float(v) for v in ig["kp"]]
        assert node.get_parameter_descriptor("pid_tuning.initial_gains.kp").read_only
        assert out["pid_tuning"]["initial_gains"]["kd"] == [1.0] * 7
        assert not node.has_parameter("pid_tuning.initial_gains")
    finally:
        node.destroy_node()


def test_parameter_files_next_to_the_config_tree_win(tmp_path, monkeypatch):
    shutil.copytree(REPO / "config", tmp_path / "config")
    own = tmp_path / "src" / "hri_safety"
    own.mkdir(parents=True)
    text = (REPO / "src" / "hri_safety" / "parameters.yaml").read_text()
    (own / "parameters.yaml").write_text(text.replace("default: 0.25", "default: 0.2", 1))
    monkeypatch.setenv("HRI_CONFIG_ROOT", str(tmp_path / "config"))
    files = parameter_files()
    assert files["hri_safety"] == own / "parameters.yaml"
    rest = files["hri_runtime"]                  # the rest: this workspace (source or its install)
    assert tmp_path not in rest.parents
    assert rest.read_text() == (REPO / "src" / "hri_runtime" / "parameters.yaml").read_text()
    assert load_robot_config("tino")["safety"]["ee_speed_max_m_s"] == 0.2


def test_every_key_of_every_robot_declares_and_round_trips():
    from hri_runtime.config.tree import list_robots

    for robot in list_robots():
        cfg = load_robot_config(robot)
        node = Node(f"declare_all_{robot}")
        try:
            assert declare_config(node, tuple(cfg), cfg=cfg) == cfg, robot
            assert node.has_parameter("teleop.vr.port") and node.has_parameter("runtime.zenoh.mode")
        finally:
            node.destroy_node()


@pytest.mark.parametrize("layout", ["isolated", "merged"])
def test_parameter_files_of_an_install_space(tmp_path, monkeypatch, layout):
    """colcon's isolated (install/<pkg>/share/<pkg>/) and merged (install/share/<pkg>/) layouts:
    the files of the install holding the config tree are used."""
    def share(pkg: str) -> Path:
        return tmp_path / "install" / (pkg if layout == "isolated" else "") / "share" / pkg

    shutil.copytree(REPO / "config", share("hri_runtime") / "config")
    for declared in (REPO / "src").glob("*/parameters.yaml"):
        share(declared.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(declared, share(declared.parent.name) / "parameters.yaml")
    monkeypatch.setenv("HRI_CONFIG_ROOT", str(share("hri_runtime") / "config"))
    files = parameter_files()
    assert files and all(path == share(pkg) / "parameters.yaml" for pkg, path in files.items())
    assert load_robot_config("fr3")["robot"]["model"] == "fr3"


def test_params_type_of_the_values_of_a_structured_map():
    """``"<map>.*"``: one value of a declared map with structured values, typed and checked as an
    entry of that map (pid_tuning.setups: the thesis's setups)."""
    import dataclasses

    from hri_runtime.config.tree import ConfigError, load_robot_config
    from hri_runtime.parameter_library.typed import params_type

    Setup = params_type("pid_tuning.setups.*")
    assert params_type("pid_tuning.setups.*") is Setup
    s4 = load_robot_config("fr3")["pid_tuning"]["setups"]["s4"]
    st = Setup.from_config(s4)
    assert st.masses_kg.hand == 10.0 and st.effort_max_nm == tuple(s4["effort_max_nm"])
    bad = dict(s4, effort_max_nm=[80.0, 80.0, 80.0, 40.0])                  # length 5 declared
    with pytest.raises(ConfigError, match="effort_max_nm"):
        Setup.from_config(bad)
    with pytest.raises(ConfigError, match="physics_dt_s"):
        dataclasses.replace(st, physics_dt_s=1.0)                           # > 0.01 s declared
    with pytest.raises(ConfigError, match="structured"):
        params_type("pid_tuning.mirror_joints.*")                           # a map of plain values
