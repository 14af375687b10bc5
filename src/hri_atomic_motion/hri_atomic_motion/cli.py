"""``hri atomic``: ``plot <run.mcap|run.npz|run.csv> [-o out.png]`` and ``demo`` (simulated Tino
runs a command sequence in lockstep and writes run.mcap, run.npz and timeline.png)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _cfg(robot: str):
    from hri_runtime.config import ConfigError, load_robot_config

    try:
        return load_robot_config(robot)
    except ConfigError as e:
        print(f"hri atomic: {e}", file=sys.stderr)
        raise SystemExit(2)


def _parse_seq(text: str) -> list[tuple[int, int]]:
    """``"1,2,3r,3l,3"`` -> [(1,0), (2,0), (3,1), (3,-1), (3,0)]."""
    out = []
    for tok in text.split(","):
        tok = tok.strip()
        d = {"r": 1, "l": -1}.get(tok[-1:], 0)
        out.append((int(tok.rstrip("rl")), d))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="hri atomic")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plot", help="timeline PNG of a run (MCAP, npz or CSV)")
    p.add_argument("run")
    p.add_argument("-o", "--out", help="PNG path (default: <run>.png)")
    p.add_argument("--robot", default="tino")
    d = sub.add_parser("demo", help="simulated Tino runs a sequence; writes MCAP, npz, PNG")
    d.add_argument("--sequence", default="1,2,3r,2,3l,3", help="states; r/l suffix = right/left (default %(default)s)")
    d.add_argument("--gap-s", type=float, default=2.5, help="simulated seconds between commands")
    d.add_argument("--out", default="runs/atomic", help="output directory")
    d.add_argument("--robot", default="tino")
    a = ap.parse_args(argv)
    cfg = _cfg(a.robot)
    from .plot import load_series, plot_series

    if a.cmd == "plot":
        src = Path(a.run)
        if not src.is_file():
            print(f"hri atomic plot: {src}: no such file", file=sys.stderr)
            return 2
        out = Path(a.out) if a.out else src.with_suffix(".png")
        plot_series(load_series(src, cfg["atomic"]["topics"]), out, cfg["atomic"]["leg"], title=src.name)
        print(f"wrote {out}")
        return 0
    from .lockstep import tino_sim_runner
    from .recording import write_mcap

    seq = _parse_seq(a.sequence)
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    r = tino_sim_runner(cfg)
    r.run_for(0.2)
    for i, (s, dr) in enumerate(seq):
        print(f"[{i + 1}/{len(seq)}] state {s} direction {dr}", file=sys.stderr)
        r.pulse(s, dr)
        r.run_for(a.gap_s)
    tl = r.timeline.array()
    npz = r.timeline.save(out_dir / "run.npz")
    mcap = write_mcap(out_dir / "run.mcap", tl, cfg["atomic"]["topics"], decimate=5)
    png = plot_series(load_series(mcap, cfg["atomic"]["topics"]), out_dir / "timeline.png", cfg["atomic"]["leg"],
                      title=f"simulated Tino: {a.sequence}")
    x, y, yaw = r.sim.base_pose()
    print(f"movements {len(r.ctrl.started)}, fault {r.ctrl.fault}, final ticks {r.sim.leg_ticks()}, "
          f"base x {x:.3f} m y {y:.3f} m yaw {yaw:.3f} rad")
    print(f"wrote {npz}, {mcap}, {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
