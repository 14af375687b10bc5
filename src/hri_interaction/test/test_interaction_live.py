"""hri_interaction.core.live on the python engine (the C++ tick on the simulated FR3): the run-time
parameters' appliers, the mode/gains/push inputs, the state report and its /diagnostics status."""
import numpy as np
import pytest

from hri_interaction.core.live import (ADMITTANCE, IMPEDANCE, LAW, LIVE, MODE, StateReport, appliers, gains_input,
                                       mode_input, push_input, status)
from hri_interaction.engine import diagnostics, make_engine
from hri_runtime.config.tree import load_robot_config
from hri_runtime.diagnostics import OK, WARN
from hri_runtime.parameters_gen import JointsParams

CFG = load_robot_config("fr3")


@pytest.fixture
def engine():
    q0 = np.deg2rad(JointsParams.from_tree(CFG).named_positions_deg["home"])
    e = make_engine(CFG, q0, driver="sim", simulated=True)
    yield e
    e.stop()


def test_every_live_parameter_has_an_applier_that_answers_a_refusal_with_its_sentence(engine):
    apply = appliers(lambda: engine)
    assert set(apply) == set(LIVE) == {MODE, LAW, *IMPEDANCE.values(), *ADMITTANCE.values()}
    assert apply[LAW]("gic") is None and engine.state()["law"] == "gic"
    assert isinstance(apply[LAW]("telepathy"), str) and engine.state()["law"] == "gic"
    assert apply[MODE]("admittance") is None and engine.state()["mode"] == "admittance"
    assert isinstance(apply[MODE]("flying"), str) and engine.state()["mode"] == "admittance"
    k = np.diag(engine.impedance["stiffness"]).tolist()     # the config's 6x6 K
    assert apply[IMPEDANCE["stiffness"]]([2 * x for x in k]) is None
    assert np.allclose(engine.impedance["stiffness"], [2 * x for x in k])
    assert isinstance(apply[IMPEDANCE["stiffness"]]([-1.0] * 6), str)       # not SPD: refused, unchanged
    assert np.allclose(engine.impedance["stiffness"], [2 * x for x in k])


def test_mode_and_gain_topics_become_parameter_values_only_when_accepted(engine):
    engine.hold(False)
    assert mode_input(engine, "  Hybrid\n") == {MODE: "hybrid"}
    assert mode_input(engine, "sideways") == {}
    k, d = np.diag(engine.impedance["stiffness"]), np.diag(engine.impedance["damping"])
    got = gains_input(engine, [*(k * 1.5), *d])
    assert list(got) == [IMPEDANCE["stiffness"], IMPEDANCE["damping"]]
    assert np.allclose(got[IMPEDANCE["stiffness"]], k * 1.5) and np.allclose(got[IMPEDANCE["damping"]], d)
    assert gains_input(engine, [1.0, 2.0]) == {}                          # wrong length


def test_a_non_finite_push_is_ignored(engine):
    assert push_input(engine, [0.0, 0.0, 0.0, 5.0, 0.0, 0.0])
    assert not push_input(engine, [0.0, 0.0, 0.0, float("nan"), 0.0, 0.0])


def test_the_report_marks_a_stale_reference_and_the_status_warns_while_holding(engine):
    wall = iter(np.arange(0.0, 1.0, 0.001))
    report = StateReport(1000.0, reference_timeout_s=0.5, start_s=10.0, wall_clock=lambda: next(wall))
    for _ in range(5):
        report.periods.tick()
        engine.step(1)
    d = report.complete(diagnostics(engine.state(), 1e-3, report.periods.summary()), 10.2, engine="python",
                        driver="sim")
    assert d["reference_stale"] is False and (d["engine"], d["driver"]) == ("python", "sim")
    assert d["period_us"]["p50"] == pytest.approx(1000.0)
    assert report.complete({}, 10.6)["reference_stale"] is True
    report.on_reference(False, 10.6)                                      # refused: the age goes on
    assert report.reference_stale(10.6)
    report.on_reference(True, 10.6)
    assert not report.reference_stale(10.7)
    engine.hold(True, "stop")
    engine.step(1)
    level, message, values = status(diagnostics(engine.state(), 1e-3))
    assert level == WARN and "hold" in message and set(values) == {"rejected", "events", "energy_j"}
    engine.hold(False)
    engine.step(1)
    assert status(diagnostics(engine.state(), 1e-3))[0] == OK


def test_every_kth_state_is_a_diagnostics_one_with_fresh_period_statistics():
    wall = iter(np.arange(0.0, 1.0, 0.001))
    report = StateReport(1000.0, reference_timeout_s=0.5, start_s=0.0, wall_clock=lambda: next(wall),
                         diagnostics_every=3)
    due, summaries = [], []
    for _ in range(7):
        report.periods.tick()
        summaries.append(report.state_periods())
        due.append(report.diagnostics_due)
    assert due == [True, False, False, True, False, False, True]
    assert summaries[:3] == [None, None, None]                 # one tick: no period yet, then held
    assert summaries[3]["p50"] == pytest.approx(1000.0) and summaries[4] is summaries[3]
    assert summaries[6] is not summaries[3]
    assert StateReport(1000.0, 0.5, 0.0, diagnostics_every=0).diagnostics_every == 1


def test_the_node_report_takes_k_from_the_state_and_diagnostics_rates():
    from hri_interaction.core.controller import InteractionParams
    from hri_runtime.config.tree import load_robot_config

    cfg = load_robot_config("fr3", overrides=["interaction.node.state_rate_hz=1000",
                                              "interaction.node.diagnostics_rate_hz=50"])
    assert StateReport.of_node(InteractionParams.from_tree(cfg), 0.0).diagnostics_every == 20
    assert StateReport.of_node(InteractionParams.from_tree(load_robot_config("fr3")), 0.0).diagnostics_every == 1
