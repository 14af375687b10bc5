"""MCAP of an atomic run (ROS 2 messages, CDR, ``ros2msg`` schemas; Foxglove / PlotJuggler read it).

Topics (names from ``atomic.topics``; the node publishes the same ones, so a recording of a live
run plots the same way):

* ``leg_state``  sensor_msgs/JointState  name [leg], position [ticks], velocity [measured motor RPM]
* ``leg_rpm``    std_msgs/Float64        commanded motor RPM (after the asymmetry scaling)
* ``cmd_vel``    geometry_msgs/Twist     base twist
* ``atomic_state`` hri_interfaces/AtomicState  state, locked, fault (``fault`` when one is latched)

Written and read with ``hri_runtime.bag.recording`` (``McapWriter`` / ``McapReader``), the same format as
``hri record``; ``read_mcap`` therefore also reads a live recording (``hri record`` of a launch).
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np
from hri_runtime import msgs
from hri_runtime.bag.recording import McapReader, McapWriter
from hri_runtime.geometry import time_from_seconds

TYPES = {"leg_state": "sensor_msgs/msg/JointState", "leg_rpm": "std_msgs/msg/Float64",
         "cmd_vel": "geometry_msgs/msg/Twist", "atomic_state": "hri_interfaces/msg/AtomicState"}
SERIES = ("state", "ticks", "rpm_meas", "rpm_cmd", "linear_m_s", "angular_rad_s")


_stamp = time_from_seconds


def write_mcap(path: str | Path, tl: Mapping[str, np.ndarray], topics: Mapping[str, str],
               decimate: int = 1) -> Path:
    """Write a timeline (``hri_atomic_motion.lockstep.Timeline.array()``) as MCAP, every
    ``decimate``-th sample; ``atomic_state`` only when (state, locked, fault) changes."""
    path = Path(path)
    with McapWriter(path, library="hri_atomic_motion") as w:
        for key, typename in TYPES.items():
            w.add_channel(topics[key], typename)
        last = None
        for i in range(0, len(tl["t_s"]), decimate):
            t = float(tl["t_s"][i])
            w.write(topics["leg_state"], msgs.new(
                "sensor_msgs/msg/JointState", header=msgs.new("std_msgs/msg/Header", stamp=_stamp(t)),
                name=["leg"], position=np.array([tl["ticks"][i]], dtype=np.float64),
                velocity=np.array([tl["rpm_meas"][i]], dtype=np.float64), effort=np.zeros(0)), t_s=t)
            w.write(topics["leg_rpm"], msgs.new("std_msgs/msg/Float64", data=float(tl["rpm_cmd"][i])), t_s=t)
            w.write(topics["cmd_vel"], msgs.new(
                "geometry_msgs/msg/Twist", linear=msgs.new("geometry_msgs/msg/Vector3", x=float(tl["linear_m_s"][i])),
                angular=msgs.new("geometry_msgs/msg/Vector3", z=float(tl["angular_rad_s"][i]))), t_s=t)
            st = (int(tl["state"][i]), bool(tl["locked"][i]), bool(tl["fault"][i]))
            if st != last:
                w.write(topics["atomic_state"], msgs.new(
                    TYPES["atomic_state"], stamp=_stamp(t), state=st[0], locked=st[1],
                    fault="fault" if st[2] else ""), t_s=t)
                last = st
    return path


def read_mcap(path: str | Path, topics: Mapping[str, str]) -> dict[str, np.ndarray]:
    """Series for the plot: ``{name: array (n, 2) of (t_s, value)}`` per quantity. Reads our
    demo files and live recordings (``hri record``); a message that does not parse is skipped."""
    by_topic = {(v if v.startswith("/") else "/" + v): k for k, v in topics.items() if k in TYPES}   # as recorded: root-resolved
    series: dict[str, list] = {k: [] for k in SERIES}
    reader = McapReader(path)
    want = [t for t, typ in reader.topics().items() if t in by_topic and msgs.normalize(typ) == TYPES[by_topic[t]]]
    for m in reader.messages(want):
        key, t = by_topic[m.topic], m.t_s
        try:
            msg = m.msg
            if key == "leg_state":
                names = list(msg.name)
                i = names.index("leg") if "leg" in names else 0
                series["ticks"].append((t, float(msg.position[i])))
                if len(msg.velocity) > i:
                    series["rpm_meas"].append((t, float(msg.velocity[i])))
            elif key == "leg_rpm":
                series["rpm_cmd"].append((t, float(msg.data)))
            elif key == "cmd_vel":
                series["linear_m_s"].append((t, float(msg.linear.x)))
                series["angular_rad_s"].append((t, float(msg.angular.z)))
            else:
                series["state"].append((t, float(msg.state)))
        except (ValueError, KeyError, TypeError, IndexError, msgs.DecodeError):
            continue
    return {k: np.array(v, dtype=float).reshape(-1, 2) for k, v in series.items()}
