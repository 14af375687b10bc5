"""Core tests of the atomic controller: injected clock, lockstep, ms phase boundaries."""
from __future__ import annotations

import copy

import pytest
from hri_runtime.config.tree import ConfigError, load_robot_config

from hri_atomic_motion.core import (AtomicController, AtomicParams, CommandQueue, Fault, LegController,
                                    LegReading, LegStateInput, PhaseTable, PulseGate, to_ms)


@pytest.fixture(scope="module")
def section():
    return load_robot_config("tino")["atomic"]


@pytest.fixture
def params(section):
    return AtomicParams.from_config(section)


class FakeLeg:
    """Ideal leg plant: ticks integrate the commanded RPM (gear 10, 4096 ticks/rev), home at <= 5."""

    def __init__(self, ticks=0.0, gear=10.0, tpr=4096):
        self.ticks = float(ticks)
        self.k = tpr / 60.0 / gear
        self.frozen = False

    def advance(self, rpm, dt):
        if not self.frozen:
            self.ticks += rpm * self.k * dt

    @property
    def reading(self):
        t = int(round(self.ticks))
        return t, t <= 5


def run(ctrl, leg, t0, t1, dt=0.001, log=None):
    n = int(round((t1 - t0) / dt))
    out = None
    for k in range(n):
        t = t0 + k * dt
        ticks, home = leg.reading
        out = ctrl.step(t, ticks, home)
        if log is not None:
            log.append((t, out, ctrl.leg.phase, ctrl.base.phase, ctrl.locked))
        leg.advance(out.leg_rpm, dt)
    return out


def pulse_and_run(params, state, t1, direction=0.0, leg=None):
    """A fresh controller given one pulse ``state`` at t = 0, then run to ``t1`` on ``leg``
    (default an ideal one): (controller, leg, log)."""
    ctrl = AtomicController(params)
    leg = FakeLeg() if leg is None else leg
    res = ctrl.on_pulse(float(state), float(direction), 0.0)
    assert res == "started"
    log = []
    run(ctrl, leg, 0.0, t1, log=log)
    return ctrl, leg, log


def phase_at_ms(log, ms):
    for t, out, lp, bp, locked in log:
        if to_ms(t) == ms:
            return lp, bp, out, locked
    raise KeyError(ms)


# ---------------------------------------------------------------- phase boundaries to the ms
def test_phase_table_ms_boundaries():
    tab = PhaseTable([("prepare", 0.6), ("forward", 0.2), ("return", 0.2)])
    assert tab.durations_ms == [600, 200, 200] and tab.total_ms == 1000
    assert [tab.phase_at(m) for m in (0, 599, 600, 799, 800, 999)] == [0, 0, 1, 1, 2, 2]
    assert tab.phase_at(1000) is None
    assert to_ms(0.6) == 600 and to_ms(1.2 * 0.45) == 540


def test_state1_leg_and_base_boundaries_to_the_ms(params):
    ctrl, leg, log = pulse_and_run(params, 1, 1.3)
    p = params.leg
    # leg: push 600 ms, pause 60 ms, return 540 ms of 1.2 s
    assert phase_at_ms(log, 599)[0] == "push" and phase_at_ms(log, 600)[0] == "pause"
    assert phase_at_ms(log, 659)[0] == "pause" and phase_at_ms(log, 660)[0] == "return"
    assert phase_at_ms(log, 1199)[0] == "return" and phase_at_ms(log, 1200)[0] == "neutral"
    assert phase_at_ms(log, 300)[2].leg_rpm == pytest.approx(p.rpm_forward * p.scale_forward)
    assert phase_at_ms(log, 630)[2].leg_rpm == 0.0
    assert phase_at_ms(log, 900)[2].leg_rpm == pytest.approx(-p.rpm_backward * p.scale_backward)
    # base: 600 ms preparation, 200 ms forward, 200 ms return
    b = params.base
    assert phase_at_ms(log, 599)[1] == "prepare" and phase_at_ms(log, 599)[2].linear_m_s == 0.0
    assert phase_at_ms(log, 600)[1] == "forward" and phase_at_ms(log, 600)[2].linear_m_s == b.nudge_linear_m_s
    assert phase_at_ms(log, 799)[2].linear_m_s == b.nudge_linear_m_s
    assert phase_at_ms(log, 800)[2].linear_m_s == -b.nudge_linear_m_s
    assert phase_at_ms(log, 999)[2].linear_m_s == -b.nudge_linear_m_s
    assert phase_at_ms(log, 1000)[1] == "stopped" and phase_at_ms(log, 1000)[2].linear_m_s == 0.0
    # lock held until both complete (leg 1200 ms > base 1000 ms)
    assert phase_at_ms(log, 1199)[3] is True and phase_at_ms(log, 1200)[3] is False


