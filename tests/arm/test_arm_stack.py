"""The arm stack (teleop.output cartesian), lockstep in simulated time: VR packets over real UDP ->
clutch -> planner -> /interaction/reference -> the 1 kHz interaction loop (the configured engine:
the C++ rt loop stepped with step(1), or the Python engine) -> the torque-controlled MuJoCo arm.
No wall-clock timing is asserted."""
from __future__ import annotations

import numpy as np
import pytest

from hri_arm_teleop.stack import (ScenarioRun, ScriptedPerson, build_stack, push_metrics,
                                  scenario_config, tracking_mask)
from hri_runtime.config import load_robot_config


def _run(robot: str, jitter: bool, overrides=()):
    cfg = scenario_config(load_robot_config(robot, overrides=list(overrides)))
    stack = build_stack(cfg, jitter=jitter)
    sc = cfg["teleop"]["scenario"]
    from hri_arm_teleop.core.scenario import SquareScenario

    person = ScriptedPerson.from_config(sc, SquareScenario.from_config(cfg["teleop"]["demo"]), cfg["interaction"])
    run = ScenarioRun(stack, person)
    try:
        run.run(person.t_end)
    finally:
        run.close()
    a = run.driver.trace.arrays()
    imp, adm = cfg["interaction"]["impedance"], cfg["interaction"]["admittance"]
    pm = push_metrics(a, person, imp["stiffness_diag"][3], adm["stiffness_diag"][3],
                      sc["settle_tol_m"], sc["settle_max_s"])
    mask = tracking_mask(a, person, sc["settle_max_s"])
    err = np.linalg.norm(a["ee_p"] - a["target_p"], axis=1)[mask]
    return cfg, stack, run, a, pm, err


@pytest.mark.parametrize("robot", ["fr3", "ur5e", "iiwa14"])
def test_square_through_the_interaction_loop_and_the_push(robot):
    cfg, stack, run, a, pm, err = _run(robot, jitter=False)
    assert stack.pipe.clutch.counters.engagements == cfg["teleop"]["demo"]["strokes"]
    assert run.receiver.health()["accepted"] == run.operator.sent       # every packet handled
    assert stack.link.rejected == 0 and stack.pipe.safety_holds == 0
    assert err.size > 10_000 and np.sqrt(np.mean(err ** 2)) < 0.002      # RMS < 2 mm at 1 kHz
    # the square was drawn: the EE went 20 cm along -y and +z (base frame) and came back
    side = cfg["teleop"]["demo"]["side_m"]
    span = a["ee_p"].max(axis=0) - a["ee_p"].min(axis=0)
    assert span[1] == pytest.approx(side, abs=0.005) and span[2] == pytest.approx(side, abs=0.005)
    # 10 N for 1 s (impedance): the EE yields F/K and returns within the settling bound
    assert pm["push_deviation_m"] == pytest.approx(pm["push_expected_m"], rel=0.25)
    assert pm["recovered"], pm
    # 0.5 Hz push in admittance: it follows (more than the stiff impedance would) and returns
    assert pm["admittance_peak_m"] > 2 * pm["push_expected_m"] * (pm["admittance_push_force_n"] / pm["push_force_n"])
    assert pm["admittance_recovered"], pm
    st = stack.engine.state()
    assert st["energy_violations"] == 0 and st["mode"] == "impedance"
    assert np.all(np.isfinite(a["tau"]))
    # event-driven reference: the torque changes on the first tick after the packet arrives
    lat = np.array([t1 - t0 for t0, t1 in run.driver.first_torque_change])
    assert lat.size > 500 and np.percentile(lat, 99) <= stack.dt + 1e-9


def test_jittered_reference_link_with_passivity_on_has_no_energy_violation():
    cfg, stack, run, a, pm, err = _run("fr3", jitter=True,
                                       overrides=["teleop.scenario.passivity_filter=passivity"])
    assert stack.link.jitter is not None and stack.link.delivered < stack.link.sent   # overtaken ones dropped
    delays = np.asarray(stack.link.latency_s)
    assert np.median(delays) > 0.02                                                    # really delayed
    st = stack.engine.state()
    assert cfg["interaction"]["passivity"]["filter"] == "passivity"
    assert st["energy_violations"] == 0 and np.min(a["energy_j"]) >= -1e-12
    assert pm["admittance_recovered"] and stack.pipe.safety_holds == 0
    assert np.all(np.isfinite(a["tau"]))


def test_link_loss_holds_the_pose_and_safe_stop_holds_and_releases_without_a_jump():
    cfg = scenario_config(load_robot_config("fr3"))
    stack = build_stack(cfg, jitter=False)
    run = ScenarioRun(stack)
    sq = run.square
    mid = sq.settle_s + sq.press_lead_s + 0.5 * sq.move_s          # the arm is moving (stroke 0)
    try:
        # link loss mid-stroke: the operator goes silent; the command goes stale -> HOLD
        run.send_until = mid
        run.run(mid + cfg["teleop"]["loop"]["command_max_age_s"] + 0.5)
        assert stack.pipe.mode == "HOLD"
        p_hold = stack.engine.ee_pose()[:3, 3].copy()
        run.run(stack.clock.t + 2.0)
        assert np.linalg.norm(stack.engine.ee_pose()[:3, 3] - p_hold) < 5e-4       # holds still
        # the operator is back: SAFE STOP arrives while the arm tracks again
        run.send_until = float("inf")
        run.operator.next_t = stack.clock.t
        t_stroke1 = sq.settle_s + sq.stroke_s + sq.press_lead_s + 0.3 * sq.move_s
        run.run(t_stroke1)
        assert stack.pipe.mode == "TRACK"
        stack.pipe.stop("console: SAFE STOP")
        stack.engine.hold(True, "console: SAFE STOP")
        p_stop = stack.engine.ee_pose()[:3, 3].copy()
        run.run(stack.clock.t + 1.5)           # the operator keeps drawing: ignored
        assert stack.pipe.mode == "STOP"
        st = stack.engine.state()
        assert st["frozen"] and np.linalg.norm(st["world_T_ee"][:3, 3] - p_stop) < 2e-3
        p_before_release = st["world_T_ee"][:3, 3].copy()
        # reset: stays where it is (no jump back to an old reference) until a new stroke
        stack.engine.hold(False, "reset")
        stack.pipe.release()
        run.run(stack.clock.t + 0.5)
        assert np.linalg.norm(stack.engine.ee_pose()[:3, 3] - p_before_release) < 1e-3
    finally:
        run.close()
