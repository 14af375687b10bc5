"""``interaction``: the 1 kHz impedance/admittance controller as a node (the engine of
:mod:`hri_interaction.engine` wired to topics; the input rules and counters live in the engine).

Inputs (config ``interaction.topics``): the reference pose (PoseStamped, base frame, e.g. from
``hri_arm_teleop``), the measured EE wrench (WrenchStamped, EE frame, driver ``topic``), the mode
(String: impedance | admittance | hybrid), impedance gains (Float64MultiArray: K diag 6, D diag 6),
and with driver ``topic`` the joint state. Outputs: the joint torque command (Float64MultiArray,
N·m, effort interface), the modified pose T_mod (PoseStamped), the state
(``hri_interfaces/msg/InteractionState``) and /diagnostics. Every bad message is rejected and
counted by the engine.

Drivers (``interaction.node.driver``):
- ``sim``: the configured arm (``robot.model``: any arm of config/robots) in MuJoCo with torque motors.
  With ``interaction.engine: rt`` on a real clock the C++ real-time loop (``hri_core.rt``) owns
  read -> tick -> write on its own thread with MuJoCo stepped inside it; the node forwards inputs
  and publishes its state at ``node.state_rate_hz``. On a simulated clock (in-process runtime,
  ``use_sim_time``) or with ``engine: python`` this node's 1 ms timer steps the python engine
  (lockstep with the node clock, deterministic). An external push on the EE is taken from
  ``topics.sim_push`` (world frame). Publishes ``topics.sim_joint_states`` (at the state rate),
  ``topics.joint_states`` (``/joint_states`` at ``node.joint_state_rate_hz``: the simulation owns
  the robot) and the measured EE pose on ``teleop.topics.ee_pose``.
- ``topic``: joint states from ``topics.joint_states``; the MuJoCo model is used as the robot model
  (forward kinematics, body Jacobian, gravity) at the received q, q̇ – never stepped.

System stop (``hri_safety`` StopListener on ``/safety/stop``; docs/safety.md): while stopped (also
before the first heartbeat and once it is older than ``safety.stop.timeout_s``) the engine holds
(``hold``: re-anchored at the measured EE pose, gravity compensated, zero reference velocity) and
refuses references and mode switches (counted); after the reset it stays there until a new
reference arrives.

When no reference arrives the last one is held ("reuse last"); staleness beyond
``node.reference_timeout_s`` is reported in the state, never a jump.

Parameters: ``robot`` (config name, default fr3), ``robot_id``, every key of ``interaction``
and ``safety.stop``, ``joints.names`` and ``teleop.topics.ee_pose`` by their dotted names
(``hri_runtime.parameter_library.typed.declare_config``), e.g.
``-p interaction.mode:=admittance``, ``-p interaction.node.driver:=topic``.

Settable at run time (``ros2 param set`` / ``hri param set``, the console): :data:`LIVE`, the mode
and the impedance and admittance gain diagonals. A set goes through the engine's input check (the
mode rules; :func:`hri_interaction.core.spd.validate_impedance_gains` for K and D,
:func:`hri_interaction.engine.admittance_gains` for M, D, K), is taken from the next tick on and
``param get`` returns it; a refused value answers with the check's sentence and changes nothing.
The mode and gains topics change the same parameters (an accepted message is recorded as the
parameter's value and announced on ``/parameter_events``). A gain diagonal replaces a configured
``*_full`` matrix of the same gain.
"""
from __future__ import annotations

import json
import time
from collections import deque
from typing import Optional

import numpy as np

from hri_interaction.core.controller import InteractionParams
from hri_interaction.core.spd import gains_from_vector
from hri_interaction.engine import PythonEngine, RtEngine, diagnostics, rt_available, safety_checker
from hri_runtime import msgs
from hri_runtime.diagnostics import OK, WARN, Updater
from hri_runtime.geometry import matrix_from_pose, pose_stamped_from_matrix, time_from_seconds
from hri_runtime.node import Node, run_node
from hri_runtime.parameter import ParameterError
from hri_runtime.parameter_library.typed import declare_config, params_type   # teleop.topics: hri_arm_teleop's
from hri_runtime.parameters_gen import FramesParams, JointsParams, RobotParams
from hri_runtime.qos import QOS_LATCHED
from hri_safety.nodes.stop_listener import StopListener


def wrench_from_msg(msg) -> np.ndarray:
    """(moment, force) – the twist order (ω, v) – from a WrenchStamped."""
    f, m = msg.wrench.force, msg.wrench.torque
    return np.array([m.x, m.y, m.z, f.x, f.y, f.z], dtype=float)


