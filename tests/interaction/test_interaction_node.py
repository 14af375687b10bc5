"""The interaction node on the in-process runtime (fake clock, embedded MuJoCo FR3, lockstep)."""

import numpy as np
import pytest

import hri_core.se3  # noqa: F401  (required: a missing install fails here)

from hri_runtime import msgs  # noqa: E402
from hri_runtime.config.tree import load_robot_config  # noqa: E402
from hri_runtime.geometry import matrix_from_pose, pose_stamped_from_matrix  # noqa: E402
from hri_runtime.inproc import InprocContext  # noqa: E402
from hri_runtime.node import Node  # noqa: E402

from hri_interaction.nodes.interaction_node import InteractionNode  # noqa: E402
from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode  # noqa: E402


def state_dict(m) -> dict:
    """An InteractionState as a dict, its Count[] fields as {name: count}."""
    d = msgs.to_dict(m)
    for k in ("rejected", "events"):
        d[k] = {c["name"]: c["count"] for c in d[k]}
    return d


class Probe(Node):
    def __init__(self, t, **kw):
        super().__init__("probe", **kw)
        self.states, self.poses, self.js, self.tau = [], [], [], []
        self.create_subscription("hri_interfaces/msg/InteractionState", t["state"],
                                 lambda m: self.states.append(state_dict(m)), qos=10)
        self.create_subscription("geometry_msgs/msg/PoseStamped", t["modified_pose"], self.poses.append, qos=10)
        self.create_subscription("sensor_msgs/msg/JointState", t["sim_joint_states"], self.js.append, qos=10)
        self.create_subscription("std_msgs/msg/Float64MultiArray", t["torque"], lambda m: self.tau.append(np.array(m.data)), qos=1000)
        self.ref = self.create_publisher("geometry_msgs/msg/PoseStamped", t["reference"], qos=10)
        self.mode = self.create_publisher("std_msgs/msg/String", t["mode"], qos=10)
        self.push = self.create_publisher("geometry_msgs/msg/WrenchStamped", t["sim_push"], qos=10)
        self.gains = self.create_publisher("std_msgs/msg/Float64MultiArray", t["gains"], qos=10)


def wrench(fz):
    return msgs.new("geometry_msgs/msg/WrenchStamped",
                    wrench=msgs.new("geometry_msgs/msg/Wrench", force=msgs.new("geometry_msgs/msg/Vector3", z=fz)))


def stack(**node_kw):
    """fr3 config, its interaction topics, an in-process context with the stop supervisor (without
    it every actuator holds), the interaction node and a probe."""
    cfg = load_robot_config("fr3")
    t = cfg["interaction"]["topics"]
    ctx = InprocContext()
    StopSupervisorNode(context=ctx)
    extra = node_kw.pop("before", lambda ctx: None)(ctx)
    node = InteractionNode(cfg=cfg, context=ctx, **node_kw)
    return cfg, t, ctx, node, Probe(t, context=ctx), extra


def test_node_admittance_push_reference_and_bad_input():
    cfg, t, ctx, node, probe, _ = stack()
    ctx.spin_for(0.1)
    assert node.ticks == 100 and probe.states and probe.js
    st = probe.states[-1]
    assert all(np.isfinite(st[k]) for k in ("period_p50_us", "period_p99_us", "period_max_us"))
    assert all(np.all(np.isfinite(x)) for x in probe.tau)
    p0 = node.sim.ee_pose()[:3, 3].copy()
    probe.mode.publish(msgs.new("std_msgs/msg/String", data="admittance"))
    probe.push.publish(wrench(5.0))
    ctx.spin_for(2.0)
    st = probe.states[-1]
    assert st["mode"] == "admittance" and st["energy_violations"] == 0
    K = cfg["interaction"]["admittance"]["stiffness_diag"][5]
    T_mod = matrix_from_pose(probe.poses[-1])
    assert np.linalg.norm(T_mod[:3, 3] - node.engine.state()["world_T_d"][:3, 3]) == pytest.approx(5.0 / K, rel=0.02)
    assert node.sim.ee_pose()[2, 3] - p0[2] > 0.5 * 5.0 / K
    # release; a new reference 1 cm up in impedance mode is tracked
    probe.push.publish(wrench(0.0))
    probe.mode.publish(msgs.new("std_msgs/msg/String", data="impedance"))
    ctx.spin_for(2.0)
    T = node.engine.state()["world_T_d"].copy()
    T[2, 3] += 0.01
    probe.ref.publish(pose_stamped_from_matrix(T, ctx.now_s(), "base"))
    ctx.spin_for(1.5)
    assert node.sim.ee_pose()[2, 3] == pytest.approx(T[2, 3], abs=5e-4)
    # bad inputs: NaN reference, unknown mode, malformed gains -> rejected, counted, reported
    bad = pose_stamped_from_matrix(T, ctx.now_s(), "base")
    bad.pose.position.x = float("nan")
    probe.ref.publish(bad)
    probe.mode.publish(msgs.new("std_msgs/msg/String", data="warp"))
    probe.gains.publish(msgs.new("std_msgs/msg/Float64MultiArray", data=[1.0, 2.0]))
    probe.gains.publish(msgs.new("std_msgs/msg/Float64MultiArray", data=[-1.0] * 12))
    ctx.spin_for(0.2)
    rej = probe.states[-1]["rejected"]
    assert rej["reference_nonfinite"] == 1 and rej["mode_invalid"] == 1 and rej["gains_invalid"] == 2
    assert node.sim.ee_pose()[2, 3] == pytest.approx(T[2, 3], abs=5e-4)   # held
    assert all(np.all(np.isfinite(x)) for x in probe.tau)
    # valid gains are accepted (blended) and reported
    probe.gains.publish(msgs.new("std_msgs/msg/Float64MultiArray", data=[80.0] * 3 + [15000.0] * 3 + [5.0] * 3 + [350.0] * 3))
    ctx.spin_for(0.5)
    assert probe.states[-1]["stiffness_diag"] == pytest.approx([80.0] * 3 + [15000.0] * 3)


