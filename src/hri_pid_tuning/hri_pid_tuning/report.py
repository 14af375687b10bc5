"""Outputs a person wants: progress bar, per-run JSON folder (thesis Fig. 3.8 structure, numbers
as numbers, ISO timestamps), PNG plots, and reading a run folder back for ``hri tune report``.

Run folder::

    run/
      run.json                      configuration (PidConfiguration) + run evaluation + tuning summary
      tuning/<joint>.json           relay result, every heuristic's gains and step metrics, optimiser
      tuning/<joint>_steps.png      step responses of every heuristic on one figure
      <motion>/evaluation.json      all joints of that motion combined
      <motion>/<joint>.json         PidStepData + that joint's evaluation
      <motion>/error.png            signed error over time, every joint
      <motion>/test.mcap            every sample of that test: one JSON message per joint and sample
                                    on /pid/<joint> (log time = run start + motion time)
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, Mapping, TextIO

import numpy as np

from .core.services import MotionResult, RunResult


class ProgressBar:
    """``[#####-----]  50% label`` on a terminal stream; silent when disabled."""

    def __init__(self, label: str = "", width: int = 30, stream: TextIO | None = None, enabled: bool = True):
        self.label = label
        self.width = width
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self._last = -1

    def __call__(self, fraction: float) -> None:
        if not self.enabled:
            return
        pct = int(round(100 * min(max(fraction, 0.0), 1.0)))
        if pct == self._last:
            return
        self._last = pct
        n = pct * self.width // 100
        self.stream.write(f"\r[{'#' * n}{'-' * (self.width - n)}] {pct:3d}% {self.label}"[:REPORT_WIDTH + 1])
        ProgressBar.open_line = pct < 100
        if pct >= 100:
            self.stream.write("\n")
        self.stream.flush()

    def show(self, label: str, fraction: float) -> None:
        """A labelled update; after a finished (100 %) bar the next update starts a new bar."""
        self.label = label
        if self._last >= 100:
            self._last = -1
        self(fraction)

    #: a progress line is open (no newline yet): a warning must start a new line first
    open_line = False

    @classmethod
    def end_line(cls, stream: TextIO | None = None) -> None:
        if cls.open_line:
            (stream or sys.stderr).write("\n")
            cls.open_line = False


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def json_ready(x: Any) -> Any:
    """JSON-safe: NaN/Inf → null, numpy → Python."""
    if isinstance(x, dict):
        return {str(k): json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_ready(v) for v in x]
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return v if math.isfinite(v) else None
    if isinstance(x, np.integer):
        return int(x)
    return x


def write_json(path: Path, data: Any) -> None:
    """A result file; a JSON object gets the ``provenance`` of this build (hri_runtime.provenance:
    commit, version, build flags)."""
    from hri_runtime import provenance

    if isinstance(data, Mapping):
        data = {**data, "provenance": provenance.provenance("hri_pid_tuning")}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(json_ready(data), indent=2))


def export_run(run: RunResult, out: str | Path, tuning: Mapping[str, Any] | None = None, plots: bool = True) -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "run.json", {"createdTimestamp": run.created, "configuration": run.configuration,
                                  "evaluation": run.evaluation.to_json(),
                                  "motions": [m.motion for m in run.motions],
                                  "tuning": dict(tuning or {})})
    for m in run.motions:
        d = out / _safe(m.motion)
        write_json(d / "evaluation.json", {"createdTimestamp": m.created, "animation": m.motion,
                                           "evaluation": m.evaluation.to_json()})
        for j in m.samples:
            write_json(d / f"{_safe(j)}.json", {**m.step_data_json(j), "evaluation": m.joint_evaluations[j].to_json()})
        write_motion_mcap(m, d / "test.mcap")
        if plots:
            plot_motion_error(m, d / "error.png")
    return out


PID_SAMPLE_SCHEMA = {
    "type": "object", "title": "hri_pid_tuning/PidSample",
    "properties": {"t_s": {"type": "number"}, "desired_deg": {"type": "number"},
                   "measured_deg": {"type": "number"}, "error_deg": {"type": "number"},
                   "effort": {"type": ["number", "null"]}},
}


