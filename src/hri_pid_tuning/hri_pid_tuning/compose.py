"""The live path in one process: the real nodes of a lab's setup – the stop supervisor, the robot
node (``joint_robot``, MuJoCo) and the tuning node (``live: true``) – composed on the runtime's
in-process context and stepped by its lockstep runner (:class:`hri_runtime.lockstep.Lockstep`, one
step per robot control period), in simulated time, without the network. ``hri tune``,
``bench/pid`` and the live tests run this."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

#: simulated seconds a job or a request may take before the run gives up
TIMEOUT_S = 1e7


@dataclass
class LiveStack:
    """The composed nodes and their lockstep runner (``ctx``: its in-process context)."""

    cfg: dict
    lockstep: Any          # hri_runtime.lockstep.Lockstep
    robot: Any             # hri_sim.nodes.joint_robot_node.JointRobotNode
    tuner: Any             # hri_pid_tuning.nodes.tuning_node.PidTuningNode

    @property
    def ctx(self):
        return self.lockstep.context

    def run_until(self, predicate: Callable[[], bool], timeout_s: float = TIMEOUT_S) -> bool:
        """Step the stack until ``predicate()`` holds (a response, a job's end); returns it."""
        return self.lockstep.step_until(predicate, timeout_s)

    def run_job(self, name: str, fn: Callable[[], Any]) -> Any:
        """``fn()`` as the tuning node's live job, the stack stepped until it ends; returns its
        result, its exception propagates."""
        done: dict = {}
        self.tuner.run_job(name, fn, lambda r, e: done.update(result=r, exc=e))
        self.run_until(lambda: "result" in done)
        if done.get("exc") is not None:
            raise done["exc"]
        return done["result"]

    def close(self) -> None:
        self.lockstep.close()


def compose(robot: str, setup: str | None, overrides: Sequence[str] | None = None,
            parameters: Mapping[str, Any] | None = None) -> LiveStack:
    """The nodes of a lab's setup on one in-process context with its lockstep runner, all on the
    configuration of ``robot`` with ``overrides``; ``parameters``: more of the tuning node's."""
    from hri_runtime.inproc import InprocContext
    from hri_runtime.lockstep import Lockstep
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode
    from hri_sim.nodes.joint_robot_node import JointRobotNode
    from hri_sim.pid_plants_mujoco import ARM_ROBOT, load_pid_config

    from .nodes.tuning_node import PidTuningNode
    from .parameters_gen import PidTuningParams

    cfg = load_pid_config(robot, overrides=overrides)
    setups = PidTuningParams.from_tree(cfg).setups
    if robot == ARM_ROBOT and setup not in setups:
        raise ValueError(f"unknown setup {setup!r}; known: {sorted(setups)}")
    ctx = InprocContext()
    StopSupervisorNode(cfg=cfg, context=ctx)           # the stack's stop authority (the robot holds without it)
    rn = JointRobotNode(robot=robot, setup=setup, cfg=cfg, context=ctx)
    tn = PidTuningNode(context=ctx, cfg=cfg,
                       parameters={"pid_tuning.node.robot": robot, "pid_tuning.node.setup": setup or "",
                                   "pid_tuning.node.live": True, **(parameters or {})})
    return LiveStack(cfg, Lockstep(rn.plant.dt_s, context=ctx), rn, tn)


def run_live(robot: str, setup: str | None, job: Callable[[Any], Any], overrides: Sequence[str] | None = None,
             name: str = "tuning") -> Any:
    """Run ``job(session)`` on the composed live stack (:func:`compose`); returns the job's
    result, its exception propagates."""
    stack = compose(robot, setup, overrides)
    try:
        return stack.run_job(name, lambda: job(stack.tuner.session))
    finally:
        stack.close()
