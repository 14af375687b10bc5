"""The arm stack in one process: its real nodes composed on the in-process context, in lockstep.

``ArmStack(cfg)`` composes the nodes ``launch/<arm>.launch.yaml`` runs as separate processes, on
one ``InprocContext`` stepped by the runtime's one lockstep runner (``hri_runtime.lockstep``, one
step per interaction tick, ``1 / interaction.rate_hz``, one simulated clock):

    StopSupervisorNode -> [ReferenceLink] -> ArmTeleopNode (real UDP from the scripted operator;
    clutch, planner; output cartesian) -> /interaction/reference -> InteractionNode (the 1 kHz
    engine on the torque-controlled MuJoCo arm) -> /interaction/torque, /ee_pose, /interaction/state

With ``teleop.output: joint`` (``launch ... output:=joint``) it is the stop supervisor and
``ArmTeleopNode`` with its MuJoCo arm (IK -> joint impedance; /joint_states, /ee_pose,
/teleop/target_pose), one step per teleop base period. With ``mcap`` it records their topics with
the runtime's bag recorder (``Lockstep.record``: the file ``hri record`` writes of a live run).
The nodes keep no history: :func:`read_trace` (:func:`read_joint_trace`) reads the samples a plot
or a test needs back from that recording.

The scenario is the lockstep runner's script (``before(t)``, first in every step): the
``ScriptedOperator`` sends the packets due over loopback UDP and the arm node takes them
event-driven (``VrInput.receive``); the ``ScriptedPerson`` (config ``teleop.scenario``)
publishes its push (``interaction.topics.sim_push``) and its mode (``interaction.topics.mode``)
as a person at a console would. With ``jitter`` the reference goes through ``ReferenceLink``
(lognormal delays, latest-value delivery) instead of straight to the interaction node.

``ScriptedPerson``: a step push of ``push_force_n`` for ``push_duration_s`` in the middle of stroke
``push_stroke`` (impedance), then, after the square, admittance mode and a sine push
(``admittance_push_*``), then impedance again.
"""
from __future__ import annotations

import copy
import math
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from hri_arm_teleop.core.loop import LoopParams
from hri_arm_teleop.parameters_gen import TeleopParams, TeleopScenarioParams, TeleopTopicsParams
from hri_interaction.parameters_gen import InteractionParams, InteractionTopicsParams, InteractionValidationParams
from hri_runtime import msgs
from hri_runtime.geometry import seconds_from_time
from hri_runtime.lockstep import Lockstep
from hri_runtime.node import Node
from hri_runtime.parameters_gen import FramesParams

#: the reference as arm_teleop sends it when the link node stands between it and the interaction node
LINK_INPUT = "/teleop/reference"
_MODE_INDEX = {"impedance": 0, "admittance": 1, "hybrid": 2}


def scenario_config(cfg: dict) -> dict:
    """``cfg`` with the scenario's passivity filter (``teleop.scenario.passivity_filter``)."""
    out = copy.deepcopy(cfg)
    out["interaction"]["passivity"]["filter"] = TeleopScenarioParams.from_tree(cfg).passivity_filter
    return out


class ReferenceLink(Node):
    """arm_teleop -> interaction through a lognormal delay injector
    (``hri_interaction.core.passivity.DelayJitter``, ``interaction.validation.jitter_*``): each
    reference from ``LINK_INPUT`` is delayed by its own draw and republished on
    ``interaction.topics.reference``; a reference overtaken by a newer one is dropped. Checked
    every interaction tick."""

    def __init__(self, cfg: dict, seed: int, **kw):
        from hri_interaction.core.passivity import DelayJitter

        super().__init__("reference_link", **kw)
        v = InteractionValidationParams.from_tree(cfg)
        self.jitter = DelayJitter(v.jitter_mean_s, v.jitter_std_s, np.random.default_rng(seed))
        self.sent = 0
        self._items: dict = {}
        self._last = None
        it = InteractionTopicsParams.from_tree(cfg)
        self.create_subscription("geometry_msgs/msg/PoseStamped", LINK_INPUT, self.on_reference, qos=100)
        self.pub = self.create_publisher("geometry_msgs/msg/PoseStamped", it.reference, qos=100)
        self.create_timer(1.0 / InteractionParams.from_tree(cfg).rate_hz, self.poll)

    def on_reference(self, msg) -> None:
        self.sent += 1
        self._items[self.sent] = msg
        self.jitter.push(self.get_clock().now_s(), np.array([self.sent], float))

    def poll(self) -> None:
        key = self.jitter.get(self.get_clock().now_s(), None)
        if key is None or key is self._last:
            return
        self._last = key
        k = int(key[0])
        msg = self._items.get(k)
        for old in [j for j in self._items if j <= k]:      # delivered or overtaken: dropped
            del self._items[old]
        if msg is not None:
            self.pub.publish(msg)


