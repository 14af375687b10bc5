"""Every actuator node obeys the system stop (lockstep, simulated time; docs/safety.md).

atomic: motor 0 / twist 0, latched fault ``system_stop``; arm_teleop: HOLD at the current pose,
``/teleop/mode`` = STOP; interaction: frozen at the current pose. Each: within one node period of
the supervisor's state, within timeout + one period of its silence, and nothing moves after the
link returns until an explicit reset.
"""
from __future__ import annotations

import numpy as np
import pytest
from hri_runtime import msgs
from hri_runtime.config.tree import load_robot_config
from hri_runtime.geometry import matrix_from_pose, pose_stamped_from_matrix
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node

from hri_safety.core.stop import HEARTBEAT_TIMEOUT, StopParams
from hri_safety.nodes.stop_listener import RESET_SERVICE, STOP_REQUEST_TOPIC, STOP_REQUEST_TYPE
from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode


class Operator(Node):
    def __init__(self, **kw):
        super().__init__("operator", **kw)
        self.req = self.create_publisher(STOP_REQUEST_TYPE, STOP_REQUEST_TOPIC, qos=10)
        self.reset_cli = self.create_client("std_srvs/srv/Trigger", RESET_SERVICE)

    def stop(self, source="console"):
        self.req.publish(msgs.new(STOP_REQUEST_TYPE, source=source, reason="test"))

    def reset(self):
        assert self.reset_cli.call(msgs.new("std_srvs/srv/Trigger_Request"), timeout_s=1.0).success


def _kill_supervisor_and_wait(ctx, sup, stopped, params: StopParams) -> float:
    """Destroy the supervisor (its heartbeat goes silent); seconds until ``stopped()``."""
    t0 = ctx.now_s()
    sup.destroy_node()
    while not stopped():
        ctx.spin_for(0.001)
        assert ctx.now_s() - t0 < 5 * params.bound_s
    return ctx.now_s() - t0


# --------------------------------------------------------------------------- atomic (Tino)

class TinoProbe(Node):
    def __init__(self, topics, **kw):
        super().__init__("tino_probe", **kw)
        self.twists, self.rpms = [], []
        self.pulse_pub = self.create_publisher("geometry_msgs/msg/Twist", topics["pulse"], qos=10)
        self.create_subscription("geometry_msgs/msg/Twist", topics["cmd_vel"], self.twists.append, qos=10)
        self.create_subscription("std_msgs/msg/Float64", topics["leg_rpm"], lambda m: self.rpms.append(m.data), qos=10)

    def pulse(self, ctx, state, direction=0):
        tw = msgs.new("geometry_msgs/msg/Twist", linear=msgs.new("geometry_msgs/msg/Vector3", x=float(state)),
                      angular=msgs.new("geometry_msgs/msg/Vector3", z=float(direction)))
        for _ in range(3):
            self.pulse_pub.publish(tw)
            ctx.spin_for(0.04)
        self.pulse_pub.publish(msgs.new("geometry_msgs/msg/Twist"))


@pytest.fixture(scope="module")
def tino():
    return load_robot_config("tino")


def _tino_stack(tino):
    from hri_atomic_motion.nodes.atomic_node import AtomicNode

    ctx = InprocContext()
    sup = StopSupervisorNode(cfg=tino, context=ctx)
    at = AtomicNode(cfg=tino, context=ctx, parameters={"atomic.node.driver": "sim"})
    probe = TinoProbe(tino["atomic"]["topics"], context=ctx)
    op = Operator(context=ctx)
    ctx.spin_for(0.2)
    return ctx, sup, at, probe, op


def _base_moving(at) -> bool:
    return abs(at.sim.base_twist()[0]) > 1e-3 or abs(at.sim.base_twist()[1]) > 1e-3


