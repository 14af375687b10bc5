"""Console protocol: command validation, rejection counting, token auth, bind check."""
import dataclasses
import json

import pytest

from hri_console.core.protocol import (
    CommandGate, ConsoleParams, Rejected, StartupRefused, check_bind, is_loopback,
    parse_command, state_frame, token_ok,
)
from hri_runtime.config import load_robot_config


def console_params(**kw) -> ConsoleParams:
    """The FR3 config's console section (and joint count) with this test's overrides."""
    cfg = load_robot_config("fr3")
    return dataclasses.replace(ConsoleParams.from_config(cfg["console"], num_joints=len(cfg["joints"]["names"])),
                               **kw)


P = console_params(modes=("admittance", "impedance"), gain_max=100.0,
                   max_frame_bytes=1024)


def frame(**kw):
    return json.dumps(kw)


def test_valid_commands_parse():
    assert parse_command(frame(type="safe_stop", id=1), P).type == "safe_stop"
    c = parse_command(frame(type="set_mode", mode="impedance"), P)
    assert c.args == {"mode": "impedance"}
    c = parse_command(frame(type="set_gains", gains={"stiffness": [60] * 3 + [90] * 3, "damping": [0, 1, 2, 3, 4, 5]}), P)
    assert c.args == {"gains": {"stiffness": [60.0] * 3 + [90.0] * 3, "damping": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]}}
    c = parse_command(frame(type="pid_apply", joint=1, gains={"kp": 3, "kd": 0.5}), P)
    assert c.args == {"joint": 1, "gains": {"kp": 3.0, "kd": 0.5}}
    assert parse_command(frame(type="pid_autotune", joint="hand"), P).args == {"joint": "hand"}
    c = parse_command(frame(type="pid_apply", joint=2, heuristic="ziegler_nichols"), P)
    assert c.args == {"joint": 2, "heuristic": "ziegler_nichols"}
    c = parse_command(frame(type="pid_apply", joint=6, gains={"ki": 1}), P)
    assert c.args == {"joint": 6, "gains": {"ki": 1.0}}
    assert parse_command(frame(type="pid_autotune", joint=0), P).args == {"joint": 0}


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
    (frame(type="set_gains", gains={"stiffness": [0] * 6, "damping": [1] * 6}), "out_of_range"),
    (frame(type="set_gains", gains={"stiffness": [1] * 6, "damping": [-1] * 6}), "out_of_range"),
    (frame(type="set_gains", gains={"stiffness": [1] * 6, "damping": [1e9] * 6}), "out_of_range"),
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
        parse_command(raw, P)
    assert exc.value.cause == cause
    assert exc.value.reason


def test_gate_counts_and_never_dispatches_rejects():
    calls = []
    gate = CommandGate(P, dispatch=calls.append)
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

    gate = CommandGate(P, dispatch=dispatch, on_safe_stop=lambda: stops.append(1))
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
    s = state_frame(4, 1.5, {"err": [float("nan"), 1.0], "h": {"age_s": float("inf")}})
    d = json.loads(s)  # json.loads accepts NaN; check the text instead
    assert "NaN" not in s and "Infinity" not in s
    assert d == {"type": "state", "seq": 4, "t_s": 1.5, "err": [None, 1.0], "h": {"age_s": None}}