def test_state2_base_cycle_and_leg_hold(params):
    ctrl, leg, log = pulse_and_run(params, 2, 2.5)
    assert phase_at_ms(log, 1499)[1] == "coordinate" and phase_at_ms(log, 1499)[3]
    assert phase_at_ms(log, 1500)[1] == "stopped" and not phase_at_ms(log, 1500)[3]
    assert phase_at_ms(log, 10)[0] == "extend"
    assert phase_at_ms(log, 1400)[0] == "hold"
    assert abs(leg.ticks - params.leg.max_extension_ticks) <= params.leg.extension_reached_ticks
    # the hold uses the discrete PID with the configured gains
    g = ctrl.leg.pid.gains
    assert (g.kp, g.ki, g.kd) == (2.0, 0.1, 0.5)


def test_state3_base_move_and_direction(params):
    for direction, sign in ((0, 0.0), (1, -1.0), (-1, 1.0)):
        ctrl, leg, log = pulse_and_run(params, 3, 2.0, direction, leg=FakeLeg(ticks=800))
        out = phase_at_ms(log, 1699)[2]
        assert out.linear_m_s == params.base.move_linear_m_s
        assert out.angular_rad_s == sign * params.base.move_angular_rad_s
        assert phase_at_ms(log, 1700)[1] == "stopped" and phase_at_ms(log, 1700)[2].linear_m_s == 0.0
        assert leg.ticks <= 5 + params.leg.tolerance_ticks
        assert phase_at_ms(log, 10)[0] == "home"
        assert phase_at_ms(log, 10)[2].leg_rpm == pytest.approx(-params.leg.rpm_backward * params.leg.scale_backward)


def test_state0_full_stop_and_flags_reset(params):
    ctrl = AtomicController(params)
    leg = FakeLeg()
    ctrl.on_pulse(2.0, 0.0, 0.0)
    run(ctrl, leg, 0.0, 2.0)
    assert ctrl.leg.rest == "hold"
    assert ctrl.on_pulse(0.0, 0.0, 2.0) == "idle"
    out = run(ctrl, leg, 2.0, 4.0)
    assert ctrl.base.state is None and ctrl.base.direction == 0 and out.linear_m_s == 0.0
    assert ctrl.leg.rest == "neutral" and abs(leg.ticks) <= params.leg.tolerance_ticks


# ---------------------------------------------------------------- state 0 tolerance zone
def test_tolerance_zone_no_micro_corrections(params):
    p = params.leg
    legc = LegController(p)
    for ticks in (p.neutral_ticks + p.tolerance_ticks, p.neutral_ticks - p.tolerance_ticks, 10, -30):
        legc = LegController(p)
        assert legc.update(0.0, ticks, False).rpm == 0.0
    # outside the zone: drives at rpm_neutral towards neutral (scaled by direction)
    legc = LegController(p)
    out = legc.update(0.0, p.neutral_ticks + p.tolerance_ticks + 1, False)
    assert out.rpm == pytest.approx(-p.rpm_neutral * p.scale_backward)
    legc = LegController(p)
    out = legc.update(0.0, p.neutral_ticks - p.tolerance_ticks - 1, False)
    assert out.rpm == pytest.approx(p.rpm_neutral * p.scale_forward)
    # hysteresis: keeps correcting inside the zone down to settle_ticks
    assert legc.update(0.001, p.neutral_ticks - p.settle_ticks - 1, False).rpm > 0
    assert legc.update(0.002, p.neutral_ticks - p.settle_ticks, False).rpm == 0.0