def test_atomic_stops_at_once_latches_and_moves_again_only_after_reset(tino):
    ctx, sup, at, probe, op = _tino_stack(tino)
    period = tino["atomic"]["node"]["period_s"]
    probe.pulse(ctx, 3, 0)                       # base forward for atomic.base.move_s
    ctx.spin_for(0.4)
    assert probe.twists[-1].linear.x > 0.0
    n = len(probe.twists)
    op.stop()
    ctx.spin_for(period)
    zero = probe.twists[n:]
    assert zero and all(t.linear.x == 0.0 and t.angular.z == 0.0 for t in zero)
    assert at.sim.leg_rpm_cmd == 0.0 and at.ctrl.fault.value == "system_stop"
    ctx.spin_for(2.0)
    assert all(t.linear.x == 0.0 for t in probe.twists[n:]) and all(r == 0.0 for r in probe.rpms[-50:])
    probe.pulse(ctx, 3, 1)                       # refused while stopped
    ctx.spin_for(1.0)
    assert len(at.ctrl.started) == 1 and not _base_moving(at)
    op.reset()
    ctx.spin_for(0.1)
    assert at.ctrl.fault is None
    probe.pulse(ctx, 3, 1)
    ctx.spin_for(0.5)
    assert len(at.ctrl.started) == 2 and probe.twists[-1].angular.z != 0.0


def test_atomic_silence_stops_within_the_bound_and_stays_stopped_when_the_link_returns(tino):
    ctx, sup, at, probe, op = _tino_stack(tino)
    probe.pulse(ctx, 3, 0)
    ctx.spin_for(0.3)
    assert probe.twists[-1].linear.x > 0.0
    p = at.stop.params
    dt = _kill_supervisor_and_wait(ctx, sup, lambda: at.stop.stopped, p)
    assert dt <= p.bound_s + 1e-6 and at.stop.reason == HEARTBEAT_TIMEOUT
    ctx.spin_for(at.cfg["atomic"]["node"]["period_s"])
    assert probe.twists[-1].linear.x == 0.0 and at.sim.leg_rpm_cmd == 0.0
    StopSupervisorNode(cfg=tino, context=ctx)    # the link / the supervisor is back, not stopped
    probe.pulse(ctx, 3, 1)
    ctx.spin_for(2.0)
    assert at.stop.stopped and len(at.ctrl.started) == 1 and not _base_moving(at)
    op.reset()
    ctx.spin_for(0.1)
    probe.pulse(ctx, 3, 1)
    ctx.spin_for(0.5)
    assert len(at.ctrl.started) == 2


# --------------------------------------------------------------------------- arm_teleop (FR3)

class ArmProbe(Node):
    def __init__(self, **kw):
        super().__init__("arm_probe", **kw)
        self.ee, self.modes = [], []
        self.create_subscription("geometry_msgs/msg/PoseStamped", "/ee_pose", self.ee.append, qos=10)
        self.create_subscription("hri_interfaces/msg/TeleopMode", "/teleop/mode", lambda m: self.modes.append(m.mode), qos=10)
        self.cmd = self.create_publisher("geometry_msgs/msg/PoseStamped", "/ee_command", qos=10)

    def p(self):
        return matrix_from_pose(self.ee[-1])[:3, 3]


@pytest.fixture(scope="module")
def fr3():
    return load_robot_config("fr3", overrides=["teleop.output=joint"])   # the IK path (the cartesian stack: tests/arm/test_arm_stack.py)


def _arm_stack(fr3):
    from hri_arm_teleop.nodes.arm_teleop_node import ArmTeleopNode

    ctx = InprocContext()
    sup = StopSupervisorNode(cfg=fr3, context=ctx)
    node = ArmTeleopNode(cfg=fr3, context=ctx, parameters={"teleop.vr.enabled": False})
    probe = ArmProbe(context=ctx)
    op = Operator(context=ctx)
    ctx.spin_for(0.1)
    return ctx, sup, node, probe, op


def _command(ctx, node, probe, T, seconds):
    for _ in range(int(round(seconds / 0.1))):
        probe.cmd.publish(pose_stamped_from_matrix(T, node.get_clock().now_s(), "fr3_base"))
        ctx.spin_for(0.1)


