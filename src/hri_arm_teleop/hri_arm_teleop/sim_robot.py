"""The simulated arm behind the teleop ``RobotInterface``: ``hri_sim.arm_sim.ArmSim`` in mode
position (MuJoCo, lockstep with simulated time; its joint controller follows each command,
interpolated over one controller period of the teleop loop)."""
from __future__ import annotations

import numpy as np

from hri_arm_teleop.core.robot import RobotInterface
from hri_arm_teleop.core.types import JointCommand, RobotState
from hri_arm_teleop.parameters_gen import TeleopIkParams, TeleopRobotParams
from hri_runtime.parameters_gen import JointsParams, RobotParams
from hri_sim.arm_sim import ArmSim, ArmSimParams


def start_position(cfg: dict) -> np.ndarray:
    """``teleop.robot.start_q_deg`` when set, else the named ``teleop.robot.start_pose`` [rad]."""
    from hri_runtime.config.tree import named_position

    r = TeleopRobotParams.from_tree(cfg)
    if r.start_q_deg is not None:
        return np.radians(np.asarray(r.start_q_deg, dtype=float))
    return named_position(cfg, r.start_pose)


class SimRobot(RobotInterface):
    """``get_state`` / ``send_command`` on ``self.sim`` (an :class:`ArmSim` in mode position)."""

    def __init__(self, sim: ArmSim):
        self.sim = sim
        self.joint_names = sim.joint_names
        self.commands = 0

    @classmethod
    def from_config(cls, cfg: dict) -> "SimRobot":
        """The configured arm at its start position; a joint command is interpolated over one
        controller period of the teleop loop."""
        from hri_arm_teleop.core.loop import LoopParams

        sim = ArmSim.of_robot(RobotParams.from_tree(cfg).model, start_position(cfg), "position",
                              joint_names=JointsParams.from_tree(cfg).names, params=ArmSimParams.from_tree(cfg),
                              ee_site=TeleopIkParams.from_tree(cfg).ee_site,
                              interpolation_s=LoopParams.from_tree(cfg).controller_period_s)
        return cls(sim)

    def get_state(self) -> RobotState:
        return RobotState(stamp=self.sim.t_s, q=self.sim.q, dq=self.sim.dq, base_T_ee=self.sim.ee_pose())

    def send_command(self, cmd: JointCommand) -> None:
        self.sim.command(np.asarray(cmd.q_des, dtype=float), cmd.dq_des)
        self.commands += 1
