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


class FakeEvdevDevice:
    """Fake: stands in for an evdev InputDevice (no /dev/input here); replays injected events."""

    def __init__(self, events):
        self.events = list(events)

    def read_one(self):
        return self.events.pop(0) if self.events else None


class Ev:
    def __init__(self, code, value):
        self.type, self.code, self.value = 1, code, value


def test_evdev_source_with_injected_events(pulse_section):
    import logging
    from hri_pulse.nodes.gamepad_node import EvdevSource
    src = EvdevSource("Xbox", pulse_section["gamepad"]["evdev_buttons"], logging.getLogger("t"))
    src._codes = {307: "x", 310: "lb"}          # as open() builds them from evdev.ecodes
    src.dev = FakeEvdevDevice([Ev(310, 1), Ev(307, 1)])
    gm = GamepadMapper(GamepadParams.from_config(pulse_section["gamepad"]))
    pressed = src.poll()
    assert pressed == {"x", "lb"} and gm.update(pressed) == Command(1, -1)
    src.dev = FakeEvdevDevice([Ev(307, 0)])
    assert src.poll() == {"lb"} and src.poll() is None


def test_evdev_missing_library_is_a_message(pulse_section, caplog):
    import logging
    from hri_pulse.nodes.gamepad_node import EvdevSource
    src = EvdevSource("Xbox", pulse_section["gamepad"]["evdev_buttons"], logging.getLogger("t"))
    with caplog.at_level("ERROR"):
        assert src.open() is False
    assert "gamepad:" in caplog.text


def test_core_retries_a_missing_device_once_per_period_and_cancels_on_loss(pulse_section):
    from hri_pulse.core import GamepadCore, PulseParams
    g = GamepadParams.from_config(pulse_section["gamepad"])
    core = GamepadCore(g, PulseParams.from_config(pulse_section["pulse"]), start_s=0.0)
    due = [t / 10 for t in range(0, 100) if core.retry_due(t / 10)]
    assert due == [k * g.retry_period_s for k in range(len(due))] and len(due) == int(9.9 / g.retry_period_s) + 1
    assert core.on_joy([0] * 11, 10.0) and not core.on_joy([1], 10.0)     # too short: counted
    jb = g.joy_buttons
    core.on_joy([1 if i == jb["y"] else 0 for i in range(11)], 10.0)     # Y: state 2
    states = [e.state for e in core.due(10.0)]
    core.device_lost(10.01)
    states += [e.state for e in core.due(10.2)]
    assert states[0] == 2 and all(s == 0 for s in states[1:]) and core.pulse.cancelled == 1
    assert core.status()["commands"] == 1 and core.status()["bad_joy"] == 1 and core.status()["device_losses"] == 1
