"""Write the teleop trace as an MCAP of ROS 2 messages (CDR, ``ros2msg`` schemas) for Foxglove /
PlotJuggler: ``/teleop/target_pose`` and ``/ee_pose`` (geometry_msgs/PoseStamped),
``/joint_states`` (sensor_msgs/JointState, measured), ``/joint_command`` (sensor_msgs/JointState,
q_des) and ``/teleop/mode`` (std_msgs/String). Uses ``hri_runtime.recording`` when the runtime
provides it; otherwise writes the file directly with ``mcap`` + the ``rosbags`` type store."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def write_mcap(path: Path, trace, cfg: dict) -> Path:
    from mcap.writer import Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    T = ts.types
    Time = T["builtin_interfaces/msg/Time"]
    Header = T["std_msgs/msg/Header"]
    Pose, PoseStamped = T["geometry_msgs/msg/Pose"], T["geometry_msgs/msg/PoseStamped"]
    Point, Quat = T["geometry_msgs/msg/Point"], T["geometry_msgs/msg/Quaternion"]
    JointState, String = T["sensor_msgs/msg/JointState"], T["std_msgs/msg/String"]
    base = cfg["frames"]["base"]
    names = list(cfg["joints"]["names"])
    a = trace.arrays()

    def stamp(t):
        sec = int(np.floor(t))
        return Time(sec=sec, nanosec=int(round((t - sec) * 1e9)) % 1_000_000_000)

    def pose_msg(t, p):
        return PoseStamped(header=Header(stamp=stamp(t), frame_id=base),
                           pose=Pose(position=Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
                                     orientation=Quat(x=0.0, y=0.0, z=0.0, w=1.0)))

    def js(t, q):
        return JointState(header=Header(stamp=stamp(t), frame_id=""), name=names,
                          position=np.asarray(q, dtype=np.float64), velocity=np.zeros(0),
                          effort=np.zeros(0))

    path = Path(path)
    with open(path, "wb") as fh:
        w = Writer(fh)
        w.start(profile="ros2", library="hri_arm_teleop")
        channels = {}
        for topic, typename in [("/teleop/target_pose", "geometry_msgs/msg/PoseStamped"),
                                ("/ee_pose", "geometry_msgs/msg/PoseStamped"),
                                ("/joint_states", "sensor_msgs/msg/JointState"),
                                ("/joint_command", "sensor_msgs/msg/JointState"),
                                ("/teleop/mode", "std_msgs/msg/String")]:
            text, _ = ts.generate_msgdef(typename)
            sid = w.register_schema(name=typename, encoding="ros2msg", data=text.encode())
            channels[topic] = (w.register_channel(topic=topic, message_encoding="cdr", schema_id=sid),
                               typename)

        def put(topic, t, msg):
            cid, typename = channels[topic]
            ns = int(round(t * 1e9))
            w.add_message(channel_id=cid, log_time=ns, publish_time=ns,
                          data=bytes(ts.serialize_cdr(msg, typename)))

        last_mode = None
        for i, t in enumerate(a["t"]):
            if np.all(np.isfinite(a["target_p"][i])):
                put("/teleop/target_pose", t, pose_msg(t, a["target_p"][i]))
            put("/ee_pose", t, pose_msg(t, a["ee_p"][i]))
            put("/joint_states", t, js(t, a["q"][i]))
            put("/joint_command", t, js(t, a["q_des"][i]))
            mode = "TRACK" if a["mode"][i] > 0.5 else "HOLD"
            if mode != last_mode:
                put("/teleop/mode", t, String(data=mode))
                last_mode = mode
        w.finish()
    return path
