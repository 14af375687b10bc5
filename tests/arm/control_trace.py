"""The controller ticks of an ``ArmTeleopPipeline`` as arrays, for the tests of the joint chain on
the simulated arm driven as a core object (``hri_arm_teleop.nodes.robots.simulated_arm``): the
pipeline keeps no history, it offers every controller tick to its ``on_control`` hook and the
test keeps them here. The nodes' runs are read back from their recording instead."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Trace:
    """Every controller tick of one pipeline (``Trace.attach(pipe)``; ``ControlSample`` fields,
    one list each; ``latency_s`` only when a new input stamp was commanded)."""
    t: list = field(default_factory=list)
    target_p: list = field(default_factory=list)     # commanded EE position (nan in HOLD)
    ee_p: list = field(default_factory=list)         # measured EE position
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
        for k in ("t", "target_p", "ee_p", "q", "q_des", "mode", "engaged"):
            getattr(self, k).append(getattr(s, k))
        if s.latency_s is not None:
            self.latency_s.append(s.latency_s)

    def arrays(self) -> dict:
        return {k: np.asarray(v, dtype=float) for k, v in self.__dict__.items()}


def tracking_metrics(trace: Trace, q_min, q_max, engaged_only: bool = True) -> dict:
    """RMS / max EE position error against the commanded target while tracking (and engaged),
    and the smallest joint-limit margin over the whole run."""
    a = trace.arrays()
    mask = a["mode"] > 0.5
    if engaged_only:
        mask &= a["engaged"] > 0.5
    err = np.linalg.norm(a["ee_p"][mask] - a["target_p"][mask], axis=1) if mask.any() else np.zeros(0)
    q = a["q"]
    return {
        "samples": int(mask.sum()),
        "rms_error_m": float(np.sqrt(np.mean(err ** 2))) if err.size else float("nan"),
        "max_error_m": float(err.max()) if err.size else float("nan"),
        "joint_limit_margin_rad": float(min(np.min(q - q_min), np.min(q_max - q))) if len(q) else float("nan"),
    }
