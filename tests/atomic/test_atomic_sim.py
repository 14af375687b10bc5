"""The atomic controller on the simulated Tino: the atomic node on its embedded MuJoCo simulation
with the stop supervisor, composed in-process and stepped by the lockstep runner at
``atomic.control_period_s`` (``hri_atomic_motion.e2e.build_embedded``), simulated time only; pulses
published on the node's topic.

Tolerances stated here (and in docs/atomic.md):
* neutral after states 0 / 1 / 3: |ticks - neutral| <= tolerance_ticks (50, the issue's);
* state 2 hold: |ticks - max_extension| <= extension_reached_ticks (20) from the end of the
  extension phase, and <= HOLD_TOL_TICKS (5) from HOLD_SETTLE_S (0.5 s) later until the next command;
* base state 1: net displacement |dx| <= v²/a_max + 1 mm (v = nudge speed, a_max = the wheel
  drive's ramp: 4.5 mm + 1 mm by default), peak forward excursion within 15 % of v·T_forward;
* base state 3: distance within 2 % of v·1.7 s, yaw within 2 % of ω·1.7 s (sign: right = negative).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hri_runtime.config.tree import load_robot_config

from hri_atomic_motion.e2e import build_embedded
from hri_atomic_motion.messages import parse_leg_state

HOLD_TOL_TICKS = 5        # ticks, |error| of the PID hold HOLD_SETTLE_S after the extension is reached
HOLD_SETTLE_S = 0.5


class SimRun:
    """The composed node and what the assertions read every step: the leg state and the
    commanded RPM as the node published them, the base pose of the simulation."""

    def __init__(self, cfg):
        self.chain = c = build_embedded(cfg)
        self.sim, self.ctrl, self.lockstep = c.robot, c.atomic.ctrl, c.lockstep
        self.rows, self._leg, self._rpm = [], None, 0.0
        topics = cfg["atomic"]["topics"]
        c.watch.create_subscription("sensor_msgs/msg/JointState", topics["leg_state"],
                                    lambda m: setattr(self, "_leg", parse_leg_state(m)), qos=10)
        c.watch.create_subscription("std_msgs/msg/Float64", topics["leg_rpm"],
                                    lambda m: setattr(self, "_rpm", m.data), qos=10)
        c.lockstep.every(self._sample)

    def _sample(self, t: float) -> None:
        if self._leg is not None:
            self.rows.append((t, self._leg.ticks, self._rpm, self.sim.base_pose()[0]))

    def array(self) -> dict:
        a = np.array(self.rows, dtype=float).reshape(-1, 4)
        return {k: a[:, i] for i, k in enumerate(("t_s", "ticks", "rpm_cmd", "x_m"))}

    def run_for(self, duration_s: float) -> None:
        self.lockstep.run_for(duration_s)

    def pulse(self, state: int, direction: int = 0) -> None:
        self.chain.pulse(state, direction)


@pytest.fixture(scope="module")
def cfg():
    return load_robot_config("tino")


@pytest.fixture
def runner(cfg):
    r = SimRun(cfg)
    r.run_for(0.1)
    yield r
    r.chain.close()


def _neutral_err(r):
    return abs(r.sim.leg_ticks() - r.ctrl.params.leg.neutral_ticks)


@pytest.mark.parametrize("start_ticks", [300, -200, 40])
def test_state0_auto_positions_into_the_zone(cfg, start_ticks):
    r = SimRun(cfg)
    r.sim.set_leg_angle(r.sim.ticks_to_rad(start_ticks))
    r.run_for(0.5)
    r.pulse(0)
    r.run_for(1.5)
    assert _neutral_err(r) <= r.ctrl.params.leg.tolerance_ticks
    if abs(start_ticks) <= r.ctrl.params.leg.tolerance_ticks:          # inside the zone: never driven
        assert np.all(r.array()["rpm_cmd"] == 0.0)
    assert r.ctrl.fault is None


def test_state1_little_push_and_nudge(runner):
    r = runner
    x0 = r.sim.base_pose()[0]
    r.pulse(1)
    r.run_for(2.5)
    a = r.array()
    b = r.ctrl.params.base
    peak = a["x_m"].max() - x0
    assert peak == pytest.approx(b.nudge_linear_m_s * b.nudge_phases_s[1], rel=0.15)
    # the wheel drive's speed ramp a lags each switch of the nudge; net drift = v²/a (+1 mm)
    a_max = r.sim.p.wheel_accel_max_rad_s2 * r.sim.p.wheel_radius_m
    assert abs(r.sim.base_pose()[0] - x0) <= b.nudge_linear_m_s ** 2 / a_max + 0.001
    assert a["ticks"].max() > 300                       # the push happened
    assert _neutral_err(r) <= r.ctrl.params.leg.tolerance_ticks
    assert [c.state for c in r.ctrl.started] == [1] and r.ctrl.fault is None


def test_state2_extension_held_then_state3_returns_home(runner):
    r = runner
    p = r.ctrl.params
    t_start = r.lockstep.now_s()
    r.pulse(2)
    r.run_for(3.0)
    a = r.array()
    reached = np.flatnonzero(np.abs(a["ticks"] - p.leg.max_extension_ticks) <= p.leg.extension_reached_ticks)
    t_reached = a["t_s"][reached[0]]
    assert t_reached - t_start < p.base.coordination_s                # extension inside the 1.5 s cycle
    hold = a["t_s"] >= t_reached
    err = np.abs(a["ticks"][hold] - p.leg.max_extension_ticks)
    assert err.max() <= p.leg.extension_reached_ticks, err.max()
    settled = a["t_s"] >= t_reached + HOLD_SETTLE_S
    err = np.abs(a["ticks"][settled] - p.leg.max_extension_ticks)
    assert err.max() <= HOLD_TOL_TICKS, err.max()
    x0, y0, yaw0 = r.sim.base_pose()
    r.pulse(3, 1)                                                   # right
    r.run_for(2.5)
    x1, y1, yaw1 = r.sim.base_pose()
    assert _neutral_err(r) <= p.leg.tolerance_ticks
    assert r.sim.home_pressed()
    assert yaw1 - yaw0 == pytest.approx(-p.base.move_angular_rad_s * p.base.move_s, rel=0.02)
    arc = math.hypot(x1 - x0, y1 - y0)
    # chord of the arc of length v·T and angle ω·T
    L, th = p.base.move_linear_m_s * p.base.move_s, p.base.move_angular_rad_s * p.base.move_s
    assert arc == pytest.approx(2 * L / th * math.sin(th / 2), rel=0.02)
    assert r.ctrl.fault is None


def test_state3_forward_distance(runner):
    r = runner
    p = r.ctrl.params
    x0 = r.sim.base_pose()[0]
    r.pulse(3, 0)
    r.run_for(2.5)
    assert r.sim.base_pose()[0] - x0 == pytest.approx(p.base.move_linear_m_s * p.base.move_s, rel=0.02)
    assert abs(r.sim.base_pose()[2]) < 1e-6
    assert _neutral_err(r) <= p.leg.tolerance_ticks


@pytest.mark.parametrize("depth", [1, 3])
def test_burst_of_ten_pulses_runs_exactly_the_queued_number(cfg, depth):
    import copy

    c = copy.deepcopy(cfg)
    c["atomic"]["queue_depth"] = depth
    r = SimRun(c)
    r.run_for(0.1)
    r.pulse(3, 0)                          # the running movement (1.7 s)
    for i in range(10):                    # ten pulses while it runs, alternating values
        r.pulse(1 if i % 2 == 0 else 3, 0)
    assert r.ctrl.locked
    r.run_for(2.0 + 2.0 * depth)
    assert len(r.ctrl.started) == 1 + depth
    assert r.ctrl.counts["dropped_queue_full"] == 10 - depth
    assert r.ctrl.counts["repeat"] == 2 * 11
    assert not r.ctrl.locked and r.ctrl.fault is None


def test_stall_on_the_sim_is_latched(runner):
    r = runner
    r.sim.model.actuator_forcerange[r.sim._act_leg] = (-1e-6, 1e-6)   # motor gives no torque
    r.sim.model.jnt_range[r.sim.model.joint("leg").id] = (-0.6, 2.2)
    r.pulse(2)
    r.run_for(1.0)
    assert r.ctrl.fault is not None and r.ctrl.fault.value == "stall"
    assert r.sim.leg_rpm_cmd == 0.0 and r.sim.twist_cmd == (0.0, 0.0)


def test_recording_saves_npz_and_csv(runner, tmp_path):
    from hri_atomic_motion.plot import load_series, read_mcap, save_series

    topics = runner.chain.cfg["atomic"]["topics"]
    runner.chain.record(tmp_path / "run.mcap")
    runner.pulse(1)
    runner.run_for(0.3)
    runner.chain.close()
    series = read_mcap(tmp_path / "run.mcap", topics)
    for name in ("run.npz", "run.csv"):
        path = save_series(series, tmp_path / name)
        back = load_series(path, topics)
        assert back["ticks"].shape == series["ticks"].shape
        assert back["state"][:, 1].max() == 1
