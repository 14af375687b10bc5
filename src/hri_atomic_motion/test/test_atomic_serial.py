"""Serial line protocol and the pyserial drivers on a loopback port and a pty."""
from __future__ import annotations

import os

import pytest
import serial

from hri_atomic_motion.core.line_protocol import LineParser, checksum, encode
from hri_atomic_motion.serial_driver import (SerialAudioDriver, SerialBaseDriver, SerialHeadDriver, SerialLegDriver,
                                             SerialLink)


def test_encode_and_parse_roundtrip_in_chunks():
    data = (encode("E", 812, 0, -69.5) + encode("M", 126.5) + encode("V", 0.2, -0.6) + encode("S")
            + encode("H", -0.6, 1.57, 0.25) + encode("A", 80.0, -3.1416))
    p = LineParser()
    msgs = []
    for i in range(0, len(data), 3):                 # arbitrary chunking
        msgs += p.feed(data[i:i + 3])
    assert [(m.kind, m.fields) for m in msgs] == [("E", (812, 0, -69.5)), ("M", (126.5,)),
                                                   ("V", (0.2, -0.6)), ("S", ()),
                                                   ("H", (-0.6, 1.57, 0.25)), ("A", (80.0, -3.1416))]
    assert encode("S") == b"S*" + f"{checksum(b'S'):02X}".encode() + b"\n"


@pytest.mark.parametrize("line,cause", [
    (b"E 1 0 0.0\n", "no_checksum"),
    (b"E 1 0 0.0*00\n", "bad_checksum"),
    (encode("E", 1, 0, 0.0).replace(b"E 1", b"E 2"), "bad_checksum"),
    (b"X*58\n", "unknown_type"),
    (encode("M", 1.0).replace(b"\n", b"") + b"\n", None),
    (b"E 1 0*" + f"{checksum(b'E 1 0'):02X}".encode() + b"\n", "field_count"),
    (b"E a 0 1.0*" + f"{checksum(b'E a 0 1.0'):02X}".encode() + b"\n", "field_type"),
    (b"M " + b"1" * 200 + b"\n", "too_long"),
    (b"H 0.1 0.2*" + f"{checksum(b'H 0.1 0.2'):02X}".encode() + b"\n", "field_count"),
    (b"H 0.1 0.2 x*" + f"{checksum(b'H 0.1 0.2 x'):02X}".encode() + b"\n", "field_type"),
    (b"H 0.1 0.2 nan*" + f"{checksum(b'H 0.1 0.2 nan'):02X}".encode() + b"\n", "field_type"),
    (b"A 50.0*" + f"{checksum(b'A 50.0'):02X}".encode() + b"\n", "field_count"),
    (encode("A", 50.0, 0.5).replace(b"A 50", b"A 51"), "bad_checksum"),
])
def test_bad_lines_rejected_and_counted(line, cause):
    p = LineParser()
    msgs = p.feed(line)
    if cause is None:
        assert len(msgs) == 1
    else:
        assert msgs == [] and p.rejected[cause] == 1
    # the parser recovers on the next good line
    assert p.feed(encode("E", 5, 1, 0.0))[0].fields == (5, 1, 0.0)


def test_drivers_on_loop_url():
    port = serial.serial_for_url("loop://", timeout=0.01)
    link = SerialLink(port)
    leg, base = SerialLegDriver(link), SerialBaseDriver(link)
    with pytest.raises(RuntimeError):
        leg.read()
    port.write(encode("E", 400, 0, 110.0))           # what the MCU would send
    r = leg.read()
    assert (r.ticks, r.home_pressed, r.rpm) == (400, False, 110.0)
    leg.command_rpm(-59.5)                            # loops back: host lines are not readings
    base.command_twist(0.2, -0.6)
    SerialHeadDriver(link).command_head(0.1, -0.2, 0.3)
    SerialAudioDriver(link).command_audio(40.0, 1.0)
    assert leg.read().ticks == 400 and link.unexpected == 4


def test_drivers_on_a_pty():
    master, slave = os.openpty()
    port = serial.Serial(os.ttyname(slave), timeout=0.05)
    try:
        link = SerialLink(port)
        SerialLegDriver(link).command_rpm(126.5)
        got = LineParser().feed(os.read(master, 100))
        assert got[0].kind == "M" and got[0].fields == (126.5,)
        os.write(master, encode("E", -3, 1, 0.0))
        import time
        for _ in range(100):                          # wait for the kernel to pass the bytes (no timing assert)
            if port.in_waiting:
                break
            time.sleep(0.001)
        r = SerialLegDriver(link).read()
        assert (r.ticks, r.home_pressed) == (-3, True)
    finally:
        port.close()
        os.close(master)
        os.close(slave)
