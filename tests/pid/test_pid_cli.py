"""`hri tune` and `hri tune report` end to end on the simulated humanoid arm."""
import json
import subprocess
import sys

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
