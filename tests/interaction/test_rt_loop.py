"""hri_core.rt.RtLoop, the C++ 1 kHz loop with the FR3 stepped through MuJoCo's C API inside it,
from Python: lockstep ``step(n)`` against the python engine (``PythonEngine``: the same controller
and the same C++ robot, stepped from Python through hri_sim.arm_sim.ArmSim) on hold, an impedance
push (≈ F/K) and an admittance push; lock-free inputs (target, mode, frozen hold, push, gains);
bad input refused with one clear error; the real-time thread starts, runs the same cycle, reports
its scheduling and stops (no timing asserted: timing lives in bench/interaction)."""
from __future__ import annotations

import copy
import time

import numpy as np
import pytest

import mujoco
from hri_core import rt

# the mujoco wheel is required, so a core built without its MuJoCo robot is a broken build
assert rt.HAS_MUJOCO, "hri_core built without the mujoco wheel (libmujoco + headers): rebuild it (make venv)"

from hri_core.safety import SafetyChecker, SafetyLimits  # noqa: E402
from hri_interaction.core.controller import InteractionParams, loop_config, tick_params  # noqa: E402
from hri_interaction.engine import PythonEngine  # noqa: E402
from hri_runtime.config.tree import list_arms, load_robot_config  # noqa: E402
from hri_core.safety import arm_limits
from hri_sim.models import load_arm  # noqa: E402


@pytest.fixture(scope="module")
def cfg():
    return load_robot_config("fr3")


def make_loop(cfg, safety=False, **rt_changes):
    sec = copy.deepcopy(cfg["interaction"])
    sec["rt"].update(rt_changes)
    p = InteractionParams.from_config(sec)
    names = list(cfg["joints"]["names"])
    model = load_arm("fr3", actuation="torque", timestep_s=1.0 / p.rate_hz, add_ft_sensor=True)
    data = mujoco.MjData(model)
    jids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in names]
    data.qpos[[model.jnt_qposadr[j] for j in jids]] = np.deg2rad(cfg["joints"]["named_positions_deg"]["home"])
    robot = rt.MujocoRobot(model, data, names, sec["ee_site"])
    chk = SafetyChecker(SafetyLimits(**arm_limits(cfg).as_kwargs())) if safety else None
    tp = tick_params(p, len(names), torque_max_nm=cfg["joints"]["torque_max_nm"])
    return rt.RtLoop(tp, loop_config(p), robot, safety=chk), p, sec


def test_lockstep_matches_the_python_engine_and_yields_f_over_k(cfg):
    loop, p, sec = make_loop(cfg)
    ref = PythonEngine(cfg, np.deg2rad(cfg["joints"]["named_positions_deg"]["home"]), params=p)
    s0 = loop.state()
    p0 = s0["world_T_ee"][:3, 3].copy()
    np.testing.assert_allclose(s0["world_T_ee"], ref.sim.ee_pose(), atol=1e-12)
    loop.step(500)
    ref.step(round(0.5 / ref.dt))
    s = loop.state()
    assert s["ticks"] == 500 and s["time_s"] == pytest.approx(0.5)
    assert np.linalg.norm(s["world_T_ee"][:3, 3] - p0) < 1e-6          # gravity held
    F = 10.0
    loop.set_push([0.0, 0.0, -F])
    ref.sim.push([0.0, 0.0, -F])
    loop.step(1500)
    ref.step(round(1.5 / ref.dt))
    s = loop.state()
    dz = s["world_T_ee"][2, 3] - p0[2]
    k_z = p.impedance.stiffness[5, 5]
    assert dz == pytest.approx(-F / k_z, rel=0.05)                     # yields ≈ F/K
    assert abs(dz - (ref.sim.ee_pose()[2, 3] - p0[2])) < 2e-6          # as the python engine
    np.testing.assert_allclose(s["wrench_body"][3:], ref.sim.wrench_body()[3:], atol=1e-3)
    assert s["flags"] == [] and s["missed"] == 0
    # admittance: the admittance pose adds F / K_adm
    assert loop.set_mode("admittance", p.switch.settle_s)
    ref.ctrl.request_mode("admittance", ref.sim.state())
    loop.step(2500)
    ref.step(round(2.5 / ref.dt))
    s = loop.state()
    dz = s["world_T_ee"][2, 3] - p0[2]
    k_adm = p.admittance.stiffness[5, 5]
    assert s["mode"] == "admittance"
    assert dz == pytest.approx(-F / k_adm - F / k_z, rel=0.05)
    assert abs(dz - (ref.sim.ee_pose()[2, 3] - p0[2])) < 2e-6
    # release: back to the start pose
    loop.set_push([0.0, 0.0, 0.0])
    loop.step(3000)
    s = loop.state()
    assert np.linalg.norm(s["world_T_ee"][:3, 3] - p0) < 2e-4
    assert s["energy_violations"] == 0


