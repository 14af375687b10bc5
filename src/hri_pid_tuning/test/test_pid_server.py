"""The tuning service's handlers on the simulated humanoid arm (real MuJoCo): every request is
served or rejected with a counted cause; a rejected request never changes the gains."""
import json
import math

import numpy as np
import pytest

from hri_pid_tuning.core.motion import MotionLibrary, RecordedMotion
from hri_pid_tuning.core.server import PidTuningServer
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


# --- the thesis's test-control window: record/reset, Save Results, replay, sign flip, global reset --
@pytest.fixture()
def lib_srv(tmp_path):
    s = TuningSession.create("humanoid_arm", "s2", clock=lambda: 1.7e9)
    return PidTuningServer(s, MotionLibrary(tmp_path / "motions", 64), tmp_path / "pid.json", tmp_path / "results")


def _record_wave(srv, joint="shoulder_y", n=150, dt=0.02, amp_deg=10.0):
    """A manual recording: the operator waves ``joint`` (set-points), the robot lags 1 deg."""
    assert srv.record_start().success
    i = srv.joints.index(joint)
    base = srv.session.plant.base_pose_rad
    for k in range(n):
        sp = base.copy()
        sp[i] += math.radians(amp_deg) * math.sin(2 * math.pi * 0.5 * k * dt)
        assert srv.record_sample(k * dt, sp, sp - math.radians(1.0)).success
    r = srv.record_stop()
    assert r.success
    return r


def test_record_start_discards_the_previous_test_data_first(lib_srv):
    srv = lib_srv
    r = srv.record_start()
    assert r.success and "discarded" not in r.message
    assert srv.record_sample(0.0, [0.0] * 5, [0.0] * 5).success
    assert srv.record_stop().success
    runner = srv.session.runner
    assert runner.last_run is not None and len(runner.results) == 1
    r = srv.record_start()
    assert r.success and "previous test data was discarded" in r.message
    assert runner.last_run is None and len(runner.results) == 0 and runner.last_recording is None
    assert srv.record_stop().success                        # an empty recording: no samples of the old one
    assert runner.last_run.motions[0].evaluation.samples == 0


def test_save_exports_the_last_run_in_the_thesis_layout_with_the_cli_exporter(lib_srv, tmp_path):
    from hri_pid_tuning.report import export_run, read_run

    srv = lib_srv
    r = srv.save()
    assert r.success and "no test data" in r.message and r.result["folder"] is None
    assert json.loads((tmp_path / "pid.json").read_text())["mapping"].keys() == set(srv.joints)
    ev = srv.evaluate("")                                   # dance + one step test per joint
    assert ev.success, ev.message
    r = srv.save()
    assert r.success and "exported" in r.message
    folder = tmp_path / "results" / r.result["folder"].split("/")[-1]
    got = read_run(folder)
    assert got["run"]["motions"] == ["dance"] + [f"step_{j}" for j in srv.joints]
    assert got["run"]["evaluation"] == ev.result["evaluation"]
    for m, md in ev.result["motions"].items():             # (3) per joint, (2) per motion, (1) per run
        assert got["motions"][m]["evaluation"] == md["evaluation"]
        assert got["motions"][m]["joints"] == md["joints"]
        assert (folder / m / "test.mcap").is_file()
    # the very files the CLI's exporter writes for the same run
    export_run(srv.session.runner.last_run, tmp_path / "cli", {}, plots=False)
    files = lambda d: sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())  # noqa: E731
    assert files(folder) == files(tmp_path / "cli")
    # a manual recording exports one "recording" folder
    _record_wave(srv)
    r = srv.save()
    folder = tmp_path / "results" / r.result["folder"].split("/")[-1]
    assert read_run(folder)["run"]["motions"] == ["recording"]
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["recording"]
    # an unwritable target: one sentence, counted
    bad = srv.save(tmp_path / "pid.json" / "x.json")
    assert not bad.success and bad.result["cause"] == "io_error"


def test_a_recording_saved_as_a_motion_replays_its_set_points(lib_srv, tmp_path):
    srv = lib_srv
    rec = _record_wave(srv)
    r = srv.save_motion("wave")
    assert r.success, r.message
    assert r.result["motions"] == ["wave"] and srv.status()["motions"] == ["wave"]
    saved = json.loads((tmp_path / "motions" / "wave.json").read_text())
    assert saved["name"] == "wave" and len(saved["t_s"]) == 150
    r = srv.replay("wave")
    assert r.success, r.message
    played = srv.session.runner.last_run.motions[0]
    assert played.motion == "wave" and r.result["motions"]["wave"]["evaluation"]["Samples"] > 0
    # the robot got the operator's set-points: at the recorded times, the played set-point is the recorded one
    i = srv.joints.index("shoulder_y")
    t, d = played.samples["shoulder_y"].t_s, played.samples["shoulder_y"].desired_rad
    rec_t = np.arange(150) * 0.02
    rec_d = srv.session.plant.base_pose_rad[i] + np.radians(10.0) * np.sin(np.pi * rec_t)
    assert d == pytest.approx(np.interp(t, rec_t, rec_d), abs=1e-9)
    assert max(t) == pytest.approx(rec_t[-1], abs=0.01)      # the whole recording, no more
    # and a real robot does not follow perfectly (the evaluation measures the MuJoCo arm, not the recording)
    assert r.result["evaluation"]["AvgAbsoluteError"] != pytest.approx(rec.result["evaluation"]["AvgAbsoluteError"])


