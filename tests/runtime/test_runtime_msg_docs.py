"""The message definitions say what their fields mean in the code: the comments of
``src/hri_interfaces/msg/*.msg`` are read here and held against what the nodes publish (lockstep,
in process) and against the code's own lists of values."""
from __future__ import annotations

import re
from pathlib import Path

from hri_runtime import msgs
from hri_runtime.config.tree import load_declarations, load_robot_config
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node

REPO = Path(__file__).resolve().parents[2]
MSG_DIR = REPO / "src" / "hri_interfaces" / "msg"


def field_docs(name: str) -> tuple[dict[str, str], dict[str, str]]:
    """(fields, constants) of ``<name>.msg``: name -> its comment (continuation lines joined)."""
    fields, consts, last = {}, {}, None
    for line in (MSG_DIR / f"{name}.msg").read_text().splitlines():
        code, _, comment = line.partition("#")
        if not code.strip():
            if last is not None and line[:1].isspace():          # an indented comment line
                last[1][last[0]] += " " + comment.strip()
            continue
        m = re.match(r"\s*\S+\s+(\w+)\s*(=\s*\S+)?", code)
        table = consts if m.group(2) else fields
        table[m.group(1)] = comment.strip()
        last = (m.group(1), table)
    return fields, consts


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z_]+", text))


class Operator(Node):
    def __init__(self, topics, **kw):
        super().__init__("doc_probe", **kw)
        self.states = []
        self.pulse_pub = self.create_publisher("geometry_msgs/msg/Twist", topics["pulse"], qos=10)
        self.stop_pub = self.create_publisher("std_msgs/msg/Bool", topics["safe_stop"], qos=10)
        self.create_subscription("hri_interfaces/msg/AtomicState", topics["atomic_state"], self.states.append, qos=10)

    def pulse(self, ctx, state, direction=0):
        tw = lambda s, d: msgs.new("geometry_msgs/msg/Twist",  # noqa: E731
                                   linear=msgs.new("geometry_msgs/msg/Vector3", x=float(s)),
                                   angular=msgs.new("geometry_msgs/msg/Vector3", z=float(d)))
        for _ in range(3):
            self.pulse_pub.publish(tw(state, direction))
            ctx.spin_for(0.04)
        self.pulse_pub.publish(tw(0, 0))


def test_atomic_state_locked_means_a_movement_runs_and_fault_means_refused():
    """AtomicState.msg: ``locked`` = a movement is running (a new state is queued, ``queue``);
    ``fault`` = a latched fault (a new state is refused). The link safe stop latched: fault
    link_safe_stop, locked false, and a pulse is refused, not queued."""
    from hri_atomic_motion.core.framework import Fault
    from hri_atomic_motion.nodes.atomic_node import AtomicNode
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    fields, _ = field_docs("AtomicState")
    assert "a movement is running" in fields["locked"] and "not a fault" in fields["locked"]
    assert {f.value for f in Fault} <= words(fields["fault"])        # every fault the code latches
    cfg = load_robot_config("tino")
    ctx = InprocContext()
    StopSupervisorNode(context=ctx)
    node = AtomicNode(cfg=cfg, context=ctx, parameters={"atomic.node.driver": "sim"})
    op = Operator(cfg["atomic"]["topics"], context=ctx)
    ctx.spin_for(0.2)
    op.pulse(ctx, 2)                                       # a movement runs: locked
    ctx.spin_for(0.1)
    st = op.states[-1]
    assert (st.locked, st.state, st.fault, st.queue) == (True, 2, "", 0)
    op.pulse(ctx, 1)                                       # while locked: queued, not refused
    ctx.spin_for(0.1)
    st = op.states[-1]
    assert st.locked and st.queue == 1 and node.ctrl.counts["queued"] == 1
    op.stop_pub.publish(msgs.new("std_msgs/msg/Bool", data=True))   # the link safe stop latches
    ctx.spin_for(0.1)
    st = op.states[-1]
    assert (st.fault, st.locked, st.state, st.queue) == ("link_safe_stop", False, 0, 0)
    op.pulse(ctx, 3)                                       # refused while the fault holds
    ctx.spin_for(0.5)
    st = op.states[-1]
    assert node.ctrl.counts["rejected_fault"] >= 1 and (st.fault, st.locked, st.queue) == ("link_safe_stop", False, 0)
    assert [c.state for c in node.ctrl.started] == [2]


