"""AtomicDrive (hri_atomic_motion.core.drive) without a node: the controller on its drivers, time
passed in. The serial drivers talk to a pty standing in for the microcontroller (what the host
sends is read back from the master side); the topic driver takes readings as the node would."""
import math
import os
import time
import tty

import pytest
import serial

from hri_runtime.config.tree import load_robot_config

from hri_atomic_motion.core import AtomicController, AtomicParams, HeadAudioGate, HeadAudioLimits, LegReading, LegStateInput
from hri_atomic_motion.core.drive import AtomicDrive
from hri_atomic_motion.core.line_protocol import LineParser, encode
from hri_atomic_motion.hardware import open_drivers
from hri_atomic_motion.serial_driver import (SerialAudioDriver, SerialBaseDriver, SerialHeadDriver, SerialLegDriver,
                                             SerialLink)

CFG = load_robot_config("tino")
P = AtomicParams.from_config(CFG["atomic"])
SIM = load_robot_config("tino", overrides=["atomic.node.driver=sim"])


@pytest.fixture
def mcu():
    """(drive, master fd, link): serial drivers + head gate on a pty."""
    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    port = serial.Serial(os.ttyname(slave), timeout=0.05)
    link = SerialLink(port)
    drive = AtomicDrive(AtomicController(P), leg=SerialLegDriver(link), base=SerialBaseDriver(link),
                        head=SerialHeadDriver(link), audio=SerialAudioDriver(link),
                        head_gate=HeadAudioGate(HeadAudioLimits.from_config(CFG)), link=link)
    fds = {"master": master}
    yield drive, fds, link
    port.close()
    for fd in (fds["master"], slave):
        if fd is not None:
            os.close(fd)


def sent(master) -> list:
    """The lines the host wrote so far (kind, fields)."""
    os.set_blocking(master, False)
    data = b""
    try:
        while True:
            chunk = os.read(master, 4096)
            if not chunk:
                break
            data += chunk
    except BlockingIOError:
        pass
    return [(m.kind, m.fields) for m in LineParser().feed(data)]


def report(master, link, ticks, home, rpm):
    """The MCU reports its encoder; waits until the kernel has passed the bytes on (no timing assert)."""
    os.write(master, encode("E", ticks, int(home), rpm))
    for _ in range(1000):
        if link.port.in_waiting:
            return
        time.sleep(0.001)


def test_a_period_reads_the_leg_and_commands_every_driver(mcu):
    drive, fds, link = mcu
    out, r = drive.step(1.0, stopped=False)
    assert r is None                                     # no report yet: the drive waits, nothing fails
    report(fds["master"], link, 0, True, 0.0)
    out, r = drive.step(1.01, stopped=False)
    assert (r.ticks, r.home_pressed) == (0, True)
    lines = sent(fds["master"])
    assert ("M", (out.leg_rpm,)) in lines and ("V", (out.linear_m_s, out.angular_rad_s)) in lines
    assert drive.stop_request is None


def test_head_and_audio_lines_go_out_when_due_and_the_head_holds_under_a_stop(mcu):
    drive, fds, link = mcu
    drive.head_gate.on_head(0.1, 0.0, 0.0)
    drive.head_gate.on_audio(10.0, 0.0)
    drive.step(2.0, stopped=False)
    kinds = [k for k, _ in sent(fds["master"])]
    assert "H" in kinds and "A" in kinds
    assert drive.head_held(stopped=True) and not drive.head_held(stopped=False)
    drive.head_gate.on_head(0.2, 0.0, 0.0)
    drive.output_zero()                                  # a system stop: the waiting head line is dropped
    assert ("M", (0.0,)) in sent(fds["master"]) and drive.head_gate.counts["head_refused_stop"] == 1
    drive.step(3.0, stopped=True)
    assert "H" not in [k for k, _ in sent(fds["master"])]


def test_a_vanished_device_latches_a_fault_and_asks_once_for_the_system_stop(mcu):
    drive, fds, link = mcu
    os.close(fds["master"])                              # the device vanishes
    fds["master"] = None
    requests = []
    for k in range(5):
        drive.step(4.0 + 0.01 * k, stopped=False)
        requests.append(drive.stop_request)
    asked = [r for r in requests if r]
    assert len(asked) == 1 and asked[0].startswith("atomic serial lost")
    assert drive.ctrl.fault.value == "device_fault" and drive.head_held(stopped=False)
    assert drive.diagnostic_values()["serial_fault"].startswith("lost")


def test_reset_keeps_the_fault_while_the_device_is_absent():
    def gone():
        raise OSError("no such device")

    link = SerialLink(serial.serial_for_url("loop://", timeout=0.01), opener=gone)
    drive = AtomicDrive(AtomicController(P), leg=SerialLegDriver(link), base=SerialBaseDriver(link), link=link)
    link.port.close()
    drive.step(1.0, stopped=False)
    assert drive.ctrl.fault is not None
    assert drive.reset(2.0) == (False, None) and drive.ctrl.fault is not None
    link._opener = lambda: serial.serial_for_url("loop://", timeout=0.01)     # the device is back
    assert drive.reset(3.0) == (True, None) and drive.ctrl.fault is None and link.fault is None


