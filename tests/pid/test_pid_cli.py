"""`hri tune`, `hri tune report`, `hri tune save-motion` and `hri tune replay` end to end on the
simulated humanoid arm; bad arguments are one line on stderr and exit code 2."""
import json
import math
import subprocess
import sys

import pytest

from hri_pid_tuning.cli import main


def test_tune_one_joint_writes_run_folder(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["--robot", "humanoid_arm", "--setup", "s1", "--joint", "hand", "--heuristic", "pd_control",
               "--out", str(out), "--quiet"])
    assert rc == 0
    run = json.loads((out / "run.json").read_text())
    assert run["tuning"]["hand"]["applied"] == "pd_control"
    assert isinstance(run["tuning"]["hand"]["relay"]["ku"], float)
    assert run["motions"] == ["dance", "step_hand"]
    assert run["createdTimestamp"][4] == "-" and "T" in run["createdTimestamp"]     # ISO 8601
    step = json.loads((out / "step_hand" / "hand.json").read_text())
    assert step["joint"] == "hand" and step["animation"] == "step_hand"
    assert isinstance(step["data"][0]["entry"]["desired"], float)
    assert isinstance(step["evaluation"]["AvgAbsoluteError"], float)
    tuning = json.loads((out / "tuning" / "hand.json").read_text())
    assert len(tuning["heuristics"]) == 10 and "pd_control" in tuning["heuristic_steps"]
    assert (out / "tuning" / "hand_steps.png").stat().st_size > 1000
    assert (out / "dance" / "error.png").is_file()
    # an MCAP of every test, sample for sample the same as the JSON
    from hri_pid_tuning.report import read_motion_mcap
    mc = read_motion_mcap(out / "step_hand" / "test.mcap")
    assert set(mc) == {"shoulder_x", "shoulder_y", "shoulder_z", "elbow", "hand"}
    assert len(mc["hand"]) == len(step["data"])
    k = len(step["data"]) // 2
    assert mc["hand"][k]["desired_deg"] == step["data"][k]["entry"]["desired"]
    assert mc["hand"][k]["measured_deg"] == step["data"][k]["entry"]["measured"]
    assert isinstance(mc["hand"][k]["effort"], float)
    assert (out / "dance" / "test.mcap").is_file()
    # every result file carries the provenance of the build (hri_runtime.provenance)
    from hri_runtime import provenance
    from mcap.reader import make_reader
    prov = provenance.provenance("hri_pid_tuning")
    assert run["provenance"] == step["provenance"] == tuning["provenance"] == prov
    with open(out / "step_hand" / "test.mcap", "rb") as fh:
        assert {m.name: dict(m.metadata) for m in make_reader(fh).iter_metadata()} == {
            "provenance": provenance.metadata("hri_pid_tuning")}
    printed = capsys.readouterr().out
    assert "step_hand" in printed and "RUN" in printed
    assert main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.startswith("hand "))
    assert row.split()[1] == "ok" and "pd_control" in row
    assert "[deg]" in text and "[Nm/rad]" in text                     # units
    assert all(len(line) <= 100 for line in text.splitlines()[1:])   # (line 1: the folder's path)


def test_bad_arguments_are_explained(tmp_path, capsys):
    assert main(["--robot", "humanoid_arm", "--setup", "s9", "--out", str(tmp_path)]) == 2
    assert "unknown setup" in capsys.readouterr().err
    assert main(["--joint", "knee", "--out", str(tmp_path), "--quiet"]) == 2
    assert "unknown joint" in capsys.readouterr().err
    assert main(["--heuristic", "magic", "--out", str(tmp_path), "--quiet"]) == 2
    assert main(["report", str(tmp_path / "nothing")]) == 2


def test_hri_dispatcher_knows_tune():
    r = subprocess.run([sys.executable, "-m", "hri_runtime.cli.main", "--help"], capture_output=True, text=True)
    assert "tune" in r.stdout


def test_tune_with_optimiser_applies_a_result_no_worse_than_any_heuristic(tmp_path, capsys):
    out = tmp_path / "opt"
    rc = main(["--robot", "humanoid_arm", "--setup", "s2", "--joint", "hand", "--optimise", "--no-plots", "--quiet",
               "--set", "pid_tuning.optimiser.budget_trials=20", "--out", str(out)])
    assert rc == 0
    tuning = json.loads((out / "tuning" / "hand.json").read_text())
    opt = tuning["optimiser"]
    assert tuning["applied"] == "optimiser" and opt["trials"] <= 20
    assert opt["cost"] <= min(opt["heuristic_costs"].values())
    run = json.loads((out / "run.json").read_text())
    assert run["tuning"]["hand"]["gains"] == opt["gains"]
    assert run["configuration"]["mapping"]["hand"] == opt["gains"]
    assert not (out / "tuning" / "hand_steps.png").exists()


