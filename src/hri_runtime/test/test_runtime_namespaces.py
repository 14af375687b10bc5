"""Namespaces (docs/ros2-interop.md "Namespaces"): ROS name resolution of the declared names, the
access classes of relative names under any namespace, ``set_remap`` and ``namespace:=`` in the
launch files, the dual-arm cell's wiring (every stack input in its own namespace, the stop names
the cell's), and the tools' ``--namespace``. The cell running on a real router:
tests/arm/test_arm_dual_launch.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from hri_runtime import msgs
from hri_runtime.security import access
from hri_runtime.config.tree import ConfigError, declared_defaults, load_declarations, load_robot_config
from hri_runtime.launch.launch_description import LaunchError
from hri_runtime.launch.frontend import parse_launch_file
from hri_runtime.names import resolve

REPO = Path(__file__).resolve().parents[3]
LAUNCH = REPO / "launch"
ROBOT_LAUNCHES = ["fr3", "ur5e", "iiwa14", "tino"]
# the names that stay absolute by design (docs/ros2-interop.md "Namespaces"), per declared key
ABSOLUTE_BY_DESIGN = {"/tf", "/tf_static", "/diagnostics"}
CELL_STOP = {"/safety/stop", "/safety/stop_request", "/safety/reset", "/link/safe_stop"}


def test_ros_name_resolution():
    assert resolve("interaction/reference", "arm_teleop", "/left") == "/left/interaction/reference"
    assert resolve("interaction/reference", "arm_teleop", "/") == "/interaction/reference"
    assert resolve("/tf", "robot_state", "/left") == "/tf"
    assert resolve("~/set_parameters", "interaction", "/left") == "/left/interaction/set_parameters"
    assert resolve("~", "interaction", "/a/b") == "/a/b/interaction"
    # a remap's 'from' resolves in the node's namespace: the cell's rule moves this stack's stop
    cell = {"safety/stop": "/safety/stop"}
    assert resolve("safety/stop", "interaction", "/left", cell) == "/safety/stop"
    assert resolve("safety/stop_request", "interaction", "/left", cell) == "/left/safety/stop_request"
    assert resolve("/safety/stop", "interaction", "/left", {"/left/safety/stop": "/x"}) == "/safety/stop"
    assert resolve("ee_pose", "arm_teleop", "/left", {"arm_teleop:ee_pose": "pose"}) == "/left/pose"
    assert resolve("ee_pose", "console", "/left", {"arm_teleop:ee_pose": "pose"}) == "/left/ee_pose"


def _declared_names() -> dict[str, str]:
    """{dotted key: declared default} of every name carrying an access class."""
    from hri_runtime.config.tree import RULES_KEY, is_leaf_spec

    out = {}
    data = declared_defaults()

    def walk(spec, value, path):
        for key, child in spec.items():
            if key == RULES_KEY:
                continue
            sub = value.get(key) if isinstance(value, dict) else None
            if is_leaf_spec(child):
                if "access" in child and sub:
                    out[".".join(path + (key,))] = sub
            else:
                walk(child, sub, path + (key,))
    walk(load_declarations().schema, data, ())
    return out


def test_node_owned_names_are_relative_and_the_global_ones_absolute():
    names = _declared_names()
    assert len(names) > 30
    absolute = {k: v for k, v in names.items() if v.startswith("/")}
    assert set(absolute.values()) == ABSOLUTE_BY_DESIGN, absolute
    for key, name in names.items():           # each resolves into the stack's namespace, or stays global
        full = resolve(name, "some_node", "/left")
        assert full == (name if name in ABSOLUTE_BY_DESIGN else "/left/" + name), key


def test_relative_declarations_class_the_name_under_every_namespace():
    eps = access.endpoints()
    ref = access.classify("/interaction/reference", "topic", eps)
    assert ref.name == "/**/interaction/reference" and ref.cls == "command" and ref.pattern
    for ns in ("", "/left", "/cell/right"):
        assert access.classify(f"{ns}/interaction/reference", "topic", eps).cls == "command"
        assert access.classify(f"{ns}/safety/stop", "topic", eps).cls == "feedback"
        assert access.classify(f"{ns}/safety/stop_request", "topic", eps).cls == "stop_request"
        assert access.classify(f"{ns}/safety/reset", "service", eps).cls == "operator_service"
        assert access.classify(f"{ns}/pid_tuning/auto_tune", "service", eps).cls == "operator_service"
        assert access.classify(f"{ns}/interaction/set_parameters", "service", eps).cls == "parameter"
    assert access.classify("/tf", "topic", eps).cls == "state"
    assert access.classify("/left/tf", "topic", eps) is None            # absolute: that name only
    assert access.classify("/left/interaction/reference_x", "topic", eps) is None   # whole tokens only
    assert access.classify("/leftinteraction/reference", "topic", eps) is None
    # the most specific pattern names the source
    assert access.classify("/left/interaction/joint_states", "topic", eps).source == "interaction.topics.sim_joint_states"


def test_allow_lists_match_namespaced_keys_by_class():
    import zenoh

    eps = access.endpoints()
    keys = access.role_key_exprs(eps, 0)

    def allowed(role, message, name):
        key = zenoh.KeyExpr(f"0/{name.strip('/')}/geometry_msgs::msg::dds_::PoseStamped_/RIHS01_00")
        return any(zenoh.KeyExpr(k).intersects(key) for k in keys[role][message])
    for name in ("/interaction/reference", "/left/interaction/reference", "/a/b/interaction/reference"):
        assert allowed("operator", "put", name) and not allowed("observer", "put", name) \
            and not allowed("robot", "put", name)
    for name in ("/ee_pose", "/right/ee_pose"):
        assert allowed("robot", "put", name) and not allowed("operator", "put", name)
    assert allowed("observer", "put", "/left/safety/stop_request")
    assert not allowed("observer", "put", "/left/tf") and allowed("robot", "put", "/tf")


def test_a_name_two_declarations_can_match_needs_one_class():
    cfg = load_robot_config("fr3", overrides=["interaction.topics.state=left/ee_pose"])   # state vs feedback
    with pytest.raises(ConfigError, match="one name, one class"):
        access.endpoints(cfg)
    cfg = load_robot_config("fr3", overrides=["interaction.topics.state=/left/ee_pose"])
    with pytest.raises(ConfigError, match="one name, one class"):
        access.endpoints(cfg)
    cfg = load_robot_config("fr3", overrides=["interaction.topics.state=~/state"])      # private: one node's
    with pytest.raises(ConfigError, match="relative or absolute ROS name"):
        access.endpoints(cfg)
    ok = load_robot_config("fr3", overrides=["interaction.topics.state=left/arm_state"])
    assert access.classify("/x/left/arm_state", "topic", access.endpoints(ok)).cls == "state"


def _resolved(spec, name, kind="topic"):
    """The name a node of ``spec`` resolves ``name`` to (its namespace and remap rules)."""
    return resolve(name, spec.node_name, spec.namespace or "/", dict(spec.remaps), kind)


@pytest.mark.parametrize("robot", ROBOT_LAUNCHES)
def test_every_robot_launch_takes_a_namespace(robot):
    plain = parse_launch_file(LAUNCH / f"{robot}.launch.yaml", {}, check_executables=False)
    assert all(n.namespace in ("", "/") for n in plain.nodes)
    d = parse_launch_file(LAUNCH / f"{robot}.launch.yaml", {"namespace": "left", "console": "true"},
                          check_executables=False)
    assert d.nodes and all(n.namespace == "/left" for n in d.nodes)
    assert all("__ns:=/left" in n.cmd for n in d.nodes)
    assert any(n.node_name == "stop_supervisor" for n in d.nodes)
    off = parse_launch_file(LAUNCH / f"{robot}.launch.yaml", {"stop_supervisor": "false"}, check_executables=False)
    assert not any(n.node_name == "stop_supervisor" for n in off.nodes)
    d = parse_launch_file(LAUNCH / f"{robot}.launch.yaml", {"namespace": "left", "frame_prefix": "left/"},
                          check_executables=False)
    rs = next(n for n in d.nodes if n.node_name == "robot_state")
    assert rs.params["robot_state.frame_prefix"] == "left/"


def test_dual_arm_cell_wiring():
    """Every node of a stack resolves the stack's names into its namespace and the stop names to
    the cell's; the two stacks share no other name."""
    d = parse_launch_file(LAUNCH / "fr3_dual.launch.yaml", {"console": "true"}, check_executables=False)
    by_ns: dict[str, list] = {}
    for n in d.nodes:
        by_ns.setdefault(n.namespace or "/", []).append(n)
    assert [n.node_name for n in by_ns["/"]] == ["stop_supervisor"]
    for ns in ("/left", "/right"):
        assert sorted(n.node_name for n in by_ns[ns]) == ["arm_teleop", "console", "interaction", "robot_state"]
    names = {ns: set() for ns in ("/left", "/right")}
    for ns in names:
        for n in by_ns[ns]:
            for declared in _declared_names().values():
                kind = "service" if declared.endswith("reset") and "safety" in declared else "topic"
                full = _resolved(n, declared, kind)
                names[ns].add(full)
            assert _resolved(n, "safety/stop") == "/safety/stop"
            assert _resolved(n, "safety/reset", "service") == "/safety/reset"
            assert _resolved(n, "link/safe_stop") == "/link/safe_stop"
            assert _resolved(n, "interaction/reference") == f"{ns}/interaction/reference"
    shared = names["/left"] & names["/right"]
    assert shared == CELL_STOP | ABSOLUTE_BY_DESIGN, shared
    fp = {n.namespace: n.params["robot_state.frame_prefix"] for n in d.nodes if n.node_name == "robot_state"}
    assert fp == {"/left": "left/", "/right": "right/"}
    vr = {n.namespace: n.params.get("teleop.vr.port") for n in d.nodes if n.node_name == "arm_teleop"}
    assert vr == {"/left": None, "/right": "0"}     # left: the config's port; right: any free port


