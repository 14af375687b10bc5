"""``hri teleop-demo``: the arm teleop main scenario, headless, in lockstep simulated time.

A scripted operator draws a square with several clutch strokes; its controller-pose packets go
over real UDP on loopback to the receiver (validation, sequence check, link health), then
clutch -> 50 Hz planner -> 100 Hz IK -> joint impedance on the MuJoCo FR3. Every base tick
(10 ms simulated): the operator sends the packets due, the receiver drains its socket, the loop
ticks, physics advances. No zenoh router, no ROS needed.

At the end it prints tracking error, latency percentiles (simulated: packet stamp -> joint
command; wall: sendto -> joint command) and link health, and writes into the output directory
(default ``runs/<UTC timestamp>/``): ``path.png`` (target vs actual EE path), ``teleop.mcap``,
``trace.npz``, ``summary.json``.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import socket
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np

log = logging.getLogger("hri_arm_teleop.demo")


def _setup_logging(path: Path, verbose: bool) -> list:
    """Everything (INFO) into ``path``; warnings (or, verbose, everything) on stderr. Returns the
    handlers (removed again by ``main``: a test may run several demos in one process)."""
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    fmt = logging.Formatter("%(levelname)s %(name)s: %(message)s")
    fh = logging.FileHandler(path, mode="w")
    fh.setFormatter(fmt)
    sh = logging.StreamHandler(sys.stderr)
    sh.setFormatter(fmt)
    sh.setLevel(logging.INFO if verbose else logging.WARNING)
    root.addHandler(fh)
    root.addHandler(sh)
    return [fh, sh]


def _progress(done: float, total: float, width: int = 30) -> None:
    n = int(width * done / total)
    sys.stderr.write(f"\r  [{'#' * n}{'.' * (width - n)}] {done:5.1f}/{total:.1f} s simulated")
    sys.stderr.flush()


def open_viewer(sim):
    """MuJoCo's passive viewer when a display is available, else None (with the reason logged)."""
    import os

    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        log.warning("--viewer: no display (DISPLAY unset); running headless")
        return None
    try:
        import mujoco.viewer

        return mujoco.viewer.launch_passive(sim.model, sim.data)
    except Exception as exc:  # no GL, no GLFW: headless is still a valid run
        log.warning("--viewer: cannot open the MuJoCo viewer (%s); running headless", exc)
        return None


