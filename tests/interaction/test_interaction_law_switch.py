"""Switching the torque law at run time (``interaction.law``; docs/realtime.md "Switching the torque
law"): the switch takes effect at a tick boundary, the reference does not move (one admittance
state) and the command moves convexly from the old law's torque to the new one's over
``switch.law_blend_s`` (bumpless); to or from ``cartesian`` it is refused with one reason while the
admittance is engaged (the two families read λ as different poses) and taken at rest; no second
switch while one blends in. The C++ tick stepped from Python (``InteractionController`` on
``ArmSim``) and the real-time loop (``RtLoop``, in lockstep) apply the one rule of the C++ tick."""
from __future__ import annotations

import numpy as np
import pytest

from hri_core._hri_core import interaction as cx   # required: a missing build fails here
from hri_runtime.config.tree import load_robot_config
from hri_interaction.core.controller import InteractionParams
from hri_interaction.engine import PythonEngine

PUSH_N = (10.0, 0.0, 0.0)


def loop_with(law: str, mode: str = "admittance", blend_s: float = 0.2):
    cfg = load_robot_config("fr3", overrides=[f"interaction.law={law}", f"interaction.mode={mode}",
                                              f"interaction.switch.law_blend_s={blend_s}"])
    p = InteractionParams.from_tree(cfg)
    loop = PythonEngine(cfg, np.deg2rad(cfg["joints"]["named_positions_deg"]["home"]), params=p)
    return loop


def run_ticks(loop, n: int):
    """n ticks; (tau, T_ref) of each."""
    out = []
    for _ in range(n):
        r = loop.tick()
        out.append((np.array(r.tau), np.array(r.world_T_ref)))
    return out


def pushed(law: str, blend_s: float = 0.2, ticks: int = 30):
    """The arm in admittance mode at rest, then pushed along world x for ``ticks`` ticks (the
    admittance moving, the arm accelerating: where the laws differ most)."""
    loop = loop_with(law, blend_s=blend_s)
    run_ticks(loop, 50)
    loop.sim.push(PUSH_N)
    trace = run_ticks(loop, ticks)
    assert np.linalg.norm(loop.ctrl.admittance.lam_dot) > 1e-3       # engaged and moving
    return loop, trace


def largest_step(trace, i0: int, i1: int) -> tuple[float, float]:
    """Largest per-tick change of the torque (N·m) and of the reference position (m) in [i0, i1)."""
    dtau = max(float(np.abs(trace[i][0] - trace[i - 1][0]).max()) for i in range(i0, i1))
    dref = max(float(np.linalg.norm(trace[i][1][:3, 3] - trace[i - 1][1][:3, 3])) for i in range(i0, i1))
    return dtau, dref


@pytest.mark.parametrize("old,new", [("lie", "lie_osd"), ("lie_osd", "gic")])
def test_a_switch_within_the_lie_family_under_a_push_is_bumpless(old, new):
    """Mid-push: without a blend the command jumps by the two laws' difference (lie_osd feeds the
    measured wrench back and renders M_d: several N·m here); with the blend the largest torque step
    across the switch stays at the size of the steps before it, and the reference moves on as before
    (the same admittance state). (gic and lie agree to small errors: no jump to show there.)"""
    jumps = {}
    for blend_s in (0.0, 0.2):
        loop, before = pushed(old, blend_s)
        assert loop.ctrl.set_law(new)
        assert loop.ctrl.law == new and loop.ctrl.events[f"law_{old}_to_{new}"] == 1
        after = run_ticks(loop, 300)
        assert loop.ctrl._cx.law == new and not loop.ctrl.law_blending
        trace = before + after
        n = len(before)
        jumps[blend_s] = largest_step(trace, n, n + 2)[0]
        calm_tau, calm_ref = largest_step(trace, 5, n)
        switch_tau, switch_ref = largest_step(trace, n, len(trace))
        assert switch_ref < 3 * calm_ref + 1e-9                   # the reference does not jump
        if blend_s > 0:
            assert switch_tau < 3 * calm_tau + 0.02, (switch_tau, calm_tau)
    assert jumps[0.0] > 1.0 and jumps[0.0] > 5 * jumps[0.2], jumps   # the blend is what makes it bumpless


