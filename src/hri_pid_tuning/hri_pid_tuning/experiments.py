"""The thesis's experiment (Webel's thesis §4.1) on a simulated robot: relay-tune every joint
(lightest first), then for every heuristic apply its gains to all joints and run the fast dance
(animation error) and one 45° step test per joint (step error, overshoot, 5° settling, 50 %
response); plus the optimiser's row. Produces the rows of docs/pid-tuning-results.md.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .core.autotune import TuningData
from .core.heuristics import DISPLAY_NAMES
from .core.metrics import aggregate
from hri_core.pid import PIDGains
from .core.services import RunResult
from .session import TuningSession

_log = logging.getLogger(__name__)


@dataclass
class Row:
    name: str
    anim_abs_err: float | None
    step_abs_err: float | None
    max_overshoot: float | None
    settling_5: float | None
    response_50: float | None
    robust_settling_5: float | None = None
    itae: float | None = None
    gains: dict[str, dict[str, float]] = field(default_factory=dict)

    def cells(self) -> list[float | None]:
        return [self.anim_abs_err, self.step_abs_err, self.max_overshoot, self.settling_5, self.response_50]


def evaluate_gains(session: TuningSession, gains: Mapping[str, PIDGains], name: str,
                   progress: Callable[[float], None] | None = None) -> tuple[Row, RunResult]:
    """Apply ``gains`` (every joint, acknowledged) and run dance + one step test per joint."""
    for j, g in gains.items():
        if not session.storage.apply(j, g):
            raise RuntimeError(f"gain update for {j} not acknowledged")
    motions = [session.dance_motion()] + session.step_motions()
    stretch = session.params.time_stretch
    run = session.runner.run_test(motions, stretch, progress)
    dance = run.motions[0]
    steps = [m.joint_evaluations[m.motion[len("step_"):]] for m in run.motions[1:]]
    st = aggregate(steps)
    row = Row(name, dance.evaluation.avg_absolute_error, st.avg_absolute_error, st.max_overshoot,
              st.settling(5.0), st.avg_50_percent_response_time, st.avg_robust_settling_time.get(5.0), st.itae,
              {j: g.to_dict() for j, g in gains.items()})
    return row, run


def run_setup(session: TuningSession, with_optimiser: bool = True,
              progress: Callable[[float], None] | None = None) -> dict[str, Any]:
    """Relay-tune all joints, evaluate every heuristic and the optimiser. Returns
    ``{'tuning': {joint: TuningData}, 'rows': [Row], 'optimiser': {joint: OptimiserResult}}``."""
    initial = dict(session.storage.local)
    tuning: dict[str, TuningData] = session.autotuner.tune_all_joints()
    failed = [j for j, t in tuning.items() if not t.relay.ok]
    if failed:
        _log.warning("relay failed on %s; those joints keep their initial gains", failed)
    names = session.heuristics.names
    rows = []
    total = len(names) + (2 if with_optimiser else 1)
    done = 0

    def tick():
        nonlocal done
        done += 1
        if progress:
            progress(done / total)

    row, _ = evaluate_gains(session, initial, "Initial gains")
    rows.append(row)
    tick()
    for h in names:
        gains = {j: (tuning[j].heuristics[h] if tuning[j].relay.ok else initial[j]) for j in session.plant.joint_names}
        row, _ = evaluate_gains(session, gains, DISPLAY_NAMES.get(h, h))
        rows.append(row)
        tick()
    opt = {}
    if with_optimiser:
        # the other joints hold with the default heuristic (or their initial gains), then each
        # joint, in tuning order, is optimised and keeps its result for the joints after it
        default = session.autotuner.tuning_heuristic
        for j, g in initial.items():
            session.storage.apply(j, tuning[j].heuristics[default] if tuning[j].relay.ok else g)
        for j in session.autotuner.joint_order:
            if tuning[j].relay.ok:
                res, _ = session.optimise_joint(j, tuning[j])
                opt[j] = res
                session.storage.apply(j, res.gains)
        gains = {j: (opt[j].gains if j in opt else initial[j]) for j in session.plant.joint_names}
        row, _ = evaluate_gains(session, gains, "Optimiser")
        rows.append(row)
        tick()
    return {"tuning": tuning, "rows": rows, "optimiser": opt}
