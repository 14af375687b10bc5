"""The arm behind the ``arm_teleop`` node and the teleop chain around it, by ``teleop.output``
and ``teleop.robot.interface``:

- ``cartesian``: :class:`InteractionRobot` (the interaction node's arm over topics; on hardware
  its ``teleop.robot.ros2.joint_states_topic``), pose references out;
- ``joint`` + ``mujoco``: :func:`simulated_arm`, the simulated arm
  (:class:`hri_arm_teleop.sim_robot.SimRobot`) stepped by the runtime's lockstep runner, one step
  per tick of the node's base timer; the chain runs on simulated time advanced one period per
  tick, so a late or bunched timer tick in a loaded process never looks like a
  speed/acceleration jump to the planner and the safety checker;
- ``joint`` + ``ros2``: a real robot through ros2_control topics (:class:`Ros2Robot`).
"""
from __future__ import annotations

import logging
from typing import Optional

from hri_arm_teleop.core.ik import IKParams, make_ik
from hri_arm_teleop.core.loop import LoopParams
from hri_arm_teleop.core.pipeline import ArmTeleopPipeline
from hri_arm_teleop.core.safety import SafetyGate
from hri_arm_teleop.parameters_gen import TeleopParams
from hri_runtime.clock import SimClock
from hri_runtime.lockstep import Lockstep
from hri_runtime.parameters_gen import JointsParams, KinematicsIkParams, RobotParams


def build_pipeline(cfg: dict, robot, clock, logger: Optional[logging.Logger] = None,
                   output: Optional[str] = None) -> ArmTeleopPipeline:
    """The teleop chain around any RobotInterface with its safety gate. ``output`` (default
    ``teleop.output``): ``joint`` = the IK on its own model copy, the gate checks targets and
    joint commands (FK); ``cartesian`` = no IK, the gate checks targets (the interaction loop
    gates its torques)."""
    from hri_arm_teleop.sim_robot import start_position
    from hri_core.safety import arm_limits
    from hri_sim.models import load_arm

    output = output or TeleopParams.from_tree(cfg).output
    period = LoopParams.from_tree(cfg).controller_period_s
    if output == "cartesian":
        return ArmTeleopPipeline(cfg, robot, None, clock, safety=SafetyGate(cfg, None, period),
                                 logger=logger, output=output)
    lim = arm_limits(cfg)
    ik_model = load_arm(RobotParams.from_tree(cfg).model, actuation="position")
    ik = make_ik(IKParams.from_tree(cfg), ik_model, JointsParams.from_tree(cfg).names, lim.q_min, lim.q_max,
                 start_position(cfg), kinematics_ik=KinematicsIkParams.from_tree(cfg))
    return ArmTeleopPipeline(cfg, robot, ik, clock, safety=SafetyGate(cfg, ik.fk, period), logger=logger,
                             output=output)


def simulated_arm(cfg: dict, start_time_s: float = 0.0, logger: Optional[logging.Logger] = None):
    """``(robot, pipeline, lockstep)``: the joint output (IK -> joint impedance) on the MuJoCo arm
    at its start position, on a ``SimClock`` from ``start_time_s``, and the runtime's lockstep
    runner that advances it: per step (``lockstep.step(before)``) one base tick of the chain,
    then ``base_period_s`` of physics and of the clock."""
    from hri_arm_teleop.sim_robot import SimRobot

    robot = SimRobot.from_config(cfg)
    clock = SimClock(start_time_s)
    pipe = build_pipeline(cfg, robot, clock, logger, output="joint")
    ls = Lockstep(pipe.loop.base_period_s, clock, sim_step=robot.sim.advance)
    ls.every(lambda _t: pipe.tick())
    return robot, pipe, ls


def connect_robot(node, cfg: dict, clock, log):
    """``(robot, pipeline, lockstep)``: ``lockstep`` is the simulated arm's lockstep run, else None."""
    t = TeleopParams.from_tree(cfg)
    if t.output == "cartesian":
        from hri_arm_teleop.nodes.interaction_robot import InteractionRobot

        js = None if t.robot.interface == "mujoco" else t.robot.ros2.joint_states_topic
        robot = InteractionRobot(node, cfg, joint_states_topic=js)
        return robot, build_pipeline(cfg, robot, clock, log, output="cartesian"), None
    if t.robot.interface == "mujoco":
        return simulated_arm(cfg, clock(), log)
    from hri_arm_teleop.nodes.ros2_robot import Ros2Robot

    robot = Ros2Robot(node, list(JointsParams.from_tree(cfg).names), t.robot.ros2)
    pipe = build_pipeline(cfg, robot, clock, log, output="joint")
    robot.fk = pipe.controller.ik.fk
    return robot, pipe, None
