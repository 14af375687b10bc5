"""CDR codec benchmark: rosbags (reference, pure Python generated code) vs the C++ codec
(hri_runtime._cdr driven by hri_runtime.impl.cdr_plan), both through msgs.serialize /
msgs.deserialize (the calls every publish / every received sample makes).

    .venv/bin/python bench/transport/codec.py [--loops N] [--repeat R]

Prints µs per call (best of R repeats of N calls, hot caches) and the rosbags/C++ ratio;
``--cold N`` adds a table of median µs of N single calls, each after evicting the CPU caches
(an 8 MB array rewritten), closer to a call inside a Zenoh callback.
Both backends run the same msgs function: the rosbags one under a type-name alias whose cached
codec entry has no C++ plan (exactly the fallback path of msgs).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
import timeit

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # idle BLAS threads spin on the 2 shared cores
import numpy as np  # noqa: E402

from hri_runtime import msgs  # noqa: E402


def samples() -> list[tuple[str, str, object]]:
    js = msgs.new("sensor_msgs/msg/JointState", name=[f"fr3_joint{i}" for i in range(1, 8)],
                  position=np.linspace(-1.0, 1.0, 7), velocity=np.linspace(0.0, 0.6, 7),
                  effort=np.linspace(-5.0, 5.0, 7))
    js.header.frame_id = "base"
    js.header.stamp.sec, js.header.stamp.nanosec = 1_700_000_000, 123_456_789
    ps = msgs.new("geometry_msgs/msg/PoseStamped")
    ps.header.frame_id = "world"
    ps.pose.position.x, ps.pose.orientation.w = 0.4, 1.0
    return [
        ("String", "std_msgs/msg/String", msgs.new("std_msgs/msg/String", data="hello world")),
        ("JointState(7)", "sensor_msgs/msg/JointState", js),
        ("Twist", "geometry_msgs/msg/Twist", msgs.new("geometry_msgs/msg/Twist", linear={"x": 0.2},
                                                      angular={"z": -0.1})),
        ("PoseStamped", "geometry_msgs/msg/PoseStamped", ps),
        ("WrenchStamped", "geometry_msgs/msg/WrenchStamped", msgs.new("geometry_msgs/msg/WrenchStamped")),
        ("Float64MultiArray(100)", "std_msgs/msg/Float64MultiArray",
         msgs.new("std_msgs/msg/Float64MultiArray", data=np.arange(100, dtype=np.float64))),
    ]


def rosbags_alias(t: str) -> str:
    """A type-name alias of ``t`` whose msgs codec entry has no C++ plan (rosbags path)."""
    pkg, _, name = t.split("/")
    alias = f"{pkg}/{name}"
    tn, md, _plan = msgs._codec(t)
    msgs._codecs[alias] = (tn, md, None)
    return alias


def best_us(fn, loops: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=loops, repeat=repeat)) / loops * 1e6


_JUNK = np.zeros(1 << 20)  # 8 MB: larger than L2, most of L3


def cold_us(fn, n: int) -> float:
    """Median µs of ``n`` single calls, each right after the caches were flushed."""
    ts = []
    for _ in range(n):
        _JUNK.__iadd__(1.0)
        t0 = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t0)
    return statistics.median(ts) / 1000.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loops", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cold", type=int, default=0, metavar="N", help="also N cold-cache single calls")
    a = ap.parse_args(argv)
    print(f"{'message':24s} {'bytes':>6s} | {'ser rosbags':>11s} {'ser C++':>8s} {'x':>6s} | "
          f"{'de rosbags':>10s} {'de C++':>7s} {'x':>6s}   (us per call, best of {a.repeat}x{a.loops})")
    for label, t, msg in samples():
        if msgs.codec_backend(t) != "cpp":
            print(f"{label:24s} C++ codec unavailable (hri_runtime._cdr not built?)")
            continue
        alias = rosbags_alias(t)
        data = msgs.serialize(msg, t)
        assert msgs.serialize(msg, alias) == data
        s_rb = best_us(lambda: msgs.serialize(msg, alias), a.loops, a.repeat)
        s_cpp = best_us(lambda: msgs.serialize(msg, t), a.loops, a.repeat)
        d_rb = best_us(lambda: msgs.deserialize(data, alias), a.loops, a.repeat)
        d_cpp = best_us(lambda: msgs.deserialize(data, t), a.loops, a.repeat)
        print(f"{label:24s} {len(data):6d} | {s_rb:11.2f} {s_cpp:8.2f} {s_rb / s_cpp:6.1f} | "
              f"{d_rb:10.2f} {d_cpp:7.2f} {d_rb / d_cpp:6.1f}")
    if a.cold:
        print(f"\ncold caches: median us of {a.cold} single calls, each after an 8 MB cache flush")
        for label, t, msg in samples():
            if msgs.codec_backend(t) != "cpp":
                continue
            alias = rosbags_alias(t)
            data = msgs.serialize(msg, t)
            r = [cold_us(f, a.cold) for f in (lambda: msgs.serialize(msg, alias), lambda: msgs.serialize(msg, t),
                                              lambda: msgs.deserialize(data, alias), lambda: msgs.deserialize(data, t))]
            print(f"{label:24s} {len(data):6d} | {r[0]:11.2f} {r[1]:8.2f} {r[0] / r[1]:6.1f} | "
                  f"{r[2]:10.2f} {r[3]:7.2f} {r[2] / r[3]:6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
