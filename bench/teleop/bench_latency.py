"""Teleop latency: VR controller pose packet in -> joint command out, through the whole chain.

    .venv/bin/python bench/teleop/bench_latency.py [--seconds 10] [--solver mink|dls]

Two measurements in one run, both wall clock (time.perf_counter), FR3 in MuJoCo:

1. ``realtime``: the scripted operator streams packets over UDP (loopback) at 50 Hz from its own
   thread, the loop runs at its configured base rate in real time (sleeping between ticks). The
   latency includes waiting for the next I/O / planner tick (decimation 2 at 100 Hz: 0-20 ms),
   i.e. what an operator experiences. Repeated with all decimations 1 (every task at 100 Hz).
2. ``processing``: lockstep (as ``hri teleop-demo``): each packet is processed in the tick right
   after it is sent, so only the processing time remains (UDP + decode + clutch + planner + IK +
   safety + command).

Seed 003's keyboard chain: 60-70 ms. Target (issue 7): p99 <= 10 ms on the Zenoh runtime.
"""
from __future__ import annotations

import argparse
import os
import platform
import socket
import sys
import threading
import time

import numpy as np

from hri_runtime.config import load_robot_config


def realtime(cfg, seconds: float) -> np.ndarray:
    from hri_arm_teleop.core.scenario import SquareScenario
    from hri_arm_teleop.emulate import ScriptedOperator
    from hri_arm_teleop.lockstep import build_pipeline
    from hri_arm_teleop.robot_mujoco import MujocoRobot
    from hri_arm_teleop.vr_link import ArmVrReceiver

    t = cfg["teleop"]
    period = 1.0 / t["loop"]["base_rate_hz"]
    robot = MujocoRobot.from_config(cfg, interpolation_s=period * t["loop"]["controller_decimation"])
    t0 = time.perf_counter()
    clock = lambda: time.perf_counter() - t0  # noqa: E731
    pipe = build_pipeline(cfg, robot, clock)
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    receiver = ArmVrReceiver(rx, clock, cfg)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    op = ScriptedOperator(SquareScenario.from_config(t["demo"]), tx, rx.getsockname(),
                          t["demo"]["packet_rate_hz"])
    stop = threading.Event()
    # packet stamp = wall time since t0 at sending, so latency = clock() at command - stamp
    def sender():
        while not stop.is_set():
            now = clock()
            if op.next_t <= now:
                op.send_due(now)
            time.sleep(max(0.0, min(op.next_t - clock(), 0.005)))

    # the operator's stamp is its scheduled time; send_due sends at (or just after) it
    th = threading.Thread(target=sender, daemon=True)
    th.start()
    k = 0
    while clock() < seconds:
        for p in receiver.poll():
            pipe.on_hand(p.position, p.quat_xyzw, p.clutch, source_stamp=op.sent_wall.get(p.stamp_s, t0 + p.stamp_s) - t0)
        pipe.tick()
        robot.sim.advance(period)
        k += 1
        time.sleep(max(0.0, k * period - clock()))
    stop.set()
    th.join()
    return np.asarray(pipe.trace.latency_s)


def processing(cfg) -> np.ndarray:
    from hri_arm_teleop.demo import run_demo
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        s = run_demo(cfg, Path(d), port=0, plot=False, progress=False)
    return s


def pct(a, q):
    return float(np.percentile(a, q)) * 1e3 if len(a) else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--solver", default="mink", choices=["mink", "dls"])
    args = ap.parse_args(argv)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    base = [f"teleop.ik.solver={args.solver}"]
    rows = []
    for label, ov in [("realtime, decimations 1/2/2 (default)", base),
                      ("realtime, all decimations 1", base + ["teleop.loop.io_decimation=1",
                                                               "teleop.loop.planner_decimation=1"]),
                      ("realtime, base 200 Hz, all decimations 1", base + [
                          "teleop.loop.base_rate_hz=200.0", "teleop.loop.io_decimation=1",
                          "teleop.loop.planner_decimation=1"])]:
        lat = realtime(load_robot_config("fr3", overrides=ov), args.seconds)
        rows.append((label, len(lat), pct(lat, 50), pct(lat, 99), pct(lat, 100)))
    s = processing(load_robot_config("fr3", overrides=base))
    rows.append(("processing only (lockstep demo)", s["packets_sent"],
                 s["latency_wall_p50_s"] * 1e3, s["latency_wall_p99_s"] * 1e3, float("nan")))
    print(f"{'chain (IK ' + args.solver + ')':<42} {'n':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for label, n, p50, p99, mx in rows:
        print(f"{label:<42} {n:>6} {p50:>8.2f} {p99:>8.2f} {mx:>8.2f}")
    print("reference: seed 003 keyboard chain 60-70 ms; target p99 <= 10 ms (Zenoh runtime)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
