"""The tuning node's interfaces: service types per request kind and the status / progress
messages built from the core's plain values."""
from __future__ import annotations

import math
from typing import Any

from hri_runtime import msgs

#: the tuning node's joint-level request/reply (src/hri_interfaces/srv/Tune.srv), also the robot
#: node's ``set_gains``
TUNE_SRV = "hri_interfaces/srv/Tune"
#: a request naming a recorded motion (src/hri_interfaces/srv/TuneMotion.srv)
MOTION_SRV = "hri_interfaces/srv/TuneMotion"
#: request kind of :data:`hri_pid_tuning.core.server.SERVICES` -> service type
SRV_TYPES = {"tune": TUNE_SRV, "motion": MOTION_SRV, "trigger": "std_srvs/srv/Trigger"}
STATUS_MSG = "hri_interfaces/msg/PidTuningStatus"
PROGRESS_MSG = "hri_interfaces/msg/TuningProgress"


def status_msg(status: dict[str, Any], stamp) -> Any:
    """``hri_interfaces/msg/PidTuningStatus`` of ``PidTuningServer.status()``."""
    acked = status.get("acknowledged", {})
    gains = []
    for j, g in status.get("gains", {}).items():
        gains.append(msgs.new("hri_interfaces/msg/JointGains", joint=str(j), kp=float(g.get("kp", math.nan)),
                              ki=float(g.get("ki", math.nan)), kd=float(g.get("kd", math.nan)),
                              acknowledged=acked.get(j) is not None and acked.get(j) == g))
    counts = lambda d: [msgs.new("hri_interfaces/msg/Count", name=str(k), count=int(v)) for k, v in d.items()]  # noqa: E731
    return msgs.new(STATUS_MSG, stamp=stamp, robot=str(status.get("robot", "")), setup=str(status.get("setup", "")),
                    joints=[str(j) for j in status.get("joints", [])], gains=gains,
                    recording=bool(status.get("recording")), motions=[str(m) for m in status.get("motions", [])],
                    rejected=counts(status.get("rejected", {})), served=counts(status.get("served", {})))


def progress_msg(stamp, phase: str, joint: str, fraction: float, detail: str = "") -> Any:
    """``hri_interfaces/msg/TuningProgress`` (fraction clamped to 0..1)."""
    return msgs.new(PROGRESS_MSG, stamp=stamp, phase=phase, joint=joint,
                    fraction=float(min(max(fraction, 0.0), 1.0)), detail=detail)
