"""Gamepad mapping (the Tino VR design): face buttons X -> state 1, Y -> state 2, B -> state 3, A -> idle;
shoulder buttons add a direction (LB -1 left, RB +1 right) to the state pressed with them.

Input is the set of pressed button *names* (``a b x y lb rb``), from a ``sensor_msgs/Joy``
buttons array (``joy_buttons`` indices): the ROS 2 ``joy`` node's, or ``joy_evdev``'s without ROS
(core.evdev, the same arrays).
The (state, direction) value goes through the same ``RisingEdge`` and ``PulseGenerator`` as the
VR stream, so gamepad testing is VR behaviour. Two face buttons with states at once are
ambiguous: no command (counted).
"""
from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Set

from hri_runtime.parameter_library.typed import params_type

from hri_pulse.core.pulse import Command, Emission, PulseGenerator, PulseParams, RisingEdge


GamepadParams = params_type("pulse.gamepad")


class GamepadMapper:
    def __init__(self, params: GamepadParams):
        self.p = params
        self.edge = RisingEdge()
        self._idle_names = {n for n, s in params.face_states.items() if s == 0}
        self._prev_idle = False
        self.ambiguous = 0
        self.bad_joy = 0

    def pressed_from_joy(self, buttons: Sequence[int]) -> Optional[Set[str]]:
        """Joy buttons array -> pressed names; None (counted) if the array is too short."""
        try:
            return {n for n, i in self.p.joy_buttons.items() if buttons[i]}
        except (IndexError, TypeError):
            self.bad_joy += 1
            return None

    def update(self, pressed: Iterable[str], head_rad=(0.0, 0.0, 0.0)) -> Optional[Command]:
        """New button state -> a command on a rising edge (Command(0, 0) for the idle button)."""
        pressed = set(pressed)
        idle_now = bool(pressed & self._idle_names)
        idle_edge = idle_now and not self._prev_idle
        self._prev_idle = idle_now
        states = {self.p.face_states[n] for n in pressed if n in self.p.face_states and n not in self._idle_names}
        direction = sum(d for n, d in self.p.shoulder_directions.items() if n in pressed)
        direction = max(-1, min(1, direction))
        if len(states) > 1:
            self.ambiguous += 1
            self.edge.update(0, 0)
            state = 0
        else:
            state = states.pop() if states else 0
            if self.edge.update(state, direction):
                return Command(state, direction, tuple(head_rad))
        if idle_edge:
            return Command(0, 0, tuple(head_rad))
        return None


class GamepadCore:
    """The gamepad path without I/O: Joy buttons -> ``GamepadMapper`` -> ``PulseGenerator``."""

    def __init__(self, params: GamepadParams, pulse: PulseParams, start_s: float = 0.0):
        self.mapper = GamepadMapper(params)
        self.pulse = PulseGenerator(pulse, start_s=start_s)
        self.commands = 0

    def on_joy(self, buttons: Sequence[int], now_s: float) -> bool:
        """A ``sensor_msgs/Joy`` buttons array; False (counted ``bad_joy``) when it is too short."""
        pressed = self.mapper.pressed_from_joy(buttons)
        if pressed is None:
            return False
        self.on_buttons(pressed, now_s)
        return True

    def on_buttons(self, pressed: Iterable[str], now_s: float) -> None:
        cmd = self.mapper.update(pressed)
        if cmd is not None and self.pulse.request(cmd, now_s):
            self.commands += 1

    def due(self, now_s: float) -> List[Emission]:
        return self.pulse.due(now_s)

    def status(self) -> dict:
        return {"commands": self.commands, "debounced": self.pulse.debounced, "ambiguous": self.mapper.ambiguous,
                "bad_joy": self.mapper.bad_joy}