def run_demo(cfg: dict, out_dir: Path, port: Optional[int] = None, plot: bool = True,
             progress: bool = True, recv_timeout_s: float = 0.2, viewer: bool = False) -> dict:
    from hri_arm_teleop.core.frames import UNITY_TO_ROS
    from hri_arm_teleop.core.scenario import SquareScenario
    from hri_arm_teleop.emulate import ScriptedOperator
    from hri_arm_teleop.lockstep import (LockstepDriver, build_sim_pipeline,
                                         path_error_to_polyline, tracking_metrics)
    from hri_arm_teleop.vr_link import ArmVrReceiver

    t = cfg["teleop"]
    pipe, robot, clock = build_sim_pipeline(cfg)
    scenario = SquareScenario.from_config(t["demo"])
    rx_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx_sock.bind((t["vr"]["bind_address"], t["vr"]["port"] if port is None else port))
    address = rx_sock.getsockname()
    tx_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver = ArmVrReceiver(rx_sock, clock, cfg)
    operator = ScriptedOperator(scenario, tx_sock, address, t["demo"]["packet_rate_hz"])
    driver = LockstepDriver(pipe, robot)
    ee_start = robot.sim.ee_pose()
    view = open_viewer(robot.sim) if viewer else None
    wall_latency: list[float] = []
    lost_waiting = 0
    wall0 = time.perf_counter()
    last_progress = -1.0
    try:
        while robot.sim.time_s < scenario.duration_s - 1e-9:
            now = robot.sim.time_s
            sent = operator.send_due(now)
            got = 0
            deadline = time.perf_counter() + recv_timeout_s
            while True:  # lockstep: wait (briefly) for what was just sent on loopback
                poses = receiver.poll()
                for p in poses:
                    pipe.on_hand(p.position, p.quat_xyzw, p.clutch, source_stamp=p.stamp_s,
                                 valid=p.tracking_valid)
                got += len(poses)
                if got >= sent or time.perf_counter() > deadline:
                    break
                time.sleep(0.0002)
            lost_waiting += max(0, sent - got)
            n_lat = len(pipe.trace.latency_s)
            pipe.tick()
            if len(pipe.trace.latency_s) > n_lat:
                src = pipe._last_latency_source
                if src in operator.sent_wall:
                    wall_latency.append(time.perf_counter() - operator.sent_wall[src])
            robot.sim.advance(driver.period_s)
            if view is not None:  # live view, paced to real time
                view.sync()
                time.sleep(max(0.0, robot.sim.time_s - (time.perf_counter() - wall0)))
            if progress and now - last_progress >= 1.0:
                _progress(now, scenario.duration_s)
                last_progress = now
    finally:
        rx_sock.close()
        tx_sock.close()
        if view is not None:
            view.close()
    if progress:
        _progress(scenario.duration_s, scenario.duration_s)
        sys.stderr.write("\n")
    wall_s = time.perf_counter() - wall0

    metrics = tracking_metrics(pipe.trace, robot.sim.q_min, robot.sim.q_max)
    a = pipe.trace.arrays()
    corners = np.array([ee_start[:3, 3] + t["clutch"]["position_scale"] * (UNITY_TO_ROS @ [x, y, 0.0])
                        for x, y in scenario.corners_xy()])
    drawn = a["ee_p"][a["engaged"] > 0.5]
    cross = path_error_to_polyline(drawn, corners) if len(drawn) else np.zeros(1)
    wl = np.asarray(wall_latency)
    health = receiver.health()
    summary = {
        "robot": cfg["robot"]["model"], "ik_solver": t["ik"]["solver"],
        "actuation": cfg["sim"]["arm"]["actuation"],
        "simulated_s": robot.sim.time_s, "wall_s": wall_s,
        "square_side_m": scenario.side_m, "speed_m_s": scenario.speed_m_s, "strokes": scenario.strokes,
        "engagements": pipe.clutch.counters.engagements,
        "tracking_rms_error_m": metrics["rms_error_m"], "tracking_max_error_m": metrics["max_error_m"],
        "path_rms_error_m": float(np.sqrt(np.mean(cross ** 2))), "path_max_error_m": float(cross.max()),
        "closing_error_m": float(np.linalg.norm(robot.sim.ee_pose()[:3, 3] - ee_start[:3, 3])),
        "joint_limit_margin_rad": metrics["joint_limit_margin_rad"],
        "latency_sim_p50_s": metrics["latency_p50_s"], "latency_sim_p99_s": metrics["latency_p99_s"],
        "latency_wall_p50_s": float(np.percentile(wl, 50)) if wl.size else float("nan"),
        "latency_wall_p99_s": float(np.percentile(wl, 99)) if wl.size else float("nan"),
        "packets_sent": operator.sent, "packets_not_arrived_in_time": lost_waiting,
        "link": health, "safety": dict(pipe.gate.flags), "safety_holds": pipe.safety_holds,
        "rejected_commands": dict(pipe.rejected_commands),
        "velocity_clips": pipe.clutch.counters.velocity_clips,
        "workspace_clamps": pipe.clutch.counters.workspace_clamps,
        "mode_transitions": [(round(tt, 3), m.value) for tt, m in pipe.bridge.transitions],
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out_dir / "trace.npz", corners=corners, **a)
    from hri_arm_teleop.recording import write_mcap
    summary["mcap"] = str(write_mcap(out_dir / "teleop.mcap", pipe.trace, cfg))
    if plot:
        summary["png"] = str(plot_paths(out_dir / "path.png", a, corners, summary))
    summary["out_dir"] = str(out_dir)
    summary["files"] = [str(out_dir / n) for n in ("path.png", "teleop.mcap", "trace.npz", "summary.json", "teleop.log")
                        if n != "path.png" or plot]
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    return summary


