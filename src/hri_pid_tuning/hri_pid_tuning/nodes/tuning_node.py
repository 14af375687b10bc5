"""PID tuning service node (hri_runtime Node API): the thesis's services as ROS services on a
robot (``pid_tuning.node.robot`` / ``setup``). Only wiring: every request goes to
:class:`hri_pid_tuning.core.server.PidTuningServer` (the table ``SERVICES`` there says which
handler), on a live robot as a job (:class:`hri_pid_tuning.live.LiveJobs`).

Services ``~/<name>`` (``~`` = the node's name, default ``/pid_tuning``) for every entry of
:data:`hri_pid_tuning.core.server.SERVICES`: auto_tune, apply, apply_all, evaluate, flip
(``hri_interfaces/srv/Tune``), replay, save_motion (``hri_interfaces/srv/TuneMotion``),
record_start, record_stop, reset, save, load (``std_srvs/srv/Trigger``); what each does:
docs/pid-tuning.md "ROS node". Replies: ``success``, ``message`` (a sentence; the reason when
rejected), ``result_json`` (the handler's result as JSON, thesis names).

Topics: subscribes ``joint_setpoints`` and ``joint_states`` (``sensor_msgs/JointState``, rad) –
while a manual recording runs, each ``joint_states`` message is one sample paired with the last
set-point; publishes ``~/status`` (``hri_interfaces/msg/PidTuningStatus``: gains, acknowledged gains,
recorded motions, rejected-request counts) every ``pid_tuning.node.status_period_s``.
"""
from __future__ import annotations

import json

from hri_runtime.geometry import seconds_from_time, time_from_seconds
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config
from hri_runtime.qos import QOS_LATCHED

from ..core.motion import MotionLibrary
from ..core.server import JSON_MESSAGE, MOVES, SERVICES, PidTuningServer, Reply
from ..live import LiveJobs, live_session
from ..messages import SRV_TYPES, progress_msg, status_msg
from ..report import json_ready
from ..session import TuningSession
from hri_pid_tuning.parameters_gen import PidTuningParams


class PidTuningNode(Node):
    """``session``: a ready session (tests); else one from the parameters: ``pid_tuning.node.robot``
    (humanoid_arm | fr3), ``pid_tuning.node.setup``, ``pid_tuning.node.live`` (the robot is another
    node: :mod:`hri_pid_tuning.live`). ``cfg``: the merged config (default: the ``robot``
    parameter's; the CLI passes one with its ``--set`` overrides)."""

    def __init__(self, session=None, cfg: dict | None = None, **kw):
        super().__init__("pid_tuning", **kw)
        self.cfg = declare_config(self, ("pid_tuning",), cfg=session.cfg if session is not None else cfg)
        pt = PidTuningParams.from_tree(self.cfg)       # the node's values
        nc = pt.node
        self.live_params = pt.live
        self.progress_pub = self.create_publisher("hri_interfaces/msg/TuningProgress", pt.live.progress_topic,
                                                  qos=QOS_LATCHED)
        self.jobs = None
        if session is None and nc.live:
            self.jobs = LiveJobs(self, self._progress)
            session = live_session(self, self.jobs.lockstep, nc.robot, nc.setup, self.cfg, self._progress)
        elif session is None:
            session = TuningSession.create(nc.robot, nc.setup, cfg=self.cfg, reporter=self._progress)
        if session.autotuner.reporter is None:
            session.autotuner.reporter = self._progress
        self.session = session
        self.server = PidTuningServer(session, MotionLibrary(nc.motions_dir, nc.motions_listed_max),
                                      nc.configuration_path, nc.results_dir, plots=pt.output.plots)
        self.server.reporter = self._progress
        self.status_pub = self.create_publisher("hri_interfaces/msg/PidTuningStatus", "~/status", qos=QOS_LATCHED)
        for name, (kind, handler) in SERVICES.items():
            cb = self._service(name, handler)
            if self.jobs is not None and name in MOVES:     # a live robot: answered when the job ends
                self.create_service(SRV_TYPES[kind], f"~/{name}", self.jobs.service(name, cb, self._refusal),
                                    deferred=True)
            else:
                self.create_service(SRV_TYPES[kind], f"~/{name}", cb)
        self.create_subscription("sensor_msgs/msg/JointState", "joint_setpoints", self.on_setpoints, qos=10)
        self.create_subscription("sensor_msgs/msg/JointState", "joint_states", self.on_states, qos=10)
        self.create_timer(nc.status_period_s, self.publish_status)

    @property
    def live_robot(self):
        return self.session.plant if self.jobs is not None else None

    def run_job(self, name: str, fn, on_done=None) -> None:
        """Run ``fn()`` as a live job (the CLI's whole tuning flow is one); ``on_done(result, exc)``."""
        self.jobs.run(name, fn, on_done)

    # --- services --------------------------------------------------------------------------------
    def _service(self, name: str, handler):
        def cb(req, resp):
            return self._fill(resp, handler(self.server, req), json_message=name in JSON_MESSAGE)
        return cb

    def _refusal(self, resp, cause: str, message: str, exc: BaseException | None = None):
        """A live request refused (busy) or whose job failed: counted, the one reason."""
        reply = self.server.job_failed(cause, exc) if exc is not None else self.server.reject(cause, message)
        return self._fill(resp, reply)

    def _fill(self, resp, reply: Reply, json_message: bool = False):
        resp.success = bool(reply.success)
        resp.message = reply.message
        if hasattr(resp, "result_json"):
            resp.result_json = json.dumps(json_ready(reply.result))
        elif json_message and reply.success:
            resp.message = json.dumps(json_ready(reply.result))
        if not reply.success:
            self.get_logger().warn(reply.message)
        return resp

    def _progress(self, phase: str, joint: str, fraction: float, detail: str = "") -> None:
        """Publish ``TuningProgress`` (phase, joint, fraction of that joint's tuning or request)."""
        pub = getattr(self, "progress_pub", None)
        if pub is not None:
            pub.publish(progress_msg(time_from_seconds(self.get_clock().now_s()), phase, joint, fraction, detail))

    # --- manual recording from topics ----------------------------------------------------------------
    def on_setpoints(self, msg):
        bad = self.server.on_setpoints(msg.name, msg.position)
        if bad:
            self._reject("joint_setpoints", *bad)

    def on_states(self, msg):
        t = seconds_from_time(msg.header.stamp) or self.get_clock().now_s()
        bad = self.server.on_states(t, msg.name, msg.position)
        if bad:
            self._reject("joint_states", *bad)

    def publish_status(self) -> None:
        self.status_pub.publish(status_msg(self.server.status(), time_from_seconds(self.get_clock().now_s())))


def main(argv=None) -> int:
    return run_node(PidTuningNode, argv)


if __name__ == "__main__":
    import sys

    sys.exit(main())