def recorded_topics(cfg: dict, jitter: bool) -> list[str]:
    """What :class:`ArmStack` records (and :func:`read_trace`, :func:`read_joint_trace` read)."""
    it = InteractionTopicsParams.from_tree(cfg)
    tt = TeleopTopicsParams.from_tree(cfg)
    out = [it.reference, it.torque, it.state, it.modified_pose, it.sim_push, it.mode, tt.ee_pose, tt.mode]
    if TeleopParams.from_tree(cfg).output == "joint":
        out = [tt.ee_pose, tt.target_pose, tt.joint_states, tt.mode]
    return [("/" + t).replace("//", "/") for t in out] + ([LINK_INPUT] if jitter else [])


class ArmStack:
    """The arm stack's real nodes on one in-process context, stepped by one lockstep runner
    (``self.lockstep``; see the module doc). ``person``: the scripted person (None: nobody
    pushes); ``jitter``: override ``teleop.scenario.jitter``; ``mcap``: record to this file.
    ``run(t_end)`` advances in lockstep; ``send_until`` stops the operator early (link loss)."""

    def __init__(self, cfg: dict, person: Optional["ScriptedPerson"] = None, jitter: Optional[bool] = None,
                 seed: Optional[int] = None, port: int = 0, recv_timeout_s: float = 0.2,
                 mcap: Optional[Path] = None):
        from hri_arm_teleop.core.scenario import SquareScenario
        from hri_arm_teleop.emulate import ScriptedOperator, sealer
        from hri_arm_teleop.nodes.arm_teleop_node import ArmTeleopNode
        from hri_interaction.nodes.interaction_node import InteractionNode
        from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

        cfg = copy.deepcopy(cfg)
        ip = InteractionParams.from_tree(cfg)
        # the recording samples the interaction state every tick (what the plots and metrics read)
        cfg["interaction"]["node"]["state_rate_hz"] = ip.rate_hz
        self.cfg = cfg
        sc = TeleopScenarioParams.from_tree(cfg)
        self.output = TeleopParams.from_tree(cfg).output
        self.jitter = (sc.jitter if jitter is None else jitter) and self.output == "cartesian"
        # Phases: a node's timer first fires one period after its creation, so the nodes are
        # created before t = 0 such that the teleop base tick and the interaction tick both run
        # at t = 0 (the interaction tick of step t advances the arm from t to t + dt and sees
        # what the script sent at t); the base tick runs before the interaction tick of its step
        # (creation order decides at a common deadline).
        base_s = LoopParams.from_tree(cfg).base_period_s
        dt = 1.0 / ip.rate_hz if self.output == "cartesian" else base_s
        self.lockstep = Lockstep.inproc(dt, start_time_s=-base_s)
        ctx = self.context = self.lockstep.context
        self.supervisor = StopSupervisorNode(cfg=cfg, context=ctx)
        it = InteractionTopicsParams.from_tree(cfg)
        remap = {("/" + it.reference).replace("//", "/"): LINK_INPUT} if self.jitter else None
        self.arm = ArmTeleopNode(cfg=cfg, context=ctx, remap=remap,
                                 parameters={"teleop.vr.enabled": False, "teleop.vr.port": int(port)})
        self.arm.vr.threaded = False                     # the script below hands the packets over
        self.arm.set_parameter("teleop.vr.enabled", True)
        ctx.spin_for(base_s - dt)                        # to t = -dt
        self.link = ReferenceLink(cfg, sc.seed if seed is None else seed, context=ctx) if self.jitter else None
        self.interaction = None
        if self.output == "cartesian":
            self.interaction = InteractionNode(cfg=cfg, context=ctx)
            self.interaction.publish_state()             # the arm at rest: arm_teleop's first tick has a state
        self.lockstep.clock.advance_ns(ctx.now_ns() - self.lockstep.clock.now_ns())
        self.lockstep.run_for(dt)                        # to t = 0: nothing due yet
        self.lockstep.spin_context(fire_at_end=False)
        self.person = person
        self.scenario = Node("scenario", context=ctx)      # the person at the console
        self.push_pub = self.scenario.create_publisher("geometry_msgs/msg/WrenchStamped", it.sim_push, qos=10)
        self.mode_pub = self.scenario.create_publisher("std_msgs/msg/String", it.mode, qos=10)
        self.base_frame = FramesParams.from_tree(cfg).base
        self.mcap = Path(mcap) if mcap is not None else None
        if self.mcap is not None:
            self.lockstep.record(self.mcap, recorded_topics(cfg, self.jitter), library="hri_arm_teleop")
        self.square = SquareScenario.from_tree(cfg)
        self.tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.operator = ScriptedOperator(self.square, self.tx, self.arm.vr_address, self.square.packet_rate_hz,
                                         auth=sealer(cfg))
        self.recv_timeout_s = recv_timeout_s
        self.send_until = float("inf")
        self.lost_waiting = 0
        self.on_tick: Optional[Callable[[float], None]] = None
        self.wall_latency_s: list = []    # UDP send -> the torque of the tick that took its reference (wall)
        self._push = np.zeros(3)
        self._wall_sent: Optional[float] = None
        self._poses = 0
        self._source: Optional[float] = None
        if self.output == "joint":        # UDP send -> the joint command made of it (wall): after the
            self.arm.lockstep.every(self._after_joint_tick)     # chain's tick, before its arm's physics
        elif not self.jitter:
            self.scenario.create_subscription("std_msgs/msg/Float64MultiArray", it.torque, self._on_torque, qos=10)

    @property
    def pipe(self):
        return self.arm.pipe

    @property
    def engine(self):
        return None if self.interaction is None else self.interaction.engine

    @property
    def receiver(self):
        return self.arm.receiver

    @property
    def dt(self) -> float:
        return self.lockstep.period_s

    def clock(self) -> float:
        return self.lockstep.now_s()

    def packets(self) -> tuple[np.ndarray, np.ndarray]:
        """The operator's packets so far: stamps (simulated time, ascending) and clutch flags."""
        stamps = np.asarray(sorted(self.operator.sent_wall), float)
        return stamps, np.array([self.square.sample(t).clutch for t in stamps], float)

    def _before(self, now: float) -> None:
        sent = self.operator.send_due(now) if now < self.send_until else 0
        self._wall_sent = time.perf_counter() if sent else None
        self._poses = getattr(self.arm.robot, "poses", 0)
        self.lost_waiting += self.arm.vr.receive(sent, self.recv_timeout_s)
        if self.person is not None:
            f = self.person.force(now)
            if f.tolist() != self._push.tolist():
                self._push = f.copy()
                self.push_pub.publish(_wrench(f, now, self.base_frame))
            mode = self.person.mode(now)
            if mode != self.engine.mode and not self.engine.held:     # asked again until taken
                self.mode_pub.publish(msgs.new("std_msgs/msg/String", data=mode))
        if self.on_tick is not None:
            self.on_tick(now)

    def _on_torque(self, _msg) -> None:
        if self._wall_sent is not None and self.arm.robot.poses != self._poses:
            self.wall_latency_s.append(time.perf_counter() - self._wall_sent)
        self._wall_sent = None

    def _after_joint_tick(self, _t: float) -> None:
        src = self.pipe.last_latency_source
        if src is not None and src != self._source and src in self.operator.sent_wall:
            self.wall_latency_s.append(time.perf_counter() - self.operator.sent_wall[src])
        self._source = src

    def run(self, t_end: float) -> None:
        self.lockstep.run_until(t_end, self._before)

    def close(self) -> None:
        """The recording closed (readable with :func:`read_trace`), the nodes destroyed, the
        operator's socket closed."""
        self.lockstep.close()
        self.tx.close()


