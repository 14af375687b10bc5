"""``hri teleop-demo``: the arm teleop main scenario, headless, in lockstep simulated time.

A scripted operator draws a square with several clutch strokes; its controller-pose packets go
over real UDP on loopback to the receiver (validation, sequence check, link health), then through
the clutch. ``teleop.output: cartesian`` (default, :func:`run_stack_demo`): planner ->
``/interaction/reference`` (optionally jittered) -> the 1 kHz interaction loop on the
torque-controlled MuJoCo arm, with a scripted person pushing the end effector. ``joint``
(:func:`run_demo`): 50 Hz planner -> 100 Hz IK -> joint impedance on the MuJoCo arm. Both are the
stack's real nodes composed in one process (:class:`hri_arm_teleop.stack.ArmStack`), stepped by
the runtime's lockstep runner: every step the operator sends the packets due, ``arm_teleop``
takes them, the nodes tick, physics advances. No Zenoh router, no ROS needed.

At the end it prints tracking error, latency percentiles and link health, read back from the
run's recording, and writes into the output directory (default ``runs/<UTC timestamp>/``) the
plots, the MCAP recording, ``trace.npz`` and ``summary.json``.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np

from hri_runtime import provenance
from hri_arm_teleop.parameters_gen import TeleopClutchParams, TeleopParams
from hri_interaction.parameters_gen import InteractionParams
from hri_runtime.errors import add_robot_argument, port as port_arg
from hri_runtime.parameters_gen import RobotParams
from hri_sim.parameters_gen import SimArmParams

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
    """The square with ``teleop.output: joint`` (clutch -> planner -> IK -> joint impedance on the
    MuJoCo arm): ``arm_teleop`` and the stop supervisor composed in one process, lockstep
    (:class:`hri_arm_teleop.stack.ArmStack`), recorded in ``teleop.mcap``; the figures and the plot
    are read back from that recording (:func:`hri_arm_teleop.stack.read_joint_trace`)."""
    from hri_arm_teleop.core.scenario import SquareScenario, path_error_to_polyline
    from hri_arm_teleop.stack import ArmStack, read_joint_trace

    t = TeleopParams.from_tree(cfg)
    scenario = SquareScenario.from_tree(cfg)
    out_dir.mkdir(parents=True, exist_ok=True)
    mcap = out_dir / "teleop.mcap"
    stack = ArmStack(cfg, port=t.vr.port if port is None else port, recv_timeout_s=recv_timeout_s, mcap=mcap)
    sim = stack.arm.robot.sim
    ee_start = sim.ee_pose()
    view = open_viewer(sim) if viewer else None
    last_progress = [-1.0]

    def show(now: float) -> None:
        if progress and now - last_progress[0] >= 1.0:
            _progress(now, scenario.duration_s)
            last_progress[0] = now

    def paced(now: float) -> None:   # live view, paced to real time
        view.sync()
        time.sleep(max(0.0, now - (time.perf_counter() - wall0)))

    stack.on_tick = show
    if view is not None:
        stack.lockstep.after(paced)
    wall0 = time.perf_counter()
    try:
        stack.run(scenario.duration_s)
        health, pipe, closing = stack.receiver.health(), stack.pipe, sim.ee_pose()[:3, 3]
        q_min, q_max = sim.q_min, sim.q_max
    finally:
        stack.close()
        if view is not None:
            view.close()
    if progress:
        _progress(scenario.duration_s, scenario.duration_s)
        sys.stderr.write("\n")
    wall_s = time.perf_counter() - wall0
    a = read_joint_trace(mcap, stack.cfg, packets=stack.packets())
    track = (a["mode"] > 0.5) & (a["engaged"] > 0.5) & np.all(np.isfinite(a["target_p"]), axis=1)
    err = np.linalg.norm(a["ee_p"][track] - a["target_p"][track], axis=1)
    corners = square_corners(cfg, scenario, ee_start)
    drawn = a["ee_p"][a["engaged"] > 0.5]
    cross = path_error_to_polyline(drawn, corners) if len(drawn) else np.zeros(1)
    wl = np.asarray(stack.wall_latency_s)
    summary = {
        "robot": RobotParams.from_tree(cfg).model, "ik_solver": t.ik.solver,
        "actuation": SimArmParams.from_tree(cfg).actuation,
        "simulated_s": float(a["t"][-1]), "wall_s": wall_s,
        "square_side_m": scenario.side_m, "speed_m_s": scenario.speed_m_s, "strokes": scenario.strokes,
        "engagements": pipe.clutch.counters.engagements,
        "tracking_rms_error_m": float(np.sqrt(np.mean(err ** 2))) if err.size else float("nan"),
        "tracking_max_error_m": float(err.max()) if err.size else float("nan"),
        "path_rms_error_m": float(np.sqrt(np.mean(cross ** 2))), "path_max_error_m": float(cross.max()),
        "closing_error_m": float(np.linalg.norm(closing - ee_start[:3, 3])),
        "joint_limit_margin_rad": float(min(np.min(a["q"] - q_min), np.min(q_max - a["q"]))),
        "latency_wall_p50_s": float(np.percentile(wl, 50)) if wl.size else float("nan"),
        "latency_wall_p99_s": float(np.percentile(wl, 99)) if wl.size else float("nan"),
        "packets_sent": stack.operator.sent, "packets_not_arrived_in_time": stack.lost_waiting,
        "link": health, "safety": dict(pipe.gate.flags), "safety_holds": pipe.safety_holds,
        "rejected_commands": dict(pipe.rejected_commands),
        "velocity_clips": pipe.clutch.counters.velocity_clips,
        "workspace_clamps": pipe.clutch.counters.workspace_clamps,
        "mode_transitions": [(round(tt, 3), m.value) for tt, m in pipe.bridge.transitions],
    }
    np.savez_compressed(out_dir / "trace.npz", corners=corners, **a)
    summary["mcap"] = str(mcap)
    if plot:
        summary["png"] = str(plot_paths(out_dir / "path.png", a, corners, summary))
    summary["out_dir"] = str(out_dir)
    summary["files"] = [str(out_dir / n) for n in ("path.png", "teleop.mcap", "trace.npz", "summary.json", "teleop.log")
                        if n != "path.png" or plot]
    summary["provenance"] = provenance.provenance("hri_arm_teleop")     # commit, version, build flags
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    return summary


def run_stack_demo(cfg: dict, out_dir: Path, port: Optional[int] = None, plot: bool = True,
                   progress: bool = True, recv_timeout_s: float = 0.2, engine: Optional[str] = None,
                   jitter: Optional[bool] = None) -> dict:
    """The main scenario (``teleop.output: cartesian``): the square through VR link -> clutch ->
    planner -> /interaction/reference (jittered) -> 1 kHz interaction loop -> torque-controlled
    MuJoCo arm, a person pushing the EE (step in impedance, sine in admittance): the stack's real
    nodes in one process, lockstep (:class:`hri_arm_teleop.stack.ArmStack`), recorded in
    ``teleop.mcap``; the figures and plots are read back from that recording. Then, with
    ``interaction.engine: rt``, the C++ loop on its real-time thread for
    ``teleop.scenario.realtime_s`` (:func:`realtime_window`)."""
    from hri_arm_teleop.core.scenario import SquareScenario
    from hri_arm_teleop.core.scenario import path_error_to_polyline
    from hri_arm_teleop.stack import ArmStack, ScriptedPerson, push_metrics, read_trace, scenario_config, tracking_mask

    cfg = scenario_config(cfg)
    t = TeleopParams.from_tree(cfg)
    sc = t.scenario
    square = SquareScenario.from_tree(cfg)
    person = ScriptedPerson.from_tree(cfg, square)
    out_dir.mkdir(parents=True, exist_ok=True)
    mcap = out_dir / "teleop.mcap"
    stack = ArmStack(cfg, person, jitter=jitter, port=t.vr.port if port is None else port,
                     recv_timeout_s=recv_timeout_s, mcap=mcap)
    ee_start = stack.engine.ee_pose()
    last_progress = [-1.0]

    def show(now: float) -> None:
        if progress and now - last_progress[0] >= 1.0:
            _progress(now, person.t_end)
            last_progress[0] = now

    stack.on_tick = show
    wall0 = time.perf_counter()
    try:
        stack.run(person.t_end)
        st = stack.engine.state()
        health = stack.receiver.health()
        pipe = stack.pipe
    finally:
        stack.close()
    if progress:
        _progress(person.t_end, person.t_end)
        sys.stderr.write("\n")
    wall_s = time.perf_counter() - wall0
    a = read_trace(mcap, stack.cfg, stack.jitter, packets=stack.packets())
    engine_kind = engine or InteractionParams.from_tree(cfg).engine
    rt_stats = realtime_window(cfg, st, sc.realtime_s, engine_kind)
    it = InteractionParams.from_tree(cfg)
    imp, adm = it.impedance, it.admittance
    mask = tracking_mask(a, person, sc.settle_max_s)
    err = np.linalg.norm(a["ee_p"] - a["target_p"], axis=1)[mask]
    corners = square_corners(cfg, square, ee_start)
    cross = path_error_to_polyline(a["ee_p"][mask], corners) if mask.any() else np.zeros(1)
    pm = push_metrics(a, person, imp.stiffness_diag[3], adm.stiffness_diag[3],
                      sc.settle_tol_m, sc.settle_max_s)
    lat = a["latency_s"]
    wl = np.asarray(stack.wall_latency_s)
    link_lat = a["link_delay_s"]
    summary = {
        "robot": RobotParams.from_tree(cfg).model, "output": "cartesian",
        "engine": rt_stats.get("engine", stack.engine.kind), "lockstep_engine": stack.engine.kind,
        "passivity_filter": it.passivity.filter,
        "jitter": stack.jitter,
        "simulated_s": float(a["t"][-1]), "wall_s": wall_s,
        "square_side_m": square.side_m, "speed_m_s": square.speed_m_s, "strokes": square.strokes,
        "engagements": pipe.clutch.counters.engagements,
        "tracking_rms_error_m": float(np.sqrt(np.mean(err ** 2))) if err.size else float("nan"),
        "tracking_max_error_m": float(err.max()) if err.size else float("nan"),
        "path_rms_error_m": float(np.sqrt(np.mean(cross ** 2))), "path_max_error_m": float(cross.max()),
        "closing_error_m": float(np.linalg.norm(a["ee_p"][-1] - ee_start[:3, 3])),
        **pm,
        "energy_violations": int(st["energy_violations"]), "min_energy_j": float(np.min(a["energy_j"])),
        "realtime_s": rt_stats.get("seconds", 0.0), "missed_deadlines": rt_stats.get("missed"),
        "realtime_ticks": rt_stats.get("ticks"), "period_error_us": rt_stats.get("period_error_us"),
        "tick_cost_us": rt_stats.get("tick_cost_us"), "rt": rt_stats.get("rt"),
        "latency_packet_to_torque_sim_p50_s": float(np.percentile(lat, 50)) if lat.size else float("nan"),
        "latency_packet_to_torque_sim_p99_s": float(np.percentile(lat, 99)) if lat.size else float("nan"),
        "latency_packet_to_torque_wall_p50_s": float(np.percentile(wl, 50)) if wl.size else float("nan"),
        "latency_packet_to_torque_wall_p99_s": float(np.percentile(wl, 99)) if wl.size else float("nan"),
        "reference_link_delay_p50_s": float(np.percentile(link_lat, 50)) if link_lat.size else float("nan"),
        "reference_link_delay_p99_s": float(np.percentile(link_lat, 99)) if link_lat.size else float("nan"),
        "references_sent": a["references_sent"], "references_delivered": a["references_delivered"],
        "packets_sent": stack.operator.sent, "packets_not_arrived_in_time": stack.lost_waiting,
        "link": health, "interaction_flags": st.get("flags"), "interaction_rejected": st.get("rejected"),
        "safety": dict(pipe.gate.flags), "safety_holds": pipe.safety_holds,
        "mode_transitions": [(round(tt, 3), m.value) for tt, m in pipe.bridge.transitions],
        "push_t_s": [person.t_push, person.t_push + person.duration_s],
        "push_direction": person.direction.tolist(),
        "admittance_t_s": [person.t_adm, person.t_sine, person.t_sine_end],
    }
    np.savez_compressed(out_dir / "trace.npz", corners=corners, **a)
    summary["mcap"] = str(mcap)
    if plot:
        summary["png"] = [str(p) for p in plot_stack(out_dir, a, corners, summary, mask)]
    summary["out_dir"] = str(out_dir)
    summary["files"] = [str(out_dir / n) for n in ("path.png", "push.png", "energy.png", "teleop.mcap",
                                                   "trace.npz", "summary.json", "teleop.log")
                        if plot or not n.endswith(".png")]
    summary["provenance"] = provenance.provenance("hri_arm_teleop")     # commit, version, build flags
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    return summary


def realtime_window(cfg: dict, state: dict, seconds: float, engine: str) -> dict:
    """With ``engine`` rt: the C++ loop (``hri_interaction.engine.RtEngine``) on its real-time
    thread for ``seconds``, holding the arm at the run's last posture ``state["q"]``: its own
    deadline statistics (missed, period error, tick cost, scheduling). {} for the python engine,
    a core without ``rt`` or 0 s."""
    from hri_interaction.engine import make_engine

    if engine != "rt" or seconds <= 0:
        return {}
    eng = make_engine(cfg, np.asarray(state["q"], float), engine="rt")
    if getattr(eng, "kind", "") != "rt":
        return {}
    loop = eng.loop
    t0 = loop.state()["ticks"]
    loop.reset_stats()
    eng.start()
    try:
        time.sleep(seconds)
    finally:
        eng.stop()
    s = loop.state()
    return {"engine": "rt", "seconds": seconds, "ticks": int(s["ticks"]) - int(t0), "missed": int(s["missed"]),
            "period_error_us": dict(s["period_error_us"]), "tick_cost_us": dict(s["tick_cost_us"]),
            "rt": dict(s.get("rt", {}))}


def _plot_square(ax, corners, target_p, ee_p, target_style, ee_style, target_label: str, title: str,
                 fontsize=None) -> None:
    """The square seen from the operator (base y-z plane, mm; facing the robot's front, +y is on
    the left): the ideal corners, the target and the actual EE."""
    ax.plot(corners[:, 1] * 1e3, corners[:, 2] * 1e3, "k:", lw=1, label="ideal square")
    ax.plot(target_p[:, 1] * 1e3, target_p[:, 2] * 1e3, target_style[0], label=target_label, **target_style[1])
    ax.plot(ee_p[:, 1] * 1e3, ee_p[:, 2] * 1e3, ee_style[0], label="actual EE", **ee_style[1])
    ax.set_xlabel("base y [mm]")
    ax.set_ylabel("base z [mm]")
    ax.invert_xaxis()
    ax.set_aspect("equal")
    ax.legend(fontsize=fontsize)
    ax.set_title(title)


def square_corners(cfg: dict, square, ee_start: np.ndarray) -> np.ndarray:
    """The ideal square's corners in the base frame: the operator's square (tracking space, Unity
    axes) scaled by ``teleop.clutch.position_scale`` around the start EE position."""
    from hri_arm_teleop.core.frames import UNITY_TO_ROS

    scale = TeleopClutchParams.from_tree(cfg).position_scale
    return np.array([ee_start[:3, 3] + scale * (UNITY_TO_ROS @ [x, y, 0.0]) for x, y in square.corners_xy()])


def plot_stack(out_dir: Path, a: dict, corners: np.ndarray, s: dict, mask: np.ndarray) -> list:
    """path.png (square: target vs EE), push.png (force and deviation along the push), energy.png."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [1, 1.4]})
    eng = a["engaged"] > 0.5
    _plot_square(ax, corners, a["target_p"][eng], a["ee_p"], ("C0.", {"ms": 1}), ("C3-", {"lw": 0.8}),
                 "/interaction/reference", f"{s['robot']}: square via the interaction loop ({s['engine']})",
                 fontsize=8)
    err = np.linalg.norm(a["ee_p"] - a["target_p"], axis=1) * 1e3
    ax2.plot(a["t"], err, "C3-", lw=0.8, label="|reference - EE| [mm]")
    ax2.fill_between(a["t"], 0, max(float(np.max(err)), 1.0), where=mask, color="C2", alpha=0.15,
                     label="tracking samples")
    ax2.set_xlabel("simulated time [s]")
    ax2.set_ylabel("EE position error [mm]")
    ax2.set_title(f"tracking RMS {s['tracking_rms_error_m'] * 1e3:.2f} mm, max "
                  f"{s['tracking_max_error_m'] * 1e3:.2f} mm")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "path.png", dpi=110)
    plt.close(fig)
    files.append(out_dir / "path.png")

    d = np.asarray(s.get("push_direction", [1.0, 0.0, 0.0]), float)
    f_along = a["push_n"] @ d
    dev = (a["ee_p"] - a["target_p"]) @ d * 1e3
    fig, ax = plt.subplots(figsize=(12, 4.5))
    ax.plot(a["t"], f_along, "C1-", lw=1, label="push force along n [N]")
    ax.set_xlabel("simulated time [s]")
    ax.set_ylabel("force [N]")
    ax_r = ax.twinx()
    ax_r.plot(a["t"], dev, "C0-", lw=0.8, label="EE deviation along n [mm]")
    ax_r.set_ylabel("deviation [mm]")
    adm = a["mode"] == 1
    ax.fill_between(a["t"], float(f_along.min()) - 1, float(f_along.max()) + 1, where=adm, color="C4",
                    alpha=0.12, label="admittance mode")
    ax.set_title(f"step push {s['push_force_n']:.0f} N: {s['push_deviation_m'] * 1e3:.2f} mm (F/K "
                 f"{s['push_expected_m'] * 1e3:.2f} mm), back in {s['recovery_s'] * 1e3:.0f} ms")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax_r.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(out_dir / "push.png", dpi=110)
    plt.close(fig)
    files.append(out_dir / "push.png")

    fig, ax = plt.subplots(figsize=(12, 4))
    ax.plot(a["t"], a["energy_j"], "C2-", lw=1, label="passivity observer E [J]")
    ax.axhline(0.0, color="k", lw=0.5)
    ax.set_xlabel("simulated time [s]")
    ax.set_ylabel("E [J]")
    ax.set_title(f"{s['passivity_filter']}: {s['energy_violations']} energy violations")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "energy.png", dpi=110)
    plt.close(fig)
    files.append(out_dir / "energy.png")
    return files


