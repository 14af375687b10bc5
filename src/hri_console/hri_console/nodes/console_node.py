"""``console``: the operator console as an hri_runtime node (issue 10).

The node owns a :class:`hri_console.server.ConsoleServer` (HTTP + WebSocket, token auth) and is
only a *client* of the rest of the stack: everything it does goes through topics and services a
script could use as well.

In (topics from their owners' config sections):
  ``console.topics.diagnostics`` (DiagnosticArray) -> link-health table;
  ``teleop.topics.joint_states`` (JointState) -> joint positions against ``joints`` limits, and the
  measured value of the signed-error graph; ``console.topics.joint_setpoints`` (JointState) -> its
  set-point; ``teleop.topics.ee_pose`` (PoseStamped); ``teleop.topics.mode`` (String TRACK/HOLD);
  ``interaction.topics.state`` and ``atomic.topics.atomic_state`` (String, JSON);
  ``<console.pid_service>/status`` (String, JSON: gains, acknowledged gains).
Out:
  ``safe_stop``  -> std_msgs/Bool ``true`` on ``pulse.topics.safe_stop`` **published from the
                    WebSocket receive path itself** (no queue, no executor hop: the runtime's
                    publish is thread-safe), the same topic hri_pulse's link monitor uses;
  ``release_stop`` -> Bool ``false`` there, then Bool ``true`` on ``atomic.topics.reset`` (clears
                    a latched fault; the robot never restarts by itself);
  ``set_mode``  -> std_msgs/String on ``interaction.topics.mode``;
  ``set_gains`` -> std_msgs/Float64MultiArray ``[K diag 6, D diag 6]`` on ``interaction.topics.gains``;
  ``pid_*``     -> services of the hri_pid_tuning node (``<pid_service>/auto_tune``, ``apply``,
                    ``evaluate``, ``record_start``, ``record_stop``, ``reset``, ``save``); a refusal
                    (``success = false``) is shown on the page with the service's sentence.

Service calls run on the server's single command worker (ordered), never on the executor thread
and never in front of a safe stop. Parameters: ``robot`` (config name, default fr3), ``host``
("" = ``console.bind_host``), ``port`` (-1 = ``console.port``, 0 = any free port),
``serve`` (false: no HTTP server, for tests that drive :meth:`ConsoleNode.handle`).
"""
from __future__ import annotations

import json
import math
import sys
from typing import Any, Optional

from hri_runtime import msgs
from hri_runtime.config import load_robot_config
from hri_runtime.node import Node, run_node

from hri_console.core.protocol import CommandGate, ConsoleParams, Rejected, StartupRefused, check_bind
from hri_console.core.state import ConsoleState, StateParams

TUNE_SRV = "hri_pid_tuning/srv/Tune"


def _v(p):
    return getattr(p, "value", p)


def _as_bool(v) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


def _register_tune() -> None:
    """The Tune service type is defined by hri_pid_tuning; register it the way its node does."""
    from hri_pid_tuning.nodes.tuning_node import register_interfaces

    register_interfaces()


class ConsoleNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("console", **kw)
        robot = str(_v(self.declare_parameter("robot", "fr3")))
        host = str(_v(self.declare_parameter("host", "")))
        port = int(_v(self.declare_parameter("port", -1)))
        serve = _as_bool(_v(self.declare_parameter("serve", True)))
        self.cfg = cfg if cfg is not None else load_robot_config(robot)
        c = dict(self.cfg["console"])
        if host:
            c["bind_host"] = host
        if port >= 0:
            c["port"] = port
        names = list(self.cfg.get("joints", {}).get("names") or [])
        self.params = ConsoleParams.from_config(c, num_joints=max(1, len(names)))
        check_bind(self.params)                      # StartupRefused before anything is bound
        deg = math.pi / 180.0
        jc = self.cfg.get("joints", {})
        self.state = ConsoleState(StateParams.from_config(c["state"]), clock=self.now, joint_names=names,
                                  position_min_rad=[x * deg for x in (jc.get("position_min_deg") or [])],
                                  position_max_rad=[x * deg for x in (jc.get("position_max_deg") or [])])
        self.service_timeout_s = float(c["service_timeout_s"])
        tt, it, at = self.cfg["teleop"]["topics"], self.cfg["interaction"]["topics"], self.cfg["atomic"]["topics"]
        self.safe_stop_topic = self.cfg["pulse"]["topics"]["safe_stop"]
        # --- out
        self.pub_stop = self.create_publisher("std_msgs/msg/Bool", self.safe_stop_topic, qos=10)
        self.pub_reset = self.create_publisher("std_msgs/msg/Bool", at["reset"], qos=10)
        self.pub_mode = self.create_publisher("std_msgs/msg/String", it["mode"], qos=10)
        self.pub_gains = self.create_publisher("std_msgs/msg/Float64MultiArray", it["gains"], qos=10)
        # --- in
        self.create_subscription("diagnostic_msgs/msg/DiagnosticArray", c["topics"]["diagnostics"],
                                 self.on_diagnostics, qos=50)
        self.create_subscription("sensor_msgs/msg/JointState", tt["joint_states"], self.on_joint_states, qos=10)
        self.create_subscription("sensor_msgs/msg/JointState", c["topics"]["joint_setpoints"],
                                 self.on_setpoints, qos=10)
        self.create_subscription("geometry_msgs/msg/PoseStamped", tt["ee_pose"], self.on_ee_pose, qos=10)
        self.create_subscription("std_msgs/msg/String", tt["mode"],
                                 lambda m: self.state.on_teleop_mode(m.data), qos=10)
        self.create_subscription("std_msgs/msg/String", it["state"],
                                 lambda m: self.state.on_interaction_state(self._json(m.data, it["state"])), qos=10)
        self.create_subscription("std_msgs/msg/String", at["atomic_state"],
                                 lambda m: self.state.on_atomic_state(self._json(m.data, at["atomic_state"])), qos=10)
        pid = c["pid_service"].rstrip("/")
        self.create_subscription("std_msgs/msg/String", f"{pid}/status", self.on_pid_status, qos=10)
        # --- PID services (clients)
        _register_tune()
        self.cli = {n: self.create_client(TUNE_SRV, f"{pid}/{n}") for n in ("auto_tune", "apply", "evaluate")}
        for n in ("record_start", "record_stop", "reset", "save"):
            self.cli[n] = self.create_client("std_srvs/srv/Trigger", f"{pid}/{n}")
        # --- gate + server
        self.stop_events: list[float] = []           # node-clock time of every safe stop published
        self.gate = CommandGate(self.params, dispatch=self.dispatch, on_safe_stop=self.safe_stop,
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

    def _json(self, text: str, endpoint: str) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            self._reject(endpoint, "bad_json", text[:80])
            self.state.drop("bad_json")
            return {"raw": text[:500]}

    def handle(self, raw: str | bytes) -> dict:
        """One client frame through the gate (what the WebSocket does, minus the socket)."""
        return self.gate.handle(raw)

    def snapshot(self) -> dict:
        snap = self.state.snapshot()
        snap["modes"] = list(self.params.modes)
        snap["safe_stop_topic"] = self.safe_stop_topic
        snap["stops_published"] = len(self.stop_events)
        snap["node_rejected"] = {f"{e} {c}": n for (e, c), n in self.rejected.items()}
        return snap

    # ------------------------------------------------------------------ subscriptions
    def on_diagnostics(self, msg) -> None:
        self.state.on_diagnostics([(s.name, int(s.level), s.message, {kv.key: kv.value for kv in s.values})
                                   for s in msg.status])

    def _positions(self, msg, endpoint: str):
        names, pos = list(msg.name), [float(x) for x in msg.position]
        if len(names) != len(pos):
            self._reject(endpoint, "length_mismatch", f"{len(names)} names, {len(pos)} positions")
            self.state.drop("length_mismatch")
            return None
        if not all(math.isfinite(x) for x in pos):
            self._reject(endpoint, "non_finite", "NaN/Inf position")
            self.state.drop("non_finite")
            return None
        return names, pos

    def on_joint_states(self, msg) -> None:
        r = self._positions(msg, "joint_states")
        if r is not None:
            self.state.on_joint_states(*r)

    def on_setpoints(self, msg) -> None:
        r = self._positions(msg, "joint_setpoints")
        if r is not None:
            self.state.on_setpoints(*r)

    def on_ee_pose(self, msg) -> None:
        p, o = msg.pose.position, msg.pose.orientation
        vals = [p.x, p.y, p.z, o.x, o.y, o.z, o.w]
        if not all(math.isfinite(x) for x in vals):
            self._reject("ee_pose", "non_finite", "NaN/Inf pose")
            self.state.drop("non_finite")
            return
        self.state.on_ee_pose(vals[:3], vals[3:])

    def on_pid_status(self, msg) -> None:
        st = self._json(msg.data, "pid_status")
        if isinstance(st, dict):
            self.state.on_pid_status(st)

    # ------------------------------------------------------------------ commands
    def safe_stop(self) -> dict:
        """Called on the WebSocket receive path: publish at once (thread-safe), no queue."""
        self.pub_stop.publish(msgs.new("std_msgs/msg/Bool", data=True))
        t = self.now()
        self.stop_events.append(t)
        self.state.on_safe_stop(True)
        self.get_logger().warn(f"SAFE STOP from the console -> {self.safe_stop_topic}")
        return {"topic": self.safe_stop_topic, "t_s": t}

    def _pid_joint(self, joint, cmd) -> str:
        if isinstance(joint, str):
            return joint
        joints = list(self.state.snapshot()["pid"]["status"].get("joints") or [])
        if not 0 <= joint < len(joints):
            raise Rejected("out_of_range", f"joint {joint} not in the tuning node's joints {joints}", cmd.id)
        return joints[joint]

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
        result = {}
        if getattr(resp, "result_json", ""):
            try:
                result = json.loads(resp.result_json)
            except ValueError:
                result = {}
        if name == "auto_tune" and isinstance(result.get("tuning"), dict):
            self.state.on_autotune(result["tuning"])      # the table, also of a failed relay
        reply = {"command": cmd.type, "success": bool(resp.success), "message": resp.message}
        self.state.set_last_reply(reply)
        if not resp.success:
            raise Rejected("service_refused", resp.message, cmd.id)
        return resp, result

    def dispatch(self, cmd) -> Any:
        a = cmd.args
        t = cmd.type
        if t == "ping":
            return {"t_s": self.now()}
        if t == "release_stop":
            self.pub_stop.publish(msgs.new("std_msgs/msg/Bool", data=False))
            self.pub_reset.publish(msgs.new("std_msgs/msg/Bool", data=True))
            self.state.on_safe_stop(False)
            return {"topic": self.safe_stop_topic}
        if t == "set_mode":
            self.pub_mode.publish(msgs.new("std_msgs/msg/String", data=a["mode"]))
            return {"mode": a["mode"]}
        if t == "set_gains":
            g = a["gains"]
            self.pub_gains.publish(msgs.new("std_msgs/msg/Float64MultiArray",
                                            data=list(g["stiffness"]) + list(g["damping"])))
            return g
        if t == "pid_autotune":
            joint = self._pid_joint(a["joint"], cmd)
            resp, result = self._call("auto_tune", cmd, joint=joint, heuristic="")
            return {"message": resp.message, "tuning": result.get("tuning"), "gains": result.get("gains")}
        if t == "pid_apply":
            joint = self._pid_joint(a["joint"], cmd)
            if "heuristic" in a:
                resp, result = self._call("apply", cmd, joint=joint, heuristic=a["heuristic"], gains=[])
                self.state.on_applied(joint, a["heuristic"])
            else:
                cur = (self.state.snapshot()["pid"]["status"].get("gains") or {}).get(joint) or {}
                full = {**{k: cur.get(k) for k in ("kp", "ki", "kd")}, **a["gains"]}
                missing = [k for k, v in full.items() if v is None]
                if missing:
                    raise Rejected("missing_field", f"{joint}: current {missing} unknown (no status yet); "
                                   "give kp, ki and kd", cmd.id)
                resp, result = self._call("apply", cmd, joint=joint, heuristic="",
                                          gains=[float(full[k]) for k in ("kp", "ki", "kd")])
                self.state.on_applied(joint, None)
            return {"message": resp.message, **result}
        if t == "pid_start":
            joint = self._pid_joint(a["joint"], cmd)
            resp, result = self._call("evaluate", cmd, joint=joint, heuristic="", gains=[])
            return {"message": resp.message, "evaluation": result.get("evaluation")}
        names = {"pid_record": "record_start", "pid_stop": "record_stop", "pid_reset": "reset", "pid_save": "save"}
        if t in names:
            resp, _ = self._call(names[t], cmd)
            return {"message": resp.message}
        raise Rejected("unavailable", f"{t} is not handled by the console node", cmd.id)

    def destroy_node(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        super().destroy_node()


def main(argv=None) -> int:
    try:
        return run_node(ConsoleNode, argv)
    except StartupRefused as exc:
        print(f"console: refused to start: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
