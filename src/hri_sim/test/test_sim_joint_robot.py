"""The joint_robot node: per-joint position/effort commands, the safety checker in
between, acknowledged gains; bad input rejected and counted, silence = hold."""
import math

import numpy as np
import pytest

import mujoco  # noqa: F401  (required: a missing install fails here)

from hri_runtime import msgs  # noqa: E402
from hri_runtime.inproc import InprocContext  # noqa: E402

from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode  # noqa: E402
from hri_sim.nodes.joint_robot_node import JointRobotNode  # noqa: E402


@pytest.fixture
def robot():
    from hri_sim.pid_plants_mujoco import load_pid_config

    ctx = InprocContext()
    cfg = load_pid_config("fr3")
    StopSupervisorNode(cfg=cfg, context=ctx)                  # the stop authority: the robot holds without it
    node = JointRobotNode(robot="fr3", cfg=cfg, context=ctx)
    states = []
    node.create_subscription("sensor_msgs/msg/JointState", "/joint_states", states.append, qos=100)
    pub = node.create_publisher("sensor_msgs/msg/JointState", "/joint_commands", qos=10)
    return ctx, node, pub, states, cfg


def _cmd(names, position=(), effort=()):
    return msgs.new("sensor_msgs/msg/JointState", name=list(names), position=list(position), effort=list(effort))


def test_states_out_effort_and_position_commands_in(robot):
    ctx, node, pub, states, cfg = robot
    ctx.spin_for(0.1)
    assert len(states) >= 49 and list(states[-1].name) == node.names
    q0 = np.array(node.plant.q_rad)
    # joint 7 in effort mode (+1 N·m), the rest held where they are by the robot's PIDs
    for _ in range(100):
        pub.publish(_cmd(["fr3_joint7"], [math.nan], [1.0]))
        ctx.spin_for(0.002)
    q = np.array(node.plant.q_rad)
    assert q[6] > q0[6] + math.radians(1.0)
    assert np.max(np.abs(q[:6] - q0[:6])) < math.radians(1.0)
    assert states[-1].effort[6] == pytest.approx(1.0)
    # back to position mode: a target
    for _ in range(500):
        pub.publish(_cmd(["fr3_joint7"], [q0[6]]))
        ctx.spin_for(0.002)
    assert abs(node.plant.q_rad[6] - q0[6]) < math.radians(1.0)


def test_bad_commands_are_rejected_counted_and_move_nothing(robot):
    ctx, node, pub, states, cfg = robot
    ctx.spin_for(3.0)                  # the start: the robot's PIDs settle under gravity
    q0 = np.array(node.plant.q_rad)
    pub.publish(_cmd(["fr3_joint7", "fr3_joint6"], [0.1]))               # length mismatch
    pub.publish(_cmd(["knee"], [0.1]))                                     # unknown joint
    pub.publish(_cmd(["fr3_joint7"], [math.nan], [math.inf]))              # neither finite
    ctx.spin_for(0.2)
    causes = {c for (_, c) in node.rejected}
    assert {"length_mismatch", "unknown_joint", "non_finite"} <= causes
    assert np.max(np.abs(np.array(node.plant.q_rad) - q0)) < math.radians(0.5)


def test_a_silent_effort_command_holds_the_joint_and_flags_stale(robot):
    ctx, node, pub, states, cfg = robot
    pub.publish(_cmd(["fr3_joint7"], [math.nan], [1.0]))
    ctx.spin_for(cfg["safety"]["command_stale_after_s"] + 0.1)
    assert node.position_mode[6] and "stale" in node.flagged
    q = node.plant.q_rad[6]
    ctx.spin_for(0.5)
    assert abs(node.plant.q_rad[6] - q) < math.radians(1.0)            # held, not drifting


def test_system_stop_holds_every_joint_and_refuses_commands_until_reset(robot):
    from hri_safety.nodes.stop_listener import RESET_SERVICE, STOP_REQUEST_TOPIC, STOP_REQUEST_TYPE

    ctx, node, pub, states, cfg = robot
    stop = node.create_publisher(STOP_REQUEST_TYPE, STOP_REQUEST_TOPIC, qos=10)
    ctx.spin_for(3.0)                  # the start: the robot's PIDs settle under gravity
    for _ in range(50):                                        # joint 7 driven in effort mode
        pub.publish(_cmd(["fr3_joint7"], [math.nan], [1.0]))
        ctx.spin_for(0.002)
    assert not node.position_mode[6]
    stop.publish(msgs.new(STOP_REQUEST_TYPE, source="console", reason="operator pressed SAFE STOP"))
    ctx.spin_for(0.05)
    assert node.stop.stopped and node.position_mode.all() and "system_stop" in node.flagged
    held = np.array(node.q_ref)                                # where the stop found the joints
    for _ in range(250):                                       # still commanded: refused, counted
        pub.publish(_cmd(["fr3_joint7"], [math.nan], [5.0]))
        ctx.spin_for(0.002)
    assert node.rejected_count("joint_commands", "system_stop") >= 250 and np.array_equal(node.q_ref, held)
    assert np.max(np.abs(np.array(node.plant.q_rad) - held)) < math.radians(1.0)   # held there, not driven
    cli = node.create_client("std_srvs/srv/Trigger", RESET_SERVICE)
    ctx.spin_for(0.5)                                          # the request is not repeated: reset
    fut = cli.call_async(msgs.new("std_srvs/srv/Trigger_Request"))
    assert ctx.spin_until(fut.done, 1.0) and fut.result().success, fut.result().message
    ctx.spin_for(0.2)
    assert not node.stop.stopped
    pub.publish(_cmd(["fr3_joint7"], [math.nan], [1.0]))
    ctx.spin_for(0.01)
    assert not node.position_mode[6]                           # commands accepted again


def test_set_gains_is_acknowledged_or_refused():
    from hri_sim.nodes.joint_robot_node import SET_GAINS_SRV as TUNE_SRV
    from hri_sim.pid_plants_mujoco import load_pid_config

    ctx = InprocContext()
    node = JointRobotNode(robot="fr3", cfg=load_pid_config("fr3"), context=ctx)
    cli = node.create_client(TUNE_SRV, "/joint_robot/set_gains")
    for joint, gains, ok in (("fr3_joint7", [40.0, 0.0, 4.0], True), ("knee", [1.0, 0.0, 0.0], False),
                             ("fr3_joint7", [-1.0, 0.0, 0.0], False), ("fr3_joint7", [1.0, 2.0], False)):
        fut = cli.call_async(msgs.new(TUNE_SRV + "_Request", joint=joint, gains=gains))
        assert ctx.spin_until(fut.done, 1.0)
        assert fut.result().success is ok, (joint, gains)
    g = node.pids[6].gains
    assert (g.kp, g.ki, g.kd) == (40.0, 0.0, 4.0)
