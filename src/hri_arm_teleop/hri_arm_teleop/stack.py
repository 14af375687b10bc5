"""The arm stack in one process, lockstep: VR link -> clutch teleop -> 1 kHz interaction -> robot.

``build_stack(cfg)`` wires the pieces the launch files run as separate nodes:

    ArmVrReceiver (real UDP) -> ArmTeleopPipeline (clutch, planner; output cartesian)
        -> reference link (optionally jittered: lognormal delays, latest-value delivery)
        -> interaction engine (hri_interaction.engine: the C++ rt loop or its tick stepped from Python,
           the MuJoCo arm with torque motors inside) -> joint torques

``StackDriver`` advances simulated time one interaction tick (1 ms) at a time: the caller's
``before_tick(t)`` (operator packets, the scripted person), the event-driven input path
(every received packet goes through clutch -> planner -> reference at once), the teleop base
tick every ``1 / teleop.loop.base_rate_hz``, the link delivery, one engine tick, one sample of
the 1 kHz trace. Nothing waits on the wall clock except the loopback UDP hand-off.

``ScriptedPerson`` is the scenario's person (config ``teleop.scenario``): a step push of
``push_force_n`` for ``push_duration_s`` in the middle of stroke ``push_stroke`` (impedance), then,
after the square, admittance mode and a sine push (``admittance_push_*``), then impedance again.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from hri_arm_teleop.core.pipeline import ArmTeleopPipeline
from hri_arm_teleop.core.robot import RobotInterface
from hri_arm_teleop.core.types import JointCommand, PoseCommand, RobotState
from hri_arm_teleop.parameters_gen import TeleopScenarioParams, TeleopVrParams
from hri_arm_teleop.recording import Trace
from hri_core import se3
from hri_runtime.clock import SimClock
from hri_runtime.lockstep import Lockstep
from hri_runtime.parameters_gen import JointsParams
from hri_interaction.parameters_gen import InteractionParams, InteractionValidationParams

log = logging.getLogger("hri_arm_teleop.stack")


class ReferenceLink:
    """arm_teleop -> interaction: the pose reference, immediately or through a lognormal delay
    injector (``hri_interaction.core.passivity.DelayJitter``: per-sample delay, a sample older
    than the newest delivered one is dropped)."""

    def __init__(self, engine, jitter=None):
        self.engine = engine
        self.jitter = jitter
        self.sent = 0
        self.delivered = 0
        self.rejected = 0
        self._last = None
        self._items: dict = {}
        self.last_T: Optional[np.ndarray] = None
        self.last_source: Optional[float] = None
        self.last_delivery_t: Optional[float] = None
        self.latency_s: list = []          # reference sent -> delivered to the loop (link delay)

    def send(self, t: float, cmd: PoseCommand) -> None:
        self.sent += 1
        item = (np.array(cmd.T, float), cmd.source_stamp, t)
        if self.jitter is None:
            self._deliver(t, item)
        else:   # the injector carries an index; the items wait here until delivered or dropped
            self._items[self.sent] = item
            self.jitter.push(t, np.array([self.sent], float))

    def poll(self, t: float) -> None:
        if self.jitter is None:
            return
        key = self.jitter.get(t, None)
        if key is not None and key is not self._last:
            self._last = key
            k = int(key[0])
            item = self._items.get(k)
            for old in [j for j in self._items if j <= k]:   # delivered or overtaken: dropped
                del self._items[old]
            if item is not None:
                self._deliver(t, item)

    def _deliver(self, t: float, item) -> None:
        T, source, sent_t = item
        if self.engine.set_target(T):
            self.delivered += 1
            self.last_T, self.last_source, self.last_delivery_t = T, source, t
            self.latency_s.append(t - sent_t)
        else:
            self.rejected += 1


class EngineRobot(RobotInterface):
    """The arm as the teleop pipeline sees it (cartesian output): state from the interaction
    engine's snapshot, pose references out through the ``ReferenceLink``."""

    def __init__(self, engine, joint_names, link: ReferenceLink, clock: SimClock):
        self.engine = engine
        self.joint_names = tuple(joint_names)
        self.link = link
        self.clock = clock
        self._state: Optional[RobotState] = None
        self._state_t = None
        self.poses = 0

    def get_state(self) -> RobotState:
        t = self.clock()
        if self._state is None or self._state_t != t:   # one snapshot per tick
            s = self.engine.state()
            self._state = RobotState(stamp=t, q=np.asarray(s["q"]), dq=np.asarray(s["dq"]),
                                     base_T_ee=np.asarray(s["world_T_ee"]))
            self._state_t = t
        return self._state

    def send_pose(self, cmd: PoseCommand) -> None:
        self.poses += 1
        self.link.send(self.clock(), cmd)

    def send_command(self, cmd: JointCommand) -> None:   # pragma: no cover - joint output only
        raise RuntimeError("EngineRobot takes pose references (teleop.output cartesian)")