MODE = "interaction.mode"
IMPEDANCE = {"stiffness": "interaction.impedance.stiffness_diag", "damping": "interaction.impedance.damping_diag"}
ADMITTANCE = {"mass": "interaction.admittance.mass_diag", "damping": "interaction.admittance.damping_diag",
              "stiffness": "interaction.admittance.stiffness_diag"}
#: the parameters this node applies at run time
LIVE = (MODE, *IMPEDANCE.values(), *ADMITTANCE.values())


class InteractionNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("interaction", **kw)
        on_set = {MODE: self._set_mode}
        on_set.update({name: (lambda v, g=g: self._set_impedance(**{g: v})) for g, name in IMPEDANCE.items()})
        on_set.update({name: (lambda v, g=g: self._set_admittance(**{g: v})) for g, name in ADMITTANCE.items()})
        self.cfg = declare_config(self, ("interaction", "safety.stop", "joints.names", "teleop.topics.ee_pose"),
                                  cfg=cfg, on_set=on_set)
        self.params = p = InteractionParams.from_tree(self.cfg)
        # the gains that run (6x6): what a set of one diagonal combines with
        self.impedance = {"stiffness": p.impedance.stiffness, "damping": p.impedance.damping}
        self.admittance = {"mass": p.admittance.mass, "damping": p.admittance.damping,
                           "stiffness": p.admittance.stiffness}
        self.driver = p.node.driver
        joints = JointsParams.from_tree(self.cfg)
        self.joint_names = list(joints.names)
        q0 = np.deg2rad(joints.named_positions_deg["home"])
        safety = safety_checker(self.cfg)
        # engine rt with the simulated arm on a real clock: the C++ loop thread owns read -> tick
        # -> write; otherwise (simulated clock, topic driver, engine python) this node's 1 ms timer
        # steps the python engine in lockstep with the node clock
        simulated = getattr(self.context, "kind", "") == "inproc" or bool(
            self.get_parameter("use_sim_time").value)
        use_rt = self.driver == "sim" and p.engine == "rt" and not simulated
        if use_rt and not rt_available():
            self.get_logger().warning("interaction.engine rt: hri_core has no rt module; the "
                                      "1 kHz loop runs on this node's Python timer")
            use_rt = False
        self.engine = (RtEngine(self.cfg, q0, params=self.params, safety=safety) if use_rt else
                       PythonEngine(self.cfg, q0, params=self.params, safety=safety, driver=self.driver))
        # the lockstep engine's controller and arm (tests read their state); None with the rt loop
        self.ctrl = getattr(self.engine, "ctrl", None)
        self.sim = getattr(self.engine, "sim", None)
        self.base_frame = FramesParams.from_tree(self.cfg).base
        self.dt = 1.0 / self.params.rate_hz
        self.last_reference_s = self.get_clock().now_s()
        self._wall_periods: deque = deque(maxlen=5000)   # s, wall-clock tick-to-tick periods
        self._last_wall: Optional[float] = None
        t = p.topics
        self.create_subscription("geometry_msgs/msg/PoseStamped", t.reference, self.on_reference, qos=10)
        self.create_subscription("std_msgs/msg/String", t.mode, self.on_mode, qos=10)
        self.create_subscription("std_msgs/msg/Float64MultiArray", t.gains, self.on_gains, qos=10)
        if self.driver == "sim":
            self.create_subscription("geometry_msgs/msg/WrenchStamped", t.sim_push, self.on_push, qos=10)
            self.js_pub = self.create_publisher("sensor_msgs/msg/JointState", t.sim_joint_states, qos=10)
            self.ee_pub = self.create_publisher("geometry_msgs/msg/PoseStamped",
                                                params_type("teleop.topics").from_tree(self.cfg).ee_pose, qos=10)
            # /joint_states: the simulation owns the robot (robot_state turns it into /tf)
            self.robot_js_pub = self.create_publisher("sensor_msgs/msg/JointState", t.joint_states, qos=10)
        else:
            self.create_subscription("geometry_msgs/msg/WrenchStamped", t.wrench, self.on_wrench, qos=10)
            self.create_subscription("sensor_msgs/msg/JointState", t.joint_states, self.on_joint_state, qos=10)
        self.tau_pub = self.create_publisher("std_msgs/msg/Float64MultiArray", t.torque, qos=10)
        self.pose_pub = self.create_publisher("geometry_msgs/msg/PoseStamped", t.modified_pose, qos=10)
        self.state_pub = self.create_publisher(STATE_MSG, t.state, qos=QOS_LATCHED)    # + state_rate_hz
        # /diagnostics with every state message (publish_state forces it: the status of that state)
        self.diag = Updater(self, RobotParams.from_tree(self.cfg).model, 1.0 / p.node.state_rate_hz,
                            topic=t.diagnostics, prefix="")
        self.diag.add("interaction", self._diagnose)
        self._diag: dict = {}
        self.stop = StopListener(self, on_change=self.on_system_stop)
        self.engine.hold(True, self.stop.reason)        # silence = stop until the supervisor speaks
        if self.engine.kind == "rt":
            self.engine.start()
            self.get_logger().info(f"1 kHz loop: C++ real-time thread ({self.engine.state().get('rt', {})})")
        else:
            self.create_timer(self.dt, self.tick)
        self.create_timer(1.0 / p.node.state_rate_hz, self.publish_state)
        if self.driver == "sim":
            self.create_timer(1.0 / p.node.joint_state_rate_hz, self.publish_joint_states)

    def destroy_node(self):
        self.engine.stop()
        return super().destroy_node()

    # ------------------------------------------------------------------ inputs
    def on_system_stop(self, stopped: bool, reason: str) -> None:
        self.engine.hold(stopped, reason or "stop")

    def on_reference(self, msg) -> None:
        if self.engine.set_target(matrix_from_pose(msg)):
            self.last_reference_s = self.get_clock().now_s()

    def on_wrench(self, msg) -> None:
        self.engine.set_wrench(wrench_from_msg(msg))

    def on_push(self, msg) -> None:
        w = wrench_from_msg(msg)
        if np.all(np.isfinite(w)):
            self.engine.set_push(w[3:], w[:3])

    def on_mode(self, msg) -> None:
        """``topics.mode``: the engine's rules; accepted, it is the ``interaction.mode`` value."""
        mode = str(msg.data).strip().lower()
        if self.engine.set_mode(mode):
            self._record(MODE, mode)

    def on_gains(self, msg) -> None:
        """``topics.gains`` [K diag, D diag]: the engine's check; accepted, they are the values of
        ``interaction.impedance.stiffness_diag`` / ``damping_diag``."""
        if self.engine.set_gain_vector(msg.data):
            K, D = gains_from_vector(msg.data)
            self.impedance = {"stiffness": K, "damping": D}
            self._record(IMPEDANCE["stiffness"], K.tolist())
            self._record(IMPEDANCE["damping"], D.tolist())

    # ------------------------------------------------------------------ parameters set at run time
    def _record(self, name: str, value) -> None:
        """An input the engine accepted is the parameter's value (a value the engine takes but the
        declaration would not, e.g. under wider gain_limits, is logged: get shows the last one)."""
        try:
            self.record_parameter(name, value)
        except ParameterError as exc:
            self.get_logger().warning(f"{name}: applied but not recorded as the parameter ({exc})")

    def _refusal(self) -> str:
        cause, why = self.engine.last_rejection or ("refused", "")
        return f"{why} ({cause})"

    def _set_mode(self, mode: str) -> Optional[str]:
        return None if self.engine.set_mode(mode) else self._refusal()

    def _set_impedance(self, **gain) -> Optional[str]:
        new = {**self.impedance, **{k: np.asarray(v, float) for k, v in gain.items()}}   # 6 values: a diagonal
        if not self.engine.set_gains(new["stiffness"], new["damping"]):
            return self._refusal()
        self.impedance = new
        return None

    def _set_admittance(self, **gain) -> Optional[str]:
        new = {**self.admittance, **{k: np.asarray(v, float) for k, v in gain.items()}}
        if not self.engine.set_admittance(new["mass"], new["damping"], new["stiffness"]):
            return self._refusal()
        self.admittance = new
        return None

    def on_joint_state(self, msg) -> None:
        self.engine.set_joint_state(msg.name, msg.position, msg.velocity)

    # ------------------------------------------------------------------ 1 kHz tick (lockstep)
    def tick(self) -> None:
        now = time.perf_counter()
        if self._last_wall is not None:
            self._wall_periods.append(now - self._last_wall)
        self._last_wall = now
        if self.stop.stopped:                     # authoritative every cycle
            self.engine.hold(True, self.stop.reason)
        res = self.engine.step(1)
        if res is not None:
            self.tau_pub.publish(msgs.new("std_msgs/msg/Float64MultiArray", data=res.tau.tolist()))

    @property
    def ticks(self) -> int:
        return self.engine.ticks if self.engine.kind == "python" else int(self.engine.state()["ticks"])

    def _joint_state_msg(self, now: float, s: dict):
        hdr = msgs.new("std_msgs/msg/Header", frame_id=self.base_frame, stamp=time_from_seconds(now))
        return msgs.new("sensor_msgs/msg/JointState", header=hdr, name=self.joint_names,
                        position=np.asarray(s["q"], float).tolist(),
                        velocity=np.asarray(s["dq"], float).tolist(),
                        effort=np.asarray(s["tau"], float).tolist())

    def publish_joint_states(self) -> None:
        """``topics.joint_states`` (driver sim) at ``node.joint_state_rate_hz``."""
        self.robot_js_pub.publish(self._joint_state_msg(self.get_clock().now_s(), self.engine.state()))

    def publish_state(self) -> None:
        now = self.get_clock().now_s()
        s = self.engine.state()
        if self.driver == "sim":
            self.js_pub.publish(self._joint_state_msg(now, s))
            self.ee_pub.publish(pose_stamped_from_matrix(np.asarray(s["world_T_ee"]), now, self.base_frame))
        if self.engine.kind == "rt":     # the loop thread's torque, at the state rate
            self.tau_pub.publish(msgs.new("std_msgs/msg/Float64MultiArray", data=np.asarray(s["tau"], float).tolist()))
        self.pose_pub.publish(pose_stamped_from_matrix(np.asarray(s["world_T_ref"]), now, self.base_frame))
        diag = diagnostics(s, self.dt)
        diag["engine"] = self.engine.kind
        diag["reference_stale"] = (now - self.last_reference_s) > self.params.node.reference_timeout_s
        diag["driver"] = self.driver
        if "period_us" not in diag and self._wall_periods:   # the 1 ms timer's wall periods (last 5000)
            per = np.asarray(self._wall_periods) * 1e6
            diag["period_us"] = {"p50": float(np.percentile(per, 50)), "p99": float(np.percentile(per, 99)),
                                 "max": float(per.max()),
                                 "missed": int(np.sum(per > 2e6 / self.params.rate_hz))}
        self.state_pub.publish(interaction_state_msg(diag, time_from_seconds(now)))
        self._diag = diag
        self.diag.force_update()

    def _diagnose(self, stat) -> None:
        d = self._diag
        stat.summary(WARN if (d["frozen"] or "hold" in d["flags"]) else OK, f"{d['mode']} {' '.join(d['flags'])}".strip())
        for k in ("rejected", "events", "energy_j"):
            stat.add(k, json.dumps(d[k]))


