"""The one set of input rules (hri_interaction.core.inputs.InputRules) that both engines and the
test oracle use: every bad input refused with its cause counted, the last good value held."""
import logging
from types import SimpleNamespace

import numpy as np
import pytest

from hri_interaction.core.controller import InteractionParams
from hri_interaction.core.inputs import InputRules, is_rigid, reference_fault
from hri_runtime.config.tree import load_robot_config


@pytest.fixture(scope="module")
def params():
    return InteractionParams.from_tree(load_robot_config("fr3"))


def pose(x=0.4, y=0.0, z=0.5):
    T = np.eye(4)
    T[:3, 3] = [x, y, z]
    return T


def test_reference_rules(params):
    r = InputRules(params, pose())
    step = params.limits.max_pose_step_m
    assert r.reference(None) is None                                   # a message that did not convert
    bad = pose()
    bad[0, 0] = 2.0
    assert r.reference(bad) is None
    assert r.reference(pose(0.4 + 2 * step)) is None
    T = r.reference(pose(0.4 + 0.5 * step))
    assert T is not None and np.array_equal(r.target, T) and T[0, 3] == pytest.approx(0.4 + 0.5 * step)
    assert r.rejected == {"reference_nonfinite": 1, "reference_not_rigid": 1, "reference_jump": 1}
    assert r.last_rejection[0] == "reference_jump" and "m >" in r.last_rejection[1]
    assert r.hold(True, "test", pose(0.1))                            # the stop: anchored, refused
    assert r.target[0, 3] == 0.1 and r.reference(pose(0.1)) is None
    assert r.rejected["reference_during_stop"] == 1
    assert not r.hold(True, "again") and r.hold(False) and r.reference(pose(0.1)) is not None


def test_wrench_rules_hold_the_last_good_wrench(params):
    r = InputRules(params, pose())
    w = np.array([0.1, 0, 0, 1.0, 2.0, 3.0])
    assert r.set_wrench(w) and r.wrench_ok
    assert not r.set_wrench([np.nan, 0, 0, 0, 0, 0]) and not r.wrench_ok
    assert not r.set_wrench([0, 0, 0, 2 * params.limits.max_force_n, 0, 0])
    assert not r.set_wrench([1.0, 2.0])
    assert np.array_equal(r.wrench, w)
    assert r.rejected == {"wrench_nonfinite": 2, "wrench_too_large": 1}
    assert r.set_wrench(np.zeros(6)) and r.wrench_ok


def test_gain_rules(params):
    r = InputRules(params, pose())
    K, D = params.impedance.stiffness, params.impedance.damping
    g = r.gains(np.diag(K), np.diag(D))
    assert g is not None and np.allclose(g[0], K) and np.allclose(g[1], D)
    assert r.gains(np.full(6, 1e12), np.diag(D)) is None               # outside gain_limits
    assert r.gains(-np.ones(6), np.ones(6)) is None                    # not SPD
    assert r.gain_vector([1.0, 2.0]) is None                           # not 12 values
    kd = r.gain_vector(list(np.diag(K)) + list(np.diag(D)))            # parsed; checked by gains()
    assert kd is not None and np.allclose(kd[0], np.diag(K)) and np.allclose(kd[1], np.diag(D))
    assert r.rejected == {"gains_out_of_range": 1, "gains_invalid": 2}
    a = r.admittance(np.ones(6), 2 * np.ones(6), np.zeros(6))
    assert a is not None and np.allclose(a.damping, 2 * np.eye(6)) and not a.stiffness.any()
    assert r.admittance(np.ones(6), -np.ones(6), np.zeros(6)) is None
    assert r.rejected["gains_invalid"] == 3


def test_mode_rules(params):
    r = InputRules(params, pose())
    ok = SimpleNamespace(q=np.zeros(7), dq=np.zeros(7), world_T_ee=pose(), body_twist=np.zeros(6))
    nan = SimpleNamespace(**{**vars(ok), "q": np.full(7, np.nan)})
    assert r.mode("admittance", None, ok) and r.mode("hybrid")
    assert not r.mode("warp")
    assert not r.mode("admittance", "safety: workspace")
    assert not r.mode("admittance", None, nan)
    assert r.rejected == {"mode_invalid": 1, "mode_switch_refused": 2}
    assert r.last_rejection == ("mode_switch_refused", "state not finite")


def test_a_rejection_is_logged_at_1_10_100_and_counted_always(params, caplog):
    r = InputRules(params, pose(), logging.getLogger("test_inputs"))
    with caplog.at_level(logging.WARNING, "test_inputs"):
        for _ in range(120):
            r.reference(None)
    assert r.rejected["reference_nonfinite"] == 120 and len(caplog.records) == 3


def test_reference_fault_and_rigidity():
    assert is_rigid(pose()) and not is_rigid(np.eye(3)) and not is_rigid(np.full((4, 4), np.nan))
    assert reference_fault(pose(), pose(), 0.1) is None
    assert reference_fault(np.zeros((3, 3)), pose(), 0.1)[0] == "reference_nonfinite"
