"""Build the teleop chain on a simulated arm and run it in lockstep with simulated time.

``build_sim_pipeline(cfg)`` -> (pipeline, robot, clock): the FR3 (or any wired arm) in MuJoCo,
the configured IK on its own model copy, and the safety hooks, on the runtime's
``SimClock``. ``sim_lockstep(pipeline, robot)`` is the ``hri_runtime.lockstep.Lockstep`` that
advances it: per step one base tick of the loop, then ``base_period_s`` of physics and of the clock.
"""
from __future__ import annotations

import logging
from typing import Optional

import numpy as np

from hri_arm_teleop.core.ik import IKParams, make_ik
from hri_arm_teleop.core.loop import LoopParams
from hri_arm_teleop.core.pipeline import ArmTeleopPipeline
from hri_arm_teleop.core.safety import SafetyGate
from hri_arm_teleop.parameters_gen import TeleopParams
from hri_arm_teleop.sim_robot import SimRobot, start_position
from hri_runtime.clock import SimClock
from hri_runtime.lockstep import Lockstep
from hri_runtime.parameters_gen import JointsParams, KinematicsIkParams, RobotParams


def build_pipeline(cfg: dict, robot, clock, logger: Optional[logging.Logger] = None,
                   output: Optional[str] = None, q_min=None, q_max=None) -> ArmTeleopPipeline:
    """The teleop chain around any RobotInterface with its safety gate. ``output`` (default
    ``teleop.output``): ``joint`` = the IK on its own model copy, the gate checks targets and
    joint commands (FK); ``cartesian`` = no IK, the gate checks targets (the interaction loop
    gates its torques)."""
    from hri_core.safety import arm_limits
    from hri_sim.models import load_arm

    output = output or TeleopParams.from_tree(cfg).output
    period = LoopParams.from_tree(cfg).controller_period_s
    if output == "cartesian":
        return ArmTeleopPipeline(cfg, robot, None, clock, safety=SafetyGate(cfg, None, period),
                                 logger=logger, output=output)
    lim = arm_limits(cfg)
    q0 = start_position(cfg)
    ik_model = load_arm(RobotParams.from_tree(cfg).model, actuation="position")
    ik = make_ik(IKParams.from_tree(cfg), ik_model, JointsParams.from_tree(cfg).names,
                 lim.q_min if q_min is None else q_min, lim.q_max if q_max is None else q_max, q0,
                 kinematics_ik=KinematicsIkParams.from_tree(cfg))
    return ArmTeleopPipeline(cfg, robot, ik, clock, safety=SafetyGate(cfg, ik.fk, period), logger=logger,
                             output=output)


def build_sim_pipeline(cfg: dict, logger: Optional[logging.Logger] = None):
    """The joint output (IK -> joint impedance on the MuJoCo arm) on a ``SimClock`` at the
    simulator's time; the cartesian stack is ``hri_arm_teleop.stack.ArmStack`` (the real nodes)."""
    robot = SimRobot.from_config(cfg)
    clock = SimClock(robot.sim.t_s)
    return build_pipeline(cfg, robot, clock, logger, output="joint"), robot, clock


def sim_lockstep(pipeline: ArmTeleopPipeline, robot: SimRobot) -> Lockstep:
    """The lockstep run of ``build_sim_pipeline``'s pipeline: per base period one loop tick, then
    the physics; ``run_until(t_end, before)`` calls ``before(t)`` first in every step."""
    ls = Lockstep(pipeline.loop.base_period_s, pipeline.clock, sim_step=robot.sim.advance)
    ls.every(lambda t: pipeline.tick())
    return ls


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