def test_arm_holds_the_current_pose_and_mode_shows_stop(fr3):
    ctx, sup, node, probe, op = _arm_stack(fr3)
    T0 = matrix_from_pose(probe.ee[-1])
    T1 = T0.copy()
    T1[2, 3] += 0.02                       # 2 cm up: still moving when the stop comes
    _command(ctx, node, probe, T1, 0.1)
    assert probe.modes[-1] == "TRACK"
    op.stop()
    ctx.spin_for(0.02)
    assert probe.modes[-1] == "STOP" and node.pipe.mode == "STOP"
    p_stop = probe.p()
    assert abs(p_stop[2] - T0[2, 3]) > 0.002 and abs(p_stop[2] - T1[2, 3]) > 0.002   # mid-way
    _command(ctx, node, probe, T1, 1.0)    # the operator keeps commanding: ignored
    assert np.linalg.norm(probe.p() - p_stop) < 0.01
    assert probe.modes[-1] == "STOP"
    op.reset()
    ctx.spin_for(1.0)                      # released: HOLD where it is, the old target is not resumed
    # (a safety flag raised before the stop keeps holding: SAFETY_HOLD, ended by a new command)
    assert probe.modes[-1] in ("HOLD", "SAFETY_HOLD") and np.linalg.norm(probe.p() - p_stop) < 0.01
    T2 = T1.copy()
    T2[0, 3] += 0.001                      # a new command moves it again
    _command(ctx, node, probe, T2, 2.0)
    assert probe.p()[2] == pytest.approx(T2[2, 3], abs=0.003)


def test_arm_silence_stops_within_the_bound_and_stays_stopped_until_reset(fr3):
    ctx, sup, node, probe, op = _arm_stack(fr3)
    T1 = matrix_from_pose(probe.ee[-1])
    T1[1, 3] += 0.05
    _command(ctx, node, probe, T1, 0.3)
    p = node.stop.params
    dt = _kill_supervisor_and_wait(ctx, sup, lambda: node.pipe.mode == "STOP", p)
    assert dt <= p.bound_s + 1e-6
    p_stop = probe.p()
    StopSupervisorNode(cfg=fr3, context=ctx)
    _command(ctx, node, probe, T1, 1.5)
    assert node.pipe.mode == "STOP" and np.linalg.norm(probe.p() - p_stop) < 0.01
    op.reset()
    ctx.spin_for(0.1)
    assert node.pipe.mode in ("HOLD", "SAFETY_HOLD")


# --------------------------------------------------------------------------- interaction (FR3)

class InteractionProbe(Node):
    def __init__(self, topics, **kw):
        super().__init__("interaction_probe", **kw)
        self.ref = self.create_publisher("geometry_msgs/msg/PoseStamped", topics["reference"], qos=10)


def test_interaction_freezes_at_the_current_pose_until_reset(fr3):
    from hri_interaction.nodes.interaction_node import InteractionNode

    ctx = InprocContext()
    sup = StopSupervisorNode(cfg=fr3, context=ctx)
    node = InteractionNode(cfg=fr3, context=ctx)
    probe = InteractionProbe(fr3["interaction"]["topics"], context=ctx)
    op = Operator(context=ctx)
    ctx.spin_for(0.05)
    T = node.sim.ee_pose().copy()
    frame = node.base_frame
    for _ in range(30):                    # a reference moving +x at 5 cm/s (each step within limits)
        T[0, 3] += 0.001
        probe.ref.publish(pose_stamped_from_matrix(T, ctx.now_s(), frame))
        ctx.spin_for(0.02)
    op.stop()
    ctx.spin_for(0.005)
    assert (node.engine.state()["frozen_reason"] or "").startswith("system stop")
    p_stop = node.sim.ee_pose()[:3, 3].copy()
    for _ in range(25):                    # references keep coming: refused
        T[0, 3] += 0.001
        probe.ref.publish(pose_stamped_from_matrix(T, ctx.now_s(), frame))
        ctx.spin_for(0.02)
    assert node.engine.state()["rejected"]["reference_during_stop"] == 25
    assert np.linalg.norm(node.sim.ee_pose()[:3, 3] - p_stop) < 0.005
    op.reset()
    ctx.spin_for(0.5)                      # released, no new reference: it does not resume
    assert node.engine.state()["frozen_reason"] is None
    assert np.linalg.norm(node.sim.ee_pose()[:3, 3] - p_stop) < 0.005
    p = node.stop.params
    dt = _kill_supervisor_and_wait(ctx, sup, lambda: (node.engine.state()["frozen_reason"] or "").startswith("system stop"), p)
    assert dt <= p.bound_s + 1e-6
