"""Cost of crash-safe recording: McapWriter with a flush every `flush_period_s` (1 s: the chunk
goes out with a provisional footer) vs a flush only when a chunk is full (the writer before
crash safety), interleaved in one run. Messages: sensor_msgs/JointState (7 joints) at 500 Hz of
simulated time (the writer's flush clock is the simulated one), 60 s per file.

    .venv/bin/python bench/recording/run.py [--repeats 5] [--seconds 60]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hri_runtime import msgs
from hri_runtime.bag.recording import McapWriter, RecordingParams


def one_file(path: Path, flush_period_s: float, seconds: float, rate_hz: float, compression: str):
    now = [0.0]
    params = RecordingParams(flush_period_s=flush_period_s, compression=compression)
    msg = msgs.new("sensor_msgs/msg/JointState", name=[f"j{i}" for i in range(7)],
                   position=[0.1] * 7, velocity=[0.0] * 7, effort=[0.0] * 7)
    data = msgs.serialize(msg)
    n = int(seconds * rate_hz)
    t0 = time.perf_counter()
    w = McapWriter(path, params=params, clock=lambda: now[0])
    for i in range(n):
        now[0] = i / rate_hz
        w.write("/joint_states", data, type_name="sensor_msgs/msg/JointState", t_s=now[0])
    w.close()
    dt = time.perf_counter() - t0
    return dt / n * 1e6, path.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--rate-hz", type=float, default=500.0)
    a = ap.parse_args()
    from hri_runtime import provenance  # commit, version, build flags
    print(f"# provenance: {provenance.line()}")
    print(f"# load {os.getloadavg()}  python {sys.version.split()[0]}  cpus {os.cpu_count()}")
    variants = {"flush every 1 s (crash safe)": 1.0, "flush when a chunk is full only": 1e12}
    with tempfile.TemporaryDirectory() as d:
        for compression in ("zstd", "none"):
            one_file(Path(d) / "warm.mcap", 1.0, 2.0, a.rate_hz, compression)   # imports, first calls
            res = {k: [] for k in variants}
            size = {}
            for r in range(a.repeats):
                for name, period in variants.items():   # interleaved
                    us, nbytes = one_file(Path(d) / f"{r}.mcap", period, a.seconds, a.rate_hz, compression)
                    res[name].append(us)
                    size[name] = nbytes
            base = statistics.median(res["flush when a chunk is full only"])
            for name in variants:
                med = statistics.median(res[name])
                print(f"| {compression} | {name} | {min(res[name]):.2f} / {med:.2f} | {med / base:.2f} | "
                      f"{size[name] / 1e6:.2f} |")


if __name__ == "__main__":
    main()
