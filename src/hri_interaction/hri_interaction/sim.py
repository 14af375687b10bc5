"""The interaction controller on the simulated arm, one tick per physics step, driven by the one
lockstep runner (``hri_runtime.lockstep.Lockstep``): :class:`LockstepLoop`.

The arm is ``hri_sim.arm_sim.ArmSim`` in mode torque (the C++ ``hri_core.rt.MujocoRobot``:
``hri_sim.models.load_arm(robot, actuation="torque")``, a flange F/T sensor pair where its
``sim.model.ft_sensor`` says so, physics step = 1 / ``interaction.rate_hz``); the wrench the
controller sees is the scripted push in the EE frame (an ideal, tared wrist F/T sensor).
"""
from __future__ import annotations

from typing import Optional, Sequence

from hri_interaction.core.controller import InteractionController, InteractionParams
from hri_sim.arm_sim import ArmSim


class LockstepLoop:
    """One controller tick per physics step on the one lockstep runner (``hri_runtime.lockstep``:
    ``self.lockstep``, its ``SimClock`` ``self.clock``): the tick is its every-step task, the arm
    step is part of it (the command of the tick is what the arm applies). ``wrench_source``:
    ``"applied"`` feeds the sim's applied wrench to the controller each tick (an ideal tared F/T
    sensor); anything else leaves ``ctrl.set_wrench`` to the caller. ``step_arm`` False: the arm
    is only the robot model at the state the caller sets (``sim.set_joint_state``). ``ctrl``: the controller
    (default the engine, ``InteractionController``, with ``law`` (None: ``interaction.law``), ``safety`` and the per-joint
    clamp ``torque_max_nm``)."""

    def __init__(self, params: InteractionParams, q0_rad, ee_site="attachment_site", law=None,
                 wrench_source: str = "applied", safety=None, *, robot: str = "fr3",
                 joint_names: Optional[Sequence[str]] = None, ctrl=None, logger=None,
                 step_arm: bool = True, torque_max_nm=None):
        from hri_runtime.lockstep import Lockstep

        self.sim = ArmSim.of_robot(robot, q0_rad, "torque", joint_names=joint_names,
                                   timestep_s=1.0 / params.rate_hz, ee_site=ee_site)
        self.dt = 1.0 / params.rate_hz
        self.ctrl = ctrl if ctrl is not None else InteractionController(
            params, self.sim.ee_pose(), self.sim.n, law=law, logger=logger, safety=safety,
            torque_max_nm=torque_max_nm)
        self.wrench_source = wrench_source
        self.step_arm = step_arm          # False: the arm is a model at a measured state (topic driver)
        self.last = None
        self._each = None
        self.lockstep = Lockstep(self.dt)
        self.clock = self.lockstep.clock
        self.lockstep.every(self._task)

    def tick(self):
        """Read the arm, one controller tick, the arm applies its torque for one step."""
        st = self.sim.state()
        if self.wrench_source == "applied":
            self.ctrl.set_wrench(st.wrench_body)
        res = self.ctrl.tick(st, self.dt)
        if self.step_arm:
            self.sim.step(res.tau)
        self.last = res
        return res

    def _task(self, _t: float) -> None:
        res = self.tick()
        if self._each is not None:
            self._each(self, res)

    def run(self, seconds: float, each=None) -> int:
        """``round(seconds / dt)`` lockstep steps; ``each(loop, result)`` after every tick."""
        self._each = each
        try:
            return self.lockstep.run_for(seconds)
        finally:
            self._each = None