def test_asymmetric_scaling(params):
    p = params.leg
    legc = LegController(p)
    assert legc.scale(100.0) == pytest.approx(115.0)
    assert legc.scale(-100.0) == pytest.approx(-85.0)
    assert legc.scale(0.0) == 0.0
    assert (p.scale_forward, p.scale_backward) == (1.15, 0.85)
    assert (p.rpm_forward, p.rpm_backward, p.rpm_neutral) == (110.0, 70.0, 90.0)


# ---------------------------------------------------------------- pulses, lock, queue
def test_three_identical_messages_are_one_movement(params):
    ctrl = AtomicController(params)
    leg = FakeLeg()
    res = [ctrl.on_pulse(1.0, 0.0, t) for t in (0.0, 0.04, 0.08)]
    assert res == ["started", "repeat", "repeat"]
    assert ctrl.on_pulse(0.0, 0.0, 0.12) == "idle_during_movement"
    run(ctrl, leg, 0.0, 3.0)
    assert [c.state for c in ctrl.started] == [1]


def test_lock_and_queue_depth_one_drop_newest(params):
    ctrl, leg, log = pulse_and_run(params, 2, 0.2)
    assert ctrl.on_pulse(1.0, 0.0, 0.2) == "queued"
    assert ctrl.on_pulse(3.0, 1.0, 0.3) == "dropped_queue_full"
    assert ctrl.queue.dropped == 1
    run(ctrl, leg, 0.2, 1.6, log=log)
    # the queued state 1 starts at the very ms the state-2 lock is released (1500 ms)
    assert [c.state for c in ctrl.started] == [2, 1]
    assert to_ms(ctrl.started[1].t_s) == 1500
    assert phase_at_ms(log, 1499)[1] == "coordinate"
    assert phase_at_ms(log, 1500)[1] == "prepare" and phase_at_ms(log, 1500)[0] == "push"


def test_replace_newest_policy_and_depth(section):
    sec = copy.deepcopy(section)
    sec["queue_policy"] = "replace_newest"
    sec["queue_depth"] = 2
    ctrl = AtomicController(AtomicParams.from_config(sec))
    leg = FakeLeg()
    ctrl.on_pulse(1.0, 0.0, 0.0)
    for i, (s, d) in enumerate([(2, 0), (3, 0), (3, 1), (3, -1)]):
        ctrl.on_pulse(float(s), float(d), 0.1 + 0.1 * i)
    run(ctrl, leg, 0.0, 8.0)
    assert [(c.state, c.direction) for c in ctrl.started] == [(1, 0), (2, 0), (3, -1)]
    q = CommandQueue(0)
    assert q.push(object()) is False


def test_pulse_gate_rearm():
    g = PulseGate(0.5)
    assert g.accept(1, 0, 0.0) and not g.accept(1, 0, 0.04)
    assert g.accept(1, 0, 0.6)          # same value after silence = new pulse
    assert g.accept(0, 0, 0.64) and g.accept(1, 0, 0.68)


def test_bad_commands_rejected_and_counted(params):
    ctrl = AtomicController(params)
    assert ctrl.on_pulse(4.0, 0.0, 0.0) == "rejected_state"
    assert ctrl.on_pulse(1.5, 0.0, 0.0) == "rejected_state"
    assert ctrl.on_pulse(1.0, 2.0, 0.0) == "rejected_direction"
    assert ctrl.on_pulse(float("nan"), 0.0, 0.0) == "rejected_non_finite"
    assert not ctrl.locked and ctrl.counts["rejected_state"] == 2