@dataclass
class Stack:
    cfg: dict
    pipe: ArmTeleopPipeline
    engine: object
    robot: EngineRobot
    link: ReferenceLink
    clock: SimClock

    @property
    def dt(self) -> float:
        return self.engine.dt


def scenario_config(cfg: dict) -> dict:
    """``cfg`` with the scenario's passivity filter (``teleop.scenario.passivity_filter``)."""
    import copy

    out = copy.deepcopy(cfg)
    out["interaction"]["passivity"]["filter"] = TeleopScenarioParams.from_tree(cfg).passivity_filter
    return out


def build_stack(cfg: dict, engine: Optional[str] = None, jitter: Optional[bool] = None,
                seed: Optional[int] = None, logger: Optional[logging.Logger] = None) -> Stack:
    """The cartesian stack on the simulated arm of ``cfg`` (any arm of config/robots). ``engine``:
    override ``interaction.engine``; ``jitter``: override ``teleop.scenario.jitter``."""
    from hri_arm_teleop.lockstep import build_pipeline
    from hri_arm_teleop.sim_robot import start_position
    from hri_interaction.core.passivity import DelayJitter
    from hri_interaction.engine import make_engine

    sc = TeleopScenarioParams.from_tree(cfg)
    eng = make_engine(cfg, start_position(cfg), engine=engine)
    clock = SimClock()
    use_jitter = sc.jitter if jitter is None else jitter
    dj = None
    if use_jitter:
        v = InteractionValidationParams.from_tree(cfg)
        dj = DelayJitter(v.jitter_mean_s, v.jitter_std_s,
                         np.random.default_rng(sc.seed if seed is None else seed))
    link = ReferenceLink(eng, dj)
    robot = EngineRobot(eng, JointsParams.from_tree(cfg).names, link, clock)
    pipe = build_pipeline(cfg, robot, clock, logger, output="cartesian")
    return Stack(cfg, pipe, eng, robot, link, clock)


@dataclass
class Trace1k:
    """One sample per interaction tick."""
    t: list = field(default_factory=list)
    ee_p: list = field(default_factory=list)
    ref_p: list = field(default_factory=list)       # the reference the loop tracks (T_d exp(λ))
    target_p: list = field(default_factory=list)    # the last delivered /interaction/reference
    target_q: list = field(default_factory=list)    # its orientation, quaternion (x, y, z, w)
    push_n: list = field(default_factory=list)      # applied push force (world)
    tau: list = field(default_factory=list)
    energy_j: list = field(default_factory=list)
    engaged: list = field(default_factory=list)
    mode: list = field(default_factory=list)        # 0 impedance, 1 admittance, 2 hybrid
    frozen: list = field(default_factory=list)

    def arrays(self) -> dict:
        return {k: np.asarray(v, dtype=float) for k, v in self.__dict__.items()}


_MODE_INDEX = {"impedance": 0, "admittance": 1, "hybrid": 2}