def test_set_remap_is_scoped_and_reaches_includes(tmp_path):
    (tmp_path / "inner.launch.yaml").write_text(
        "launch:\n  - node: {pkg: p, exec: e, name: inner}\n")
    (tmp_path / "main.launch.yaml").write_text("""launch:
  - group:
      children:
        - set_remap: {from: chatter, to: /talk}
        - node: {pkg: p, exec: e, name: a, remap: [{from: chatter, to: mine}, {from: x, to: y}]}
        - include: {file: inner.launch.yaml}
  - node: {pkg: p, exec: e, name: b}
""")
    d = parse_launch_file(tmp_path / "main.launch.yaml", {}, check_executables=False)
    a, inner, b = d.nodes
    assert a.remaps == [("chatter", "/talk"), ("chatter", "mine"), ("x", "y")]      # set_remap first
    assert ["-r", "chatter:=/talk"] == a.cmd[a.cmd.index("chatter:=/talk") - 1:a.cmd.index("chatter:=/talk") + 1]
    assert inner.remaps == [("chatter", "/talk")] and b.remaps == []
    (tmp_path / "bad.launch.yaml").write_text("launch:\n  - set_remap: {from: 'a b', to: c}\n")
    with pytest.raises(LaunchError, match="invalid topic name"):
        parse_launch_file(tmp_path / "bad.launch.yaml", {}, check_executables=False)
    (tmp_path / "bad2.launch.yaml").write_text("launch:\n  - set_remap: {from: a}\n")
    with pytest.raises(LaunchError, match="set_remap needs"):
        parse_launch_file(tmp_path / "bad2.launch.yaml", {}, check_executables=False)


