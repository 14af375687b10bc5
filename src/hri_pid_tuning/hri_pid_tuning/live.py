"""The live path: the tuning core drives a robot that runs as another node.

The core's experiments (relay test, step tests, the test runner, the optimiser through scipy) are
plain loops over a plant: ``step(effort)`` then read ``q``. On a robot node every step is a
command message out and a ``joint_states`` message in, delivered by the node's executor. A
:class:`hri_runtime.lockstep.WorkerLockstep` runs such a loop (a *job*) on a worker thread with a
strict hand-off: exactly one of the executor thread and the worker runs at any time, the worker
waits (``wait_until``) until the executor has delivered what it needs (the next state, a service
response). So the core stays synchronous, the node stays single-threaded, and under
``InprocContext`` the whole path is deterministic in simulated time.

* :class:`LiveRobot` – a ``MultiJointPlant`` over the runtime: ``joint_states`` in, per-joint
  position/effort commands out (``sensor_msgs/JointState``: a finite position = position mode on
  the robot's own PID, else effort), acknowledged gain updates through ``<robot>/set_gains``,
  ``reset(q)`` = a collision-checked, rate-limited move to ``q`` (never a teleport), ``track(r)`` =
  position set-points for the robot's PIDs (the test runner on a live robot).
* :class:`LiveJointView` – one joint as a ``JointPlant``: that joint in effort mode, the others held
  by the robot at the current posture.
* :class:`LiveJobs` – the tuning node's requests that move the robot as jobs (answered when done);
  :func:`live_session` – a tuning session whose plant is the robot node (the real nodes of a
  lab's setup composed on one in-process context: :func:`hri_pid_tuning.compose.run_live`).
"""
from __future__ import annotations

import logging
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from hri_runtime import msgs
from hri_runtime.geometry import seconds_from_time, time_from_seconds
from hri_runtime.lockstep import WorkerLockstep
from hri_sim.pid_plants import PlantJoint

from .messages import TUNE_SRV
from hri_pid_tuning.parameters_gen import PidTuningLiveParams

_log = logging.getLogger(__name__)

#: the live path (``pid_tuning.live``, declared in parameters.yaml)
LiveParams = PidTuningLiveParams


class LiveRobotError(RuntimeError):
    """The robot did not do what the job needs (silent, posture not reached, collision); the
    message is the one clear reason."""


