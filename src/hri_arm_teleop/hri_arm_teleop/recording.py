"""The teleop recording of a demo or a test: ``Trace`` (the arrays of every controller tick, fed by
the pipeline's ``on_control``: the live pipeline keeps no history) and ``write_mcap``.

``write_mcap`` writes the trace as a ROS 2 MCAP with ``hri_runtime.bag.recording.McapWriter`` (the one MCAP
API of the workspace; Foxglove / PlotJuggler / ``ros2 bag`` read it): ``/teleop/target_pose`` and
``/ee_pose`` (geometry_msgs/PoseStamped),
``/joint_states`` (sensor_msgs/JointState, measured), ``/joint_command`` (sensor_msgs/JointState,
q_des) and ``/teleop/mode`` (hri_interfaces/TeleopMode: TRACK, HOLD, SAFETY_HOLD, STOP, REENGAGE, on change)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hri_runtime import msgs
from hri_runtime.geometry import pose_stamped_from_parts, time_from_seconds
from hri_runtime.parameters_gen import FramesParams, JointsParams
from hri_runtime.bag.recording import McapWriter

from hri_arm_teleop.core.pipeline import MODE_CODES

_MODES = {code: name for name, code in MODE_CODES.items()}


@dataclass
class Trace:
    """Every controller tick of one pipeline (``Trace.attach(pipe)``): the demo's / test's own
    recorder (``ControlSample`` fields, one list each; ``latency_s`` only when a new input stamp
    was commanded)."""
    t: list = field(default_factory=list)
    target_p: list = field(default_factory=list)     # commanded EE position (nan in HOLD)
    ee_p: list = field(default_factory=list)         # measured EE position
    target_quat: list = field(default_factory=list)  # commanded EE orientation, x y z w (nan in HOLD)
    ee_quat: list = field(default_factory=list)      # measured EE orientation, x y z w
    q: list = field(default_factory=list)
    q_des: list = field(default_factory=list)
    mode: list = field(default_factory=list)         # MODE_CODES: 1 TRACK, 0 HOLD, -1 SAFETY_HOLD, -2 STOP, -3 REENGAGE
    engaged: list = field(default_factory=list)
    latency_s: list = field(default_factory=list)    # input stamp -> joint command out

    @classmethod
    def attach(cls, pipe) -> "Trace":
        """A new trace recording every controller tick of ``pipe`` from now on."""
        tr = cls()
        pipe.on_control = tr.record
        return tr

    def record(self, s) -> None:
        for k in ("t", "target_p", "ee_p", "target_quat", "ee_quat", "q", "q_des", "mode", "engaged"):
            getattr(self, k).append(getattr(s, k))
        if s.latency_s is not None:
            self.latency_s.append(s.latency_s)

    def arrays(self) -> dict:
        return {k: np.asarray(v, dtype=float) for k, v in self.__dict__.items()}


def write_mcap(path: Path, trace, cfg: dict) -> Path:
    base = FramesParams.from_tree(cfg).base
    names = list(JointsParams.from_tree(cfg).names)
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