# ---------------------------------------------------------------- faults
def _assert_latched(ctrl, leg, fault, t):
    assert ctrl.fault is fault
    out = run(ctrl, leg, t, t + 0.5)
    assert (out.leg_rpm, out.linear_m_s, out.angular_rad_s) == (0.0, 0.0, 0.0)
    assert not ctrl.locked and len(ctrl.queue) == 0
    assert ctrl.on_pulse(1.0, 0.0, t + 1.0) == "rejected_fault"
    assert ctrl.fault is fault                       # still latched, nothing clears it but reset
    assert ctrl.reset(t + 1.1) and ctrl.fault is None
    assert ctrl.on_pulse(1.0, 0.0, t + 2.0) == "started"


def test_fault_link_safe_stop(params):
    ctrl = AtomicController(params)
    leg = FakeLeg()
    ctrl.on_pulse(3.0, 1.0, 0.0)
    ctrl.on_pulse(1.0, 0.0, 0.1)
    out = run(ctrl, leg, 0.0, 0.5)
    assert out.linear_m_s > 0
    ctrl.safe_stop(0.5)
    _assert_latched(ctrl, leg, Fault.LINK_SAFE_STOP, 0.5)


def test_fault_stall(params):
    leg = FakeLeg()
    leg.frozen = True
    ctrl, leg, log = pulse_and_run(params, 2, 1.0, leg=leg)
    assert ctrl.fault is Fault.STALL
    # tripped exactly stall_time_s after the motor was first driven (command issued at 0 ms)
    assert log[0][1].leg_rpm > 0
    first_zero = next(to_ms(t) for t, out, *_ in log if out.leg_rpm == 0.0)
    assert first_zero == to_ms(params.leg.stall_time_s)
    leg.frozen = False
    _assert_latched(ctrl, leg, Fault.STALL, 1.0)


def test_fault_home_timeout(params):
    class NoHome(FakeLeg):
        @property
        def reading(self):
            return int(round(self.ticks)), False

    sec_p = params.leg
    ctrl, leg, log = pulse_and_run(params, 3, sec_p.home_timeout_s + 0.1, leg=NoHome(ticks=1000))
    assert ctrl.fault is Fault.HOME_TIMEOUT
    assert phase_at_ms(log, to_ms(sec_p.home_timeout_s) - 1)[2].leg_rpm < 0
    assert phase_at_ms(log, to_ms(sec_p.home_timeout_s))[2].leg_rpm == 0.0


def test_fault_encoder_out_of_range(params):
    ctrl = AtomicController(params)
    leg = FakeLeg()
    ctrl.on_pulse(1.0, 0.0, 0.0)
    run(ctrl, leg, 0.0, 0.1)
    leg.ticks = params.leg.encoder_max_ticks + 1
    out = run(ctrl, leg, 0.1, 0.102)
    assert ctrl.fault is Fault.ENCODER_RANGE and out.leg_rpm == 0.0
    leg.ticks = 0
    _assert_latched(ctrl, leg, Fault.ENCODER_RANGE, 0.2)


def test_no_number_literals_from_the_design_in_core():
    import pathlib
    import re
    import hri_atomic_motion.core as core
    text = "\n".join(p.read_text() for p in pathlib.Path(core.__file__).parent.glob("*.py"))
    for lit in ("110", "70", "90", "1.15", "0.85", "1.2", "600", "1.5", "1.7", "2.0", "0.1", "0.5"):
        code = "\n".join(line.split("#")[0] for line in text.splitlines() if not line.strip().startswith(("\"", "*", "`")))
        assert not re.search(rf"(?<![\w.]){re.escape(lit)}(?![\w.])", code), lit


def test_push_from_the_hold_stops_at_the_soft_limit(params):
    ctrl = AtomicController(params)
    leg = FakeLeg()
    ctrl.on_pulse(2.0, 0.0, 0.0)
    run(ctrl, leg, 0.0, 2.0)
    ctrl.on_pulse(1.0, 0.0, 2.0)
    log = []
    run(ctrl, leg, 2.0, 3.3, log=log)
    assert max(lg[1].leg_rpm for lg in log if lg[2] == "push") <= params.leg.rpm_forward * params.leg.scale_forward
    assert ctrl.fault is None
    assert to_ms(ctrl.started[-1].t_s) == 2000 and phase_at_ms(log, 2659)[0] == "pause"


