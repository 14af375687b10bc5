"""The whole arm teleop chain as one lockstep object: input -> clutch -> planner -> IK -> robot.

``ArmTeleopPipeline`` wires the core pieces into the seed-003 multi-rate loop:

    io (50 Hz)          newest hand sample -> clutch -> absolute target -> planner.submit
    planner (50 Hz)     CommandPlanner.update -> Bridge.planner_tick
    controller (100 Hz) Bridge.control_tick -> TeleopController.step (IK) -> joint guard -> robot

Inputs arrive from any thread through ``on_hand`` (VR controller pose, already validated and
sequence-checked by the receiver) or ``submit_ee_command`` (absolute PoseStamped targets from the
keyboard / gamepad / any publisher). ``tick()`` runs one base tick; a lockstep driver then
advances the simulator by one base period. Nodes call the same object from their timers.

Every controller tick is appended to ``trace`` (target vs measured EE, q, q_des, mode) for
metrics, the PNG and the MCAP.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from hri_arm_teleop.core.clutch import ClutchParams, ClutchTeleop
from hri_arm_teleop.core.frames import TrackingFrame, TrackingParams
from hri_arm_teleop.core.loop import (Bridge, CommandPlanner, LoopParams, MultiRateLoop,
                                      TeleopController)
from hri_arm_teleop.core.robot import RobotInterface
from hri_arm_teleop.core.types import JointCommand, LatestValue, RefMode

JointGuard = Callable[[JointCommand, Optional[JointCommand]], "tuple[Optional[JointCommand], str]"]


@dataclass
class HandInput:
    position: np.ndarray       # raw, in the tracking convention (Unity by default)
    quat_xyzw: np.ndarray
    clutch: bool
    stamp: float               # when it was received (injected clock)
    source_stamp: Optional[float] = None   # sender's stamp / sequence time for latency


@dataclass
class Trace:
    t: list = field(default_factory=list)
    target_p: list = field(default_factory=list)     # commanded EE position (nan in HOLD)
    ee_p: list = field(default_factory=list)         # measured EE position
    q: list = field(default_factory=list)
    q_des: list = field(default_factory=list)
    mode: list = field(default_factory=list)         # 1 TRACK, 0 HOLD
    engaged: list = field(default_factory=list)
    latency_s: list = field(default_factory=list)    # input stamp -> joint command out

    def arrays(self) -> dict:
        return {k: np.asarray(v, dtype=float) for k, v in self.__dict__.items()}


class ArmTeleopPipeline:
    def __init__(self, cfg: dict, robot: RobotInterface, ik, clock: Callable[[], float],
                 workspace_clamp=None, joint_guard: Optional[JointGuard] = None,
                 logger: Optional[logging.Logger] = None):
        t = cfg["teleop"]
        self.log = logger or logging.getLogger("hri_arm_teleop")
        self.clock = clock
        self.robot = robot
        self.params = LoopParams.from_config(t["loop"])
        self.tracking = TrackingFrame(TrackingParams.from_config(t["tracking"]))
        self.clutch = ClutchTeleop(ClutchParams.from_config(t["clutch"]), clock,
                                   workspace_clamp=workspace_clamp, logger=self.log)
        self.planner = CommandPlanner(self.params, clock, link_name=t["ik"]["ee_site"],
                                      in_frame=cfg["frames"]["base"])
        self.bridge = Bridge(clock, logger=self.log)
        self.controller = TeleopController(ik, clock)
        self.joint_guard = joint_guard
        self.hands: LatestValue[HandInput] = LatestValue()
        self.loop = MultiRateLoop(self.params.base_rate_hz)
        self.loop.add_task("io", self.params.io_decimation, self.io_task)
        self.loop.add_task("planner", self.params.planner_decimation, self.planner_task)
        self.loop.add_task("controller", self.params.controller_decimation, self.controller_task)
        self.trace = Trace()
        self.guard_rejections: dict[str, int] = {}
        self._last_cmd: Optional[JointCommand] = None
        self._last_latency_source: Optional[float] = None
        self._state = robot.get_state()

    # ------------------------------------------------------------------ inputs (any thread)
    def on_hand(self, position, quat_xyzw, clutch: bool, source_stamp: Optional[float] = None,
                valid: bool = True) -> None:
        """A VR controller sample. ``valid=False`` (tracking lost) releases the clutch."""
        sample = HandInput(np.asarray(position, float), np.asarray(quat_xyzw, float),
                           bool(clutch) and valid, float(self.clock()), source_stamp)
        if not valid:
            sample.position = np.full(3, np.nan)
        self.hands.put(sample, sample.stamp)

    def submit_ee_command(self, base_T_target: np.ndarray, source_stamp: Optional[float] = None):
        """An absolute EE target (keyboard /ee_command). Stale after ``command_max_age_s``."""
        self.planner.submit(base_T_target, source_stamp=source_stamp)

    # ------------------------------------------------------------------ tasks
    def io_task(self) -> None:
        sample, stamp = self.hands.take()
        if sample is None:
            return
        base_T_hand = None
        if np.all(np.isfinite(sample.position)) and np.all(np.isfinite(sample.quat_xyzw)) \
                and abs(np.linalg.norm(sample.quat_xyzw) - 1.0) < 1e-3:
            base_T_hand = self.tracking.base_T_hand(sample.position, sample.quat_xyzw)
        out = self.clutch.update(base_T_hand, sample.clutch, self._state.base_T_ee)
        if out.target is not None:
            # the held target is re-submitted while packets flow: TRACK on the held pose; when
            # the link stops, the command goes stale after command_max_age_s and the loop HOLDs.
            self.planner.submit(out.target, received_s=stamp, source_stamp=sample.source_stamp)

    def planner_task(self) -> None:
        self.bridge.planner_tick(self.planner.update())

    def controller_task(self) -> None:
        state = self.robot.get_state()
        self._state = state
        if state.base_T_ee is not None:
            self.planner.seed(state.base_T_ee)
        ref = self.bridge.control_tick()
        cmd = self.controller.step(state, ref)
        if self.joint_guard is not None:
            safe, why = self.joint_guard(cmd, self._last_cmd)
            if why != "ok":
                self.guard_rejections[why] = self.guard_rejections.get(why, 0) + 1
                if self.guard_rejections[why] == 1:
                    self.log.warning("safety checker: %s (%s); further ones are counted",
                                     "command rejected, holding" if safe is None else "command clamped", why)
            if safe is None:
                safe = self._last_cmd or JointCommand(stamp=cmd.stamp, q_des=state.q.copy())
            cmd = safe
        self.robot.send_command(cmd)
        self._last_cmd = cmd
        tr = self.trace
        tr.t.append(float(self.clock()))
        tr.target_p.append(ref.target.T[:3, 3].copy() if ref is not None else np.full(3, np.nan))
        tr.ee_p.append(state.base_T_ee[:3, 3].copy() if state.base_T_ee is not None else np.full(3, np.nan))
        tr.q.append(state.q.copy())
        tr.q_des.append(np.asarray(cmd.q_des, float).copy())
        tr.mode.append(1.0 if ref is not None else 0.0)
        tr.engaged.append(1.0 if self.clutch.engaged else 0.0)
        if cmd.source_stamp is not None and cmd.source_stamp != self._last_latency_source:
            self._last_latency_source = cmd.source_stamp
            tr.latency_s.append(float(self.clock()) - cmd.source_stamp)

    def tick(self) -> None:
        self.loop.tick()

    @property
    def mode(self) -> RefMode:
        return self.bridge.mode
