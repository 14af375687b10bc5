"""``hri tune``: relay-tune joints of a robot running as a node (the simulated robot node and the
tuning node over the in-process runtime, simulated time), compare every heuristic, optionally
optimise, run the test motions and export a run folder; ``hri tune report RUN`` prints it.

    hri tune --robot humanoid_arm --setup s2 --joint elbow --heuristic pd_control --out runs/elbow
    hri tune --robot humanoid_arm --setup s4 --all-joints --optimise --out runs/s4
    hri tune --robot fr3 --all-joints --out runs/fr3           # the FR3's default: Tyreus-Luyben
    hri tune report runs/elbow

``hri pid ...`` is the same command (alias).
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from .core.services import iso_now
from .report import ProgressBar, export_run, plot_heuristic_steps, report_text, write_json


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hri tune", description=(
        "Relay-tune a robot's joints (the simulated robot node and the tuning node, in simulated "
        "time), compare every heuristic, optionally optimise, run the test motions and write a run "
        "folder; 'hri tune report RUN' prints one."))
    p.add_argument("--robot", default="humanoid_arm", choices=("humanoid_arm", "fr3"),
                   help="humanoid_arm (setups s1–s4) or fr3 (default: humanoid_arm)")
    p.add_argument("--setup", default="s2", help="humanoid arm setup (pid_tuning.setups): s1, s2, s3, s4")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--joint", action="append", help="joint to tune (repeatable)")
    g.add_argument("--all-joints", action="store_true", help="tune every joint (config joint_order)")
    p.add_argument("--heuristic", default=None,
                   help="heuristic to apply (default: the robot's pid_tuning.heuristics.default; "
                        "the humanoid arm's pid_tuning.humanoid_arm.heuristics.default)")
    p.add_argument("--optimise", action="store_true", help="refine each tuned joint with the optimiser")
    p.add_argument("--out", default="runs/tune", help="run folder to write")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="config override, e.g. pid_tuning.relay.amplitude_fraction=0.2")
    return p


def _report(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="hri tune report", description="print a run folder's evaluations")
    p.add_argument("run")
    a = p.parse_args(argv)
    try:
        print(report_text(a.run))
    except FileNotFoundError as exc:
        print(f"hri tune report: {exc}", file=sys.stderr)
        return 2
    return 0


class _WarningsOnTheirOwnLine(logging.StreamHandler):
    """Logging to stderr that first ends an open progress line."""

    def emit(self, record):
        ProgressBar.end_line(self.stream)
        super().emit(record)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "report":
        return _report(argv[1:])
    a = _parser().parse_args(argv)
    handler = _WarningsOnTheirOwnLine(sys.stderr)
    handler.setFormatter(logging.Formatter("warning: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)
    from hri_runtime.config.tree import ConfigError

    from .nodes.tuning_node import run_live

    # validate the request on the model first (exit 2), then run the whole flow on the live path
    try:
        from .session import TuningSession

        model = TuningSession.create(a.robot, a.setup, overrides=a.set or None)
    except (ConfigError, ValueError, FileNotFoundError) as exc:
        print(f"hri tune: {exc}", file=sys.stderr)
        return 2
    pt = model.params
    heuristic = a.heuristic or model.autotuner.tuning_heuristic
    if heuristic not in model.heuristics.names:
        print(f"hri tune: unknown heuristic {heuristic!r}; known: {', '.join(model.heuristics.names)}", file=sys.stderr)
        return 2
    joints = model.autotuner.joint_order if a.all_joints or not a.joint else a.joint
    unknown = [j for j in joints if j not in model.plant.joint_names]
    if unknown:
        print(f"hri tune: unknown joint(s) {unknown}; {a.robot} has {model.plant.joint_names}", file=sys.stderr)
        return 2
    bar = ProgressBar(enabled=pt.output.progress and not a.quiet)

    def progress(phase: str, joint: str, fraction: float, detail: str = "") -> None:
        bar.show(f"{joint} {phase}".strip(), fraction)

    def job(s) -> int:
        s.autotuner.tuning_heuristic = heuristic
        s.autotuner.reporter = progress
        return _tune(s, joints, a, Path(a.out), bar)

    try:
        rc = run_live(a.robot, a.setup, job, a.set or None, "hri tune")
    except Exception as exc:       # the robot failed (silent, posture not reached): one line
        ProgressBar.end_line()
        print(f"hri tune: {exc}", file=sys.stderr)
        return 1
    ProgressBar.end_line()
    print(report_text(Path(a.out)))
    return rc


def _tune(s, joints, a, out: Path, bar: ProgressBar) -> int:
    """The whole flow on the live robot (runs as the tuning node's job): relay-tune each joint,
    step-test every heuristic, optionally optimise; the test motions only when every relay passed."""
    from .core.heuristics import DISPLAY_NAMES

    pt = s.params
    plots = pt.output.plots and not a.no_plots
    tuning_json, failed = {}, {}
    for j in joints:
        data = s.autotuner.tune_single_joint(j)
        entry = data.to_json()
        if not data.relay.ok:
            failed[j] = data.reason
            tuning_json[j] = {"relay": entry["relay"], "applied": None, "reason": data.reason,
                              "gains": s.storage.local[j].to_dict()}
            write_json(out / "tuning" / f"{j}.json", entry)
            continue
        # step response of every heuristic (same step test, on the robot), kept and comparable
        cf = s.cost_function(j)
        traces, metrics = {}, {}
        for i, (name, g) in enumerate(data.heuristics.items()):
            bar.label = f"{j} heuristics"
            cost = cf(g, name)
            if cf.last_trace is not None:
                traces[DISPLAY_NAMES.get(name, name)] = cf.last_trace
            ev = cf.trials[-1].evaluation
            metrics[name] = {"cost": cost, "evaluation": ev.to_json() if ev else None}
            bar((i + 1) / len(data.heuristics))
        entry["heuristic_steps"] = metrics
        if a.optimise:
            bar.label = f"{j} optimiser"
            res, _ = s.optimise_joint(j, data, bar)
            s.storage.apply(j, res.gains)
            entry["optimiser"] = res.to_json()
            entry["applied"] = "optimiser"
            cf(res.gains, "optimiser")
            if cf.last_trace is not None:
                traces["Optimiser"] = cf.last_trace
        if plots:
            plot_heuristic_steps(j, traces, out / "tuning" / f"{j}_steps.png")
        write_json(out / "tuning" / f"{j}.json", entry)
        tuning_json[j] = {"relay": entry["relay"], "applied": entry["applied"], "gains": s.storage.local[j].to_dict()}
    if failed:
        # no test motions after a failed relay: the run folder holds the tuning only
        ProgressBar.end_line()
        for j, why in failed.items():
            print(f"hri tune: relay test on {j} failed: {why}; previous gains and posture restored",
                  file=sys.stderr)
        write_json(out / "run.json", {"createdTimestamp": iso_now(s.runner.clock), "configuration": s.storage.to_json(),
                                      "evaluation": {}, "motions": [], "tuning": tuning_json})
        return 1
    motions = [s.dance_motion()] + [s.step_motion(j) for j in joints]
    bar.label = "test motions"
    run = s.runner.run_test(motions, pt.time_stretch, bar)
    export_run(run, out, tuning_json, plots)
    return 0


if __name__ == "__main__":
    sys.exit(main())