class StackDriver:
    """Lockstep (``hri_runtime.lockstep.Lockstep`` on the stack's clock, one interaction tick per
    step): the teleop base tick every ``base_div`` steps, the link delivery, the engine tick
    (the simulator step), then one sample of the 1 kHz trace (see the module doc)."""

    def __init__(self, stack: Stack, receiver=None, record: bool = True):
        self.s = stack
        self.receiver = receiver
        self.record = record
        self.trace = Trace1k()
        # the teleop chain's own ticks (what the MCAP's /teleop topics are made of); the pipeline
        # itself keeps no history
        self.teleop_trace = Trace.attach(stack.pipe) if record else None
        rate = 1.0 / stack.dt
        self.base_div = max(1, int(round(rate / stack.pipe.params.base_rate_hz)))
        self.push = np.zeros(3)
        self.first_torque_change: list = []   # (packet stamp, sim time of the first torque change)
        self.first_torque_wall: dict = {}     # packet stamp -> perf_counter at that tick's end
        self._pending_src: Optional[float] = None
        self._last_src_seen: Optional[float] = None
        self._tau_prev: Optional[np.ndarray] = None
        self.lockstep = Lockstep(stack.dt, stack.clock, sim_step=lambda _dt: stack.engine.step(1))
        self.lockstep.every(lambda t: stack.pipe.tick(), every=self.base_div)
        self.lockstep.every(self._deliver)
        self.lockstep.after(self._sample)

    @property
    def ticks(self) -> int:
        return self.lockstep.steps

    def set_push(self, f_world) -> None:
        f = np.asarray(f_world, float)
        if not np.array_equal(f, self.push):
            self.push = f.copy()
            self.s.engine.set_push(f)

    def on_hand(self, p) -> None:
        """One received VR pose: straight through clutch -> planner -> reference (event)."""
        pipe = self.s.pipe
        pipe.on_hand(p.position, p.quat_xyzw, p.clutch, source_stamp=p.stamp_s, valid=p.tracking_valid)
        pipe.process_input()

    def _deliver(self, t: float) -> None:
        link = self.s.link
        link.poll(t)
        if link.last_source is not None and link.last_source != self._last_src_seen:
            self._last_src_seen = self._pending_src = link.last_source

    def _sample(self, t: float) -> None:
        if not (self.record or self._pending_src is not None):
            return
        s = self.s
        st = s.engine.state()
        tau = np.asarray(st["tau"])
        if self._pending_src is not None and self._tau_prev is not None and np.any(tau != self._tau_prev):
            self.first_torque_change.append((self._pending_src, t))
            self.first_torque_wall[self._pending_src] = time.perf_counter()
            self._pending_src = None
        self._tau_prev = tau
        if self.record:
            tr = self.trace
            tr.t.append(t)
            tr.ee_p.append(np.asarray(st["world_T_ee"])[:3, 3].copy())
            tr.ref_p.append(np.asarray(st["world_T_ref"])[:3, 3].copy())
            T_target = s.link.last_T if s.link.last_T is not None else np.asarray(st["world_T_ref"])
            tr.target_p.append(T_target[:3, 3].copy())
            tr.target_q.append(np.asarray(se3.rot_to_quat(np.asarray(T_target[:3, :3], float))))
            tr.push_n.append(self.push.copy())
            tr.tau.append(tau.copy())
            tr.energy_j.append(float(st["energy_j"]))
            tr.engaged.append(1.0 if s.pipe.clutch.engaged else 0.0)
            tr.mode.append(float(_MODE_INDEX.get(st["mode"], -1)))
            tr.frozen.append(1.0 if st["frozen"] else 0.0)

    def step(self, before_tick: Optional[Callable[[float], None]] = None) -> None:
        self.lockstep.step(before_tick)

    def run_until(self, t_end: float, before_tick=None) -> None:
        self.lockstep.run_until(t_end, before_tick)


