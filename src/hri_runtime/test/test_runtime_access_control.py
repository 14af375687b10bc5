"""The Zenoh configuration `hri router` generates from runtime.zenoh.tls / access_control (pure
functions; the behaviour on real routers is tests/runtime/test_runtime_deployment.py)."""
from hri_runtime.impl.zenoh_backend import ZenohParams, access_control_config, session_config, tls_config


def _with(**kw):
    """The declared defaults with some TLS / access-control keys replaced (typed sections)."""
    return ZenohParams.defaults().with_(**kw)


def test_tls_keys_only_with_a_ca():
    assert tls_config(None) == {} and tls_config(_with().tls) == {}     # the default: no CA
    t = tls_config(_with(tls={"root_ca_certificate": "ca.pem", "certificate": "me.pem", "private_key": "me.key",
                              "enable_mtls": True, "verify_name_on_connect": False}).tls)
    assert t["transport/link/tls/enable_mtls"] is True
    assert t["transport/link/tls/listen_certificate"] == t["transport/link/tls/connect_certificate"] == "me.pem"
    assert t["transport/link/tls/listen_private_key"] == t["transport/link/tls/connect_private_key"] == "me.key"
    assert t["transport/link/tls/verify_name_on_connect"] is False


def _acl(**kw):
    keys = {"enabled": True, "operator_common_names": ("op",), "robot_common_names": ("rb",),
            "observer_common_names": ("obs",), "trust_local_tcp": True}
    keys.update(kw)
    return access_control_config(_with(access_control=keys).access_control, 5)


def test_access_control_rules_are_allow_lists_per_role():
    assert access_control_config(None, 0) is None and access_control_config(_with().access_control, 0) is None
    acl = _acl()
    assert acl["default_permission"] == "deny"
    assert all(r["permission"] == "allow" for r in acl["rules"])      # allow-lists only, no deny list
    rules = {r["id"]: r for r in acl["rules"]}
    pol = {p["id"]: p["rules"] for p in acl["policies"]}
    subj = {s["id"]: s for s in acl["subjects"]}
    assert subj["observers"]["cert_common_names"] == ["obs"] and subj["this_machine"]["link_protocols"] == ["tcp"]
    assert pol["this_machine"] == ["everything"] and "@ros2_lv/**" in rules["everything"]["key_exprs"]

    def allowed(role, message):
        return sorted(k for rid in pol[role + "s"] for k in rules[rid]["key_exprs"]
                      if message in rules[rid]["messages"] and "ingress" in rules[rid]["flows"])

    # observers: a stop request is their only put; parameter reads their only calls; no services, no tokens
    # (a relative declaration: the name under any namespace, docs/ros2-interop.md "Namespaces")
    assert allowed("observer", "put") == ["5/**/link/safe_stop/*/*", "5/**/safety/stop_request/*/*"]
    assert [k for k in allowed("observer", "query") if "@adv" not in k] == [
        "5/**/describe_parameters/*/*", "5/**/get_parameter_types/*/*", "5/**/get_parameters/*/*",
        "5/**/list_parameters/*/*"]
    # (its only token: a graph query's barrier, outside the graph, ZenohContext.discover)
    assert allowed("observer", "declare_queryable") == []
    assert allowed("observer", "liveliness_token") == ["@ros2_lv_probe/**"]
    assert "@ros2_lv/**" in allowed("observer", "declare_liveliness_subscriber")    # it sees the graph
    # the robot identity: feedback and state, no operator input, no parameter set, no reset
    rb = allowed("robot", "put")
    assert "5/**/joint_states/*/*" in rb and "5/**/safety/stop/*/*" in rb and "5/**/interaction/state/*/*" in rb
    assert not {"5/**/interaction/reference/*/*", "5/**/ee_command/*/*", "5/**/base_cmd/*/*", "5/**/atomic/reset/*/*",
                "5/**/joint_commands/*/*"} & set(rb)
    assert not [k for k in allowed("robot", "query") if "set_parameters" in k or "reset" in k]
    # operators: their inputs, parameter sets, the reset, the tuning services; not the robot's feedback
    op = allowed("operator", "put")
    assert {"5/**/interaction/reference/*/*", "5/**/ee_command/*/*", "5/**/base_cmd/*/*",
            "5/**/atomic/reset/*/*"} <= set(op)
    assert "5/**/joint_states/*/*" not in op and "5/**/safety/stop/*/*" not in op
    assert {"5/**/set_parameters/*/*", "5/**/safety/reset/*/*", "5/**/pid_tuning/auto_tune/*/*"} <= set(
        allowed("operator", "query"))
    # every role reads (egress) everything
    assert all("read" in pol[r] for r in ("operators", "robots", "observers"))
    assert rules["read"]["flows"] == ["egress"]
    # an empty list: no subject, no policy
    assert "observers" not in {p["id"] for p in _acl(observer_common_names=())["policies"]}
    # only a router carries the rules; its links to other routers come from router_connect_endpoints
    p = ZenohParams.defaults().with_(access_control={"enabled": True, "operator_common_names": ["op"]},
                                     router_connect_endpoints=["tls/10.0.0.1:7448"])
    assert "access_control" in session_config(p, "router") and "access_control" not in session_config(p, "client")
    assert session_config(p, "router")["connect/endpoints"] == ["tls/10.0.0.1:7448"]


