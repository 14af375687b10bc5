"""After the system stop's reset the teleop mode says what the arm does: while the operator still
holds the clutch it reads REENGAGE (the hand is ignored, the arm holds), and TRACK only after the
clutch was released and engaged again. The whole simulated chain (IK -> MuJoCo FR3), lockstep."""
from __future__ import annotations

import numpy as np

from hri_runtime.config import load_robot_config
from hri_arm_teleop.core.pipeline import MODE_CODES, REENGAGE, REENGAGE_REASON
from hri_arm_teleop.lockstep import build_sim_pipeline, sim_lockstep

HAND0 = np.array([0.0, 1.2, 0.4])   # Unity frame
Q_ID = np.array([0.0, 0.0, 0.0, 1.0])
RATE_HZ = 50.0


def test_reset_with_the_clutch_still_held_reads_reengage_until_released_and_engaged_again():
    pipe, robot, _ = build_sim_pipeline(load_robot_config("fr3"))
    ls = sim_lockstep(pipe, robot)
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
    a = pipe.trace.arrays()
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
    pipe, robot, _ = build_sim_pipeline(load_robot_config("fr3"))
    ls = sim_lockstep(pipe, robot)
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
    assert REENGAGE not in {k for k, v in MODE_CODES.items() if v in set(pipe.trace.arrays()["mode"])}
