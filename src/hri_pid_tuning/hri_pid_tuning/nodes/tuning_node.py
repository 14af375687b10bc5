"""PID tuning service node (hri_runtime Node API): the thesis's services as ROS services on a
simulated robot (``pid_tuning.node.robot`` / ``setup``). A thin translation layer: every request
goes to :class:`hri_pid_tuning.service_api.PidTuningServer`.

Services (``~`` = the node's name, default ``/pid_tuning``):

=====================  ==============================  ==============================================
``~/auto_tune``        ``hri_pid_tuning/srv/Tune``     relay test of ``joint`` ('' = all, tuning order),
                                                        apply ``heuristic`` ('' = config default)
``~/apply``            ``hri_pid_tuning/srv/Tune``     ``gains`` [kp, ki, kd] or a kept ``heuristic``
``~/evaluate``         ``hri_pid_tuning/srv/Tune``     step test of ``joint`` ('' = all + dance)
``~/record_start``     ``std_srvs/srv/Trigger``        manual TestRunner mode (samples from topics)
``~/record_stop``      ``std_srvs/srv/Trigger``        message = the recording's evaluation (JSON)
``~/reset``            ``std_srvs/srv/Trigger``        test environment + test runner reset
``~/save`` / ``~/load`` ``std_srvs/srv/Trigger``       PidConfiguration JSON at ``configuration_path``
=====================  ==============================  ==============================================

``Tune`` response: ``success``, ``message`` (a sentence; the reason when rejected) and
``result_json`` (the handler's result as JSON: tuning tables, evaluations in the thesis's names).
std_srvs has no request field for a joint name, hence the one small custom definition.

Topics: subscribes ``joint_setpoints`` and ``joint_states`` (``sensor_msgs/JointState``, rad) –
while a manual recording runs, each ``joint_states`` message is one sample paired with the last
set-point; publishes ``~/status`` (``std_msgs/String``, JSON: gains, acknowledged gains,
rejected-request counts) every ``status_period_s``.
"""
from __future__ import annotations

import json
import math
from typing import Any

from hri_runtime import msgs
from hri_runtime.node import Node, run_node

from ..report import _clean
from ..service_api import PidTuningServer, Reply

TUNE_SRV = "hri_pid_tuning/srv/Tune"
TUNE_SRV_TEXT = """\
# hri_pid_tuning/srv/Tune: one joint-level request of the PID tuning service
string joint          # joint name; '' = every joint (auto_tune, evaluate)
string heuristic      # heuristic name (auto_tune: applied; apply: one of the last auto-tune's)
float64[] gains       # apply: [kp, ki, kd] parallel form; empty = use heuristic
---
bool success
string message        # what was done, or why the request was rejected
string result_json    # result as JSON (tuning tables, evaluations with the thesis's metric names)
"""


def register_interfaces() -> None:
    """Register ``hri_pid_tuning/srv/Tune`` in the runtime's type store (idempotent)."""
    try:
        msgs.get(TUNE_SRV + "_Request")
    except Exception:
        msgs.register_srv(TUNE_SRV, TUNE_SRV_TEXT)