@dataclass(frozen=True)
class ScriptedPerson:
    """Config ``teleop.scenario`` + the square's timing: when and how the person pushes."""

    force_n: float
    duration_s: float
    direction: np.ndarray
    t_push: float              # start of the step push
    t_adm: float               # admittance phase: switch at t_adm, sine push from t_adm + lead
    adm_force_n: float
    adm_freq_hz: float
    adm_periods: int
    lead_s: float              # mode settles before / after the sine push

    @classmethod
    def from_config(cls, sc: TeleopScenarioParams, square, interaction: InteractionParams) -> "ScriptedPerson":
        """From ``teleop.scenario``, the square and the ``interaction`` section (typed params)."""
        d = np.asarray(sc.push_direction, float)
        d = d / np.linalg.norm(d)
        mid = (square.settle_s + sc.push_stroke * square.stroke_s + square.press_lead_s
               + 0.5 * square.move_s)
        lead = interaction.switch.settle_s + interaction.blend_s
        return cls(force_n=sc.push_force_n, duration_s=sc.push_duration_s, direction=d,
                   t_push=mid - 0.5 * sc.push_duration_s, t_adm=square.duration_s,
                   adm_force_n=sc.admittance_push_force_n, adm_freq_hz=sc.admittance_push_freq_hz,
                   adm_periods=sc.admittance_push_periods, lead_s=lead)

    @classmethod
    def from_tree(cls, cfg: dict, square) -> "ScriptedPerson":
        """From a whole config tree (``teleop.scenario`` and ``interaction``)."""
        return cls.from_config(TeleopScenarioParams.from_tree(cfg), square, InteractionParams.from_tree(cfg))

    @property
    def t_sine(self) -> float:
        return self.t_adm + self.lead_s

    @property
    def t_sine_end(self) -> float:
        return self.t_sine + (self.adm_periods / self.adm_freq_hz if self.adm_periods else 0.0)

    @property
    def t_end(self) -> float:
        """Back to impedance at t_sine_end + lead; the run ends one more lead + 1 s later."""
        return self.t_sine_end + 2 * self.lead_s + 1.0 if self.adm_periods else self.t_adm

    def force(self, t: float) -> np.ndarray:
        if self.t_push <= t < self.t_push + self.duration_s:
            return self.force_n * self.direction
        if self.adm_periods and self.t_sine <= t < self.t_sine_end:
            return self.adm_force_n * math.sin(2 * math.pi * self.adm_freq_hz * (t - self.t_sine)) * self.direction
        return np.zeros(3)

    def mode(self, t: float) -> str:
        if self.adm_periods and self.t_adm <= t < self.t_sine_end + self.lead_s:
            return "admittance"
        return "impedance"


def push_metrics(a: dict, person: ScriptedPerson, K_trans: float, K_adm_trans: float,
                 tol_m: float, settle_max_s: float) -> dict:
    """Deviation along the push direction: EE - delivered reference, minus its mean over the
    quarter of ``push_duration_s`` before the push (the tracking offset without a push), and the recovery:
    the time after the push ends until that deviation stays within ``tol_m``."""
    t = a["t"]
    d = person.direction
    raw = (a["ee_p"] - a["target_p"]) @ d            # vs the delivered reference

    def relative(t0: float) -> np.ndarray:
        pre = (t >= t0 - 0.25 * person.duration_s) & (t < t0)
        return raw - float(np.mean(raw[pre])) if pre.any() else raw

    dev = relative(person.t_push)
    # step push (impedance): the mean of the last half of the push window ~ F/K
    w = (t >= person.t_push + 0.5 * person.duration_s) & (t < person.t_push + person.duration_s)
    t_end = person.t_push + person.duration_s
    out = {"push_force_n": person.force_n, "push_expected_m": person.force_n / K_trans,
           "push_deviation_m": float(np.mean(dev[w])) if w.any() else float("nan"),
           "push_peak_m": float(np.max(np.abs(dev[(t >= person.t_push) & (t < t_end)])))
           if w.any() else float("nan")}
    after = t >= t_end
    rec = float("nan")
    if after.any():
        outside = np.flatnonzero(after & (np.abs(dev) > tol_m))
        rec = 0.0 if outside.size == 0 else float(t[outside[-1]] - t_end + (t[1] - t[0]))
        # only the window up to settle_max_s later counts for "returned"
        win = after & (t < t_end + settle_max_s + 1.0)
        outside = np.flatnonzero(win & (np.abs(dev) > tol_m))
        rec = 0.0 if outside.size == 0 else float(t[outside[-1]] - t_end + (t[1] - t[0]))
    out["recovery_s"] = rec
    out["recovered"] = bool(rec <= settle_max_s)
    if person.adm_periods:
        dev = relative(person.t_sine)
        ws = (t >= person.t_sine) & (t < person.t_sine_end)
        out["admittance_push_force_n"] = person.adm_force_n
        out["admittance_expected_m"] = person.adm_force_n * (1.0 / K_adm_trans + 1.0 / K_trans)
        out["admittance_peak_m"] = float(np.max(np.abs(dev[ws]))) if ws.any() else float("nan")
        t2 = person.t_sine_end
        win = (t >= t2) & (t < t2 + settle_max_s + 1.0)
        outside = np.flatnonzero(win & (np.abs(dev) > tol_m))
        r2 = 0.0 if outside.size == 0 else float(t[outside[-1]] - t2 + (t[1] - t[0]))
        out["admittance_recovery_s"] = r2
        out["admittance_recovered"] = bool(r2 <= settle_max_s)
    return out


