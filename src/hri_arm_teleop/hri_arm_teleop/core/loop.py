"""The multi-rate loop of the FR3 keyboard teleop design: one base rate, tasks as decimations, HOLD/TRACK bridge.

Per base tick k (period 1/base_rate_hz) the tasks run in a fixed order, each when
``k % decimation == 0``: I/O (receive commands, publish state) -> planner -> controller. Defaults
(config ``teleop.loop``): base 100 Hz, I/O 2 (50 Hz), planner 2 (50 Hz), controller 1 (100 Hz).
Single-threaded and deterministic; the only cross-thread hand-off is ``LatestValue`` (a
middleware callback thread writes the newest command, the planner reads it).

- ``CommandPlanner`` (50 Hz): the newest absolute EE command (PoseStamped on /ee_command, or the
  clutch target) becomes a TRACK ``TaskSpaceReference`` stamped now with horizon 0.25 s, if the
  command is younger than ``command_max_age_s`` (1.0 s); otherwise no reference (HOLD planner).
  The reference moves towards the command with bounded speed and acceleration
  (``ref_max_linear_speed_m_s`` / ``ref_max_angular_speed_rad_s``, ``ref_max_linear_accel_m_s2``
  / ``ref_max_angular_accel_rad_s2``; see ``shape_motion``): a keyboard press is an 8 mm step,
  without this the IK would ask for 0.8 m/s in one 10 ms tick and the safety checker (joint
  acceleration) would flag it and hold. It starts from the measured EE pose (``seed``), and after a
  HOLD from the last reference (where the robot holds) at rest, so a far first command is
  approached at the limit speed, never jumped to.
- ``Bridge``: validates references (finite, proper rotation, horizon > 0) and hands the controller
  the newest one; a missing or expired reference means HOLD. TRACK <-> HOLD transitions are
  logged once each. A new reference is spread over the planner period (``spread_ticks`` controller
  ticks, first-order hold on SE(3): T = interpolate(T_prev, T_ref, k / spread_ticks)), so the
  100 Hz joint command has no 50 Hz staircase (which would double the joint velocity every other
  tick and trip the acceleration check). The first tick already moves towards the new reference,
  so the packet -> joint command latency is unchanged.
- ``TeleopController`` (100 Hz): TRACK -> IK towards the target from the measured q; HOLD -> the
  joint position latched at the transition (the FR3 keyboard teleop design commands the measured q, which lets the arm
  sag under load one tick at a time; latching the last command holds it still).
"""
from __future__ import annotations

import dataclasses
import logging
from collections import deque
from typing import Callable, Optional

import numpy as np

from hri_arm_teleop.core.types import (CartesianTarget, JointCommand, LatestValue, PoseCommand,
                                       RefMode, RobotState, TaskSpaceReference)
from hri_core import se3
from hri_arm_teleop.parameters_gen import TeleopLoopParams

TRANSITIONS_KEPT = 64   # TRACK/HOLD changes kept in ``Bridge.transitions`` (the last ones)


class LoopParams(TeleopLoopParams):
    """Config ``teleop.loop`` (declared in hri_arm_teleop/parameters.yaml) and its derived periods."""

    @property
    def base_period_s(self) -> float:
        return 1.0 / self.base_rate_hz

    @property
    def controller_period_s(self) -> float:
        return self.controller_decimation / self.base_rate_hz

    @property
    def spread_ticks(self) -> int:
        """Controller ticks per planner tick (the Bridge's first-order hold)."""
        return max(1, round(self.planner_decimation / self.controller_decimation))

    def rate_hz(self, task: str) -> float:
        return self.base_rate_hz / getattr(self, f"{task}_decimation")


class MultiRateLoop:
    """Runs registered tasks as decimations of one base tick, in registration order."""

    def __init__(self, base_rate_hz: float):
        if base_rate_hz <= 0:
            raise ValueError("base_rate_hz must be > 0")
        self.base_period_s = 1.0 / base_rate_hz
        self.tasks: list[tuple[str, int, Callable[[], None]]] = []
        self.tick_count = 0
        self.runs: dict[str, int] = {}

    def add_task(self, name: str, decimation: int, fn: Callable[[], None]) -> None:
        if int(decimation) < 1:
            raise ValueError(f"task {name}: decimation must be >= 1")
        self.tasks.append((name, int(decimation), fn))
        self.runs[name] = 0

    def tick(self) -> None:
        k = self.tick_count
        for name, dec, fn in self.tasks:
            if k % dec == 0:
                fn()
                self.runs[name] += 1
        self.tick_count += 1


