"""The thesis's services as a headless API (Webel's thesis §3.2): test-environment reset, PID
configuration storage with acknowledged updates, pose-error tracking and the test runner.

Data layer (thesis, with numbers as numbers and ISO-8601 timestamps):

* ``PidStepData``: ``{createdTimestamp, animation, joint, simulationTimeStretchFactor,
  data: [{timestamp, entry: {desired, measured}}]}`` – degrees, timestamps in s from the start
  of the motion (the thesis's FILETIME ticks are replaced by seconds, see docs/pid-tuning.md).
* ``PidConfiguration``: ``{createdTimestamp, mapping: {joint: {kp, ki, kd}}}`` parallel form.
"""
from __future__ import annotations

import datetime as _dt
import json
import logging
import math
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np

from .metrics import Evaluation, EvaluationParams, aggregate, evaluate_joint
from .motion import AnimatorControl, Motion
from hri_core.pid import PID, PIDGains, PIDParams

RESULTS_KEPT = 32   # motion results kept in ``TestRunner.results`` (the last ones; each holds its samples)

_log = logging.getLogger(__name__)


def iso_now(clock: Callable[[], float] | None = None) -> str:
    """ISO-8601 UTC timestamp; ``clock`` returns POSIX seconds (injected in tests)."""
    ts = clock() if clock is not None else _dt.datetime.now(_dt.timezone.utc).timestamp()
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).isoformat(timespec="milliseconds")


class MultiJointPlant(Protocol):
    joint_names: list[str]
    dt_s: float
    effort_max: np.ndarray
    base_pose_rad: np.ndarray

    @property
    def t_s(self) -> float: ...

    @property
    def q_rad(self) -> np.ndarray: ...

    def reset(self, q_rad: Sequence[float]) -> None: ...

    def step(self, efforts: Sequence[float]) -> None: ...


# ------------------------------------------------------------------------------------------------
class TestEnvSetup:
    """Resets the simulation: robot at its base pose (or a motion's start pose), at rest (thesis:
    empty plane + robot)."""

    __test__ = False   # not a pytest class

    def __init__(self, plant: MultiJointPlant):
        self.plant = plant
        self.resets = 0

    def reset(self, pose_rad: Sequence[float] | None = None) -> None:
        self.plant.reset(self.plant.base_pose_rad if pose_rad is None else pose_rad)
        self.resets += 1


# ------------------------------------------------------------------------------------------------
class PidConfigurationStorage:
    """Per-joint gains; local edits until transmitted. Every transmission is one acknowledged
    request per joint (``transport(joint, gains) -> bool``), retried up to ``max_retries`` times –
    never a fire-and-forget bulk publish (the thesis lost packets that way)."""

    def __init__(self, joints: Sequence[str], default: PIDGains,
                 transport: Callable[[str, PIDGains], bool] | None = None, max_retries: int = 3,
                 clock: Callable[[], float] | None = None):
        self.joints = list(joints)
        self.local: dict[str, PIDGains] = {j: default for j in self.joints}
        self.acknowledged: dict[str, PIDGains | None] = {j: None for j in self.joints}
        self.transport = transport
        self.max_retries = max_retries
        self.failures: Counter[str] = Counter()
        self.clock = clock

    def set(self, joint: str, gains: PIDGains) -> None:
        if joint not in self.local:
            raise KeyError(f"unknown joint {joint!r}; known: {self.joints}")
        self.local[joint] = gains

    def set_all(self, gains: PIDGains) -> None:
        for j in self.joints:
            self.local[j] = gains

    def transmit(self, joint: str) -> bool:
        """Send one joint's gains and wait for the acknowledgement; True when acknowledged."""
        g = self.local[joint]
        if self.transport is None:
            self.acknowledged[joint] = g
            return True
        for attempt in range(1, self.max_retries + 1):
            try:
                ok = bool(self.transport(joint, g))
            except Exception as exc:   # a transport error is a failed attempt, never a crash
                _log.warning("gain update %s attempt %d raised %s", joint, attempt, exc)
                ok = False
            if ok:
                self.acknowledged[joint] = g
                return True
        self.failures[joint] += 1
        _log.error("gain update for %s not acknowledged after %d attempts", joint, self.max_retries)
        return False

    def transmit_all(self) -> dict[str, bool]:
        return {j: self.transmit(j) for j in self.joints}

    def apply(self, joint: str, gains: PIDGains) -> bool:
        self.set(joint, gains)
        return self.transmit(joint)

    def apply_all(self, gains: PIDGains) -> dict[str, bool]:
        self.set_all(gains)
        return self.transmit_all()

    # --- JSON (thesis PidConfiguration) ---------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"createdTimestamp": iso_now(self.clock),
                "mapping": {j: g.to_dict() for j, g in self.local.items()}}

    def save_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2))

    def fill_from_json(self, data: Mapping[str, Any] | str | Path, transmit: bool = True) -> dict[str, bool]:
        """Load a PidConfiguration; it must map every joint (thesis 'Fill from JSON')."""
        if not isinstance(data, Mapping):
            data = json.loads(Path(data).read_text())
        mapping = data["mapping"]
        missing = [j for j in self.joints if j not in mapping]
        if missing:
            raise ValueError(f"PidConfiguration misses joints {missing}")
        new = {j: PIDGains.from_dict(mapping[j]) for j in self.joints}
        self.local.update(new)
        return self.transmit_all() if transmit else {}


