"""``hri atomic``: ``plot <run.mcap|run.npz|run.csv> [-o out.png]`` and ``demo``.

``demo`` (default ``--chain vr``): the whole chain of launch/tino.launch.yaml in one process on the
simulated clock – emulated headset packets over real UDP -> vr_interface_node -> atomic_node ->
tino_sim – runs a command sequence, then the headset stops (the link monitor's safe stop latches
a fault and the robot stops); writes run.mcap and timeline.png. ``--chain lockstep``: the atomic
node alone on its embedded MuJoCo simulation, one update per ``atomic.control_period_s``, pulses
published on its topic; writes run.mcap, run.npz (the plot's series) and timeline.png. Both record
through the runtime's bag recorder (``hri_atomic_motion.e2e``)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hri_runtime.errors import add_robot_argument, positive_float


def _cfg(robot: str):
    from hri_runtime.config.tree import ConfigError, load_robot_config

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
    ap = argparse.ArgumentParser(prog="hri atomic", description="Tino's atomic leg/base controller: "
                                 "a simulated demo run and the timeline plot of a run.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plot", help="timeline PNG of a run (MCAP, npz or CSV)")
    p.add_argument("run", help="a run: .mcap (hri atomic demo, hri record), .npz or .csv (the series, as the demo writes)")
    p.add_argument("-o", "--out", help="PNG path (default: <run>.png)")
    add_robot_argument(p, "tino")
    d = sub.add_parser("demo", help="simulated Tino runs a sequence; writes MCAP, npz, PNG")
    d.add_argument("--sequence", default="1,2,3r,2,3l,3", help="states; r/l suffix = right/left (default %(default)s)")
    d.add_argument("--gap-s", type=positive_float, default=2.5, help="simulated seconds between commands")
    d.add_argument("--out", default="runs/atomic", help="output directory")
    add_robot_argument(d, "tino")
    d.add_argument("--chain", choices=("vr", "lockstep"), default="vr",
                   help="vr: headset UDP -> vr_interface -> atomic -> tino_sim nodes; "
                        "lockstep: the atomic node on its embedded simulation, 1 ms updates")
    d.add_argument("--keep-link", action="store_true", help="chain vr: the headset does not stop at the end")
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
    try:
        seq = _parse_seq(a.sequence)
    except ValueError:
        seq = []
    if not seq or any(not 0 <= st <= 3 for st, _ in seq):
        print(f"hri atomic demo: --sequence {a.sequence!r}: expected states 0-3 with an optional r/l, "
              f"comma separated (e.g. 1,2,3r)", file=sys.stderr)
        return 2
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if a.chain == "vr":
        return _demo_chain(cfg, a, seq, out_dir)
    from .e2e import build_embedded
    from .plot import save_series

    chain = build_embedded(cfg)
    mcap = out_dir / "run.mcap"
    chain.record(mcap)
    try:
        chain.lockstep.run_for(0.2)
        for i, (s, dr) in enumerate(seq):
            print(f"[{i + 1}/{len(seq)}] state {s} direction {dr}", file=sys.stderr)
            chain.pulse(s, dr)
            chain.lockstep.run_for(a.gap_s)
    finally:
        chain.close()
    sim, ctrl = chain.robot, chain.atomic.ctrl
    series = load_series(mcap, cfg["atomic"]["topics"])
    npz = save_series(series, out_dir / "run.npz")
    png = plot_series(series, out_dir / "timeline.png", cfg["atomic"]["leg"], title=f"simulated Tino: {a.sequence}")
    x, y, yaw = sim.base_pose()
    print(f"movements {ctrl.movements}, fault {ctrl.fault}, final ticks {sim.leg_ticks()}, "
          f"base x {x:.3f} m y {y:.3f} m yaw {yaw:.3f} rad")
    print(f"wrote {npz}, {mcap}, {png}")
    return 0


def _demo_chain(cfg, a, seq, out_dir: Path) -> int:
    import logging

    from .e2e import run_sequence
    from .plot import load_series, plot_series

    hri_log = logging.getLogger("hri")
    level = hri_log.level
    hri_log.setLevel(logging.ERROR)      # the dead link is announced below, not logged
    try:
        print(f"chain: emulated headset -UDP-> vr_interface -> atomic -> tino_sim (simulated clock); "
              f"sequence {a.sequence}, every {a.gap_s} s{'' if a.keep_link else ', then the headset stops'}",
              file=sys.stderr)
        mcap = out_dir / "run.mcap"
        r = run_sequence(cfg, seq, a.gap_s, mcap=mcap, link_dies=not a.keep_link)
        png = plot_series(load_series(mcap, cfg["atomic"]["topics"]), out_dir / "timeline.png", cfg["atomic"]["leg"],
                          title=f"simulated Tino via vr_interface: {a.sequence}")
        x, y, yaw = r["base_pose"]
        v, w = (round(c, 3) + 0.0 for c in r["base_twist"])    # + 0.0: a still base never prints -0.000
        print(f"pulses {r['pulses']}, movements {len(r['movements'])} {r['started']}, fault {r['fault']}, "
              f"final ticks {r['leg_ticks']}, base x {x:.3f} m y {y:.3f} m yaw {yaw:.3f} rad, "
              f"motor {r['leg_rpm_cmd']:.0f} RPM, base twist {v:.3f} m/s {w:.3f} rad/s")
        print(f"wrote {mcap}, {png}")
    finally:
        hri_log.setLevel(level)             # a caller in the same process keeps its logging
    return 0 if len(r["movements"]) == r["pulses"] else 1


if __name__ == "__main__":
    sys.exit(main())
