"""Console -> the real interaction controller (hri_interaction node, embedded MuJoCo FR3) on the
in-process runtime: a mode switch and impedance gains from the console reach the controller (its
own JSON state, shown by the console, says so); gains the console refuses never reach it."""
import json

import pytest

from hri_runtime.config import load_robot_config
from hri_runtime.inproc import InprocContext

from hri_console.nodes.console_node import ConsoleNode

pytest.importorskip("hri_interaction.nodes.interaction_node")
from hri_interaction.nodes.interaction_node import InteractionNode  # noqa: E402


def test_mode_and_gains_reach_the_interaction_controller():
    cfg = load_robot_config("fr3")
    ctx = InprocContext()
    inter = InteractionNode(cfg=cfg, context=ctx)
    console = ConsoleNode(cfg=cfg, context=ctx, parameters={"serve": False})
    ctx.spin_for(0.1)
    assert console.snapshot()["robot"]["interaction"]["mode"] == cfg["interaction"]["mode"] == "impedance"
    assert console.handle(json.dumps({"type": "set_mode", "mode": "admittance"}))["type"] == "ack"
    K, D = [80.0] * 3 + [15000.0] * 3, [5.0] * 3 + [350.0] * 3
    assert console.handle(json.dumps({"type": "set_gains", "gains": {"stiffness": K, "damping": D}}))["type"] == "ack"
    r = console.handle(json.dumps({"type": "set_gains", "gains": {"stiffness": [-1.0] * 6, "damping": D}}))
    assert r["type"] == "reject" and "stiffness[0]=-1 outside" in r["reason"]
    ctx.spin_for(cfg["interaction"]["blend_s"] + 0.1)
    st = console.snapshot()["robot"]["interaction"]
    assert inter.ctrl.mode == "admittance" and st["mode"] == "admittance"
    assert st["stiffness_diag"] == pytest.approx(K)
    assert sum(inter.ctrl.rejected.values()) == 0       # the refused gains never reached it