class PidTuningNode(Node):
    def __init__(self, session=None, **kw):
        super().__init__("pid_tuning", **kw)
        register_interfaces()
        if session is None:
            from ..session import ARM_ROBOT, TuningSession, load_pid_config

            node_cfg = load_pid_config(ARM_ROBOT)["pid_tuning"]["node"]
            robot = self.declare_parameter("robot", node_cfg["robot"]).value
            setup = self.declare_parameter("setup", node_cfg["setup"]).value
            session = TuningSession.create(robot, setup)
        self.session = session
        cfg = session.cfg["pid_tuning"]["node"]
        self.server = PidTuningServer(session)
        self.configuration_path = self.declare_parameter("configuration_path", cfg["configuration_path"]).value
        self._last_setpoint: dict[str, float] = {}
        self.status_pub = self.create_publisher("std_msgs/msg/String", "~/status", qos=10)
        for name, cb in (("auto_tune", self.on_auto_tune), ("apply", self.on_apply), ("evaluate", self.on_evaluate)):
            self.create_service(TUNE_SRV, f"~/{name}", cb)
        for name, cb in (("record_start", self.on_record_start), ("record_stop", self.on_record_stop),
                         ("reset", self.on_reset), ("save", self.on_save), ("load", self.on_load)):
            self.create_service("std_srvs/srv/Trigger", f"~/{name}", cb)
        self.create_subscription("sensor_msgs/msg/JointState", "joint_setpoints", self.on_setpoints, qos=10)
        self.create_subscription("sensor_msgs/msg/JointState", "joint_states", self.on_states, qos=10)
        self.create_timer(float(cfg["status_period_s"]), self.publish_status)

    # --- helpers ---------------------------------------------------------------------------------
    def _fill(self, resp, reply: Reply, with_json: bool = True):
        resp.success = bool(reply.success)
        resp.message = reply.message
        if with_json:
            resp.result_json = json.dumps(_clean(reply.result))
        if not reply.success:
            self.get_logger().warn(reply.message)
        return resp

    # --- Tune services -------------------------------------------------------------------------------
    def on_auto_tune(self, req, resp):
        return self._fill(resp, self.server.auto_tune(req.joint, req.heuristic))

    def on_apply(self, req, resp):
        gains = [float(g) for g in req.gains] if len(req.gains) else None
        return self._fill(resp, self.server.apply(req.joint, req.heuristic, gains))

    def on_evaluate(self, req, resp):
        return self._fill(resp, self.server.evaluate(req.joint))

    # --- Trigger services --------------------------------------------------------------------------
    def on_record_start(self, req, resp):
        self._last_setpoint = {}
        return self._fill(resp, self.server.record_start("recording"), with_json=False)

    def on_record_stop(self, req, resp):
        reply = self.server.record_stop()
        self._fill(resp, reply, with_json=False)
        if reply.success:
            resp.message = json.dumps(_clean(reply.result))
        return resp

    def on_reset(self, req, resp):
        return self._fill(resp, self.server.reset(), with_json=False)

    def on_save(self, req, resp):
        from pathlib import Path

        Path(self.configuration_path).parent.mkdir(parents=True, exist_ok=True)
        return self._fill(resp, self.server.save(self.configuration_path), with_json=False)

    def on_load(self, req, resp):
        return self._fill(resp, self.server.load(self.configuration_path), with_json=False)

    # --- manual recording from topics ----------------------------------------------------------------
    def _positions(self, msg, endpoint: str) -> dict[str, float] | None:
        names = list(msg.name)
        pos = [float(p) for p in msg.position]
        if len(names) != len(pos):
            self._reject(endpoint, "length_mismatch", f"{len(names)} names, {len(pos)} positions")
            return None
        if not all(math.isfinite(p) for p in pos):
            self._reject(endpoint, "non_finite", "NaN/Inf position")
            return None
        return dict(zip(names, pos))

    def on_setpoints(self, msg):
        d = self._positions(msg, "joint_setpoints")
        if d is not None:
            self._last_setpoint.update(d)

    def on_states(self, msg):
        if self.session.runner._manual is None:
            return
        d = self._positions(msg, "joint_states")
        if d is None:
            return
        joints = self.server.joints
        missing = [j for j in joints if j not in d or j not in self._last_setpoint]
        if missing:
            self._reject("joint_states", "missing_joint", f"no state or set-point for {missing}")
            return
        t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        if t == 0.0:
            t = self.get_clock().now_s()
        reply = self.server.record_sample(t, [self._last_setpoint[j] for j in joints], [d[j] for j in joints])
        if not reply.success:
            self._reject("joint_states", reply.result.get("cause", "rejected"), reply.message)

    def publish_status(self) -> None:
        self.status_pub.publish(msgs.new("std_msgs/msg/String", data=json.dumps(_clean(self.server.status()))))


def main(argv=None) -> int:
    return run_node(PidTuningNode, argv)


if __name__ == "__main__":
    import sys

    sys.exit(main())
