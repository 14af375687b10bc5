"""Console -> the real interaction controller (hri_interaction node, embedded MuJoCo FR3) on the
in-process runtime: a mode switch and impedance gains from the console reach the controller (its
own JSON state, shown by the console, says so); gains the console refuses never reach it."""
import json

import pytest

from hri_runtime.config.tree import load_robot_config
from hri_runtime.inproc import InprocContext

from hri_console.nodes.console_node import ConsoleNode

from hri_interaction.nodes.interaction_node import InteractionNode  # noqa: E402


def test_mode_and_gains_reach_the_interaction_controller():
    cfg = load_robot_config("fr3")
    ctx = InprocContext()
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    StopSupervisorNode(cfg=cfg, context=ctx)     # the stop authority (without it the arm holds)
    inter = InteractionNode(cfg=cfg, context=ctx)
    console = ConsoleNode(cfg=cfg, context=ctx, parameters={"serve": False})
    ctx.spin_for(0.1)
    assert console.snapshot()["robot"]["interaction"]["mode"] == cfg["interaction"]["mode"] == "impedance"
    assert console.handle(json.dumps({"type": "set_mode", "mode": "admittance"}))["type"] == "ack"
    K, D = [80.0] * 3 + [15000.0] * 3, [5.0] * 3 + [350.0] * 3
    assert console.handle(json.dumps({"type": "set_gains", "gains": {"stiffness": K, "damping": D}}))["type"] == "ack"
    r = console.handle(json.dumps({"type": "set_gains", "gains": {"stiffness": [-1.0] * 6, "damping": D}}))
    assert r["type"] == "reject" and r["reason"].startswith("stiffness: not positive definite")
    # the cases: damping 0 (the console acknowledged it, the controller refused it),
    # K = 1e12 and 1e-300: refused by the console with the controller's own cause and sentence
    for bad_K, bad_D in ((K, [0.0] * 6), ([1e12] * 6, D), ([1e-300] * 6, D)):
        r = console.handle(json.dumps({"type": "set_gains", "gains": {"stiffness": bad_K, "damping": bad_D}}))
        assert r["type"] == "reject"
        before = dict(inter.ctrl.rejected)
        assert not inter.ctrl.set_impedance_gains(bad_K, bad_D)          # the controller's verdict
        assert [c for c, n in inter.ctrl.rejected.items() if n != before.get(c, 0)] == [r["cause"]]
    assert inter.ctrl.rejected["gains_out_of_range"] == 2 and inter.ctrl.rejected["gains_invalid"] == 1
    inter.ctrl.rejected.clear()
    ctx.spin_for(cfg["interaction"]["blend_s"] + 0.1)
    st = console.snapshot()["robot"]["interaction"]
    assert inter.ctrl.mode == "admittance" and st["mode"] == "admittance"
    assert st["stiffness_diag"] == pytest.approx(K)
    assert sum(inter.ctrl.rejected.values()) == 0       # the refused gains never reached it