# ------------------------------------------------------------------------------------------------
@dataclass
class JointSamples:
    """Set-point and process value of one joint (rad inside; degrees on export)."""

    t_s: list[float] = field(default_factory=list)
    desired_rad: list[float] = field(default_factory=list)
    measured_rad: list[float] = field(default_factory=list)

    def arrays_deg(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (np.asarray(self.t_s), np.degrees(np.asarray(self.desired_rad)),
                np.degrees(np.asarray(self.measured_rad)))


class PoseErrorTracker:
    """Samples SP (desired) and PV (measured) of every joint; all joints of a frame share one
    timestamp (thesis code). Radians in, degrees out."""

    def __init__(self, joints: Sequence[str]):
        self.joints = list(joints)
        self.samples: dict[str, JointSamples] = {j: JointSamples() for j in self.joints}
        self.rejected: Counter[str] = Counter()

    def record(self, t_s: float, desired_rad: Sequence[float], measured_rad: Sequence[float]) -> bool:
        """Store one frame; False (counted ``non_finite``) when a value is NaN/Inf."""
        if not (np.all(np.isfinite(desired_rad)) and np.all(np.isfinite(measured_rad)) and math.isfinite(t_s)):
            self.rejected["non_finite"] += 1
            return False
        for i, j in enumerate(self.joints):
            s = self.samples[j]
            s.t_s.append(t_s)
            s.desired_rad.append(float(desired_rad[i]))
            s.measured_rad.append(float(measured_rad[i]))
        return True

    def clear(self) -> None:
        self.samples = {j: JointSamples() for j in self.joints}


@dataclass
class MotionResult:
    """Everything recorded for one motion: per-joint samples and evaluations."""

    motion: str
    time_stretch: float
    samples: dict[str, JointSamples]
    joint_evaluations: dict[str, Evaluation]
    evaluation: Evaluation            # all joints combined
    created: str = ""
    effort: dict[str, list[float]] = field(default_factory=dict)
    aborted: str | None = None        # "divergence" when the simulation blew up

    def step_data_json(self, joint: str) -> dict[str, Any]:
        t, d, m = self.samples[joint].arrays_deg()
        return {"createdTimestamp": self.created, "animation": self.motion, "joint": joint,
                "simulationTimeStretchFactor": self.time_stretch, "aborted": self.aborted,
                "data": [{"timestamp": float(a), "entry": {"desired": float(b), "measured": float(c)}}
                         for a, b, c in zip(t, d, m)]}


@dataclass
class RunResult:
    configuration: dict[str, Any]
    motions: list[MotionResult]
    evaluation: Evaluation
    created: str = ""


class TestRunner:
    """Automated mode: reset, play each motion with every joint under its PID (gains from the
    storage), sample every joint every ``sample_interval_s``; manual mode: the caller drives
    the robot and feeds samples between :meth:`start_manual_record` and :meth:`stop_manual_record`.
    """

    __test__ = False   # not a pytest class

    def __init__(self, plant: MultiJointPlant, storage: PidConfigurationStorage,
                 pid_params: PIDParams, eval_params: EvaluationParams,
                 sample_interval_s: float | None = None, clock: Callable[[], float] | None = None):
        self.plant = plant
        self.storage = storage
        self.env = TestEnvSetup(plant)
        self.pid_params = pid_params
        self.eval_params = eval_params
        self.sample_interval_s = sample_interval_s or plant.dt_s
        self.clock = clock
        self.current_test_label: str | None = None
        self.results: deque[MotionResult] = deque(maxlen=RESULTS_KEPT)   # a node runs for hours
        #: the test data of the last run (automated test or manual recording) until the next reset:
        #: what "Save Results" exports (thesis §3.4.1)
        self.last_run: RunResult | None = None
        self.last_recording: MotionResult | None = None    # the last manual recording (a motion to save)
        self._manual: PoseErrorTracker | None = None
        self._pids: dict[str, PID] = {}
        self.busy = False

    def _make_pids(self) -> None:
        from dataclasses import replace

        self._pids = {}
        for i, j in enumerate(self.plant.joint_names):
            p = replace(self.pid_params, output_min=-float(self.plant.effort_max[i]),
                        output_max=float(self.plant.effort_max[i]))
            self._pids[j] = PID(self.storage.acknowledged.get(j) or self.storage.local[j], p)

    def play(self, motion: Motion, time_stretch: float = 1.0, progress: Callable[[float], None] | None = None) -> MotionResult:
        """Reset the environment and play one motion (closed loop on every joint)."""
        anim = AnimatorControl(motion, time_stretch)
        self.current_test_label = motion.name
        names = self.plant.joint_names
        try:
            self.env.reset(motion.start_pose(self.plant.base_pose_rad, names))
        except Exception as exc:     # a live robot that cannot reach the base pose (e.g. unstable gains)
            if not hasattr(self.plant, "track"):
                raise
            _log.warning("motion %s not played: %s", motion.name, exc)
            return self._finish(motion.name, time_stretch, PoseErrorTracker(names), {}, "posture_failed")
        self._make_pids()
        tracker = PoseErrorTracker(names)
        effort: dict[str, list[float]] = {j: [] for j in names}
        n = int(round(anim.duration_s / self.plant.dt_s))
        every = max(1, int(round(self.sample_interval_s / self.plant.dt_s)))
        t0 = self.plant.t_s
        u = np.zeros(len(names))
        base = self.plant.base_pose_rad
        pids = [self._pids[j] for j in names]
        aborted = None
        # a live robot (hri_pid_tuning.live.LiveRobot) runs its own PIDs with the acknowledged
        # gains: it gets the set-points, and reports the effort it applied
        live = hasattr(self.plant, "track")
        for k in range(n + 1):
            t = self.plant.t_s - t0
            r = anim.setpoints(t, base, names)
            y = self.plant.q_rad
            if not np.all(np.isfinite(y)):
                aborted = "divergence"
                _log.warning("motion %s aborted at t=%.3f s: simulation diverged", motion.name, t)
                break
            if live:
                u[:] = self.plant.effort
            else:
                for i, pid in enumerate(pids):
                    u[i] = pid.update(r[i], y[i], t)
            if k % every == 0:
                tracker.record(t, r, y)
                for i, j in enumerate(names):
                    effort[j].append(float(u[i]))
            if k < n:
                if live:
                    self.plant.track(r)
                else:
                    self.plant.step(u)
            if progress is not None and k % max(1, n // 20) == 0:
                progress(k / max(n, 1))
        return self._finish(motion.name, time_stretch, tracker, effort, aborted)

    def _finish(self, name: str, stretch: float, tracker: PoseErrorTracker,
                effort: dict[str, list[float]] | None = None, aborted: str | None = None) -> MotionResult:
        evals = {j: evaluate_joint(*tracker.samples[j].arrays_deg(), self.eval_params) for j in tracker.joints}
        res = MotionResult(name, stretch, tracker.samples, evals, aggregate(list(evals.values())),
                           iso_now(self.clock), effort or {}, aborted)
        self.results.append(res)
        return res

    def run_test(self, motions: Sequence[Motion], time_stretch: float = 1.0,
                 progress: Callable[[float], None] | None = None) -> RunResult:
        """Automated test of every motion; the run's evaluation combines all motions."""
        if self.busy:
            raise RuntimeError("a test is already running; reset the runner first")
        self.busy = True
        try:
            out = []
            for i, m in enumerate(motions):
                sub = (lambda f, i=i: progress((i + f) / len(motions))) if progress else None
                out.append(self.play(m, time_stretch, sub))
            self.last_run = RunResult(self.storage.to_json(), out, aggregate([r.evaluation for r in out]),
                                      iso_now(self.clock))
            return self.last_run
        finally:
            self.busy = False

    # --- manual mode ------------------------------------------------------------------------------
    def start_manual_record(self, label: str = "recording") -> None:
        if self._manual is not None:
            raise RuntimeError("manual recording already running")
        self.current_test_label = label
        self._manual = PoseErrorTracker(self.plant.joint_names)

    @property
    def recording(self) -> bool:
        """A manual recording is running."""
        return self._manual is not None

    @property
    def recorded_frames(self) -> int:
        """Frames (one sample of every joint) of the running manual recording (0: none running)."""
        return len(self._manual.samples[self._manual.joints[0]].t_s) if self._manual and self._manual.joints else 0

    def record_sample(self, t_s: float, desired_rad: Sequence[float], measured_rad: Sequence[float]) -> bool:
        """One manual sample; False when it was dropped (NaN/Inf)."""
        if self._manual is None:
            raise RuntimeError("no manual recording running")
        return self._manual.record(t_s, desired_rad, measured_rad)

    def stop_manual_record(self) -> MotionResult:
        if self._manual is None:
            raise RuntimeError("no manual recording running")
        tr, self._manual = self._manual, None
        res = self._finish(self.current_test_label or "recording", 1.0, tr)
        # a manual recording exports as one run with a single motion folder (thesis §3.4.1)
        self.last_run = RunResult(self.storage.to_json(), [res], res.evaluation, res.created)
        self.last_recording = res
        return res

    def reset_test_runner(self) -> None:
        """Discard all test data (thesis ``ResetTestRunner``): results, the last run, a running
        manual recording."""
        self.results.clear()
        self.last_run = None
        self.last_recording = None
        self._manual = None
        self.current_test_label = None
        self.busy = False