def tracking_mask(a: dict, person: Optional[ScriptedPerson], settle_max_s: float) -> np.ndarray:
    """Samples that measure tracking: clutch engaged, no push and not within ``settle_max_s``
    after one, impedance mode."""
    t = a["t"]
    m = (a["engaged"] > 0.5) & (a["mode"] == 0)
    if person is not None:
        m &= ~((t >= person.t_push) & (t < person.t_push + person.duration_s + settle_max_s))
    return m


__all__ = ["Stack", "StackDriver", "ScriptedPerson", "build_stack", "push_metrics", "tracking_mask",
           "scenario_config"]


class ScenarioRun:
    """The scripted operator (real UDP on loopback) and person around a ``StackDriver``: what
    ``hri teleop-demo`` runs and the tests check. ``run(t_end)`` advances in lockstep; each tick
    the packets due are sent, received (waiting briefly for loopback) and handled event-driven;
    the person's push and mode are applied. ``send_until`` stops the operator early (link loss)."""

    def __init__(self, stack: Stack, person: Optional["ScriptedPerson"] = None, port: int = 0,
                 recv_timeout_s: float = 0.2, record: bool = True):
        import socket

        from hri_arm_teleop.core.scenario import SquareScenario
        from hri_arm_teleop.emulate import ScriptedOperator, sealer
        from hri_arm_teleop.vr_link import ArmVrReceiver

        self.stack = stack
        self.square = SquareScenario.from_tree(stack.cfg)
        self.person = person
        self.rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.rx.bind((TeleopVrParams.from_tree(stack.cfg).bind_address, port))
        self.tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.receiver = ArmVrReceiver(self.rx, stack.clock, stack.cfg)
        self.operator = ScriptedOperator(self.square, self.tx, self.rx.getsockname(), self.square.packet_rate_hz,
                                         auth=sealer(stack.cfg))
        self.driver = StackDriver(stack, self.receiver, record=record)
        self.recv_timeout_s = recv_timeout_s
        self.send_until = float("inf")
        self.lost_waiting = 0
        self.on_tick: Optional[Callable[[float], None]] = None

    def _before(self, now: float) -> None:
        sent = self.operator.send_due(now) if now < self.send_until else 0
        self.lost_waiting += self.receiver.receive(sent, self.recv_timeout_s, self.driver.on_hand)
        if self.person is not None:
            self.driver.set_push(self.person.force(now))
            mode = self.person.mode(now)
            if mode != self.stack.engine.mode and not self.stack.engine.held:
                self.stack.engine.set_mode(mode)
        if self.on_tick is not None:
            self.on_tick(now)

    def run(self, t_end: float) -> None:
        self.driver.run_until(t_end, self._before)

    def close(self) -> None:
        self.rx.close()
        self.tx.close()
