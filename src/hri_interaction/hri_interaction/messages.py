"""The interaction node's messages: the measured wrench in, the joint state and the
``hri_interfaces/msg/InteractionState`` out (from an engine's ``state()`` and
:func:`hri_interaction.engine.diagnostics`)."""
from __future__ import annotations

import numpy as np

from hri_runtime import msgs
from hri_runtime.geometry import time_from_seconds

STATE_MSG = "hri_interfaces/msg/InteractionState"


def wrench_from_msg(msg) -> np.ndarray:
    """(moment, force) – the twist order (ω, v) – from a WrenchStamped."""
    f, m = msg.wrench.force, msg.wrench.torque
    return np.array([m.x, m.y, m.z, f.x, f.y, f.z], dtype=float)


def joint_state_msg(now_s: float, frame_id: str, names, s: dict):
    """sensor_msgs/JointState of an engine ``state()`` snapshot (q, q̇, τ) at ``now_s``."""
    return msgs.cls("sensor_msgs/msg/JointState")(
        header=msgs.cls("std_msgs/msg/Header")(stamp=time_from_seconds(now_s), frame_id=frame_id), name=list(names),
        position=np.array(s["q"], float), velocity=np.array(s["dq"], float), effort=np.array(s["tau"], float))


def torque_msg(tau):
    """std_msgs/Float64MultiArray of the joint torques (N·m), an empty layout."""
    return msgs.cls("std_msgs/msg/Float64MultiArray")(
        layout=msgs.cls("std_msgs/msg/MultiArrayLayout")(dim=[], data_offset=0), data=np.array(tau, float))


def _counts(d: dict) -> list:
    count = msgs.cls("hri_interfaces/msg/Count")
    return [count(name=str(k), count=int(v)) for k, v in sorted((d or {}).items())]


def interaction_state_msg(diag: dict, stamp):
    """``hri_interfaces/msg/InteractionState`` of the controller's ``diagnostics()`` plus the node's
    ``reference_stale``, ``ticks``, ``driver`` and ``period_us`` (NaN when not measured)."""
    nan = float("nan")
    per = diag.get("period_us") or {}
    return msgs.cls(STATE_MSG)(
        stamp=stamp, mode=str(diag.get("mode", "")), time_s=float(diag.get("time_s", nan)),
        frozen=str(diag.get("frozen") or ""), flags=[str(f) for f in diag.get("flags", [])],
        energy_j=float(diag.get("energy_j", nan)), energy_violations=int(diag.get("energy_violations", 0)),
        pc_saturations=int(diag.get("pc_saturations", 0)),
        admittance_lambda=np.array(diag.get("lambda", ()), float),
        stiffness_diag=np.array(diag.get("stiffness_diag", ()), float),
        reference_stale=bool(diag.get("reference_stale", False)), ticks=int(diag.get("ticks", 0)),
        driver=str(diag.get("driver", "")), rejected=_counts(diag.get("rejected")), events=_counts(diag.get("events")),
        period_p50_us=float(per.get("p50", nan)), period_p99_us=float(per.get("p99", nan)),
        period_max_us=float(per.get("max", nan)), period_missed=int(per.get("missed", 0)))
