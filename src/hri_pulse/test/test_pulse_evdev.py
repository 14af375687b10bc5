"""core.evdev: the kernel's input_event records -> the Joy arrays the ROS 2 joy node publishes
(button order, axis sign and range, deadzone, frames on SYN_REPORT, SYN_DROPPED, partial records),
and joy_evdev's node reading a real pipe in the same record format (no /dev/uinput here)."""
import dataclasses
import os
import threading

import pytest

from hri_pulse.core import evdev as ev
from hri_pulse.core.evdev import DeviceRetry, EvdevJoy, MappingError
from hri_runtime.parameter_library.typed import params_type

GP = params_type("pulse.gamepad")


@pytest.fixture
def g(pulse_section):
    return GP.from_config(pulse_section["gamepad"])


@pytest.fixture
def joy(g):
    return EvdevJoy.from_params(g)


def test_record_is_the_kernels_24_byte_input_event():
    rec = ev.encode(ev.EV_KEY, 0x130, 1, 12.5)
    assert len(rec) == ev.INPUT_EVENT.size == 24
    assert ev.INPUT_EVENT.unpack(rec) == (12, 500000, 1, 0x130, 1)


def test_buttons_in_joy_order_change_on_syn_report_only(joy, pulse_section):
    jb = pulse_section["gamepad"]["joy_buttons"]
    assert joy.buttons == [0] * 11 and joy.axes == [0.0] * 8
    assert joy.feed(ev.key("BTN_NORTH", True) + ev.key("BTN_TL", True)) is False   # no SYN yet
    assert joy.buttons == [0] * 11
    assert joy.feed(ev.syn()) is True
    assert {i for i, b in enumerate(joy.buttons) if b} == {jb["x"], jb["lb"]}      # X + LB, the joy node's indices
    assert joy.feed(ev.key("BTN_NORTH", True) + ev.syn()) is False                 # autorepeat value: no change
    assert joy.feed(ev.key("BTN_NORTH", False) + ev.syn()) is True
    assert {i for i, b in enumerate(joy.buttons) if b} == {jb["lb"]}
    assert joy.counters.frames == 2


@pytest.mark.parametrize("name, raw, expected", [
    ("ABS_Y", -32768, 1.0),     # left stick fully up: +1 (the joy node inverts evdev's sign)
    ("ABS_Y", 32767, -1.0),
    ("ABS_X", -32768, 1.0),     # fully left: +1
    ("ABS_X", 0, 0.0),          # centre, inside the deadzone
    ("ABS_Z", 0, 1.0),          # trigger released: +1, as the joy node reports it
    ("ABS_Z", 255, -1.0),       # trigger pressed
    ("ABS_HAT0Y", -1, 1.0),     # D-pad up
    ("ABS_HAT0X", 1, -1.0),     # D-pad right
])
def test_axis_sign_range_as_the_joy_node(joy, g, name, raw, expected):
    joy.feed(ev.axis(name, raw) + ev.syn())
    i = list(g.evdev_axes).index(name)
    assert joy.axes[i] == pytest.approx(expected, abs=1e-4)


def test_deadzone_zeroes_small_values_and_rescales_the_rest(joy, g):
    dz = g.deadzone
    i = list(g.evdev_axes).index("ABS_RX")
    joy.feed(ev.axis("ABS_RX", int(-32768 * dz * 0.5)) + ev.syn())
    assert joy.axes[i] == 0.0
    joy.feed(ev.axis("ABS_RX", -16384) + ev.syn())        # half way left: n ~ 0.5, rescaled past the deadzone
    n = 2 * (-16384 + 32768) / 65535 - 1
    assert joy.axes[i] == pytest.approx((-n - dz) / (1 - dz), abs=1e-9)


def test_syn_dropped_discards_the_frame_in_progress(joy):
    joy.feed(ev.key("BTN_SOUTH", True) + ev.encode(ev.EV_SYN, ev.SYN_DROPPED, 0) + ev.syn())
    assert joy.buttons[0] == 0 and joy.counters.dropped_frames == 1


def test_records_split_across_reads_and_a_partial_tail(joy):
    data = ev.key("BTN_EAST", True) + ev.syn()
    assert joy.feed(data[:7]) is False and joy.feed(data[7:30]) is False
    assert joy.feed(data[30:]) is True and joy.buttons[1] == 1
    joy.feed(b"\x01\x02\x03")
    joy.end_of_stream()
    assert joy.counters.partial_bytes == 3


def test_unmapped_codes_are_counted_not_fatal(joy):
    joy.feed(ev.encode(ev.EV_KEY, 0x2FF, 1) + ev.encode(ev.EV_ABS, 0x3F, 5) + ev.syn())
    assert joy.counters.unmapped == 2 and joy.buttons == [0] * 11


def test_reset_releases_everything(joy):
    joy.feed(ev.key("BTN_TR", True) + ev.axis("ABS_Y", -32768) + ev.syn())
    joy.reset()
    assert joy.buttons == [0] * 11 and joy.axes == [0.0] * 8


