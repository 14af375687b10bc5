"""PID tuning service node (hri_runtime Node API): the thesis's services as ROS services on a
simulated robot (``pid_tuning.node.robot`` / ``setup``). A thin translation layer: every request
goes to :class:`hri_pid_tuning.service_api.PidTuningServer`.

Services (``~`` = the node's name, default ``/pid_tuning``):

=====================  ==============================  ==============================================
``~/auto_tune``        ``hri_interfaces/srv/Tune``         relay test of ``joint`` ('' = all, tuning order),
                                                        apply ``heuristic`` ('' = the robot's default)
``~/apply``            ``hri_interfaces/srv/Tune``         ``gains`` [kp, ki, kd] or a kept ``heuristic``
``~/evaluate``         ``hri_interfaces/srv/Tune``         step test of ``joint`` ('' = all + dance)
``~/record_start``     ``std_srvs/srv/Trigger``        manual TestRunner mode (samples from topics)
``~/record_stop``      ``std_srvs/srv/Trigger``        message = the recording's evaluation (JSON)
``~/reset``            ``std_srvs/srv/Trigger``        test environment + test runner reset
``~/save`` / ``~/load`` ``std_srvs/srv/Trigger``       PidConfiguration JSON at ``pid_tuning.node.configuration_path``
=====================  ==============================  ==============================================

``Tune`` response: ``success``, ``message`` (a sentence; the reason when rejected) and
``result_json`` (the handler's result as JSON: tuning tables, evaluations in the thesis's names).
std_srvs has no request field for a joint name, hence the custom ``hri_interfaces/srv/Tune``.

Topics: subscribes ``joint_setpoints`` and ``joint_states`` (``sensor_msgs/JointState``, rad) –
while a manual recording runs, each ``joint_states`` message is one sample paired with the last
set-point; publishes ``~/status`` (``hri_interfaces/msg/PidTuningStatus``: gains, acknowledged gains,
rejected-request counts) every ``pid_tuning.node.status_period_s``.
"""
from __future__ import annotations

import json
import math
from typing import Any, Callable, Sequence

from hri_runtime import msgs
from hri_runtime.geometry import seconds_from_time, time_from_seconds
from hri_runtime.lockstep import WorkerLockstep
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config
from hri_runtime.qos import QOS_LATCHED

from ..live import LiveParams, LiveRobot
from ..report import json_ready
from ..service_api import TUNE_SRV, PidTuningServer, Reply
from ..session import TuningSession, initial_gains
from hri_pid_tuning.parameters_gen import PidTuningNodeParams, PidTuningParams