def format_stack_summary(s: dict) -> str:
    link = s["link"]
    pe = s.get("period_error_us") or {}
    lines = [
        f"teleop demo: {s['robot']}, VR -> clutch -> /interaction/reference -> 1 kHz interaction "
        f"({s['engine']} engine) -> torque-controlled MuJoCo arm, {s['simulated_s']:.1f} s simulated in "
        f"{s['wall_s']:.1f} s wall",
        f"  square {s['square_side_m'] * 100:.0f} cm at {s['speed_m_s'] * 100:.0f} cm/s in "
        f"{s['engagements']} clutch strokes; reference link "
        f"{'lognormal jitter' if s['jitter'] else 'direct'} (delay p50 "
        f"{s['reference_link_delay_p50_s'] * 1e3:.0f} ms, p99 {s['reference_link_delay_p99_s'] * 1e3:.0f} ms; "
        f"{s['references_delivered']}/{s['references_sent']} delivered)",
        f"  tracking error (EE vs reference, impedance): RMS {s['tracking_rms_error_m'] * 1e3:.3f} mm, "
        f"max {s['tracking_max_error_m'] * 1e3:.3f} mm; path error vs the ideal square RMS "
        f"{s['path_rms_error_m'] * 1e3:.3f} mm",
        f"  push {s['push_force_n']:.0f} N for 1 s (impedance): deviation {s['push_deviation_m'] * 1e3:.3f} mm "
        f"(F/K {s['push_expected_m'] * 1e3:.3f} mm), back within {s['recovery_s'] * 1e3:.0f} ms "
        f"({'ok' if s['recovered'] else 'NOT'} within the settling bound)",
    ]
    if "admittance_peak_m" in s:
        lines.append(
            f"  push {s['admittance_push_force_n']:.0f} N at 0.5 Hz (admittance): peak deviation "
            f"{s['admittance_peak_m'] * 1e3:.3f} mm (static F/K_adm + F/K {s['admittance_expected_m'] * 1e3:.3f} mm), "
            f"back within {s['admittance_recovery_s'] * 1e3:.0f} ms")
    lines += [
        f"  passivity ({s['passivity_filter']}): {s['energy_violations']} energy violations, min E "
        f"{s['min_energy_j']:.4f} J",
        (f"  1 kHz loop on its real-time thread ({s['realtime_s']:.0f} s, {s['realtime_ticks']} ticks, "
         f"{'SCHED_FIFO' if (s.get('rt') or {}).get('sched_fifo') else 'SCHED_OTHER'}): missed deadlines "
         f"{s['missed_deadlines']}, period error p50 {pe['p50']:.0f} us / p99 {pe['p99']:.0f} us / max "
         f"{pe['max']:.0f} us, tick cost p99 {s['tick_cost_us']['p99']:.0f} us" if pe else
         "  1 kHz loop: lockstep only (python engine): no deadlines"),
        f"  latency VR packet -> first torque change (simulated"
        f"{', incl. the jittered link' if s['jitter'] else ''}): p50 "
        f"{s['latency_packet_to_torque_sim_p50_s'] * 1e3:.1f} ms, p99 "
        f"{s['latency_packet_to_torque_sim_p99_s'] * 1e3:.1f} ms"
        + ("" if s["jitter"] else
           f"; wall (UDP + processing, lockstep) p50 {s['latency_packet_to_torque_wall_p50_s'] * 1e3:.2f} ms, "
           f"p99 {s['latency_packet_to_torque_wall_p99_s'] * 1e3:.2f} ms"),
        f"  link: {'connected' if link['connected'] else 'DISCONNECTED'}, sent {s['packets_sent']}, accepted "
        f"{link['accepted']}, rejected {sum(link['rejected'].values())}; safety flags "
        f"{s['safety'] or 'none'}, holds {s['safety_holds']}",
        f"  wrote {s['out_dir']}/ ({', '.join(Path(f).name for f in s['files'])})",
    ]
    return "\n".join(lines)


