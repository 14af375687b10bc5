"""``interaction``: the 1 kHz impedance/admittance controller as a node: the engine of
:mod:`hri_interaction.engine` (``make_engine``: the C++ real-time loop on a real clock, the C++
tick stepped by this node's 1 ms timer on a simulated clock) wired to topics; the input rules and
counters live in the engine (:mod:`hri_interaction.core.inputs`).

Inputs (config ``interaction.topics``): the reference pose (PoseStamped, base frame), the mode
(String: impedance | admittance | hybrid), impedance gains (Float64MultiArray: K diag 6, D diag 6);
driver ``sim`` (``interaction.node.driver``: the configured arm in MuJoCo with torque motors) a
push on the EE (``topics.sim_push``, world frame); driver ``topic`` (the MuJoCo model at the
received q, q̇, never stepped) the measured EE wrench (WrenchStamped, EE frame) and the joint
state. Outputs: the joint torque command (Float64MultiArray, N·m), the modified pose T_mod
(PoseStamped), the state (``hri_interfaces/msg/InteractionState``, :mod:`hri_interaction.messages`)
and /diagnostics; driver ``sim`` also ``topics.sim_joint_states``, ``topics.joint_states`` (at
``node.joint_state_rate_hz``: the simulation owns the robot) and the EE pose on
``teleop.topics.ee_pose``.

System stop (``hri_safety`` StopListener on ``/safety/stop``; docs/safety.md): while stopped (also
before the first heartbeat and once it is older than ``safety.stop.timeout_s``) the engine holds
at the measured EE pose and refuses references and mode switches (counted). A reference that stops
coming is held ("reuse last"); staleness beyond ``node.reference_timeout_s`` is reported.

Parameters: ``robot``, ``robot_id``, every key of ``interaction`` and ``safety.stop``,
``joints.names`` and ``teleop.topics.ee_pose`` by their dotted names (``declare_config``), e.g.
``-p interaction.mode:=admittance``. Settable at run time (``ros2 param set`` / ``hri param set``,
the console): :data:`LIVE`, the mode, the torque law (``interaction.law``: bumpless at a tick
boundary, refused while unsafe; docs/realtime.md "Switching the torque law") and the gain
diagonals, through the engine's input check
(``update_impedance`` / ``update_admittance``: a diagonal replaces a configured ``*_full``), from
the next tick on; a refused value answers with the check's sentence and changes nothing. The mode
and gains topics change the same parameters (recorded and announced on ``/parameter_events``).
"""
from __future__ import annotations

import json
from typing import Optional

import numpy as np

from hri_interaction.core.controller import InteractionParams
from hri_interaction.core.periods import PeriodStats
from hri_interaction.engine import diagnostics, make_engine
from hri_interaction.messages import STATE_MSG, interaction_state_msg, joint_state_msg, wrench_from_msg
from hri_runtime import msgs
from hri_runtime.diagnostics import OK, WARN, Updater
from hri_runtime.geometry import matrix_from_pose, pose_stamped_from_matrix, time_from_seconds
from hri_runtime.node import Node, run_node
from hri_runtime.parameter import ParameterError
from hri_runtime.parameter_library.typed import declare_config, params_type   # teleop.topics: hri_arm_teleop's
from hri_runtime.parameters_gen import FramesParams, JointsParams, RobotParams
from hri_runtime.qos import QOS_LATCHED
from hri_safety.nodes.stop_listener import StopListener


MODE = "interaction.mode"
LAW = "interaction.law"
IMPEDANCE = {"stiffness": "interaction.impedance.stiffness_diag", "damping": "interaction.impedance.damping_diag"}
ADMITTANCE = {"mass": "interaction.admittance.mass_diag", "damping": "interaction.admittance.damping_diag",
              "stiffness": "interaction.admittance.stiffness_diag"}
#: the parameters this node applies at run time
LIVE = (MODE, LAW, *IMPEDANCE.values(), *ADMITTANCE.values())


class InteractionNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("interaction", **kw)
        on_set = {MODE: lambda m: None if self.engine.set_mode(m) else self.engine.refusal(),
                  LAW: lambda law: None if self.engine.set_law(law) else self.engine.refusal()}
        on_set.update({n: (lambda v, g=g: self.engine.update_impedance(**{g: v})) for g, n in IMPEDANCE.items()})
        on_set.update({n: (lambda v, g=g: self.engine.update_admittance(**{g: v})) for g, n in ADMITTANCE.items()})
        self.cfg = declare_config(self, ("interaction", "safety.stop", "joints.names", "teleop.topics.ee_pose"),
                                  cfg=cfg, on_set=on_set)
        self.params = p = InteractionParams.from_tree(self.cfg)
        self.driver = p.node.driver
        joints = JointsParams.from_tree(self.cfg)
        self.joint_names = list(joints.names)
        # a simulated clock: this node's 1 ms timer steps the python engine in lockstep with it
        simulated = getattr(self.context, "kind", "") == "inproc" or bool(self.get_parameter("use_sim_time").value)
        self.engine = make_engine(self.cfg, np.deg2rad(joints.named_positions_deg["home"]), driver=self.driver,
                                  simulated=simulated, params=p)
        # the lockstep engine's controller and arm (tests read their state); None with the rt loop
        self.ctrl = getattr(self.engine, "ctrl", None)
        self.sim = getattr(self.engine, "sim", None)
        self.base_frame = FramesParams.from_tree(self.cfg).base
        self.dt = 1.0 / p.rate_hz
        self.last_reference_s = self.get_clock().now_s()
        self.periods = PeriodStats(p.rate_hz)       # the 1 ms timer's wall-clock periods
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
            self.create_timer(1.0 / p.node.joint_state_rate_hz, self.publish_joint_states)
        else:
            self.create_subscription("geometry_msgs/msg/WrenchStamped", t.wrench,
                                     lambda m: self.engine.set_wrench(wrench_from_msg(m)), qos=10)
            self.create_subscription("sensor_msgs/msg/JointState", t.joint_states,
                                     lambda m: self.engine.set_joint_state(m.name, m.position, m.velocity), qos=10)
        self.tau_pub = self.create_publisher("std_msgs/msg/Float64MultiArray", t.torque, qos=10)
        self.pose_pub = self.create_publisher("geometry_msgs/msg/PoseStamped", t.modified_pose, qos=10)
        self.state_pub = self.create_publisher(STATE_MSG, t.state, qos=QOS_LATCHED)    # + state_rate_hz
        # /diagnostics with every state message (publish_state forces it: the status of that state)
        self.diag = Updater(self, RobotParams.from_tree(self.cfg).model, 1.0 / p.node.state_rate_hz,
                            topic=t.diagnostics, prefix="")
        self.diag.add("interaction", self._diagnose)
        self._diag: dict = {}
        self.stop = StopListener(self, on_change=lambda stopped, why: self.engine.hold(stopped, why or "stop"))
        self.engine.hold(True, self.stop.reason)        # silence = stop until the supervisor speaks
        if self.engine.kind == "rt":
            self.engine.start()
            self.get_logger().info(f"1 kHz loop: C++ real-time thread ({self.engine.state().get('rt', {})})")
        else:
            self.create_timer(self.dt, self.tick)
        self.create_timer(1.0 / p.node.state_rate_hz, self.publish_state)

    def destroy_node(self):
        self.engine.stop()
        return super().destroy_node()

    # ------------------------------------------------------------------ inputs
    def on_reference(self, msg) -> None:
        if self.engine.set_target(matrix_from_pose(msg)):
            self.last_reference_s = self.get_clock().now_s()

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
            for g, name in IMPEDANCE.items():
                self._record(name, self.engine.impedance[g].tolist())

    def _record(self, name: str, value) -> None:
        """An input the engine accepted is the parameter's value (a value the engine takes but the
        declaration would not, e.g. under wider gain_limits, is logged: get shows the last one)."""
        try:
            self.record_parameter(name, value)
        except ParameterError as exc:
            self.get_logger().warning(f"{name}: applied but not recorded as the parameter ({exc})")

    # ------------------------------------------------------------------ 1 kHz tick (lockstep)
    def tick(self) -> None:
        self.periods.tick()
        if self.stop.stopped:                     # authoritative every cycle
            self.engine.hold(True, self.stop.reason)
        res = self.engine.step(1)
        if res is not None:
            self.tau_pub.publish(msgs.new("std_msgs/msg/Float64MultiArray", data=res.tau.tolist()))

    ticks = property(lambda self: self.engine.ticks, doc="ticks the engine has run")

    def publish_joint_states(self) -> None:
        """``topics.joint_states`` (driver sim) at ``node.joint_state_rate_hz``."""
        s = self.engine.state()
        self.robot_js_pub.publish(joint_state_msg(self.get_clock().now_s(), self.base_frame, self.joint_names, s))

    def publish_state(self) -> None:
        now = self.get_clock().now_s()
        s = self.engine.state()
        if self.driver == "sim":
            self.js_pub.publish(joint_state_msg(now, self.base_frame, self.joint_names, s))
            self.ee_pub.publish(pose_stamped_from_matrix(np.asarray(s["world_T_ee"]), now, self.base_frame))
        if self.engine.kind == "rt":     # the loop thread's torque, at the state rate
            self.tau_pub.publish(msgs.new("std_msgs/msg/Float64MultiArray", data=np.asarray(s["tau"], float).tolist()))
        self.pose_pub.publish(pose_stamped_from_matrix(np.asarray(s["world_T_ref"]), now, self.base_frame))
        diag = diagnostics(s, self.dt, self.periods.summary())
        diag.update(engine=self.engine.kind, driver=self.driver,
                    reference_stale=(now - self.last_reference_s) > self.params.node.reference_timeout_s)
        self.state_pub.publish(interaction_state_msg(diag, time_from_seconds(now)))
        self._diag = diag
        self.diag.force_update()

    def _diagnose(self, stat) -> None:
        d = self._diag
        stat.summary(WARN if (d["frozen"] or "hold" in d["flags"]) else OK, f"{d['mode']} {' '.join(d['flags'])}".strip())
        for k in ("rejected", "events", "energy_j"):
            stat.add(k, json.dumps(d[k]))


def main(argv=None):
    run_node(InteractionNode, argv)


if __name__ == "__main__":
    main()