def test_cartesian_is_refused_while_the_admittance_is_engaged_and_taken_at_rest():
    loop, _ = pushed("lie")
    c = loop.ctrl
    assert not c.set_law("cartesian")
    cause, why = c.last_rejection
    assert cause == "law_switch_refused" and c.rejected[cause] == 1
    assert why.startswith("law lie -> cartesian: the admittance is engaged")
    assert c.law == "lie" and c._cx.law == "lie"
    assert not c.set_law("pid") and c.last_rejection[0] == "law_invalid"
    # within the family: taken, and no second switch while it blends in
    assert c.set_law("gic")
    assert not c.set_law("lie") and "still blending" in c.last_rejection[1]
    run_ticks(loop, int(round(0.2 / loop.dt)) + 1)
    assert c.set_law("lie")
    # the stop holds: the admittance is zeroed at the measured pose, so the families agree
    c.hold(True, "test", loop.sim.ee_pose())
    run_ticks(loop, 250)
    ref_before = run_ticks(loop, 1)[0][1]
    assert c.set_law("cartesian") and c._cx.law == "cartesian"
    trace = run_ticks(loop, 400)
    np.testing.assert_allclose(trace[0][1], ref_before, atol=1e-12)   # the reference stays
    assert c.rejected["law_switch_refused"] == 2
    # and back, at rest, in impedance mode after release
    c.hold(False)
    assert c.request_mode("impedance", loop.sim.state())
    run_ticks(loop, 10)
    assert c.set_law("lie") and c._cx.law == "lie"


def test_the_rule_is_the_tick_s_own():
    """``law_switch_error`` (what the input rule asks) and ``InteractionTick.set_law`` agree; the
    rest threshold is numerical (1e-9)."""
    z = np.zeros(6)
    small, big = np.full(6, 1e-10), np.r_[0, 0, 0, 0, 0, 1e-3]
    assert cx.law_switch_error("lie", "gic", big, big, False) is None
    assert cx.law_switch_error("gic", "lie_osd", big, big, False) is None
    assert cx.law_switch_error("lie", "cartesian", small, small, False) is None
    assert "engaged" in cx.law_switch_error("lie", "cartesian", big, z, False)
    assert "engaged" in cx.law_switch_error("cartesian", "gic", z, big, False)
    assert "blending" in cx.law_switch_error("lie", "gic", z, z, True)
    assert cx.law_switch_error("lie", "lie", big, big, True) is None          # no switch: nothing to refuse
    with pytest.raises(ValueError, match="unknown law"):
        cx.law_switch_error("lie", "pid", z, z, False)
    t = cx.TickParams()
    t.n = 7
    k = cx.InteractionTick(t, np.eye(4))
    k.lam_dot = big
    assert not k.set_law("cartesian", 0.0) and k.law == "lie"
    assert k.set_law("gic", 0.1) and k.law == "gic" and k.law_blending


def test_the_real_time_loop_switches_at_its_next_tick_and_rechecks_there():
    from hri_interaction.engine import make_engine

    cfg = load_robot_config("fr3")
    e = make_engine(cfg, np.deg2rad(cfg["joints"]["named_positions_deg"]["home"]), engine="rt")
    assert e.kind == "rt" and e.law == "lie"
    e.step(10)
    assert e.set_law("lie_osd")
    assert e.law == "lie"                             # applied at the next tick
    e.step(1)
    s = e.state()
    assert s["law"] == "lie_osd" and s["law_blending"]
    e.step(int(round(e.params.switch.law_blend_s / e.dt)) + 1)
    assert not e.state()["law_blending"]
    # engaged admittance: refused by the input rule, with the tick's sentence
    assert e.set_mode("admittance")
    e.set_push(np.array(PUSH_N))
    e.step(150)
    assert not e.set_law("cartesian")
    assert "law lie_osd -> cartesian: the admittance is engaged" in e.refusal()
    assert "law_switch_refused" in e.refusal() and e.state()["rejected"]["law_switch_refused"] == 1
    # a command that reaches the loop unchecked is refused by the tick itself, and counted
    e.loop.set_law("cartesian", 0.0)
    e.step(1)
    s = e.state()
    assert s["law"] == "lie_osd" and s["law_refusals"] == 1
    assert s["rejected"]["law_switch_refused_at_tick"] == 1
    assert not {"hold", "state_invalid", "torque_invalid"} & set(s["flags"])     # the loop runs on