def test_cli_namespace_resolves_relative_names(capsys):
    from hri_runtime.inproc import ThreadedInprocContext
    from hri_runtime.node import Node
    from hri_runtime.cli.topic import node_main, param_main, topic_main

    ctx = ThreadedInprocContext()
    talker = Node("talker", context=ctx, namespace="left")
    pub = talker.create_publisher("std_msgs/msg/String", "chatter")
    talker.create_timer(0.01, lambda: pub.publish(msgs.new("std_msgs/msg/String", data="left")))
    other = Node("talker", context=ctx, namespace="right")
    pub2 = other.create_publisher("std_msgs/msg/String", "chatter")
    other.create_timer(0.01, lambda: pub2.publish(msgs.new("std_msgs/msg/String", data="right")))
    try:
        assert topic_main(["echo", "chatter", "--namespace", "right", "--once", "--timeout", "30"], context=ctx) == 0
        assert capsys.readouterr().out == "data: right\n---\n"
        assert node_main(["info", "talker", "--namespace", "left"], context=ctx) == 0
        assert "/left/chatter: std_msgs/msg/String" in capsys.readouterr().out
    finally:
        ctx.shutdown()
    with pytest.raises(SystemExit) as e:
        topic_main(["echo", "chatter", "--namespace", "a//b"], context=ThreadedInprocContext())
    assert e.value.code == 2 and "invalid namespace" in capsys.readouterr().err
    ctx = ThreadedInprocContext()
    Node("interaction", context=ctx, namespace="left").declare_parameter("mode", "admittance")
    try:
        assert param_main(["--timeout", "30", "get", "interaction", "mode", "--namespace", "left"], context=ctx) == 0
        assert capsys.readouterr().out == "Value is: admittance\n"
    finally:
        ctx.shutdown()


def test_a_node_reports_the_value_a_parameter_resolved_to():
    from hri_runtime.inproc import InprocContext
    from hri_runtime.node import Node

    n = Node("arm", context=InprocContext())
    n.declare_parameter("port", 0)
    n.report_parameter_value("port", 40123)
    assert n.get_parameter("port").value == 40123
    assert not n.set_parameter("port", 1).successful          # still read-only
