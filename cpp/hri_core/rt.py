"""The 1 kHz real-time loop of hri_interaction (C++: cpp/include/hri_core/rt.hpp; docs/realtime.md).

``RtLoop(params: TickParams, config: LoopConfig, robot, world_T_d=None, safety=None)`` owns
read → InteractionTick → write on a C++ thread with absolute deadlines (``start()``/``stop()``) or
in lockstep on the caller's thread (``step(n)``); lock-free setters in, ``state()`` snapshot out.
``MujocoRobot(model, data, joint_names, ee_site)`` steps a python-mujoco model through MuJoCo's C
API inside that loop (present when ``HAS_MUJOCO``); from Python its ``read()`` gives a
``RobotState``, ``write(tau)`` steps it (``hri_sim.arm_sim.ArmSim``, mode torque).
``mj_step(model, data, nstep=1)`` is ``mujoco.mj_step`` holding the GIL (present when
``HAS_MUJOCO``): the Python simulators step with it, so a busy middleware thread in their process
does not make every physics step wait for the GIL (docs/realtime.md "Stepping from Python").
"""
from ._hri_core import rt as _rt

TickParams = _rt.TickParams
LoopConfig = _rt.LoopConfig
RobotInterface = _rt.RobotInterface
RobotState = _rt.RobotState
RtLoop = _rt.RtLoop
HAS_MUJOCO = bool(_rt.HAS_MUJOCO)
MujocoRobot = getattr(_rt, "MujocoRobot", None)
mj_step = getattr(_rt, "mj_step", None)

__all__ = ["TickParams", "LoopConfig", "RobotInterface", "RobotState", "RtLoop", "MujocoRobot", "mj_step", "HAS_MUJOCO"]
