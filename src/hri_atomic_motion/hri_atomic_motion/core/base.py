"""Base controller of the social robot: a ``geometry_msgs/Twist`` (v, ω) per update (the Tino VR design).

* State 0: full stop, every flag reset.
* State 1 "nudge": preparation / forward / return = ``nudge_phases_s`` at 0 / +v / −v.
* State 2: the coordination cycle, ``coordination_s`` standing still (holds the lock).
* State 3: ``move_s`` at ``move_linear_m_s`` with yaw rate ``−direction · move_angular_rad_s``
  (direction: forward 0, right 1, left −1; ROS yaw is positive to the left).
"""
from __future__ import annotations

from .framework import PhaseTable, to_ms
from .params import BaseParams


class BaseController:
    def __init__(self, p: BaseParams):
        self.p = p
        n = p.nudge_phases_s
        self.tables = {
            1: PhaseTable([("prepare", n[0]), ("forward", n[1]), ("return", n[2])]),
            2: PhaseTable([("coordinate", p.coordination_s)]),
            3: PhaseTable([("move", p.move_s)]),
        }
        self.reset_flags()

    def reset_flags(self) -> None:
        self.state: int | None = None
        self.direction = 0
        self.phase = "stopped"
        self._t0_ms = 0

    @property
    def busy(self) -> bool:
        return self.state is not None

    def start(self, state: int, direction: int, t_s: float) -> None:
        self.reset_flags()
        if state == 0:
            return
        self.state, self.direction, self._t0_ms = state, direction, to_ms(t_s)

    def update(self, t_s: float) -> tuple[float, float]:
        """(linear.x m/s, angular.z rad/s) for time ``t_s``."""
        if self.state is None:
            self.phase = "stopped"
            return 0.0, 0.0
        table = self.tables[self.state]
        i = table.phase_at(to_ms(t_s) - self._t0_ms)
        if i is None:
            self.reset_flags()
            return 0.0, 0.0
        self.phase = table.names[i]
        p = self.p
        if self.state == 1:
            return (0.0, p.nudge_linear_m_s, -p.nudge_linear_m_s)[i], 0.0
        if self.state == 2:
            return 0.0, 0.0
        return p.move_linear_m_s, -self.direction * p.move_angular_rad_s
