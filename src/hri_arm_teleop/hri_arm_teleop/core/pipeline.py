"""The whole arm teleop chain as one lockstep object: input -> clutch -> planner -> IK -> robot.

``ArmTeleopPipeline`` wires the core pieces into the the FR3 keyboard teleop design's multi-rate loop:

    io (50 Hz)          newest hand sample -> clutch -> absolute target -> planner.submit
    planner (50 Hz)     CommandPlanner.update -> Bridge.planner_tick
    controller (100 Hz) Bridge.control_tick -> TeleopController.step (IK) -> joint guard -> robot

Inputs arrive from any thread through ``on_hand`` (VR controller pose, already validated and
sequence-checked by the receiver) or ``submit_ee_command`` (absolute PoseStamped targets from the
keyboard / gamepad / any publisher). ``tick()`` runs one base tick; a lockstep driver then
advances the simulator by one base period. Nodes call the same object from their timers.

Safety (``core.safety.SafetyGate``, ``hri_core.safety.SafetyChecker`` with the config limits):
every new target (clutch target, planner reference) is checked for the workspace box and NaN,
every joint command for joint position/velocity/acceleration, workspace and EE speed of its FK,
NaN and staleness. Clamp AND flag: the flagged tick sends the clamped command (a rejected one,
NaN or stale, the previous command), then the loop is in **SAFETY_HOLD**: the controller holds
that joint position, the planner and the clutch restart from the hold pose, one WARNING line
names the check, ``mode`` (and the node's /teleop/mode) reads ``SAFETY_HOLD`` and
``safety_holds`` / ``gate.flags`` count it. It ends on a deliberate operator action: the clutch
released and engaged again, or a new (different, valid, in-limits) absolute command. While
holding, a flagged hold command (a stop faster than the acceleration limit, a hold pose outside
the box) is sent as is: holding still is the safe action, a clamped stop would overshoot the hold
point (counted in ``hold_flagged``; a rejected one, NaN, holds the last good command).

The pipeline keeps no history: a live node runs it for hours. Each controller tick is offered to
``on_control`` (None by default: nothing is built) as a :class:`ControlSample` (target vs measured
EE, q, q_des, mode, latency); a test of the chain keeps them there. ``target`` is the latest
reference pose (what the ``arm_teleop`` node publishes; a run records the node's topics).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from hri_core import se3

from hri_arm_teleop.core.clutch import ClutchTeleop
from hri_arm_teleop.core.frames import TrackingFrame, pose_parts
from hri_arm_teleop.core.loop import (Bridge, CommandPlanner, JointShaper, LoopParams,
                                      MultiRateLoop, PoseController, TeleopController)
from hri_arm_teleop.core.robot import RobotInterface
from hri_arm_teleop.core.safety import SafetyGate
from hri_arm_teleop.core.types import JointCommand, LatestValue
from hri_arm_teleop.parameters_gen import TeleopParams
from hri_runtime.parameters_gen import FramesParams

CARTESIAN_FLAGS = frozenset(("workspace", "ee_speed"))   # q cannot be clamped for these: hold
SAFETY_HOLD = "SAFETY_HOLD"
OUTPUTS = ("cartesian", "joint")
SYSTEM_STOP = "STOP"          # the system stop (hri_safety): hold the current pose until released
REENGAGE = "REENGAGE"         # after a stop / safety hold: the clutch is still held and ignored
REENGAGE_REASON = "the clutch is still held: release it and engage again to move"
MODE_CODES = {"TRACK": 1.0, "HOLD": 0.0, SAFETY_HOLD: -1.0, SYSTEM_STOP: -2.0, REENGAGE: -3.0}   # ControlSample.mode


@dataclass
class HandInput:
    position: np.ndarray       # raw, in the tracking convention (Unity by default)
    quat_xyzw: np.ndarray
    clutch: bool
    stamp: float               # when it was received (injected clock)
    source_stamp: Optional[float] = None   # sender's stamp / sequence time for latency
    base_T_hand: Optional[np.ndarray] = None   # already in the base frame (the gamepad's hand)


@dataclass(frozen=True)
class ControlSample:
    """One controller tick, as offered to ``ArmTeleopPipeline.on_control``."""
    t: float
    target_p: np.ndarray      # commanded EE position (nan in HOLD)
    ee_p: np.ndarray          # measured EE position
    target_quat: np.ndarray   # commanded EE orientation, x y z w (nan in HOLD)
    ee_quat: np.ndarray       # measured EE orientation, x y z w
    q: np.ndarray
    q_des: np.ndarray         # nan for the cartesian output
    mode: float               # MODE_CODES: 1 TRACK, 0 HOLD, -1 SAFETY_HOLD, -2 STOP, -3 REENGAGE
    engaged: float
    latency_s: Optional[float]   # input stamp -> command out, once per new input stamp; else None


class ArmTeleopPipeline:
    def __init__(self, cfg: dict, robot: RobotInterface, ik, clock: Callable[[], float],
                 safety: Optional[SafetyGate] = None, logger: Optional[logging.Logger] = None,
                 output: Optional[str] = None):
        """``output``: ``joint`` | ``cartesian`` (default: config ``teleop.output``); cartesian
        needs no IK (``ik`` None) and a robot with ``send_pose(PoseCommand)``."""
        t = TeleopParams.from_tree(cfg)
        self.log = logger or logging.getLogger("hri_arm_teleop")
        self.clock = clock
        self.robot = robot
        self.params = LoopParams.from_tree(cfg)
        self.tracking = TrackingFrame(t.tracking)
        self.gate = safety
        self.clutch = ClutchTeleop(t.clutch, clock,
                                   workspace_clamp=self._clamp_target if safety is not None else None,
                                   logger=self.log)
        self.planner = CommandPlanner(self.params, clock, link_name=t.ik.ee_site,
                                      in_frame=FramesParams.from_tree(cfg).base)
        self.output = output or t.output
        if self.output not in OUTPUTS:
            raise ValueError(f"teleop.output must be one of {OUTPUTS}, got {self.output!r}")
        self.cartesian = self.output == "cartesian"
        # cartesian: no first-order hold here (the interaction loop's reference governor ramps
        # every new reference at 1 kHz); joint: spread over the planner period (see Bridge)
        self.bridge = Bridge(clock, logger=self.log,
                             spread_ticks=1 if self.cartesian else self.params.spread_ticks)
        from hri_core.safety import arm_limits

        if self.cartesian:
            self.controller = PoseController(clock)
        else:
            lim = arm_limits(cfg)
            self.controller = TeleopController(ik, clock, JointShaper(
                lim.v_max, lim.a_max, self.params.joint_limit_fraction,
                self.params.controller_period_s))
        self._planner_t: Optional[float] = None
        self.events = 0
        self.safety_hold: Optional[str] = None       # reason while in SAFETY_HOLD
        self.system_stop: Optional[str] = None       # reason while the system stop holds (STOP)
        self.system_stops = 0
        self.safety_holds = 0
        self.hold_flagged = 0
        self.rejected_commands: dict[str, int] = {}
        self._pending_flag: Optional[str] = None
        self._hold_cmd: Optional[np.ndarray] = None
        self.hands: LatestValue[HandInput] = LatestValue()
        self.loop = MultiRateLoop(self.params.base_rate_hz)
        self.loop.add_task("io", self.params.io_decimation, self.io_task)
        self.loop.add_task("planner", self.params.planner_decimation, self.planner_task)
        self.loop.add_task("controller", self.params.controller_decimation, self.controller_task)
        self.on_control: Optional[Callable[[ControlSample], None]] = None   # see module doc
        self._last_cmd: Optional[JointCommand] = None
        self.target: Optional[np.ndarray] = None     # the last controller tick's reference pose (None: HOLD)
        self.last_latency_source: Optional[float] = None   # of the last latency sample
        # a real robot may not have published its joint state yet (the node waits for it)
        self._state = robot.get_state() if getattr(robot, "has_state", True) else None

    # ------------------------------------------------------------------ inputs (any thread)
    def on_hand(self, position, quat_xyzw, clutch: bool, source_stamp: Optional[float] = None,
                valid: bool = True) -> None:
        """A VR controller sample. ``valid=False`` (tracking lost) releases the clutch."""
        sample = HandInput(np.asarray(position, float), np.asarray(quat_xyzw, float),
                           bool(clutch) and valid, float(self.clock()), source_stamp)
        if not valid:
            sample.position = np.full(3, np.nan)
        self.hands.put(sample, sample.stamp)

    def on_hand_pose(self, base_T_hand: np.ndarray, clutch: bool, source_stamp: Optional[float] = None) -> None:
        """A hand pose already in the robot base frame (the gamepad's virtual hand,
        ``core.gamepad.GamepadHand``): the same clutch, planner and limits as a VR sample."""
        T = np.array(base_T_hand, dtype=float)
        p, q = pose_parts(T)          # recorded as is; the clutch takes T itself (no tracking transform)
        sample = HandInput(p, q, bool(clutch), float(self.clock()), source_stamp, base_T_hand=T)
        self.hands.put(sample, sample.stamp)

    def submit_ee_command(self, base_T_target: np.ndarray, source_stamp: Optional[float] = None) -> bool:
        """An absolute EE target (keyboard /ee_command). Stale after ``command_max_age_s``.
        A non-finite / improper pose is rejected and counted (False); during a SAFETY_HOLD only a
        command different from the one held resumes (see module doc)."""
        T = np.asarray(base_T_target, dtype=float)
        if T.shape != (4, 4) or not np.all(np.isfinite(T)):
            return self._reject_command("nonfinite", "NaN/Inf in the pose")
        R = T[:3, :3]
        if not (np.allclose(R.T @ R, np.eye(3), atol=1e-6) and np.linalg.det(R) > 0):
            return self._reject_command("invalid_rotation", "not a proper rotation")
        if self.safety_hold is not None and self._hold_cmd is not None \
                and np.allclose(T, self._hold_cmd, atol=1e-9, rtol=0):
            return False   # the held command again (a 10 Hz publisher): not an operator action
        self.planner.submit(T, source_stamp=source_stamp)
        return True

    def _reject_command(self, cause: str, why: str) -> bool:
        self.rejected_commands[cause] = self.rejected_commands.get(cause, 0) + 1
        if self.rejected_commands[cause] == 1:
            self.log.warning("EE command rejected (%s: %s); the arm does not move for it; further "
                             "ones are counted", cause, why)
        return False

    # ------------------------------------------------------------------ safety
    def _clamp_target(self, p: np.ndarray):
        """The clutch's workspace hook: the checker's clamped position; a flag -> SAFETY_HOLD."""
        r = self.gate.check_target(p, float(self.clock()))
        if r.ok:
            return p, False
        self._pending_flag = f"target {r.detail}"
        return (r.q if r.q is not None else np.full(3, np.nan)), True

    def _last_sent_q(self) -> np.ndarray:
        if self._last_cmd is not None and not self.cartesian:
            return np.asarray(self._last_cmd.q_des, float)
        return np.asarray(self.robot.get_state().q, float)

    def _hold_pose(self, T_hold: np.ndarray) -> None:
        """Cartesian output: hold the pose ``T_hold`` and restart clutch, planner, bridge there."""
        self.controller.hold_at_pose(T_hold)
        self.clutch.safety_release(T_hold)
        self.planner.reseed(T_hold)
        self.bridge.reset()
        self._hold_cmd = None

    def _enter_safety_hold(self, reason: str, q_hold: np.ndarray) -> None:
        now = float(self.clock())
        first = self.safety_hold is None
        self.safety_hold = reason
        if self.cartesian:   # hold the pose last sent (the arm's reference), not a joint position
            T_last = self.controller.last_pose
            self._hold_pose(T_last if T_last is not None else np.asarray(self.robot.get_state().base_T_ee))
        else:
            self._hold_joints(q_hold)
        if first:
            self.safety_holds += 1
            self.log.warning("SAFETY_HOLD: %s at t=%.3f s; holding the joint position; release and "
                             "re-engage the clutch (or send a new command) to resume", reason, now)

    def _leave_safety_hold(self, why: str) -> None:
        if self.safety_hold is None:
            return
        self.log.info("safety hold cleared (%s) at t=%.3f s", why, float(self.clock()))
        self.safety_hold = None
        self._hold_cmd = None

    # ------------------------------------------------------------------ system stop
    def _hold_here(self) -> None:
        """Hold the measured joint position (the current pose) and restart clutch, planner and
        bridge from it: nothing queued before is ever resumed."""
        st = self.robot.get_state() if getattr(self.robot, "has_state", True) else None
        if self.cartesian:
            if st is None or st.base_T_ee is None:
                return
            self._hold_pose(np.asarray(st.base_T_ee, float))
            return
        q = np.asarray(st.q, float) if st is not None else (
            np.asarray(self._last_cmd.q_des, float) if self._last_cmd is not None else None)
        if q is None:
            return
        if self.gate is not None:
            self.gate.reset(q)
        self._hold_joints(q)

    def _hold_joints(self, q: np.ndarray) -> None:
        """Hold the joint position ``q``; clutch, planner and bridge restart from its pose."""
        self.controller.hold_at(q)
        T_hold = np.asarray(self.controller.ik.fk(q))
        self.clutch.safety_release(T_hold)
        self.planner.reseed(T_hold)
        self.bridge.reset()
        self._hold_cmd = None

    def stop(self, reason: str) -> None:
        """The system stop (docs/safety.md): HOLD at the current pose, zero reference velocity,
        every input ignored until :meth:`release`. ``mode`` reads ``STOP``."""
        first = self.system_stop is None
        self.system_stop = reason or "stop"
        if first:
            self.system_stops += 1
            self._hold_here()
            self.log.warning("STOP (%s) at t=%.3f s: holding the current pose until the system stop is "
                             "reset", self.system_stop, float(self.clock()))

    def release(self) -> None:
        """The system stop was reset: stay in HOLD where the arm is; the clutch must be released
        and engaged again (or a new absolute command sent) to move. While the operator still
        holds the clutch through the reset, ``mode`` reads ``REENGAGE`` (the hand is ignored)."""
        if self.system_stop is None:
            return
        self.system_stop = None
        self._hold_here()
        self.log.info("system stop released at t=%.3f s; HOLD until a new command", float(self.clock()))

    # ------------------------------------------------------------------ tasks
    def io_task(self) -> None:
        sample, stamp = self.hands.take()
        if sample is None or self.system_stop is not None:
            return
        base_T_hand = sample.base_T_hand
        if base_T_hand is None and np.all(np.isfinite(sample.position)) \
                and np.all(np.isfinite(sample.quat_xyzw)) and abs(np.linalg.norm(sample.quat_xyzw) - 1.0) < 1e-3:
            base_T_hand = self.tracking.base_T_hand(sample.position, sample.quat_xyzw)
        out = self.clutch.update(base_T_hand, sample.clutch,
                                 None if self._state is None else self._state.base_T_ee)
        if self._pending_flag is not None:      # the target check flagged this update
            reason, self._pending_flag = self._pending_flag, None
            self._enter_safety_hold(reason, self._last_sent_q())
            return
        if out.event == "engage" and self.safety_hold is not None:
            self._leave_safety_hold("clutch re-engaged")
        if out.target is not None and self.safety_hold is None:
            # the held target is re-submitted while packets flow: TRACK on the held pose; when
            # the link stops, the command goes stale after command_max_age_s and the loop HOLDs.
            self.planner.submit(out.target, received_s=stamp, source_stamp=sample.source_stamp)

    def planner_task(self) -> None:
        now = float(self.clock())
        if self.cartesian and now == self._planner_t:
            return                      # already planned at this instant (event-driven input)
        self._planner_t = now
        if self.system_stop is not None:
            self.planner.commands.clear()     # nothing submitted during a stop is resumed
            return
        if self.safety_hold is not None:
            item, _ = self.planner.commands.get()
            if item is None:
                return
            self._leave_safety_hold("new command")
        ref = self.planner.update()
        if ref is not None and self.gate is not None:
            r = self.gate.check_target(ref.target.T[:3, 3], float(self.clock()))
            if not r.ok:
                item, _ = self.planner.commands.get()
                self._enter_safety_hold(f"target {r.detail}", self._last_sent_q())
                self._hold_cmd = None if item is None else item[0]
                return
        self.bridge.planner_tick(ref)

    def controller_task(self) -> None:
        state = self.robot.get_state()
        self._state = state
        if state.base_T_ee is not None:
            self.planner.seed(state.base_T_ee)
        ref = self.bridge.control_tick()
        if self.safety_hold is not None or self.system_stop is not None:
            ref = None
        cmd = self.controller.step(state, ref)
        self.target = None if ref is None or ref.target is None else ref.target.T
        if self.cartesian:        # the interaction loop gates its torque (limits, workspace, speed)
            if self.system_stop is None:          # stopped: the loop holds on its own
                self.robot.send_pose(cmd)
        else:
            if self.gate is not None:
                cmd = self._gate_command(cmd, ref, state)
            self.robot.send_command(cmd)
        self._last_cmd = cmd
        latency = None
        if cmd.source_stamp is not None and cmd.source_stamp != self.last_latency_source:
            self.last_latency_source = cmd.source_stamp
            latency = float(self.clock()) - cmd.source_stamp
        if self.on_control is not None:
            self.on_control(self._sample(state, ref, cmd, latency))

    def _sample(self, state, ref, cmd, latency: Optional[float]) -> ControlSample:
        ee = state.base_T_ee
        return ControlSample(
            t=float(self.clock()),
            target_p=ref.target.T[:3, 3].copy() if ref is not None else np.full(3, np.nan),
            ee_p=ee[:3, 3].copy() if ee is not None else np.full(3, np.nan),
            target_quat=(np.asarray(se3.rot_to_quat(ref.target.T[:3, :3])) if ref is not None
                         else np.full(4, np.nan)),
            ee_quat=np.asarray(se3.rot_to_quat(ee[:3, :3])) if ee is not None else np.full(4, np.nan),
            q=state.q.copy(),
            q_des=np.full(len(state.q), np.nan) if self.cartesian else np.asarray(cmd.q_des, float).copy(),
            mode=MODE_CODES[self.mode] if self.mode != "TRACK" or ref is not None else MODE_CODES["HOLD"],
            engaged=1.0 if self.clutch.engaged else 0.0,
            latency_s=latency)

    def _gate_command(self, cmd: JointCommand, ref, state) -> JointCommand:
        now = float(cmd.stamp)   # the controller's time of this command: the same dt as its shaper
        if not self.gate.has_history:
            self.gate.reset(state.q)
        r = self.gate.check_command(cmd.q_des, now, ref.stamp if ref is not None else now)
        if r.ok:
            return cmd
        if ref is None:                       # already holding
            if r.rejected:
                q = r.q
            else:                             # holding still anyway (see module doc), counted
                self.hold_flagged += 1
                q = np.asarray(cmd.q_des, float)
                self.gate.reset(q)
            self.controller.hold_at(q)
            return JointCommand(cmd.stamp, q.copy())
        if r.rejected or CARTESIAN_FLAGS.intersection(r.violations):
            q = np.asarray(r.q if r.rejected else self._last_sent_q(), float)
            self.gate.reset(q)
        else:
            q = np.asarray(r.q, float)        # joint limits: the checker's clamped command
        self._enter_safety_hold(f"joint command {r.detail}", q)
        return JointCommand(cmd.stamp, q.copy(), source_stamp=cmd.source_stamp)

    def tick(self) -> None:
        self.loop.tick()

    def process_input(self) -> None:
        """Event-driven path (cartesian output): run I/O -> planner -> controller now for the
        sample just received, so the new reference leaves without waiting for the next base tick
        (docs/arm-teleop.md "Rate structure"). The base tick still runs all three (staleness,
        HOLD, the planner's shaping between packets)."""
        if not self.cartesian:
            return
        self.events += 1
        self.io_task()
        self.planner_task()
        self.controller_task()

    @property
    def mode(self) -> str:
        """What the arm does: ``STOP`` (system stop), ``SAFETY_HOLD``, ``REENGAGE`` (after a stop or
        a safety hold the clutch is still held: the hand is ignored, the arm holds, until the
        clutch is released and engaged again), else the bridge's ``TRACK`` / ``HOLD``."""
        if self.system_stop is not None:
            return SYSTEM_STOP
        if self.safety_hold is not None:
            return SAFETY_HOLD
        if self.clutch.awaiting_release:
            return REENGAGE
        return self.bridge.mode.value

    @property
    def mode_reason(self) -> str:
        """Why ``mode`` is ``STOP``, ``SAFETY_HOLD`` or ``REENGAGE``; "" otherwise."""
        mode = self.mode
        if mode == SYSTEM_STOP:
            return self.system_stop
        if mode == SAFETY_HOLD:
            return self.safety_hold
        return REENGAGE_REASON if mode == REENGAGE else ""