def plot_paths(path: Path, a: dict, corners: np.ndarray, summary: dict) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, axz, ax2) = plt.subplots(1, 3, figsize=(17, 5), gridspec_kw={"width_ratios": [1.1, 1, 1.4]})
    track = a["mode"] > 0.5
    _plot_square(ax, corners, a["target_p"][track], a["ee_p"], ("C0-", {"lw": 2}), ("C3--", {"lw": 1}),
                 "target", f"{summary['robot']}: {summary['strokes']} clutch strokes, "
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
    from hri_runtime.cli.main import SUMMARIES
    from hri_runtime.config.tree import ConfigError, load_robot_config

    ap = argparse.ArgumentParser(prog="hri teleop-demo", description=SUMMARIES["teleop-demo"])
    add_robot_argument(ap, "fr3")
    ap.add_argument("--out", type=Path, default=None, help="output directory (default runs/<timestamp>)")
    ap.add_argument("--port", type=port_arg, default=0,
                    help="UDP port of the receiver (default 0: any free port, so parallel runs never "
                         "collide; the sender is in this process)")
    ap.add_argument("--solver", choices=["mink", "dls"], default=None, help="override teleop.ik.solver")
    ap.add_argument("--output", choices=["cartesian", "joint"], default=None,
                    help="override teleop.output (cartesian: the interaction stack; joint: IK -> joint impedance)")
    ap.add_argument("--engine", choices=["rt", "python"], default=None, help="override interaction.engine")
    ap.add_argument("--no-jitter", action="store_true", help="reference link without the lognormal delays")
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
    overrides = list(args.set) + ([f"teleop.ik.solver={args.solver}"] if args.solver else []) \
        + ([f"teleop.output={args.output}"] if args.output else []) \
        + ([f"interaction.engine={args.engine}"] if args.engine else []) \
        + (["teleop.scenario.jitter=false"] if args.no_jitter else [])
    try:
        cfg = load_robot_config(args.robot, overrides=overrides)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    out = args.out or Path("runs") / _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out.mkdir(parents=True, exist_ok=True)
    handlers = _setup_logging(out / "teleop.log", verbose=args.verbose)
    chain = ("clutch -> 1 kHz interaction (torque)" if TeleopParams.from_tree(cfg).output == "cartesian"
             else "clutch -> IK -> joint impedance")
    print(f"hri teleop-demo: {args.robot}, scripted VR operator over UDP -> {chain} -> MuJoCo "
          f"(log: {out / 'teleop.log'})", flush=True)
    try:
        return _run(args, cfg, out)
    finally:
        for h in handlers:
            logging.getLogger().removeHandler(h)
            h.close()


def _run(args, cfg: dict, out: Path) -> int:
    try:
        if TeleopParams.from_tree(cfg).output == "cartesian":
            summary = run_stack_demo(cfg, out, port=args.port, plot=not args.no_plot,
                                     progress=not args.quiet and sys.stderr.isatty())
        else:
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
    print(format_stack_summary(summary) if summary.get("output") == "cartesian" else format_summary(summary))
    return 0
