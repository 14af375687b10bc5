"""Multi-rate loop (the FR3 keyboard teleop design): decimations, horizon, staleness -> HOLD, transitions logged once."""
from __future__ import annotations

import logging
import threading

import numpy as np
import pytest

from hri_arm_teleop.core.ik import IKResult
from hri_arm_teleop.core.loop import (Bridge, CommandPlanner, LoopParams, MultiRateLoop,
                                      TeleopController)
from hri_arm_teleop.core.types import (CartesianTarget, LatestValue, RefMode, RobotState,
                                       TaskSpaceReference)
from hri_runtime.clock import SimClock
from hri_runtime.config.tree import load_robot_config


def test_params_come_from_config_and_give_the_configured_rates():
    p = LoopParams.from_config(load_robot_config("fr3")["teleop"]["loop"])
    assert (p.rate_hz("controller"), p.rate_hz("planner"), p.rate_hz("io")) == (100.0, 50.0, 50.0)
    assert (p.horizon_s, p.command_max_age_s) == (0.25, 1.0)


def test_decimation_schedule_and_order():
    loop = MultiRateLoop(100.0)
    calls = []
    loop.add_task("io", 2, lambda: calls.append(("io", loop.tick_count)))
    loop.add_task("planner", 2, lambda: calls.append(("planner", loop.tick_count)))
    loop.add_task("controller", 1, lambda: calls.append(("controller", loop.tick_count)))
    for _ in range(100):  # one second
        loop.tick()
    assert loop.runs == {"io": 50, "planner": 50, "controller": 100}
    assert calls[:5] == [("io", 0), ("planner", 0), ("controller", 0), ("controller", 1), ("io", 2)]
    with pytest.raises(ValueError):
        loop.add_task("bad", 0, lambda: None)


def test_stale_command_goes_to_hold_after_one_second_and_logs_each_transition_once(caplog):
    clock = SimClock()
    params = LoopParams.from_config(load_robot_config("fr3")["teleop"]["loop"])
    planner = CommandPlanner(params, clock, "attachment_site")
    bridge = Bridge(clock, logger=logging.getLogger("t"))
    caplog.set_level(logging.INFO, logger="t")
    modes = []
    planner.submit(np.eye(4))  # received at t = 0, never refreshed
    for k in range(150):  # 1.5 s at 100 Hz, planner every 2nd tick
        clock.set_s(k * 0.01)
        if k % 2 == 0:
            bridge.planner_tick(planner.update())
        modes.append(bridge.control_tick() is not None)
    t = np.arange(150) * 0.01
    # TRACK while the command is <= 1.0 s old (+ the 0.25 s horizon of the last reference)
    assert all(modes[: 101]) and not any(m for m, tt in zip(modes, t) if tt > 1.0 + 0.25 + 1e-9)
    last_track = max(tt for m, tt in zip(modes, t) if m)
    assert last_track == pytest.approx(1.25, abs=0.011)
    assert [m for _, m in bridge.transitions] == [RefMode.TRACK, RefMode.HOLD]
    assert sum("TRACK:" in r.message for r in caplog.records) == 1
    assert sum("HOLD:" in r.message for r in caplog.records) == 1
    assert planner.stale_count > 0


def test_reference_expires_after_its_horizon_without_planner_updates():
    clock = SimClock()
    bridge = Bridge(clock)
    ref = TaskSpaceReference(0.0, 0.25, RefMode.TRACK, CartesianTarget(np.eye(4)))
    assert bridge.planner_tick(ref)
    clock.set_s(0.25)
    assert bridge.control_tick() is ref
    clock.set_s(0.2501)
    assert bridge.control_tick() is None and bridge.mode is RefMode.HOLD


