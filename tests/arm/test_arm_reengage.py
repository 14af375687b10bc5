"""After the system stop's reset the teleop mode says what the arm does: while the operator still
holds the clutch it reads REENGAGE (the hand is ignored, the arm holds), and TRACK only after the
clutch was released and engaged again. The whole simulated chain (IK -> MuJoCo FR3), lockstep."""
from __future__ import annotations

import numpy as np

from hri_runtime.config.tree import load_robot_config
from hri_arm_teleop.core.pipeline import MODE_CODES, REENGAGE, REENGAGE_REASON
from hri_arm_teleop.nodes.robots import simulated_arm

from .control_trace import Trace

HAND0 = np.array([0.0, 1.2, 0.4])   # Unity frame
Q_ID = np.array([0.0, 0.0, 0.0, 1.0])
RATE_HZ = 50.0


def test_reset_with_the_clutch_still_held_reads_reengage_until_released_and_engaged_again():
    robot, pipe, ls = simulated_arm(load_robot_config("fr3"))
    trace = Trace.attach(pipe)
    hand = {"p": HAND0.copy(), "clutch": False}
    next_t = [0.0]

    def operator(t):
        if t + 1e-9 >= next_t[0]:
            pipe.on_hand(hand["p"], Q_ID, hand["clutch"], source_stamp=t)
            next_t[0] += 1.0 / RATE_HZ

    def run(dt):
        ls.run_until(pipe.clock() + dt, operator)

    hand["clutch"] = True
    run(0.5)
    assert pipe.mode == "TRACK" and pipe.clutch.engaged
    pipe.stop("console: SAFE STOP")                 # the operator keeps holding the clutch
    run(0.5)
    assert pipe.mode == "STOP"
    pipe.release()                                  # /safety/reset
    run(0.5)
    assert pipe.mode == REENGAGE and pipe.mode_reason == REENGAGE_REASON
    p_hold = robot.sim.ee_pose()[:3, 3].copy()
    hand["p"] = HAND0 + [0.0, 0.05, 0.0]            # the held hand moves 5 cm up: ignored
    run(1.0)
    assert pipe.mode == REENGAGE and not pipe.clutch.engaged
    assert np.linalg.norm(robot.sim.ee_pose()[:3, 3] - p_hold) < 1e-3
    a = trace.arrays()
    assert a["mode"][-1] == MODE_CODES[REENGAGE]
    hand["clutch"] = False                          # let go: the arm holds (nothing commanded)
    run(0.2)
    assert pipe.mode in ("TRACK", "HOLD") and pipe.mode_reason == ""
    hand["clutch"] = True                           # engage again and move 3 cm up
    run(0.1)
    assert pipe.mode == "TRACK" and pipe.clutch.engaged
    hand["p"] = HAND0 + [0.0, 0.08, 0.0]
    run(1.5)
    assert robot.sim.ee_pose()[2, 3] - p_hold[2] > 0.02       # it moves with the hand again


def test_a_reset_after_the_clutch_was_let_go_goes_straight_to_hold():
    robot, pipe, ls = simulated_arm(load_robot_config("fr3"))
    trace = Trace.attach(pipe)
    clutch = [True]
    next_t = [0.0]

    def operator(t):
        if t + 1e-9 >= next_t[0]:
            pipe.on_hand(HAND0, Q_ID, clutch[0], source_stamp=t)
            next_t[0] += 1.0 / RATE_HZ

    ls.run_until(0.5, operator)
    pipe.stop("console: SAFE STOP")
    clutch[0] = False
    ls.run_until(1.0, operator)
    pipe.release()
    ls.run_until(1.5, operator)
    assert pipe.mode in ("TRACK", "HOLD") and not pipe.clutch.awaiting_release
    assert REENGAGE not in {k for k, v in MODE_CODES.items() if v in set(trace.arrays()["mode"])}


def test_the_mode_topic_reads_reengage_after_the_reset_through_the_nodes():
    """The nodes: VR packets over UDP with the clutch held, a stop request to the supervisor,
    /safety/reset while the clutch is still held: /teleop/mode goes TRACK, STOP, REENGAGE (with
    the reason), and TRACK again only after the clutch was let go and pressed again."""
    import socket

    from hri_runtime import msgs
    from hri_runtime.inproc import InprocContext
    from hri_runtime.node import Node
    from hri_arm_teleop.core import vr_packet as vp
    from hri_arm_teleop.nodes.arm_teleop_node import ArmTeleopNode
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    ctx = InprocContext()
    StopSupervisorNode(context=ctx)
    node = ArmTeleopNode(cfg=load_robot_config("fr3", overrides=["teleop.output=joint"]), context=ctx,
                         parameters={"teleop.vr.port": 0})
    probe = Node("probe", context=ctx)
    modes = []
    probe.create_subscription("hri_interfaces/msg/TeleopMode", "/teleop/mode",
                              lambda m: modes.append((m.mode, m.reason)), qos=10)
    stop = probe.create_publisher("hri_interfaces/msg/StopRequest", "/safety/stop_request", qos=10)
    reset = probe.create_client("std_srvs/srv/Trigger", "/safety/reset")
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    seq = [0]

    def hand(seconds, clutch):
        for _ in range(int(round(seconds * RATE_HZ))):
            seq[0] += 1
            pkt = vp.ControllerPose(seq[0], seq[0] / RATE_HZ, tuple(HAND0), (0, 0, 0, 1), clutch=clutch)
            tx.sendto(vp.encode(pkt), node.vr_address)
            ctx.spin_for(1.0 / RATE_HZ)

    try:
        ctx.spin_for(0.2)
        hand(0.5, True)
        assert modes[-1][0] == "TRACK"
        stop.publish(msgs.new("hri_interfaces/msg/StopRequest", source="console", reason="SAFE STOP"))
        hand(0.5, True)
        assert modes[-1][0] == "STOP"
        assert reset.call(msgs.new("std_srvs/srv/Trigger_Request"), timeout_s=1.0).success
        hand(0.5, True)
        assert modes[-1] == (REENGAGE, REENGAGE_REASON)
        assert node.pipe.mode == REENGAGE and not node.pipe.clutch.engaged
        hand(0.3, False)
        hand(0.3, True)
        assert modes[-1] == ("TRACK", "") and node.pipe.clutch.engaged
        seen = [m for m, _ in modes]
        i = seen.index("STOP")
        assert seen[i:].index(REENGAGE) < seen[i:].index("TRACK")      # never TRACK before the re-engage
    finally:
        tx.close()