def _wrench(f, t: float, frame: str):
    from hri_runtime.geometry import time_from_seconds

    return msgs.new("geometry_msgs/msg/WrenchStamped",
                    header=msgs.new("std_msgs/msg/Header", stamp=time_from_seconds(t), frame_id=frame),
                    wrench=msgs.new("geometry_msgs/msg/Wrench",
                                    force=msgs.new("geometry_msgs/msg/Vector3", x=f[0], y=f[1], z=f[2])))


def read_trace(path: Path, cfg: dict, jitter: bool, packets=((), ())) -> dict:
    """The 1 kHz samples of an :class:`ArmStack` recording: one per ``interaction.topics.state``
    message (every tick), with the latest of each other topic at that time (sample and hold).
    Arrays: ``t``, ``ee_p``, ``ref_p`` (the loop's reference T_d exp(λ)), ``target_p`` / ``target_q``
    (the last delivered reference, quaternion x y z w), ``push_n`` (world), ``tau``, ``energy_j``,
    ``ee_p`` (the EE position the tick read), ``engaged`` (the clutch of the operator's last packet
    before the tick), ``mode`` (0 impedance,
    1 admittance, 2 hybrid), ``frozen``; ``latency_s`` (VR packet stamp -> the first torque change
    after the first reference made of it arrived) and
    ``link_delay_s`` (reference sent -> delivered; ``jitter`` only). ``packets``: the operator's
    packet stamps (simulated time, ascending) and their clutch flags (:meth:`ArmStack.packets`)."""
    from hri_runtime.bag.recording import McapReader

    topics = recorded_topics(cfg, jitter)
    ref_t, torque_t, state_t, mod_t, push_t, _mode_t, ee_t, _tmode_t = topics[:8]
    series: dict = {t: ([], []) for t in topics}
    for m in McapReader(path).messages(topics):
        series[m.topic][0].append(m.log_time_ns)
        series[m.topic][1].append(m.msg)
    ran = [k for k, m in enumerate(series[state_t][1]) if m.ticks > 0]     # not the latched state at rest
    st_ns = np.asarray(series[state_t][0], np.int64)[ran]
    states = [series[state_t][1][k] for k in ran]
    t = np.array([m.time_s for m in states], float)       # the arm's time after the tick
    dt = 1.0 / InteractionParams.from_tree(cfg).rate_hz
    stamps, clutch = (np.asarray(x) for x in packets)
    last = np.searchsorted(stamps, t - dt + 1e-9, side="right") - 1   # sent by the tick's step

    def held(topic, value, default, before=False):
        """The latest message of ``topic`` at each state sample (``before``: published before it,
        not with it), as ``value(msg)``."""
        ns, ms = series[topic]
        idx = np.searchsorted(np.asarray(ns, np.int64), st_ns, side="left" if before else "right") - 1
        vals = [value(m) for m in ms]
        return [vals[i] if i >= 0 else default(k) for k, i in enumerate(idx)]

    def pos(msg):
        p = msg.pose.position
        return np.array([p.x, p.y, p.z])

    def quat(msg):
        o = msg.pose.orientation
        return np.array([o.x, o.y, o.z, o.w])

    # the EE pose the tick read: the one published after the previous tick (the first: at rest)
    ee = held(ee_t, pos, lambda k: pos(series[ee_t][1][0]), before=True)
    ref = held(mod_t, pos, lambda k: np.full(3, np.nan))
    refq = held(mod_t, quat, lambda k: np.full(4, np.nan))
    a = {
        "t": t, "ee_p": np.asarray(ee), "ref_p": np.asarray(ref),
        "target_p": np.asarray(held(ref_t, pos, lambda k: ref[k])),
        "target_q": np.asarray(held(ref_t, quat, lambda k: refq[k])),
        "push_n": np.asarray(held(push_t, lambda m: np.array([m.wrench.force.x, m.wrench.force.y, m.wrench.force.z]),
                                  lambda k: np.zeros(3))),
        "tau": np.asarray(held(torque_t, lambda m: np.asarray(m.data, float), lambda k: np.zeros(0)), dtype=float),
        "energy_j": np.array([s.energy_j for s in states], float),
        "engaged": np.where(last >= 0, clutch[np.maximum(last, 0)] if len(clutch) else 0.0, 0.0).astype(float),
        "mode": np.array([float(_MODE_INDEX.get(s.mode, -1)) for s in states]),
        "frozen": np.array([1.0 if s.frozen else 0.0 for s in states]),
    }
    # packet -> torque: each newly delivered source stamp, the first torque change at or after it
    tq_ns = np.asarray(series[torque_t][0], np.int64)
    tq = np.array([m.data for m in series[torque_t][1]], float).reshape(len(tq_ns), -1)
    changed = np.r_[False, np.any(tq[1:] != tq[:-1], axis=1)] if len(tq) else np.zeros(0, bool)
    change_ns = tq_ns[changed]
    news, last_src = [], None          # (delivered at, source) of each reference from a newer packet
    for ns, m in zip(*series[ref_t]):
        k = np.searchsorted(stamps, seconds_from_time(m.header.stamp) + 1e-9, side="right") - 1
        src = stamps[k] if k >= 0 else None      # the newest packet the reference was made of
        if src is not None and src != last_src:
            news.append((ns, src))
            last_src = src
    lat = []
    for i, (ns, src) in enumerate(news):     # a newer packet's reference arriving first replaces it
        j = np.searchsorted(change_ns, ns, side="left")
        nxt = news[i + 1][0] if i + 1 < len(news) else np.iinfo(np.int64).max
        if j < len(change_ns) and change_ns[j] < nxt:     # the torque is applied by the end of its tick
            lat.append(change_ns[j] * 1e-9 + dt - src)
    a["latency_s"] = np.asarray(lat, float)
    if jitter:
        sent = {seconds_from_time(m.header.stamp): ns for ns, m in zip(*series[LINK_INPUT])}
        a["link_delay_s"] = np.asarray([(ns - sent[s]) * 1e-9 for ns, m in zip(*series[ref_t])
                                        if (s := seconds_from_time(m.header.stamp)) in sent], float)
        a["references_sent"] = len(series[LINK_INPUT][0])
    else:
        a["link_delay_s"] = np.zeros(len(series[ref_t][0]))
        a["references_sent"] = len(series[ref_t][0])
    a["references_delivered"] = len(series[ref_t][0])
    return a


