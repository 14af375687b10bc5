"""The VR controller pose packet, version 1 (Unity -> robot, UDP; docs/protocols.md "Arm teleop").

56 bytes, little-endian, ``struct '<4sBBHid3f4fff'``:

| offset | size | type    | field        | meaning |
|-------:|-----:|---------|--------------|---------|
| 0      | 4    | char[4] | magic        | ``b"HRAC"`` (HRI Arm Controller) |
| 4      | 1    | u8      | version      | 1 |
| 5      | 1    | u8      | flags        | bit0 clutch held, bit1 tracking valid, bit2 right hand; bits 3-7 zero |
| 6      | 2    | u16     | buttons      | bit0 primary (A/X), bit1 secondary (B/Y), bit2 stick click, bit3 menu, bit4 trigger pressed, bit5 grip pressed; bits 6-15 zero |
| 8      | 4    | i32     | sequence     | 0 .. 2^31-1, +1 per packet, wraps to 0 (as the pulse packet's message_order) |
| 12     | 8    | f64     | stamp_s      | sender clock, seconds (Unity ``Time.realtimeSinceStartupAsDouble``) |
| 20     | 12   | f32[3]  | position     | controller position, m, Unity tracking frame (left-handed, Y up) |
| 32     | 16   | f32[4]  | orientation  | quaternion x, y, z, w, Unity tracking frame |
| 48     | 4    | f32     | trigger      | analog trigger 0..1 |
| 52     | 4    | f32     | grip         | analog grip 0..1 |

Validation (each rejection counted by cause): size, magic, version, reserved bits, sequence < 0,
non-finite numbers, |position| > 10 m, quaternion norm off 1 by more than 1e-2 (a valid one is
renormalised), trigger/grip outside [0, 1].
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from hri_pulse.core.codec import PacketRejected


MAGIC = b"HRAC"
VERSION = 1
FORMAT = struct.Struct("<4sBBHid3f4fff")
SIZE = FORMAT.size  # 56

FLAG_CLUTCH, FLAG_TRACKING_VALID, FLAG_RIGHT_HAND = 0x01, 0x02, 0x04
_FLAG_RESERVED = 0xF8
BUTTON_PRIMARY, BUTTON_SECONDARY, BUTTON_STICK, BUTTON_MENU, BUTTON_TRIGGER, BUTTON_GRIP = (
    1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 4, 1 << 5)
_BUTTON_RESERVED = 0xFFC0
MAX_POSITION_M = 10.0
QUAT_NORM_TOL = 1e-2


@dataclass(frozen=True)
class ControllerPose:
    sequence: int
    stamp_s: float
    position: tuple            # m, Unity frame
    quat_xyzw: tuple           # Unity frame, unit norm
    clutch: bool = False
    tracking_valid: bool = True
    right_hand: bool = True
    buttons: int = 0
    trigger: float = 0.0
    grip: float = 0.0


def encode(p: ControllerPose) -> bytes:
    flags = ((FLAG_CLUTCH if p.clutch else 0) | (FLAG_TRACKING_VALID if p.tracking_valid else 0)
             | (FLAG_RIGHT_HAND if p.right_hand else 0))
    return FORMAT.pack(MAGIC, VERSION, flags, int(p.buttons) & 0xFFFF, int(p.sequence),
                       float(p.stamp_s), *map(float, p.position), *map(float, p.quat_xyzw),
                       float(p.trigger), float(p.grip))


def decode(data: bytes) -> ControllerPose:
    """Bytes -> ``ControllerPose`` or ``PacketRejected`` (never another exception)."""
    if len(data) != SIZE:
        raise PacketRejected("bad_size", f"{len(data)} bytes, expected {SIZE}")
    magic, version, flags, buttons, seq, stamp, px, py, pz, qx, qy, qz, qw, trig, grip = \
        FORMAT.unpack(data)
    if magic != MAGIC:
        raise PacketRejected("bad_magic", repr(magic))
    if version != VERSION:
        raise PacketRejected("bad_version", str(version))
    if flags & _FLAG_RESERVED or buttons & _BUTTON_RESERVED:
        raise PacketRejected("reserved_bits")
    if seq < 0:
        raise PacketRejected("bad_sequence", str(seq))
    values = (stamp, px, py, pz, qx, qy, qz, qw, trig, grip)
    if not all(math.isfinite(v) for v in values):
        raise PacketRejected("non_finite")
    if math.sqrt(px * px + py * py + pz * pz) > MAX_POSITION_M:
        raise PacketRejected("position_out_of_range")
    n = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    if abs(n - 1.0) > QUAT_NORM_TOL:
        raise PacketRejected("bad_quaternion", f"norm {n:.4f}")
    if not (0.0 <= trig <= 1.0 and 0.0 <= grip <= 1.0):
        raise PacketRejected("analog_out_of_range")
    return ControllerPose(seq, stamp, (px, py, pz), (qx / n, qy / n, qz / n, qw / n),
                          bool(flags & FLAG_CLUTCH), bool(flags & FLAG_TRACKING_VALID),
                          bool(flags & FLAG_RIGHT_HAND), buttons, trig, grip)


CAUSES = ("bad_size", "bad_magic", "bad_version", "reserved_bits", "bad_sequence", "non_finite",
          "position_out_of_range", "bad_quaternion", "analog_out_of_range")


class ControllerPoseCodec:
    """``hri_pulse.core.PacketCodec`` of this packet (``decode``/``sequence``/``causes``) for
    ``hri_pulse.core.LinkReceiver``."""

    name = "arm_controller_pose_v1"
    size = SIZE
    causes = CAUSES

    @staticmethod
    def decode(data: bytes) -> ControllerPose:
        return decode(data)

    @staticmethod
    def encode(p: ControllerPose) -> bytes:
        return encode(p)

    @staticmethod
    def sequence(p: ControllerPose) -> int:
        return p.sequence