def test_timings_come_from_config(section):
    sec = copy.deepcopy(section)
    sec["leg"]["push_duration_s"] = 2.0
    sec["base"]["nudge_phases_s"] = [0.3, 0.4, 0.5]
    ctrl = AtomicController(AtomicParams.from_config(sec))
    ctrl.on_pulse(1.0, 0.0, 0.0)
    log = []
    run(ctrl, FakeLeg(), 0.0, 2.1, log=log)
    assert phase_at_ms(log, 999)[0] == "push" and phase_at_ms(log, 1000)[0] == "pause"
    assert phase_at_ms(log, 1099)[0] == "pause" and phase_at_ms(log, 1100)[0] == "return"
    assert phase_at_ms(log, 299)[1] == "prepare" and phase_at_ms(log, 300)[1] == "forward"
    assert phase_at_ms(log, 699)[1] == "forward" and phase_at_ms(log, 700)[1] == "return"
    assert phase_at_ms(log, 1199)[1] == "return" and phase_at_ms(log, 1200)[1] == "stopped"
    sec["leg"]["push_fractions"] = [0.5, 0.5, 0.5]
    with pytest.raises(ConfigError, match="push_fractions.*summing to 1"):
        AtomicParams.from_config(sec)
    sec["leg"]["push_fractions"] = [0.5, 0.05, 0.45]
    sec["leg"]["settle_ticks"] = sec["leg"]["tolerance_ticks"]     # no hysteresis band left
    with pytest.raises(ConfigError, match="settle_ticks"):
        AtomicParams.from_config(sec)


def test_node_policy_system_stop_device_fault_and_missing_leg_state(params):
    """What the node delegates: a stop without a cause (no heartbeat yet) holds without latching,
    a stop with one latches until its release; a device fault latches once; no leg state is zero."""
    ctrl = AtomicController(params)
    assert ctrl.on_pulse(1.0, 0.0, 0.0, system_stopped=True) == "rejected_system_stop"
    assert ctrl.on_pulse(1.0, 0.0, 0.04, system_stopped=True) == "repeat"        # one pulse, one refusal
    assert ctrl.on_pulse(0.0, 0.0, 0.12, system_stopped=True) == "idle_during_stop"
    assert ctrl.on_pulse(7.0, 0.0, 0.13, system_stopped=True) == "rejected_state"  # bad input stays bad input
    assert ctrl.counts["rejected_system_stop"] == 1 and not ctrl.started
    assert ctrl.control(0.0, LegReading(0, True), stopped=True).leg_rpm == 0.0 and ctrl.fault is None
    assert ctrl.control(0.001, None).leg_rpm == 0.0 and ctrl.counts["no_leg_state"] == 1
    assert ctrl.diagnostics(waiting_for_leg=True)[0] == 1
    ctrl.on_system_stop(0.002, True, "console: operator")
    assert ctrl.fault is Fault.SYSTEM_STOP and ctrl.diagnostics()[0] == 2
    assert ctrl.on_system_stop(0.003, False, "") and ctrl.fault is None
    assert ctrl.on_device(0.004, "serial stall: x") and ctrl.fault is Fault.DEVICE
    assert not ctrl.on_device(0.005, "serial stall: x")          # the same fault: once
    legs = LegStateInput(params.node.leg_state_timeout_s)
    assert not legs.on_reading(None, 0.0) and legs.rejected == 1 and legs.read(0.0) is None
    legs.on_reading(LegReading(3, False), 0.0)
    assert legs.read(params.node.leg_state_timeout_s) == LegReading(3, False)
    assert legs.read(params.node.leg_state_timeout_s + 0.001) is None
