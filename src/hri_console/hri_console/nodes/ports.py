"""The console's ports (:mod:`hri_console.core.commands`) on a node: the publishers and service
clients through which :class:`hri_console.core.commands.ConsoleCommands` reaches the stack.

``publish_stop``: StopRequest(source "console") on ``/safety/stop_request`` (thread-safe, from the
WebSocket receive path); ``reset_stop``: ``/safety/reset`` (std_srvs/Trigger);
``publish_atomic_reset``: Bool ``true`` on ``atomic.topics.reset``; ``set_parameters``: the
interaction node's ``set_parameters_atomically`` (what ``ros2 param set`` uses); ``call_pid``:
``<console.pid_service>/<name>`` (Tune, TuneMotion or Trigger). Every publish answers with its
delivery (:func:`~hri_console.core.commands.delivery`); a service that is not there or does not
answer within ``console.service_timeout_s`` is :class:`~hri_console.core.protocol.Rejected`.
"""
from __future__ import annotations

from hri_console.core.commands import delivery, require_ready, service_reply
from hri_console.core.protocol import PID_TRIGGERS, Rejected
from hri_runtime import msgs
from hri_runtime.parameter_service import SERVICES as PARAM_SERVICES, register_interfaces, to_value_msg
from hri_safety.nodes.stop_listener import RESET_SERVICE, STOP_REQUEST_TOPIC, STOP_REQUEST_TYPE

TUNE_SRV = "hri_interfaces/srv/Tune"
MOTION_SRV = "hri_interfaces/srv/TuneMotion"


class ConsolePorts:
    def __init__(self, node, params, atomic_reset_topic: str):
        """``params``: the typed ``console`` section (``interaction_node``, ``pid_service``,
        ``service_timeout_s``)."""
        self.node, self.timeout_s = node, params.service_timeout_s
        self.pub_stop = node.create_publisher(STOP_REQUEST_TYPE, STOP_REQUEST_TOPIC, qos=10)
        self.safe_stop_topic = self.pub_stop.topic_name       # resolved: the stack's (or its cell's) stop
        self.reset_cli = node.create_client("std_srvs/srv/Trigger", RESET_SERVICE)
        self.pub_reset = node.create_publisher("std_msgs/msg/Bool", atomic_reset_topic, qos=10)
        register_interfaces()
        self.param_cli = node.create_client(PARAM_SERVICES["set_parameters_atomically"],
                                            f"{params.interaction_node.rstrip('/')}/set_parameters_atomically")
        pid = params.pid_service.rstrip("/")
        self.cli = {n: node.create_client(TUNE_SRV, f"{pid}/{n}")
                    for n in ("auto_tune", "apply", "apply_all", "evaluate", "flip")}
        self.cli.update({n: node.create_client(MOTION_SRV, f"{pid}/{n}") for n in ("replay", "save_motion")})
        self.cli.update({n: node.create_client("std_srvs/srv/Trigger", f"{pid}/{n}") for n in PID_TRIGGERS.values()})

    def call_pid(self, name: str, **fields):
        """``<pid_service>/<name>`` from the command worker (waits for the executor to answer)."""
        cli = self.cli[name]
        require_ready(cli.service_is_ready(), cli.srv_name)
        return service_reply(cli.call_async(msgs.new(cli.req_type, **fields)), cli.srv_name, self.timeout_s)

    def _blocking_call(self, cli, req, hint: str):
        require_ready(cli.service_is_ready(), cli.srv_name, hint)
        try:
            return cli.call(req, timeout_s=self.timeout_s)
        except Exception as exc:  # noqa: BLE001  (timeout / transport: one line on the page)
            raise Rejected("timeout", f"{cli.srv_name}: {exc}") from None

    def reset_stop(self):
        return self._blocking_call(self.reset_cli, msgs.new("std_srvs/srv/Trigger_Request"),
                                   " (is the stop supervisor running?)")

    def set_parameters(self, values: dict) -> tuple[bool, str, str]:
        cli = self.param_cli
        req = msgs.new(cli.req_type, parameters=[msgs.new("rcl_interfaces/msg/Parameter", name=n, value=to_value_msg(v))
                                                 for n, v in values.items()])
        res = self._blocking_call(cli, req, " (is the interaction node running?)").result
        return res.successful, res.reason, cli.srv_name.rsplit("/", 1)[0]    # resolved in the console's namespace

    def _publish(self, pub, msg, expected: bool = True) -> dict:
        pub.publish(msg)
        out = delivery(pub.topic_name, pub.get_subscription_count(), expected)
        if "warning" in out:
            self.node.get_logger().warn(f"console: {out['warning']}")
        return out

    def publish_atomic_reset(self, expected: bool) -> dict:
        return self._publish(self.pub_reset, msgs.new("std_msgs/msg/Bool", data=True), expected)

    def publish_stop(self) -> dict:
        out = self._publish(self.pub_stop, msgs.new(STOP_REQUEST_TYPE, source="console",
                                                    reason="SAFE STOP from the console"))
        self.node.get_logger().warn(f"SAFE STOP from the console -> {self.safe_stop_topic}")
        return out
