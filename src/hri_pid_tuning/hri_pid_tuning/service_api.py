"""The tuning service's request handlers, independent of any middleware (the node in
``nodes/tuning_node.py`` only translates ROS requests into these calls; tests call them directly).

Every handler returns a :class:`Reply` ``(success, message, result)``; bad input (unknown joint,
unknown heuristic, non-finite or wrong-length gains, a call in the wrong state) is **rejected**:
``success = False``, a sentence saying why, the cause counted in :attr:`PidTuningServer.rejected`,
logged – never an exception and never a gain change.

Handlers (one per service of the thesis's API, Webel's thesis §3.2):

* ``record_start(label)`` / ``record_sample(t, desired, measured)`` / ``record_stop()`` – manual
  TestRunner mode (the operator drives; the caller feeds set-point and process value, rad);
  ``record_stop`` returns the recording's evaluation (thesis JSON names).
* ``evaluate(joint)`` – automated TestRunner: reset, play the step test of ``joint`` (or of every
  joint when empty) and the dance, return the per-motion evaluations.
* ``auto_tune(joint, heuristic)`` – relay test on ``joint`` (every joint in tuning order when
  empty), every heuristic kept, ``heuristic`` (default: config) applied through the
  acknowledging storage; gains restored when the relay fails.
* ``apply(joint, heuristic=..., gains=(kp, ki, kd))`` – one of the last auto-tune's heuristics
  or explicit parallel-form gains; acknowledged or reported as not acknowledged.
* ``reset()`` – test-environment reset (robot at its base pose) and test-runner reset.
* ``save(path)`` / ``load(path)`` – PidConfiguration JSON.
"""
from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from hri_core.pid import PIDGains

_log = logging.getLogger(__name__)

#: the tuning node's request/reply type (src/hri_interfaces/srv/Tune.srv), also the robot node's
#: ``set_gains``
TUNE_SRV = "hri_interfaces/srv/Tune"


@dataclass
class Reply:
    success: bool
    message: str
    result: dict[str, Any] = field(default_factory=dict)


