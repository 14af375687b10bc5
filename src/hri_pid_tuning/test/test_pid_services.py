"""Service API without UI: storage (acknowledged updates, JSON), motions (step test, time
stretch), tracker, test runner (automated + manual), auto-tuning service, mirroring, optimiser."""
import dataclasses
import json
import math

import numpy as np
import pytest

from hri_pid_tuning.core.autotune import AutoTuningService, mirror_tuning
from hri_pid_tuning.core.heuristics import HeuristicsParams
from hri_pid_tuning.core.metrics import EvaluationParams
from hri_pid_tuning.core.motion import (AnimatorControl, DanceMotion, RecordedMotion, SignFlipMotion,
                                        StepTestMotion)
from hri_pid_tuning.core.optimiser import JointCostFunction, OptimiserParams, grid_search, optimise
from hri_core.pid import PIDGains, PIDParams
from hri_pid_tuning.core.relay import RelayParams
from hri_pid_tuning.core.services import PidConfigurationStorage, PoseErrorTracker, TestRunner
from hri_runtime.config.tree import load_robot_config
from hri_sim.pid_plants import LinearPlant

FIXED_CLOCK = lambda: 1.7e9   # noqa: E731  (2023-11-14T22:13:20Z)
PT = load_robot_config("fr3")["pid_tuning"]
EVAL = EvaluationParams.from_config(PT["evaluation"])
PID_PARAMS = PIDParams.from_config(PT["pid"])
RELAY = RelayParams.from_config(PT["relay"])


class TwoJointPlant:
    """Two independent 1/(J s² + b s) joints (MultiJointPlant protocol), semi-implicit Euler."""

    def __init__(self, dt_s=0.002):
        self.joint_names = ["a", "b"]
        self.dt_s = dt_s
        self.effort_max = np.array([50.0, 50.0])
        self.base_pose_rad = np.array([0.0, 0.5])
        self.J = np.array([0.1, 0.05])
        self.b = np.array([1.0, 0.5])
        self.reset(self.base_pose_rad)

    @property
    def t_s(self):
        return self._t

    @property
    def q_rad(self):
        return self.q.copy()

    def reset(self, q_rad):
        self.q = np.array(q_rad, dtype=float)
        self.v = np.zeros(2)
        self._t = 0.0

    def step(self, efforts):
        u = np.clip(efforts, -self.effort_max, self.effort_max)
        self.v += self.dt_s * (u - self.b * self.v) / self.J
        self.q += self.dt_s * self.v
        self._t += self.dt_s


def test_storage_acknowledged_updates_retry_and_json(tmp_path):
    calls = []
    flaky = iter([False, True, True, True])

    def transport(joint, gains):
        calls.append(joint)
        return next(flaky)

    st = PidConfigurationStorage(["a", "b"], PIDGains(1.0), transport, max_retries=3, clock=FIXED_CLOCK)
    assert st.apply("a", PIDGains(2.0, 1.0, 0.5))         # first attempt lost, retried
    assert calls == ["a", "a"] and st.acknowledged["a"] == PIDGains(2.0, 1.0, 0.5)
    st.transport = lambda j, g: False
    assert not st.apply("b", PIDGains(3.0))
    assert st.failures["b"] == 1 and st.acknowledged["b"] is None
    st.transport = lambda j, g: (_ for _ in ()).throw(ConnectionError("down"))
    assert not st.transmit("a")                           # a raising transport never crashes
    st.transport = None
    path = tmp_path / "pid.json"
    st.save_json(path)
    d = json.loads(path.read_text())
    assert d["createdTimestamp"].startswith("2023-11-14T22:13:20")
    assert d["mapping"]["a"] == {"kp": 2.0, "ki": 1.0, "kd": 0.5}      # numbers, not strings
    st2 = PidConfigurationStorage(["a", "b"], PIDGains(0.0))
    assert st2.fill_from_json(path) == {"a": True, "b": True}
    assert st2.local == st.local
    with pytest.raises(ValueError):
        PidConfigurationStorage(["a", "c"], PIDGains(0.0)).fill_from_json(path)
    with pytest.raises(KeyError):
        st.set("zzz", PIDGains(1.0))


def test_step_test_motion_and_time_stretch():
    m = StepTestMotion("b", step_deg=45.0, pause_s=0.5, hold_s=1.0, repeats=1)
    assert m.duration_s == pytest.approx(2.5)
    base = np.array([0.0, 0.5])
    assert m.setpoints(0.2, base, ["a", "b"])[1] == pytest.approx(0.5)
    assert m.setpoints(0.7, base, ["a", "b"])[1] == pytest.approx(0.5 + math.radians(45))
    assert m.setpoints(1.7, base, ["a", "b"])[1] == pytest.approx(0.5)
    assert m.setpoints(0.7, base, ["a", "b"])[0] == 0.0
    anim = AnimatorControl(m, time_stretch=2.0)
    assert anim.duration_s == pytest.approx(5.0)
    assert anim.setpoints(0.8, base, ["a", "b"])[1] == pytest.approx(0.5)      # motion time 0.4: before the step
    assert anim.setpoints(1.4, base, ["a", "b"])[1] == pytest.approx(0.5 + math.radians(45))
    with pytest.raises(ValueError):
        AnimatorControl(m, 0.0)


