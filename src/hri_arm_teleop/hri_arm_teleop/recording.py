"""Write the teleop trace as a ROS 2 MCAP with ``hri_runtime.recording.McapWriter`` (the one MCAP
API of the workspace; Foxglove / PlotJuggler / ``ros2 bag`` read it): ``/teleop/target_pose`` and
``/ee_pose`` (geometry_msgs/PoseStamped),
``/joint_states`` (sensor_msgs/JointState, measured), ``/joint_command`` (sensor_msgs/JointState,
q_des) and ``/teleop/mode`` (hri_interfaces/TeleopMode: TRACK, HOLD, SAFETY_HOLD, STOP, REENGAGE, on change)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from hri_runtime import msgs
from hri_runtime.geometry import pose_stamped_from_parts, time_from_seconds
from hri_runtime.recording import McapWriter

from hri_arm_teleop.core.pipeline import MODE_CODES

_MODES = {code: name for name, code in MODE_CODES.items()}


def write_mcap(path: Path, trace, cfg: dict) -> Path:
    base = cfg["frames"]["base"]
    names = list(cfg["joints"]["names"])
    a = trace.arrays()

    def js(t, q):
        return msgs.new("sensor_msgs/msg/JointState",
                        header=msgs.new("std_msgs/msg/Header", stamp=time_from_seconds(t), frame_id=""),
                        name=names, position=np.asarray(q, dtype=np.float64),
                        velocity=np.zeros(0), effort=np.zeros(0))

    path = Path(path)
    with McapWriter(path, library="hri_arm_teleop") as w:
        last_mode = None
        for i, t in enumerate(a["t"]):
            t = float(t)
            if np.all(np.isfinite(a["target_p"][i])):
                w.write("/teleop/target_pose",
                        pose_stamped_from_parts(a["target_p"][i], a["target_quat"][i], t, base), t_s=t)
            if np.all(np.isfinite(a["ee_p"][i])):
                w.write("/ee_pose", pose_stamped_from_parts(a["ee_p"][i], a["ee_quat"][i], t, base), t_s=t)
            w.write("/joint_states", js(t, a["q"][i]), t_s=t)
            w.write("/joint_command", js(t, a["q_des"][i]), t_s=t)
            mode = _MODES.get(float(a["mode"][i]), "HOLD")
            if mode != last_mode:
                w.write("/teleop/mode", msgs.new("hri_interfaces/msg/TeleopMode", mode=mode, stamp=time_from_seconds(t)), t_s=t)
                last_mode = mode
    return path
