"""JointController (hri_sim.core.joint_control) without a node: the humanoid arm's real MuJoCo
plant, time passed in. Modes, all-or-nothing commands, the hold rules and their flags, gains."""
import math

import numpy as np
import pytest

import mujoco  # noqa: F401  (required: a missing install fails here)

from hri_sim.core.joint_control import JointController, pid_gains_refusal
from hri_sim.pid_plants_mujoco import build_pid_robot, load_pid_config


@pytest.fixture
def arm():
    cfg = load_pid_config("humanoid_arm")
    plant = build_pid_robot("humanoid_arm", "s2", cfg)
    return JointController.from_config("humanoid_arm", cfg, plant), plant


def run(ctrl, plant, t0, seconds, **kw):
    """Steps for ``seconds`` of plant time from ``t0``; returns the time reached."""
    t = t0
    for _ in range(int(round(seconds / plant.dt_s))):
        ctrl.step(t, **kw)
        t += plant.dt_s
    return t


def test_gains_refusal_names_what_is_wrong():
    assert pid_gains_refusal([1.0, 0.0, 0.5]) is None
    for bad in ([1.0, 2.0], [-1.0, 0.0, 0.0], [math.nan, 0, 0], "abc", None):
        assert "3 finite numbers >= 0" in pid_gains_refusal(bad)


def test_a_bad_command_changes_nothing_and_names_its_cause(arm):
    ctrl, plant = arm
    before = (ctrl.position_mode.copy(), ctrl.q_ref.copy(), ctrl.cmd_t.copy())
    elbow = ctrl.names.index("elbow")
    assert ctrl.command(["elbow", "hand"], [0.1], [], 0.0)[0] == "length_mismatch"
    assert ctrl.command(["elbow", "knee"], [0.1, 0.1], [], 0.0) == ("unknown_joint", "unknown joint 'knee'")
    # all or nothing: the good first entry is not taken either
    assert ctrl.command(["elbow", "hand"], [0.2, math.nan], [0.0, math.inf], 0.0)[0] == "non_finite"
    after = (ctrl.position_mode, ctrl.q_ref, ctrl.cmd_t)
    assert all(np.array_equal(a, b) for a, b in zip(before, after)) and ctrl.q_ref[elbow] != 0.2


def test_position_target_is_clamped_and_effort_selects_effort_mode(arm):
    ctrl, plant = arm
    e = ctrl.names.index("elbow")
    assert ctrl.command(["elbow"], [100.0], [], 0.5) is None
    assert ctrl.position_mode[e] and ctrl.q_ref[e] == plant.q_max[e] and ctrl.cmd_t[e] == 0.5
    assert ctrl.command(["elbow"], [math.nan], [0.3], 0.6) is None
    assert not ctrl.position_mode[e] and ctrl.effort_cmd[e] == 0.3
    tau = ctrl.step(0.6)
    assert tau[e] == pytest.approx(0.3) and np.array_equal(ctrl.applied, tau) and ctrl.ticks == 1


def test_silence_in_effort_mode_holds_the_joint_and_flags_stale(arm):
    ctrl, plant = arm
    e = ctrl.names.index("elbow")
    ctrl.command(["elbow"], [math.nan], [0.0], 0.0)
    t = run(ctrl, plant, 0.0, ctrl.stale_after_s * 0.5)
    assert not ctrl.position_mode[e] and not ctrl.flags["stale"]
    t = run(ctrl, plant, t, ctrl.stale_after_s)
    assert ctrl.position_mode[e] and ctrl.flags["stale"] == 1 and "stale" in ctrl.flagged
    q_held = ctrl.q_ref[e]
    run(ctrl, plant, t, 1.0)
    assert abs(plant.q_rad[e] - q_held) < math.radians(2.0)          # held, not drifting
    ctrl.clear_flags()
    assert not ctrl.flagged and ctrl.flags["stale"] == 1                # the count stays


