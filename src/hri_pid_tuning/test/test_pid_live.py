"""The live path: the tuning node drives a robot running as another node (the MuJoCo
``joint_robot`` node) over the runtime, composed in one process and stepped by the lockstep runner
in simulated time (hri_pid_tuning.compose)."""
import math

import numpy as np
import pytest

import mujoco  # noqa: F401  (required: a missing install fails here)

from hri_runtime import msgs  # noqa: E402

from hri_pid_tuning.compose import compose  # noqa: E402
from hri_pid_tuning.messages import TUNE_SRV  # noqa: E402


def _live(robot="fr3", overrides=None):
    st = compose(robot, "s2", overrides)          # stop supervisor, joint_robot and the tuning node (live)
    return st, st.robot, st.tuner


def test_every_fr3_joint_tunes_on_the_live_path_and_meets_the_step_bounds():
    """With the FR3's own default heuristic (config: Tyreus-Luyben; the humanoid arm, which reads
    the same config file, keeps its PD-Control: test_every_humanoid_arm_joint_tunes_...)."""
    st, rn, tn = _live()
    s = tn.session
    acc = s.cfg["pid_tuning"]["acceptance"]
    assert s.autotuner.tuning_heuristic == s.cfg["pid_tuning"]["heuristics"]["default"] == "tyreus_luyben"
    progress = []
    tn.create_subscription("hri_interfaces/msg/TuningProgress", s.cfg["pid_tuning"]["live"]["progress_topic"],
                           lambda m: progress.append((m.phase, m.joint)), qos=1000)

    def flow():
        out = {}
        for j in s.autotuner.joint_order:
            data = s.autotuner.tune_single_joint(j)
            run = s.runner.run_test([s.step_motion(j)])        # the robot's own PIDs, acknowledged gains
            out[j] = (data, run.motions[0].joint_evaluations[j], run.motions[0].aborted)
        return out

    res = st.run_job("test", flow)
    assert list(res) == s.autotuner.joint_order and len(res) == 7
    for j, (data, ev, aborted) in res.items():
        assert data.relay.ok, (j, data.reason)
        assert data.applied == "tyreus_luyben"
        # the relay stayed inside the configured excursion band around the safe posture
        assert data.relay.amplitude_rad <= math.radians(s.cfg["pid_tuning"]["safe_tuning"]["excursion_max_deg"])
        # the robot node acknowledged and runs exactly the applied gains
        g = rn.pids[rn.names.index(j)].gains
        assert (g.kp, g.ki, g.kd) == pytest.approx(tuple(s.storage.local[j].to_dict().values()))
        assert aborted is None
        assert ev.max_overshoot is not None and ev.max_overshoot <= acc["max_overshoot_deg"], (j, ev.max_overshoot)
        st = ev.avg_robust_settling_time.get(float(acc["settling_band_deg"]))
        assert st is not None and st <= acc["settling_max_s"], (j, st)
    # everything went over the runtime: commands out, states in; posture restored to the base pose
    assert tn.live_robot.commands > 1000 and rn.ticks > 1000
    assert np.max(np.abs(np.asarray(rn.plant.q_rad) - rn.plant.base_pose_rad)) < math.radians(10.0)
    phases = {p for p, _ in progress}
    assert {"posture", "hold", "identify", "relay", "restore", "done"} <= phases
    assert {j for _, j in progress} >= set(s.autotuner.joint_order)


def test_a_failed_relay_restores_gains_and_posture_with_one_reason_over_the_service():
    # an excursion bound the relay cannot meet: the identification aborts
    st, rn, tn = _live(overrides=["pid_tuning.safe_tuning.excursion_max_deg=0.02"])
    j = "fr3_joint4"
    i = rn.names.index(j)
    before = rn.pids[i].gains
    st.lockstep.run_for(0.1)
    q0 = np.array(rn.plant.q_rad)
    cli = tn.create_client(TUNE_SRV, "/pid_tuning/auto_tune")
    fut = cli.call_async(msgs.new(TUNE_SRV + "_Request", joint=j, heuristic=""))
    assert st.run_until(fut.done, 1e4)
    r = fut.result()
    assert not r.success
    assert "gains restored" in r.message and j in r.message and "\n" not in r.message
    assert rn.pids[i].gains == before and tn.session.storage.local[j] == before
    assert np.max(np.abs(np.array(rn.plant.q_rad) - q0)) < math.radians(2.0)
    assert tn.server.rejected["relay_failed"] == 1
    # while a job runs a second request is refused at once (busy), never queued into the robot
    fut1 = cli.call_async(msgs.new(TUNE_SRV + "_Request", joint=j, heuristic=""))
    st.lockstep.step()                  # the first request is taken: its job runs
    fut2 = cli.call_async(msgs.new(TUNE_SRV + "_Request", joint=j, heuristic=""))
    assert st.run_until(fut2.done, 0.01)
    assert not fut2.result().success and "busy" in fut2.result().message and not fut1.done()
    assert st.run_until(fut1.done, 1e4)


