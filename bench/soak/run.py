"""Soak: each robot's launch file for ``--minutes`` with its scripted operator looping; per node,
resident memory at the start (after warm-up) and at the end, missed deadlines, dropped messages.

    .venv/bin/python bench/soak/run.py [--robot fr3 --robot tino ...] [--minutes 30] [--quick]

Per robot, one after the other: ``hri launch launch/<robot>.launch.yaml vr_port:=<free port>``
(its own Zenoh router in-process on a free loopback port, every node in its own process) and the
operator: ``hri arm-emulate --loop`` for an arm (the hand draws the square of ``teleop.demo``, one
every scenario period, for ever), ``hri vr-emulate --every <s>`` for Tino (the pulse headset:
an action every few seconds, states 1, 2, 3 cycling, for the whole run).

Memory: ``VmRSS`` of ``/proc/<pid>/status`` of every node process (the pids the launcher prints),
of the launcher (router included) and of the operator, every ``--sample-s``. Start = the first
sample after ``--warmup-s``, end = the last one; growth = end - start; the slope is a least-squares
fit over the samples after the warm-up (MB per minute). Goal: growth < 5 MB.

Missed deadlines and dropped messages, from what the nodes report themselves:

- every node, at shutdown (SIGINT to the launcher), logs the runtime's ``loop counters``: timer
  periods skipped because a call came late (missed deadlines of its timers), samples its keep-last
  subscription queues dropped, inputs rejected (``hri_runtime.node.Node.loop_counters``);
- the interaction node's 1 kHz real-time loop: ``period_missed`` and ``ticks`` of
  ``/interaction/state`` (the C++ loop's own deadline count);
- the counters in ``/diagnostics`` (the last array of each status; keys naming drops, losses,
  gaps, rejections, misses, staleness).

A probe node on the launch's router subscribes to ``/diagnostics`` and ``/interaction/state``
and keeps the last message of each status (no history). Prints the machine and its load at the
start and the end, then one table per robot; ``--csv DIR`` writes the RSS samples.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from machine import load, machine  # noqa: E402  (bench/machine.py)

REPO = Path(__file__).resolve().parents[2]
ARMS = ("fr3", "ur5e", "iiwa14")
ROBOTS = ARMS + ("tino",)
GOAL_MB = 5.0
COUNTER_KEY = re.compile(r"miss|drop|lost|loss|gap|reject|stale|late|overrun|duplicate|out_of_order", re.I)


def free_port(kind=socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> Optional[float]:
    """Resident memory of ``pid`` in MB (VmRSS of /proc/<pid>/status), None if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for ln in f:
                if ln.startswith("VmRSS:"):
                    return int(ln.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def slope_mb_per_min(ts: list[float], ys: list[float]) -> float:
    n = len(ts)
    if n < 2:
        return float("nan")
    mt, my = sum(ts) / n, sum(ys) / n
    den = sum((t - mt) ** 2 for t in ts)
    return 60.0 * sum((t - mt) * (y - my) for t, y in zip(ts, ys)) / den if den > 0 else float("nan")


class Launch:
    """``hri launch`` in its own session; a reader thread keeps its output in a file and the pid
    of every node it starts ("started <name> (pid N)")."""

    STARTED = re.compile(r"started (\S+) \(pid (\d+)\)")

    def __init__(self, hri: list[str], robot: str, log_path: Path, env: dict):
        self.router = f"tcp/127.0.0.1:{free_port()}"
        self.vr_port = free_port(socket.SOCK_DGRAM)
        self.pids: dict[str, int] = {}
        self.ready = threading.Event()       # the launcher's status line after starting every node
        self.log_path = log_path
        self.popen = subprocess.Popen(
            hri + ["launch", "--router", self.router, str(REPO / "launch" / f"{robot}.launch.yaml"),
                   f"vr_port:={self.vr_port}"],
            env=dict(env, HRI_TRANSPORT="zenoh", HRI_ZENOH_ROUTER_LISTEN=f"[{self.router}]",
                     HRI_ZENOH_CONNECT=f"[{self.router}]"),
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        with open(self.log_path, "w") as f:
            for line in self.popen.stdout:
                f.write(line)
                f.flush()
                if not line.startswith("[hri launch] "):
                    continue                  # a node's own output: "[name] ..."
                m = self.STARTED.search(line)
                if m:
                    self.pids[m.group(1)] = int(m.group(2))
                elif "running pid" in line:
                    self.ready.set()

    def stop(self, timeout_s: float = 60.0) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._reader.join(timeout=10.0)

    def system_stops(self) -> dict[str, dict[str, int]]:
        """``node -> {cause: count}`` of its "SYSTEM STOP: <cause>" log lines (a stop latches until
        reset: under a heavy load a heartbeat gap longer than safety.stop.timeout_s stops a node)."""
        out: dict[str, dict[str, int]] = {}
        for ln in self.log_path.read_text(errors="replace").splitlines():
            m = re.match(r"\[(\S+)\] .*SYSTEM STOP: (\S+)", ln)
            if m:
                c = out.setdefault(m.group(1), {})
                c[m.group(2)] = c.get(m.group(2), 0) + 1
        return out

    def loop_counters(self) -> dict[str, dict[str, int]]:
        """The shutdown line of each node: ``[name] ... loop counters: k v, k v``."""
        out: dict[str, dict[str, int]] = {}
        for ln in self.log_path.read_text(errors="replace").splitlines():
            m = re.match(r"\[(\S+)\] .*loop counters: ([^;]*)(?:; dropped per topic: (.*))?$", ln)
            if m:
                kv = lambda text: {x.rsplit(" ", 1)[0]: int(x.rsplit(" ", 1)[1]) for x in text.split(", ")}  # noqa: E731
                out[m.group(1)] = kv(m.group(2))
                if m.group(3):
                    out[m.group(1)]["dropped_per_topic"] = kv(m.group(3))
        return out


class Probe:
    """The last /diagnostics status of each name and the last /interaction/state (no history)."""

    def __init__(self, router: str):
        from hri_runtime.node import Node
        from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams

        self.ctx = ZenohContext(ZenohParams.defaults().with_(connect_endpoints=[router]))
        self.node = Node("soak_probe", context=self.ctx)
        self.lock = threading.Lock()
        self.status: dict[str, dict[str, str]] = {}
        self.state = None
        self.node.create_subscription("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics", self.on_diag, qos=50)
        self.node.create_subscription("hri_interfaces/msg/InteractionState", "/interaction/state",
                                      self.on_state, qos=10)
        self.ctx.spin_in_background()

    def on_diag(self, msg) -> None:
        with self.lock:
            for st in msg.status:
                self.status[st.name] = {kv.key: kv.value for kv in st.values}

    def on_state(self, msg) -> None:
        with self.lock:
            self.state = msg

    def counters(self) -> dict[str, dict[str, str]]:
        with self.lock:
            out = {name: {k: v for k, v in kv.items() if COUNTER_KEY.search(k)} for name, kv in self.status.items()}
            if self.state is not None:
                out["/interaction/state"] = {"ticks": str(self.state.ticks),
                                             "period_missed": str(self.state.period_missed),
                                             "period_p99_us": f"{self.state.period_p99_us:.0f}",
                                             "rejected": str({c.name: c.count for c in self.state.rejected})}
        return {k: v for k, v in out.items() if v}

    def close(self) -> None:
        self.ctx.shutdown()
        self.node.destroy_node()
        self.ctx.close()


def operator_cmd(hri: list[str], robot: str, port: int, seconds: float, every_s: float) -> list[str]:
    if robot in ARMS:
        return hri + ["arm-emulate", "--robot", robot, "--host", "127.0.0.1", "--port", str(port), "--loop"]
    return hri + ["vr-emulate", "--robot", robot, "--host", "127.0.0.1", "--port", str(port),
                  "--duration", f"{seconds:g}", "--every", f"{every_s:g}"]


def soak(robot: str, args, hri: list[str], out_dir: Path) -> dict:
    seconds = args.minutes * 60.0
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    launch = Launch([str(args.launch_hri)] if args.launch_hri else hri, robot, out_dir / f"{robot}.launch.log", env)
    probe = operator = None
    samples: dict[str, list[tuple[float, float]]] = {}
    try:
        if not launch.ready.wait(60.0) or not launch.pids:
            raise RuntimeError(f"{robot}: hri launch started no node (log {launch.log_path})")
        probe = Probe(launch.router)
        time.sleep(args.settle_s)       # the nodes come up (the arm sim, the router sessions)
        with open(out_dir / f"{robot}.operator.log", "w") as olog:
            operator = subprocess.Popen(operator_cmd(hri, robot, launch.vr_port, seconds + 60.0, args.every_s),
                                        cwd=REPO, env=env, stdout=olog, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        procs = dict(launch.pids)
        procs["(hri launch + router)"] = launch.popen.pid
        procs["(operator)"] = operator.pid
        t0 = time.monotonic()
        next_print = args.print_every_s
        while True:
            t = time.monotonic() - t0
            for name, pid in procs.items():
                mb = rss_mb(pid)
                if mb is not None:
                    samples.setdefault(name, []).append((t, mb))
            if t >= seconds:
                break
            if t >= next_print:
                print(f"  {robot} {t / 60:5.1f} min: " + ", ".join(
                    f"{n} {s[-1][1]:.0f} MB" for n, s in samples.items() if s), file=sys.stderr, flush=True)
                next_print += args.print_every_s
            time.sleep(min(args.sample_s, max(0.0, seconds - t)))
        diag = probe.counters()
        load_end = load()
    finally:
        if operator is not None and operator.poll() is None:
            operator.send_signal(signal.SIGINT)
            try:
                operator.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                operator.kill()
        if probe is not None:
            probe.close()
        launch.stop()
    if args.csv:
        args.csv.mkdir(parents=True, exist_ok=True)
        with open(args.csv / f"{robot}.rss.csv", "w") as f:
            f.write("process,t_s,rss_mb\n")
            for name, s in samples.items():
                f.writelines(f"{name},{t:.1f},{mb:.2f}\n" for t, mb in s)
    return {"robot": robot, "samples": samples, "pids": dict(launch.pids), "counters": launch.loop_counters(),
            "stops": launch.system_stops(),
            "diagnostics": diag, "load_end": load_end, "rc": launch.popen.returncode}


def report(r: dict, warmup_s: float) -> None:
    print(f"\n{r['robot']}: launch/{r['robot']}.launch.yaml + "
          f"{'hri arm-emulate --loop' if r['robot'] in ARMS else 'hri vr-emulate --every'}; {r['load_end']} (end)")
    print(f"{'process':24s} {'start MB':>9s} {'end MB':>8s} {'growth MB':>10s} {'MB/min':>8s} {'max MB':>8s} "
          f"{'goal':>5s} {'missed':>7s} {'dropped':>8s} {'rejected':>9s}")
    for name, s in r["samples"].items():
        post = [(t, mb) for t, mb in s if t >= warmup_s] or s[-1:]
        start, end = post[0][1], post[-1][1]
        c = r["counters"].get(name, {})
        ok = "ok" if end - start < GOAL_MB else "OVER"
        print(f"{name:24s} {start:9.1f} {end:8.1f} {end - start:10.1f} "
              f"{slope_mb_per_min([t for t, _ in post], [mb for _, mb in post]):8.2f} "
              f"{max(mb for _, mb in s):8.1f} {ok:>5s} {c.get('timer_periods_missed', '-'):>7} "
              f"{c.get('messages_dropped', '-'):>8} {c.get('inputs_rejected', '-'):>9}")
    for name, kv in sorted(r["diagnostics"].items()):
        print(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in kv.items()))
    for name, c in r["counters"].items():
        if c.get("dropped_per_topic"):
            print(f"  {name} dropped per topic: " + ", ".join(f"{t} {n}" for t, n in c["dropped_per_topic"].items()))
    if r["stops"]:
        print("  system stops (latched until reset): " + "; ".join(
            f"{n} {', '.join(f'{c} x{k}' for c, k in cs.items())}" for n, cs in r["stops"].items()))
    missing = [n for n in r["pids"] if n not in r["counters"]]
    if missing:
        print(f"  no loop counters at shutdown from: {', '.join(missing)} (launch exit {r['rc']})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robot", action="append", choices=ROBOTS, help="robot(s) to soak (default: all four)")
    ap.add_argument("--minutes", type=float, default=30.0, help="per robot (default 30)")
    ap.add_argument("--warmup-s", type=float, default=120.0, help="the start sample is taken after this (default 120)")
    ap.add_argument("--sample-s", type=float, default=10.0, help="RSS sampling period (default 10)")
    ap.add_argument("--settle-s", type=float, default=5.0, help="after the nodes start, before the operator")
    ap.add_argument("--every-s", type=float, default=5.0, help="Tino: one action every this many s")
    ap.add_argument("--print-every-s", type=float, default=300.0, help="progress line on stderr")
    ap.add_argument("--quick", action="store_true", help="smoke check: 2 min, 30 s warm-up, 5 s samples")
    ap.add_argument("--csv", type=Path, default=None, help="write <robot>.rss.csv (every sample) here")
    ap.add_argument("--launch-hri", type=Path, default=None,
                    help="the hri that runs `hri launch` (default: this venv's); another checkout's venv "
                         "runs its nodes (a before/after comparison); the operator stays this venv's")
    ap.add_argument("--logs", type=Path, default=None, help="launch / operator logs here (default: a temp dir)")
    args = ap.parse_args(argv)
    if args.quick:
        args.minutes, args.warmup_s, args.sample_s, args.print_every_s = 2.0, 30.0, 5.0, 30.0
    if args.minutes <= 0 or args.warmup_s >= args.minutes * 60.0:
        print("error: --minutes must be > 0 and longer than --warmup-s", file=sys.stderr)
        return 2
    hri = [str(Path(sys.executable).with_name("hri"))]
    import tempfile

    out_dir = args.logs or Path(tempfile.mkdtemp(prefix="soak_"))
    out_dir.mkdir(parents=True, exist_ok=True)
    robots = args.robot or list(ROBOTS)
    from hri_runtime import provenance  # commit, version, build flags
    print(f"# provenance: {provenance.line()}")
    print(f"machine: {machine()}")
    print(f"{load()} (start); {args.minutes:g} min per robot, warm-up {args.warmup_s:g} s, RSS every "
          f"{args.sample_s:g} s; logs in {out_dir}")
    print("columns: RSS start (after the warm-up) / end / growth / least-squares slope / max; goal growth "
          f"< {GOAL_MB:g} MB; each node's shutdown line: missed = timer periods skipped (late calls), "
          "dropped = samples its keep-last queues dropped, rejected = inputs refused", flush=True)
    rc = 0
    for robot in robots:
        r = soak(robot, args, hri, out_dir)
        report(r, args.warmup_s)
        sys.stdout.flush()
    return rc


if __name__ == "__main__":
    sys.exit(main())
