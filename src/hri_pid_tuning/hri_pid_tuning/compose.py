"""The live path in one process: the real nodes of a lab's setup composed on the runtime's one
in-process context (:class:`hri_runtime.inproc.InprocContext`), in simulated time, without the
network – what ``hri tune`` and ``bench/pid`` run."""
from __future__ import annotations

from typing import Any, Callable, Sequence


def run_live(robot: str, setup: str | None, job: Callable[[Any], Any], overrides: Sequence[str] | None = None,
             name: str = "tuning") -> Any:
    """Run ``job(session)`` on the live path in one process: the real nodes of a lab's setup – the
    stop supervisor, the robot node (``joint_robot``, MuJoCo) and the tuning node (``live: true``)
    – composed on the runtime's in-process context, in simulated time, without the network.
    Returns the job's result; its exception propagates. ``hri tune`` and ``bench/pid`` use this."""
    from hri_runtime.inproc import InprocContext
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
    JointRobotNode(robot=robot, setup=setup, cfg=cfg, context=ctx)
    tuner = PidTuningNode(context=ctx, cfg=cfg, parameters={"pid_tuning.node.robot": robot,
                                                            "pid_tuning.node.setup": setup or "",
                                                            "pid_tuning.node.live": True})
    done: dict = {}
    tuner.run_job(name, lambda: job(tuner.session), lambda r, e: done.update(result=r, exc=e))
    ctx.spin_until(lambda: "result" in done, timeout_s=1e7)
    if done.get("exc") is not None:
        raise done["exc"]
    return done["result"]
