"""Console protocol: command validation, rejection counting, token auth, bind check."""
import dataclasses
import json

import pytest

from hri_console.core.protocol import (
    CommandGate, CommandRules, ConsoleParams, Rejected, StartupRefused, check_bind, is_loopback,
    TRUNCATED, parse_command, state_frame, token_ok,
)
from hri_interaction.core.spd import ImpedanceGainLimits
from hri_runtime.config.tree import load_robot_config


CFG = load_robot_config("fr3")


def console_params(**kw) -> ConsoleParams:
    """The FR3 config's console section with this test's overrides."""
    return dataclasses.replace(ConsoleParams.from_config(CFG["console"]), **kw)


def rules(params: ConsoleParams) -> CommandRules:
    """Commands checked against ``params`` and the FR3's joint count and impedance gain limits."""
    return CommandRules(params, num_joints=len(CFG["joints"]["names"]),
                        gain_limits=ImpedanceGainLimits.from_config(CFG["interaction"]["gain_limits"]))


P = console_params(modes=("admittance", "impedance"), gain_max=100.0,
                   max_frame_bytes=1024)
R = rules(P)


def frame(**kw):
    return json.dumps(kw)


def test_valid_commands_parse():
    assert parse_command(frame(type="safe_stop", id=1), R).type == "safe_stop"
    c = parse_command(frame(type="set_mode", mode="impedance"), R)
    assert c.args == {"mode": "impedance"}
    c = parse_command(frame(type="set_gains", gains={"stiffness": [60] * 3 + [90] * 3, "damping": [1, 1, 2, 3, 4, 5]}), R)
    assert c.args == {"gains": {"stiffness": [60.0] * 3 + [90.0] * 3, "damping": [1.0, 1.0, 2.0, 3.0, 4.0, 5.0]}}
    c = parse_command(frame(type="pid_apply", joint=1, gains={"kp": 3, "kd": 0.5}), R)
    assert c.args == {"joint": 1, "gains": {"kp": 3.0, "kd": 0.5}}
    assert parse_command(frame(type="pid_autotune", joint="hand"), R).args == {"joint": "hand"}
    c = parse_command(frame(type="pid_apply", joint=2, heuristic="ziegler_nichols"), R)
    assert c.args == {"joint": 2, "heuristic": "ziegler_nichols"}
    c = parse_command(frame(type="pid_apply", joint=6, gains={"ki": 1}), R)
    assert c.args == {"joint": 6, "gains": {"ki": 1.0}}
    assert parse_command(frame(type="pid_autotune", joint=0), R).args == {"joint": 0}