def read_joint_trace(path: Path, cfg: dict, packets=((), ())) -> dict:
    """The samples of an :class:`ArmStack` recording with ``teleop.output: joint``: one per
    ``/ee_pose`` message (each I/O tick of ``arm_teleop``). Arrays: ``t``, ``ee_p``, ``target_p``
    (``/teleop/target_pose`` published with it; nan while holding), ``q`` (``/joint_states``),
    ``mode`` (``MODE_CODES`` of the latest ``/teleop/mode``), ``engaged`` (the clutch of the
    operator's last packet at or before the sample; ``packets`` as in :func:`read_trace`)."""
    from hri_arm_teleop.core.pipeline import MODE_CODES
    from hri_runtime.bag.recording import McapReader

    ee_t, target_t, js_t, mode_t = recorded_topics(cfg, False)
    series: dict = {t: ([], []) for t in (ee_t, target_t, js_t, mode_t)}
    for m in McapReader(path).messages(list(series)):
        series[m.topic][0].append(m.log_time_ns)
        series[m.topic][1].append(m.msg)

    def pos(msg):
        p = msg.pose.position
        return np.array([p.x, p.y, p.z])

    ee_ns = np.asarray(series[ee_t][0], np.int64)
    targets = dict(zip(series[target_t][0], series[target_t][1]))
    q_at = dict(zip(series[js_t][0], series[js_t][1]))
    mode_ns = np.asarray(series[mode_t][0], np.int64)
    modes = [MODE_CODES.get(m.mode, MODE_CODES["HOLD"]) for m in series[mode_t][1]]
    k = np.searchsorted(mode_ns, ee_ns, side="right") - 1
    t = ee_ns * 1e-9
    stamps, clutch = (np.asarray(x) for x in packets)
    last = np.searchsorted(stamps, t + 1e-9, side="right") - 1
    return {
        "t": t, "ee_p": np.array([pos(m) for m in series[ee_t][1]]).reshape(-1, 3),
        "target_p": np.array([pos(targets[ns]) if ns in targets else np.full(3, np.nan) for ns in ee_ns]).reshape(-1, 3),
        "q": np.array([np.asarray(q_at[ns].position, float) for ns in ee_ns if ns in q_at]),
        "mode": np.array([modes[i] if i >= 0 else MODE_CODES["HOLD"] for i in k], float),
        "engaged": np.where(last >= 0, clutch[np.maximum(last, 0)] if len(clutch) else 0.0, 0.0).astype(float),
    }


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


__all__ = ["ArmStack", "ReferenceLink", "ScriptedPerson", "push_metrics", "read_joint_trace", "read_trace", "recorded_topics",
           "scenario_config", "tracking_mask"]
