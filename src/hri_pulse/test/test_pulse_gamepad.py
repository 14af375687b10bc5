import pytest
from hri_pulse.core import Command, GamepadMapper, GamepadParams


@pytest.fixture
def gm(pulse_section):
    return GamepadMapper(GamepadParams.from_config(pulse_section["gamepad"]))


@pytest.mark.parametrize("button,state", [("x", 1), ("y", 2), ("b", 3)])
def test_face_buttons(gm, button, state):
    assert gm.update({button}) == Command(state, 0)
    assert gm.update({button}) is None            # held: no repeat
    assert gm.update(set()) is None
    assert gm.update({button}) == Command(state, 0)


def test_a_is_idle(gm):
    assert gm.update({"a"}) == Command(0, 0)
    assert gm.update({"a"}) is None


@pytest.mark.parametrize("shoulder,direction", [("lb", -1), ("rb", 1)])
def test_shoulder_adds_direction(gm, shoulder, direction):
    assert gm.update({shoulder}) is None           # shoulder alone: no command
    assert gm.update({shoulder, "b"}) == Command(3, direction)


def test_two_states_at_once_are_ambiguous(gm):
    assert gm.update({"x", "y"}) is None and gm.ambiguous == 1


def test_joy_indices_and_short_array(gm):
    pressed = gm.pressed_from_joy([0, 0, 1, 0, 0, 1, 0, 0])   # X + RB on the Xbox layout
    assert pressed == {"x", "rb"}
    assert gm.update(pressed) == Command(1, 1)
    assert gm.pressed_from_joy([1]) is None and gm.bad_joy == 1


def test_core_joy_pulses_and_short_array(pulse_section):
    from hri_pulse.core import GamepadCore, PulseParams
    g = GamepadParams.from_config(pulse_section["gamepad"])
    core = GamepadCore(g, PulseParams.from_config(pulse_section["pulse"]), start_s=0.0)
    assert core.on_joy([0] * 11, 10.0) and not core.on_joy([1], 10.0)     # too short: counted
    jb = g.joy_buttons
    core.on_joy([1 if i == jb["y"] else 0 for i in range(11)], 10.0)     # Y: state 2
    states = [e.state for e in core.due(10.0)] + [e.state for e in core.due(10.2)]
    assert states[:4] == [2, 2, 2, 0] and not any(states[4:])         # one 3-cycle pulse, then idle
    assert core.status()["commands"] == 1 and core.status()["bad_joy"] == 1