STATE_MSG = "hri_interfaces/msg/InteractionState"


def interaction_state_msg(diag: dict, stamp):
    """``hri_interfaces/msg/InteractionState`` of the controller's ``diagnostics()`` plus the node's
    ``reference_stale``, ``ticks``, ``driver`` and ``period_us`` (NaN when not measured)."""
    nan = float("nan")
    per = diag.get("period_us") or {}
    counts = lambda d: [msgs.new("hri_interfaces/msg/Count", name=str(k), count=int(v))  # noqa: E731
                        for k, v in sorted((d or {}).items())]
    return msgs.new(
        STATE_MSG, stamp=stamp, mode=str(diag.get("mode", "")), time_s=float(diag.get("time_s", nan)),
        frozen=str(diag.get("frozen") or ""), flags=[str(f) for f in diag.get("flags", [])],
        energy_j=float(diag.get("energy_j", nan)), energy_violations=int(diag.get("energy_violations", 0)),
        pc_saturations=int(diag.get("pc_saturations", 0)),
        admittance_lambda=[float(x) for x in diag.get("lambda", [])],
        stiffness_diag=[float(x) for x in diag.get("stiffness_diag", [])],
        reference_stale=bool(diag.get("reference_stale", False)), ticks=int(diag.get("ticks", 0)),
        driver=str(diag.get("driver", "")), rejected=counts(diag.get("rejected")), events=counts(diag.get("events")),
        period_p50_us=float(per.get("p50", nan)), period_p99_us=float(per.get("p99", nan)),
        period_max_us=float(per.get("max", nan)), period_missed=int(per.get("missed", 0)))


def main(argv=None):
    run_node(InteractionNode, argv)


if __name__ == "__main__":
    main()
