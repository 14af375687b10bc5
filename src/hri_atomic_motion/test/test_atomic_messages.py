"""The atomic node's messages: the leg state out and back in as a checked LegReading (malformed
ones refused), and AtomicState from the controller's status."""
import math

from hri_runtime import msgs

from hri_atomic_motion.core import AtomicController, AtomicParams, LegReading
from hri_atomic_motion.messages import atomic_state_msg, leg_state_msg, parse_leg_state
from hri_runtime.config.tree import load_robot_config


def js(names, position, velocity=()):
    return msgs.new("sensor_msgs/msg/JointState", name=list(names), position=list(position), velocity=list(velocity))


def test_a_leg_state_round_trips_and_a_missing_velocity_is_zero():
    assert parse_leg_state(leg_state_msg(1.5, -120, True, 42.5)) == LegReading(-120, True, 42.5)
    assert parse_leg_state(js(["leg_home_switch", "leg"], [0.0, 7.0])) == LegReading(7, False, 0.0)
    assert parse_leg_state(js(["leg", "leg_home_switch"], [3.0, 1.0], [math.nan, 0.0])) == LegReading(3, True, 0.0)


def test_malformed_leg_states_are_refused():
    for bad in (js(["leg"], [3.0]),                                   # no home switch
                js(["knee", "leg_home_switch"], [3.0, 0.0]),         # no leg
                js(["leg", "leg_home_switch"], [3.5, 0.0]),          # ticks are whole numbers
                js(["leg", "leg_home_switch"], [math.nan, 0.0]),
                js(["leg", "leg_home_switch"], [1e12, 0.0]),         # beyond any encoder
                js(["leg", "leg_home_switch"], [3.0])):              # fewer positions than names
        assert parse_leg_state(bad) is None, bad


def test_atomic_state_carries_the_status_and_the_system_stop_reason():
    ctrl = AtomicController(AtomicParams.from_config(load_robot_config("tino")["atomic"]))
    m = atomic_state_msg(2.25, ctrl.status(), "no heartbeat")
    assert (m.stamp.sec, m.stamp.nanosec) == (2, 250_000_000)
    assert (m.state, m.fault, m.system_stop, m.locked) == (0, "", "no heartbeat", ctrl.locked)