@pytest.mark.parametrize("raw,cause", [
    ("not json", "bad_json"),
    (b"\xff\xfe", "bad_json"),
    ("[1,2]", "not_object"),
    (frame(id=3), "missing_type"),
    (frame(type="launch_missiles"), "unknown_type"),
    (frame(type="set_mode", mode="turbo"), "bad_value"),
    (frame(type="set_mode"), "missing_field"),
    (frame(type="pid_apply", joint=0, gains={"kp": -1}), "out_of_range"),
    (frame(type="pid_apply", joint=0, gains={"kp": 1e9}), "out_of_range"),
    (frame(type="pid_apply", joint=0, gains={"kp": "1"}), "bad_field"),
    (frame(type="pid_apply", joint=0, gains={"kx": 1}), "bad_field"),
    (frame(type="pid_apply", joint=0, gains={}), "missing_field"),
    ('{"type":"pid_apply","joint":0,"gains":{"kp":NaN}}', "bad_value"),
    ('{"type":"pid_apply","joint":0,"gains":{"kp":Infinity}}', "bad_value"),
    (frame(type="set_gains", gains={"kp": 1}), "missing_field"),
    (frame(type="set_gains", gains={"stiffness": [1] * 5, "damping": [1] * 6}), "bad_field"),
    (frame(type="set_gains", gains={"stiffness": [0] * 6, "damping": [1] * 6}), "gains_invalid"),
    (frame(type="set_gains", gains={"stiffness": [20] * 6, "damping": [-1] * 6}), "gains_invalid"),
    (frame(type="set_gains", gains={"stiffness": [20] * 6, "damping": [0] * 6}), "gains_invalid"),
    (frame(type="set_gains", gains={"stiffness": [20] * 3 + [5] * 3, "damping": [1] * 6}), "gains_out_of_range"),
    (frame(type="set_gains", gains={"stiffness": [20] * 6, "damping": [1e9] * 6}), "gains_out_of_range"),
    ('{"type":"set_gains","gains":{"stiffness":[1,1,1,1,1,NaN],"damping":[1,1,1,1,1,1]}}', "bad_value"),
    (frame(type="pid_start", joint="1; rm -rf /"), "bad_field"),
    (frame(type="pid_start", joint="x" * 65), "bad_field"),
    (frame(type="pid_start", joint=7), "out_of_range"),
    (frame(type="pid_start", joint=True), "bad_field"),
    (frame(type="pid_start"), "missing_field"),
    (frame(type="ping", id=[1]), "bad_field"),
    ("x" * 2000, "too_large"),
])
def test_malformed_rejected_with_cause(raw, cause):
    with pytest.raises(Rejected) as exc:
        parse_command(raw, R)
    assert exc.value.cause == cause
    assert exc.value.reason


def test_gate_counts_and_never_dispatches_rejects():
    calls = []
    gate = CommandGate(R, dispatch=calls.append)
    replies = [gate.handle(r) for r in ("{", "[]", frame(type="pid_apply", joint=0, gains={"kp": -2}, id=9))]
    assert calls == []
    assert all(r["type"] == "reject" for r in replies)
    assert replies[2]["id"] == 9 and "kp" in replies[2]["reason"]
    assert gate.rejected == {"bad_json": 1, "not_object": 1, "out_of_range": 1}
    ok = gate.handle(frame(type="set_mode", mode="admittance", id=1))
    assert ok == {"type": "ack", "id": 1, "command": "set_mode", "ok": True}
    assert len(calls) == 1 and gate.accepted["set_mode"] == 1


def test_gate_safe_stop_bypasses_dispatch_and_reports_service_refusal():
    stops, calls = [], []

    def dispatch(cmd):
        calls.append(cmd)
        raise Rejected("service_refused", "controller busy", cmd.id)

    gate = CommandGate(R, dispatch=dispatch, on_safe_stop=lambda: stops.append(1))
    assert gate.handle(frame(type="safe_stop"))["ok"] is True
    assert stops == [1] and calls == []
    r = gate.handle(frame(type="set_mode", mode="impedance", id="a"))
    assert r["type"] == "reject" and r["reason"] == "controller busy"
    assert gate.rejected["service_refused"] == 1


def test_bind_requires_token_off_loopback():
    check_bind(console_params(bind_host="127.0.0.1"))
    check_bind(console_params(bind_host="::1"))
    check_bind(console_params(bind_host="localhost"))
    with pytest.raises(StartupRefused):
        check_bind(console_params(bind_host="0.0.0.0"))
    with pytest.raises(StartupRefused):
        check_bind(console_params(bind_host="192.168.1.5", token=""))
    check_bind(console_params(bind_host="0.0.0.0", token="s3cret"))
    assert is_loopback("127.3.4.5") and not is_loopback("example.org")


def test_token_check():
    p = console_params(bind_host="0.0.0.0", token="s3cret")
    assert token_ok(p, "s3cret")
    assert not token_ok(p, None)
    assert not token_ok(p, "s3cre")
    assert token_ok(console_params(), None)


def test_state_frame_is_strict_json():
    s, cuts = state_frame(4, 1.5, {"err": [float("nan"), 1.0], "h": {"age_s": float("inf")}}, P.forward)
    d = json.loads(s)  # json.loads accepts NaN; check the text instead
    assert "NaN" not in s and "Infinity" not in s and cuts == 0
    assert d == {"type": "state", "seq": 4, "t_s": 1.5, "err": [None, 1.0], "h": {"age_s": None}}