def test_replay_and_save_motion_refuse_bad_requests(lib_srv, tmp_path):
    srv = lib_srv
    g0 = dict(srv.session.storage.local)
    assert srv.save_motion("wave").result["cause"] == "no_recording"
    for bad in ("../pid", "a/b", "", ".hidden", "x.json", "x" * 65):
        assert srv.replay(bad).result["cause"] == "bad_name"
    assert srv.replay("nosuch").result["cause"] == "unknown_motion"
    d = tmp_path / "motions"
    d.mkdir()
    (d / "garbage.json").write_text("{not json")
    (d / "short.json").write_text(json.dumps({"t_s": [0.0], "joints_deg": {"hand": [0.0]}}))
    (d / "nan.json").write_text('{"t_s": [0, 1], "joints_deg": {"hand": [0, NaN]}}')
    MotionLibrary(d, 64).save(RecordedMotion(t_s=[0.0, 1.0], joints={"knee": [0.0, 0.1]}, name="knee"))
    MotionLibrary(d, 64).save(RecordedMotion(t_s=[0.0, 1.0], joints={"elbow": [0.5, 9.0]}, name="far"))
    for name in ("garbage", "short", "nan"):
        r = srv.replay(name)
        assert not r.success and r.result["cause"] == "bad_motion", name
    r = srv.replay("knee")
    assert r.result["cause"] == "out_of_range" and "not joints of this robot" in r.message
    r = srv.replay("far")
    assert r.result["cause"] == "out_of_range" and "outside its limits" in r.message
    assert srv.session.runner.last_run is None                  # nothing was played
    assert srv.session.storage.local == g0
    assert MotionLibrary(d, 2).names() == ["far", "garbage"]     # listed: sorted, bounded
    assert srv.rejected["bad_name"] == 6 and srv.rejected["bad_motion"] == 3


def test_sign_flip_steps_a_joint_to_minus_its_angle(lib_srv):
    srv = lib_srv
    plant = srv.session.plant
    a = srv.session.params.sign_flip_angle_deg
    r = srv.flip("hand")                                    # at 0 deg in the base pose: from +a to -a and back
    assert r.success, r.message
    m = srv.session.runner.last_run.motions[0]
    d = [math.degrees(x) for x in m.samples["hand"].desired_rad]
    assert m.motion == "flip_hand" and d[0] == pytest.approx(a) and min(d) == pytest.approx(-a)
    assert r.result["motions"]["flip_hand"]["joints"]["hand"]["SetpointChanges"] == 2
    y = [math.degrees(x) for x in m.samples["hand"].measured_rad]
    assert y[0] == pytest.approx(a, abs=0.5)               # the robot rested at +a when the flip started
    assert min(y) < -0.8 * a                                # and followed the step
    i = srv.joints.index("elbow")                           # 30 deg; the elbow cannot go negative
    assert plant.q_min[i] == 0.0 and math.degrees(plant.base_pose_rad[i]) == pytest.approx(30.0)
    r = srv.flip("elbow")
    assert not r.success and r.result["cause"] == "out_of_range" and "30.0 -> -30.0" in r.message
    assert srv.session.runner.last_run.motions[0] is m      # nothing played
    assert not srv.flip("").success and not srv.flip("knee").success


def test_sign_flip_of_a_joint_away_from_zero_flips_its_base_angle():
    """The FR3's joint 7 rests at 45 deg: the flip is 45 -> -45 deg (the thesis's 30 -> -30 example)."""
    s = TuningSession.create("fr3", None)
    m = s.flip_motion("fr3_joint7")
    names = s.plant.joint_names
    assert math.degrees(m.angle(s.plant.base_pose_rad, names)) == pytest.approx(45.0)
    assert math.degrees(m.setpoints(m.pause_s + 0.1, s.plant.base_pose_rad, names)[6]) == pytest.approx(-45.0)
    assert (m.start_pose(s.plant.base_pose_rad, names) == s.plant.base_pose_rad).all()


def test_apply_all_resets_every_joint_to_one_configuration(lib_srv):
    srv = lib_srv
    st = srv.session.storage
    r = srv.apply_all([4.0, 0.5, 0.25])
    assert r.success, r.message
    assert all(st.local[j].to_dict() == {"kp": 4.0, "ki": 0.5, "kd": 0.25} for j in srv.joints)
    assert all(st.acknowledged[j] == st.local[j] for j in srv.joints)
    before = dict(st.local)
    for bad in ([], [1.0, 2.0], [1.0, math.nan, 0.0], [-1.0, 0.0, 0.0]):
        assert not srv.apply_all(bad).success
    assert st.local == before
    st.transport = lambda j, g: j != "hand"                       # one joint does not acknowledge
    r = srv.apply_all([5.0, 0.0, 0.0])
    assert not r.success and r.result["acknowledged"]["hand"] is False and "hand" in r.message