def test_sign_flip_motion_is_the_thesis_step_button():
    base = np.array([0.0, math.radians(30.0)])
    m = SignFlipMotion("b", pause_s=0.5, hold_s=1.0, repeats=2)
    assert m.name == "flip_b" and m.duration_s == pytest.approx(4.5)
    sp = [m.setpoints(t, base, ["a", "b"])[1] for t in (0.2, 0.7, 1.7, 2.7, 3.7, 4.6)]
    assert np.degrees(sp) == pytest.approx([30.0, -30.0, 30.0, -30.0, 30.0, 30.0])
    assert m.setpoints(0.7, base, ["a", "b"])[0] == 0.0
    # played by the runner: the evaluation sees four 60° steps
    plant = TwoJointPlant()
    plant.base_pose_rad = base
    st = PidConfigurationStorage(["a", "b"], PIDGains(40.0, 20.0, 2.0))
    res = TestRunner(plant, st, PID_PARAMS, EVAL, sample_interval_s=0.01).play(m)
    ev = res.joint_evaluations["b"]
    assert ev.setpoint_changes == 4 and ev.max_step_deg == pytest.approx(60.0)


def test_recorded_motion_roundtrip():
    rm = RecordedMotion(t_s=np.array([0.0, 1.0, 2.0]), joints={"a": np.radians([0.0, 10.0, 20.0])}, name="wave")
    back = RecordedMotion.from_json(json.loads(json.dumps(rm.to_json())))
    q = back.setpoints(0.5, np.array([0.0, 0.3]), ["a", "b"])
    assert q[0] == pytest.approx(math.radians(5.0)) and q[1] == pytest.approx(0.3)
    assert back.duration_s == 2.0


def test_tracker_rejects_bad_samples():
    tr = PoseErrorTracker(["a", "b"])
    tr.record(0.0, [0.0, 1.0], [0.0, 0.9])
    tr.record(0.1, [np.nan, 1.0], [0.0, 0.9])
    assert tr.rejected["non_finite"] == 1
    t, d, m = tr.samples["b"].arrays_deg()
    assert d[0] == pytest.approx(math.degrees(1.0)) and len(t) == 1


def test_runner_automated_and_manual():
    plant = TwoJointPlant()
    st = PidConfigurationStorage(["a", "b"], PIDGains(40.0, 20.0, 2.0), clock=FIXED_CLOCK)
    st.transmit_all()
    runner = TestRunner(plant, st, PID_PARAMS, EVAL, sample_interval_s=0.01, clock=FIXED_CLOCK)
    run = runner.run_test([StepTestMotion("a", 0.5, 2.0, 1, step_deg=45.0), DanceMotion([10.0, 5.0], [0.5, 1.0], 2.0)])
    step = run.motions[0]
    ev = step.joint_evaluations["a"]
    assert ev.setpoint_changes == 2
    assert ev.avg_50_percent_response_time is not None and ev.settling(5.0) is not None
    assert step.joint_evaluations["b"].setpoint_changes == 0
    assert run.evaluation.max_overshoot == step.evaluation.max_overshoot
    # sampled every 0.01 s of a 0.002 s plant: 451 samples for 4.5 s
    assert len(step.samples["a"].t_s) == 451
    j = step.step_data_json("a")
    assert j["simulationTimeStretchFactor"] == 1.0 and isinstance(j["data"][0]["timestamp"], float)
    assert set(j["data"][0]["entry"]) == {"desired", "measured"}
    # a better tuned controller has a smaller error: the runner really uses the storage's gains
    st.apply("a", PIDGains(2.0, 0.0, 0.0))
    worse = runner.run_test([StepTestMotion("a", 0.5, 2.0, 1, step_deg=45.0)]).motions[0].joint_evaluations["a"]
    assert worse.avg_absolute_error > 2 * ev.avg_absolute_error
    # manual mode
    runner.start_manual_record("operator")
    with pytest.raises(RuntimeError):
        runner.start_manual_record()
    for k in range(100):
        runner.record_sample(k * 0.01, [0.0, 0.5], [0.01, 0.5])
    res = runner.stop_manual_record()
    assert res.motion == "operator"
    assert res.joint_evaluations["a"].avg_absolute_error == pytest.approx(math.degrees(0.01))
    runner.reset_test_runner()
    assert len(runner.results) == 0


def _single_joint_factory(holds_seen):
    def factory(joint, holds):
        holds_seen.append(dict(holds))
        return LinearPlant([1.0], [1.0, 3.0, 3.0, 1.0], dt_s=1e-2, effort_max=10.0)
    return factory


