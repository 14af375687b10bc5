"""Console -> the real interaction controller (hri_interaction node, embedded MuJoCo FR3) on the
in-process runtime: a mode switch and impedance gains from the console go through the node's
parameter services and reach the controller (its own JSON state, shown by the console, and its
parameters say so); gains the console refuses never reach it; the node's own refusal is shown
with its sentence."""
import json

import pytest

from hri_runtime.config.tree import load_robot_config
from hri_runtime.inproc import InprocContext

from hri_console.nodes.console_node import ConsoleNode

from hri_interaction.nodes.interaction_node import InteractionNode  # noqa: E402


def test_mode_and_gains_reach_the_interaction_controller():
    cfg = load_robot_config("fr3")
    ctx = InprocContext()
    ctx.parameter_services_enabled = True       # the console sets mode and gains through them
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    StopSupervisorNode(cfg=cfg, context=ctx)     # the stop authority (without it the arm holds)
    inter = InteractionNode(cfg=cfg, context=ctx)
    console = ConsoleNode(cfg=cfg, context=ctx, parameters={"serve": False})
    ctx.spin_for(0.1)
    assert console.snapshot()["robot"]["interaction"]["mode"] == cfg["interaction"]["mode"] == "impedance"
    r = console.handle(json.dumps({"type": "set_mode", "mode": "admittance"}))
    assert r["type"] == "ack" and r["result"]["message"] == "interaction.mode set on /interaction"
    assert inter.get_parameter("interaction.mode").value == "admittance"      # what param get returns
    K, D = [80.0] * 3 + [15000.0] * 3, [5.0] * 3 + [350.0] * 3
    assert console.handle(json.dumps({"type": "set_gains", "gains": {"stiffness": K, "damping": D}}))["type"] == "ack"
    assert inter.get_parameter("interaction.impedance.stiffness_diag").value == K
    assert inter.get_parameter("interaction.impedance.damping_diag").value == D
    r = console.handle(json.dumps({"type": "set_gains", "gains": {"stiffness": [-1.0] * 6, "damping": D}}))
    assert r["type"] == "reject" and r["reason"].startswith("stiffness: not positive definite")
    # the cases: damping 0 (the console acknowledged it, the controller refused it),
    # K = 1e12 and 1e-300: refused by the console with the controller's own cause and sentence
    for bad_K, bad_D in ((K, [0.0] * 6), ([1e12] * 6, D), ([1e-300] * 6, D)):
        r = console.handle(json.dumps({"type": "set_gains", "gains": {"stiffness": bad_K, "damping": bad_D}}))
        assert r["type"] == "reject"
        before = dict(inter.engine.inputs.rejected)
        assert not inter.engine.set_gains(bad_K, bad_D)          # the controller's verdict
        assert [c for c, n in inter.engine.inputs.rejected.items() if n != before.get(c, 0)] == [r["cause"]]
    assert inter.engine.inputs.rejected["gains_out_of_range"] == 2 and inter.engine.inputs.rejected["gains_invalid"] == 1
    inter.engine.inputs.rejected.clear()
    ctx.spin_for(cfg["interaction"]["blend_s"] + 0.1)
    st = console.snapshot()["robot"]["interaction"]
    assert inter.engine.mode == "admittance" and st["mode"] == "admittance"
    assert st["stiffness_diag"] == pytest.approx(K)
    assert sum(inter.engine.inputs.rejected.values()) == 0       # the refused gains never reached it
    # a refusal of the node itself reaches the operator with its sentence: no switch while the stop holds
    from hri_runtime import msgs
    from hri_runtime.node import Node

    Node("stopper", context=ctx).create_publisher("hri_interfaces/msg/StopRequest", "/safety/stop_request").publish(
        msgs.new("hri_interfaces/msg/StopRequest", source="test", reason="console refusal test"))
    ctx.spin_for(0.1)
    assert inter.engine.held
    r = console.handle(json.dumps({"type": "set_mode", "mode": "hybrid"}))
    assert r["type"] == "reject" and r["cause"] == "service_refused"
    assert r["reason"].startswith("interaction.mode: ") and "(mode_switch_refused)" in r["reason"], r
    assert inter.engine.mode == "admittance" and inter.get_parameter("interaction.mode").value == "admittance"