# ------------------------------------------------------------------------------------------------
class LiveRobot:
    """A robot node as a ``MultiJointPlant`` (see the module docstring). ``model`` gives the joint
    names, limits, effort limits, control period and base pose (the robot's description); ``live``
    is ``pid_tuning.live`` (:data:`LiveParams`); ``collides(q)`` vetoes posture moves through self-collision."""

    def __init__(self, node, model, lockstep: WorkerLockstep, live: LiveParams,
                 collides: Callable[[np.ndarray], bool] | None = None, collision_samples: int = 7,
                 recovery_gains: Mapping[str, Any] | None = None):
        self.node = node
        self.ls = lockstep
        self.joint_names = list(model.joint_names)
        self.n = len(self.joint_names)
        self.dt_s = float(model.dt_s)
        self.effort_max = np.asarray(model.effort_max, dtype=float)
        self.base_pose_rad = np.asarray(model.base_pose_rad, dtype=float)
        self.q_min = np.asarray(model.q_min, dtype=float)
        self.q_max = np.asarray(model.q_max, dtype=float)
        self.collides = collides
        self.collision_samples = collision_samples
        self.p = live
        self.cmd_pub = node.create_publisher("sensor_msgs/msg/JointState", live.commands_topic, qos=10)
        node.create_subscription("sensor_msgs/msg/JointState", live.states_topic, self.on_states, qos=10)
        self.gains_cli = node.create_client(TUNE_SRV, f"{live.robot_node.rstrip('/')}/set_gains")
        self.rehome_cli = node.create_client("std_srvs/srv/Trigger", f"{live.robot_node.rstrip('/')}/rehome")
        self.rehomes = 0
        self._q: np.ndarray | None = None
        self._dq = np.zeros(self.n)
        self._effort = np.zeros(self.n)
        self._t = 0.0
        self.seq = 0
        self.hold_q = self.base_pose_rad.copy()
        self.commands = 0
        self.bad_states = 0
        self.recovery_gains = dict(recovery_gains or {})    # joint -> PIDGains known to hold
        self.gains_sent: dict[str, Any] = {}                # joint -> PIDGains acknowledged by the robot
        self.recoveries = 0

    # --- executor side -------------------------------------------------------------------------
    def on_states(self, msg) -> None:
        names = list(msg.name)
        pos = list(msg.position)
        if len(pos) != len(names) or any(j not in names for j in self.joint_names):
            self.bad_states += 1
            return
        idx = [names.index(j) for j in self.joint_names]
        q = np.array([pos[i] for i in idx], dtype=float)
        if not np.all(np.isfinite(q)):
            self.bad_states += 1
            return
        self._q = q
        vel, eff = list(msg.velocity), list(msg.effort)
        self._dq = np.array([vel[i] for i in idx], float) if len(vel) == len(names) else np.zeros(self.n)
        self._effort = np.array([eff[i] for i in idx], float) if len(eff) == len(names) else np.zeros(self.n)
        self._t = seconds_from_time(msg.header.stamp)
        self.seq += 1
        self.ls.poke()

    # --- worker side ---------------------------------------------------------------------------
    def _now(self) -> float:
        return self.node.get_clock().now_s()

    def wait_next(self) -> None:
        """Wait for the next joint_states; LiveRobotError after ``state_timeout_s`` of silence."""
        seq = self.seq
        deadline = self._now() + self.p.state_timeout_s
        self.ls.wait_until(lambda: self.seq > seq or self._now() > deadline)
        if self.seq == seq:
            raise LiveRobotError(f"no joint_states from the robot for {self.p.state_timeout_s} s (robot_silent)")

    def _first_state(self) -> None:
        if self._q is None:
            self.wait_next()

    @property
    def t_s(self) -> float:
        return self._t

    @property
    def q_rad(self) -> np.ndarray:
        if self._q is None:
            self._first_state()
        return self._q.copy()

    @property
    def effort(self) -> np.ndarray:
        return self._effort.copy()

    def command(self, positions: Sequence[float], efforts: Sequence[float] | None = None) -> None:
        """Publish one command: ``positions[i]`` finite → position mode, else ``efforts[i]``."""
        pos = [float(x) for x in positions]
        eff = [math.nan] * self.n if efforts is None else [float(x) for x in efforts]
        m = msgs.new("sensor_msgs/msg/JointState", name=self.joint_names, position=pos, velocity=[],
                           effort=eff)
        m.header.stamp = time_from_seconds(self._now())
        self.cmd_pub.publish(m)
        self.commands += 1

    def step(self, efforts: Sequence[float]) -> None:
        """Every joint in effort mode for one control period."""
        self.command([math.nan] * self.n, efforts)
        self.wait_next()

    def track(self, setpoints: Sequence[float]) -> None:
        """Position set-points for the robot's own PIDs (acknowledged gains) for one period."""
        self.command(setpoints)
        self.wait_next()

    def reset(self, q_rad: Sequence[float]) -> None:
        self.move_to(q_rad)

    def move_to(self, q_target: Sequence[float]) -> None:
        """:meth:`_move`; when the robot does not come to rest (gains under test that ring or
        are unstable once excited), once more with the ``recovery_gains`` (the robot's
        configured hold gains), after which the gains it had are sent back."""
        try:
            self._move(q_target)
        except LiveRobotError as exc:
            try:
                if not self.recovery_gains or "still moving" not in str(exc):
                    raise
                _log.warning("posture move failed (%s); again with the recovery gains", exc)
                current = dict(self.gains_sent)
                for j, g in self.recovery_gains.items():
                    self._send_gains(j, g)
                try:
                    self._move(q_target)
                finally:
                    for j in self.joint_names:
                        self._send_gains(j, current.get(j, self.recovery_gains.get(j)))
                self.recoveries += 1
            except LiveRobotError as exc2:
                # a simulated robot can be re-homed (its ~/rehome service; hardware has none)
                if not self.rehome_cli.service_is_ready():
                    raise
                _log.warning("posture move failed (%s); re-homing the simulated robot", exc2)
                fut = self.rehome_cli.call_async(msgs.new("std_srvs/srv/Trigger_Request"))
                fut.add_done_callback(lambda f: self.ls.poke())
                self.ls.wait_until(fut.done)
                self.rehomes += 1
                self.wait_next()
                self._move(q_target)

    def _move(self, q_target: Sequence[float]) -> None:
        """The straight way to ``q_target`` if it is free of self-collision, else one joint at a
        time (distal joints first, then proximal first), every leg collision-checked."""
        target = np.clip(np.asarray(q_target, dtype=float), self.q_min, self.q_max)
        q0 = self.q_rad
        if self.collides is None:
            return self._leg(target)
        start_colliding = self.collides(q0)
        plans = [[target]]
        for order in (range(self.n - 1, -1, -1), range(self.n)):
            legs, q = [], q0.copy()
            for i in order:
                if abs(target[i] - q[i]) > 1e-9:
                    q = q.copy()
                    q[i] = target[i]
                    legs.append(q)
            plans.append(legs)
        for legs in plans:
            if self._plan_free(q0, legs, start_colliding):
                for leg in legs:
                    self._leg(leg)
                return
        raise LiveRobotError(f"every way from {np.degrees(q0).round(1).tolist()}° to the posture "
                             f"{np.degrees(target).round(1).tolist()}° self-collides; not moving")

    def _plan_free(self, q0: np.ndarray, legs: list, start_colliding: bool) -> bool:
        """Every sample of every leg free (from a colliding start – a diverged test – the samples
        up to the first free one are the way out)."""
        a = q0
        leaving = start_colliding
        for b in legs:
            for s in np.linspace(0.0, 1.0, max(2, self.collision_samples)):
                q = a + s * (b - a)
                if self.collides(q):
                    if leaving:
                        continue
                    return False
                leaving = False
            a = b
        return True

    def _leg(self, q_target: Sequence[float]) -> None:
        """One leg: ramp the position command from where the robot is to ``q_target`` at
        ``posture_speed_deg_s``, then wait until every joint is within ``posture_tolerance_deg`` –
        or at rest, |dq| below that per second (a hold without integral action under gravity rests
        with an offset) – for ``posture_settle_s``. LiveRobotError when it is still moving
        ``posture_timeout_s`` after the ramp."""
        target = np.clip(np.asarray(q_target, dtype=float), self.q_min, self.q_max)
        q0 = self.q_rad
        dist = float(np.max(np.abs(target - q0)))
        ramp_s = dist / math.radians(self.p.posture_speed_deg_s)
        tol = math.radians(self.p.posture_tolerance_deg)
        t0 = self._now()
        settled_since = None
        self.hold_q = target.copy()
        while True:
            t = self._now() - t0
            s = 1.0 if ramp_s <= 0 else min(1.0, t / ramp_s)
            self.track(q0 + s * (target - q0))
            if s >= 1.0:
                err = float(np.max(np.abs(self.q_rad - target)))
                # arrived: within tolerance, or at rest (|dq| < tolerance per second) – a P/PD
                # hold under gravity rests with an offset, which is the robot's posture then
                if err <= tol or float(np.max(np.abs(self._dq))) <= tol:
                    settled_since = t if settled_since is None else settled_since
                    if t - settled_since >= self.p.posture_settle_s:
                        if err > tol:
                            _log.info("posture reached with an offset of %.2f° (the hold's steady-state error)",
                                      math.degrees(err))
                        return
                else:
                    settled_since = None
                if t > ramp_s + self.p.posture_timeout_s:
                    worst = int(np.argmax(np.abs(self.q_rad - target)))
                    raise LiveRobotError(f"{self.joint_names[worst]} did not reach "
                                         f"{math.degrees(target[worst]):.1f}° ({math.degrees(err):.1f}° away, "
                                         f"still moving at {math.degrees(float(np.max(np.abs(self._dq)))):.1f}°/s)")

    def set_gains(self, joint: str, gains) -> bool:
        """Acknowledged gain update (the storage's transport): True when the robot acknowledged."""
        ok = self._send_gains(joint, gains)
        if ok:
            self.gains_sent[joint] = gains
        return ok

    def _send_gains(self, joint: str, gains) -> bool:
        if gains is None:
            return False
        req = msgs.new(TUNE_SRV + "_Request", joint=joint, heuristic="",
                             gains=[float(gains.kp), float(gains.ki), float(gains.kd)])
        try:
            fut = self.gains_cli.call_async(req)
        except Exception as exc:   # no server
            _log.warning("set_gains %s: %s", joint, exc)
            return False
        fut.add_done_callback(lambda f: self.ls.poke())
        deadline = self._now() + self.p.state_timeout_s
        self.ls.wait_until(lambda: fut.done() or self._now() > deadline)
        if not fut.done() or fut.exception() is not None:
            return False
        resp = fut.result()
        if not resp.success:
            _log.warning("robot refused gains for %s: %s", joint, resp.message)
        return bool(resp.success)

    def joint(self, name: str, hold_gains=None, pid_params=None) -> "LiveJointView":
        return LiveJointView(self, self.joint_names.index(name))


