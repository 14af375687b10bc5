"""MCAP of an atomic run (ROS 2 messages, CDR, ``ros2msg`` schemas; Foxglove / PlotJuggler read it).

Topics (names from ``atomic.topics``; the node publishes the same ones, so a recording of a live
run plots the same way):

* ``leg_state``  sensor_msgs/JointState  name [leg], position [ticks], velocity [measured motor RPM]
* ``leg_rpm``    std_msgs/Float64        commanded motor RPM (after the asymmetry scaling)
* ``cmd_vel``    geometry_msgs/Twist     base twist
* ``atomic_state`` std_msgs/String       JSON ``{"state": s, "locked": b, "fault": f}``

Uses ``hri_runtime.recording`` when the runtime provides it; otherwise ``mcap`` + ``rosbags``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

import numpy as np

TYPES = {"leg_state": "sensor_msgs/msg/JointState", "leg_rpm": "std_msgs/msg/Float64",
         "cmd_vel": "geometry_msgs/msg/Twist", "atomic_state": "std_msgs/msg/String"}


def _store():
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_HUMBLE)


def write_mcap(path: str | Path, tl: Mapping[str, np.ndarray], topics: Mapping[str, str],
               decimate: int = 1) -> Path:
    """Write a timeline (``hri_atomic_motion.lockstep.Timeline.array()``) as MCAP."""
    from mcap.writer import Writer

    ts = _store()
    T = ts.types
    Time, Header = T["builtin_interfaces/msg/Time"], T["std_msgs/msg/Header"]
    JointState, Float64, String = T["sensor_msgs/msg/JointState"], T["std_msgs/msg/Float64"], T["std_msgs/msg/String"]
    Twist, Vector3 = T["geometry_msgs/msg/Twist"], T["geometry_msgs/msg/Vector3"]
    path = Path(path)
    with open(path, "wb") as fh:
        w = Writer(fh)
        w.start(profile="ros2", library="hri_atomic_motion")
        ch = {}
        for key, typename in TYPES.items():
            text, _ = ts.generate_msgdef(typename)
            sid = w.register_schema(name=typename, encoding="ros2msg", data=text.encode())
            ch[key] = (w.register_channel(topic=topics[key], message_encoding="cdr", schema_id=sid), typename)

        def put(key, t, msg):
            cid, typename = ch[key]
            ns = int(round(t * 1e9))
            w.add_message(channel_id=cid, log_time=ns, publish_time=ns, data=bytes(ts.serialize_cdr(msg, typename)))

        last = None
        for i in range(0, len(tl["t_s"]), decimate):
            t = float(tl["t_s"][i])
            sec = int(np.floor(t))
            stamp = Time(sec=sec, nanosec=int(round((t - sec) * 1e9)) % 1_000_000_000)
            put("leg_state", t, JointState(header=Header(stamp=stamp, frame_id=""), name=["leg"],
                                           position=np.array([tl["ticks"][i]], dtype=np.float64),
                                           velocity=np.array([tl["rpm_meas"][i]], dtype=np.float64),
                                           effort=np.zeros(0)))
            put("leg_rpm", t, Float64(data=float(tl["rpm_cmd"][i])))
            put("cmd_vel", t, Twist(linear=Vector3(x=float(tl["linear_m_s"][i]), y=0.0, z=0.0),
                                    angular=Vector3(x=0.0, y=0.0, z=float(tl["angular_rad_s"][i]))))
            st = (int(tl["state"][i]), bool(tl["locked"][i]), bool(tl["fault"][i]))
            if st != last:
                put("atomic_state", t, String(data=json.dumps({"state": st[0], "locked": st[1], "fault": st[2]})))
                last = st
        w.finish()
    return path


def read_mcap(path: str | Path, topics: Mapping[str, str]) -> dict[str, np.ndarray]:
    """Series for the plot: ``{name: (t, values)}`` per quantity."""
    from mcap.reader import make_reader

    ts = _store()
    by_topic = {v: k for k, v in topics.items() if k in TYPES}
    series: dict[str, list] = {k: [] for k in ("state", "ticks", "rpm_meas", "rpm_cmd", "linear_m_s", "angular_rad_s")}
    with open(path, "rb") as fh:
        for schema, channel, message in make_reader(fh).iter_messages():
            key = by_topic.get(channel.topic)
            if key is None:
                continue
            msg = ts.deserialize_cdr(message.data, TYPES[key])
            t = message.log_time * 1e-9
            if key == "leg_state":
                series["ticks"].append((t, float(msg.position[0])))
                if len(msg.velocity):
                    series["rpm_meas"].append((t, float(msg.velocity[0])))
            elif key == "leg_rpm":
                series["rpm_cmd"].append((t, msg.data))
            elif key == "cmd_vel":
                series["linear_m_s"].append((t, msg.linear.x))
                series["angular_rad_s"].append((t, msg.angular.z))
            else:
                try:
                    series["state"].append((t, float(json.loads(msg.data)["state"])))
                except (ValueError, KeyError, TypeError):
                    pass
    return {k: np.array(v, dtype=float).reshape(-1, 2) for k, v in series.items()}