def test_state_frame_bounds_depth_items_strings_and_total():
    """The issue's RecursionError: 600 (and 100k) levels of nesting, wide lists, long strings."""
    lim = P.forward
    deep = cur = []
    for _ in range(100000):
        nxt = []
        cur.append(nxt)
        cur = nxt
    wide = {f"k{i}": "x" * (lim.max_string_chars * 3) for i in range(lim.max_items * 4)}
    s, cuts = state_frame(1, 0.0, {"interaction": deep, "atomic": wide, "tuple": (1, 2), "b": b"\xff"}, lim)
    d = json.loads(s)
    assert cuts > 0
    depth, v = 0, d["interaction"]
    while isinstance(v, list) and v:
        depth, v = depth + 1, v[0]
    assert v == TRUNCATED and depth < lim.max_depth
    assert len(d["atomic"]) == lim.max_items + 1 and d["atomic"][TRUNCATED] == lim.max_items * 3
    assert all(len(x) <= lim.max_string_chars + 1 for k, x in d["atomic"].items() if k != TRUNCATED)
    assert d["tuple"] == [1, 2] and isinstance(d["b"], str)
    import numpy as np
    s, _ = state_frame(3, 0.0, {"a": np.arange(3), "i": np.int64(4), "f": np.float32(float("nan"))}, lim)
    d = json.loads(s)
    assert d["a"] == [0, 1, 2] and d["i"] == 4 and d["f"] is None
    s, _ = state_frame(4, 0.0, {"m": "lone \ud800 surrogate"}, lim)
    s.encode("utf-8")                                    # what the WebSocket send does
    many = [[i] for i in range(lim.max_nodes * 2)]
    s, cuts = state_frame(2, 0.0, {"m": many}, dataclasses.replace(lim, max_items=len(many)))   # the node budget cuts
    assert json.loads(s)["m"][-1] == TRUNCATED and len(s) < lim.max_nodes * 20


def test_deeply_nested_client_frame_is_a_counted_rejection():
    gate = CommandGate(R, dispatch=lambda c: None)
    deep = "[" * 30000 + "]" * 30000
    r = gate.handle(deep[:P.max_frame_bytes])
    r2 = gate.handle(json.dumps({"type": "ping"}).replace("}", ', "x": ' + "[" * 500 + "]" * 500 + "}"))
    assert r["type"] == "reject" and r["cause"] in ("bad_json", "too_large")
    assert r2["type"] == "ack"
    big = dataclasses.replace(P, max_frame_bytes=1 << 20)
    r = CommandGate(rules(big), dispatch=lambda c: None).handle("[" * 200000 + "]" * 200000)
    assert r == {"type": "reject", "id": None, "cause": "bad_json", "reason": "nested too deeply"}


def test_set_gains_uses_the_controllers_check_with_its_reason():
    """The console refuses exactly what the interaction controller refuses, with its sentence."""
    import numpy as np

    from hri_interaction.core.spd import GainError, validate_impedance_gains
    cases = [([60] * 3 + [90] * 3, [0] * 6), ([1e-300] * 6, [1] * 6), ([1] * 3 + [1e12] * 3, [1] * 6),
             ([60] * 3 + [900] * 3, [2] * 3 + [20] * 3)]
    for K, D in cases:
        try:
            validate_impedance_gains(np.array(K, float), np.array(D, float), R.gain_limits)
            expect = None
        except GainError as exc:
            expect = (exc.cause, str(exc))
        try:
            parse_command(frame(type="set_gains", gains={"stiffness": K, "damping": D}), R)
            got = None
        except Rejected as rej:
            got = (rej.cause, rej.reason)
        assert got == expect
    assert expect is None and got is None          # the last case is valid for both
