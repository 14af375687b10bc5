"""PID tuning service node (hri_runtime Node API): the thesis's services as ROS services on a
simulated robot (``pid_tuning.node.robot`` / ``setup``). A thin translation layer: every request
goes to :class:`hri_pid_tuning.service_api.PidTuningServer`.

Services (``~`` = the node's name, default ``/pid_tuning``):

=====================  ==============================  ==============================================
``~/auto_tune``        ``hri_interfaces/srv/Tune``         relay test of ``joint`` ('' = all, tuning order),
                                                        apply ``heuristic`` ('' = config default)
``~/apply``            ``hri_interfaces/srv/Tune``         ``gains`` [kp, ki, kd] or a kept ``heuristic``
``~/evaluate``         ``hri_interfaces/srv/Tune``         step test of ``joint`` ('' = all + dance)
``~/record_start``     ``std_srvs/srv/Trigger``        manual TestRunner mode (samples from topics)
``~/record_stop``      ``std_srvs/srv/Trigger``        message = the recording's evaluation (JSON)
``~/reset``            ``std_srvs/srv/Trigger``        test environment + test runner reset
``~/save`` / ``~/load`` ``std_srvs/srv/Trigger``       PidConfiguration JSON at ``configuration_path``
=====================  ==============================  ==============================================

``Tune`` response: ``success``, ``message`` (a sentence; the reason when rejected) and
``result_json`` (the handler's result as JSON: tuning tables, evaluations in the thesis's names).
std_srvs has no request field for a joint name, hence the custom ``hri_interfaces/srv/Tune``.

Topics: subscribes ``joint_setpoints`` and ``joint_states`` (``sensor_msgs/JointState``, rad) –
while a manual recording runs, each ``joint_states`` message is one sample paired with the last
set-point; publishes ``~/status`` (``hri_interfaces/msg/PidTuningStatus``: gains, acknowledged gains,
rejected-request counts) every ``status_period_s``.
"""
from __future__ import annotations

import json
import math
from typing import Any

from hri_runtime import msgs
from hri_runtime.geometry import seconds_from_time, time_from_seconds
from hri_runtime.node import Node, run_node

from ..report import _clean
from ..service_api import PidTuningServer, Reply

TUNE_SRV = "hri_interfaces/srv/Tune"          # src/hri_interfaces/srv/Tune.srv
STATUS_MSG = "hri_interfaces/msg/PidTuningStatus"
PROGRESS_MSG = "hri_interfaces/msg/TuningProgress"


def register_interfaces() -> None:
    """Kept for callers: the runtime loads ``hri_interfaces`` from its .msg/.srv files."""
    msgs.srv_types(TUNE_SRV)


def status_msg(status: dict[str, Any], stamp) -> Any:
    """``hri_interfaces/msg/PidTuningStatus`` of ``PidTuningServer.status()``."""
    acked = status.get("acknowledged", {})
    gains = []
    for j, g in status.get("gains", {}).items():
        gains.append(msgs.new("hri_interfaces/msg/JointGains", joint=str(j), kp=float(g.get("kp", math.nan)),
                              ki=float(g.get("ki", math.nan)), kd=float(g.get("kd", math.nan)),
                              acknowledged=acked.get(j) is not None and acked.get(j) == g))
    counts = lambda d: [msgs.new("hri_interfaces/msg/Count", name=str(k), count=int(v)) for k, v in d.items()]  # noqa: E731
    return msgs.new(STATUS_MSG, stamp=stamp, robot=str(status.get("robot", "")), setup=str(status.get("setup", "")),
                    joints=[str(j) for j in status.get("joints", [])], gains=gains,
                    recording=bool(status.get("recording")), rejected=counts(status.get("rejected", {})),
                    served=counts(status.get("served", {})))


