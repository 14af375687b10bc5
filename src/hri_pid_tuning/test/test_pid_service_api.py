"""The tuning service's handlers on the simulated humanoid arm (real MuJoCo): every request is
served or rejected with a counted cause; a rejected request never changes the gains."""
import json
import math

import pytest

from hri_pid_tuning.service_api import PidTuningServer
from hri_pid_tuning.session import TuningSession


@pytest.fixture()
def srv():
    return PidTuningServer(TuningSession.create("humanoid_arm", "s2", clock=lambda: 1.7e9))


def test_auto_tune_apply_evaluate(srv):
    before = srv.session.storage.local["hand"]
    r = srv.auto_tune("hand", "classic")
    assert r.success, r.message
    tun = r.result["tuning"]["hand"]
    assert tun["applied"] == "classic" and tun["relay"]["ok"] and len(tun["heuristics"]) == 10
    assert srv.session.storage.local["hand"] != before
    assert srv.session.storage.acknowledged["hand"] == srv.session.storage.local["hand"]
    # the default heuristic stays the humanoid arm's own (not the config robot's)
    pt = srv.session.cfg["pid_tuning"]
    assert srv.session.autotuner.tuning_heuristic == pt["humanoid_arm"]["heuristics"]["default"] == "pd_control"
    assert pt["heuristics"]["default"] == "tyreus_luyben"
    # apply another of the kept heuristics
    r = srv.apply("hand", heuristic="pd_control")
    assert r.success and r.result["gains"] == tun["heuristics"]["pd_control"]
    assert srv.session.autotuner.history["hand"].applied == "pd_control"
    ev = srv.evaluate("hand")
    assert ev.success, ev.message
    step = ev.result["motions"]["step_hand"]["evaluation"]
    assert step["SetpointChanges"] == 2 and step["AvgAbsoluteError"] > 0
    # result is JSON as it goes on the wire
    json.dumps(ev.result)
    # better gains → smaller step error than a deliberately weak P controller
    assert srv.apply("hand", gains=[0.05, 0.0, 0.0]).success
    weak = srv.evaluate("hand").result["motions"]["step_hand"]["evaluation"]
    assert weak["AvgAbsoluteError"] > 2 * step["AvgAbsoluteError"]


def test_bad_requests_rejected_and_counted(srv):
    g0 = dict(srv.session.storage.local)
    assert not srv.auto_tune("knee").success
    assert not srv.auto_tune("hand", "magic").success
    assert not srv.apply("hand", heuristic="classic").success          # never tuned
    assert not srv.apply("hand", gains=[1.0, math.nan, 0.0]).success
    assert not srv.apply("hand", gains=[1.0, 2.0]).success
    assert not srv.apply("hand", gains=[-1.0, 0.0, 0.0]).success
    assert not srv.apply("", gains=[1.0, 0.0, 0.0]).success              # apply needs a joint
    assert not srv.apply("hand").success
    assert not srv.evaluate("knee").success
    assert not srv.record_stop().success
    assert not srv.record_sample(0.0, [0.0] * 5, [0.0] * 5).success
    assert srv.session.storage.local == g0                               # nothing changed
    assert srv.rejected == {"unknown_joint": 3, "unknown_heuristic": 1, "not_tuned": 1, "non_finite": 1,
                            "wrong_length": 1, "negative_gain": 1, "no_gains": 1, "not_recording": 2}


def test_not_acknowledged_keeps_previous_gains(srv):
    srv.session.storage.transport = lambda j, g: False
    g0 = srv.session.storage.local["elbow"]
    r = srv.apply("elbow", gains=[1.0, 0.0, 0.0])
    assert not r.success and r.result["cause"] == "not_acknowledged"
    assert srv.session.storage.local["elbow"] == g0
    assert srv.rejected["not_acknowledged"] == 1


def test_manual_recording_and_storage_json(srv, tmp_path):
    assert srv.record_start("operator").success
    assert not srv.record_start("again").success
    n = len(srv.joints)
    for k in range(50):
        q = [0.1] * n
        assert srv.record_sample(k * 0.02, q, [0.1 - math.radians(2.0)] * n).success
    assert not srv.record_sample(1.0, [math.inf] * n, [0.0] * n).success
    assert not srv.record_sample(1.0, [0.0], [0.0]).success
    r = srv.record_stop()
    assert r.success and r.result["animation"] == "operator"
    assert r.result["evaluation"]["AvgAbsoluteError"] == pytest.approx(2.0)
    assert r.result["evaluation"]["Samples"] == 50 * n
    path = tmp_path / "pid.json"
    assert srv.save(path).success
    assert json.loads(path.read_text())["createdTimestamp"].startswith("2023-11-14T22:13:20")
    assert srv.apply("hand", gains=[3.0, 0.0, 0.1]).success
    assert srv.load(path).success
    assert srv.session.storage.local["hand"].kp != 3.0
    (tmp_path / "bad.json").write_text('{"mapping": {"hand": {"kp": 1}}}')
    assert not srv.load(tmp_path / "bad.json").success
    assert not srv.load(tmp_path / "missing.json").success
    assert srv.rejected["bad_configuration"] == 2
    assert srv.reset().success
    st = srv.status()
    assert st["recording"] is False and st["served"]["record_stop"] == 1