def test_an_effort_joint_near_a_limit_is_held_at_the_margin(arm):
    ctrl, plant = arm
    e = ctrl.names.index("elbow")
    t = 0.0
    for _ in range(int(3.0 / plant.dt_s)):                                # full effort towards q_max
        ctrl.command(["elbow"], [math.nan], [float(plant.effort_max[e])], t)
        ctrl.step(t)
        t += plant.dt_s
        if ctrl.flags["position"]:
            break
    assert ctrl.flags["position"] >= 1 and ctrl.position_mode[e]
    assert ctrl.q_ref[e] == pytest.approx(plant.q_max[e] - ctrl.limit_margin)


def test_system_stop_holds_every_joint_every_period(arm):
    ctrl, plant = arm
    ctrl.command(["elbow", "hand"], [math.nan, math.nan], [0.2, -0.1], 0.0)
    ctrl.on_system_stop(True)
    assert ctrl.position_mode.all() and "system_stop" in ctrl.flagged
    np.testing.assert_array_equal(ctrl.q_ref, plant.q_rad)
    ctrl.command(["hand"], [math.nan], [0.1], 0.01)                     # the node refuses these;
    ctrl.step(0.01, stopped=True)                                        # the period holds anyway
    assert ctrl.position_mode.all()
    ctrl.on_system_stop(False)                                           # a release moves nothing
    assert ctrl.flags["system_stop"] == 1


def test_a_diverged_simulation_and_a_rehome_return_to_the_base_pose(arm):
    ctrl, plant = arm
    ctrl.command(["elbow"], [math.nan], [0.2], 0.0)
    run(ctrl, plant, 0.0, 0.2)
    plant.diverged = True                                                # what MuJoCo's instability sets
    ctrl.step(0.2)
    assert "sim_diverged" in ctrl.flagged and ctrl.position_mode.all()
    np.testing.assert_allclose(ctrl.q_ref, plant.base_pose_rad)
    ctrl.command(["elbow"], [math.nan], [0.2], 0.3)
    run(ctrl, plant, 0.3, 0.2)
    ctrl.rehome()
    assert "rehomed" in ctrl.flagged and ctrl.position_mode.all()
    np.testing.assert_allclose(plant.q_rad, plant.base_pose_rad)


def test_a_checker_rejection_holds_every_joint_with_zero_torque(arm):
    ctrl, plant = arm
    ctrl.command(["elbow"], [math.nan], [0.2], 0.0)
    tau = ctrl.step(math.nan)                                            # no valid time: rejected
    assert ctrl.flags and not np.any(tau) and ctrl.position_mode.all()


def test_gains_by_joint_and_by_term_are_checked_before_anything_changes(arm):
    ctrl, plant = arm
    e = ctrl.names.index("elbow")
    assert ctrl.set_joint_gains("elbow", [40.0, 0.0, 4.0]) == (True, "elbow: kp=40 ki=0 kd=4")
    assert (ctrl.pids[e].gains.kp, ctrl.pids[e].gains.kd) == (40.0, 4.0)
    assert ctrl.set_joint_gains("knee", [1.0, 0.0, 0.0]) == (False, "unknown joint 'knee'")
    ok, why = ctrl.set_joint_gains("elbow", [-1.0, 0.0, 0.0])
    assert not ok and "finite numbers >= 0" in why and ctrl.pids[e].gains.kp == 40.0
    kd = ctrl.gain_term("kd")
    assert "values for" in ctrl.set_gain_term("kd", [1.0])
    refused = ctrl.set_gain_term("kd", [1.0] * (len(kd) - 1) + [-2.0])
    assert refused.startswith(ctrl.names[-1]) and ctrl.gain_term("kd") == kd    # nothing changed
    assert ctrl.set_gain_term("kd", [0.5] * len(kd)) is None and ctrl.gain_term("kd") == [0.5] * len(kd)