def test_cli_runs_no_test_motion_after_a_failed_relay(tmp_path, capsys):
    from hri_pid_tuning.cli import main

    out = tmp_path / "run"
    rc = main(["--robot", "fr3", "--joint", "fr3_joint4", "--quiet", "--no-plots", "--out", str(out),
               "--set", "pid_tuning.safe_tuning.excursion_max_deg=0.02"])
    err = capsys.readouterr()
    assert rc == 1
    assert "relay test on fr3_joint4 failed" in err.err
    assert sorted(p.name for p in out.iterdir()) == ["run.json", "tuning"]      # no motion folders
    assert all(len(line) <= 100 for line in err.out.splitlines()[1:])     # (line 1: the run folder's path)
    assert "warning: fr3_joint4: identification relay" in err.out


@pytest.mark.parametrize("setup", ["s1", "s2", "s3", "s4"])
def test_every_humanoid_arm_joint_tunes_on_the_live_path(setup):
    st = compose("humanoid_arm", setup)
    cfg, rn, tn = st.cfg, st.robot, st.tuner
    cli = tn.create_client(TUNE_SRV, "/pid_tuning/auto_tune")
    fut = cli.call_async(msgs.new(TUNE_SRV + "_Request", joint="", heuristic=""))   # '' = every joint
    assert st.run_until(fut.done, 1e4)
    r = fut.result()
    assert r.success, r.message
    import json

    tuning = json.loads(r.result_json)["tuning"]
    assert list(tuning) == cfg["pid_tuning"]["humanoid_arm"]["joint_order"]
    e = cfg["pid_tuning"]["safe_tuning"]["excursion_max_deg"]
    for j, t in tuning.items():
        assert t["relay"]["ok"] and t["applied"] == "pd_control", (setup, j, t["reason"])
        assert 0 < t["relay"]["amplitude_deg"] <= e
        g = rn.pids[rn.names.index(j)].gains            # the robot runs the applied gains
        assert g.kp == pytest.approx(t["heuristics"]["pd_control"]["kp"])


def test_flip_apply_all_and_replay_run_as_jobs_on_the_robot_node(tmp_path):
    """The panel's requests on a live robot: each a job whose effect is the robot node's (its
    PIDs run the gains reset for every joint; its joint really steps to -30 deg and back; a
    recorded motion is played through its position commands)."""
    import json

    from hri_pid_tuning.core.motion import MotionLibrary, RecordedMotion
    from hri_pid_tuning.messages import MOTION_SRV

    st = compose("humanoid_arm", "s2", parameters={"pid_tuning.node.motions_dir": str(tmp_path)})
    cfg, rn, tn = st.cfg, st.robot, st.tuner
    seen = []                                   # the robot's hand angle as the robot reports it
    tn.create_subscription("sensor_msgs/msg/JointState", "/joint_states",
                           lambda m: seen.append(m.position[list(m.name).index("hand")]), qos=100)

    def call(srv, name, **fields):
        fut = tn.create_client(srv, f"/pid_tuning/{name}").call_async(msgs.new(srv + "_Request", **fields))
        assert st.run_until(fut.done, 1e4)
        return fut.result()

    hold = cfg["pid_tuning"]["humanoid_arm"]["initial_gains"]
    gains = [hold["kp"][-1], hold["ki"][-1], hold["kd"][-1]]            # the hand's hold gains, for every joint
    r = call(TUNE_SRV, "apply_all", gains=gains)
    assert r.success, r.message
    assert all(rn.pids[i].gains.to_dict() == dict(zip(("kp", "ki", "kd"), gains)) for i in range(len(rn.names)))
    seen.clear()
    r = call(TUNE_SRV, "flip", joint="hand")
    assert r.success, r.message
    assert min(seen) < math.radians(-20.0) and max(seen) > math.radians(20.0)      # +30 -> -30 deg and back
    MotionLibrary(tmp_path, 8).save(RecordedMotion(t_s=[0.0, 1.0, 2.0], joints={"hand": np.radians([0.0, 15.0, 0.0])},
                                                   name="nod"))
    r = call(MOTION_SRV, "replay", motion="nod")
    assert r.success, r.message
    played = tn.session.runner.last_run.motions[0].samples["hand"]     # measured by the robot node
    assert math.radians(10.0) < max(played.measured_rad) < math.radians(20.0)
    assert abs(played.measured_rad[0]) < math.radians(2.0)             # it started at the base pose
    assert json.loads(r.result_json)["motions"]["nod"]["joints"]["hand"]["Samples"] > 0
