"""``hri tune``: relay-tune joints of a simulated robot, compare every heuristic, optionally
optimise, run the test motions and export a run folder; ``hri tune report RUN`` prints it.

    hri tune --robot humanoid_arm --setup s2 --joint elbow --heuristic pd_control --out runs/elbow
    hri tune --robot humanoid_arm --setup s4 --all-joints --optimise --out runs/s4
    hri tune --robot fr3 --joint fr3_joint4 --heuristic classic --out runs/fr3
    hri tune report runs/elbow

``hri pid ...`` is the same command (alias).
"""
from __future__ import annotations

import argparse
import logging
import math
import sys
from pathlib import Path

from .report import ProgressBar, export_run, plot_heuristic_steps, report_text, write_json


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hri tune", description=__doc__.split("\n\n")[0])
    p.add_argument("--robot", default="humanoid_arm", help="humanoid_arm (setups s1–s4) or fr3")
    p.add_argument("--setup", default="s2", help="humanoid arm setup (pid_tuning.setups): s1, s2, s3, s4")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--joint", action="append", help="joint to tune (repeatable)")
    g.add_argument("--all-joints", action="store_true", help="tune every joint (config joint_order)")
    p.add_argument("--heuristic", default=None, help="heuristic to apply (default: pid_tuning.heuristics.default)")
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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "report":
        return _report(argv[1:])
    a = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from hri_runtime.config import ConfigError

    from .core.heuristics import DISPLAY_NAMES
    from .core.plant import simulate_closed_loop
    from .core.metrics import evaluate_joint
    from .session import TuningSession

    try:
        s = TuningSession.create(a.robot, a.setup, overrides=a.set or None)
    except (ConfigError, ValueError, FileNotFoundError) as exc:
        print(f"hri tune: {exc}", file=sys.stderr)
        return 2
    out = Path(a.out)
    pt = s.cfg["pid_tuning"]
    show = pt["output"]["progress"] and not a.quiet
    plots = pt["output"]["plots"] and not a.no_plots
    heuristic = a.heuristic or pt["heuristics"]["default"]
    if heuristic not in s.heuristics.names:
        print(f"hri tune: unknown heuristic {heuristic!r}; known: {', '.join(s.heuristics.names)}", file=sys.stderr)
        return 2
    s.autotuner.tuning_heuristic = heuristic
    joints = s.autotuner.joint_order if a.all_joints or not a.joint else a.joint
    unknown = [j for j in joints if j not in s.plant.joint_names]
    if unknown:
        print(f"hri tune: unknown joint(s) {unknown}; {a.robot} has {s.plant.joint_names}", file=sys.stderr)
        return 2
    tuning_json = {}
    rc = 0
    for j in joints:
        data = s.autotuner.tune_single_joint(j, ProgressBar(f"relay {j}", enabled=show))
        entry = data.to_json()
        if not data.relay.ok:
            print(f"hri tune: relay test on {j} failed ({data.relay.reason}); gains restored", file=sys.stderr)
            tuning_json[j] = entry
            rc = 1
            continue
        # step response of every heuristic (same step test), kept and comparable
        cf = s.cost_function(j)
        traces, metrics = {}, {}
        bar = ProgressBar(f"heuristics {j}", enabled=show)
        for i, (name, g) in enumerate(data.heuristics.items()):
            cost = cf(g, name)
            traces[DISPLAY_NAMES.get(name, name)] = cf.last_trace
            ev = cf.trials[-1].evaluation
            metrics[name] = {"cost": cost, "evaluation": ev.to_json() if ev else None}
            bar((i + 1) / len(data.heuristics))
        entry["heuristic_steps"] = metrics
        if a.optimise:
            res, cf2 = s.optimise_joint(j, data, ProgressBar(f"optimiser {j}", enabled=show))
            s.storage.apply(j, res.gains)
            entry["optimiser"] = res.to_json()
            entry["applied"] = "optimiser"
            cf(res.gains, "optimiser")
            traces["Optimiser"] = cf.last_trace
        if plots:
            plot_heuristic_steps(j, traces, out / "tuning" / f"{j}_steps.png")
        write_json(out / "tuning" / f"{j}.json", entry)
        tuning_json[j] = {"relay": entry["relay"], "applied": entry["applied"],
                          "gains": s.storage.local[j].to_dict()}
    motions = [s.dance_motion()] + [s.step_motion(j) for j in joints]
    run = s.runner.run_test(motions, pt["time_stretch"], ProgressBar("test run", enabled=show))
    export_run(run, out, tuning_json, plots)
    print(report_text(out))
    return rc


if __name__ == "__main__":
    sys.exit(main())
