"""TeleopCycle on the simulated FR3 (the real pipeline, its lockstep step, simulated time): what
the arm_teleop node does per input and per base tick."""
from __future__ import annotations

import numpy as np
import pytest

from hri_arm_teleop.core import vr_packet as vp
from hri_arm_teleop.core.cycle import TeleopCycle
from hri_arm_teleop.core.gamepad import GamepadHand
from hri_arm_teleop.nodes.robots import simulated_arm
from hri_arm_teleop.parameters_gen import TeleopParams
from hri_runtime.config.tree import load_robot_config

CFG = load_robot_config("fr3", overrides=["teleop.output=joint"])


@pytest.fixture
def sim():
    robot, pipe, ls = simulated_arm(CFG)
    return pipe, robot, pipe.clock, ls


def test_io_ticks_are_every_io_decimation_and_the_mode_is_announced_once_per_change(sim):
    pipe, robot, clock, ls = sim
    cycle = TeleopCycle(pipe, clock, step=ls.step)
    n = pipe.params.io_decimation
    assert n > 1
    io = [cycle.tick(False, "") for _ in range(4 * n)]
    assert io == [i % n == 0 for i in range(4 * n)]
    assert pipe.loop.tick_count == 4 * n
    assert clock() == pytest.approx(4 * n * pipe.params.base_period_s)   # one base period per step
    assert cycle.mode_change() == ("HOLD", "")
    assert cycle.mode_change() is None
    cycle.tick(True, "operator")                         # stopped: the pipeline stops first
    assert cycle.mode_change() == ("STOP", "operator")
    cycle.on_stop(False, "")
    assert pipe.mode != "STOP"
    assert cycle.mode_change()[0] == pipe.mode


def test_invalid_ee_commands_are_counted_and_only_the_first_is_reported(sim):
    pipe, robot, clock, ls = sim
    cycle = TeleopCycle(pipe, clock, step=ls.step)
    assert cycle.on_ee_command(None) is True
    assert cycle.on_ee_command(None) is False
    assert cycle.rejected_commands == 2
    for _ in range(10):
        cycle.tick(False, "")
    T = robot.get_state().base_T_ee.copy()
    T[2, 3] += 0.002
    assert cycle.on_ee_command(T) is False
    for _ in range(20):
        cycle.tick(False, "")
    assert cycle.rejected_commands == 2
    assert pipe.mode == "TRACK"


def test_a_robot_without_state_is_not_stepped(sim):
    pipe, robot, clock, _ = sim
    steps = []
    cycle = TeleopCycle(pipe, clock, step=lambda: steps.append(1), has_state=lambda: False)
    assert cycle.tick(False, "") is False
    assert steps == [] and pipe.loop.tick_count == 0
    cycle.has_state = lambda: True
    assert cycle.tick(False, "") is True and steps == [1]


def test_vr_poses_and_the_gamepad_hand_reach_the_pipeline(sim):
    pipe, robot, clock, ls = sim
    cycle = TeleopCycle(pipe, clock, step=ls.step)
    pose = vp.ControllerPose(3, 0.5, (0.0, 1.2, 0.4), (0.0, 0.0, 0.0, 1.0), clutch=True)
    cycle.tick(False, "", [pose])
    assert pipe.hands.take()[0] is None              # the io task consumed it on this tick
    cycle.on_hand(pose)
    sample, _ = pipe.hands.take()
    assert sample.clutch and sample.source_stamp == 0.5
    assert np.allclose(sample.position, (0.0, 1.2, 0.4))

    gp = TeleopParams.from_tree(CFG).gamepad
    pad = TeleopCycle(pipe, clock, step=ls.step, gamepad=GamepadHand(gp, clock()))
    assert pad.on_joy([float("nan")], []) is False and pad.gamepad.rejected == 1
    buttons = [0] * (gp.clutch_button + 1)
    buttons[gp.clutch_button] = 1
    assert pad.on_joy([0.0] * 6, buttons) is True
    pad.tick(False, "")
    assert pipe.clutch.engaged
