"""The Zenoh configuration `hri router` generates from runtime.zenoh.tls / access_control (pure
functions; the behaviour on real routers is tests/runtime/test_runtime_deployment.py)."""
from hri_runtime.zenoh_backend import ZenohParams, access_control_config, session_config, tls_config


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


def test_access_control_rules():
    assert access_control_config(None, 0) is None and access_control_config(_with().access_control, 0) is None
    acl = access_control_config(_with(access_control={
        "enabled": True, "operator_common_names": ("op",), "robot_common_names": ("rb",),
        "observer_common_names": (), "command_topics": ("/ee_command", "/ns/cmd"),
        "operator_services": ("/safety/reset",), "trust_local_tcp": True}).access_control, 5)
    assert acl["default_permission"] == "deny"
    rules = {r["id"]: r for r in acl["rules"]}
    assert "@ros2_lv/**" in rules["everything"]["key_exprs"]       # '**' does not match '@' chunks
    assert rules["no_commands"]["key_exprs"] == ["5/ee_command/**", "5/ns/cmd/**"]
    assert rules["no_commands"]["permission"] == "deny" and rules["no_commands"]["flows"] == ["ingress"]
    assert "5/**/set_parameters/**" in rules["no_parameter_sets"]["key_exprs"]
    assert "5/safety/reset/**" in rules["no_parameter_sets"]["key_exprs"]
    pol = {p["id"]: p["rules"] for p in acl["policies"]}
    assert pol == {"operators": ["everything"], "robots": ["everything", "no_parameter_sets", "no_commands"],
                   "this_machine": ["everything"]}                    # an empty observer list: no subject
    subj = {s["id"]: s for s in acl["subjects"]}
    assert subj["this_machine"] == {"id": "this_machine", "link_protocols": ["tcp"]}
    # only a router carries the rules; its links to other routers come from router_connect_endpoints
    p = ZenohParams.defaults().with_(access_control={"enabled": True, "operator_common_names": ["op"]},
                                     router_connect_endpoints=["tls/10.0.0.1:7448"])
    assert "access_control" in session_config(p, "router") and "access_control" not in session_config(p, "client")
    assert session_config(p, "router")["connect/endpoints"] == ["tls/10.0.0.1:7448"]


def test_zenoh_params_are_checked_by_their_declaration():
    import pytest

    from hri_runtime.config import ConfigError

    p = _with(connect_endpoints="tcp/10.0.0.2:7447, tcp/10.0.0.3:7447")   # an environment override
    assert p.connect_endpoints == ("tcp/10.0.0.2:7447", "tcp/10.0.0.3:7447")
    from hri_runtime.config import load_robot_config

    cfg = load_robot_config("fr3")
    cfg["runtime"]["domain_id"] = 7
    assert ZenohParams.from_config(cfg).domain_id == 7 and ZenohParams.from_config(cfg["runtime"]).domain_id == 7
    for bad, where in (({"mode": "router"}, "runtime.zenoh.mode"), ({"domain_id": 233}, "runtime.domain_id"),
                       ({"service_timeout_s": -1.0}, "runtime.zenoh.service_timeout_s"),
                       ({"access_control": {"command_topics": ("no_slash",)}}, "command_topics")):
        with pytest.raises(ConfigError, match=where):
            _with(**bad)
