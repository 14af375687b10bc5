"""Heuristics: the thesis's coefficients, model-based rules, closed-loop sanity on 1/(s+1)^3."""
import math

import pytest

from hri_pid_tuning.core.heuristics import (THESIS_RULES, HeuristicsParams, IntegratingDelayModel,
                                            compute_all)
from hri_pid_tuning.core.metrics import EvaluationParams, evaluate_joint
from hri_core.pid import PIDParams
from hri_pid_tuning.core.plant import simulate_closed_loop
from hri_runtime.config.tree import load_robot_config
from hri_sim.pid_plants import LinearPlant

KU, TU = 8.0, 2 * math.pi / math.sqrt(3)


@pytest.fixture(scope="module")
def hp():
    return HeuristicsParams.from_config(load_robot_config("fr3")["pid_tuning"]["heuristics"])


def test_thesis_coefficients_exact(hp):
    g = compute_all(KU, TU, hp)
    assert set(THESIS_RULES) <= set(g)
    # Webel's thesis, heuristics table (RoboyVR code, parallel form)
    expect = {"classic": (0.6, 1.2, 3 / 40), "pessen_integral_rule": (0.7, 1.75, 21 / 200),
              "some_overshoot": (1 / 3, 0.666, 1 / 9), "no_overshoot": (1 / 5, 0.4, 1 / 15),
              "p_control": (0.5, 0, 0), "pi_control": (0.45, 0.54, 0), "pd_control": (0.8, 0, 0.1)}
    for name, (a, b, c) in expect.items():
        assert g[name].kp == pytest.approx(a * KU), name
        assert g[name].ki == pytest.approx(b * KU / TU), name
        assert g[name].kd == pytest.approx(c * KU * TU), name
    kp, ti, td = g["tyreus_luyben"].to_standard()
    assert (kp, ti, td) == pytest.approx((KU / 2.2, 2.2 * TU, TU / 6.3))


def test_integrating_delay_model_reproduces_ultimate_point():
    m = IntegratingDelayModel.from_ultimate(KU, TU)
    wu = 2 * math.pi / TU
    assert m.kv / wu == pytest.approx(1 / KU)            # |G(jωu)| = 1/Ku
    assert -math.pi / 2 - wu * m.theta_s == pytest.approx(-math.pi)   # arg G(jωu) = −π


def test_every_heuristic_stabilises_third_order(hp):
    plant = LinearPlant([1.0], [1.0, 3.0, 3.0, 1.0], dt_s=1e-2, effort_max=100.0)
    results = {}
    pt = load_robot_config("fr3")["pid_tuning"]
    ev_params = EvaluationParams.from_config(pt["evaluation"])
    pid_params = PIDParams.from_config(pt["pid"])
    for name, g in compute_all(KU, TU, hp).items():
        tr = simulate_closed_loop(plant, g, lambda t: 0.0 if t < 1.0 else math.radians(45), 60.0, q0_rad=0.0,
                                  pid_params=pid_params)
        ev = evaluate_joint(tr.t_s, tr.desired_deg, tr.measured_deg, ev_params)
        results[name] = ev
        assert tr.aborted is None
        assert ev.avg_steady_state_error is not None
        if hp.rules.get(name, {"ki": 1.0})["ki"] > 0 or name in ("simc", "amigo"):
            assert abs(ev.avg_steady_state_error) < 0.5, name      # integral action removes offset
    # the ranking trends the thesis reports on overshoot: no-overshoot < some-overshoot < classic < pessen
    ov = {k: (v.max_overshoot or 0.0) for k, v in results.items()}
    assert ov["no_overshoot"] < ov["classic"] < ov["pessen_integral_rule"]
    assert ov["amigo"] < ov["classic"] and ov["simc"] < ov["classic"]
    # P control leaves an offset 1/(1+K Kp) of the step on a type-0 plant
    assert results["p_control"].avg_steady_state_error == pytest.approx(45 / (1 + 0.5 * KU), rel=0.05)


def test_invalid_relay_result_rejected(hp):
    with pytest.raises(ValueError):
        compute_all(0.0, 1.0, hp)
    with pytest.raises(ValueError):
        compute_all(1.0, float("nan"), hp)
