"""The 1 kHz real-time loop of hri_interaction (C++: cpp/include/hri_core/rt.hpp; docs/realtime.md).

``RtLoop(params: TickParams, config: LoopConfig, robot, world_T_d=None, safety=None)`` owns
read → InteractionTick → write on a C++ thread with absolute deadlines (``start()``/``stop()``) or
in lockstep on the caller's thread (``step(n)``); lock-free setters in, ``state()`` snapshot out.
``MujocoRobot(model, data, joint_names, ee_site)`` steps a python-mujoco model through MuJoCo's C
API inside that loop (present when ``HAS_MUJOCO``); from Python its ``read()`` gives a
``RobotState``, ``write(tau)`` steps it (``hri_sim.arm_sim.ArmSim``, mode torque).
"""
from ._hri_core import rt as _rt

TickParams = _rt.TickParams
LoopConfig = _rt.LoopConfig
RobotInterface = _rt.RobotInterface
RobotState = _rt.RobotState
RtLoop = _rt.RtLoop
HAS_MUJOCO = bool(_rt.HAS_MUJOCO)
MujocoRobot = getattr(_rt, "MujocoRobot", None)

__all__ = ["TickParams", "LoopConfig", "RobotInterface", "RobotState", "RtLoop", "MujocoRobot", "HAS_MUJOCO"]