def write_motion_mcap(m: MotionResult, path: Path, start_ns: int | None = None) -> Path:
    """MCAP of one test: channel ``/pid/<joint>`` (JSON, schema ``hri_pid_tuning/PidSample``), one
    message per sample with set-point, process value, signed error (degrees) and the PID effort.
    Log time = ``start_ns`` (default: the motion's creation timestamp) + motion time."""
    import datetime as _dt

    from mcap.writer import CompressionType, Writer

    if start_ns is None:
        try:
            start_ns = int(_dt.datetime.fromisoformat(m.created).timestamp() * 1e9)
        except (TypeError, ValueError):
            start_ns = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        w = Writer(f, compression=CompressionType.NONE)
        w.start(profile="", library="hri_pid_tuning")
        from hri_runtime import provenance

        w.add_metadata("provenance", provenance.metadata("hri_pid_tuning"))
        sid = w.register_schema("hri_pid_tuning/PidSample", "jsonschema", json.dumps(PID_SAMPLE_SCHEMA).encode())
        for j, s in m.samples.items():
            cid = w.register_channel(f"/pid/{j}", "json", sid, {"animation": m.motion})
            t, d, y = s.arrays_deg()
            eff = m.effort.get(j) or []
            for k in range(len(t)):
                msg = {"t_s": float(t[k]), "desired_deg": float(d[k]), "measured_deg": float(y[k]),
                       "error_deg": float(d[k] - y[k]), "effort": float(eff[k]) if k < len(eff) else None}
                ns = start_ns + int(round(float(t[k]) * 1e9))
                w.add_message(cid, ns, json.dumps(msg).encode(), ns, sequence=k)
        w.finish()
    return path