def test_autotuning_service_applies_and_keeps_all_heuristics():
    hp = HeuristicsParams.from_config(load_robot_config("fr3")["pid_tuning"]["heuristics"])
    st = PidConfigurationStorage(["x", "y"], PIDGains(1.0, 0.1, 0.0))
    seen = []
    rp = dataclasses.replace(RELAY, amplitude=1.0, start_angle_deg=5.0, target_angle_deg=0.0, warmup_s=10.0,
                             duration_s=25.0, divergence_deg=1000, joint_limit_margin_deg=0.0, hysteresis_deg=0.0)
    svc = AutoTuningService(_single_joint_factory(seen), st, rp, hp, "classic", {"x": 0.0, "y": 0.0}, ["y", "x"])
    out = svc.tune_all_joints()
    assert list(out) == ["y", "x"]
    assert svc.last_tuning_data.joint == "x"
    data = out["x"]
    assert data.relay.ok and data.applied == "classic"
    assert set(data.heuristics) == set(hp.names)
    assert st.local["x"] == data.heuristics["classic"]
    assert svc.apply_heuristic("x", "pd_control") and st.local["x"] == data.heuristics["pd_control"]
    with pytest.raises(ValueError):
        AutoTuningService(_single_joint_factory(seen), st, rp, hp, "nope", {}, [])


def test_autotuning_failure_restores_gains():
    hp = HeuristicsParams.from_config(load_robot_config("fr3")["pid_tuning"]["heuristics"])
    st = PidConfigurationStorage(["x"], PIDGains(1.0, 0.1, 0.0))

    def factory(joint, holds):
        return LinearPlant([1.0], [1.0, 3.0, 3.0, 1.0], dt_s=1e-2, effort_max=10.0, q_min_rad=-0.01, q_max_rad=1.0)

    rp = dataclasses.replace(RELAY, amplitude=1.0, start_angle_deg=5.0, target_angle_deg=0.0, warmup_s=10.0,
                             duration_s=25.0, joint_limit_margin_deg=0.1, hysteresis_deg=0.0)
    svc = AutoTuningService(factory, st, rp, hp, "classic", {"x": 0.0})
    data = svc.tune_single_joint("x")
    assert not data.relay.ok and data.relay.reason == "joint_limit"
    assert data.applied is None and st.local["x"] == PIDGains(1.0, 0.1, 0.0)


def test_mirroring():
    st = PidConfigurationStorage(["l_elbow", "r_elbow", "neck"], PIDGains(1.0))
    st.set("l_elbow", PIDGains(5.0, 1.0, 0.2))
    assert mirror_tuning(st, {"l_elbow": "r_elbow", "neck": "missing"}) == {"r_elbow": True}
    assert st.local["r_elbow"] == PIDGains(5.0, 1.0, 0.2)


@pytest.mark.parametrize("budget,starts,first_phase,restart_xatol",
                         [(60, 1, 0, 0.0), (72, 2, 0, 0.0), (72, 2, 8, 0.0), (72, 1, 0, 0.1), (72, 2, 8, 0.1)])
def test_optimiser_beats_start_within_budget_and_is_near_grid(budget, starts, first_phase, restart_xatol):
    plant = LinearPlant([1.0], [1.0, 3.0, 3.0, 1.0], dt_s=2e-2, effort_max=50.0)
    motion = StepTestMotion("x", step_deg=45.0, pause_s=1.0, hold_s=15.0, repeats=1)
    # one start; two with the budget split; two with a short first phase (the config's default);
    # restarts of a converged simplex
    p = dataclasses.replace(OptimiserParams.from_config(PT["optimiser"]), budget_trials=budget, starts=starts,
                            first_phase_trials=first_phase, restart_xatol_log=restart_xatol, restart_fatol=1e-2)
    cf = JointCostFunction(plant, motion, 0.0, p, PID_PARAMS, EVAL)
    hp = HeuristicsParams.from_config(load_robot_config("fr3")["pid_tuning"]["heuristics"])
    from hri_pid_tuning.core.heuristics import compute_all
    heur = compute_all(8.0, 2 * math.pi / math.sqrt(3), hp)
    res = optimise(cf, heur, 2 * math.pi / math.sqrt(3))
    assert res.trials <= budget and res.trials == len(cf.trials)
    assert res.trials >= budget - 4            # the budget is used (a run needs more than 4 trials left)
    assert res.cost <= res.start_cost and res.cost <= min(res.heuristic_costs.values())
    assert res.cost < 0.9 * res.start_cost
    # a (coarse) grid does not find anything much better
    cf_grid = JointCostFunction(plant, motion, 0.0, p, PID_PARAMS, EVAL)
    _, grid_cost, n = grid_search(cf_grid, 8.0, 2 * math.pi / math.sqrt(3), [0.2, 0.3, 0.45, 0.6, 0.8],
                                  [0.0, 0.1, 0.2, 0.4, 0.8], [0.0, 0.05, 0.1, 0.15])
    assert res.cost <= 1.1 * grid_cost
