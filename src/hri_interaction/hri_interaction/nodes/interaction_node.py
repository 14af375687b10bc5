"""``interaction``: the 1 kHz impedance/admittance controller as a node: the engine of
:mod:`hri_interaction.engine` (the C++ real-time loop: on its own thread on a real clock, stepped
by this node's 1 ms timer on a simulated clock) wired to topics; input rules and counters in the engine
(:mod:`hri_interaction.core.inputs`), run-time parameters and the report in :mod:`hri_interaction.core.live`.

In (``interaction.topics``): the reference pose (base frame), the mode (String), the impedance gains
(K diag 6, D diag 6); driver ``sim`` (the arm in MuJoCo, torque motors) a push on the EE
(``sim_push``); driver ``topic`` the measured EE wrench and the joint state. Out: the joint torques
(N·m), the modified pose T_mod, the state (``hri_interfaces/msg/InteractionState``), /diagnostics;
driver ``sim`` also ``sim_joint_states``, ``joint_states``, ``teleop.topics.ee_pose``. System stop
(``/safety/stop``; docs/safety.md): while stopped (also before the first heartbeat and once it is
older than ``safety.stop.timeout_s``) the engine holds at the measured EE pose and refuses
references and mode switches (counted). A reference that stops coming is held; staleness beyond
``node.reference_timeout_s`` is reported.

Parameters: ``robot``, ``robot_id``, every key of ``interaction`` and ``safety.stop``,
``joints.names``, ``teleop.topics.ee_pose``. Settable at run time: ``core.live.LIVE`` (the mode, the
law, the gain diagonals; a diagonal replaces a configured ``*_full``); the mode and gains topics change the
same parameters (recorded and announced on ``/parameter_events``).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from hri_interaction.core.controller import InteractionParams
from hri_interaction.core.live import StateReport, appliers, gains_input, mode_input, push_input, status
from hri_interaction.engine import diagnostics, make_engine
from hri_interaction.messages import STATE_MSG, interaction_state_msg, joint_state_msg, torque_msg, wrench_from_msg
from hri_runtime.diagnostics import Updater
from hri_runtime.geometry import matrix_from_pose, pose_stamped_from_matrix, time_from_seconds
from hri_runtime.node import Node, run_node
from hri_runtime.parameter import ParameterError
from hri_runtime.parameter_library.typed import declare_config, params_type   # teleop.topics: hri_arm_teleop's
from hri_runtime.parameters_gen import FramesParams, JointsParams, RobotParams
from hri_runtime.qos import QOS_LATCHED
from hri_safety.nodes.stop_listener import StopListener


class InteractionNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("interaction", **kw)
        self.cfg = declare_config(self, ("interaction", "safety.stop", "joints.names", "teleop.topics.ee_pose"),
                                  cfg=cfg, on_set=appliers(lambda: self.engine))
        self.params = p = InteractionParams.from_tree(self.cfg)
        self.driver = p.node.driver
        joints = JointsParams.from_tree(self.cfg)
        self.joint_names = list(joints.names)
        # a simulated clock: this node's 1 ms timer steps the engine in lockstep with it
        simulated = getattr(self.context, "kind", "") == "inproc" or bool(self.get_parameter("use_sim_time").value)
        self.engine = make_engine(self.cfg, np.deg2rad(joints.named_positions_deg["home"]), driver=self.driver,
                                  simulated=simulated, params=p)
        self.sim = self.engine.sim      # the simulated arm (driver topic: the model at the measured state)
        self.base_frame = FramesParams.from_tree(self.cfg).base
        self.dt = 1.0 / p.rate_hz
        self.report = StateReport.of_node(p, self.get_clock().now_s())   # the timer's periods, the reference's age
        t = p.topics
        self.create_subscription("geometry_msgs/msg/PoseStamped", t.reference, lambda m: self.report.on_reference(
            self.engine.set_target(matrix_from_pose(m)), self.get_clock().now_s()), qos=10)
        self.create_subscription("std_msgs/msg/String", t.mode, lambda m: self._record(mode_input(self.engine, m.data)), qos=10)
        self.create_subscription("std_msgs/msg/Float64MultiArray", t.gains,
                                 lambda m: self._record(gains_input(self.engine, m.data)), qos=10)
        if self.driver == "sim":
            self.create_subscription("geometry_msgs/msg/WrenchStamped", t.sim_push,
                                     lambda m: push_input(self.engine, wrench_from_msg(m)), qos=10)
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
        self.diag = Updater(self, RobotParams.from_tree(self.cfg).model, 1.0 / p.node.diagnostics_rate_hz,
                            topic=t.diagnostics, prefix="")     # with every k-th state
        self.diag.add("interaction", self._diagnose)
        self._diag: dict = {}
        self.stop = StopListener(self, on_change=lambda stopped, why: self.engine.hold(stopped, why or "stop"))
        self.engine.hold(True, self.stop.reason)        # silence = stop until the supervisor speaks
        if self.engine.lockstep:
            self.create_timer(self.dt, self.tick)
        else:
            self.engine.start()
            self.get_logger().info(f"1 kHz loop: C++ real-time thread ({self.engine.state().get('rt', {})})")
        self.create_timer(1.0 / p.node.state_rate_hz, self.publish_state)

    def destroy_node(self):
        self.engine.stop()
        return super().destroy_node()

    ticks = property(lambda self: self.engine.ticks, doc="ticks the engine has run")

    def _record(self, values: dict) -> None:
        """Inputs the engine accepted are the parameters' values (one the declaration refuses is logged)."""
        for name, value in values.items():
            try:
                self.record_parameter(name, value)
            except ParameterError as exc:
                self.get_logger().warning(f"{name}: applied but not recorded as the parameter ({exc})")

    # ------------------------------------------------------------------ 1 kHz tick (lockstep), state
    def tick(self) -> None:
        self.report.periods.tick()
        if self.stop.stopped:                     # authoritative every cycle
            self.engine.hold(True, self.stop.reason)
        tau = self.engine.step(1)
        if tau is not None:
            self.tau_pub.publish(torque_msg(tau))

    def publish_joint_states(self) -> None:   # driver sim, at node.joint_state_rate_hz
        self.robot_js_pub.publish(joint_state_msg(self.get_clock().now_s(), self.base_frame, self.joint_names,
                                                  self.engine.state()))

    def publish_state(self) -> None:
        now = self.get_clock().now_s()
        s = self.engine.state()
        if self.driver == "sim":
            self.js_pub.publish(joint_state_msg(now, self.base_frame, self.joint_names, s))
            self.ee_pub.publish(pose_stamped_from_matrix(np.asarray(s["world_T_ee"]), now, self.base_frame))
        if not self.engine.lockstep:     # the loop thread's torque, at the state rate
            self.tau_pub.publish(torque_msg(s["tau"]))
        self.pose_pub.publish(pose_stamped_from_matrix(np.asarray(s["world_T_ref"]), now, self.base_frame))
        self._diag = self.report.complete(diagnostics(s, self.dt, self.report.state_periods()), now,
                                          engine=self.engine.kind, driver=self.driver)
        self.state_pub.publish(interaction_state_msg(self._diag, time_from_seconds(now)))
        if self.report.diagnostics_due:       # every k-th state (node.diagnostics_rate_hz)
            self.diag.force_update()

    def _diagnose(self, stat) -> None:
        level, message, values = status(self._diag)
        stat.summary(level, message)
        for k, v in values.items():
            stat.add(k, v)


def main(argv=None):
    run_node(InteractionNode, argv)


if __name__ == "__main__":
    main()
