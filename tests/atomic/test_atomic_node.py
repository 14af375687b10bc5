"""The atomic node (and the tino sim node) on the in-process runtime: fake clock, no threads."""
from __future__ import annotations

import pytest


from hri_runtime import msgs  # noqa: E402
from hri_runtime.config.tree import load_robot_config  # noqa: E402
from hri_runtime.inproc import InprocContext  # noqa: E402
from hri_runtime.node import Node  # noqa: E402

from hri_atomic_motion.messages import parse_leg_state  # noqa: E402
from hri_atomic_motion.nodes.atomic_node import AtomicNode  # noqa: E402
from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode  # noqa: E402


class Operator(Node):
    """Publishes hri_pulse's pattern and records the outputs."""

    def __init__(self, topics, **kw):
        super().__init__("operator", **kw)
        self.twists, self.diags, self.legs, self.states = [], [], [], []
        self.pulse_pub = self.create_publisher("geometry_msgs/msg/Twist", topics["pulse"], qos=10)
        self.stop_pub = self.create_publisher("std_msgs/msg/Bool", topics["safe_stop"], qos=10)
        self.reset_pub = self.create_publisher("std_msgs/msg/Bool", topics["reset"], qos=10)
        self.create_subscription("geometry_msgs/msg/Twist", topics["cmd_vel"], self.twists.append, qos=10)
        self.create_subscription("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics", self.diags.append, qos=10)
        self.create_subscription("sensor_msgs/msg/JointState", topics["leg_state"], self.legs.append, qos=10)
        self.create_subscription("hri_interfaces/msg/AtomicState", topics["atomic_state"], self.states.append, qos=10)

    def twist(self, state, direction):
        return msgs.new("geometry_msgs/msg/Twist", linear=msgs.new("geometry_msgs/msg/Vector3", x=float(state)),
                        angular=msgs.new("geometry_msgs/msg/Vector3", z=float(direction)))

    def pulse(self, ctx, state, direction=0):
        for _ in range(3):
            self.pulse_pub.publish(self.twist(state, direction))
            ctx.spin_for(0.04)
        self.pulse_pub.publish(self.twist(0, 0))


@pytest.fixture(scope="module")
def cfg():
    return load_robot_config("tino")


def _ticks(op):
    return parse_leg_state(op.legs[-1]).ticks


def test_embedded_sim_runs_states_and_faults_reach_diagnostics(cfg):
    ctx = InprocContext()
    StopSupervisorNode(context=ctx)   # the stop authority (without it every actuator holds)
    node = AtomicNode(cfg=cfg, context=ctx, parameters={"atomic.node.driver": "sim"})
    op = Operator(cfg["atomic"]["topics"], context=ctx)
    ctx.spin_for(0.2)
    op.pulse(ctx, 2)
    ctx.spin_for(2.0)
    assert abs(_ticks(op) - cfg["atomic"]["leg"]["max_extension_ticks"]) <= 10
    op.pulse(ctx, 3, 1)
    ctx.spin_for(0.5)
    assert op.twists[-1].linear.x == cfg["atomic"]["base"]["move_linear_m_s"]
    assert op.twists[-1].angular.z == -cfg["atomic"]["base"]["move_angular_rad_s"]
    ctx.spin_for(2.0)
    assert abs(_ticks(op)) <= cfg["atomic"]["leg"]["tolerance_ticks"]
    assert node.sim.base_pose()[2] == pytest.approx(-0.6 * 1.7, rel=0.03)
    assert [c.state for c in node.ctrl.started] == [2, 3]
    # safe-stop during a movement: latched, motor 0 / twist 0, ERROR on /diagnostics until reset
    op.pulse(ctx, 3, 0)
    ctx.spin_for(0.3)
    op.stop_pub.publish(msgs.new("std_msgs/msg/Bool", data=True))
    ctx.spin_for(0.2)
    assert op.twists[-1].linear.x == 0.0 and node.sim.leg_rpm_cmd == 0.0
    diag = [d.status[0] for d in op.diags if d.status[0].name.startswith("atomic")]
    assert diag[-1].level == 2 and "link_safe_stop" in diag[-1].message
    op.pulse(ctx, 1)
    ctx.spin_for(0.5)
    assert op.twists[-1].linear.x == 0.0 and len(node.ctrl.started) == 3
    op.reset_pub.publish(msgs.new("std_msgs/msg/Bool", data=True))
    ctx.spin_for(0.2)       # the link fault is reset, but the system stop (same link source) holds
    assert node.ctrl.fault is not None and node.ctrl.fault.value == "system_stop"
    assert op.twists[-1].linear.x == 0.0 and node.sim.leg_rpm_cmd == 0.0
    reset = op.create_client("std_srvs/srv/Trigger", "/safety/reset")
    assert reset.call(msgs.new("std_srvs/srv/Trigger_Request"), timeout_s=1.0).success
    ctx.spin_for(1.2)
    diag = [d.status[0] for d in op.diags if d.status[0].name.startswith("atomic")]
    assert node.ctrl.fault is None and diag[-1].level == 0


