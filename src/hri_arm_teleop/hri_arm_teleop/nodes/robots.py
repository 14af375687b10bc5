"""The arm behind the ``arm_teleop`` node and the teleop chain around it, by ``teleop.output``
and ``teleop.robot.interface``:

- ``cartesian``: :class:`InteractionRobot` (the interaction node's arm over topics; on hardware
  its ``teleop.robot.ros2.joint_states_topic``), pose references out;
- ``joint`` + ``mujoco``: the simulated arm (:class:`hri_arm_teleop.sim_robot.SimRobot`) stepped
  in lockstep with the node's base timer; the chain runs on simulated time advanced one period
  per tick, so a late or bunched timer tick in a loaded process never looks like a
  speed/acceleration jump to the planner and the safety checker;
- ``joint`` + ``ros2``: a real robot through ros2_control topics (:class:`Ros2Robot`).
"""
from __future__ import annotations

from hri_arm_teleop.lockstep import build_pipeline, sim_lockstep
from hri_arm_teleop.parameters_gen import TeleopParams
from hri_runtime.clock import SimClock
from hri_runtime.parameters_gen import JointsParams


def connect_robot(node, cfg: dict, clock, log):
    """``(robot, pipeline, lockstep)``: ``lockstep`` is the simulated arm's lockstep run, else None."""
    t = TeleopParams.from_tree(cfg)
    if t.output == "cartesian":
        from hri_arm_teleop.nodes.interaction_robot import InteractionRobot

        js = None if t.robot.interface == "mujoco" else t.robot.ros2.joint_states_topic
        robot = InteractionRobot(node, cfg, joint_states_topic=js)
        return robot, build_pipeline(cfg, robot, clock, log, output="cartesian"), None
    if t.robot.interface == "mujoco":
        from hri_arm_teleop.sim_robot import SimRobot

        robot = SimRobot.from_config(cfg)
        pipe = build_pipeline(cfg, robot, SimClock(clock()), log, output="joint")
        return robot, pipe, sim_lockstep(pipe, robot)
    from hri_arm_teleop.nodes.ros2_robot import Ros2Robot

    robot = Ros2Robot(node, list(JointsParams.from_tree(cfg).names), t.robot.ros2)
    pipe = build_pipeline(cfg, robot, clock, log, output="joint")
    robot.fk = pipe.controller.ik.fk
    return robot, pipe, None