def _valid_transform(T) -> bool:
    T = np.asarray(T)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        return False
    R = T[:3, :3]
    return bool(np.allclose(R.T @ R, np.eye(3), atol=1e-6) and np.linalg.det(R) > 0
                and np.allclose(T[3], [0, 0, 0, 1]))


def _shape_vector(e: np.ndarray, v_prev: np.ndarray, dt: float, v_max: float, a_max: float,
                  goal_speed: float = 0.0):
    """One step towards the error vector ``e`` (goal - current) with |v| <= v_max, |dv/dt| <= a_max
    and discrete braking |v| <= a dt (sqrt(1/4 + 2 |e| / (a dt^2)) - 1/2) (steps shrinking by
    a dt^2 stop on the goal), raised to ``goal_speed`` (a moving goal is followed without lag).
    Returns (step, v)."""
    dist = float(np.linalg.norm(e))
    if dist == 0.0 and not np.any(v_prev):
        return np.zeros(3), np.zeros(3)
    adt = a_max * dt
    brake = adt * (np.sqrt(0.25 + 2.0 * dist / (adt * dt)) - 0.5)
    cap = min(v_max, max(brake, goal_speed))
    v_des = e / dt
    n = float(np.linalg.norm(v_des))
    if n > cap:
        v_des *= cap / n
    dv = v_des - v_prev
    ndv = float(np.linalg.norm(dv))
    if ndv > adt:
        dv *= adt / ndv
    v = v_prev + dv
    step = v * dt
    if float(np.linalg.norm(step)) >= dist and float(np.dot(step, e)) >= 0.0 \
            and float(np.linalg.norm(e / dt - v_prev)) <= adt * (1 + 1e-9):
        step = e.copy()   # lands on the goal within the acceleration limit
        v = e / dt
    return step, v


def shape_motion(prev: np.ndarray, goal: np.ndarray, v_prev: np.ndarray, w_prev: np.ndarray, dt: float,
                 v_max: float, w_max: float, a_max: float, alpha_max: float,
                 goal_prev: Optional[np.ndarray] = None):
    """Move the pose ``prev`` towards ``goal`` for ``dt`` with bounded speed and acceleration.

    Translation: the straight line, p += step(p_goal - p). Rotation: the geodesic in the world
    frame, R = exp(step(log(R_goal R^T))) R. Velocities (v [m/s], w [rad/s], world frame) are the
    state; ``goal_prev`` (the goal one step earlier) gives the goal's own speed. Returns
    (pose, v, w, limited) where ``limited`` says the goal was not reached."""
    if dt <= 0.0:
        return prev.copy(), v_prev, w_prev, True
    gv = gw = 0.0
    if goal_prev is not None:
        gv = float(np.linalg.norm(goal[:3, 3] - goal_prev[:3, 3])) / dt
        gw = float(np.linalg.norm(se3.so3_log(goal[:3, :3] @ goal_prev[:3, :3].T))) / dt
    dp, v = _shape_vector(goal[:3, 3] - prev[:3, 3], v_prev, dt, v_max, a_max, gv)
    e_w = np.asarray(se3.so3_log(goal[:3, :3] @ prev[:3, :3].T))
    dw, w = _shape_vector(e_w, w_prev, dt, w_max, alpha_max, gw)
    T = np.eye(4)
    T[:3, 3] = prev[:3, 3] + dp
    T[:3, :3] = np.asarray(se3.so3_exp(dw)) @ prev[:3, :3]
    reached = np.allclose(dp, goal[:3, 3] - prev[:3, 3], atol=1e-12, rtol=0) and \
        np.allclose(dw, e_w, atol=1e-12, rtol=0)
    if reached:
        T = np.array(goal, dtype=float)
    return T, v, w, not reached


