"""Link loss is a latched, repeated stop request; the console reports whom a command reached
(lockstep, simulated time)."""
from __future__ import annotations

import json

from hri_pulse import emulator
from hri_runtime import msgs
from hri_runtime.config.tree import load_robot_config
from hri_runtime.inproc import InprocContext

from hri_atomic_motion.e2e import build


def _reset(node):
    cli = node.create_client("std_srvs/srv/Trigger", "/safety/reset")
    return cli.call(msgs.new("std_srvs/srv/Trigger_Request"), timeout_s=1.0)


def test_link_loss_is_requested_every_period_and_relatches_after_a_premature_reset():
    cfg = load_robot_config("tino")
    chain = build(cfg)
    try:
        sup, vr = chain.supervisor, chain.vr
        period = sup.params.period_s
        plan = emulator.plan({"duration_s": 2.0, "actions": [{"at_s": 0.5, "state": 1}],
                              "impairments": {"stop_at_s": 1.5}}, cfg["pulse"]["emulator"], seed=1)
        hs = chain.headset(plan)
        hs.run(1.5)
        assert not sup.latch.stopped
        hs.run(cfg["pulse"]["health"]["disconnect_timeout_s"] + 0.2)
        assert sup.latch.stopped and "link_loss" in sup.latch.sources and "link_safe_stop" in sup.latch.sources
        n = vr.stop_requests
        chain.ctx.spin_for(1.0)
        assert vr.stop_requests - n >= int(1.0 / period) - 1        # repeated while the link is lost
        # an operator resets while the headset is still silent: refused, the cause is still there
        r = _reset(chain.watch)
        assert not r.success and "link_loss still requested" in r.message
        chain.ctx.spin_for(period + chain.step_s)
        assert "link_loss" in sup.latch.sources and chain.atomic.stop.stopped and sup.latch.reset_count == 0
        # the headset comes back: the requests end; the next reset releases for good
        plan2 = emulator.plan({"duration_s": 2.0, "actions": []}, cfg["pulse"]["emulator"], seed=2)
        chain.headset(plan2).run(1.0)
        assert vr.core.link.health.connected
        assert _reset(chain.watch).success
        chain.ctx.spin_for(1.0)
        assert not sup.latch.stopped and not chain.atomic.stop.stopped
    finally:
        chain.close()


def test_console_reports_how_many_subscribers_a_command_reached():
    from hri_console.nodes.console_node import ConsoleNode
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    cfg = load_robot_config("fr3")
    ctx = InprocContext()
    console = ConsoleNode(cfg=cfg, context=ctx, parameters={"serve": False})
    r = console.handle(json.dumps({"type": "safe_stop"}))            # no supervisor: reached nobody
    assert r["type"] == "ack" and r["result"]["subscribers"] == 0
    assert "/safety/stop_request" in r["result"]["warning"]
    # the mode goes through the interaction node's parameter service (not a topic): with no
    # interaction node it is refused and says which service is missing, never silently lost
    r = console.handle(json.dumps({"type": "set_mode", "mode": "admittance"}))
    assert r["type"] == "reject" and "/interaction/set_parameters_atomically" in json.dumps(r)
    StopSupervisorNode(cfg=cfg, context=ctx)
    r = console.handle(json.dumps({"type": "safe_stop"}))
    assert r["result"]["subscribers"] == 1 and "warning" not in r["result"]
