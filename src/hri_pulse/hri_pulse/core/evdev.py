"""Linux evdev gamepad events -> ``sensor_msgs/Joy`` arrays, as the ROS 2 ``joy`` node reports them.

Pure: bytes in (the kernel's ``struct input_event`` records, as read from ``/dev/input/eventN``,
or from a pipe or file holding the same records), Joy ``axes`` / ``buttons`` out. No I/O, no clock.

Record (linux/input.h, 64-bit): ``struct timeval`` (two longs), ``__u16 type``, ``__u16 code``,
``__s32 value`` -- 24 bytes, native byte order (``INPUT_EVENT``). Event types and codes are the
kernel's (linux/input-event-codes.h; only those a gamepad mapping names are listed here).

Mapping (config ``pulse.gamepad``): ``evdev_buttons`` lists the key codes in Joy button order,
``evdev_axes`` the absolute axes in Joy axis order (defaults: the Xbox pad under Linux's xpad
driver, the order the ``joy`` node gives it: buttons A B X Y LB RB Back Start Guide LS RS, axes
LX LY LT RX RY RT DpadX DpadY). Axis value -> Joy as the ``joy`` node does: the raw range
[min, max] (the device's, else ``evdev_axis_min``/``evdev_axis_max``) maps to [+1, -1] (stick up /
left, trigger released and D-pad up / left = +1), then the ``deadzone`` (|v| below it = 0, the rest
rescaled to reach 1). The Joy arrays change only on ``SYN_REPORT`` (one frame of the device);
``SYN_DROPPED`` (the kernel's buffer overran) discards the frame in progress (counted).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Optional

INPUT_EVENT = struct.Struct("@llHHi")     # struct input_event: tv_sec, tv_usec, type, code, value

EV_SYN, EV_KEY, EV_ABS = 0x00, 0x01, 0x03
SYN_REPORT, SYN_DROPPED = 0, 3

#: Key and absolute-axis codes (linux/input-event-codes.h) a gamepad mapping may name.
KEY_CODES = {
    "BTN_SOUTH": 0x130, "BTN_A": 0x130, "BTN_EAST": 0x131, "BTN_B": 0x131, "BTN_C": 0x132,
    "BTN_NORTH": 0x133, "BTN_X": 0x133, "BTN_WEST": 0x134, "BTN_Y": 0x134, "BTN_Z": 0x135,
    "BTN_TL": 0x136, "BTN_TR": 0x137, "BTN_TL2": 0x138, "BTN_TR2": 0x139, "BTN_SELECT": 0x13A,
    "BTN_START": 0x13B, "BTN_MODE": 0x13C, "BTN_THUMBL": 0x13D, "BTN_THUMBR": 0x13E,
    "BTN_DPAD_UP": 0x220, "BTN_DPAD_DOWN": 0x221, "BTN_DPAD_LEFT": 0x222, "BTN_DPAD_RIGHT": 0x223,
}
ABS_CODES = {
    "ABS_X": 0x00, "ABS_Y": 0x01, "ABS_Z": 0x02, "ABS_RX": 0x03, "ABS_RY": 0x04, "ABS_RZ": 0x05,
    "ABS_THROTTLE": 0x06, "ABS_RUDDER": 0x07, "ABS_GAS": 0x09, "ABS_BRAKE": 0x0A,
    "ABS_HAT0X": 0x10, "ABS_HAT0Y": 0x11, "ABS_HAT1X": 0x12, "ABS_HAT1Y": 0x13,
}


def encode(type_: int, code: int, value: int, t_s: float = 0.0) -> bytes:
    """One ``input_event`` record (what the kernel writes; tests and tools feed readers with it)."""
    sec = int(t_s)
    return INPUT_EVENT.pack(sec, int(round((t_s - sec) * 1e6)), type_, code, value)


def key(name: str, pressed: bool, t_s: float = 0.0) -> bytes:
    return encode(EV_KEY, KEY_CODES[name], 1 if pressed else 0, t_s)


def axis(name: str, value: int, t_s: float = 0.0) -> bytes:
    return encode(EV_ABS, ABS_CODES[name], int(value), t_s)


def syn(t_s: float = 0.0) -> bytes:
    return encode(EV_SYN, SYN_REPORT, 0, t_s)


class MappingError(ValueError):
    """A code name the mapping does not know, or a bad range (one line; ``key``, ``value`` and
    ``expected`` as a ConfigError names them)."""

    def __init__(self, key: str, value, expected: str):
        self.key, self.value, self.expected = key, value, expected
        super().__init__(f"{key}: {value!r} – expected {expected}")


@dataclass
class EvdevCounters:
    frames: int = 0              # SYN_REPORTs that changed the Joy arrays
    dropped_frames: int = 0      # SYN_DROPPED: the frame in progress discarded
    unmapped: int = 0            # key / axis events of codes the mapping does not list
    partial_bytes: int = 0       # bytes of an incomplete record left when the stream ended


@dataclass
class EvdevJoy:
    """Decoder: ``feed(bytes)`` -> True when a frame changed ``axes``/``buttons``."""

    button_codes: list
    axis_codes: list
    axis_min: list
    axis_max: list
    deadzone: float
    axes: list = field(default_factory=list)
    buttons: list = field(default_factory=list)
    counters: EvdevCounters = field(default_factory=EvdevCounters)

    @classmethod
    def from_params(cls, g) -> "EvdevJoy":
        """From ``pulse.gamepad`` (``GamepadParams``); MappingError for an unknown code name or a
        bad range."""
        for key, names, table in (("evdev_buttons", g.evdev_buttons, KEY_CODES),
                                  ("evdev_axes", g.evdev_axes, ABS_CODES)):
            bad = [n for n in names if n not in table]
            if bad:
                raise MappingError(f"pulse.gamepad.{key}", bad[0], f"one of {', '.join(sorted(table))}")
        buttons = [KEY_CODES[n] for n in g.evdev_buttons]
        axes = [ABS_CODES[n] for n in g.evdev_axes]
        lo, hi = list(g.evdev_axis_min), list(g.evdev_axis_max)
        if not (len(lo) == len(hi) == len(axes)):
            raise MappingError("pulse.gamepad.evdev_axis_min", lo,
                               f"one value per evdev_axes entry ({len(axes)}) in it and in evdev_axis_max")
        d = cls(buttons, axes, lo, hi, float(g.deadzone))
        for i in range(len(axes)):
            d.set_range(i, lo[i], hi[i])
        d.reset()
        return d

    def __post_init__(self):
        self._pending: dict = {}
        self._buf = b""
        self._button_index = {c: i for i, c in enumerate(self.button_codes)}
        self._axis_index = {c: i for i, c in enumerate(self.axis_codes)}

    def set_range(self, i: int, lo: int, hi: int) -> None:
        """The raw range of axis ``i`` (from the device, EVIOCGABS); MappingError if empty."""
        if not hi > lo:
            raise MappingError(f"pulse.gamepad.evdev_axis_max[{i}]", hi, f"more than evdev_axis_min[{i}] ({lo})")
        self.axis_min[i], self.axis_max[i] = int(lo), int(hi)

    def reset(self) -> None:
        """Every button released, every axis 0 (as the ``joy`` node starts, before a device's
        first event): what a device that vanished leaves behind."""
        self.axes = [0.0] * len(self.axis_codes)
        self.buttons = [0] * len(self.button_codes)
        self._pending = {}

    def _normalise(self, i: int, raw: int) -> float:
        lo, hi = self.axis_min[i], self.axis_max[i]
        v = 2.0 * (min(max(raw, lo), hi) - lo) / (hi - lo) - 1.0      # [-1, 1] in the device's sense
        v = -v                                                           # joy: up / left = +1
        dz = self.deadzone
        if abs(v) < dz:
            return 0.0
        if dz > 0.0:
            v = (abs(v) - dz) / (1.0 - dz) * (1.0 if v > 0 else -1.0)
        return max(-1.0, min(1.0, v))

    def feed(self, data: bytes) -> bool:
        """Decode records; True when at least one frame changed the Joy arrays."""
        self._buf += data
        n = len(self._buf) // INPUT_EVENT.size
        changed = False
        for k in range(n):
            _, _, type_, code, value = INPUT_EVENT.unpack_from(self._buf, k * INPUT_EVENT.size)
            changed |= self._event(type_, code, value)
        self._buf = self._buf[n * INPUT_EVENT.size:]
        return changed

    def end_of_stream(self) -> None:
        """The stream ended (device gone): an incomplete record is dropped and counted."""
        self.counters.partial_bytes += len(self._buf)
        self._buf = b""

    def _event(self, type_: int, code: int, value: int) -> bool:
        if type_ == EV_KEY:
            if code in self._button_index:
                self._pending[("b", self._button_index[code])] = 1 if value else 0
            else:
                self.counters.unmapped += 1
        elif type_ == EV_ABS:
            if code in self._axis_index:
                self._pending[("a", self._axis_index[code])] = value
            else:
                self.counters.unmapped += 1
        elif type_ == EV_SYN:
            if code == SYN_DROPPED:
                self.counters.dropped_frames += 1
                self._pending = {}
            elif code == SYN_REPORT:
                return self._commit()
        return False

    def _commit(self) -> bool:
        pending, self._pending = self._pending, {}
        before = (list(self.axes), list(self.buttons))
        for (kind, i), v in pending.items():
            if kind == "b":
                self.buttons[i] = v
            else:
                self.axes[i] = self._normalise(i, v)
        if (self.axes, self.buttons) != before:
            self.counters.frames += 1
            return True
        return False


class DeviceRetry:
    """A missing or vanished device is looked for once per ``period_s`` (first at ``start_s``)."""

    def __init__(self, period_s: float, start_s: float = 0.0):
        self.period_s = float(period_s)
        self._next_s = float(start_s)

    def due(self, now_s: float) -> bool:
        if now_s < self._next_s:
            return False
        self._next_s = now_s + self.period_s
        return True


def absinfo_range(fd: int, code: int) -> Optional[tuple[int, int]]:
    """(min, max) of an absolute axis of an evdev device (ioctl EVIOCGABS); None when the file is
    not an input device (a pipe or a plain file of records) or has no such axis."""
    import fcntl

    size = struct.calcsize("6i")                    # struct input_absinfo
    req = (2 << 30) | (size << 16) | (ord("E") << 8) | (0x40 + code)    # _IOR('E', 0x40 + abs, absinfo)
    try:
        buf = fcntl.ioctl(fd, req, bytes(size))
    except OSError:
        return None
    _, lo, hi, *_ = struct.unpack("6i", buf)
    return (lo, hi) if hi > lo else None


def device_name(fd: int) -> Optional[str]:
    """The device's name (ioctl EVIOCGNAME); None for a pipe or a plain file."""
    import fcntl

    size = 256
    req = (2 << 30) | (size << 16) | (ord("E") << 8) | 0x06
    try:
        buf = fcntl.ioctl(fd, req, bytes(size))
    except OSError:
        return None
    return buf.split(b"\0", 1)[0].decode(errors="replace")


def find_device(name_part: str, sys_input: str = "/sys/class/input") -> Optional[str]:
    """``/dev/input/eventN`` of the first device whose name contains ``name_part`` (case
    insensitive), from sysfs (no device is opened); None if none."""
    from pathlib import Path

    try:
        entries = sorted(Path(sys_input).glob("event*"), key=lambda p: int(p.name[5:] or 0))
    except OSError:
        return None
    for e in entries:
        try:
            name = (e / "device" / "name").read_text(errors="replace").strip()
        except OSError:
            continue
        if name_part.lower() in name.lower():
            return f"/dev/input/{e.name}"
    return None