class CommandPlanner:
    """Latest absolute EE command -> TRACK reference, or None when there is none / it is stale."""

    def __init__(self, params: LoopParams, clock: Callable[[], float], link_name: str,
                 in_frame: str = "world"):
        self.params = params
        self._clock = clock
        self.link_name = link_name
        self.in_frame = in_frame
        self.commands: LatestValue[tuple] = LatestValue()
        self.stale_count = 0
        self.rate_limited = 0
        self._last_T: Optional[np.ndarray] = None
        self._last_t: Optional[float] = None
        self._v = np.zeros(3)
        self._w = np.zeros(3)
        self._last_goal: Optional[np.ndarray] = None

    def seed(self, base_T_ee: np.ndarray) -> None:
        """Start the rate limit from the robot's measured EE pose (once, before any reference)."""
        if self._last_T is None:
            self._last_T, self._last_t = np.array(base_T_ee, dtype=float), float(self._clock())

    def reseed(self, base_T_ee: np.ndarray) -> None:
        """Forget the command and restart at rest from ``base_T_ee`` (after a safety hold: the
        command that was flagged is never resumed by itself)."""
        self.commands.clear()
        self._last_T, self._last_t = np.array(base_T_ee, dtype=float), float(self._clock())
        self._v, self._w = np.zeros(3), np.zeros(3)
        self._last_goal = None

    def submit(self, base_T_target: np.ndarray, received_s: Optional[float] = None,
               source_stamp: Optional[float] = None) -> None:
        """Called from any thread (middleware callback): store the newest command. Its age is
        counted from ``received_s`` (default: now on the injected clock)."""
        self.commands.put((np.array(base_T_target, dtype=float), source_stamp),
                          self._clock() if received_s is None else received_s)

    def update(self) -> Optional[TaskSpaceReference]:
        now = float(self._clock())
        item, stamp = self.commands.get()
        if item is None:
            self._v, self._w = np.zeros(3), np.zeros(3)
            return None
        T, source = item
        if now - stamp > self.params.command_max_age_s:
            self.stale_count += 1
            self._v, self._w = np.zeros(3), np.zeros(3)   # the controller holds: at rest
            self._last_goal = None
            return None
        if self._last_T is not None:
            p = self.params
            goal = T
            T, self._v, self._w, limited = shape_motion(
                self._last_T, goal, self._v, self._w, now - self._last_t, p.ref_max_linear_speed_m_s,
                p.ref_max_angular_speed_rad_s, p.ref_max_linear_accel_m_s2, p.ref_max_angular_accel_rad_s2,
                goal_prev=self._last_goal)
            self._last_goal = goal
            self.rate_limited += int(limited)
        self._last_T, self._last_t = T, now
        return TaskSpaceReference(
            stamp=now, horizon_s=self.params.horizon_s, mode=RefMode.TRACK, source_stamp=source,
            target=CartesianTarget(T=T, link_name=self.link_name, in_frame=self.in_frame,
                                   pos_tol_m=self.params.pos_tol_m,
                                   rot_tol_rad=self.params.rot_tol_rad))


