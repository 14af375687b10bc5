#!/usr/bin/env python3
"""The Tino stack on rclpy: the backend's executor against rclpy's MultiThreadedExecutor, in one run.

    make ros2-ci ROS2_PYTEST_ARGS=--co      # once: the Jazzy venv .venv-ros2 with the workspace
    AMENT_PREFIX_PATH=$PWD/.venv-ros2 RMW_IMPLEMENTATION=rmw_fastrtps_cpp \\
      .venv-ros2/bin/python bench/transport/rclpy_executor.py [--runs 2] [--seconds 20]

Each run launches ``launch/tino.launch.yaml`` with ``HRI_TRANSPORT=rclpy`` (``hri launch``, its own
ROS domain), lets it settle for ``--settle`` s, then measures every node's CPU (utime + stime from
/proc) over ``--seconds`` s while the stack idles (atomic and the simulation run their loops and
topics; no presses), stops it with SIGINT and reads each node's exit line (``timer_periods_missed``,
``messages_dropped``). The two executors alternate. rclpy's is put in place by a ``sitecustomize``
on PYTHONPATH that replaces ``hri_runtime.impl.rclpy_backend._executor_class`` in every node
process. Prints one table row per executor and node (median CPU over runs, % of one core) and
the ratios. Timing lives here, never in tests.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TCK = os.sysconf("SC_CLK_TCK")
NODES = ("tino_sim", "atomic", "robot_state", "vr_interface", "stop_supervisor")

RCLPY_MT = '''
import hri_runtime.impl.rclpy_backend as rb

def _rclpy_multithreaded(rclpy):
    class MultiThreaded(rclpy.executors.MultiThreadedExecutor):
        def __init__(self, *, context, workers):
            super().__init__(context=context)
    return MultiThreaded

rb._executor_class = _rclpy_multithreaded
'''


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TCK


def node_pids(launcher: int) -> dict[str, int]:
    """node name -> pid of the launcher's children (``-r __node:=<name>``)."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != launcher:
                continue
            with open(f"/proc/{d}/cmdline") as f:
                m = re.search(r"__node:=(\w+)", f.read().replace("\0", " "))
        except (OSError, ValueError, IndexError):
            continue
        if m:
            out[m.group(1)] = int(d)
    return out


def run(kind: str, domain: int, settle_s: float, seconds: float, shim: Path) -> dict:
    env = dict(os.environ, HRI_TRANSPORT="rclpy", ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    if kind == "rclpy MultiThreadedExecutor":
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(shim), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.Popen([sys.executable, "-m", "hri_runtime.cli.main", "launch", str(ROOT / "launch/tino.launch.yaml"),
                             f"vr_port:={47100 + domain}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)
    try:
        time.sleep(settle_s)
        pids = node_pids(proc.pid)
        missing = set(NODES) - set(pids)
        if missing:
            raise SystemExit(f"{kind}: nodes not running after {settle_s} s: {sorted(missing)}")
        t0 = {n: cpu_s(p) for n, p in pids.items()}
        time.sleep(seconds)
        cpu = {n: 100.0 * (cpu_s(p) - t0[n]) / seconds for n, p in pids.items()}
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        text, _ = proc.communicate(timeout=120)
    counters = {}
    for n in NODES:
        m = re.search(rf"\[{n}\].*loop counters: timer_periods_missed (\d+), messages_dropped (\d+)", text)
        counters[n] = (int(m.group(1)), int(m.group(2))) if m else (None, None)
    return {"cpu": cpu, "counters": counters}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=2, help="runs per executor (alternating)")
    ap.add_argument("--seconds", type=float, default=20.0, help="measured idle time per run")
    ap.add_argument("--settle", type=float, default=10.0, help="seconds after the launch before measuring")
    a = ap.parse_args(argv)
    kinds = ("hri_runtime executor", "rclpy MultiThreadedExecutor")
    results: dict[str, list] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        shim = Path(tmp)
        (shim / "sitecustomize.py").write_text(RCLPY_MT)
        domain = 60
        for _ in range(a.runs):
            for k in kinds:
                domain += 1
                results[k].append(run(k, domain, a.settle, a.seconds, shim))
    import rclpy  # noqa: F401  (for the version line)
    from importlib.metadata import version
    print(f"# rclpy executor bench: Python {sys.version.split()[0]}, rclpy {version('ros-jazzy-rclpy')}, "
          f"RMW {os.environ.get('RMW_IMPLEMENTATION', '(default)')}, load average {os.getloadavg()[0]:.1f}, "
          f"{a.runs} runs x {a.seconds:.0f} s per executor, Tino stack idle")
    print("| node | " + " | ".join(f"{k}: CPU % (median)" for k in kinds) + " | ratio | timer periods missed | dropped |")
    print("|---|---:|---:|---:|---|---|")
    for n in NODES:
        med = [statistics.median(r["cpu"][n] for r in results[k]) for k in kinds]
        missed = " / ".join(",".join(str(r["counters"][n][0]) for r in results[k]) for k in kinds)
        dropped = " / ".join(",".join(str(r["counters"][n][1]) for r in results[k]) for k in kinds)
        ratio = med[1] / med[0] if med[0] > 0 else float("nan")
        print(f"| {n} | {med[0]:.1f} | {med[1]:.1f} | {ratio:.2f} | {missed} | {dropped} |")
    tot = [statistics.median(sum(r["cpu"].values()) for r in results[k]) for k in kinds]
    print(f"stack total: {tot[0]:.1f} % vs {tot[1]:.1f} % of a core, ratio {tot[1] / tot[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