def test_the_topic_driver_uses_the_latest_fresh_reading_and_counts_it():
    leg_input = LegStateInput(P.node.leg_state_timeout_s)
    drive = AtomicDrive(AtomicController(P), leg_input=leg_input)
    out, r = drive.step(1.0, stopped=False)
    assert r is None and drive.diagnostic_values() == {"rejected_leg_state": 0, "leg_states_received": 0}
    assert leg_input.on_reading(LegReading(12, False, 3.0), 1.0)
    assert not leg_input.on_reading(None, 1.0)                                # malformed: counted
    out, r = drive.step(1.01, stopped=False)
    assert r == LegReading(12, False, 3.0) and math.isfinite(out.leg_rpm)
    assert drive.diagnostic_values() == {"rejected_leg_state": 1, "leg_states_received": 1}
    assert drive.read_leg(1.01 + P.node.leg_state_timeout_s + 0.1) is None     # stale: none


def _pushing_drive(reading_every_s: float, until_s: float, ticks_per_reading=lambda k: 0):
    """A topic-driver drive running a state-2 extension (the motor at rpm_forward) for
    ``until_s`` with a leg reading every ``reading_every_s``: the fault it latched (or None)."""
    leg_input = LegStateInput(P.node.leg_state_timeout_s)
    drive = AtomicDrive(AtomicController(P), leg_input=leg_input)
    leg_input.on_reading(LegReading(0, True), 0.0)
    assert drive.on_pulse(2, 0, 0.0, stopped=False) is None
    k, t = 0, 0.0
    while t < until_s and drive.ctrl.fault is None:
        t = round(t + P.node.period_s, 9)
        if t >= (k + 1) * reading_every_s:
            k += 1
            leg_input.on_reading(LegReading(ticks_per_reading(k), False), t)
        drive.step(t, stopped=False)
    return drive.ctrl.fault


def test_a_late_leg_state_is_not_a_stalled_motor_but_an_unmoving_encoder_is():
    """The stall check runs on the readings' clock: no reading for longer than stall_time_s
    (a starved leg-state publisher; within the leg-state timeout) latches nothing, while
    readings that keep arriving with the encoder unmoved latch ``stall`` after stall_time_s."""
    leg = P.leg
    gap = (leg.stall_time_s + P.node.leg_state_timeout_s) / 2        # late, not yet stale
    assert leg.stall_time_s < gap < P.node.leg_state_timeout_s
    moving = lambda k: k * leg.stall_min_ticks                          # moves between readings
    assert _pushing_drive(gap, 4 * gap, moving) is None
    assert _pushing_drive(P.node.period_s, 2 * leg.stall_time_s).value == "stall"   # fresh, unmoved


def test_pulses_refused_by_the_system_stop_are_counted_and_logged_once_per_stop():
    drive = AtomicDrive(AtomicController(P), leg_input=LegStateInput(P.node.leg_state_timeout_s))
    first = drive.on_pulse(2.0, 1.0, 1.0, stopped=True, stop_reason="no heartbeat")
    assert first.startswith("pulse rejected_system_stop: state 2.0 direction 1.0 refused") and "no heartbeat" in first
    assert drive.on_pulse(2.0, 1.0, 1.5, stopped=True) is None            # counted, not logged again
    assert drive.ctrl.counts["rejected_system_stop"] == 2 and drive.pulses_received == 2
    assert drive.on_system_stop(2.0, False, "") is False                   # released (nothing was latched)
    assert drive.on_pulse(2.0, 1.0, 2.5, stopped=True, stop_reason="again").startswith("pulse rejected_system_stop")
    assert drive.on_pulse(math.nan, 0.0, 3.0, stopped=False) == "pulse rejected_non_finite: state nan direction 0.0"
    assert drive.pulses_received == 4


def test_a_system_stop_latches_zeroes_the_outputs_and_the_fault_change_is_reported_once():
    drivers, sim, link = open_drivers(AtomicParams.from_config(SIM["atomic"]), SIM, clock=lambda: 0.0)
    assert sim is not None and link is None and drivers["head_gate"] is not None
    drive = AtomicDrive(AtomicController(P), **drivers)
    assert drive.fault_change() == (False, None)
    sim.set_leg_rpm(50.0)
    assert drive.on_system_stop(1.0, True, "operator") is False
    assert sim.leg_rpm_cmd == 0.0                                         # at once, not at the next period
    changed, fault = drive.fault_change()
    assert changed and fault.value == "system_stop"
    assert drive.fault_change() == (False, fault)
    level, message, values = drive.diagnostics(driver="sim", system_stop="operator")
    assert level == 2 and "system_stop" in message
    assert (values["driver"], values["system_stop"], values["pulses_received"]) == ("sim", "operator", 0)
    assert drive.on_system_stop(2.0, False, "") is True                   # the latched stop cleared
    assert drive.fault_change() == (True, None)