def test_the_default_heuristic_is_the_robots_own():
    """`hri tune --robot fr3` applies the FR3's Tyreus-Luyben unless --heuristic says otherwise;
    the humanoid arm, built from the same config file, keeps its PD-Control (the live lockstep
    runs of both: src/hri_pid_tuning/test/test_pid_live.py)."""
    from hri_pid_tuning.session import TuningSession

    assert TuningSession.create("fr3", None).autotuner.tuning_heuristic == "tyreus_luyben"
    assert TuningSession.create("humanoid_arm", "s2").autotuner.tuning_heuristic == "pd_control"


def _recorded_run(folder):
    """A run folder of a manual recording (the operator waves shoulder_y), exported by the one exporter."""
    import math

    from hri_pid_tuning.core.server import PidTuningServer
    from hri_pid_tuning.report import export_run
    from hri_pid_tuning.session import TuningSession

    srv = PidTuningServer(TuningSession.create("humanoid_arm", "s2"))
    base = srv.session.plant.base_pose_rad
    i = srv.joints.index("shoulder_y")
    assert srv.record_start().success
    for k in range(100):
        sp = base.copy()
        sp[i] += math.radians(12.0) * math.sin(2 * math.pi * 0.5 * k * 0.02)
        assert srv.record_sample(k * 0.02, sp, sp).success
    assert srv.record_stop().success
    export_run(srv.session.runner.last_run, folder, {}, plots=False)
    return folder


def test_save_motion_and_replay_a_recording_from_the_cli(tmp_path, capsys):
    run = _recorded_run(tmp_path / "rec")
    motion = tmp_path / "motions" / "wave.json"
    assert main(["save-motion", str(run), str(motion)]) == 0
    m = json.loads(motion.read_text())
    assert m["name"] == "wave" and len(m["t_s"]) == 100
    assert max(m["joints_deg"]["shoulder_y"]) == pytest.approx(12.0, abs=0.1)
    assert "wave" in capsys.readouterr().out
    out = tmp_path / "replay"
    assert main(["replay", str(motion), "--robot", "humanoid_arm", "--setup", "s2", "--out", str(out),
                 "--no-plots"]) == 0
    got = json.loads((out / "run.json").read_text())
    assert got["motions"] == ["wave"]
    step = json.loads((out / "wave" / "shoulder_y.json").read_text())
    assert step["animation"] == "wave" and len(step["data"]) > 50
    base = {s["timestamp"]: s["entry"]["desired"] for s in step["data"]}
    assert max(base.values()) - min(base.values()) == pytest.approx(24.0, abs=0.2)   # the wave, ±12 deg
    assert "wave" in capsys.readouterr().out
    # any recorded motion folder of a run replays too (here the replay's own)
    out2 = tmp_path / "again"
    assert main(["replay", str(out / "wave"), "--out", str(out2), "--no-plots"]) == 0
    assert json.loads((out2 / "run.json").read_text())["motions"] == ["wave"]


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_motions")
    (d / "garbage.json").write_text("{not json")
    (d / "knee.json").write_text(json.dumps({"name": "knee", "t_s": [0, 1], "joints_deg": {"knee": [0, 1]}}))
    (d / "far.json").write_text(json.dumps({"name": "far", "t_s": [0, 1], "joints_deg": {"elbow": [0, 500]}}))
    (d / "short.json").write_text(json.dumps({"name": "s", "t_s": [0], "joints_deg": {"elbow": [0]}}))
    (d / "empty").mkdir()
    return d


BAD = [
    (["replay"], "required"),
    (["replay", "{d}/nosuch.json"], "no motion file"),
    (["replay", "{d}/garbage.json"], "garbage.json is not a motion file"),
    (["replay", "{d}/knee.json"], "not joints of this robot"),
    (["replay", "{d}/far.json"], "outside its limits"),
    (["replay", "{d}/short.json"], "at least two"),
    (["replay", "{d}/empty"], "no PidStepData"),
    (["replay", "{d}/far.json", "--robot", "ur5"], "invalid choice"),
    (["replay", "{d}/far.json", "--setup", "s9"], "unknown setup"),
    (["replay", "{d}/far.json", "--bogus"], "unrecognized arguments"),
    (["save-motion", "{d}/empty", "{d}/x.json"], "no PidStepData"),
    (["save-motion", "{d}/empty", "{d}/x.txt"], "<name>.json"),
    (["save-motion", "{d}/nosuch", "{d}/x.json"], "no motion file"),
]


@pytest.mark.parametrize("argv,fragment", BAD, ids=[" ".join(a[:2]) + f"-{i}" for i, (a, _) in enumerate(BAD)])
def test_bad_replay_and_save_motion_arguments_are_one_line_exit_2(bad_files, argv, fragment):
    argv = [a.replace("{d}", str(bad_files)) for a in argv]
    r = subprocess.run([sys.executable, "-m", "hri_runtime.cli.main", "tune", *argv], capture_output=True, text=True,
                       timeout=120)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert fragment in lines[0] and "Traceback" not in r.stderr