def test_upper_layer_stall_holds_the_last_reference_and_reports_stale():
    cfg, t, ctx, node, probe, _ = stack()
    ctx.spin_for(0.05)
    T = node.engine.state()["world_T_d"].copy()
    T[1, 3] += 0.005
    probe.ref.publish(pose_stamped_from_matrix(T, ctx.now_s(), "base"))
    ctx.spin_for(0.3)
    assert probe.states[-1]["reference_stale"] is False
    ctx.spin_for(1.0)                       # teleop silent for > reference_timeout_s
    assert probe.states[-1]["reference_stale"] is True
    p = node.sim.ee_pose()[:3, 3]
    assert p[1] == pytest.approx(T[1, 3], abs=5e-4)       # last reference held, no jump
    steps = np.abs(np.diff(np.array(probe.tau), axis=0)).max()
    assert steps < 5.0


def test_launch_include_parses_and_mode_parameter_selects_the_start_mode():
    from pathlib import Path

    from hri_runtime.launch.frontend import parse_launch_file

    path = Path(__file__).resolve().parents[2] / "src/hri_interaction/launch/interaction.launch.yaml"
    d = parse_launch_file(path, {"interaction_mode": "admittance"})
    (spec,) = d.nodes
    assert spec.pkg == "hri_interaction" and spec.exec == "interaction"
    assert spec.params["interaction.mode"] == "admittance" and not spec.missing_executable
    ctx = InprocContext()
    StopSupervisorNode(context=ctx)   # the stop authority (without it every actuator holds)
    node = InteractionNode(cfg=load_robot_config("fr3"), context=ctx, parameters=spec.params)
    assert node.engine.mode == "admittance" and node.driver == "sim"
    with pytest.raises(ValueError, match="interaction.mode"):
        InteractionNode(cfg=load_robot_config("fr3"), context=InprocContext(), parameters={"interaction.mode": "warp"})


class TorqueRobot(Node):
    """A stand-in for ros2_control: the MuJoCo FR3 applies /interaction/torque and publishes
    /joint_states every 1 ms (the node runs with driver topic)."""

    def __init__(self, cfg, **kw):
        super().__init__("fr3_sim_robot", **kw)
        from hri_sim.arm_sim import ArmSim

        t = cfg["interaction"]["topics"]
        self.names = cfg["joints"]["names"]
        self.sim = ArmSim.of_robot("fr3", np.deg2rad(cfg["joints"]["named_positions_deg"]["home"]), "torque",
                                   joint_names=self.names, timestep_s=1.0 / cfg["interaction"]["rate_hz"],
                                   ee_site=cfg["interaction"]["ee_site"])
        self.tau = None
        self.create_subscription("std_msgs/msg/Float64MultiArray", t["torque"], self.on_tau, qos=10)
        self.js = self.create_publisher("sensor_msgs/msg/JointState", t["joint_states"], qos=10)
        self.create_timer(1.0 / cfg["interaction"]["rate_hz"], self.step)

    def on_tau(self, msg):
        self.tau = np.array(msg.data)

    def step(self):
        if self.tau is not None:
            self.sim.step(self.tau)
        d = self.sim.data
        self.js.publish(msgs.new("sensor_msgs/msg/JointState", name=list(self.names),
                                 position=d.qpos[self.sim.qadr].tolist(), velocity=d.qvel[self.sim.vadr].tolist()))


def test_topic_driver_closes_the_loop_over_joint_states_and_torque():
    cfg, t, ctx, node, probe, robot = stack(parameters={"interaction.node.driver": "topic"},
                                            before=lambda ctx: TorqueRobot(load_robot_config("fr3"), context=ctx))
    p0 = robot.sim.ee_pose()[:3, 3].copy()
    ctx.spin_for(1.0)
    assert node.ticks > 900 and robot.tau is not None
    assert np.linalg.norm(robot.sim.ee_pose()[:3, 3] - p0) < 1e-3      # holds against gravity
    T = node.engine.state()["world_T_d"].copy()
    T[0, 3] += 0.01
    probe.ref.publish(pose_stamped_from_matrix(T, ctx.now_s(), "base"))
    ctx.spin_for(1.5)
    assert robot.sim.ee_pose()[0, 3] == pytest.approx(T[0, 3], abs=1e-3)
    bad = msgs.new("sensor_msgs/msg/JointState", name=["nope"], position=[0.0])
    robot.js.publish(bad)
    ctx.spin_for(0.05)
    assert probe.states[-1]["rejected"]["joint_state_invalid"] == 1
    # measured wrench on /wrench (EE frame) drives the admittance; NaN wrench -> hold, flagged
    probe.mode.publish(msgs.new("std_msgs/msg/String", data="admittance"))
    w = probe.create_publisher("geometry_msgs/msg/WrenchStamped", t["wrench"], qos=10)
    w.publish(wrench(5.0))
    ctx.spin_for(2.0)
    K = cfg["interaction"]["admittance"]["stiffness_diag"][5]
    assert node.engine.state()["lam"][5] == pytest.approx(5.0 / K, rel=0.01)
    w.publish(wrench(float("nan")))
    ctx.spin_for(0.1)
    assert "wrench_invalid" in probe.states[-1]["flags"] and probe.states[-1]["rejected"]["wrench_nonfinite"] == 1