class PidTuningNode(Node):
    def __init__(self, session=None, overrides=None, **kw):
        self._cfg_overrides = overrides        # config overrides (the CLI's --set)
        super().__init__("pid_tuning", **kw)
        register_interfaces()
        if session is None:
            from ..session import ARM_ROBOT, TuningSession, load_pid_config

            node_cfg = load_pid_config(ARM_ROBOT, overrides=overrides)["pid_tuning"]["node"]
            robot = self.declare_parameter("robot", node_cfg["robot"]).value
            setup = self.declare_parameter("setup", node_cfg["setup"]).value
            if self.declare_parameter("live", node_cfg["live"]).value:
                session = self._live_session(robot, setup)
            else:
                session = TuningSession.create(robot, setup, overrides=overrides, reporter=self._progress)
        if session.autotuner.reporter is None:
            session.autotuner.reporter = self._progress
        self.session = session
        cfg = session.cfg["pid_tuning"]["node"]
        self.server = PidTuningServer(session)
        self.server.reporter = self._progress
        self.progress_pub = self.create_publisher(PROGRESS_MSG, session.cfg["pid_tuning"]["live"]["progress_topic"],
                                                  qos=10)
        self.configuration_path = self.declare_parameter("configuration_path", cfg["configuration_path"]).value
        self._last_setpoint: dict[str, float] = {}
        self.status_pub = self.create_publisher(STATUS_MSG, "~/status", qos=10)
        # on a live robot the requests that move it or send it gains run as jobs (answered when done)
        jobs = {"auto_tune", "apply", "evaluate", "reset", "load"} if self.lockstep is not None else set()
        for name, cb in (("auto_tune", self.on_auto_tune), ("apply", self.on_apply), ("evaluate", self.on_evaluate)):
            srv = self.create_service(TUNE_SRV, f"~/{name}", cb)
            if name in jobs:
                self._as_job(srv, name, cb)
        for name, cb in (("record_start", self.on_record_start), ("record_stop", self.on_record_stop),
                         ("reset", self.on_reset), ("save", self.on_save), ("load", self.on_load)):
            srv = self.create_service("std_srvs/srv/Trigger", f"~/{name}", cb)
            if name in jobs:
                self._as_job(srv, name, cb)
        self.create_subscription("sensor_msgs/msg/JointState", "joint_setpoints", self.on_setpoints, qos=10)
        self.create_subscription("sensor_msgs/msg/JointState", "joint_states", self.on_states, qos=10)
        self.create_timer(float(cfg["status_period_s"]), self.publish_status)

    # --- live robot ------------------------------------------------------------------------------
    lockstep = None
    live_robot = None

    def _live_session(self, robot: str, setup: str | None):
        """A session whose plant is the robot node (``pid_tuning.live``), driven in lockstep jobs."""
        from ..live import LiveRobot, Lockstep
        from ..session import TuningSession

        self.lockstep = Lockstep()

        def make(model, collides):
            from ..session import load_pid_config

            from hri_core.pid import PIDGains
            from ..session import ARM_ROBOT

            pt = load_pid_config(robot, overrides=self._cfg_overrides)["pid_tuning"]
            ig = (pt["humanoid_arm"] if robot == ARM_ROBOT else pt)["initial_gains"]
            recovery = {j: PIDGains(kp, ki, kd) for j, kp, ki, kd in
                        zip(model.joint_names, ig["kp"], ig["ki"], ig["kd"])} if ig else None
            self.live_robot = LiveRobot(self, model, self.lockstep, pt["live"], collides,
                                        pt["safe_tuning"]["collision_samples"], recovery)
            return self.live_robot

        session = TuningSession.create(robot, setup, plant=make, reporter=self._progress, overrides=self._cfg_overrides)
        session.storage.transport = self.live_robot.set_gains     # acknowledged by the robot node
        # a silent robot must still end a waiting job: poke on the node clock too
        self.create_timer(0.5 * float(session.cfg["pid_tuning"]["live"]["state_timeout_s"]), self.lockstep.poke)
        return session

    def run_job(self, name: str, fn, on_done=None) -> None:
        """Run ``fn()`` as a live job (the CLI's whole tuning flow is one); ``on_done(result, exc)``."""
        self._progress("start", "", 0.0, name)

        def done(result, exc):
            if exc is not None:
                self.get_logger().error(f"{name} failed: {exc}")
            if on_done is not None:
                on_done(result, exc)

        self.lockstep.start(name, fn, done)

    def _as_job(self, srv, name: str, cb) -> None:
        """Answer ``srv`` when its callback, run as a live job, has finished (busy: at once)."""
        def handle(data, respond):
            try:
                req = msgs.deserialize(data, srv.req_type)
            except msgs.DecodeError as exc:
                self._reject(srv.srv_name, "malformed_cdr", str(exc))
                return
            resp = msgs.new(srv.resp_type)
            with_json = hasattr(resp, "result_json")
            if self.lockstep.busy:
                reply = self.server._reject("busy", f"busy with {self.lockstep.name}; try again when it has ended")
                respond(msgs.serialize(self._fill(resp, reply, with_json), srv.resp_type))
                return

            def done(out, exc):
                if exc is not None:
                    self.server.rejected["robot_failed"] += 1
                    out = self._fill(resp, Reply(False, f"{name} failed: {exc}", {"cause": "robot_failed"}), with_json)
                self._progress("done" if out.success else "failed", "", 1.0, out.message.split("\n")[0][:200])
                srv.handled += 1
                respond(msgs.serialize(out, srv.resp_type))

            self._progress("start", req.joint if hasattr(req, "joint") else "", 0.0, name)
            self.lockstep.start(name, lambda: cb(req, resp), done)

        srv._handle_request = handle

    def _progress(self, phase: str, joint: str, fraction: float, detail: str = "") -> None:
        """Publish ``TuningProgress`` (phase, joint, fraction of that joint's tuning or request)."""
        pub = getattr(self, "progress_pub", None)
        if pub is None:
            return
        pub.publish(msgs.new(PROGRESS_MSG, stamp=time_from_seconds(self.get_clock().now_s()), phase=phase,
                             joint=joint, fraction=float(min(max(fraction, 0.0), 1.0)), detail=detail))

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
        t = seconds_from_time(msg.header.stamp)
        if t == 0.0:
            t = self.get_clock().now_s()
        reply = self.server.record_sample(t, [self._last_setpoint[j] for j in joints], [d[j] for j in joints])
        if not reply.success:
            self._reject("joint_states", reply.result.get("cause", "rejected"), reply.message)

    def publish_status(self) -> None:
        self.status_pub.publish(status_msg(self.server.status(), time_from_seconds(self.get_clock().now_s())))


def main(argv=None) -> int:
    return run_node(PidTuningNode, argv)


if __name__ == "__main__":
    import sys

    sys.exit(main())
