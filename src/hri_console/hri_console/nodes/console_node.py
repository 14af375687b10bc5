"""``console``: the operator console as an hri_runtime node.

The node owns a :class:`hri_console.server.ConsoleServer` (HTTP + WebSocket, token auth) and is
only a *client* of the rest of the stack: everything it does goes through topics and services a
script could use as well. The page's state: :class:`hri_console.core.state.ConsoleState`; its
commands: :class:`hri_console.core.commands.ConsoleCommands`, reaching the stack through
:class:`hri_console.nodes.ports.ConsolePorts` (safe stop, reset, parameters, PID services).

In (topics from their owners' config sections): ``console.topics.diagnostics`` (link health);
``teleop.topics.joint_states`` and ``interaction.topics.sim_joint_states`` (the arm's joints
against ``joints`` limits); ``console.topics.joint_setpoints``; ``teleop.topics.ee_pose``; the
latched states ``teleop.topics.mode``, ``interaction.topics.state``, ``atomic.topics.atomic_state``,
``<console.pid_service>/status`` and ``/progress``; the system stop (``/safety/stop``, the same
StopListener as the actuators, so a silent supervisor shows as stopped). Service calls run on the
server's command worker, never on the executor thread nor in front of a safe stop (published at once).

Parameters: ``robot``, ``robot_id`` and every key of ``console``, of the topic sections it reads,
``interaction.gain_limits`` and ``interaction.impedance`` (the K/D the page's fields start from),
e.g. ``console.port`` (0 = any free port); ``serve`` (false: no HTTP server; tests drive :meth:`handle`).
"""
from __future__ import annotations

import sys
from typing import Optional

from hri_runtime import msgs
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config, params_type
from hri_runtime.parameters_gen import JointsParams
from hri_runtime.qos import QOS_LATCHED, QoSProfile

from hri_console.core.commands import ConsoleCommands
from hri_console.core.protocol import CommandGate, CommandRules, ConsoleParams, check_bind
from hri_console.core.state import ConsoleState, state_view
from hri_console.nodes.ports import ConsolePorts
from hri_safety.nodes.stop_listener import StopListener
from hri_interaction.core.spd import ImpedanceGainLimits
from hri_interaction.core.live import IMPEDANCE, MODE
from hri_interaction.parameters_gen import InteractionImpedanceParams, InteractionTopicsParams

#: the tuning progress: TRANSIENT_LOCAL (the last one at once) and a queue for its bursts
PROGRESS_QOS = QoSProfile(depth=50, durability="transient_local")


def state_dict(msg) -> dict:
    """A typed state message as the plain dict the page shows (:func:`hri_console.core.state.state_view`)."""
    return state_view(msgs.to_dict(msg), msgs.type_name_of(msg))


class ConsoleNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("console", **kw)
        self.cfg = declare_config(self, ("console", "teleop.topics", "interaction.topics", "interaction.gain_limits",
                                         "interaction.impedance", "atomic.topics"), cfg=cfg)
        serve = self.declare_parameter("serve", True, {"description": "serve the page (false: no HTTP server)"}).value
        self.params = ConsoleParams.from_tree(self.cfg)
        check_bind(self.params)                      # StartupRefused before anything is bound
        jc = JointsParams.from_tree(self.cfg)
        rules = CommandRules(self.params, num_joints=max(1, len(jc.names or [])),
                             gain_limits=ImpedanceGainLimits.from_tree(self.cfg))
        self.state = ConsoleState.of_joints(self.params, jc.names, jc.position_min_deg, jc.position_max_deg, self.now)
        self.impedance = InteractionImpedanceParams.from_tree(self.cfg)
        # teleop.topics and atomic.topics: declared by packages that are not dependencies of the console
        tt, at = params_type("teleop.topics").from_tree(self.cfg), params_type("atomic.topics").from_tree(self.cfg)
        it = InteractionTopicsParams.from_tree(self.cfg)
        # out: the commands' ports (publishers, service clients)
        self.ports = ports = ConsolePorts(self, self.params, at.reset)
        self.pub_stop, self.safe_stop_topic = ports.pub_stop, ports.safe_stop_topic
        self.system_stop = StopListener(self, on_change=lambda stopped, _r: self.state.on_safe_stop(stopped),
                                        params=self.cfg)
        # --- in: each sample to the state; what it drops is counted per endpoint (the node's ``rejected``)
        st = self.state
        counted = {  # endpoint: (type, topics, depth, into the state); the arm's measured joints are
            # arm_teleop's (joint output, a real robot) or the interaction node's simulated arm's
            "diagnostics": ("diagnostic_msgs/msg/DiagnosticArray", [self.params.topics.diagnostics], 50,
                            lambda m: st.on_diagnostics(m.status)),
            "joint_states": ("sensor_msgs/msg/JointState", dict.fromkeys((tt.joint_states, it.sim_joint_states)), 10,
                             lambda m: st.on_joint_states(m.name, m.position)),
            "joint_setpoints": ("sensor_msgs/msg/JointState", [self.params.topics.joint_setpoints], 10,
                                lambda m: st.on_setpoints(m.name, m.position)),
            "ee_pose": ("geometry_msgs/msg/PoseStamped", [tt.ee_pose], 10, lambda m: st.on_ee_pose(
                (m.pose.position.x, m.pose.position.y, m.pose.position.z),
                (m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z, m.pose.orientation.w)))}
        for endpoint, (type_name, topics, depth, into) in counted.items():
            for topic in topics:
                self.create_subscription(type_name, topic, self._counted(endpoint, into), qos=depth)
        # state topics are TRANSIENT_LOCAL depth 1 (docs/ros2-interop.md "State topics"): a console
        # started late shows the current state at once
        pid = self.params.pid_service.rstrip("/")
        for type_name, topic, into in (
                ("hri_interfaces/msg/TeleopMode", tt.mode, lambda m: st.on_teleop_mode(m.mode)),
                ("hri_interfaces/msg/InteractionState", it.state, lambda m: st.on_interaction_state(state_dict(m))),
                ("hri_interfaces/msg/AtomicState", at.atomic_state, lambda m: st.on_atomic_state(state_dict(m))),
                ("hri_interfaces/msg/PidTuningStatus", f"{pid}/status", lambda m: st.on_pid_status(state_dict(m)))):
            self.create_subscription(type_name, topic, into, qos=QOS_LATCHED)
        self.create_subscription("hri_interfaces/msg/TuningProgress", f"{pid}/progress",    # the progress bar
                                 lambda m: st.on_pid_progress(m.phase, m.joint, m.fraction, m.detail), qos=PROGRESS_QOS)
        self.commands = ConsoleCommands(
            self.state, self.now, call_pid=ports.call_pid, set_parameters=ports.set_parameters,
            reset_stop=ports.reset_stop, publish_atomic_reset=ports.publish_atomic_reset,
            publish_stop=ports.publish_stop, mode_param=MODE, impedance_params=IMPEDANCE,
            log=lambda s: self.get_logger().warn(s))
        self.stop_events = self.commands.stop_events          # node-clock times of the last safe stops
        self.gate = CommandGate(rules, dispatch=self.commands.dispatch, on_safe_stop=self.commands.safe_stop,
                                log=lambda s: self.get_logger().warn(s))
        self.server, self.port = None, None        # the page's server and its port (serve)
        if serve:
            from hri_console.server import ConsoleServer

            self.server = ConsoleServer(self.params, self.gate, snapshot=self.snapshot, clock=self.now)
            self.port = self.server.start()
            self.get_logger().info(f"console on http://{self.params.bind_host}:{self.port}/ "
                                   f"(safe stop -> {self.safe_stop_topic})")

    def now(self) -> float:
        return self.get_clock().now_s()

    def handle(self, raw: str | bytes) -> dict:
        """One client frame through the gate (what the WebSocket does, minus the socket)."""
        return self.gate.handle(raw)

    def snapshot(self) -> dict:
        imp = self.impedance                           # the page's K/D fields start from the config's gains
        return self.commands.snapshot(
            modes=list(self.params.modes), safe_stop_topic=self.safe_stop_topic,
            impedance_gains={"stiffness": list(imp.stiffness_diag), "damping": list(imp.damping_diag)},
            system_stop=self.system_stop.status(), node_rejected={f"{e} {c}": n for (e, c), n in self.rejected.items()})

    def _counted(self, endpoint: str, into):
        """A subscription's callback: the sample into the state, a dropped one counted per endpoint."""
        def callback(msg) -> None:
            dropped = into(msg)
            if dropped:
                self._reject(endpoint, *dropped)
        return callback

    def destroy_node(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        super().destroy_node()


def main(argv=None) -> int:
    return run_node(ConsoleNode, argv)    # StartupRefused is an input error: one line, exit 2


if __name__ == "__main__":
    sys.exit(main())
