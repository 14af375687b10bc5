"""Contract with hri_atomic_motion: vr_interface_node's pulses over the in-process runtime drive the
real atomic_node (embedded simulated drive): every action whose whole pulse arrived is executed
exactly once under loss/duplication/reordering (the others never move the robot), and a dead link latches atomic's link_safe_stop fault."""

from hri_pulse import emulator
from hri_runtime import msgs
from hri_runtime.config.tree import load_robot_config
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node


class StateLog(Node):
    def __init__(self, topic, **kw):
        super().__init__("pulse_atomic_state_log", **kw)
        self.states = []
        self.create_subscription("hri_interfaces/msg/AtomicState", topic,
                                 lambda m: self.states.append(msgs.to_dict(m)), qos=10000)

    def movements(self):
        """States entered from idle, in order."""
        out, prev = [], 0
        for s in self.states:
            if s["state"] != prev and s["state"] != 0:
                out.append(s["state"])
            prev = s["state"]
        return out


def test_atomic_executes_each_delivered_action_once_then_safe_stop(pulse_cfg, send_plan, headset_cls):
    from hri_atomic_motion.nodes.atomic_node import AtomicNode
    from hri_pulse.nodes.vr_interface_node import VrInterfaceNode
    atomic_topics = load_robot_config("tino")["atomic"]["topics"]
    assert atomic_topics["pulse"] == pulse_cfg["topics"]["base_cmd"]
    assert atomic_topics["safe_stop"] == pulse_cfg["topics"]["safe_stop"]
    ctx = InprocContext(start_time_s=0.0)
    vr = VrInterfaceNode(context=ctx, parameters={"pulse.udp.port": 0})
    at = AtomicNode(context=ctx, parameters={"atomic.node.driver": "sim"})
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode
    StopSupervisorNode(context=ctx, parameters={"robot": "tino"})   # the stop authority
    log = StateLog(atomic_topics["atomic_state"], context=ctx)
    hs = headset_cls(("127.0.0.1", vr.port))
    try:
        # one action every 2.5 s (longer than the longest movement, 1.7 s); the link dies at 16 s
        sc = {"duration_s": 17.0, "every_s": 2.5, "first_s": 0.5,
              "impairments": {"loss": 0.15, "duplicate": 0.1, "reorder": 0.05, "stop_at_s": 16.0}}
        plan = emulator.plan(sc, pulse_cfg["emulator"], seed=21)
        send_plan(ctx, vr, hs, plan, 21.0)
        exp = [plan.actions[i].state for i in plan.executed_actions(pulse_cfg["check"]["messages"], pulse_cfg["check"]["min_messages"])]
        assert len(exp) >= 4, exp
        assert len(exp) < len(plan.delivered_actions())    # some pulses arrived incomplete: never moved
        assert log.movements() == exp                  # each delivered action executed once
        assert log.states[-1]["fault"] == "link_safe_stop"
        assert log.states[-1]["state"] == 0
    finally:
        hs.close()
        for n in (vr, at, log):
            n.destroy_node()