def test_rules_follow_the_configured_names():
    from hri_runtime.config.tree import load_robot_config

    cfg = load_robot_config("fr3", overrides=["interaction.topics.reference=/arm/target"])
    acl = access_control_config(_with(access_control={"enabled": True}).access_control, 0, cfg)
    op = {k for r in acl["rules"] if r["id"] == "operator_put" for k in r["key_exprs"]}
    assert "0/arm/target/*/*" in op and "0/**/interaction/reference/*/*" not in op


def test_every_declared_topic_or_service_name_has_an_access_class():
    """A topic / service name key without ``access:`` fails here: its class decides who may send."""
    from hri_runtime.config.tree import RULES_KEY, is_leaf_spec, load_declarations

    missing = []

    def walk(node, path):
        for key, spec in node.items():
            if key == RULES_KEY:
                continue
            dotted = f"{path}.{key}" if path else key
            if is_leaf_spec(spec):
                names_endpoint = spec["type"] == "str" and (
                    path.endswith(".topics") or path.endswith(".services") or key.endswith("_topic")
                    or key in ("topic", "robot_node", "pid_service")
                    or str(spec.get("default") or "").startswith("/") and "/dev/" not in str(spec.get("default")))
                if names_endpoint and "access" not in spec:
                    missing.append(dotted)
            else:
                walk(spec, dotted)

    walk(load_declarations().schema, "")
    assert not missing, f"topic / service names without access: {missing}"


def test_access_declarations_are_checked_in_one_line(tmp_path):
    import pytest

    from hri_runtime.security import access
    from hri_runtime.config.tree import ConfigError, _check_declaration

    for bad in ("commmand", {"set_gains": "root"}, 3, {}):
        with pytest.raises(ConfigError, match="access") as e:
            _check_declaration({"type": "str", "default": "/x", "access": bad}, ("a", "b"), tmp_path / "p.yaml")
        assert "\n" not in str(e.value.one_line())
    # one name, two classes: named with both keys
    from hri_runtime.config.tree import load_robot_config

    cfg = load_robot_config("fr3", overrides=["interaction.topics.state=/interaction/reference"])
    with pytest.raises(ConfigError, match="one name, one class"):
        access.endpoints(cfg)
    eps = access.endpoints()
    assert access.classify("/interaction/reference", "topic", eps).cls == "command"
    assert access.classify("/stop_supervisor/set_parameters", "service", eps).cls == "parameter"
    assert access.classify("/foo/get_parameters", "service", eps).cls == "read_only_service"
    assert access.classify("/not/declared", "topic", eps) is None


def test_zenoh_params_are_checked_by_their_declaration():
    import pytest

    from hri_runtime.config.tree import ConfigError

    p = _with(connect_endpoints="tcp/10.0.0.2:7447, tcp/10.0.0.3:7447")   # an environment override
    assert p.connect_endpoints == ("tcp/10.0.0.2:7447", "tcp/10.0.0.3:7447")
    from hri_runtime.config.tree import load_robot_config

    cfg = load_robot_config("fr3")
    cfg["runtime"]["domain_id"] = 7
    assert ZenohParams.from_config(cfg).domain_id == 7 and ZenohParams.from_config(cfg["runtime"]).domain_id == 7
    for bad, where in (({"mode": "router"}, "runtime.zenoh.mode"), ({"domain_id": 233}, "runtime.domain_id"),
                       ({"service_timeout_s": -1.0}, "runtime.zenoh.service_timeout_s"),
                       ({"access_control": {"observer_common_names": "observer"}}, "observer_common_names")):
        with pytest.raises(ConfigError, match=where):
            _with(**bad)
