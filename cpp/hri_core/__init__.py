"""hri_core: the compiled C++17 core (Eigen + pybind11) of hri_teleop: maths, kinematics,
safety and control. It imports no other workspace package (parameters come in as values).

Submodules
----------
se3         SE(3)/SO(3) Lie-group toolkit, twist order (w, v), single and batch forms.
kinematics  product-of-exponentials model (FK, space/body Jacobians, DLS IK).
safety      SafetyChecker / SafetyLimits (limits given as values: the config's in the callers).
rt          the 1 kHz real-time loop (read -> InteractionTick -> write on a C++ thread, MuJoCo
            robot through the C API; docs/realtime.md).
"""
from . import _hri_core  # noqa: F401  (compiled extension)
from . import kinematics, safety, se3  # noqa: F401  (rt: ``from hri_core import rt``)

__all__ = ["se3", "kinematics", "safety"]
