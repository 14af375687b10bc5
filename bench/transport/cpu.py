#!/usr/bin/env python3
"""CPU per message of each side of the transport, ours vs raw eclipse-zenoh, in one run.

    .venv/bin/python bench/transport/cpu.py                      # both message types, 5 repetitions
    .venv/bin/python bench/transport/cpu.py --reps 3 --messages 100000

Where run.py's burst rate mixes every cost on a shared machine (sender, router, receiver on two
cores), this splits it: CPU time, not wall time, so other load on the machine moves it little.

* publish: the sending thread's CPU (``time.thread_time``) per call, repetitions interleaved:
  raw ``put(payload)``; raw on a timestamping session (ours' wire: rmw_zenoh sessions stamp every
  sample); raw ``put(payload, attachment=33 bytes)``; ours ``Publisher.publish(bytes)``; ours
  ``Publisher.publish(msg)`` (serialize + put); ``msgs.serialize`` alone. The receiver is run.py's
  raw pong process (cheap), on ours' exact key.
* receive: the receiving process's CPU (utime + stime from /proc) per message, its idle CPU
  subtracted, for run.py's pong process of kind raw (count the sample) and ours (checks, inline
  run, deserialize, the same count), fed with ours' wire at a paced rate (no drops).
Timing lives here, never in tests.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as B  # noqa: E402  (this directory's run.py: sessions, keys, messages, pong sides)

from hri_runtime import msgs  # noqa: E402
from hri_runtime.node import Node  # noqa: E402
from hri_runtime.impl.zenoh_backend import ZenohContext, start_router  # noqa: E402

TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TCK


def pong(endpoint: str, type_name: str, kind: str) -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, B.__file__, "--pong", kind, "--endpoint", endpoint,
                              "--type", type_name], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready", "pong side did not start"
    return child


def publish_side(endpoint: str, type_name: str, n: int, reps: int) -> dict[str, list[float]]:
    child = pong(endpoint, type_name, "raw")
    ctx = ZenohContext(B.ours_params(endpoint, "ours"))
    s_plain = B.raw_session(endpoint)
    os.environ["BENCH_RAW_TS"] = "1"
    s_ts = B.raw_session(endpoint)
    os.environ.pop("BENCH_RAW_TS")
    try:
        node = Node("cpu_pub", context=ctx)
        pub = node.create_publisher(type_name, B.STREAM, qos=B.QOS)
        ctx.spin_in_background()
        key = B.raw_key(B.STREAM, type_name)
        p_plain, p_ts = s_plain.declare_publisher(key), s_ts.declare_publisher(key)
        end = time.monotonic() + 10.0
        while not (p_plain.matching_status.matching and pub.get_subscription_count() >= 1) \
                and time.monotonic() < end:
            time.sleep(0.01)
        msg = B.make_msg(type_name)
        data = msgs.serialize(msg, type_name)
        cases = {
            "raw put(payload)": lambda: p_plain.put(data),
            "raw put, timestamping session": lambda: p_ts.put(data),
            "raw put(payload, attachment)": lambda: p_plain.put(data, attachment=B.RAW_ATTACHMENT),
            "ours publish(bytes)": lambda: pub.publish(data),
            "ours publish(msg)": lambda: pub.publish(msg),
            "msgs.serialize(msg)": lambda: msgs.serialize(msg, type_name),
        }
        out: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(reps):
            for k, f in cases.items():
                t0 = time.thread_time()
                for _ in range(n):
                    f()
                out[k].append((time.thread_time() - t0) / n * 1e6)
                time.sleep(0.05)
        return out
    finally:
        ctx.shutdown()
        ctx.close()
        s_plain.close()
        s_ts.close()
        child.stdin.close()
        child.wait(timeout=10)


def receive_side(endpoint: str, type_name: str, n: int, reps: int) -> dict[str, list[float]]:
    os.environ["BENCH_RAW_TS"] = "1"
    s = B.raw_session(endpoint)           # ours' wire: timestamps, attachment, rmw key
    os.environ.pop("BENCH_RAW_TS")
    pub = s.declare_publisher(B.raw_key(B.STREAM, type_name))
    data = msgs.serialize(B.make_msg(type_name), type_name)
    out: dict[str, list[float]] = {"raw": [], "ours": []}
    try:
        for _ in range(reps):
            for kind in out:
                child = pong(endpoint, type_name, kind)
                try:
                    end = time.monotonic() + 10.0
                    while not pub.matching_status.matching and time.monotonic() < end:
                        time.sleep(0.01)
                    time.sleep(0.5)
                    c0 = proc_cpu_s(child.pid)
                    time.sleep(0.5)
                    idle_per_s = (proc_cpu_s(child.pid) - c0) / 0.5
                    c0, t0 = proc_cpu_s(child.pid), time.perf_counter()
                    for i in range(n):
                        pub.put(data, attachment=B.RAW_ATTACHMENT)
                        if i % 64 == 0:
                            time.sleep(0.0002)      # paced below the receiver's rate: no drops
                    time.sleep(0.3)
                    used = proc_cpu_s(child.pid) - c0 - idle_per_s * (time.perf_counter() - t0)
                    out[kind].append(used / n * 1e6)
                finally:
                    child.stdin.close()
                    child.wait(timeout=10)
        return out
    finally:
        s.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20000, help="publish calls per case and repetition")
    ap.add_argument("--messages", type=int, default=200000, help="messages per receive repetition")
    args = ap.parse_args(argv)
    os.environ["BENCH_RAW_KEYS"] = "1"        # raw on ours' exact key (the pong sides read it too)
    endpoint = f"tcp/127.0.0.1:{B.free_port()}"
    router = start_router([endpoint])
    try:
        from hri_runtime import provenance  # commit, version, build flags
        print(f"# provenance: {provenance.line()}")
        print(f"machine: {os.uname().machine}, {os.cpu_count()} cores, load average "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; reps {args.reps}")
        for label, type_name in B.MESSAGES.items():
            pub = publish_side(endpoint, type_name, args.calls, args.reps)
            base = statistics.median(pub["raw put(payload)"])
            print(f"\n{label}: publish, µs CPU per call (median of {args.reps}) and × raw put")
            for k, v in pub.items():
                print(f"| {k} | {statistics.median(v):.3f} | {statistics.median(v) / base:.2f}× |")
            rec = receive_side(endpoint, type_name, args.messages, args.reps)
            r_raw, r_ours = statistics.median(rec["raw"]), statistics.median(rec["ours"])
            print(f"{label}: receive, µs CPU per message: raw {r_raw:.2f}, ours {r_ours:.2f} "
                  f"({r_ours / r_raw:.2f}×)  per rep raw {[round(x, 2) for x in rec['raw']]} "
                  f"ours {[round(x, 2) for x in rec['ours']]}")
        print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    finally:
        router.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