STATUS_MSG = "hri_interfaces/msg/PidTuningStatus"
PROGRESS_MSG = "hri_interfaces/msg/TuningProgress"
#: ``pid_tuning.node`` (declared in parameters.yaml)
NodeParams = PidTuningNodeParams


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
        self.collision_samples = pt.safe_tuning.collision_samples
        if session is None:
            if nc.live:
                session = self._live_session(nc.robot, nc.setup)
            else:
                session = TuningSession.create(nc.robot, nc.setup, cfg=self.cfg, reporter=self._progress)
        if session.autotuner.reporter is None:
            session.autotuner.reporter = self._progress
        self.session = session
        self.server = PidTuningServer(session)
        self.server.reporter = self._progress
        self.progress_pub = self.create_publisher(PROGRESS_MSG, self.live_params.progress_topic, qos=QOS_LATCHED)
        self.configuration_path = nc.configuration_path
        self.status_pub = self.create_publisher(STATUS_MSG, "~/status", qos=QOS_LATCHED)
        # on a live robot the requests that move it or send it gains run as jobs (answered when done)
        jobs = {"auto_tune", "apply", "evaluate", "reset", "load"} if self.lockstep is not None else set()
        for srv_type, names in ((TUNE_SRV, ("auto_tune", "apply", "evaluate")),
                                ("std_srvs/srv/Trigger", ("record_start", "record_stop", "reset", "save", "load"))):
            for name in names:
                cb = getattr(self, f"on_{name}")
                if name in jobs:
                    self.create_service(srv_type, f"~/{name}", self._job_service(name, cb), deferred=True)
                else:
                    self.create_service(srv_type, f"~/{name}", cb)
        self.create_subscription("sensor_msgs/msg/JointState", "joint_setpoints", self.on_setpoints, qos=10)
        self.create_subscription("sensor_msgs/msg/JointState", "joint_states", self.on_states, qos=10)
        self.create_timer(nc.status_period_s, self.publish_status)

    # --- live robot ------------------------------------------------------------------------------
    lockstep = None
    live_robot = None

    def _live_session(self, robot: str, setup: str | None):
        """A session whose plant is the robot node (``pid_tuning.live``), driven in lockstep jobs."""
        self.lockstep = WorkerLockstep("pid-job")

        def make(model, collides):
            self.live_robot = LiveRobot(self, model, self.lockstep, self.live_params, collides,
                                        self.collision_samples,
                                        initial_gains(self.cfg, robot, model.joint_names))
            return self.live_robot

        session = TuningSession.create(robot, setup, plant=make, reporter=self._progress, cfg=self.cfg)
        session.storage.transport = self.live_robot.set_gains     # acknowledged by the robot node
        # a silent robot must still end a waiting job: poke on the node clock too
        self.create_timer(0.5 * self.live_params.state_timeout_s, self.lockstep.poke)
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

    def _job_service(self, name: str, cb):
        """A deferred service callback running ``cb`` as a live job, answered when it has
        finished (busy: refused at once)."""
        def handle(req, resp, respond):
            with_json = hasattr(resp, "result_json")
            if self.lockstep.busy:
                reply = self.server.reject("busy", f"busy with {self.lockstep.name}; try again when it has ended")
                respond(self._fill(resp, reply, with_json))
                return

            def done(out, exc):
                if exc is not None:
                    out = self._fill(resp, self.server.job_failed(name, exc), with_json)
                self._progress("done" if out.success else "failed", "", 1.0, out.message.split("\n")[0][:200])
                respond(out)

            self._progress("start", getattr(req, "joint", ""), 0.0, name)
            self.lockstep.start(name, lambda: cb(req, resp), done)
        return handle

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
            resp.result_json = json.dumps(json_ready(reply.result))
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
        return self._fill(resp, self.server.record_start("recording"), with_json=False)

    def on_record_stop(self, req, resp):
        reply = self.server.record_stop()
        self._fill(resp, reply, with_json=False)
        if reply.success:
            resp.message = json.dumps(json_ready(reply.result))
        return resp

    def on_reset(self, req, resp):
        return self._fill(resp, self.server.reset(), with_json=False)

    def on_save(self, req, resp):
        return self._fill(resp, self.server.save(self.configuration_path), with_json=False)

    def on_load(self, req, resp):
        return self._fill(resp, self.server.load(self.configuration_path), with_json=False)

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


def run_live(robot: str, setup: str | None, job: Callable[[Any], Any], overrides: Sequence[str] | None = None,
             name: str = "tuning") -> Any:
    """Run ``job(session)`` on the live path in one process: the robot node (``joint_robot``,
    MuJoCo) and the tuning node (``live: true``) over the in-process runtime, in lockstep
    simulated time – the nodes and messages of a lab's setup, without the network. Returns the
    job's result; its exception propagates. ``hri tune`` and ``bench/pid/results.py`` use this."""
    from hri_runtime.inproc import InprocContext
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode
    from hri_sim.nodes.joint_robot_node import JointRobotNode

    from hri_sim.pid_plants_mujoco import ARM_ROBOT, load_pid_config

    cfg = load_pid_config(robot, overrides=overrides)
    setups = PidTuningParams.from_tree(cfg).setups
    if robot == ARM_ROBOT and setup not in setups:
        raise ValueError(f"unknown setup {setup!r}; known: {sorted(setups)}")
    ctx = InprocContext()
    StopSupervisorNode(cfg=cfg, context=ctx)           # the stack's stop authority (the robot holds without it)
    JointRobotNode(robot=robot, setup=setup, cfg=cfg, context=ctx)
    tuner = PidTuningNode(context=ctx, cfg=cfg, parameters={"pid_tuning.node.robot": robot,
                                                            "pid_tuning.node.setup": setup or "",
                                                            "pid_tuning.node.live": True})
    done: dict = {}
    tuner.run_job(name, lambda: job(tuner.session), lambda r, e: done.update(result=r, exc=e))
    ctx.spin_until(lambda: "result" in done, timeout_s=1e7)
    if done.get("exc") is not None:
        raise done["exc"]
    return done["result"]


def main(argv=None) -> int:
    return run_node(PidTuningNode, argv)


if __name__ == "__main__":
    import sys

    sys.exit(main())
