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
Out:
  ``safe_stop``  -> hri_interfaces/StopRequest(source "console") on ``/safety/stop_request`` (the
                    stop supervisor latches it; docs/safety.md) **published from the WebSocket
                    receive path itself** (no queue, no executor hop: the runtime's publish is
                    thread-safe);
  ``release_stop`` -> the explicit reset: ``/safety/reset`` (std_srvs/Trigger, its sentence is shown),
                    then Bool ``true`` on ``atomic.topics.reset`` (clears a latched atomic fault);
                    the robot never restarts by itself;
  Every published command's ack carries ``subscribers`` (matched subscriptions of its topic when
  it was sent) and a ``warning`` when that is 0: nothing received it (the page shows it); for the
  atomic reset only once an atomic state was received (an arm stack has no atomic node).
  The system stop state (``/safety/stop``, with the same StopListener as the actuators, so a
  silent supervisor shows as stopped) is ``robot.safe_stop`` and ``system_stop`` of the snapshot.
  ``set_mode``  -> the parameter ``interaction.mode`` of the interaction node (``console.interaction_node``)
                   through its parameter services (``set_parameters_atomically``: what ``ros2 param
                   set`` does), so ``param get`` shows it; the node's refusal is shown with its sentence;
  ``set_gains`` -> its parameters ``interaction.impedance.stiffness_diag`` and ``damping_diag``, both
                   or neither (one atomic set);
  ``pid_*``     -> services of the hri_pid_tuning node (``<pid_service>/auto_tune``, ``apply``,
                    ``apply_all``, ``evaluate``, ``flip``, ``replay``, ``save_motion``,
                    ``record_start``, ``record_stop``, ``reset``, ``save``); a refusal
                    (``success = false``) is shown on the page with the service's sentence; the
                    evaluations of a test, flip, replay or recording are kept for the page's table.