def test_topic_driver_with_the_tino_sim_node(cfg):
    from hri_sim.nodes.tino_node import TinoSimNode

    ctx = InprocContext()
    StopSupervisorNode(context=ctx)   # the stop authority (without it every actuator holds)
    sim = TinoSimNode(cfg=cfg, context=ctx)
    node = AtomicNode(cfg=cfg, context=ctx, parameters={"atomic.node.driver": "topic"})
    op = Operator(cfg["atomic"]["topics"], context=ctx)
    ctx.spin_for(0.2)
    x0 = sim.sim.base_pose()[0]
    op.pulse(ctx, 3, 0)
    ctx.spin_for(2.5)
    assert sim.sim.base_pose()[0] - x0 == pytest.approx(0.2 * 1.7, rel=0.03)
    assert node.ctrl.started and node.ctrl.fault is None


def test_tino_sim_rejects_a_non_finite_command_and_counts_it(cfg):
    """Counted in the runtime's per-(topic, cause) ``rejected`` (its ``loop_counters``, logged at
    shutdown); the last good command is kept."""
    from hri_sim.nodes.tino_node import TinoSimNode

    ctx = InprocContext()
    sim = TinoSimNode(cfg=cfg, context=ctx)
    pub = Node("pub", context=ctx).create_publisher("std_msgs/msg/Float64", cfg["atomic"]["topics"]["leg_rpm"], qos=10)
    pub.publish(msgs.new("std_msgs/msg/Float64", data=10.0))
    ctx.spin_for(0.05)
    pub.publish(msgs.new("std_msgs/msg/Float64", data=float("nan")))
    ctx.spin_for(0.05)
    assert sim.rejected_count() == sim.rejected_count(cfg["atomic"]["topics"]["leg_rpm"], "non_finite") == 1
    assert sim.loop_counters()["inputs_rejected"] == 1
    assert sim.sim.leg_rpm_cmd == 10.0


def test_malformed_leg_state_is_rejected(cfg):
    ctx = InprocContext()
    StopSupervisorNode(context=ctx)   # the stop authority (without it every actuator holds)
    node = AtomicNode(cfg=cfg, context=ctx, parameters={"atomic.node.driver": "topic"})
    pub = Operator(cfg["atomic"]["topics"], context=ctx)
    bad = msgs.new("sensor_msgs/msg/JointState", name=["leg"], position=[1.5], velocity=[], effort=[])
    p = pub.create_publisher("sensor_msgs/msg/JointState", cfg["atomic"]["topics"]["leg_state"], qos=10)
    p.publish(bad)
    ctx.spin_for(0.1)
    assert node.rejected_leg_state == 1
    pub.pulse(ctx, 3, 0)
    ctx.spin_for(0.2)
    assert pub.twists[-1].linear.x == 0.0      # no leg state: nothing moves


def test_a_press_before_the_supervisor_is_heard_is_refused_counted_logged_once_and_the_state_says_why(cfg):
    """Before the stop supervisor's first heartbeat atomic holds: its AtomicState says so
    (``system_stop`` = no_stop_heartbeat), each press is refused and counted once (its repeated
    messages are repeats, the idle stream only counted), the first refusal is one warning line
    on /rosout; once the supervisor is heard ``system_stop`` is '' and the next press moves."""
    from hri_safety.core.stop import NO_HEARTBEAT

    ctx = InprocContext()
    ctx.rosout_enabled = True                          # the node's log lines on /rosout
    node = AtomicNode(cfg=cfg, context=ctx, parameters={"atomic.node.driver": "sim"})
    op = Operator(cfg["atomic"]["topics"], context=ctx)
    logs = []
    op.create_subscription("rcl_interfaces/msg/Log", "/rosout",
                           lambda m: logs.append(m.msg) if m.name == "atomic" else None, qos=1000)
    ctx.spin_for(0.2)
    assert op.states[-1].system_stop == NO_HEARTBEAT and op.states[-1].fault == ""
    op.pulse(ctx, 3, 1)
    ctx.spin_for(0.6)                                  # past the re-arm: the next press is a new one
    op.pulse(ctx, 2)
    ctx.spin_for(0.2)
    c = node.ctrl.counts
    assert (c["rejected_system_stop"], c["repeat"] >= 4, c["idle_during_stop"] >= 1) == (2, True, True)
    refused = [line for line in logs if "rejected_system_stop" in line]
    assert len(refused) == 1 and NO_HEARTBEAT in refused[0] and "state 3.0" in refused[0], logs
    assert not node.ctrl.started and op.twists[-1].linear.x == 0.0 and op.twists[-1].angular.z == 0.0
    assert (op.states[-1].state, op.states[-1].locked, op.states[-1].system_stop) == (0, False, NO_HEARTBEAT)

    StopSupervisorNode(context=ctx)                    # the supervisor comes up: heard, nothing latched
    ctx.spin_for(0.2)
    assert (op.states[-1].system_stop, op.states[-1].fault) == ("", "")
    op.pulse(ctx, 3, 1)
    ctx.spin_for(0.1)
    assert [(m.state, m.direction) for m in node.ctrl.started] == [(3, 1)] and op.states[-1].locked
    assert len([line for line in logs if "rejected_system_stop" in line]) == 1
