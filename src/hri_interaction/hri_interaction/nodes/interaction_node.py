"""``interaction``: the 1 kHz impedance/admittance controller as a node.

Inputs (config ``interaction.topics``): the reference pose (PoseStamped, base frame, e.g. from
``hri_arm_teleop``), the measured EE wrench (WrenchStamped, EE frame, driver ``topic``), the mode
(String: impedance | admittance | hybrid), impedance gains (Float64MultiArray: K diag 6, D diag 6),
and with driver ``topic`` the joint state. Outputs: the joint torque command (Float64MultiArray,
N·m, effort interface), the modified pose T_mod (PoseStamped), a JSON state (String) and
/diagnostics. Every bad message is rejected and counted by the controller (see its docstring).

Drivers (``interaction.node.driver``):
- ``sim``: the configured arm (``robot.model``: fr3, ur5e, iiwa14) in MuJoCo with torque motors.
  With ``interaction.engine: rt`` (parameter ``engine``) on a real clock, the C++ real-time loop
  (``hri_core.rt``) owns read -> tick -> write on its own thread with MuJoCo stepped inside it; the
  node forwards validated inputs through its lock-free setters and publishes its state at
  ``node.state_rate_hz``. On a simulated clock (in-process runtime, ``use_sim_time``) or with
  ``engine: python`` the arm is stepped by this node's 1 ms timer (lockstep with the node clock,
  deterministic). An external push on the EE is taken from ``topics.sim_push`` (world frame); the
  controller's wrench input is then that push in the EE frame (ideal tared F/T sensor). Publishes
  ``topics.sim_joint_states`` and the measured EE pose on ``teleop.topics.ee_pose``.
- ``topic``: joint states from ``topics.joint_states``; the MuJoCo model is used as the robot model
  (forward kinematics, body Jacobian, gravity) at the received q, q̇ – never stepped.

System stop (``hri_safety`` StopListener on ``/safety/stop``; docs/safety.md): while stopped (also
before the first heartbeat and once it is older than ``safety.stop.timeout_s``) the controller is
frozen where its reference is (the current pose, gravity compensated, zero reference velocity),
the target is re-anchored there and new references / mode switches are refused (counted); after
the reset it stays there until a new reference arrives.

When no reference arrives the last one is held (seed: "reuse last"); staleness beyond
``node.reference_timeout_s`` is reported in the state, never a jump.

Parameters: ``robot`` (config name, default fr3), ``mode`` (overrides ``interaction.mode``; ""
keeps it), ``driver`` ("" keeps ``interaction.node.driver``).
"""
from __future__ import annotations

import json
import time
from collections import deque
from typing import Optional

import numpy as np

from hri_interaction.core.controller import MODES, InteractionController, InteractionParams
from hri_interaction.sim import ArmTorqueSim
from hri_runtime import msgs
from hri_runtime.config import load_robot_config
from hri_runtime.geometry import matrix_from_pose, pose_stamped_from_matrix, time_from_seconds
from hri_runtime.node import Node, run_node
from hri_safety.nodes.stop_listener import StopListener

STOP_PREFIX = "system stop"


def _value(param):
    return getattr(param, "value", param)


def wrench_from_msg(msg) -> np.ndarray:
    """(moment, force) – the twist order (ω, v) – from a WrenchStamped."""
    f, m = msg.wrench.force, msg.wrench.torque
    return np.array([m.x, m.y, m.z, f.x, f.y, f.z], dtype=float)


class InteractionNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("interaction", **kw)
        robot = str(_value(self.declare_parameter("robot", "fr3")))
        mode = str(_value(self.declare_parameter("mode", "")))
        driver = str(_value(self.declare_parameter("driver", "")))
        engine = str(_value(self.declare_parameter("engine", "")))
        self.cfg = cfg if cfg is not None else load_robot_config(robot)
        sec = self.cfg["interaction"]
        self.sec = sec
        self.params = InteractionParams.from_config(sec, self.cfg["joints"]["torque_max_nm"])
        self.driver = driver or sec["node"]["driver"]
        if self.driver not in ("sim", "topic"):
            raise ValueError(f"driver must be sim or topic, got {self.driver!r}")
        self.joint_names = list(self.cfg["joints"]["names"])
        q0 = np.deg2rad(self.cfg["joints"]["named_positions_deg"]["home"])
        self.sim = ArmTorqueSim(self.cfg["robot"]["model"], self.params.rate_hz, q0, sec["ee_site"],
                                self.joint_names)
        from hri_core.safety import SafetyChecker, limits_from_config

        self.ctrl = InteractionController(self.params, self.sim.ee_pose(), self.sim.n,
                                          logger=self._std_logger(),
                                          safety=SafetyChecker(limits_from_config(self.cfg)))
        if mode:
            if mode not in MODES:
                raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
            self.ctrl.mode = mode
        # engine rt on a real clock: the C++ loop thread owns read -> tick -> write (the MuJoCo arm
        # inside); on a simulated clock (in-process runtime, use_sim_time) the node ticks in
        # lockstep from its 1 ms timer as below (deterministic tests)
        self.engine = engine or sec["engine"]
        self.rt = None
        simulated = getattr(self.context, "kind", "") == "inproc" or bool(
            _value(self.get_parameter("use_sim_time")))
        if self.driver == "sim" and self.engine == "rt" and not simulated:
            from hri_interaction.engine import RtEngine, rt_available

            if rt_available():
                self.rt = RtEngine(self.cfg, q0, params=self.params,
                                   safety=SafetyChecker(limits_from_config(self.cfg)))
                if mode:
                    self.rt.set_mode(mode)
            else:
                self.get_logger().warning("interaction.engine rt: hri_core has no rt module; the "
                                          "1 kHz loop runs on this node's Python timer")
        self.base_frame = self.cfg.get("frames", {}).get("base", "base")
        self.dt = 1.0 / self.params.rate_hz
        self.have_joint_state = self.driver == "sim"
        self.last_reference_s = self.get_clock().now_s()
        self.ticks = 0
        self._wall_periods: deque = deque(maxlen=5000)   # s, wall-clock tick-to-tick periods
        self._last_wall: Optional[float] = None
        self.rejected_msgs = {"joint_state": 0, "reference": 0}
        t = sec["topics"]
        self.create_subscription("geometry_msgs/msg/PoseStamped", t["reference"], self.on_reference, qos=10)
        self.create_subscription("std_msgs/msg/String", t["mode"], self.on_mode, qos=10)
        self.create_subscription("std_msgs/msg/Float64MultiArray", t["gains"], self.on_gains, qos=10)
        if self.driver == "sim":
            self.create_subscription("geometry_msgs/msg/WrenchStamped", t["sim_push"], self.on_push, qos=10)
            self.js_pub = self.create_publisher("sensor_msgs/msg/JointState", t["sim_joint_states"], qos=10)
        else:
            self.create_subscription("geometry_msgs/msg/WrenchStamped", t["wrench"], self.on_wrench, qos=10)
            self.create_subscription("sensor_msgs/msg/JointState", t["joint_states"], self.on_joint_state, qos=10)
        self.tau_pub = self.create_publisher("std_msgs/msg/Float64MultiArray", t["torque"], qos=10)
        self.pose_pub = self.create_publisher("geometry_msgs/msg/PoseStamped", t["modified_pose"], qos=10)
        self.state_pub = self.create_publisher(STATE_MSG, t["state"], qos=10)
        self.diag_pub = self.create_publisher("diagnostic_msgs/msg/DiagnosticArray", t["diagnostics"], qos=10)
        self._stop_held = False
        self.stop = StopListener(self, on_change=self.on_system_stop)
        self.ee_pub = (self.create_publisher("geometry_msgs/msg/PoseStamped", self.cfg["teleop"]["topics"]["ee_pose"],
                                             qos=10) if self.driver == "sim" else None)
        if self.rt is None:
            self.create_timer(self.dt, self.tick)
        else:
            self.rt.hold(True, "no_stop_heartbeat")     # silence = stop until the supervisor speaks
            self.rt.start()
            rts = self.rt.state().get("rt", {})
            self.get_logger().info(f"1 kHz loop: C++ real-time thread ({rts})")
        self.create_timer(1.0 / sec["node"]["state_rate_hz"], self.publish_state)

    def destroy_node(self):
        if self.rt is not None:
            self.rt.stop()
        return super().destroy_node()

    def _std_logger(self):
        import logging

        return logging.getLogger("hri_interaction.node")

    # ------------------------------------------------------------------ system stop
    def on_system_stop(self, stopped: bool, reason: str) -> None:
        if self.rt is not None:
            self.rt.hold(stopped, reason or "stop")
            return
        if stopped:
            self._hold_for_stop(reason)
        elif self._stop_held:
            self._stop_held = False
            if (self.ctrl.frozen_reason or "").startswith(STOP_PREFIX):
                self.ctrl.release()        # a freeze of its own (a safety flag) keeps holding

    def _hold_for_stop(self, reason: str) -> None:
        """Freeze the reference where it is and forget the target (no resume after the reset)."""
        if self._stop_held:
            return
        self._stop_held = True
        if self.ctrl.frozen_reason is None:
            self.ctrl.freeze(f"{STOP_PREFIX}: {reason}")
        self.ctrl.world_T_target = np.array(self.ctrl.world_T_d, float)

    # ------------------------------------------------------------------ inputs
    def on_reference(self, msg) -> None:
        if self.rt is not None:
            T = matrix_from_pose(msg)
            if T is None:
                self.rejected_msgs["reference"] += 1
                self.rt.inputs.reject("reference_nonfinite", "bad PoseStamped")
            elif not self.stop.stopped and self.rt.set_target(T):
                self.last_reference_s = self.get_clock().now_s()
            return
        if self.stop.stopped:
            self.ctrl._reject("reference_during_stop", "system stop: reference ignored")
            return
        T = matrix_from_pose(msg)
        if T is None:
            self.rejected_msgs["reference"] += 1
            self.ctrl._reject("reference_nonfinite", "bad PoseStamped")
            return
        if self.ctrl.set_reference(T):
            self.last_reference_s = self.get_clock().now_s()

    def on_wrench(self, msg) -> None:
        self.ctrl.set_wrench(wrench_from_msg(msg))

    def on_push(self, msg) -> None:
        w = wrench_from_msg(msg)
        if np.all(np.isfinite(w)):
            if self.rt is not None:
                self.rt.set_push(w[3:], w[:3])
            else:
                self.sim.push(w[3:], w[:3])

    def on_mode(self, msg) -> None:
        if self.rt is not None:
            self.rt.set_mode(str(msg.data).strip().lower())   # refused (counted) while held
            return
        if self.stop.stopped:
            self.ctrl._reject("mode_switch_refused", "system stop")
            return
        self.ctrl.request_mode(str(msg.data).strip().lower(), self.sim.state())

    def on_gains(self, msg) -> None:
        g = np.asarray(msg.data, dtype=float)
        if g.shape != (12,):
            if self.rt is not None:
                self.rt.inputs.reject("gains_invalid", f"expected 12 values (K diag, D diag), got {g.size}")
                return
            self.ctrl._reject("gains_invalid", f"expected 12 values (K diag, D diag), got {g.size}")
            return
        if self.rt is not None:
            self.rt.set_gains(np.diag(g[:6]), np.diag(g[6:]))
            return
        self.ctrl.set_impedance_gains(g[:6], g[6:])

    def on_joint_state(self, msg) -> None:
        names = list(msg.name)
        try:
            idx = [names.index(n) for n in self.joint_names]
            q = np.asarray(msg.position, float)[idx]
            dq = np.asarray(msg.velocity, float)[idx] if len(msg.velocity) else np.zeros(len(idx))
        except (ValueError, IndexError):
            self.rejected_msgs["joint_state"] += 1
            return
        d = self.sim.data
        d.qpos[self.sim.qadr] = q
        d.qvel[self.sim.vadr] = dq
        self.sim.mj.mj_forward(self.sim.model, d)
        self.have_joint_state = True

    # ------------------------------------------------------------------ 1 kHz tick
    def tick(self) -> None:
        now = time.perf_counter()
        if self._last_wall is not None:
            self._wall_periods.append(now - self._last_wall)
        self._last_wall = now
        if not self.have_joint_state:
            return
        if self.stop.stopped:
            self._hold_for_stop(self.stop.reason)
        st = self.sim.state()
        if self.driver == "sim":
            self.ctrl.set_wrench(self.sim.wrench_body())
        res = self.ctrl.tick(st, self.dt)
        self.tau_pub.publish(msgs.new("std_msgs/msg/Float64MultiArray", data=res.tau.tolist()))
        if self.driver == "sim":
            self.sim.step(res.tau)
        self.ticks += 1

    def _rt_diagnostics(self, now: float) -> dict:
        """Publish the C++ loop's state snapshot (joint state, EE and modified pose); the same
        diagnostics dict as the controller's."""
        s = self.rt.state()
        hdr = msgs.new("std_msgs/msg/Header", frame_id=self.base_frame, stamp=time_from_seconds(now))
        self.js_pub.publish(msgs.new("sensor_msgs/msg/JointState", header=hdr, name=self.joint_names,
                                     position=np.asarray(s["q"], float).tolist(),
                                     velocity=np.asarray(s["dq"], float).tolist(),
                                     effort=np.asarray(s["tau"], float).tolist()))
        self.tau_pub.publish(msgs.new("std_msgs/msg/Float64MultiArray", data=np.asarray(s["tau"], float).tolist()))
        self.ee_pub.publish(pose_stamped_from_matrix(np.asarray(s["world_T_ee"]), now, self.base_frame))
        self.pose_pub.publish(pose_stamped_from_matrix(np.asarray(s["world_T_ref"]), now, self.base_frame))
        self.ticks = int(s["ticks"])
        pe = s.get("period_error_us") or {}
        return {"mode": s["mode"], "time_s": float(s["time_s"]),
                "frozen": (self.stop.reason or "stop") if s["frozen"] else None,
                "flags": list(s["flags"]) + [f"safety_{f}" for f in s.get("safety_flags", [])],
                "rejected": dict(s.get("rejected", {})), "events": dict(s.get("flag_ticks", {})),
                "lambda": np.asarray(s["lam"], float).tolist(), "energy_j": float(s["energy_j"]),
                "energy_violations": int(s["energy_violations"]), "pc_saturations": int(s["pc_saturations"]),
                "stiffness_diag": [], "engine": "rt", "rt": s.get("rt", {}),
                "period_us": {"p50": 1e6 * self.dt + pe.get("p50", float("nan")),
                              "p99": 1e6 * self.dt + pe.get("p99", float("nan")),
                              "max": 1e6 * self.dt + pe.get("max", float("nan")),
                              "missed": int(s.get("missed", 0))}}

    def publish_state(self) -> None:
        now = self.get_clock().now_s()
        if self.rt is not None:
            diag = self._rt_diagnostics(now)
        else:
            if self.driver == "sim":
                d = self.sim.data
                self.js_pub.publish(msgs.new(
                    "sensor_msgs/msg/JointState",
                    header=msgs.new("std_msgs/msg/Header", frame_id=self.base_frame, stamp=time_from_seconds(now)),
                    name=self.joint_names, position=d.qpos[self.sim.qadr].tolist(),
                    velocity=d.qvel[self.sim.vadr].tolist(), effort=self.ctrl.last_tau.tolist()))
                self.ee_pub.publish(pose_stamped_from_matrix(self.sim.ee_pose(), now, self.base_frame))
            self.pose_pub.publish(pose_stamped_from_matrix(self.ctrl.last_ref, now, self.base_frame))
            diag = self.ctrl.diagnostics()
        diag["reference_stale"] = (now - self.last_reference_s) > self.sec["node"]["reference_timeout_s"]
        diag["ticks"] = self.ticks
        diag["driver"] = self.driver
        if self.rt is None and self._wall_periods:   # wall-clock periods of the 1 kHz timer (last 5000 ticks)
            per = np.asarray(self._wall_periods) * 1e6
            diag["period_us"] = {"p50": float(np.percentile(per, 50)), "p99": float(np.percentile(per, 99)),
                                 "max": float(per.max()),
                                 "missed": int(np.sum(per > 2e6 / self.params.rate_hz))}
        self.state_pub.publish(interaction_state_msg(diag, time_from_seconds(now)))
        level = 0 if not (diag["frozen"] or "hold" in diag["flags"]) else 1
        status = msgs.new("diagnostic_msgs/msg/DiagnosticStatus", level=level, name="interaction",
                          message=f"{diag['mode']} {' '.join(diag['flags'])}".strip(),
                          hardware_id=self.cfg["robot"]["model"],
                          values=[msgs.new("diagnostic_msgs/msg/KeyValue", key=k, value=json.dumps(v))
                                  for k, v in (("rejected", diag["rejected"]), ("events", diag["events"]),
                                               ("energy_j", diag["energy_j"]))])
        self.diag_pub.publish(msgs.new("diagnostic_msgs/msg/DiagnosticArray",
                                       header=msgs.new("std_msgs/msg/Header", stamp=time_from_seconds(now)),
                                       status=[status]))


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