class Bridge:
    """Planner -> controller hand-off with validation, expiry and one log line per transition."""

    def __init__(self, clock: Callable[[], float], logger: Optional[logging.Logger] = None,
                 spread_ticks: int = 1):
        self._clock = clock
        self._log = logger or logging.getLogger(__name__)
        self.spread_ticks = max(1, int(spread_ticks))
        self._latest: LatestValue[TaskSpaceReference] = LatestValue()
        self._ref_seen: Optional[TaskSpaceReference] = None
        self._from_T: Optional[np.ndarray] = None
        self._cur_T: Optional[np.ndarray] = None
        self._k = 0
        self.mode = RefMode.HOLD
        # the last TRANSITIONS_KEPT (t, mode) changes (a live node runs for hours); all are counted
        self.transitions: deque[tuple[float, RefMode]] = deque(maxlen=TRANSITIONS_KEPT)
        self.mode_changes = 0
        self.rejected: dict[str, int] = {}

    def _reject(self, cause: str) -> None:
        self.rejected[cause] = self.rejected.get(cause, 0) + 1
        if self.rejected[cause] == 1:
            self._log.warning("reference rejected (%s); further ones are only counted", cause)

    def planner_tick(self, ref: Optional[TaskSpaceReference]) -> bool:
        if ref is None:
            return False
        if not (np.isfinite(ref.stamp) and ref.horizon_s > 0):
            self._reject("bad_stamp_or_horizon")
            return False
        if ref.mode is RefMode.TRACK and (ref.target is None or not _valid_transform(ref.target.T)):
            self._reject("invalid_target")
            return False
        self._latest.put(ref, ref.stamp)
        return True

    def control_tick(self) -> Optional[TaskSpaceReference]:
        """The reference to track now, or None (HOLD)."""
        now = float(self._clock())
        ref, _ = self._latest.get()
        active = ref if (ref is not None and ref.mode is RefMode.TRACK and not ref.expired(now)) else None
        mode = RefMode.TRACK if active is not None else RefMode.HOLD
        if mode is not self.mode:
            self.mode = mode
            self.transitions.append((now, mode))
            self.mode_changes += 1
            if mode is RefMode.TRACK:
                self._log.info("TRACK: following the commanded end-effector pose (t=%.3f s)", now)
            else:
                why = "no reference" if ref is None else "reference expired (stale command)"
                self._log.info("HOLD: %s, holding the joint position (t=%.3f s)", why, now)
        if active is None:
            self._cur_T = None
            self._ref_seen = None
            return None
        if active is not self._ref_seen:      # a new reference: spread it from where we are
            self._ref_seen = active
            self._from_T = self._cur_T if self._cur_T is not None else active.target.T
            self._k = 0
        self._k = min(self._k + 1, self.spread_ticks)
        s = self._k / self.spread_ticks
        T = active.target.T if s >= 1.0 else np.asarray(se3.interpolate(self._from_T, active.target.T, s))
        self._cur_T = T
        if T is active.target.T:
            return active
        return dataclasses.replace(active, target=dataclasses.replace(active.target, T=T))

    def reset(self) -> None:
        """Drop the current reference (safety hold): HOLD until the planner sends a new one."""
        self._latest.clear()
        self._cur_T = None
        self._ref_seen = None


class JointShaper:
    """Per-joint speed and acceleration shaping of the IK output at the controller rate.

    With e = q_ik - q_prev, per joint: v_des = clip(e / dt, +-min(v_lim, v_brake(|e|))) with
    v_brake = a dt (sqrt(1/4 + 2 |e| / (a dt^2)) - 1/2) (discrete braking: it can stop on the target;
    raised to the target's own speed, so a moving target is followed without lag), v = v_prev + clip(v_des - v_prev, +-a_lim dt), q = q_prev + v dt (or q_ik when
    that step reaches it within the acceleration limit). The limits are ``fraction`` (``teleop.loop.joint_limit_fraction``)
    of the joint limits, so the safety checker (full limits) never has to flag normal tracking
    (near singular poses a smooth EE reference can still need large joint accelerations).
    ``limited`` counts the ticks where shaping changed the command."""

    def __init__(self, v_max: np.ndarray, a_max: np.ndarray, fraction: float, dt_s: float):
        self.v_lim = np.asarray(v_max, float) * fraction
        self.a_lim = np.asarray(a_max, float) * fraction
        self.dt = float(dt_s)
        self.q: Optional[np.ndarray] = None
        self.v: Optional[np.ndarray] = None
        self.q_target: Optional[np.ndarray] = None
        self.limited = 0

    def reset(self, q: np.ndarray) -> None:
        """At rest at ``q`` (start, hold)."""
        self.q = np.array(q, dtype=float)
        self.v = np.zeros_like(self.q)
        self.q_target = None

    def step(self, q_target: np.ndarray, dt_s: Optional[float] = None) -> np.ndarray:
        """``dt_s``: time since the previous command (default the period; the controller passes
        max(period, elapsed), the same rule as the safety checker's)."""
        q_target = np.asarray(q_target, float)
        if self.q is None:
            self.reset(q_target)
            return q_target.copy()
        dt = self.dt if dt_s is None else max(self.dt, float(dt_s))
        e = q_target - self.q
        adt = self.a_lim * dt
        # discrete braking: the speed from which steps shrinking by a dt^2 stop within |e|
        brake = adt * (np.sqrt(0.25 + 2.0 * np.abs(e) / (adt * dt)) - 0.5)
        v_target = np.abs(q_target - self.q_target) / dt if self.q_target is not None else 0.0
        cap = np.minimum(self.v_lim, np.maximum(brake, v_target))   # a moving target is followed
        self.q_target = q_target.copy()
        v_des = np.clip(e / dt, -cap, cap)
        v = self.v + np.clip(v_des - self.v, -adt, adt)
        step = v * dt
        land = (np.abs(step) >= np.abs(e)) & (step * e >= 0.0) & (np.abs(e / dt - self.v) <= adt * (1 + 1e-9))
        step = np.where(land, e, step)
        v = np.where(land, e / dt, v)
        q = self.q + step
        if not np.allclose(q, q_target, atol=1e-12, rtol=0):
            self.limited += 1
        self.q, self.v = q, v
        return q.copy()


