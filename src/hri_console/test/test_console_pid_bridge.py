"""Console PID commands go through hri_pid_tuning's storage (acknowledged apply, save)."""
import json

import pytest

pytest.importorskip("hri_pid_tuning.core.services")
from hri_pid_tuning.core.pid import PIDGains  # noqa: E402
from hri_pid_tuning.core.services import PidConfigurationStorage  # noqa: E402

from hri_console.core.pid_bridge import PidBridge  # noqa: E402
from hri_console.core.protocol import CommandGate, ConsoleParams  # noqa: E402

P = ConsoleParams(num_joints=2, gain_max=1000.0)


def setup(transport=None, tmp_path=None):
    sent = []

    def tx(joint, gains):
        sent.append((joint, gains))
        return transport(joint, gains) if transport else True

    st = PidConfigurationStorage(["j1", "j2"], PIDGains(1.0, 0.0, 0.0), transport=tx)
    br = PidBridge(st, save_path=(tmp_path / "pid.json") if tmp_path else None)
    return st, br, CommandGate(P, dispatch=br.dispatch), sent


def test_apply_gains_transmits_to_controller():
    st, br, gate, sent = setup()
    r = gate.handle(json.dumps({"type": "pid_apply", "joint": 1, "gains": {"kp": 40, "kd": 2}, "id": 1}))
    assert r["ok"] is True
    assert st.acknowledged["j2"] == PIDGains(40.0, 0.0, 2.0)
    assert sent == [("j2", PIDGains(40.0, 0.0, 2.0))]


def test_apply_autotune_row_and_missing_row():
    st, br, gate, _ = setup()
    br.set_autotune_table(0, {"ziegler_nichols": {"kp": 12.0, "ki": 3.0, "kd": 0.5, "iae": 0.1}})
    assert gate.handle(json.dumps({"type": "pid_apply", "joint": 0, "heuristic": "ziegler_nichols"}))["ok"]
    assert st.acknowledged["j1"] == PIDGains(12.0, 3.0, 0.5)
    r = gate.handle(json.dumps({"type": "pid_apply", "joint": 0, "heuristic": "tyreus_luyben"}))
    assert r["type"] == "reject" and "tyreus_luyben" in r["reason"]


def test_invalid_gain_refused_and_unacknowledged_reported():
    st, br, gate, sent = setup(transport=lambda j, g: False)
    r = gate.handle(json.dumps({"type": "pid_apply", "joint": 0, "gains": {"kp": -1}}))
    assert r["cause"] == "out_of_range" and sent == []
    r = gate.handle(json.dumps({"type": "pid_apply", "joint": 0, "gains": {"kp": 5}}))
    assert r["cause"] == "not_acknowledged"
    assert st.acknowledged["j1"] is None


def test_save(tmp_path):
    st, br, gate, _ = setup(tmp_path=tmp_path)
    assert gate.handle(json.dumps({"type": "pid_save"}))["ok"]
    assert json.loads((tmp_path / "pid.json").read_text())["mapping"]["j1"]["kp"] == 1.0
    assert br.snapshot()["pid"]["joints"] == ["j1", "j2"]