def test_a_bad_mapping_is_one_clear_error(g):
    with pytest.raises(MappingError, match="evdev_buttons: 'BTN_NOPE' – expected one of BTN_A"):
        EvdevJoy.from_params(dataclasses.replace(g, evdev_buttons=["BTN_NOPE"]))
    joy = EvdevJoy.from_params(g)
    with pytest.raises(MappingError, match=r"evdev_axis_max\[0\]: 5 – expected more than"):
        joy.set_range(0, 5, 5)


def test_joy_evdev_refuses_a_bad_mapping_in_one_line(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).parent / "joy_evdev"
    out = subprocess.run([str(exe), "--ros-args", "-p", "pulse.gamepad.evdev_axes:=[ABS_X, ABS_NOPE]"],
                         env=dict(os.environ, HRI_TRANSPORT="inproc"), capture_output=True, text=True, timeout=60)
    lines = [ln for ln in (out.stdout + out.stderr).splitlines() if ln.strip()]
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stdout + out.stderr
    assert any("pulse.gamepad.evdev_axes" in ln and "ABS_NOPE" in ln for ln in lines), lines


def test_device_retry_once_per_period():
    r = DeviceRetry(2.0, start_s=0.0)
    due = [t / 10 for t in range(100) if r.due(t / 10)]
    assert due == [0.0, 2.0, 4.0, 6.0, 8.0]


def test_absinfo_and_name_of_a_pipe_are_none_and_no_device_is_found(tmp_path):
    r, w = os.pipe()
    try:
        assert ev.absinfo_range(r, 0) is None and ev.device_name(r) is None
    finally:
        os.close(r)
        os.close(w)
    assert ev.find_device("Xbox", str(tmp_path)) is None
    d = tmp_path / "event3" / "device"
    d.mkdir(parents=True)
    (d / "name").write_text("Microsoft X-Box 360 pad\n")
    assert ev.find_device("x-box 360", str(tmp_path)) == "/dev/input/event3"


# ---------------------------------------------------------------- the node, on a real pipe
def test_joy_evdev_node_reads_a_pipe_publishes_joy_and_releases_when_it_closes(tmp_path, pulse_section):
    from hri_runtime.inproc import InprocContext
    from hri_runtime.node import Node
    from hri_pulse.nodes.joy_evdev_node import JoyEvdevNode

    fifo = tmp_path / "gamepad"
    os.mkfifo(fifo)
    ctx = InprocContext(start_time_s=0.0)
    node = JoyEvdevNode(context=ctx, parameters={"pulse.gamepad.device": str(fifo)})
    got = []
    sink = Node("joy_sink", context=ctx)
    sink.create_subscription("sensor_msgs/msg/Joy", pulse_section["topics"]["joy"],
                             lambda m: got.append((list(m.buttons), list(m.axes))), qos=1000)
    ctx.spin_for(0.05)                       # the node opens the pipe (non-blocking reader)
    assert node.fd is not None
    holder = {}
    t = threading.Thread(target=lambda: holder.setdefault("w", open(fifo, "wb", buffering=0)))
    t.start()
    t.join(5)
    w = holder["w"]
    w.write(ev.key("BTN_NORTH", True) + ev.axis("ABS_Y", -32768) + ev.syn())
    ctx.spin_for(0.02)
    jb = pulse_section["gamepad"]["joy_buttons"]
    buttons, axes = got[-1]
    assert buttons[jb["x"]] == 1 and axes[1] == pytest.approx(1.0)
    n = len(got)
    ctx.spin_for(0.5)                        # nothing new: the joy node's autorepeat
    rate = pulse_section["gamepad"]["autorepeat_rate_hz"]
    assert abs((len(got) - n) - 0.5 * rate) <= 1 and got[-1] == (buttons, axes)
    w.close()                                # the device vanishes
    ctx.spin_for(0.02)
    assert got[-1] == ([0] * 11, [0.0] * 8) and node.device_losses == 1 and node.fd is None
    node.destroy_node()
    sink.destroy_node()


def test_joy_evdev_node_without_a_device_says_so_and_retries(pulse_section, caplog):
    import logging
    from hri_runtime.inproc import InprocContext
    from hri_pulse.nodes.joy_evdev_node import JoyEvdevNode

    ctx = InprocContext(start_time_s=0.0)
    node = JoyEvdevNode(context=ctx, parameters={"pulse.gamepad.device_name": "no such pad"})
    with caplog.at_level("ERROR"):
        ctx.spin_for(5.0)
    errs = [r for r in caplog.records if r.levelno >= logging.ERROR and "joy_evdev:" in r.getMessage()]
    period = pulse_section["gamepad"]["retry_period_s"]
    assert len(errs) == int(5.0 / period) + 1 and node.published == 0
    node.destroy_node()
