"""The tuning service's request handlers, independent of any middleware (the node in
``nodes/tuning_node.py`` only translates ROS requests into these calls; the console reaches them
through the node's services; tests call them directly).

Every handler returns a :class:`Reply` ``(success, message, result)``; bad input (unknown joint,
unknown heuristic, non-finite or wrong-length gains, a call in the wrong state) is **rejected**:
``success = False``, a sentence saying why, the cause counted in :attr:`PidTuningServer.rejected`,
logged – never an exception and never a gain change.

Handlers (one per service of the thesis's API, Webel's thesis §3.2):

* ``record_start(label)`` / ``record_sample(t, desired, measured)`` / ``record_stop()`` – manual
  TestRunner mode (the operator drives; the caller feeds set-point and process value, rad);
  ``record_start`` first discards the previous test data (the thesis's reset before every new
  recording; the robot is not moved: a manual recording does not take control of it);
  ``record_stop`` returns the recording's evaluation (thesis JSON names).
* ``flip(joint)`` – the thesis's step-test button: the joint's base angle flips sign and back
  (:class:`~hri_pid_tuning.core.motion.SignFlipMotion`), evaluated like ``evaluate``.
* ``replay(motion)`` – play a recorded motion of the :class:`~hri_pid_tuning.core.motion.MotionLibrary`
  as if an operator performed it (automated test: reset, play, evaluate);
  ``save_motion(name)`` – the last manual recording's set-points as a motion of the library.
* ``evaluate(joint)`` – automated TestRunner: reset, play the step test of ``joint`` (or of every
  joint when empty) and the dance, return the per-motion evaluations.
* ``auto_tune(joint, heuristic)`` – relay test on ``joint`` (every joint in tuning order when
  empty), every heuristic kept, ``heuristic`` (default: config) applied through the
  acknowledging storage; gains restored when the relay fails.
* ``apply(joint, heuristic=..., gains=(kp, ki, kd))`` – one of the last auto-tune's heuristics
  or explicit parallel-form gains; acknowledged or reported as not acknowledged.
  ``apply_all(gains)`` – every joint to one configuration (the thesis's global PID reset).
* ``reset()`` – test-environment reset (robot at its base pose) and test-runner reset.
* ``save(configuration_path, results_dir)`` – "Save Results": the last run's test data in the
  thesis's folder layout (:func:`hri_pid_tuning.report.export_run`, the exporter ``hri tune``
  uses) under ``results_dir``, and the PidConfiguration JSON that ``load(path)`` reads back.
"""
from __future__ import annotations

import logging
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from hri_core.pid import PIDGains

from .motion import MotionLibrary, RecordedMotion

_log = logging.getLogger(__name__)


@dataclass
class Reply:
    success: bool
    message: str
    result: dict[str, Any] = field(default_factory=dict)


