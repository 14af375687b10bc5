"""Wall-clock safe-stop latency: console page click -> every actuator, Zenoh, separate processes.

    .venv/bin/python bench/console/stop_latency.py --repeats 20 --kills 5 [--arm-output cartesian|joint]

The stack of ``hri_safety.drill.Stack`` (launch/fr3.launch.yaml: stop supervisor + FR3 arm chain;
Tino's vr_interface + atomic with embedded MuJoCo; the console) runs under ``hri launch`` against
a standalone ``hri router`` on a free port (no cross-talk with other runs). This process
is both headsets (real UDP: the arm follows a moving hand with the clutch held, the base drives a
state-3 movement), the page's WebSocket client, and a node on the router.

Click -> stop, ``--repeats`` times, while arm and base move: t0 = wall time just before the
WebSocket send of ``{"type": "safe_stop"}``; then, arrival times in this process (``time.time()``):

- ``request``: the console's StopRequest on /safety/stop_request (one hop: the baseline);
- ``supervisor``: /safety/stop with stopped = true (console -> supervisor -> here);
- ``atomic zero``: the first zero /cmd_vel of the atomic node (Tino's base command);
- ``arm STOP``: arm_teleop's /teleop/mode = STOP (its hold is applied in the same callback);
- ``interaction``: the interaction node's state with ``frozen`` set (published at
  interaction.node.state_rate_hz, so quantised by that period; cartesian output only);
- ``applied <node>``: the wall time of the node's own "SYSTEM STOP" log line (ms resolution),
  i.e. when the stop took effect inside that process.

Router kill -> stop, ``--kills`` times: the router is SIGKILLed while arm and base move (the
headsets keep streaming: only the stop path is cut); per actuator, the time of its "SYSTEM STOP: stop_heartbeat_timeout" log line
after the kill. The contract bounds it by safety.stop.timeout_s + one heartbeat period after the
last heartbeat received. Then the router restarts and the console resets.

Prints one table: p50 / p95 / max in ms and the ratio of each p50 to the one-hop request p50,
with the machine and its load.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from machine import load, machine  # noqa: E402  (bench/machine.py)

WAIT_S = 60.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--kills", type=int, default=5)
    ap.add_argument("--arm-output", choices=("cartesian", "joint"), default="cartesian")
    args = ap.parse_args(argv)

    from hri_safety.core.stop import StopParams
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "safety"))
    from drill import Stack   # the live-stack drill of the stop tests

    load_before = load()
    rng = np.random.default_rng(0)
    with Stack(Path(tempfile.mkdtemp(prefix="stop_latency_")), args.arm_output, WAIT_S) as st:
        w = st.watch
        sp = StopParams.from_config(st.fr3["safety"]["stop"])
        observed = {"request": (w.requests, lambda s: s == "console"),
                    "supervisor": (w.stops, lambda s: s[0]),
                    "atomic zero": (w.twist, lambda tw: tw == (0.0, 0.0)),
                    "arm STOP": (w.modes, lambda m: m == "STOP")}
        if args.arm_output == "cartesian":
            observed["interaction"] = (w.frozen, bool)
        click: dict[str, list[float]] = {k: [] for k in list(observed) + [f"applied {n}" for n in st.actuators]}
        kill: dict[str, list[float]] = {n: [] for n in st.actuators}
        for k in range(args.repeats):
            st.drive(arm_m=0.003)
            time.sleep(float(rng.uniform(0.05, 0.3)))
            r = st.console.command("safe_stop")
            assert r["type"] == "ack", r
            t0 = st.console.sent_at[st.console.n]
            st.wait(lambda: all(w.first(lst, t0, pred) is not None for lst, pred in observed.values()),
                    "every stop observed")
            time.sleep(0.3)
            for name, (lst, pred) in observed.items():
                click[name].append((w.first(lst, t0, pred) - t0) * 1e3)
            for n in st.actuators:
                ts = st.stop_log_times(n, "console", t0 - 0.002)   # log stamps have ms resolution
                if ts:
                    click[f"applied {n}"].append(max(0.0, (ts[0] - t0) * 1e3))
            st.release()
            print(f"click {k + 1}/{args.repeats}: " + ", ".join(f"{n} {v[-1]:.1f}" for n, v in click.items() if v),
                  file=sys.stderr)
        for k in range(args.kills):
            st.drive(arm_m=0.003)
            time.sleep(float(rng.uniform(0.05, 0.3)))
            t_kill = st.kill_router()              # the headsets keep streaming (no link loss)
            time.sleep(sp.bound_s + 1.0)
            for n in st.actuators:
                ts = st.stop_log_times(n, "stop_heartbeat_timeout", t_kill)
                if ts:
                    kill[n].append((ts[0] - t_kill) * 1e3)
            st.restart_router()
            st.release(retry_s=WAIT_S)
            print(f"kill {k + 1}/{args.kills}: " + ", ".join(f"{n} {v[-1]:.0f}" for n, v in kill.items() if v),
                  file=sys.stderr)

    from hri_runtime import provenance  # commit, version, build flags
    print(f"# provenance: {provenance.line()}")
    print(f"machine: {machine()}")
    print(f"{load_before} (start), {load()} (end)")
    print(f"stack: launch/fr3.launch.yaml output {args.arm_output} + Tino vr_interface/atomic (sim) + console, "
          f"hri router, Zenoh client sessions; safety.stop heartbeat {sp.heartbeat_hz:g} Hz, timeout {sp.timeout_s:g} s")
    base = float(np.percentile(click["request"], 50))
    print(f"\nconsole click -> stop ({args.repeats} repeats, ms)")
    print(f"{'stage':24s} {'n':>3s} {'p50':>8s} {'p95':>8s} {'max':>8s} {'p50 / request':>14s}")
    for name, v in click.items():
        if v:
            a = np.asarray(v)
            print(f"{name:24s} {len(a):3d} {np.percentile(a, 50):8.1f} {np.percentile(a, 95):8.1f} {a.max():8.1f} "
                  f"{np.percentile(a, 50) / base:14.2f}")
    print(f"\nrouter SIGKILL -> actuator stopped by its heartbeat watchdog ({args.kills} kills, ms; "
          f"bound {sp.timeout_s * 1e3:.0f} + {sp.period_s * 1e3:.0f} ms after the last heartbeat received)")
    for name, v in kill.items():
        if v:
            a = np.asarray(v)
            print(f"{name:24s} {len(a):3d} {np.percentile(a, 50):8.1f} {np.percentile(a, 95):8.1f} {a.max():8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
