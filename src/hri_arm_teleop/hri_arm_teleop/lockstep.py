"""Build the teleop chain on a simulated arm and run it in lockstep with simulated time.

``build_sim_pipeline(cfg)`` -> (pipeline, robot, clock): the FR3 (or any wired arm) in MuJoCo,
the configured IK on its own model copy, and the safety hooks. ``LockstepDriver`` advances:
one base tick of the loop, then ``base_period_s`` of physics; the clock *is* the simulator's time.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional

import numpy as np

from hri_arm_teleop.core.ik import IKParams, make_ik
from hri_arm_teleop.core.pipeline import ArmTeleopPipeline
from hri_arm_teleop.core.safety import SafetyGate
from hri_arm_teleop.robot_mujoco import MujocoRobot, start_position


class SimClock:
    """The simulator's time as the injected clock."""

    def __init__(self, sim):
        self.sim = sim

    def __call__(self) -> float:
        return self.sim.time_s

    def now(self) -> float:
        return self.sim.time_s


def build_pipeline(cfg: dict, robot, clock, logger: Optional[logging.Logger] = None,
                   q_min=None, q_max=None) -> ArmTeleopPipeline:
    """The joint-output chain (IK on its own model copy, safety hooks) around any RobotInterface."""
    from hri_runtime.config import arm_limits
    from hri_sim.models import load_arm

    lim = arm_limits(cfg)
    ik_params = IKParams.from_config(cfg["teleop"]["ik"])
    q0 = start_position(cfg)
    ik_model = load_arm(cfg["robot"]["model"], actuation="position")
    ik = make_ik(ik_params, ik_model, cfg["joints"]["names"],
                 lim.q_min if q_min is None else q_min, lim.q_max if q_max is None else q_max, q0,
                 kinematics_ik=cfg["kinematics"]["ik"])
    loop = cfg["teleop"]["loop"]
    gate = SafetyGate(cfg, ik.fk, loop["controller_decimation"] / loop["base_rate_hz"])
    return ArmTeleopPipeline(cfg, robot, ik, clock, safety=gate, logger=logger, output="joint")


def build_sim_pipeline(cfg: dict, logger: Optional[logging.Logger] = None):
    """The joint output (IK -> joint impedance on the MuJoCo arm); the cartesian stack is
    ``hri_arm_teleop.stack.build_stack``."""
    loop = cfg["teleop"]["loop"]
    controller_period = loop["controller_decimation"] / loop["base_rate_hz"]
    robot = MujocoRobot.from_config(cfg, interpolation_s=controller_period)
    clock = SimClock(robot.sim)
    return build_pipeline(cfg, robot, clock, logger), robot, clock


class LockstepDriver:
    def __init__(self, pipeline: ArmTeleopPipeline, robot: MujocoRobot):
        self.pipe = pipeline
        self.robot = robot
        self.period_s = pipeline.loop.base_period_s

    def step(self) -> None:
        self.pipe.tick()
        self.robot.sim.advance(self.period_s)

    def run_until(self, t_end: float, before_tick: Optional[Callable[[float], None]] = None) -> None:
        while self.robot.sim.time_s < t_end - 1e-9:
            if before_tick is not None:
                before_tick(self.robot.sim.time_s)
            self.step()


def tracking_metrics(trace, q_min, q_max, engaged_only: bool = True) -> dict:
    """RMS / max EE position error against the commanded target while tracking (and engaged),
    and the smallest joint-limit margin over the whole run."""
    a = trace.arrays()
    mask = a["mode"] > 0.5
    if engaged_only:
        mask &= a["engaged"] > 0.5
    err = np.linalg.norm(a["ee_p"][mask] - a["target_p"][mask], axis=1) if mask.any() else np.zeros(0)
    q = a["q"]
    margin = float(min(np.min(q - q_min), np.min(q_max - q))) if len(q) else float("nan")
    lat = a["latency_s"]
    return {
        "samples": int(mask.sum()),
        "rms_error_m": float(np.sqrt(np.mean(err ** 2))) if err.size else float("nan"),
        "max_error_m": float(err.max()) if err.size else float("nan"),
        "joint_limit_margin_rad": margin,
        "latency_p50_s": float(np.percentile(lat, 50)) if lat.size else float("nan"),
        "latency_p99_s": float(np.percentile(lat, 99)) if lat.size else float("nan"),
    }


def path_error_to_polyline(points: np.ndarray, polyline: np.ndarray) -> np.ndarray:
    """Distance of each point (N, 3) to a 3-D polyline (M, 3) (cross-track error)."""
    d = np.full(len(points), np.inf)
    for a, b in zip(polyline[:-1], polyline[1:]):
        ab = b - a
        s = np.clip(((points - a) @ ab) / max(ab @ ab, 1e-300), 0.0, 1.0)
        d = np.minimum(d, np.linalg.norm(points - (a + s[:, None] * ab), axis=1))
    return d