def test_atomic_state_system_stop_is_the_stop_the_node_obeys_with_the_documented_reasons():
    """AtomicState.msg: ``system_stop`` = the system stop's reason ('' = none): no_stop_heartbeat
    before the supervisor's first heartbeat latching nothing; '' once it is heard;
    stop_heartbeat_timeout after its silence, latching the fault system_stop."""
    from hri_atomic_motion.nodes.atomic_node import AtomicNode
    from hri_safety.core.stop import HEARTBEAT_TIMEOUT, NO_HEARTBEAT
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    fields, _ = field_docs("AtomicState")
    assert {NO_HEARTBEAT, HEARTBEAT_TIMEOUT, "system_stop"} <= words(fields["system_stop"])
    assert "latches nothing" in fields["system_stop"] and "'' = none" in fields["system_stop"]
    cfg = load_robot_config("tino")
    ctx = InprocContext()
    AtomicNode(cfg=cfg, context=ctx, parameters={"atomic.node.driver": "sim"})
    op = Operator(cfg["atomic"]["topics"], context=ctx)
    ctx.spin_for(0.1)
    assert (op.states[-1].system_stop, op.states[-1].fault) == (NO_HEARTBEAT, "")
    sup = StopSupervisorNode(context=ctx)
    ctx.spin_for(0.2)
    assert (op.states[-1].system_stop, op.states[-1].fault) == ("", "")
    sup.destroy_node()                                     # silence = stop
    ctx.spin_for(2.0)
    assert (op.states[-1].system_stop, op.states[-1].fault) == (HEARTBEAT_TIMEOUT, "system_stop")


def test_teleop_mode_constants_are_the_modes_the_pipeline_reports():
    from hri_arm_teleop.core.pipeline import MODE_CODES, REENGAGE_REASON

    fields, consts = field_docs("TeleopMode")
    assert set(consts) == set(MODE_CODES)
    assert "REENGAGE" in fields["reason"] and "STOP" in fields["reason"] and "SAFETY_HOLD" in fields["reason"]
    assert REENGAGE_REASON and "released and engaged again" in consts["REENGAGE"]


def test_interaction_state_driver_values_are_the_declared_ones():
    fields, _ = field_docs("InteractionState")
    decl = load_declarations(REPO / "config").schema["interaction"]["node"]["driver"]
    assert words(fields["driver"].split("(")[0]) == set(decl["values"])
    assert "not latched" in fields["flags"]
    assert "below its floor" in fields["energy_violations"]


def test_interaction_state_fields_match_what_the_node_publishes():
    """flags: the last tick's (controller's sorted, then safety_<check>); frozen: '' or a reason;
    driver: the node's driver; stiffness_diag: K's diagonal."""
    from hri_interaction.nodes.interaction_node import InteractionNode
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    cfg = load_robot_config("fr3")
    ctx = InprocContext()
    StopSupervisorNode(context=ctx)
    node = InteractionNode(cfg=cfg, context=ctx, parameters={"interaction.engine": "python"})
    got = []
    Node("doc_probe", context=ctx).create_subscription("hri_interfaces/msg/InteractionState",
                                                       cfg["interaction"]["topics"]["state"], got.append)
    ctx.spin_for(0.2)
    st = got[-1]
    assert st.driver == node.driver == "sim" and st.frozen == ""
    ctrl = [f for f in st.flags if not f.startswith("safety_")]
    assert ctrl == sorted(ctrl) and list(st.flags[:len(ctrl)]) == ctrl
    assert list(st.stiffness_diag) == cfg["interaction"]["impedance"]["stiffness_diag"]
    assert len(st.admittance_lambda) == 6 and st.ticks == node.ticks
