"""``console``: the operator console as an hri_runtime node.

The node owns a :class:`hri_console.server.ConsoleServer` (HTTP + WebSocket, token auth) and is
only a *client* of the rest of the stack: everything it does goes through topics and services a
script could use as well.

In (topics from their owners' config sections):
  ``console.topics.diagnostics`` (DiagnosticArray) -> link-health table;
  ``teleop.topics.joint_states`` and ``interaction.topics.sim_joint_states`` (JointState: the arm of
  arm_teleop or of the interaction node's simulation) -> joint positions against ``joints`` limits,
  and the measured value of the signed-error graph; ``console.topics.joint_setpoints`` (JointState) -> its
  set-point; ``teleop.topics.ee_pose`` (PoseStamped); ``teleop.topics.mode``
  (hri_interfaces/TeleopMode); ``interaction.topics.state`` (hri_interfaces/InteractionState) and
  ``atomic.topics.atomic_state`` (hri_interfaces/AtomicState); ``<console.pid_service>/status``
  (hri_interfaces/PidTuningStatus: gains, acknowledged gains).
Out (what each page command does: :mod:`hri_console.core.commands`; this node gives it its ports):
  ``safe_stop``  -> hri_interfaces/StopRequest(source "console") on ``/safety/stop_request`` (the
                    stop supervisor latches it; docs/safety.md), **published from the WebSocket
                    receive path itself** (no queue, no executor hop: the runtime's publish is thread-safe);
  ``release_stop`` -> ``/safety/reset`` (std_srvs/Trigger), then Bool ``true`` on ``atomic.topics.reset``;
  ``set_mode``, ``set_gains`` -> the parameters ``interaction.mode`` / ``interaction.impedance.*`` of the
                    interaction node (``console.interaction_node``) through its parameter services
                    (``set_parameters_atomically``: what ``ros2 param set`` does);
  ``pid_*``     -> services of the hri_pid_tuning node (``<pid_service>/auto_tune``, ``apply``, …).
  Every published command's ack carries ``subscribers`` (matched subscriptions when it was sent)
  and a ``warning`` when that is 0. The system stop state (``/safety/stop``, with the same
  StopListener as the actuators, so a silent supervisor shows as stopped) is ``robot.safe_stop``
  and ``system_stop`` of the snapshot.

Service calls run on the server's single command worker (ordered), never on the executor thread
and never in front of a safe stop. Parameters: ``robot``, ``robot_id`` and every key of the
``console`` section, of the topic sections it reads, ``interaction.gain_limits`` and
``interaction.impedance`` (the K/D the page's fields start from) (``console.bind_host``, ``console.port``
(0 = any free port), …; declared in hri_console's parameters.yaml, the robot config's value as
default), ``serve`` (false: no HTTP server, for tests that drive :meth:`ConsoleNode.handle`).
"""
from __future__ import annotations

import math
import sys
from typing import Optional

from hri_runtime import msgs
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config, params_type
from hri_runtime.parameters_gen import JointsParams
from hri_runtime.qos import QOS_LATCHED, QoSProfile

from hri_console.core.commands import ConsoleCommands
from hri_console.core.protocol import PID_TRIGGERS, CommandGate, CommandRules, ConsoleParams, Rejected, check_bind
from hri_console.core.state import ConsoleState, state_view
from hri_safety.nodes.stop_listener import RESET_SERVICE, STOP_REQUEST_TOPIC, STOP_REQUEST_TYPE, StopListener
from hri_interaction.core.spd import ImpedanceGainLimits
from hri_interaction.nodes.interaction_node import IMPEDANCE, MODE
from hri_runtime.parameter_service import SERVICES as PARAM_SERVICES, register_interfaces, to_value_msg
from hri_interaction.parameters_gen import InteractionImpedanceParams, InteractionTopicsParams

