"""What the ``arm_teleop`` node does with its inputs and on each base tick, without the middleware.

``TeleopCycle`` drives an :class:`hri_arm_teleop.core.pipeline.ArmTeleopPipeline`:

- inputs: a VR pose (``on_hand``; ``on_hand_now`` runs the chain at once, the event-driven
  cartesian path), a Joy sample into the gamepad's virtual hand (``on_joy``; a NaN or infinite
  axis is refused), an absolute EE target (``on_ee_command``; an invalid pose, None, is counted in
  ``rejected_commands``, the first one worth a log line), the system stop (``on_stop``);
- the base tick (``tick``): while the system stop holds (also before the first heartbeat, when no
  change is announced) the pipeline is stopped first; then the polled VR poses, the gamepad hand
  advanced to now, and one step (``step``: the lockstep step of a simulated arm, else the
  pipeline's tick). A robot without a state yet (``has_state`` false: a real arm that has not
  published) is not stepped. ``tick`` returns whether this was an I/O tick
  (every ``io_decimation`` base ticks), when the node publishes the arm's state;
- ``mode_change``: the ``(mode, reason)`` to publish when it differs from the last one published.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional, Sequence

import numpy as np


class TeleopCycle:
    def __init__(self, pipe, clock: Callable[[], float], step: Optional[Callable[[], None]] = None,
                 gamepad=None, has_state: Callable[[], bool] = lambda: True):
        """``step``: one base step (default the pipeline's ``tick``); ``gamepad``: a
        :class:`hri_arm_teleop.core.gamepad.GamepadHand` or None; ``has_state``: whether the robot
        has a measured state to start from."""
        self.pipe, self.clock, self.gamepad, self.has_state = pipe, clock, gamepad, has_state
        self.step = step or pipe.tick
        self.rejected_commands = 0
        self._last_mode: Optional[tuple[str, str]] = None

    # ------------------------------------------------------------------ inputs
    def on_hand(self, p) -> None:
        """A VR controller pose (``vr_packet.ControllerPose``) as the newest hand sample."""
        self.pipe.on_hand(p.position, p.quat_xyzw, p.clutch, source_stamp=p.stamp_s, valid=p.tracking_valid)

    def on_hand_now(self, p) -> None:
        """The event-driven path: the pose, then I/O -> planner -> controller at once."""
        self.on_hand(p)
        self.pipe.process_input()

    def on_joy(self, axes: Sequence[float], buttons: Sequence[int]) -> bool:
        """A Joy sample for the gamepad hand; False when it was refused (a non-finite axis)."""
        return self.gamepad.on_joy(list(axes), list(buttons), self.clock())

    def on_ee_command(self, base_T_target: Optional[np.ndarray]) -> bool:
        """An absolute target (None: the message was invalid, counted); True when it was the
        first invalid one (the node logs that one)."""
        if base_T_target is None:
            self.rejected_commands += 1
            return self.rejected_commands == 1
        self.pipe.submit_ee_command(base_T_target)
        return False

    def on_stop(self, stopped: bool, reason: str) -> None:
        if stopped:
            self.pipe.stop(reason)
        else:
            self.pipe.release()

    # ------------------------------------------------------------------ the base tick
    def tick(self, stopped: bool, reason: str, hands: Iterable = ()) -> bool:
        """One base tick; True on an I/O tick that stepped (publish the state then)."""
        if stopped:
            self.pipe.stop(reason)
        for p in hands:
            self.on_hand(p)
        if self.gamepad is not None:
            now = self.clock()
            base_T_hand, clutch = self.gamepad.step(now)
            self.pipe.on_hand_pose(base_T_hand, clutch, source_stamp=now)
        if not self.has_state():
            return False
        io_tick = self.pipe.loop.tick_count % self.pipe.params.io_decimation == 0
        self.step()
        return io_tick

    def mode_change(self) -> Optional[tuple[str, str]]:
        """``(mode, reason)`` when it differs from what this returned last, else None."""
        mode = (self.pipe.mode, self.pipe.mode_reason)
        if mode == self._last_mode:
            return None
        self._last_mode = mode
        return mode