def test_inputs_hold_and_bad_input(cfg):
    loop, p, sec = make_loop(cfg, safety=True)
    s0 = loop.state()
    T = s0["world_T_ee"].copy()
    T[1, 3] += 0.01
    assert loop.set_target(T)
    loop.step(300)   # 10 mm at reference_max_linear_m_s (0.1 m/s) = 0.1 s of ramp, then tracked
    s = loop.state()
    assert s["world_T_d"][1, 3] == pytest.approx(T[1, 3], abs=1e-12)
    assert s["flag_ticks"]["reference_ramping"] > 0
    assert s["world_T_ee"][1, 3] == pytest.approx(T[1, 3], abs=5e-4)
    # hold: a new target is not followed while frozen, the reference stays where it is
    loop.set_frozen(True)
    T2 = T.copy()
    T2[1, 3] += 0.02
    loop.set_target(T2)
    loop.step(200)
    s = loop.state()
    assert s["frozen"] and "frozen" in s["flags"] and "hold" in s["flags"]
    assert s["world_T_d"][1, 3] == pytest.approx(T[1, 3], abs=1e-12)
    loop.set_frozen(False)
    loop.step(1)
    assert not loop.state()["frozen"]
    # non-finite input refused, one clear error for structurally bad input
    bad = T.copy()
    bad[0, 0] = np.nan
    assert loop.set_target(bad) is False
    assert loop.set_push([np.nan, 0, 0]) is False
    with pytest.raises(ValueError, match="unknown mode"):
        loop.set_mode("sideways")
    # an oversized robot wrench (a 1 kN push) is invalid: the admittance holds, flagged
    loop.set_push([0.0, 0.0, -1000.0])
    loop.step(2)
    s = loop.state()
    assert "wrench_invalid" in s["flags"] and "hold" in s["flags"]
    loop.set_push([0.0, 0.0, 0.0])
    # gains: blended to the new ones over blend_s
    K2, D2 = p.impedance.stiffness * 1.5, p.impedance.damping * 1.2
    assert loop.set_gains(K2, D2, p.blend_s)
    loop.step(int(p.blend_s * p.rate_hz) + 5)
    np.testing.assert_allclose(loop.state()["K"], K2, rtol=1e-12)


def test_construction_refuses_bad_models_and_params(cfg):
    sec = cfg["interaction"]
    p = InteractionParams.from_config(sec)
    names = list(cfg["joints"]["names"])
    model = load_arm("fr3", actuation="torque", timestep_s=0.002)
    data = mujoco.MjData(model)
    robot = rt.MujocoRobot(model, data, names, sec["ee_site"])
    with pytest.raises(ValueError, match="timestep"):
        rt.RtLoop(tick_params(p, 7), loop_config(p), robot)
    with pytest.raises(ValueError, match="torque_max_nm size"):
        rt.RtLoop(tick_params(p, 6, torque_max_nm=cfg["joints"]["torque_max_nm"]), loop_config(p), robot)
    ok = rt.MujocoRobot(model, data, names, sec["ee_site"])
    tp6 = tick_params(p, 6)
    tp6.torque_max_nm = None
    cfg2 = loop_config(p)
    cfg2.rate_hz = 500.0
    with pytest.raises(ValueError, match="robot has 7 joints, params.n = 6"):
        rt.RtLoop(tp6, cfg2, ok)
    with pytest.raises(ValueError, match="site"):
        rt.MujocoRobot(model, data, names, "no_such_site")
    with pytest.raises(ValueError, match="joint 'nope'"):
        rt.MujocoRobot(model, data, ["nope"], sec["ee_site"])
    tp = tick_params(p, 7)
    with pytest.raises(ValueError, match="unknown filter"):
        tp.filter = "butterworth"


def test_the_loop_keeps_its_model_alive(cfg):
    loop, _, _ = make_loop(cfg)
    import gc

    gc.collect()      # model/data are referenced only by the robot, the robot only by the loop
    loop.step(10)
    assert loop.state()["ticks"] == 10


def test_thread_runs_the_cycle_reports_scheduling_and_stops(cfg):
    loop, _, _ = make_loop(cfg, lock_memory=False)
    loop.start()
    try:
        assert loop.running
        with pytest.raises(RuntimeError, match="running"):
            loop.step(1)
        deadline = time.monotonic() + 30.0           # generous: only progress is asserted
        while loop.state()["ticks"] < 50 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        loop.stop()
    s = loop.state()
    assert not loop.running and not s["running"]
    assert s["ticks"] >= 50
    assert s["period_error_us"]["count"] >= 49 and s["tick_cost_us"]["count"] >= 50
    assert s["rt"]["sched_fifo"] or s["rt"]["note"]   # FIFO granted or the fallback reported
    assert s["rt"]["mlockall"] is False               # lock_memory off
    n = s["ticks"]
    loop.step(5)                                      # lockstep again after stop()
    assert loop.state()["ticks"] == n + 5