Service calls run on the server's single command worker (ordered), never on the executor thread
and never in front of a safe stop. Parameters: ``robot``, ``robot_id`` and every key of the
``console`` section, of the topic sections it reads, ``interaction.gain_limits`` and
``interaction.impedance`` (the K/D the page's fields start from) (``console.bind_host``, ``console.port``
(0 = any free port), …; declared in hri_console's parameters.yaml, the robot config's value as
default), ``serve`` (false: no HTTP server, for tests that drive :meth:`ConsoleNode.handle`).
"""
from __future__ import annotations

import json
import math
import sys
from collections import deque
from typing import Any, Optional

from hri_runtime import msgs
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config, params_type
from hri_runtime.parameters_gen import JointsParams
from hri_runtime.qos import QOS_LATCHED, QoSProfile

from hri_console.core.protocol import PID_TRIGGERS, CommandGate, CommandRules, ConsoleParams, Rejected, check_bind
from hri_console.core.state import ConsoleState
from hri_safety.nodes.stop_listener import RESET_SERVICE, STOP_REQUEST_TOPIC, STOP_REQUEST_TYPE, StopListener
from hri_interaction.core.spd import ImpedanceGainLimits
from hri_interaction.nodes.interaction_node import IMPEDANCE, MODE
from hri_runtime.parameter_service import SERVICES as PARAM_SERVICES, register_interfaces, to_value_msg
from hri_interaction.parameters_gen import InteractionImpedanceParams, InteractionTopicsParams

TUNE_SRV = "hri_interfaces/srv/Tune"
MOTION_SRV = "hri_interfaces/srv/TuneMotion"
STOP_EVENTS_KEPT = 64     # safe-stop times kept in ``ConsoleNode.stop_events`` (the last ones)
#: the tuning progress: TRANSIENT_LOCAL (the last one at once) and a queue for its bursts
PROGRESS_QOS = QoSProfile(depth=50, durability="transient_local")


def state_dict(msg) -> dict:
    """A typed state message (hri_interfaces AtomicState, InteractionState, PidTuningStatus) as the
    plain dict the page shows: stamp dropped, ``Count[]`` -> ``{name: count}``,
    ``admittance_lambda`` -> ``lambda``; PidTuningStatus's ``JointGains[]`` -> ``gains`` and
    ``acknowledged`` maps ``{joint: {kp, ki, kd}}`` (``None``: not acknowledged)."""
    d = msgs.to_dict(msg)
    d.pop("stamp", None)
    for k in ("rejected", "events", "served"):
        if isinstance(d.get(k), list):
            d[k] = {c["name"]: c["count"] for c in d[k]}
    if "admittance_lambda" in d:
        d["lambda"] = d.pop("admittance_lambda")
    if msgs.type_name_of(msg) == "hri_interfaces/msg/PidTuningStatus":
        gains = {g["joint"]: {"kp": g["kp"], "ki": g["ki"], "kd": g["kd"]} for g in d["gains"]}
        d["acknowledged"] = {g["joint"]: (gains[g["joint"]] if g["acknowledged"] else None) for g in d["gains"]}
        d["gains"] = gains
    return d


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
        # --- gate + server
        # node-clock times of the last safe stops published (bounded: a node runs for hours), and the count
        self.stop_events: deque[float] = deque(maxlen=STOP_EVENTS_KEPT)
        self.stops_published = 0
        self.gate = CommandGate(rules, dispatch=self.dispatch, on_safe_stop=self.safe_stop,
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
        snap["stops_published"] = self.stops_published
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

    # ------------------------------------------------------------------ commands
    def safe_stop(self) -> dict:
        """Called on the WebSocket receive path: publish at once (thread-safe), no queue."""
        self.pub_stop.publish(msgs.new(STOP_REQUEST_TYPE, source="console", reason="SAFE STOP from the console"))
        t = self.now()
        self.stop_events.append(t)
        self.stops_published += 1
        self.state.on_safe_stop(True)
        self.get_logger().warn(f"SAFE STOP from the console -> {self.safe_stop_topic}")
        return {**self._delivery(self.pub_stop), "t_s": t}

    def _delivery(self, pub, expected: bool = True) -> dict:
        """How many subscriptions a command reached (matched when it was published); a warning
        when none did and one was ``expected`` (e.g. set_mode with no interaction node running)."""
        n = pub.get_subscription_count()
        out = {"topic": pub.topic_name, "subscribers": n}
        if n == 0 and expected:
            out["warning"] = f"no subscriber on {pub.topic_name}: nothing received it"
            self.get_logger().warn(f"console: {out['warning']}")
        return out

    def _call(self, name: str, cmd, **fields) -> tuple[Any, dict]:
        """Call ``<pid_service>/<name>``; a refusal raises :class:`Rejected` with its sentence."""
        cli = self.cli[name]
        if not cli.service_is_ready():
            raise Rejected("unavailable", f"service {cli.srv_name} is not available", cmd.id)
        self.state.set_busy(cmd.type, json.dumps(cmd.args))
        try:
            fut = cli.call_async(msgs.new(cli.req_type, **fields))
            if not fut.wait(self.service_timeout_s):
                raise Rejected("timeout", f"{cli.srv_name}: no reply within {self.service_timeout_s:g} s", cmd.id)
        finally:
            self.state.set_busy(None)
        if fut.exception() is not None:
            raise Rejected("unavailable", f"{cli.srv_name}: {fut.exception()}", cmd.id)
        resp = fut.result()
        result = self.state.on_pid_reply(cmd.type, resp.success, resp.message, getattr(resp, "result_json", ""))
        if not resp.success:
            raise Rejected("service_refused", resp.message, cmd.id)
        return resp, result

    def _set_parameters(self, cmd, values: dict) -> dict:
        """Set ``values`` (name -> value) on the interaction node in one atomic set; its refusal
        raises :class:`Rejected` with the node's sentence (nothing changed)."""
        cli = self.param_cli
        if not cli.service_is_ready():
            raise Rejected("unavailable", f"service {cli.srv_name} is not available (is the interaction node "
                           "running?)", cmd.id)
        req = msgs.new(cli.req_type, parameters=[msgs.new("rcl_interfaces/msg/Parameter", name=n, value=to_value_msg(v))
                                                 for n, v in values.items()])
        try:
            res = cli.call(req, timeout_s=self.service_timeout_s).result
        except Exception as exc:  # noqa: BLE001  (timeout / transport: one line on the page)
            raise Rejected("timeout", f"{cli.srv_name}: {exc}", cmd.id) from None
        if not res.successful:
            raise Rejected("service_refused", res.reason, cmd.id)
        node = cli.srv_name.rsplit("/", 1)[0]          # resolved in the console's namespace
        return {"message": f"{', '.join(values)} set on {node}", "node": node}

    def dispatch(self, cmd) -> Any:
        a = cmd.args
        t = cmd.type
        if t == "ping":
            return {"t_s": self.now()}
        if t == "release_stop":
            if not self.reset_cli.service_is_ready():
                raise Rejected("unavailable", f"{RESET_SERVICE} is not available (is the stop supervisor "
                               "running?)", cmd.id)
            try:
                resp = self.reset_cli.call(msgs.new("std_srvs/srv/Trigger_Request"), timeout_s=self.service_timeout_s)
            except Exception as exc:  # noqa: BLE001  (timeout / transport: one line on the page)
                raise Rejected("timeout", f"{RESET_SERVICE}: {exc}", cmd.id) from None
            if not resp.success:
                raise Rejected("service_refused", resp.message, cmd.id)
            self.pub_reset.publish(msgs.new("std_msgs/msg/Bool", data=True))
            self.get_logger().warn(f"RESET from the console: {resp.message}")
            # an arm stack has no atomic node: nobody on the atomic reset is only a warning on Tino
            return {"message": resp.message, **self._delivery(self.pub_reset, expected=self.state.has_atomic())}
        if t == "set_mode":
            return {"mode": a["mode"], **self._set_parameters(cmd, {MODE: str(a["mode"])})}
        if t == "set_gains":
            g = a["gains"]
            return {**g, **self._set_parameters(cmd, {IMPEDANCE[k]: [float(x) for x in g[k]]
                                                      for k in ("stiffness", "damping")})}
        if t == "pid_autotune":
            joint = self.state.pid_joint(a["joint"], cmd.id)
            resp, result = self._call("auto_tune", cmd, joint=joint, heuristic="")
            return {"message": resp.message, "tuning": result.get("tuning"), "gains": result.get("gains")}
        if t == "pid_apply":
            joint = self.state.pid_joint(a["joint"], cmd.id)
            if "heuristic" in a:
                resp, result = self._call("apply", cmd, joint=joint, heuristic=a["heuristic"], gains=[])
                self.state.on_applied(joint, a["heuristic"])
            else:
                resp, result = self._call("apply", cmd, joint=joint, heuristic="",
                                          gains=self.state.pid_gains(joint, a["gains"], cmd.id))
                self.state.on_applied(joint, None)
            return {"message": resp.message, **result}
        if t in ("pid_start", "pid_flip"):
            joint = self.state.pid_joint(a["joint"], cmd.id)
            resp, result = self._call("evaluate" if t == "pid_start" else "flip", cmd, joint=joint, heuristic="",
                                      gains=[])
            return {"message": resp.message, "evaluation": result.get("evaluation")}
        if t == "pid_apply_all":
            resp, result = self._call("apply_all", cmd, joint="", heuristic="",
                                      gains=[a["gains"][k] for k in ("kp", "ki", "kd")])
            return {"message": resp.message, **result}
        if t in ("pid_replay", "pid_save_motion"):
            resp, result = self._call(t[len("pid_"):], cmd, motion=a["motion"])
            return {"message": resp.message, "evaluation": result.get("evaluation")}
        if t in PID_TRIGGERS:
            resp, result = self._call(PID_TRIGGERS[t], cmd)
            return {"message": result.get("message", resp.message)}
        raise Rejected("unavailable", f"{t} is not handled by the console node", cmd.id)

    def destroy_node(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        super().destroy_node()


def main(argv=None) -> int:
    return run_node(ConsoleNode, argv)    # StartupRefused is an input error: one line, exit 2


if __name__ == "__main__":
    sys.exit(main())
