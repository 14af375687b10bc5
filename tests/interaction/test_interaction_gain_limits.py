"""Impedance gains from any source are checked by one function (SPD + ``interaction.gain_limits``):
the controller (the C++ engine and its Python oracle) refuses non-SPD or out-of-range K/D with a counted cause and
keeps its gains; the config itself is checked at load; the console uses the same check."""
import copy
import sys
from pathlib import Path

import numpy as np
import pytest

import hri_core.se3  # noqa: F401  (required: a missing install fails here)
import mujoco  # noqa: F401  (required: a missing install fails here)

from hri_interaction.core.controller import InteractionParams  # noqa: E402
from hri_interaction.core.spd import GainError  # noqa: E402
from hri_interaction.engine import PythonEngine  # noqa: E402
from hri_runtime.config.tree import load_robot_config  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))   # the oracle package next to this file
from oracle.controller import PyInteractionController  # noqa: E402


@pytest.fixture(scope="module")
def cfg():
    return load_robot_config("fr3")


@pytest.mark.parametrize("oracle", [False, True])
def test_controller_refuses_extreme_and_non_spd_gains_with_a_counted_cause(cfg, oracle):
    sec = copy.deepcopy(cfg["interaction"])
    p = InteractionParams.from_config(sec)
    loop = PythonEngine(cfg, np.deg2rad(cfg["joints"]["named_positions_deg"]["home"]), params=p)
    if oracle:
        loop.ctrl = PyInteractionController(p, loop.sim.ee_pose(), loop.sim.n)
    ctrl = loop.ctrl
    K0, D0 = np.diag(sec["impedance"]["stiffness_diag"]), np.diag(sec["impedance"]["damping_diag"])
    ones = np.ones(6)
    assert not ctrl.set_impedance_gains(np.full(6, 1e12), D0.diagonal())       # the K = 1e12
    assert not ctrl.set_impedance_gains(np.full(6, 1e-300), D0.diagonal())     # and 1e-300
    assert not ctrl.set_impedance_gains(K0.diagonal(), np.zeros(6))             # damping 0: not PD
    assert not ctrl.set_impedance_gains(-ones, ones)
    assert ctrl.rejected["gains_out_of_range"] == 2 and ctrl.rejected["gains_invalid"] == 2
    loop.step(round(0.3 / loop.dt))
    assert np.allclose(ctrl.K, K0) and np.allclose(ctrl.D, D0)                 # unchanged
    assert ctrl.set_impedance_gains(K0.diagonal() * 2, D0.diagonal() * 1.2)     # in range: accepted


def test_config_gains_outside_the_limits_are_refused_at_load(cfg):
    sec = copy.deepcopy(cfg["interaction"])
    sec["impedance"]["stiffness_diag"] = [60.0] * 3 + [1e5] * 3     # declared range, outside gain_limits
    with pytest.raises(GainError, match="interaction.impedance: stiffness vx"):
        InteractionParams.from_config(sec)
    sec = copy.deepcopy(cfg["interaction"])
    sec["gain_limits"]["damping_rot_nms_rad"] = [5.0, 1.0]
    with pytest.raises(GainError, match="min <= max"):
        InteractionParams.from_config(sec)