def read_motion_mcap(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Messages of a test MCAP per joint (inverse of :func:`write_motion_mcap`)."""
    from mcap.reader import make_reader

    out: dict[str, list[dict[str, Any]]] = {}
    with open(path, "rb") as f:
        for _schema, channel, message in make_reader(f).iter_messages():
            out.setdefault(channel.topic[len("/pid/"):], []).append(json.loads(message.data))
    return out


def plot_motion_error(m: MotionResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (j, s) in enumerate(m.samples.items()):
        c = colours[k % len(colours)]          # one colour per joint in both panels
        t, d, y = s.arrays_deg()
        ax[0].plot(t, d, "--", lw=0.8, color=c)
        ax[0].plot(t, y, lw=1.2, color=c, label=j)
        ax[1].plot(t, d - y, lw=1.0, color=c, label=j)
    ax[0].plot([], [], "k--", lw=0.8, label="set-point (dashed)")
    ax[0].set_ylabel("angle [deg]")
    ax[1].set_ylabel("signed error SP − PV [deg]")
    ax[1].set_xlabel("time [s]")
    ax[0].legend(fontsize=7, ncol=3)
    ax[1].legend(fontsize=7, ncol=3)
    ax[0].set_title(f"{m.motion}: AvgAbsoluteError {m.evaluation.avg_absolute_error:.2f} deg")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_heuristic_steps(joint: str, traces: Mapping[str, Any], path: Path) -> None:
    """Step responses (``Trace``) of every heuristic on one figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .core.heuristics import DISPLAY_NAMES

    fig, ax = plt.subplots(figsize=(9, 5))
    # a fixed colour per heuristic (the same in every joint's figure); the optimiser in black
    palette = plt.get_cmap("tab10").colors
    order = list(DISPLAY_NAMES.values())
    first = True
    for name, tr in traces.items():
        if first:
            ax.plot(tr.t_s, tr.desired_deg, "--", color="0.5", lw=1.0, label="set-point")
            first = False
        c = "k" if name == "Optimiser" else palette[order.index(name) % len(palette)] if name in order else None
        ax.plot(tr.t_s, tr.measured_deg, lw=2.0 if name == "Optimiser" else 1.1, color=c, label=name)
    ax.set_xlabel("time [s]")
    ax.set_ylabel(f"{joint} [deg]")
    ax.set_title(f"step responses of every heuristic: {joint}")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


# ------------------------------------------------------------------------------------------------
THESIS_COLUMNS = ("AvgAbsErr(Anim)", "AvgAbsErr(Step)", "MaxOvershoot°", "Avg5°Settling s", "Avg50%Resp s")


def fmt(v: float | None, nd: int = 2) -> str:
    return "–" if v is None else f"{v:.{nd}f}"


def read_run(path: str | Path) -> dict[str, Any]:
    """Load a run folder: ``{'run': run.json, 'motions': {name: {'evaluation': ..., 'joints': {j: eval}}}}``."""
    path = Path(path)
    run_file = path / "run.json"
    if not run_file.is_file():
        raise FileNotFoundError(f"{path} is not a run folder (no run.json)")
    run = json.loads(run_file.read_text())
    motions = {}
    for m in run.get("motions", []):
        d = path / _safe(m)
        ev = json.loads((d / "evaluation.json").read_text())
        joints = {}
        for f in sorted(d.glob("*.json")):
            if f.name == "evaluation.json":
                continue
            joints[f.stem] = json.loads(f.read_text())["evaluation"]
        motions[m] = {"evaluation": ev["evaluation"], "joints": joints}
    return {"run": run, "motions": motions}


def read_motion_folder(path: str | Path):
    """The set-points of one motion folder of a run folder (its ``<joint>.json`` PidStepData) as
    a :class:`~hri_pid_tuning.core.motion.RecordedMotion` named after the folder (ValueError:
    not a motion folder)."""
    from .core.motion import RecordedMotion

    path = Path(path)
    step = {}
    for f in sorted(path.glob("*.json")):
        if f.name == "evaluation.json":
            continue
        try:
            d = json.loads(f.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"{f} is not JSON: {exc}") from None
        if isinstance(d, dict) and "data" in d:
            step[d.get("joint") or f.stem] = d
    if not step:
        raise ValueError(f"{path} holds no PidStepData (<joint>.json of a run folder's motion)")
    return RecordedMotion.from_step_data(_safe(path.name), step)


#: the printed table: (evaluation key, header, unit); every other metric is in the run folder
REPORT_COLUMNS = (("AvgAbsoluteError", "abs err", "deg"), ("AvgSignedError", "signed err", "deg"),
                  ("MaxOvershoot", "overshoot", "deg"), ("AvgSettlingTime5Degrees", "settle 5°", "s"),
                  ("Avg50PercentResponseTime", "50% resp", "s"), ("Itae", "ITAE", "deg·s²"),
                  ("OscillationCount", "oscill.", "count"))
REPORT_WIDTH = 100


def _cell(v: Any, w: int) -> str:
    if isinstance(v, bool) or v is None:
        return f"{'–':>{w}}"
    if isinstance(v, int):
        return f"{v:>{w}d}"
    return f"{v:>{w}.2f}" if abs(v) < 1e5 else f"{v:>{w}.3g}"


def report_text(path: str | Path) -> str:
    """The run as text that fits ``REPORT_WIDTH`` columns: one row per motion and joint (units in
    the second header line), then the tuning of each joint; failures on their own lines."""
    data = read_run(path)
    name_w, w = 23, 11
    lines = [f"run {path}", f"created {data['run'].get('createdTimestamp')}; every metric in run.json and <motion>/*.json"]
    if data["motions"]:
        lines.append(f"{'motion / joint':{name_w}s}" + "".join(f"{h:>{w}s}" for _, h, _ in REPORT_COLUMNS))
        lines.append(f"{'':{name_w}s}" + "".join(f"{'[' + u + ']':>{w}s}" for _, _, u in REPORT_COLUMNS))
    for m, md in data["motions"].items():
        rows = [(m, md["evaluation"])] + [(f"  {j}", e) for j, e in md["joints"].items()]
        for name, e in rows:
            lines.append(f"{name[:name_w - 1]:{name_w}s}" + "".join(_cell(e.get(k), w) for k, _, _ in REPORT_COLUMNS))
    if data["motions"]:
        ev = data["run"]["evaluation"]
        lines.append(f"{'RUN (all motions)':{name_w}s}" + "".join(_cell(ev.get(k), w) for k, _, _ in REPORT_COLUMNS))
    tuning = data["run"].get("tuning") or {}
    if tuning:
        lines.append("")
        lines.append(f"{'tuning':14s}{'relay':>7s}{'Ku':>10s}{'Tu':>7s}{'amp':>6s}  {'applied':15s}"
                     f"{'kp':>12s}{'ki':>13s}{'kd':>13s}")
        lines.append(f"{'':14s}{'':>7s}{'[Nm/rad]':>10s}{'[s]':>7s}{'[deg]':>6s}  {'':15s}"
                     f"{'[Nm/rad]':>12s}{'[Nm/(rad·s)]':>13s}{'[Nm·s/rad]':>13s}")
        for j, t in tuning.items():
            r = t.get("relay", {})
            g = t.get("gains") or {}
            lines.append(f"{j[:13]:14s}{'ok' if r.get('ok') else 'FAILED':>7s}{_cell(r.get('ku'), 10)}"
                         f"{_cell(r.get('tu_s'), 7)}{_cell(r.get('amplitude_deg'), 6)}  {str(t.get('applied') or '–')[:14]:15s}"
                         f"{_cell(g.get('kp'), 12)}{_cell(g.get('ki'), 13)}{_cell(g.get('kd'), 13)}")
        for j, t in tuning.items():
            reason = t.get("reason") or (t.get("relay", {}).get("detail") if not t.get("relay", {}).get("ok") else "")
            if reason:
                lines.append(f"warning: {j}: {reason}"[:REPORT_WIDTH])
    return "\n".join(lines)