class PidTuningServer:
    """Handlers on one :class:`~hri_pid_tuning.session.TuningSession` (a simulated robot)."""

    def __init__(self, session, motions: MotionLibrary | None = None, configuration_path: str | Path | None = None,
                 results_dir: str | Path | None = None, plots: bool = False, exporter=None):
        """``motions``: the recorded motions (default: none); ``configuration_path`` /
        ``results_dir``: where ``save`` writes (and ``load`` reads) by default; ``plots``: ``save``
        writes PNGs; ``exporter(run, folder, tuning, plots)``: default
        :func:`hri_pid_tuning.report.export_run`."""
        self.session = session
        self.motions = motions
        self.configuration_path = configuration_path
        self.results_dir = results_dir
        self.plots = plots
        if exporter is None:
            from ..report import export_run as exporter
        self.exporter = exporter
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
        if r.busy:
            return self.reject("busy", "a test is running; record when it has ended")
        discarded = r.last_run is not None
        r.reset_test_runner()          # the thesis's reset before every new recording
        self.setpoints = {}
        r.start_manual_record(label or "recording")
        return self._ok("record_start", f"recording {label or 'recording'}" +
                        ("; the previous test data was discarded" if discarded else ""))

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
        motions = [s.step_motion(joint)] if joint else s.step_motions()
        if s.per_robot.dance is not None and not joint:
            motions = [s.dance_motion()] + motions
        return self._run("evaluate", motions, joint)

    def flip(self, joint: str) -> Reply:
        """The step-test button: ``joint`` flips the sign of its angle and back (the session's
        :meth:`~hri_pid_tuning.session.TuningSession.flip_motion`); refused when either angle is
        outside the joint's limits."""
        bad = self._check_joint(joint, allow_all=False)
        if bad:
            return bad
        plant, s = self.session.plant, self.session
        i = self.joints.index(joint)
        motion = s.flip_motion(joint)
        a = motion.angle(plant.base_pose_rad, self.joints)
        for q in (a, -a):
            if not (plant.q_min[i] <= q <= plant.q_max[i]):
                return self.reject("out_of_range", f"{joint}: a sign flip {math.degrees(a):.1f} -> "
                                   f"{math.degrees(-a):.1f} deg leaves its limits {math.degrees(plant.q_min[i]):.1f}"
                                   f"..{math.degrees(plant.q_max[i]):.1f} deg")
        return self._run("flip", [motion], joint)

    def replay(self, name: str) -> Reply:
        """Play the recorded motion ``name`` (automated test: reset, play, evaluate)."""
        m = self._load_motion(name)
        if isinstance(m, Reply):
            return m
        why = m.limit_violation(self.joints, self.session.plant.q_min, self.session.plant.q_max)
        if why:
            return self.reject("out_of_range", why)
        return self._run("replay", [m], "")

    def _load_motion(self, name: str) -> RecordedMotion | Reply:
        if self.motions is None:
            return self.reject("no_motions", "this tuning service has no motion folder")
        why = self.motions.check_name(name)
        if why:
            return self.reject("bad_name", why)
        try:
            return self.motions.load(name)
        except FileNotFoundError as exc:
            return self.reject("unknown_motion", str(exc))
        except (OSError, ValueError) as exc:
            return self.reject("bad_motion", f"motion {name!r}: {exc}")

    def save_motion(self, name: str) -> Reply:
        """The last manual recording's set-points as the motion ``name`` (replaces one of that name)."""
        if self.motions is None:
            return self.reject("no_motions", "this tuning service has no motion folder")
        why = self.motions.check_name(name)
        if why:
            return self.reject("bad_name", why)
        rec = self.session.runner.last_recording
        if rec is None:
            return self.reject("no_recording", "no manual recording to save: record_start, drive, record_stop first")
        m = recording_motion(rec, name)
        if isinstance(m, str):
            return self.reject("bad_recording", m)
        try:
            path = self.motions.save(m)
        except OSError as exc:
            return self.reject("io_error", f"cannot write motion {name!r}: {exc}")
        return self._ok("save_motion", f"motion {name} saved ({m.duration_s:.2f} s, {len(m.t_s)} samples)",
                        {"motion": name, "path": str(path), "duration_s": m.duration_s,
                         "joints": sorted(m.joints), "motions": self.motions.names()})

    def _run(self, name: str, motions: list, joint: str) -> Reply:
        """The automated test of ``motions``; its evaluations (thesis names) as the result."""
        s = self.session
        if s.runner.busy or s.runner.recording:
            return self.reject("busy", "a test or a manual recording is running")
        detail = "" if name == "evaluate" else name          # progress phase "evaluate" for every test motion
        say = (lambda f: self.reporter("evaluate", joint, f, detail)) if self.reporter else None
        run = s.runner.run_test(motions, s.params.time_stretch, say)
        aborted = [m.motion for m in run.motions if m.aborted]
        result = {"configuration": run.configuration, "evaluation": run.evaluation.to_json(),
                  "motions": {m.motion: {"evaluation": m.evaluation.to_json(), "aborted": m.aborted,
                                         "joints": {j: e.to_json() for j, e in m.joint_evaluations.items()}}
                              for m in run.motions}}
        if aborted:
            return Reply(False, f"{name}: not completed ({', '.join(f'{m.motion}: {m.aborted}' for m in run.motions if m.aborted)})"
                         "; simulation diverged or the posture was not reached", result)
        ev = run.evaluation
        return self._ok(name, f"{len(run.motions)} motion{'s' if len(run.motions) > 1 else ''} "
                        f"({', '.join(m.motion for m in run.motions)[:120]}), AvgAbsoluteError "
                        f"{ev.avg_absolute_error:.3f} deg", result)

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
            g = self._gains(gains)
            if isinstance(g, Reply):
                return g
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

    def _gains(self, gains: Sequence[float]) -> PIDGains | Reply:
        if len(gains) != 3:
            return self.reject("wrong_length", f"gains must be [kp, ki, kd], got {len(gains)} values")
        if not all(isinstance(g, (int, float)) and math.isfinite(g) for g in gains):
            return self.reject("non_finite", f"gains must be finite numbers, got {list(gains)}")
        if any(g < 0 for g in gains):
            return self.reject("negative_gain", f"gains must be >= 0, got {list(gains)}")
        return PIDGains(*(float(x) for x in gains))

    def apply_all(self, gains: Sequence[float] | None) -> Reply:
        """Every joint to one configuration ``[kp, ki, kd]`` (the thesis's global PID reset, for
        a rough initial tuning), one acknowledged update per joint."""
        if not gains:
            return self.reject("no_gains", "give the configuration [kp, ki, kd] for every joint")
        g = self._gains(gains)
        if isinstance(g, Reply):
            return g
        acks = self.session.storage.apply_all(g)
        lost = [j for j, ok in acks.items() if not ok]
        if lost:
            self.rejected["not_acknowledged"] += 1
            return Reply(False, f"gain update not acknowledged for {lost}", {"acknowledged": acks,
                                                                           "cause": "not_acknowledged"})
        return self._ok("apply_all", f"every joint ({len(acks)}) set to kp={g.kp:.6g}, ki={g.ki:.6g}, "
                        f"kd={g.kd:.6g}", {"gains": g.to_dict(), "acknowledged": acks})

    # --- environment / storage ----------------------------------------------------------------------
    def reset(self) -> Reply:
        r = self.session.runner
        r.env.reset()
        r.reset_test_runner()
        return self._ok("reset", "simulation reset to the base pose; test runner cleared")

    def save(self, configuration_path: str | Path | None = None, results_dir: str | Path | None = None) -> Reply:
        """"Save Results": the PidConfiguration JSON at ``configuration_path`` (what ``load``
        reads) and, when a run or recording was made since the last reset, its test data in the
        thesis's folder layout at ``results_dir/<run timestamp>/`` (``-2``, ``-3`` … appended when
        that exists; thesis Fig. 3.8; a manual recording is one ``recording`` folder)."""
        configuration_path = configuration_path or self.configuration_path
        results_dir = results_dir or self.results_dir
        if configuration_path is None:
            return self.reject("no_path", "this tuning service has no configuration path")
        run = self.session.runner.last_run
        folder = None
        try:
            Path(configuration_path).parent.mkdir(parents=True, exist_ok=True)
            self.session.storage.save_json(configuration_path)
            if run is not None and results_dir is not None:
                stem = Path(results_dir) / re.sub(r"[^0-9A-Za-z_.-]", "-", run.created or "run")
                folder, k = stem, 1
                while folder.exists():               # never mixed with (or over) an earlier export
                    k += 1
                    folder = stem.with_name(f"{stem.name}-{k}")
                self.exporter(run, folder, self.tuning_summary(), self.plots)
        except OSError as exc:
            return self.reject("io_error", f"cannot write {exc.filename or configuration_path}: {exc.strerror or exc}")
        said = f"PidConfiguration written to {configuration_path}"
        if folder is not None:
            said = f"test data of {len(run.motions)} motion(s) exported to {folder}; " + said
        elif results_dir is not None:
            said += " (no test data to export: run a test or a recording first)"
        return self._ok("save", said, {"path": str(configuration_path), "folder": str(folder) if folder else None})

    def tuning_summary(self) -> dict[str, Any]:
        """Per tuned joint: relay result, applied heuristic, current gains (``run.json``'s ``tuning``)."""
        st = self.session.storage
        return {j: {"relay": d.to_json()["relay"], "applied": d.applied, "gains": st.local[j].to_dict()}
                for j, d in self.session.autotuner.history.items()}

    def load(self, path: str | Path | None = None) -> Reply:
        path = path or self.configuration_path
        if path is None:
            return self.reject("no_path", "this tuning service has no configuration path")
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
                "recording": self.recording, "motions": self.motions.names() if self.motions else [],
                "rejected": dict(self.rejected), "served": dict(self.served)}