@pytest.mark.parametrize("bad, cause", [
    (np.full((4, 4), np.nan), "invalid_target"),
    (np.diag([1.0, 1.0, -1.0, 1.0]), "invalid_target"),   # reflection, not a rotation
    (2 * np.eye(4), "invalid_target"),
])
def test_invalid_references_are_rejected_and_counted(bad, cause):
    bridge = Bridge(SimClock())
    assert not bridge.planner_tick(TaskSpaceReference(0.0, 0.25, RefMode.TRACK, CartesianTarget(bad)))
    assert bridge.rejected == {cause: 1}
    assert not bridge.planner_tick(TaskSpaceReference(float("nan"), 0.25, RefMode.TRACK,
                                                      CartesianTarget(np.eye(4))))
    assert bridge.control_tick() is None


class FakeIK:
    def __init__(self):
        self.calls = 0

    def solve(self, T, q_seed):
        self.calls += 1
        return IKResult(q_seed + 0.1, True, 1, 0.0, 0.0)


def test_controller_holds_the_latched_position_not_the_sagging_measurement():
    clock = SimClock()
    ctrl = TeleopController(FakeIK(), clock)
    q = np.zeros(3)
    ref = TaskSpaceReference(0.0, 0.25, RefMode.TRACK, CartesianTarget(np.eye(4)))
    cmd = ctrl.step(RobotState(0.0, q, q), ref)
    np.testing.assert_allclose(cmd.q_des, 0.1)
    for k in range(5):  # HOLD while the measured q sags
        cmd = ctrl.step(RobotState(0.01 * k, q - 0.01 * k, q), None)
        np.testing.assert_allclose(cmd.q_des, 0.1)


def test_latest_value_hand_off_is_thread_safe_and_newest_wins():
    box: LatestValue[tuple] = LatestValue()
    n = 20000

    def writer(w):
        for i in range(n):
            box.put((w, i), float(i))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(2)]
    for th in threads:
        th.start()
    seen = []
    while any(th.is_alive() for th in threads):
        v, stamp = box.get()
        if v is not None:
            assert float(v[1]) == stamp  # value and stamp always belong together
            seen.append(v)
    for th in threads:
        th.join()
    v, stamp = box.take()
    assert v[1] == n - 1 and stamp == n - 1
    assert box.take() == (None, None)  # nothing newer


def test_planner_approaches_a_far_command_with_bounded_speed_and_acceleration():
    clock = SimClock()
    p = LoopParams.from_config(load_robot_config("fr3")["teleop"]["loop"])
    planner = CommandPlanner(p, clock, "attachment_site")
    planner.seed(np.eye(4))  # the measured EE pose
    far = np.eye(4)
    far[:3, 3] = [0.1, 0.0, 0.0]  # 10 cm away (e.g. twelve keyboard presses at once)
    planner.submit(far)
    xs, dt = [], 0.02
    for k in range(1, 51):  # 1 s at 50 Hz
        clock.set_s(dt * k)
        xs.append(planner.update().target.T[0, 3])
    v = np.diff([0.0] + xs) / dt
    assert np.all(v <= p.ref_max_linear_speed_m_s + 1e-12)          # never faster
    assert np.all(np.abs(np.diff([0.0, *v])) <= p.ref_max_linear_accel_m_s2 * dt + 1e-12)  # nor harder
    assert np.all(np.diff(xs) >= -1e-12) and max(xs) <= 0.1 + 1e-12  # no overshoot: it brakes
    assert xs[-1] == pytest.approx(0.1, abs=1e-12)                 # and it gets there
    assert v.max() == pytest.approx(p.ref_max_linear_speed_m_s)     # at the speed limit


def test_bridge_spreads_each_reference_over_the_planner_period():
    """50 Hz references -> 100 Hz targets without a staircase: half a step, then the rest."""
    clock = SimClock()
    bridge = Bridge(clock, spread_ticks=2)
    xs = []
    for k in range(6):
        clock.set_s(0.01 * k)
        if k % 2 == 0:
            T = np.eye(4)
            T[0, 3] = 0.001 * k   # 1 mm per 20 ms
            bridge.planner_tick(TaskSpaceReference(clock(), 0.25, RefMode.TRACK, CartesianTarget(T)))
        xs.append(bridge.control_tick().target.T[0, 3])
    np.testing.assert_allclose(np.diff(xs)[1:], 0.001, atol=1e-12)   # constant velocity at 100 Hz