class PidTuningServer:
    """Handlers on one :class:`~hri_pid_tuning.session.TuningSession` (a simulated robot)."""

    def __init__(self, session):
        self.session = session
        self.rejected: Counter[str] = Counter()
        self.served: Counter[str] = Counter()
        self.reporter = None        # reporter(phase, joint, fraction, detail): the node's progress topic
        self.setpoints: dict[str, float] = {}   # joint -> last set-point of the manual recording (rad)

    # --- helpers ---------------------------------------------------------------------------------
    @property
    def joints(self) -> list[str]:
        return list(self.session.plant.joint_names)

    @property
    def recording(self) -> bool:
        """A manual recording is running."""
        return self.session.runner.recording

    def reject(self, cause: str, message: str) -> Reply:
        """A refusal: counted under ``cause``, logged, ``success = False`` with ``message``."""
        self.rejected[cause] += 1
        _log.warning("request rejected (%s): %s", cause, message)
        return Reply(False, message, {"cause": cause})

    def job_failed(self, name: str, exc: BaseException) -> Reply:
        """A request run as a live job ended with an exception (the robot did not do what the job
        needed): counted ``robot_failed``, the one reason as the message."""
        self.rejected["robot_failed"] += 1
        return Reply(False, f"{name} failed: {exc}", {"cause": "robot_failed"})

    def _check_joint(self, joint: str, allow_all: bool = True) -> Reply | None:
        if (joint == "" and allow_all) or joint in self.joints:
            return None
        return self.reject("unknown_joint", f"unknown joint {joint!r}; known: {', '.join(self.joints)}")

    def _ok(self, name: str, message: str, result: dict[str, Any] | None = None) -> Reply:
        self.served[name] += 1
        return Reply(True, message, result or {})

    # --- manual recording ------------------------------------------------------------------------
    def record_start(self, label: str = "recording") -> Reply:
        r = self.session.runner
        if r.recording:
            return self.reject("busy", "a manual recording is already running; stop it first")
        self.setpoints = {}
        r.start_manual_record(label or "recording")
        return self._ok("record_start", f"recording {label or 'recording'}")

    def record_sample(self, t_s: float, desired_rad: Sequence[float], measured_rad: Sequence[float]) -> Reply:
        r = self.session.runner
        if not r.recording:
            return self.reject("not_recording", "no manual recording running")
        if len(desired_rad) != len(self.joints) or len(measured_rad) != len(self.joints):
            return self.reject("wrong_length", f"need {len(self.joints)} set-points and process values")
        if not r.record_sample(float(t_s), desired_rad, measured_rad):
            return self.reject("non_finite", "sample with NaN/Inf dropped")
        return Reply(True, "")

    def record_stop(self) -> Reply:
        r = self.session.runner
        if not r.recording:
            return self.reject("not_recording", "no manual recording running")
        res = r.stop_manual_record()
        return self._ok("record_stop", f"recording {res.motion}: {res.evaluation.samples} samples",
                        {"animation": res.motion, "evaluation": res.evaluation.to_json(),
                         "joints": {j: e.to_json() for j, e in res.joint_evaluations.items()}})

    @staticmethod
    def _joint_values(names: Sequence[str], positions: Sequence[float]) -> tuple[dict[str, float], tuple | None]:
        names, pos = list(names), [float(p) for p in positions]
        if len(names) != len(pos):
            return {}, ("length_mismatch", f"{len(names)} names, {len(pos)} positions")
        if not all(math.isfinite(p) for p in pos):
            return {}, ("non_finite", "NaN/Inf position")
        return dict(zip(names, pos)), None

    def on_setpoints(self, names: Sequence[str], positions: Sequence[float]) -> tuple[str, str] | None:
        """A ``joint_setpoints`` message (rad): the set-points the next states are paired with.
        Returns the ``(cause, detail)`` of a dropped message, else None."""
        d, bad = self._joint_values(names, positions)
        self.setpoints.update(d)
        return bad

    def on_states(self, t_s: float, names: Sequence[str], positions: Sequence[float]) -> tuple[str, str] | None:
        """A ``joint_states`` message (rad): while a manual recording runs, one sample paired with
        the last set-points. Returns the ``(cause, detail)`` of a dropped message, else None."""
        if not self.recording:
            return None
        d, bad = self._joint_values(names, positions)
        if bad:
            return bad
        missing = [j for j in self.joints if j not in d or j not in self.setpoints]
        if missing:
            return "missing_joint", f"no state or set-point for {missing}"
        reply = self.record_sample(t_s, [self.setpoints[j] for j in self.joints], [d[j] for j in self.joints])
        return None if reply.success else (reply.result.get("cause", "rejected"), reply.message)

    # --- automated test ----------------------------------------------------------------------------
    def evaluate(self, joint: str = "") -> Reply:
        bad = self._check_joint(joint)
        if bad:
            return bad
        s = self.session
        if s.runner.busy:
            return self.reject("busy", "a test is already running")
        motions = [s.step_motion(joint)] if joint else s.step_motions()
        if s.per_robot.dance is not None and not joint:
            motions = [s.dance_motion()] + motions
        say = (lambda f: self.reporter("evaluate", joint, f, "")) if self.reporter else None
        run = s.runner.run_test(motions, s.params.time_stretch, say)
        aborted = [m.motion for m in run.motions if m.aborted]
        result = {"configuration": run.configuration, "evaluation": run.evaluation.to_json(),
                  "motions": {m.motion: {"evaluation": m.evaluation.to_json(), "aborted": m.aborted,
                                         "joints": {j: e.to_json() for j, e in m.joint_evaluations.items()}}
                              for m in run.motions}}
        if aborted:
            return Reply(False, f"simulation diverged in {aborted}", result)
        ev = run.evaluation
        return self._ok("evaluate", f"{len(run.motions)} motions, AvgAbsoluteError {ev.avg_absolute_error:.3f} deg",
                        result)

    # --- auto-tuning -------------------------------------------------------------------------------
    def auto_tune(self, joint: str = "", heuristic: str = "") -> Reply:
        bad = self._check_joint(joint)
        if bad:
            return bad
        auto = self.session.autotuner
        h = heuristic or auto.tuning_heuristic
        if h not in self.session.heuristics.names:
            return self.reject("unknown_heuristic",
                                f"unknown heuristic {h!r}; known: {', '.join(self.session.heuristics.names)}")
        old = auto.tuning_heuristic
        auto.tuning_heuristic = h
        try:
            joints = [joint] if joint else list(auto.joint_order)
            data = {j: auto.tune_single_joint(j) for j in joints}
        finally:
            auto.tuning_heuristic = old
        failed = {j: d.reason for j, d in data.items() if not d.relay.ok}
        result = {"tuning": {j: d.to_json() for j, d in data.items()},
                  "gains": {j: self.session.storage.local[j].to_dict() for j in joints}}
        if failed:
            self.rejected["relay_failed"] += 1
            return Reply(False, "relay test failed (gains restored): " +
                         ", ".join(f"{j}: {r}" for j, r in failed.items()), result)
        return self._ok("auto_tune", f"tuned {', '.join(joints)} with {h}", result)

    def apply(self, joint: str, heuristic: str = "", gains: Sequence[float] | None = None) -> Reply:
        bad = self._check_joint(joint, allow_all=False)
        if bad:
            return bad
        st = self.session.storage
        if gains is not None and len(gains) > 0:
            if len(gains) != 3:
                return self.reject("wrong_length", f"gains must be [kp, ki, kd], got {len(gains)} values")
            if not all(isinstance(g, (int, float)) and math.isfinite(g) for g in gains):
                return self.reject("non_finite", f"gains must be finite numbers, got {list(gains)}")
            if any(g < 0 for g in gains):
                return self.reject("negative_gain", f"gains must be >= 0, got {list(gains)}")
            g = PIDGains(*(float(x) for x in gains))
            label = "explicit gains"
        elif heuristic:
            data = self.session.autotuner.history.get(joint)
            if data is None or not data.heuristics:
                return self.reject("not_tuned", f"{joint} has no auto-tune result; call auto_tune first")
            if heuristic not in data.heuristics:
                return self.reject("unknown_heuristic", f"unknown heuristic {heuristic!r}; known: "
                                    f"{', '.join(data.heuristics)}")
            g = data.heuristics[heuristic]
            label = heuristic
        else:
            return self.reject("no_gains", "give a heuristic of the last auto-tune or gains [kp, ki, kd]")
        old = st.local[joint]
        if not st.apply(joint, g):
            st.local[joint] = old
            self.rejected["not_acknowledged"] += 1
            return Reply(False, f"gain update for {joint} not acknowledged; previous gains kept",
                         {"cause": "not_acknowledged"})
        if heuristic and not (gains is not None and len(gains) > 0):
            self.session.autotuner.history[joint].applied = heuristic
        return self._ok("apply", f"{joint}: {label} applied (kp={g.kp:.6g}, ki={g.ki:.6g}, kd={g.kd:.6g})",
                        {"joint": joint, "gains": g.to_dict()})

    # --- environment / storage ----------------------------------------------------------------------
    def reset(self) -> Reply:
        r = self.session.runner
        r.env.reset()
        r.reset_test_runner()
        return self._ok("reset", "simulation reset to the base pose; test runner cleared")

    def save(self, path: str | Path) -> Reply:
        """PidConfiguration JSON at ``path`` (its folder created)."""
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.session.storage.save_json(path)
        except OSError as exc:
            return self.reject("io_error", f"cannot write {path}: {exc}")
        return self._ok("save", f"PidConfiguration written to {path}", {"path": str(path)})

    def load(self, path: str | Path) -> Reply:
        try:
            acks = self.session.storage.fill_from_json(path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return self.reject("bad_configuration", f"cannot load {path}: {exc}")
        lost = [j for j, ok in acks.items() if not ok]
        if lost:
            return Reply(False, f"not acknowledged: {lost}", {"acknowledged": acks})
        return self._ok("load", f"PidConfiguration from {path} applied", {"acknowledged": acks})

    def status(self) -> dict[str, Any]:
        st = self.session.storage
        return {"robot": self.session.robot, "setup": self.session.setup, "joints": self.joints,
                "gains": {j: g.to_dict() for j, g in st.local.items()},
                "acknowledged": {j: (g.to_dict() if g else None) for j, g in st.acknowledged.items()},
                "recording": self.recording,
                "rejected": dict(self.rejected), "served": dict(self.served)}
