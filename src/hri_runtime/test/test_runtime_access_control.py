"""The Zenoh configuration `hri router` generates from runtime.zenoh.tls / access_control (pure
functions; the behaviour on real routers is tests/runtime/test_runtime_deployment.py)."""
from hri_runtime.zenoh_backend import ZenohParams, access_control_config, session_config, tls_config


def test_tls_keys_only_with_a_ca():
    assert tls_config(None) == {} and tls_config({"root_ca_certificate": ""}) == {}
    t = tls_config({"root_ca_certificate": "ca.pem", "certificate": "me.pem", "private_key": "me.key",
                    "enable_mtls": True, "verify_name_on_connect": False})
    assert t["transport/link/tls/enable_mtls"] is True
    assert t["transport/link/tls/listen_certificate"] == t["transport/link/tls/connect_certificate"] == "me.pem"
    assert t["transport/link/tls/listen_private_key"] == t["transport/link/tls/connect_private_key"] == "me.key"
    assert t["transport/link/tls/verify_name_on_connect"] is False


def test_access_control_rules():
    assert access_control_config(None, 0) is None and access_control_config({"enabled": False}, 0) is None
    acl = access_control_config({"enabled": True, "operator_common_names": ["op"], "robot_common_names": ["rb"],
                                 "observer_common_names": [], "command_topics": ["/ee_command", "/ns/cmd"],
                                 "operator_services": ["/safety/reset"], "trust_local_tcp": True}, 5)
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