class LiveJointView(PlantJoint):
    """One joint of a :class:`LiveRobot` as a ``JointPlant``: effort mode for that joint, the
    others held by the robot's PIDs at the base pose (the tuning posture differs only in this
    joint)."""

    @property
    def effort(self) -> float:
        """The effort the robot applied in the last control period (N·m)."""
        return float(self.plant.effort[self.index])

    def reset(self, q_rad: float) -> None:
        self.plant.move_to(self.pose_with(q_rad))

    def step(self, effort: float) -> None:
        robot = self.plant
        pos = robot.hold_q.copy()
        pos[self.index] = math.nan
        eff = [math.nan] * robot.n
        eff[self.index] = float(effort)
        robot.command(pos, eff)
        robot.wait_next()


# ------------------------------------------------------------------------------------------------
class LiveJobs:
    """The tuning node's live jobs: one :class:`WorkerLockstep` (one job at a time; a request
    while one runs is refused ``busy``), poked on the node clock too, so a silent robot still
    ends a waiting job. ``progress(phase, joint, fraction, detail)``: the node's progress topic."""

    def __init__(self, node, progress: Callable[[str, str, float, str], None]):
        self.node = node
        self.progress = progress
        self.lockstep = WorkerLockstep("pid-job")
        node.create_timer(0.5 * node.live_params.state_timeout_s, self.lockstep.poke)

    def run(self, name: str, fn: Callable[[], Any], on_done=None) -> None:
        """Run ``fn()`` as a job; ``on_done(result, exc)`` on the executor thread when it ends."""
        self.progress("start", "", 0.0, name)

        def done(result, exc):
            if exc is not None:
                self.node.get_logger().error(f"{name} failed: {exc}")
            if on_done is not None:
                on_done(result, exc)

        self.lockstep.start(name, fn, done)

    def service(self, name: str, cb, refusal):
        """A deferred service callback running ``cb(req, resp)`` as a job, answered when it has
        finished; ``refusal(resp, cause_or_name, message, exc)`` fills a refused (busy) or failed one."""
        def handle(req, resp, respond):
            if self.lockstep.busy:
                respond(refusal(resp, "busy", f"busy with {self.lockstep.name}; try again when it has ended", None))
                return

            def done(out, exc):
                if exc is not None:
                    out = refusal(resp, name, "", exc)
                self.progress("done" if out.success else "failed", "", 1.0, out.message.split("\n")[0][:200])
                respond(out)

            self.progress("start", getattr(req, "joint", ""), 0.0, name)
            self.lockstep.start(name, lambda: cb(req, resp), done)
        return handle


def live_session(node, lockstep: WorkerLockstep, robot: str, setup: str | None, cfg: dict, reporter):
    """A :class:`~hri_pid_tuning.session.TuningSession` whose plant is the robot node
    (``pid_tuning.live``), its gains sent through the robot's acknowledged ``set_gains``."""
    from .parameters_gen import PidTuningParams
    from .session import TuningSession, initial_gains

    pt = PidTuningParams.from_tree(cfg)

    def make(model, collides):
        return LiveRobot(node, model, lockstep, pt.live, collides, pt.safe_tuning.collision_samples,
                         initial_gains(cfg, robot, model.joint_names))

    session = TuningSession.create(robot, setup, plant=make, reporter=reporter, cfg=cfg)
    session.storage.transport = session.plant.set_gains     # acknowledged by the robot node
    return session
