"""The MuJoCo model of Tino (hri_sim.tino): encoder, home switch, motor, asymmetry, base kinematics."""
from __future__ import annotations

import math

import pytest
from hri_runtime.config.tree import load_robot_config

from hri_sim.tino import RPM_TO_RAD_S, TinoSim, TinoSimParams


@pytest.fixture
def sim():
    return TinoSim(TinoSimParams.from_config(load_robot_config("tino")["atomic"]))


def test_model_has_the_parts(sim):
    names = {sim.model.joint(i).name for i in range(sim.model.njnt)}
    assert {"leg", "wheel_left", "wheel_right", "head_pan", "head_tilt", "head_pitch"} <= names
    assert sim.model.actuator_gear[sim.model.actuator("leg_motor").id, 0] == sim.p.leg_gear_ratio


def test_encoder_ticks_and_home_switch(sim):
    sim.set_leg_angle(2 * math.pi * 200 / sim.leg.encoder_ticks_per_rev)
    assert sim.leg_ticks() == sim.leg.neutral_ticks + 200 and not sim.home_pressed()
    sim.set_leg_angle(0.0)
    assert sim.leg_ticks() == sim.leg.neutral_ticks and sim.home_pressed()


def test_motor_reaches_commanded_rpm_with_direction_asymmetry(sim):
    sim.set_leg_rpm(100.0)
    sim.step_for(0.3)
    fwd = sim.leg_motor_rpm()
    # forward speed = 100 · forward_efficiency minus the gravity droop of the speed servo (< 5 %)
    assert fwd == pytest.approx(100.0 * sim.p.forward_efficiency, rel=0.05)
    sim.set_leg_rpm(-100.0)
    sim.step_for(0.3)
    assert sim.leg_motor_rpm() == pytest.approx(-100.0 * sim.p.backward_efficiency, rel=0.05)


def test_motor_lag_is_first_order(sim):
    sim.set_leg_rpm(100.0)
    sim.step_for(sim.p.motor_time_constant_s)
    act = sim.data.act[0] / RPM_TO_RAD_S
    assert act == pytest.approx(100.0 * sim.p.forward_efficiency * (1 - math.exp(-1)), rel=0.05)


def test_differential_drive_kinematics(sim):
    sim.set_twist(0.2, 0.0)
    sim.step_for(1.0)
    assert sim.base_twist()[0] == pytest.approx(0.2, rel=1e-3)   # servo error of the wheel drive
    sim.set_twist(0.0, 0.0)
    sim.step_for(0.5)
    x, y, yaw = sim.base_pose()
    # symmetric ramps: displacement = v · T exactly
    assert x == pytest.approx(0.2, abs=1e-3) and abs(y) < 1e-9 and abs(yaw) < 1e-9
    sim.set_twist(0.0, 0.5)
    sim.step_for(1.0)
    sim.set_twist(0.0, 0.0)
    sim.step_for(0.5)
    assert sim.base_pose()[2] == pytest.approx(0.5, abs=2e-3)


def test_head_follows(sim):
    sim.set_head(0.3, -0.1, 0.2)
    sim.step_for(2.0)
    assert sim.head() == pytest.approx([0.3, -0.1, 0.2], abs=0.02)


def test_advance_to_steps_whole_timesteps_up_to_a_clock_and_never_back(sim):
    """The lockstep of the tino_sim node and the atomic node's sim driver: step to the node clock."""
    dt = sim.model.opt.timestep
    sim.advance_to(0.05)
    assert sim.t_s == pytest.approx(0.05)
    sim.advance_to(0.02)                  # behind the simulation: nothing
    assert sim.t_s == pytest.approx(0.05)
    sim.advance_to(0.05 + 0.4 * dt)       # less than half a step ahead: nothing
    assert sim.t_s == pytest.approx(0.05)
    sim.advance_to(0.05 + 3 * dt)
    assert sim.t_s == pytest.approx(0.05 + 3 * dt)