#: every service of the tuning node: name -> (request kind, handler(server, request)). Kinds:
#: ``tune`` (hri_interfaces/srv/Tune: joint, heuristic, gains), ``motion``
#: (hri_interfaces/srv/TuneMotion: motion), ``trigger`` (std_srvs/srv/Trigger). ``moves``: the
#: requests that move the robot or send it gains (a job on a live robot, answered when done).
SERVICES: dict[str, tuple[str, Any]] = {
    "auto_tune": ("tune", lambda s, r: s.auto_tune(r.joint, r.heuristic)),
    "apply": ("tune", lambda s, r: s.apply(r.joint, r.heuristic, [float(g) for g in r.gains] or None)),
    "apply_all": ("tune", lambda s, r: s.apply_all([float(g) for g in r.gains])),
    "evaluate": ("tune", lambda s, r: s.evaluate(r.joint)),
    "flip": ("tune", lambda s, r: s.flip(r.joint)),
    "replay": ("motion", lambda s, r: s.replay(r.motion)),
    "save_motion": ("motion", lambda s, r: s.save_motion(r.motion)),
    "record_start": ("trigger", lambda s, r: s.record_start("recording")),
    "record_stop": ("trigger", lambda s, r: s.record_stop()),
    "reset": ("trigger", lambda s, r: s.reset()),
    "save": ("trigger", lambda s, r: s.save()),
    "load": ("trigger", lambda s, r: s.load()),
}
MOVES = frozenset({"auto_tune", "apply", "apply_all", "evaluate", "flip", "replay", "reset", "load"})
#: Trigger services whose reply message is the result as JSON (Trigger has no result field)
JSON_MESSAGE = frozenset({"record_stop"})


def recording_motion(rec, name: str) -> RecordedMotion | str:
    """The set-points of a manual recording (a ``MotionResult``) as a motion, or why not."""
    if not rec.samples:
        return "the recording has no joints"
    t = next(iter(rec.samples.values())).t_s
    try:
        return RecordedMotion.from_samples(name, t, {j: np.degrees(np.asarray(s.desired_rad, dtype=float))
                                                     for j, s in rec.samples.items()})
    except ValueError as exc:
        return f"the recording is no motion: {exc}"
