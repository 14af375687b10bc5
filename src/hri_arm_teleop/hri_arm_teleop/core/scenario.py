"""A scripted operator: the hand draws a square on a vertical "whiteboard" in several clutch strokes.

The hand works in Unity's tracking frame (x right, y up, z forward). The square starts at the
hand's home position H0 and runs right, up, left, down (side ``side_m``) in the x-y plane; its
perimeter is split into ``strokes`` equal arc-length pieces. Stroke i:

1. clutch pressed with the hand still at H0 (``press_lead_s``),
2. the hand draws arc length [L i/N, L (i+1)/N] with speed ``speed_m_s``, ramped in and out with
   half-cosine profiles of ``ramp_s`` (speed(tau) = v (1 - cos(pi tau / R)) / 2 in the ramps),
3. held still for ``press_lead_s``, clutch released,
4. the hand returns to H0 in ``reposition_s`` with the clutch up (the "mouse lift").

So the robot, which maps only increments while engaged, draws the whole square once while the hand
keeps coming back to H0. Times are relative to the scenario start; ``settle_s`` before and after.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from hri_arm_teleop.parameters_gen import TeleopDemoParams



@dataclass(frozen=True)
class HandSample:
    position: np.ndarray      # m, Unity frame
    quat_xyzw: np.ndarray     # Unity frame
    clutch: bool
    drawing: bool             # the hand is moving along the square (for metrics)
    arc_m: float              # arc length of the square drawn so far


class SquareScenario(TeleopDemoParams):
    """Config ``teleop.demo`` (declared in hri_arm_teleop/parameters.yaml) and the hand's path."""

    # ------------------------------------------------------------------ geometry
    @property
    def perimeter_m(self) -> float:
        return 4.0 * self.side_m

    def square_point(self, arc_m: float) -> np.ndarray:
        """Offset (x right, y up) of the point at arc length ``arc_m`` along the square."""
        a = min(max(arc_m, 0.0), self.perimeter_m)
        s = self.side_m
        k = min(int(a // s), 3)
        r = a - k * s
        corners = [(0, 0), (s, 0), (s, s), (0, s), (0, 0)]
        (x0, y0), (x1, y1) = corners[k], corners[k + 1]
        f = r / s
        return np.array([x0 + f * (x1 - x0), y0 + f * (y1 - y0)])

    def corners_xy(self) -> np.ndarray:
        s = self.side_m
        return np.array([(0, 0), (s, 0), (s, s), (0, s), (0, 0)], dtype=float)

    # ------------------------------------------------------------------ timing
    @property
    def stroke_len_m(self) -> float:
        return self.perimeter_m / self.strokes

    @property
    def move_s(self) -> float:
        return self.stroke_len_m / self.speed_m_s + self.ramp_s

    @property
    def stroke_s(self) -> float:
        return 2 * self.press_lead_s + self.move_s + self.reposition_s

    @property
    def duration_s(self) -> float:
        return 2 * self.settle_s + self.strokes * self.stroke_s

    def _arc_in_move(self, tau: float) -> float:
        """Arc length after ``tau`` seconds of a stroke's motion (ramped constant speed)."""
        v, R, T = self.speed_m_s, self.ramp_s, self.move_s
        tau = min(max(tau, 0.0), T)

        def ramp_area(t):  # integral of (1 - cos(pi t / R)) / 2 from 0 to t, t in [0, R]
            return t / 2 - R / (2 * math.pi) * math.sin(math.pi * t / R)

        if R <= 0:
            return v * tau
        if tau <= R:
            return v * ramp_area(tau)
        if tau <= T - R:
            return v * (ramp_area(R) + (tau - R))
        return v * (ramp_area(R) + (T - 2 * R) + (ramp_area(R) - ramp_area(T - tau)))

    def sample(self, t: float) -> HandSample:
        home = np.array(self.home_unity_m, dtype=float)
        q = np.array(self.quat_unity, dtype=float)

        def at(offset_xy):
            return home + np.array([offset_xy[0], offset_xy[1], 0.0])

        t_rel = t - self.settle_s
        if t_rel < 0:
            return HandSample(home, q, False, False, 0.0)
        i = int(t_rel // self.stroke_s)
        if i >= self.strokes:
            return HandSample(home, q, False, False, self.perimeter_m)
        tau = t_rel - i * self.stroke_s
        a0 = i * self.stroke_len_m
        start = self.square_point(a0)
        lead, mv = self.press_lead_s, self.move_s
        if tau < lead:
            return HandSample(home, q, True, False, a0)
        if tau < lead + mv:
            arc = a0 + self._arc_in_move(tau - lead)
            return HandSample(at(self.square_point(arc) - start), q, True, True, arc)
        a1 = a0 + self._arc_in_move(mv)
        end = at(self.square_point(a1) - start)
        if tau < 2 * lead + mv:
            return HandSample(end, q, True, False, a1)
        f = (tau - 2 * lead - mv) / self.reposition_s
        f = 0.5 - 0.5 * math.cos(math.pi * min(max(f, 0.0), 1.0))
        return HandSample(end + f * (home - end), q, False, False, a1)


def path_error_to_polyline(points: np.ndarray, polyline: np.ndarray) -> np.ndarray:
    """Distance of each point (N, 3) to a 3-D polyline (M, 3) (cross-track error: how far a drawn
    path is from the ideal square's corners)."""
    d = np.full(len(points), np.inf)
    for a, b in zip(polyline[:-1], polyline[1:]):
        ab = b - a
        s = np.clip(((points - a) @ ab) / max(ab @ ab, 1e-300), 0.0, 1.0)
        d = np.minimum(d, np.linalg.norm(points - (a + s[:, None] * ab), axis=1))
    return d