def test_state_after_step_is_the_arm_after_the_physics_step(cfg):
    """state(): the reading the last tick used (before write() stepped MuJoCo); state_after_step():
    the same tick's values with the arm as it is now (what the python engine reports after its
    step, and what the next tick reads); last_tau(): the command write() applied. Both are
    lockstep only (the robot belongs to the thread while it runs)."""
    loop, p, sec = make_loop(cfg)
    ref = PythonEngine(cfg, np.deg2rad(cfg["joints"]["named_positions_deg"]["home"]), params=p)
    loop.set_push([0.0, 5.0, -10.0])
    ref.sim.push([0.0, 5.0, -10.0])
    loop.step(200)                                    # moving: consecutive readings differ
    ref.step(round(0.2 / ref.dt))
    before, after = loop.state(), loop.state_after_step()
    assert after["ticks"] == before["ticks"] == 200 and after["time_s"] == before["time_s"]
    np.testing.assert_array_equal(after["tau"], before["tau"])
    np.testing.assert_array_equal(loop.last_tau(), before["tau"])
    np.testing.assert_array_equal(after["world_T_d"], before["world_T_d"])
    assert not np.array_equal(after["world_T_ee"], before["world_T_ee"]) and not np.array_equal(after["q"], before["q"])
    assert after["period_error_us"] is None and after["tick_cost_us"] is None   # no thread timing in lockstep
    # the python engine reports the arm after its step: the same state
    np.testing.assert_allclose(after["world_T_ee"], ref.sim.ee_pose(), atol=1e-9)
    np.testing.assert_allclose(after["q"], ref.sim.q, atol=1e-9)
    np.testing.assert_allclose(after["wrench_body"], ref.sim.wrench_body(), atol=1e-9)
    loop.step(1)                                      # the next tick read exactly that state
    np.testing.assert_array_equal(loop.state()["world_T_ee"], after["world_T_ee"])
    np.testing.assert_array_equal(loop.state()["q"], after["q"])
    # a caller stepping the loop takes a command at once (apply_pending), as the next tick would first
    assert loop.set_mode("hybrid") and loop.state()["mode"] == "impedance"
    loop.apply_pending()
    assert loop.state()["mode"] == "hybrid" and loop.state()["ticks"] == 201
    loop.start()
    try:
        for call in (loop.state_after_step, loop.last_tau, loop.apply_pending):
            with pytest.raises(RuntimeError, match="running"):
                call()
    finally:
        loop.stop()


def test_hold_re_anchors_at_the_measured_pose_and_release_does_not_jump(cfg):
    loop, p, _ = make_loop(cfg)
    loop.set_mode("admittance", p.switch.settle_s)
    loop.set_push([0.0, 0.0, -10.0])
    loop.step(1500)                                    # pushed down ~5 mm (admittance + impedance)
    loop.set_push([0.0, 0.0, 0.0])
    loop.hold(True)
    loop.step(1)
    s = loop.state()
    held = s["world_T_d"].copy()
    np.testing.assert_array_equal(held, s["world_T_ee"])  # re-anchored at the measured pose
    assert s["frozen"] and not s["lam"].any() and not s["lam_dot"].any()
    loop.step(1000)                                    # push gone: no spring back to the old reference
    s = loop.state()
    assert np.linalg.norm(s["world_T_ee"][:3, 3] - held[:3, 3]) < 1e-3
    np.testing.assert_array_equal(s["world_T_d"], held)
    loop.hold(False)
    loop.step(1000)
    s = loop.state()
    assert not s["frozen"]
    np.testing.assert_array_equal(s["world_T_d"], held)   # the target stayed at the held pose
    assert np.linalg.norm(s["world_T_ee"][:3, 3] - held[:3, 3]) < 1e-3


@pytest.mark.parametrize("robot", list_arms())
def test_reference_feedforward_removes_most_of_the_tracking_lag(robot):
    c = load_robot_config(robot)
    rms = {}
    for ff in (False, True):
        sec = copy.deepcopy(c["interaction"])
        sec["reference_feedforward"] = ff
        p = InteractionParams.from_config(sec)
        names = list(c["joints"]["names"])
        model = load_arm(robot, actuation="torque", timestep_s=1.0 / p.rate_hz)
        data = mujoco.MjData(model)
        jids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in names]
        data.qpos[[model.jnt_qposadr[j] for j in jids]] = np.deg2rad(c["joints"]["named_positions_deg"]["home"])
        loop = rt.RtLoop(tick_params(p, len(names), torque_max_nm=c["joints"]["torque_max_nm"]), loop_config(p),
                         rt.MujocoRobot(model, data, names, sec["ee_site"]))
        T0 = loop.state()["world_T_ee"].copy()
        err = []
        for k in range(1500):                          # 5 cm/s along y, references at 50 Hz
            if k % 20 == 0:
                T = T0.copy()
                T[1, 3] += 0.05 * k / 1000.0
                loop.set_target(T)
            loop.step(1)
            if k >= 200:
                s = loop.state()
                err.append(np.linalg.norm(s["world_T_ee"][:3, 3] - s["world_T_d"][:3, 3]))
        rms[ff] = float(np.sqrt(np.mean(np.square(err))))
    assert rms[True] < 0.5 * rms[False], rms