TUNE_SRV = "hri_interfaces/srv/Tune"
MOTION_SRV = "hri_interfaces/srv/TuneMotion"
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
        serve = self.declare_parameter("serve", True, {"description": "serve the page (false: the node "
                                                       "without its HTTP server)"}).value
        self.params = ConsoleParams.from_tree(self.cfg)
        check_bind(self.params)                      # StartupRefused before anything is bound
        jc = JointsParams.from_tree(self.cfg)
        names = list(jc.names or [])
        rules = CommandRules(self.params, num_joints=max(1, len(names)),
                             gain_limits=ImpedanceGainLimits.from_tree(self.cfg))
        self.state = ConsoleState(self.params.state, self.params.forward, clock=self.now, joint_names=names,
                                  position_min_rad=[math.radians(x) for x in (jc.position_min_deg or [])],
                                  position_max_rad=[math.radians(x) for x in (jc.position_max_deg or [])])
        self.service_timeout_s = self.params.service_timeout_s
        self.impedance = InteractionImpedanceParams.from_tree(self.cfg)
        # teleop.topics and atomic.topics: declared by packages that are not dependencies of the console
        tt, at = params_type("teleop.topics").from_tree(self.cfg), params_type("atomic.topics").from_tree(self.cfg)
        it = InteractionTopicsParams.from_tree(self.cfg)
        # --- out
        self.pub_stop = self.create_publisher(STOP_REQUEST_TYPE, STOP_REQUEST_TOPIC, qos=10)
        self.safe_stop_topic = self.pub_stop.topic_name       # resolved: the stack's (or its cell's) stop
        self.reset_cli = self.create_client("std_srvs/srv/Trigger", RESET_SERVICE)
        self.system_stop = StopListener(self, on_change=lambda stopped, _r: self.state.on_safe_stop(stopped),
                                        params=self.cfg)
        self.pub_reset = self.create_publisher("std_msgs/msg/Bool", at.reset, qos=10)
        # the interaction node's mode and gains: its parameter services (what ros2 param set uses)
        register_interfaces()
        self.param_cli = self.create_client(PARAM_SERVICES["set_parameters_atomically"],
                                            f"{self.params.interaction_node.rstrip('/')}/set_parameters_atomically")
        # --- in
        self.create_subscription("diagnostic_msgs/msg/DiagnosticArray", self.params.topics.diagnostics,
                                 self.on_diagnostics, qos=50)
        # the arm's measured joints: arm_teleop's (joint output, a real robot) or the interaction node's
        # simulated arm (cartesian output); only one of them publishes in a stack
        for topic in dict.fromkeys((tt.joint_states, it.sim_joint_states)):
            self.create_subscription("sensor_msgs/msg/JointState", topic, self.on_joint_states, qos=10)
        self.create_subscription("sensor_msgs/msg/JointState", self.params.topics.joint_setpoints,
                                 self.on_setpoints, qos=10)
        self.create_subscription("geometry_msgs/msg/PoseStamped", tt.ee_pose, self.on_ee_pose, qos=10)
        # state topics are TRANSIENT_LOCAL depth 1 (docs/ros2-interop.md "State topics"): a console
        # started late shows the current state at once
        self.create_subscription("hri_interfaces/msg/TeleopMode", tt.mode,
                                 lambda m: self.state.on_teleop_mode(m.mode), qos=QOS_LATCHED)
        self.create_subscription("hri_interfaces/msg/InteractionState", it.state,
                                 lambda m: self.state.on_interaction_state(state_dict(m)), qos=QOS_LATCHED)
        self.create_subscription("hri_interfaces/msg/AtomicState", at.atomic_state,
                                 lambda m: self.state.on_atomic_state(state_dict(m)), qos=QOS_LATCHED)
        pid = self.params.pid_service.rstrip("/")
        self.create_subscription("hri_interfaces/msg/PidTuningStatus", f"{pid}/status",
                                 lambda m: self.state.on_pid_status(state_dict(m)), qos=QOS_LATCHED)
        # the tuning node's progress (hri_interfaces/msg/TuningProgress): the console's progress bar
        self.create_subscription("hri_interfaces/msg/TuningProgress", f"{pid}/progress",
                                 lambda m: self.state.on_pid_progress(m.phase, m.joint, m.fraction, m.detail),
                                 qos=PROGRESS_QOS)
        # --- PID services (clients)
        self.cli = {n: self.create_client(TUNE_SRV, f"{pid}/{n}")
                    for n in ("auto_tune", "apply", "apply_all", "evaluate", "flip")}
        self.cli.update({n: self.create_client(MOTION_SRV, f"{pid}/{n}") for n in ("replay", "save_motion")})
        for n in PID_TRIGGERS.values():
            self.cli[n] = self.create_client("std_srvs/srv/Trigger", f"{pid}/{n}")
        # --- commands + gate + server
        self.commands = ConsoleCommands(
            self.state, self.now, call_pid=self._call_pid, set_parameters=self._set_parameters,
            reset_stop=lambda: self._blocking_call(self.reset_cli, msgs.new("std_srvs/srv/Trigger_Request"),
                                                   " (is the stop supervisor running?)"),
            publish_atomic_reset=lambda expected: self._publish(self.pub_reset, msgs.new("std_msgs/msg/Bool", data=True),
                                                                expected),
            publish_stop=self._publish_stop, mode_param=MODE, impedance_params=IMPEDANCE,
            log=lambda s: self.get_logger().warn(s))
        self.stop_events = self.commands.stop_events          # node-clock times of the last safe stops
        self.gate = CommandGate(rules, dispatch=self.commands.dispatch, on_safe_stop=self.commands.safe_stop,
                                log=lambda s: self.get_logger().warn(s))
        self.server = None
        self.port: Optional[int] = None
        if serve:
            from hri_console.server import ConsoleServer

            self.server = ConsoleServer(self.params, self.gate, snapshot=self.snapshot, clock=self.now)
            self.port = self.server.start()
            self.get_logger().info(f"console on http://{self.params.bind_host}:{self.port}/ "
                                   f"(safe stop -> {self.safe_stop_topic})")

    # ------------------------------------------------------------------ helpers
    def now(self) -> float:
        return self.get_clock().now_s()

    def handle(self, raw: str | bytes) -> dict:
        """One client frame through the gate (what the WebSocket does, minus the socket)."""
        return self.gate.handle(raw)

    def snapshot(self) -> dict:
        snap = self.state.snapshot()
        snap["modes"] = list(self.params.modes)
        imp = self.impedance                           # the page's K/D fields start from the config's gains
        snap["impedance_gains"] = {"stiffness": list(imp.stiffness_diag), "damping": list(imp.damping_diag)}
        snap["safe_stop_topic"] = self.safe_stop_topic
        snap["stops_published"] = self.commands.stops_published
        snap["system_stop"] = self.system_stop.status()
        snap["node_rejected"] = {f"{e} {c}": n for (e, c), n in self.rejected.items()}
        return snap

    # ------------------------------------------------------------------ subscriptions
    def _count(self, endpoint: str, dropped) -> None:
        """A sample the state dropped, counted per topic (the node's ``rejected``)."""
        if dropped:
            self._reject(endpoint, *dropped)

    def on_diagnostics(self, msg) -> None:
        self._count("diagnostics", self.state.on_diagnostics(msg.status))

    def on_joint_states(self, msg) -> None:
        self._count("joint_states", self.state.on_joint_states(msg.name, msg.position))

    def on_setpoints(self, msg) -> None:
        self._count("joint_setpoints", self.state.on_setpoints(msg.name, msg.position))

    def on_ee_pose(self, msg) -> None:
        p, o = msg.pose.position, msg.pose.orientation
        self._count("ee_pose", self.state.on_ee_pose((p.x, p.y, p.z), (o.x, o.y, o.z, o.w)))

    # ------------------------------------------------------------------ the commands' ports
    def _ready(self, cli, hint: str = "") -> None:
        if not cli.service_is_ready():
            raise Rejected("unavailable", f"service {cli.srv_name} is not available{hint}")

    def _call_pid(self, name: str, **fields):
        """``<pid_service>/<name>`` from the command worker (waits for the executor to answer)."""
        cli = self.cli[name]
        self._ready(cli)
        fut = cli.call_async(msgs.new(cli.req_type, **fields))
        if not fut.wait(self.service_timeout_s):
            raise Rejected("timeout", f"{cli.srv_name}: no reply within {self.service_timeout_s:g} s")
        if fut.exception() is not None:
            raise Rejected("unavailable", f"{cli.srv_name}: {fut.exception()}")
        return fut.result()

    def _blocking_call(self, cli, req, hint: str):
        self._ready(cli, hint)
        try:
            return cli.call(req, timeout_s=self.service_timeout_s)
        except Exception as exc:  # noqa: BLE001  (timeout / transport: one line on the page)
            raise Rejected("timeout", f"{cli.srv_name}: {exc}") from None

    def _set_parameters(self, values: dict) -> tuple[bool, str, str]:
        cli = self.param_cli
        req = msgs.new(cli.req_type, parameters=[msgs.new("rcl_interfaces/msg/Parameter", name=n, value=to_value_msg(v))
                                                 for n, v in values.items()])
        res = self._blocking_call(cli, req, " (is the interaction node running?)").result
        return res.successful, res.reason, cli.srv_name.rsplit("/", 1)[0]    # resolved in the console's namespace

    def _publish(self, pub, msg, expected: bool = True) -> dict:
        """Publish; how many subscriptions it reached, and a warning when none did and one was ``expected``."""
        pub.publish(msg)
        n = pub.get_subscription_count()
        out = {"topic": pub.topic_name, "subscribers": n}
        if n == 0 and expected:
            out["warning"] = f"no subscriber on {pub.topic_name}: nothing received it"
            self.get_logger().warn(f"console: {out['warning']}")
        return out

    def _publish_stop(self) -> dict:
        out = self._publish(self.pub_stop, msgs.new(STOP_REQUEST_TYPE, source="console",
                                                    reason="SAFE STOP from the console"))
        self.get_logger().warn(f"SAFE STOP from the console -> {self.safe_stop_topic}")
        return out

    def destroy_node(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        super().destroy_node()


def main(argv=None) -> int:
    return run_node(ConsoleNode, argv)    # StartupRefused is an input error: one line, exit 2


if __name__ == "__main__":
    sys.exit(main())