def plot_paths(path: Path, a: dict, corners: np.ndarray, summary: dict) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, axz, ax2) = plt.subplots(1, 3, figsize=(17, 5), gridspec_kw={"width_ratios": [1.1, 1, 1.4]})
    track = a["mode"] > 0.5
    ax.plot(corners[:, 1] * 1e3, corners[:, 2] * 1e3, "k:", lw=1, label="ideal square")
    ax.plot(a["target_p"][track, 1] * 1e3, a["target_p"][track, 2] * 1e3, "C0-", lw=2, label="target")
    ax.plot(a["ee_p"][:, 1] * 1e3, a["ee_p"][:, 2] * 1e3, "C3--", lw=1, label="actual EE")
    ax.set_xlabel("base y [mm]")
    ax.set_ylabel("base z [mm]")
    ax.invert_xaxis()  # seen from the operator (facing the robot's front): +y is on the left
    ax.set_aspect("equal")
    ax.legend()
    ax.set_title(f"{summary['robot']}: {summary['strokes']} clutch strokes, "
                 f"{summary['speed_m_s'] * 100:.0f} cm/s")
    c = corners[2]  # zoom: +-4 mm around the far corner, drawn inside the second stroke
    for arr, style, label in ((corners, "k:", "ideal"), (a["target_p"][track], "C0.-", "target (50 Hz)"),
                              (a["ee_p"], "C3-", "actual EE")):
        axz.plot((arr[:, 1] - c[1]) * 1e3, (arr[:, 2] - c[2]) * 1e3, style, lw=1, ms=3, label=label)
    axz.set_xlim(4, -4)
    axz.set_ylim(-4, 4)
    axz.set_aspect("equal")
    axz.set_xlabel("y - corner [mm]")
    axz.set_ylabel("z - corner [mm]")
    axz.set_title("zoom on a corner")
    axz.legend(fontsize=8)
    err = np.linalg.norm(a["ee_p"] - a["target_p"], axis=1) * 1e3
    ax2.plot(a["t"], err, "C3-", lw=1, label="|target - actual| [mm]")
    ax2.fill_between(a["t"], 0, np.nanmax(err[track]) if track.any() else 1,
                     where=a["engaged"] > 0.5, color="C2", alpha=0.15, label="clutch engaged")
    ax2.set_xlabel("simulated time [s]")
    ax2.set_ylabel("EE position error [mm]")
    ax2.set_title(f"RMS {summary['tracking_rms_error_m'] * 1e3:.2f} mm, "
                  f"max {summary['tracking_max_error_m'] * 1e3:.2f} mm")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def format_summary(s: dict) -> str:
    link = s["link"]
    lines = [
        f"teleop demo: {s['robot']} ({s['actuation']}, IK {s['ik_solver']}), "
        f"{s['simulated_s']:.1f} s simulated in {s['wall_s']:.1f} s wall",
        f"  square {s['square_side_m'] * 100:.0f} cm at {s['speed_m_s'] * 100:.0f} cm/s in "
        f"{s['engagements']} clutch strokes",
        f"  tracking error (EE vs target, engaged): RMS {s['tracking_rms_error_m'] * 1e3:.3f} mm, "
        f"max {s['tracking_max_error_m'] * 1e3:.3f} mm",
        f"  path error (EE vs ideal square):        RMS {s['path_rms_error_m'] * 1e3:.3f} mm, "
        f"max {s['path_max_error_m'] * 1e3:.3f} mm; closes within {s['closing_error_m'] * 1e3:.3f} mm",
        f"  latency UDP packet -> joint command (wall, in-process chain): p50 "
        f"{s['latency_wall_p50_s'] * 1e3:.2f} ms, p99 {s['latency_wall_p99_s'] * 1e3:.2f} ms",
        f"  link: {'connected' if link['connected'] else 'DISCONNECTED'}, {link['rate_hz']:.1f} Hz "
        f"(expected {link['expected_rate_hz']:.0f}), sent {s['packets_sent']}, accepted "
        f"{link['accepted']}, rejected {sum(link['rejected'].values())}, duplicates "
        f"{link['duplicates']}, out of order {link['out_of_order']}, gaps {link['gaps']}",
        f"  safety: joint-limit margin {s['joint_limit_margin_rad']:.3f} rad, checker flags "
        f"{s['safety'] or 'none'}, HOLD by safety {s.get('safety_holds', 0)}, velocity clips "
        f"{s['velocity_clips']}, workspace clamps {s['workspace_clamps']}",
        f"  wrote {s['out_dir']}/ ({', '.join(Path(f).name for f in s['files'])})",
    ]
    return "\n".join(lines)


def main(argv: Optional[list] = None) -> int:
    from hri_runtime.config import ConfigError, load_robot_config

    ap = argparse.ArgumentParser(prog="hri teleop-demo", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robot", default="fr3")
    ap.add_argument("--out", type=Path, default=None, help="output directory (default runs/<timestamp>)")
    ap.add_argument("--port", type=int, default=0,
                    help="UDP port of the receiver (default 0: any free port, so parallel runs never "
                         "collide; the sender is in this process)")
    ap.add_argument("--solver", choices=["mink", "dls"], default=None, help="override teleop.ik.solver")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--viewer", action="store_true", help="show the MuJoCo viewer live (needs a display)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    ap.add_argument("-v", "--verbose", action="store_true", help="info logs on stderr too")
    args = ap.parse_args(argv)
    try:
        import hri_core.se3  # noqa: F401  (all SE(3) math of the chain)
    except ImportError as exc:
        print(f"hri teleop-demo: the C++ core is not installed ({exc}); build it with "
              "`make venv` (pip install -e cpp)", file=sys.stderr)
        return 2
    overrides = list(args.set) + ([f"teleop.ik.solver={args.solver}"] if args.solver else [])
    try:
        cfg = load_robot_config(args.robot, overrides=overrides)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    out = args.out or Path("runs") / _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out.mkdir(parents=True, exist_ok=True)
    handlers = _setup_logging(out / "teleop.log", verbose=args.verbose)
    print(f"hri teleop-demo: {args.robot}, scripted VR operator over UDP -> clutch -> IK -> MuJoCo "
          f"(log: {out / 'teleop.log'})", flush=True)
    try:
        return _run(args, cfg, out)
    finally:
        for h in handlers:
            logging.getLogger().removeHandler(h)
            h.close()


def _run(args, cfg: dict, out: Path) -> int:
    try:
        summary = run_demo(cfg, out, port=args.port, plot=not args.no_plot,
                           progress=not args.quiet and sys.stderr.isatty(), viewer=args.viewer)
    except OSError as exc:
        print(f"hri teleop-demo: {exc} (UDP {cfg['teleop']['vr']['bind_address']}:"
              f"{cfg['teleop']['vr']['port'] if args.port is None else args.port}; try --port 0)",
              file=sys.stderr)
        return 1
    except Exception as exc:  # model missing etc.: one clear line
        from hri_sim.models import ModelNotFoundError

        if isinstance(exc, ModelNotFoundError):
            print(f"hri teleop-demo: {exc}", file=sys.stderr)
            return 2
        raise
    print(format_summary(summary))
    return 0
