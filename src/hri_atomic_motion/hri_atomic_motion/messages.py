"""The atomic node's messages: ``hri_interfaces/msg/AtomicState`` from the controller's status,
the leg state (``sensor_msgs/JointState``: ``leg`` position = ticks, velocity = RPM;
``leg_home_switch`` position = 0/1) out, and the same message in as a checked
:class:`hri_atomic_motion.core.LegReading` (docs/interfaces.md "Atomic motion")."""
from __future__ import annotations

from typing import Optional

import numpy as np

from hri_runtime import msgs
from hri_runtime.geometry import time_from_seconds

from hri_atomic_motion.core import LegReading

STATE_MSG = "hri_interfaces/msg/AtomicState"


def atomic_state_msg(t_s: float, st: dict, system_stop: str = ""):
    """``hri_interfaces/msg/AtomicState`` of ``AtomicController.status()`` at time ``t_s``;
    ``system_stop``: the reason of the system stop the node obeys ("" = none)."""
    return msgs.new(STATE_MSG, stamp=time_from_seconds(t_s), state=int(st["state"]),
                    direction=int(st.get("direction", 0)),
                    locked=bool(st["locked"]), fault=st["fault"] or "", system_stop=system_stop,
                    leg_phase=str(st.get("leg_phase", "")),
                    base_phase=str(st.get("base_phase", "")), queue=int(st.get("queue", 0)))


def leg_state_msg(t_s: float, ticks: int, home: bool, rpm: float):
    return msgs.new("sensor_msgs/msg/JointState",
                    header=msgs.new("std_msgs/msg/Header", stamp=time_from_seconds(t_s), frame_id=""),
                    name=["leg", "leg_home_switch"], position=np.array([float(ticks), 1.0 if home else 0.0]),
                    velocity=np.array([float(rpm), 0.0]), effort=np.zeros(0))


def parse_leg_state(msg) -> Optional[LegReading]:
    """JointState -> LegReading, None when malformed (names missing, non-finite, non-integer ticks)."""
    try:
        names = list(msg.name)
        pos = [float(v) for v in msg.position]
        i = names.index("leg")
        ticks = pos[i]
        home = pos[names.index("leg_home_switch")] > 0.5
        vel = [float(v) for v in msg.velocity]
        rpm = vel[i] if len(vel) > i else 0.0
    except (ValueError, IndexError, TypeError, AttributeError):
        return None
    if not (abs(ticks) < 1e9 and ticks == round(ticks)):
        return None
    return LegReading(int(ticks), home, rpm if rpm == rpm else 0.0)