class TeleopController:
    """TRACK: q_des = shaper(IK(target, seed = previous command)); HOLD: the q latched at the
    transition."""

    def __init__(self, ik, clock: Callable[[], float], shaper: Optional[JointShaper] = None):
        self.ik = ik
        self._clock = clock
        self.shaper = shaper
        self._q_hold: Optional[np.ndarray] = None
        self._q_last: Optional[np.ndarray] = None
        self._t_last: Optional[float] = None

    def hold_at(self, q: np.ndarray) -> None:
        """Latch the hold position (safety hold) and make it the IK seed of the next TRACK."""
        self._q_hold = np.array(q, dtype=float)
        self._q_last = self._q_hold.copy()
        if self.shaper is not None:
            self.shaper.reset(self._q_hold)

    def step(self, state: RobotState, ref: Optional[TaskSpaceReference]) -> JointCommand:
        now = float(self._clock())
        if ref is None:
            if self._q_hold is None:
                self._q_hold = (self._q_last if self._q_last is not None else state.q).copy()
                if self.shaper is not None:
                    self.shaper.reset(self._q_hold)
            q_des = self._q_hold
        else:
            self._q_hold = None
            result = self.ik.solve(ref.target.T, state.q if self._q_last is None else self._q_last)
            if self.shaper is None:
                q_des = result.q
            else:
                dt = None if self._t_last is None else now - self._t_last
                q_des = self.shaper.step(result.q, dt)
        self._q_last = np.array(q_des, dtype=float)
        self._t_last = now
        return JointCommand(stamp=now, q_des=self._q_last.copy(),
                            source_stamp=None if ref is None else ref.source_stamp)


class PoseController:
    """Cartesian output (``teleop.output: cartesian``): TRACK -> the reference pose itself (the
    interaction loop tracks it with its impedance law); HOLD -> the pose latched at the transition
    (the last pose sent, or the measured EE pose before any), so a stale link never moves the arm."""

    def __init__(self, clock: Callable[[], float]):
        self._clock = clock
        self._T_hold: Optional[np.ndarray] = None
        self.last_pose: Optional[np.ndarray] = None

    def hold_at_pose(self, T: np.ndarray) -> None:
        """Latch the hold pose (safety hold, system stop)."""
        self._T_hold = np.array(T, dtype=float)
        self.last_pose = self._T_hold.copy()

    def step(self, state: RobotState, ref: Optional[TaskSpaceReference]) -> PoseCommand:
        now = float(self._clock())
        if ref is None:
            if self._T_hold is None:
                self._T_hold = (self.last_pose if self.last_pose is not None
                                else np.array(state.base_T_ee, dtype=float))
            T = self._T_hold
        else:
            self._T_hold = None
            T = np.asarray(ref.target.T, dtype=float)
        self.last_pose = T.copy()
        return PoseCommand(stamp=now, T=T.copy(), source_stamp=None if ref is None else ref.source_stamp)
