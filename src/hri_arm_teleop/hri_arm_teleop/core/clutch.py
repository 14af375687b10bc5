"""Clutch-based relative ("mouse-pad") 6-DoF teleoperation on SE(3) (the clutch teleop note).

While the clutch is held, the robot target is the robot entry pose plus the *scaled increment* of
the hand since the entry. With hand entry pose (p_h0, R_h0), current hand pose (p_h, R_h), robot
entry pose (p_e0, R_e0), position scale s_p and orientation scale s_r:

mapping frame ``world`` (increments in the robot base frame, applied at the EE's position)::

    p_t = p_e0 + s_p (p_h - p_h0)
    R_t = exp(s_r log(R_h R_h0^T)) R_e0

mapping frame ``tool`` (increments in the hand's own frame, applied in the EE's frame)::

    p_t = p_e0 + s_p R_e0 R_h0^T (p_h - p_h0)
    R_t = R_e0 exp(s_r log(R_h0^T R_h))

Orientation increments are relative rotations scaled on the Lie algebra (log/exp of
``hri_core.se3``), never differences of Euler angles as in the clutch teleop note's pseudocode. (log takes
the principal branch: a hand rotation of more than 180 deg within one stroke wraps.)

On release the target is held. On engage the robot entry pose is the *held target* (config
``entry_pose: target``), so the first target after a re-engage equals the last one bit for bit:
re-engaging never makes the arm jump. (``measured`` uses the robot's measured EE pose instead, as
the clutch teleop note's pseudocode does; then the target jumps by the tracking error.) A held
target that the arm did not follow (farther than ``entry_max_error_m`` from the measured EE: the
interaction refused the stream as a reference jump after a stall, or a person holds the arm away)
is not a place to start from: that engagement starts from the measured EE, counted as
``reanchored``, so the operator's next stroke is followed again.

After the mapping, the target is rate limited (velocity clipping: at most ``max_linear_speed``
and ``max_angular_speed`` times the elapsed time from the previous target) and its position is
clamped into the workspace through the injected clamp (``hri_core.safety`` in the nodes). A clip
or clamp is flagged and counted, never silent.
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from hri_core import se3
from hri_arm_teleop.parameters_gen import TeleopClutchParams

WorkspaceClamp = Callable[[np.ndarray], "tuple[np.ndarray, bool]"]


#: Config ``teleop.clutch``, typed from its declaration (hri_arm_teleop/parameters.yaml).
ClutchParams = TeleopClutchParams


@dataclass
class ClutchOutput:
    """One update: the target (``base_T_target``, 4x4) or None before the first engagement."""

    target: Optional[np.ndarray]
    engaged: bool
    event: Optional[str] = None      # "engage" | "release" | None
    clipped: bool = False            # the velocity limit shortened this step
    clamped: bool = False            # the workspace clamp moved the target


@dataclass
class ClutchCounters:
    engagements: int = 0
    releases: int = 0
    velocity_clips: int = 0
    workspace_clamps: int = 0
    tracking_lost: int = 0
    reanchored: int = 0
    rejected_poses: dict = field(default_factory=dict)


def rate_limit_pose(prev: np.ndarray, T_raw: np.ndarray, dt: float, v_max: float,
                    w_max: float) -> tuple[np.ndarray, bool]:
    """Move from ``prev`` towards ``T_raw`` by at most ``v_max dt`` (position, straight line) and
    ``w_max dt`` (rotation angle, along the geodesic R_prev exp(s log(R_prev^T R_raw))).
    Returns (pose, clipped)."""
    dt = max(dt, 0.0)
    dp = T_raw[:3, 3] - prev[:3, 3]
    w = se3.so3_log(prev[:3, :3].T @ T_raw[:3, :3])  # body-frame rotation vector
    lin_max, ang_max = v_max * dt, w_max * dt
    n_p, n_w = float(np.linalg.norm(dp)), float(np.linalg.norm(w))
    if n_p <= lin_max and n_w <= ang_max:
        return T_raw, False
    T = np.eye(4)
    T[:3, 3] = prev[:3, 3] + (dp * (lin_max / n_p) if n_p > lin_max else dp)
    T[:3, :3] = prev[:3, :3] @ se3.so3_exp(w * (ang_max / n_w) if n_w > ang_max else w)
    return T, True


def _valid_pose(T) -> bool:
    if T is None:
        return False
    T = np.asarray(T)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        return False
    R = T[:3, :3]
    return bool(np.allclose(R.T @ R, np.eye(3), atol=1e-6) and np.linalg.det(R) > 0.0)


class ClutchTeleop:
    """The clutch state machine and SE(3) increment mapping (pure; injected clock)."""

    def __init__(self, params: ClutchParams, clock: Callable[[], float],
                 workspace_clamp: Optional[WorkspaceClamp] = None,
                 logger: Optional[logging.Logger] = None):
        self.params = params
        self._clock = clock
        self._clamp = workspace_clamp
        self._log = logger or logging.getLogger(__name__)
        self.counters = ClutchCounters()
        self.engaged = False
        self.target: Optional[np.ndarray] = None
        self._t_target: Optional[float] = None
        self._hand_entry: Optional[np.ndarray] = None
        self._robot_entry: Optional[np.ndarray] = None
        self._await_release = False   # after a safety release: engage only after the button is up
        self._ignored_press = False   # the last update's pressed button was ignored (awaiting its release)
        self._last_hand: Optional[np.ndarray] = None   # the hand pose of the last engaged update

    # ------------------------------------------------------------------ mapping
    def mapped_target(self, base_T_hand: np.ndarray) -> np.ndarray:
        """Target before rate limiting and clamping (requires an engagement)."""
        p = self.params
        Th0, Te0 = self._hand_entry, self._robot_entry
        Rh0, ph0 = Th0[:3, :3], Th0[:3, 3]
        Re0, pe0 = Te0[:3, :3], Te0[:3, 3]
        Rh, ph = base_T_hand[:3, :3], base_T_hand[:3, 3]
        T = np.eye(4)
        if p.mapping_frame == "world":
            T[:3, 3] = pe0 + p.position_scale * (ph - ph0)
            dR = se3.so3_exp(p.orientation_scale * se3.so3_log(Rh @ Rh0.T))
            T[:3, :3] = dR @ Re0
        else:
            T[:3, 3] = pe0 + p.position_scale * (Re0 @ (Rh0.T @ (ph - ph0)))
            dR = se3.so3_exp(p.orientation_scale * se3.so3_log(Rh0.T @ Rh))
            T[:3, :3] = Re0 @ dR
        return T

    def _rate_limit(self, T_raw: np.ndarray, dt: float) -> tuple[np.ndarray, bool]:
        if self.target is None:
            return T_raw, False
        return rate_limit_pose(self.target, T_raw, dt, self.params.max_linear_speed_m_s,
                               self.params.max_angular_speed_rad_s)

    def set_scales(self, position_scale: Optional[float] = None, orientation_scale: Optional[float] = None) -> None:
        """New ``position_scale`` / ``orientation_scale`` (checked as the config is), used from the
        next update on. An engaged stroke is re-anchored at the last hand pose and the current
        target, so the target goes on from where it is (a new scale never jumps the target by
        the stroke made so far)."""
        changes = {k: float(v) for k, v in (("position_scale", position_scale),
                                             ("orientation_scale", orientation_scale)) if v is not None}
        self.params = dataclasses.replace(self.params, **changes)
        if self.engaged and self._last_hand is not None and self.target is not None:
            self._hand_entry = self._last_hand.copy()
            self._robot_entry = self.target.copy()

    @property
    def awaiting_release(self) -> bool:
        """After a safety release the clutch button is still held: the hand is ignored until the
        operator lets go and engages again (the pipeline's ``REENGAGE``)."""
        return self._await_release and self._ignored_press

    def safety_release(self, base_T_hold: np.ndarray) -> None:
        """A safety hold: disengage, hold ``base_T_hold`` (where the robot stops) as the target, and
        engage again only after the operator has released the clutch button (a deliberate
        re-engage; the next stroke starts from the hold pose)."""
        if self.engaged:
            self.counters.releases += 1
        self.engaged = False
        self._await_release = True
        self.target = np.array(base_T_hold, dtype=float)
        self._t_target = float(self._clock())

    # ------------------------------------------------------------------ update
    def update(self, base_T_hand: Optional[np.ndarray], clutch_pressed: bool,
               base_T_ee_measured: Optional[np.ndarray]) -> ClutchOutput:
        """One step. ``base_T_hand`` None (tracking lost / invalid) releases the clutch."""
        now = float(self._clock())
        event = None
        hand_ok = _valid_pose(base_T_hand)
        if clutch_pressed and not hand_ok:
            self.counters.tracking_lost += 1
        want = bool(clutch_pressed and hand_ok)

        if self._await_release:
            if clutch_pressed:
                want = False
            else:
                self._await_release = False
        self._ignored_press = self._await_release and bool(clutch_pressed)
        if want and not self.engaged:
            entry = None
            measured_ok, reanchor = _valid_pose(base_T_ee_measured), False
            if self.params.entry_pose == "target" and self.target is not None:
                entry = self.target
                err = float(np.linalg.norm(self.target[:3, 3] - base_T_ee_measured[:3, 3])) if measured_ok else 0.0
                if err > self.params.entry_max_error_m:
                    entry, reanchor = None, True        # not followed: start from where the arm is
                    self.counters.reanchored += 1
                    self._log.warning("clutch: the held target is %.3f m from the arm (not followed); "
                                      "this stroke starts from the measured end effector", err)
            if entry is None and measured_ok:
                entry = np.array(base_T_ee_measured, dtype=float)
            if entry is None:  # no target yet and no valid measured pose: cannot engage safely
                self.counters.rejected_poses["no_entry_pose"] = \
                    self.counters.rejected_poses.get("no_entry_pose", 0) + 1
                return ClutchOutput(self.target, False)
            self._hand_entry = np.array(base_T_hand, dtype=float)
            self._robot_entry = np.array(entry, dtype=float)
            if self.target is None or reanchor:     # (the rate limit starts there too)
                self.target = self._robot_entry.copy()
                self._t_target = now
            self.engaged = True
            self.counters.engagements += 1
            event = "engage"
            self._log.info("clutch engaged at t=%.3f s", now)
        elif not want and self.engaged:
            self.engaged = False
            self.counters.releases += 1
            event = "release"
            self._log.info("clutch released at t=%.3f s: holding target", now)

        clipped = clamped = False
        if self.engaged:
            self._last_hand = np.array(base_T_hand, dtype=float)
            T_raw = self.mapped_target(self._last_hand)
            dt = now - (self._t_target if self._t_target is not None else now)
            T, clipped = self._rate_limit(T_raw, dt)
            if self._clamp is not None:
                p_clamped, clamped = self._clamp(T[:3, 3].copy())
                if clamped:
                    T[:3, 3] = p_clamped
            self.counters.velocity_clips += int(clipped)
            self.counters.workspace_clamps += int(clamped)
            self.target = T
            self._t_target = now
        else:
            self._t_target = now  # a held target starts its rate limit from now on re-engage
        return ClutchOutput(None if self.target is None else self.target.copy(), self.engaged,
                            event, clipped, clamped)
