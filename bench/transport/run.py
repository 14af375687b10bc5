#!/usr/bin/env python3
"""Transport benchmark: our Zenoh node layer vs raw eclipse-zenoh vs inproc, in one run.

    .venv/bin/python bench/transport/run.py                 # 2000 round trips, 10 s at 1 kHz
    .venv/bin/python bench/transport/run.py --duration 60   # the issue's 60 s zero-loss check
    .venv/bin/python bench/transport/run.py --paired --round-trips 20000 --kinds raw,ours,ours-raw
                                                            # the latency ratio, side by side

Setup: a Zenoh router opened in this process on a free loopback port (stands in for rmw_zenohd),
this process is the "ping" side, a child process (this script with ``--pong``) the "pong" side,
both Zenoh clients of the router, so no GIL is shared between the two ends.

* ours:  hri_runtime Node on ZenohContext: publish(msg) -> CDR + 33-byte attachment -> put (one
         C call, _cdr.Putter); subscription -> attachment/CDR checks (_cdr.SampleGate) -> the
         executor (_cdr.Delivery: inline when idle, else its queue) -> deserialize -> callback; the
         pong node re-publishes the message object it received (deserialize + serialize).
* ours-raw: the same Node layer with ``raw=True`` subscriptions (CDR bytes delivered, as rclpy
         offers) and ``publish(bytes)``: our transport layer without the CDR codec.
* ours-indirect: ours with ``runtime.zenoh.direct_callbacks: false`` (zenoh-python hands every
         sample to its own Python thread before our callback runs, as raw's default does).
* ours-queued: ours with ``runtime.zenoh.inline_callbacks: false`` (every callback handed over
         to the executor thread).
* raw:   plain zenoh publishers/subscribers putting the same CDR bytes, no attachment, the echo
         is done in zenoh's callback thread (the baseline "without our layer").
* raw+hop: raw, but every received sample is handed to one worker thread first (what any
         executor with rclpy's one-thread semantics must do): separates that cost from ours.
* inproc: InprocContext (no network, no threads): serialize + deserialize + executor only.
* raw-rmw: raw carrying exactly our wire (session timestamping, a valid 33-byte attachment, the
         rmw_zenoh key with type name and RIHS01 hash), default callbacks: what the rmw_zenoh
         wire format alone costs over raw.
* ours-pong / ours-ping (--paired only): one side ours (raw=True), the other raw-rmw.

``--paired`` (the latency ratio to quote): every kind is up at once, each on its own topics, and
blocks of ``--block`` round trips alternate between the kinds (order rotated every round), so a
drift of this shared machine hits all kinds alike; prints pooled p50/p99 and X/raw per round.

Measured per message type (64-byte String payload, 7-joint sensor_msgs/JointState):
* round trip latency (ping -> pong -> ping), p50/p99 over --round-trips sequential exchanges;
* paced stream at --rate-hz for --duration s: sent, received by the pong side, lost;
* burst: --burst messages as fast as the sender's loop goes: received per second at the pong side
  (messages received / (the pong's time of the last one - start of the burst), both on
  CLOCK_MONOTONIC; a lost message counts against it) and the sender's publish rate.
Ratios ours/raw are printed at the end. Timing lives here, never in tests.

Noise (shared machine): ``--reps N`` repeats the whole set of transports N times, interleaved
(raw, ours, ours-raw, ... per repetition, so every ratio compares runs minutes apart at most) and
reports the median over repetitions of the per-repetition ratios. ``--kinds`` selects transports.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time

import zenoh

from hri_runtime import msgs, provenance
from hri_runtime.qos import QoSProfile
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node
from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams, start_router

PING, PONG, STREAM, COUNT = "/bench/ping", "/bench/pong", "/bench/stream", "/bench/count"
# the pong side's answer to a count request: (stream messages received, perf_counter of the last)
COUNT_TYPE = "std_msgs/msg/Float64MultiArray"
_COUNT = struct.Struct("<qd")
# Diagnostic variants of raw (what part of the wire/threading costs what): zenoh callbacks run
# directly on zenoh's thread as ours (indirect=False), session timestamping on as ours, the
# 33-byte attachment on every put as ours.
RAW_VARIANTS = {"raw-direct": {"BENCH_RAW_DIRECT": "1"}, "raw-ts": {"BENCH_RAW_TS": "1"},
                "raw-att": {"BENCH_RAW_ATT": "1"},
                "raw-wire": {"BENCH_RAW_DIRECT": "1", "BENCH_RAW_TS": "1", "BENCH_RAW_ATT": "1"},
                # ours' wire exactly (timestamps, attachment, rmw keys) with
                # ours' default callback thread (indirect): what is left of ours-raw is the node layer
                "raw-rmw": {"BENCH_RAW_TS": "1", "BENCH_RAW_ATT": "1", "BENCH_RAW_KEYS": "1"}}
# a valid rmw_zenoh attachment (constant: seq 1, t 0, zero GID), so that raw and ours can talk
RAW_ATTACHMENT = bytes(8) + bytes(8) + bytes([16]) + bytes(16)
RAW_ATTACHMENT = (1).to_bytes(8, "little") + RAW_ATTACHMENT[8:]
# Hybrids (--paired only): one side ours, the other raw-rmw, to see which side costs what
HYBRIDS = {"ours-pong": "pong", "ours-ping": "ping"}
KINDS = ["raw", "raw+hop", "ours", "ours-queued", "ours-raw", "ours-indirect", *RAW_VARIANTS, *HYBRIDS]
MESSAGES = {"64B String": "std_msgs/msg/String", "JointState (7)": "sensor_msgs/msg/JointState"}


def t(topic: str) -> str:
    """Topic of the side being created: --paired runs several kinds at once, each on its own
    topics (BENCH_TOPIC_SUFFIX, inherited by the pong process)."""
    return topic + os.environ.get("BENCH_TOPIC_SUFFIX", "")


def make_msg(type_name: str, i: int = 0):
    if type_name == "std_msgs/msg/String":
        m = msgs.new(type_name, data="x" * 55)          # 4 header + 4 length + 55 + NUL = 64 B
        return m
    n = 7
    return msgs.new(type_name, header={"stamp": {"sec": i, "nanosec": 0}, "frame_id": "fr3_link0"},
                    name=[f"fr3_joint{k + 1}" for k in range(n)], position=[0.1 * k for k in range(n)],
                    velocity=[0.0] * n, effort=[1.0] * n)


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100.0 * (len(xs) - 1))))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raw_session(endpoint: str):
    c = zenoh.Config()
    c.insert_json5("mode", '"client"')
    c.insert_json5("connect/endpoints", json.dumps([endpoint]))
    c.insert_json5("scouting/multicast/enabled", "false")
    if os.environ.get("BENCH_RAW_TS"):
        c.insert_json5("timestamping/enabled", "true")
    return zenoh.open(c)


def raw_key(topic: str, type_name: str) -> str:
    # same key layout as ours (the type hash segment does not matter for the baseline)
    if os.environ.get("BENCH_RAW_KEYS"):      # exactly ours: DDS type name + RIHS01 hash
        from hri_runtime.impl import wire
        return wire.topic_keyexpr(0, topic, type_name, wire.type_hash(type_name, msgs.typestore()))
    return f"0{topic}/{type_name.replace('/', '_')}/raw"


def raw_sub_key(topic: str, type_name: str) -> str:
    """What a raw subscriber listens on: the exact key (ours' too, as rmw_zenoh's)."""
    return raw_key(topic, type_name)


QOS = QoSProfile(depth=1000)   # no keep-last drops in the executor queue for bursts


# ------------------------------------------------------------------------------ pong side
def ours_params(endpoint: str, kind: str) -> ZenohParams:
    return ZenohParams.defaults().with_(connect_endpoints=[endpoint], inline_callbacks=kind != "ours-queued",
                                        direct_callbacks=kind != "ours-indirect")


def pong_ours(endpoint: str, type_name: str, kind: str) -> None:
    ctx = ZenohContext(ours_params(endpoint, kind))
    raw = kind == "ours-raw"
    node = Node("bench_pong", context=ctx)
    pub = node.create_publisher(type_name, t(PONG), qos=QOS)
    cpub = node.create_publisher(COUNT_TYPE, t(COUNT), qos=QOS)
    state = {"n": 0, "t": 0.0}
    node.create_subscription(type_name, t(PING), pub.publish, qos=QOS, raw=raw)

    def on_stream(_m):
        state["n"] += 1
        state["t"] = time.perf_counter()

    def on_count(_m):
        cpub.publish(msgs.new(COUNT_TYPE, data=[state["n"], state["t"]]))

    node.create_subscription(type_name, t(STREAM), on_stream, qos=QOS, raw=raw)
    node.create_subscription(COUNT_TYPE, t(COUNT + "_req"), on_count, qos=QOS)
    print("ready", flush=True)
    ctx.spin_in_background()
    sys.stdin.read()            # until the parent closes our stdin
    ctx.shutdown()
    ctx.close()


def _hop(fn):
    """Control: hand every sample to one worker thread (what an executor does, nothing else)."""
    import queue
    q = queue.SimpleQueue()

    def worker():
        while True:
            item = q.get()
            if item is None:
                return
            fn(item)

    threading.Thread(target=worker, daemon=True).start()
    return lambda smp: q.put(smp.payload.to_bytes())


def pong_raw(endpoint: str, type_name: str, hop: bool = False) -> None:
    s = raw_session(endpoint)
    pub = s.declare_publisher(raw_key(t(PONG), type_name))
    cpub = s.declare_publisher(raw_key(t(COUNT), type_name))
    state = {"n": 0, "t": 0.0}
    lock = threading.Lock()

    def on_stream(_smp):
        with lock:
            state["n"] += 1
            state["t"] = time.perf_counter()

    att = {"attachment": RAW_ATTACHMENT} if os.environ.get("BENCH_RAW_ATT") else {}
    if hop:
        s.declare_subscriber(raw_sub_key(t(PING), type_name), _hop(pub.put))
    elif os.environ.get("BENCH_RAW_DIRECT"):
        s.declare_subscriber(raw_sub_key(t(PING), type_name), zenoh.handlers.Callback(
            lambda smp: pub.put(smp.payload, **att), indirect=False))
    else:
        s.declare_subscriber(raw_sub_key(t(PING), type_name), lambda smp: pub.put(smp.payload, **att))
    s.declare_subscriber(raw_sub_key(t(STREAM), type_name), on_stream)
    s.declare_subscriber(raw_sub_key(t(COUNT + "_req"), type_name),
                         lambda smp: cpub.put(_COUNT.pack(state["n"], state["t"])))
    print("ready", flush=True)
    sys.stdin.read()
    s.close()


# ------------------------------------------------------------------------------ ping side
class _Chain:
    """Round trips chained callback to callback: the pong callback (executor thread for ours,
    zenoh's callback thread for raw) records the RTT and sends the next ping, as node code would."""

    def round_trips(self, n: int, timeout_s: float) -> list[float]:
        self.rtt, self.left, self.done = [], n, threading.Event()
        self._send_ping()
        self.done.wait(timeout_s)
        return self.rtt

    def _on_pong(self, _m) -> None:
        self.rtt.append(time.perf_counter() - self.t0)
        self.left -= 1
        if self.left > 0:
            self._send_ping()
        else:
            self.done.set()


class OursPing(_Chain):
    def __init__(self, endpoint, type_name, kind: str = "ours"):
        self.ctx = ZenohContext(ours_params(endpoint, kind))
        raw = kind == "ours-raw"
        self.node = Node("bench_ping", context=self.ctx)
        self.type_name = type_name
        self.msg = make_msg(type_name)
        if raw:                        # publish ready CDR bytes, receive bytes
            self.msg = msgs.serialize(self.msg, type_name)
        self.ping = self.node.create_publisher(type_name, t(PING), qos=QOS)
        self.stream = self.node.create_publisher(type_name, t(STREAM), qos=QOS)
        self.creq = self.node.create_publisher(COUNT_TYPE, t(COUNT + "_req"), qos=QOS)
        self.ev = threading.Event()
        self.count = None
        self.node.create_subscription(type_name, t(PONG), self._on_pong, qos=QOS, raw=raw)
        self.node.create_subscription(COUNT_TYPE, t(COUNT), self._on_count, qos=QOS)
        self.ctx.spin_in_background()

    def _send_ping(self):
        self.t0 = time.perf_counter()
        self.ping.publish(self.msg)

    def _on_count(self, m):
        self.count = (int(m.data[0]), float(m.data[1]))
        self.ev.set()

    def ready(self):
        return (self.ping.get_subscription_count() >= 1 and self.stream.get_subscription_count() >= 1
                and self.creq.get_subscription_count() >= 1)

    def send_stream(self):
        self.stream.publish(self.msg)

    def received(self):
        self.count = None
        self.ev.clear()
        self.creq.publish(msgs.new(COUNT_TYPE))
        self.ev.wait(5.0)
        return self.count

    def close(self):
        self.ctx.shutdown()
        self.ctx.close()


class RawPing(_Chain):
    def __init__(self, endpoint, type_name, hop: bool = False):
        self.s = raw_session(endpoint)
        self.payload = msgs.serialize(make_msg(type_name), type_name)
        self.ping = self.s.declare_publisher(raw_key(t(PING), type_name))
        self.stream = self.s.declare_publisher(raw_key(t(STREAM), type_name))
        self.creq = self.s.declare_publisher(raw_key(t(COUNT + "_req"), type_name))
        self.ev = threading.Event()
        self.count = None
        cb = _hop(self._on_pong) if hop else self._on_pong
        if os.environ.get("BENCH_RAW_DIRECT") and not hop:
            cb = zenoh.handlers.Callback(cb, indirect=False)
        self.att = {"attachment": RAW_ATTACHMENT} if os.environ.get("BENCH_RAW_ATT") else {}
        self.s.declare_subscriber(raw_sub_key(t(PONG), type_name), cb)
        self.s.declare_subscriber(raw_sub_key(t(COUNT), type_name), self._on_count)

    def _on_count(self, smp):
        self.count = _COUNT.unpack(smp.payload.to_bytes())
        self.ev.set()

    def ready(self):
        return all(p.matching_status.matching for p in (self.ping, self.stream, self.creq))

    def _send_ping(self):
        self.t0 = time.perf_counter()
        self.ping.put(self.payload, **self.att)

    def send_stream(self):
        self.stream.put(self.payload)

    def received(self):
        self.count = None
        self.ev.clear()
        self.creq.put(b"")
        self.ev.wait(5.0)
        return self.count

    def close(self):
        self.s.close()


def count(ping) -> tuple[int, float]:
    """(messages the pong side has received so far, time.perf_counter() of the last one on the
    pong side: CLOCK_MONOTONIC, the same clock in both processes); the request/reply may be
    dropped under a burst with congestion control DROP: retry."""
    for _ in range(5):
        c = ping.received()
        if c is not None:
            return c
    raise RuntimeError("the pong side stopped answering count requests")


def run_pair(kind: str, endpoint: str, type_name: str, args) -> dict:
    env = RAW_VARIANTS.get(kind, {})
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)                       # raw variants: both sides read these
    child = subprocess.Popen([sys.executable, __file__, "--pong", "raw" if env else kind,
                              "--endpoint", endpoint, "--type", type_name],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ping = None
    try:
        assert child.stdout.readline().strip() == "ready", "pong side did not start"
        if kind.startswith("ours"):
            ping = OursPing(endpoint, type_name, kind)
        else:
            ping = RawPing(endpoint, type_name, kind == "raw+hop")
        end = time.monotonic() + 10.0
        while not ping.ready() and time.monotonic() < end:
            time.sleep(0.01)
        time.sleep(0.2)
        ping.round_trips(50, 10.0)                     # warm-up
        rtt = ping.round_trips(args.round_trips, 60.0)
        lost_rt = args.round_trips - len(rtt)
        # paced stream
        base = count(ping)
        period = 1.0 / args.rate_hz
        n = int(args.duration * args.rate_hz)
        t_start = time.perf_counter()
        late = 0
        for i in range(n):
            target = t_start + i * period
            while True:
                now = time.perf_counter()
                if now >= target:
                    break
                if target - now > 0.0015:
                    time.sleep(target - now - 0.001)
            if now - target > period:
                late += 1
            ping.send_stream()
        t_sent = time.perf_counter() - t_start
        time.sleep(1.0)
        got = count(ping)[0] - base[0]
        # burst: --burst messages as fast as the sender's loop goes; received per second at the
        # pong side = messages received / (pong's time of the last one - start of the burst), both
        # on CLOCK_MONOTONIC (a lost message counts against it; the polling below only waits for
        # the stream to end, its period does not enter the rate)
        base = count(ping)
        t0 = time.perf_counter()
        for _ in range(args.burst):
            ping.send_stream()
        t_pub = time.perf_counter() - t0
        prev = (-1, 0.0)
        while True:                               # wait until the count stops growing
            cur = count(ping)
            if cur[0] - base[0] >= args.burst or cur == prev:
                break
            prev = cur
            time.sleep(0.05)
        got_burst, t_last = cur[0] - base[0], cur[1]
        return {"p50_us": 1e6 * statistics.median(rtt), "p99_us": 1e6 * percentile(rtt, 99),
                "n_rtt": len(rtt), "lost_rtt": lost_rt, "sent": n, "received": got, "lost": n - got,
                "achieved_hz": n / t_sent, "late_sends": late,
                "burst_sent": args.burst, "burst_received": got_burst,
                "burst_msgs_s": got_burst / (t_last - t0) if got_burst else 0.0,
                "publish_msgs_s": args.burst / t_pub}
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if ping is not None:            # an open session would keep this process alive
            ping.close()
        child.stdin.close()
        child.wait(timeout=10)


class _Env:
    """Set the raw-variant environment variables of a kind while a side is being created."""

    def __init__(self, kind: str, paired: bool = False):
        self.env = dict(RAW_VARIANTS.get(kind, {}))
        if paired:
            self.env["BENCH_TOPIC_SUFFIX"] = "_" + kind.replace("-", "_").replace("+", "_")

    def __enter__(self):
        self.saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_paired(endpoint: str, type_name: str, kinds: list[str], args) -> dict:
    """Round-trip latency of every kind measured side by side: all pong processes and ping
    sides stay up, and blocks of ``--block`` round trips alternate between the kinds (order
    rotated per round), so slow drifts of this shared machine hit every kind alike. Returns
    per kind the pooled RTT samples and, per round, the block medians."""
    children, pings = {}, {}
    try:
        for kind in kinds:
            with _Env("raw-rmw" if kind in HYBRIDS else kind, paired=True), _Env(kind, paired=True):
                env = RAW_VARIANTS.get(kind, {})
                pong = {"ours-pong": "ours-raw", "ours-ping": "raw"}.get(kind, "raw" if env else kind)
                children[kind] = subprocess.Popen(
                    [sys.executable, __file__, "--pong", pong, "--endpoint", endpoint,
                     "--type", type_name], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                assert children[kind].stdout.readline().strip() == "ready", "pong side did not start"
                if kind == "ours-ping":
                    pings[kind] = OursPing(endpoint, type_name, "ours-raw")
                elif kind.startswith("ours") and kind != "ours-pong":
                    pings[kind] = OursPing(endpoint, type_name, kind)
                else:
                    pings[kind] = RawPing(endpoint, type_name, kind == "raw+hop")
        end = time.monotonic() + 10.0
        while not all(p.ready() for p in pings.values()) and time.monotonic() < end:
            time.sleep(0.01)
        time.sleep(0.2)
        for p in pings.values():
            p.round_trips(100, 10.0)                    # warm-up
        rtt = {k: [] for k in kinds}
        block_p50 = {k: [] for k in kinds}
        rounds = max(1, args.round_trips // args.block)
        for r in range(rounds):
            order = kinds[r % len(kinds):] + kinds[:r % len(kinds)]
            for kind in order:
                xs = pings[kind].round_trips(args.block, 30.0)
                rtt[kind] += xs
                block_p50[kind].append(statistics.median(xs))
        return {"rtt": rtt, "block_p50": block_p50, "rounds": rounds}
    finally:
        for p in pings.values():
            p.close()
        for c in children.values():
            c.stdin.close()
            c.wait(timeout=10)


def report_paired(results: dict, kinds: list[str], args) -> None:
    med = statistics.median
    print()
    print(f"Paired round trips: {args.round_trips} per kind in blocks of {args.block}, kinds alternating "
          f"block by block (order rotated each round); load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print()
    print("| message | transport | RTT p50 µs | RTT p99 µs | X/raw p50 (pooled) | X/raw p50 per round: median [p25, p75] |")
    print("|---|---|---:|---:|---:|---|")
    for label, res in results.items():
        raw = res["rtt"]["raw"]
        for k in kinds:
            xs = res["rtt"][k]
            ratio = med(xs) / med(raw)
            per = sorted(a / b for a, b in zip(res["block_p50"][k], res["block_p50"]["raw"]))
            q = lambda f: per[min(len(per) - 1, int(f * (len(per) - 1) + 0.5))]   # noqa: E731
            cells = "–" if k == "raw" else f"{ratio:.2f} ({100 * (ratio - 1):+.0f}%)"
            rounds = "–" if k == "raw" else f"{q(0.5):.2f} [{q(0.25):.2f}, {q(0.75):.2f}]"
            print(f"| {label} | {k} | {1e6 * med(xs):.0f} | {1e6 * percentile(xs, 99):.0f} | {cells} | {rounds} |")


def _publish_rate(rs: list[dict]) -> str:
    """Median publish msg/s of a row's repetitions ('–' for inproc, which has none)."""
    return f"{statistics.median(r['publish_msgs_s'] for r in rs):.0f}" if "publish_msgs_s" in rs[0] else "–"


def run_inproc(type_name: str, args) -> dict:
    ctx = InprocContext()
    a, b = Node("bench_ping", context=ctx), Node("bench_pong", context=ctx)
    pong_pub = b.create_publisher(type_name, PONG, qos=QOS)
    b.create_subscription(type_name, PING, pong_pub.publish, qos=QOS)
    got = {"pong": 0, "stream": 0}

    def on_pong(_m):
        got["pong"] += 1

    def on_stream(_m):
        got["stream"] += 1

    a.create_subscription(type_name, PONG, on_pong, qos=QOS)
    b.create_subscription(type_name, STREAM, on_stream, qos=QOS)
    ping = a.create_publisher(type_name, PING, qos=QOS)
    stream = a.create_publisher(type_name, STREAM, qos=QOS)
    msg = make_msg(type_name)
    rtt = []
    for i in range(args.round_trips + 50):
        t0 = time.perf_counter()
        ping.publish(msg)
        while ctx.spin_once():
            pass
        if i >= 50:
            rtt.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(args.burst):
        stream.publish(msg)
        while ctx.spin_once():
            pass
    t_burst = time.perf_counter() - t0
    return {"p50_us": 1e6 * statistics.median(rtt), "p99_us": 1e6 * percentile(rtt, 99),
            "n_rtt": len(rtt), "burst_sent": args.burst, "burst_received": got["stream"],
            "burst_msgs_s": got["stream"] / t_burst}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--round-trips", type=int, default=2000)
    ap.add_argument("--rate-hz", type=float, default=1000.0)
    ap.add_argument("--duration", type=float, default=10.0, help="s of the paced stream per row")
    ap.add_argument("--burst", type=int, default=5000)
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--reps", type=int, default=1, help="interleaved repetitions (medians of ratios)")
    ap.add_argument("--kinds", default="raw,raw+hop,ours,ours-raw",
                    help="comma list of " + ", ".join(KINDS) + " (raw is always included; "
                         "ours-pong/ours-ping only with --paired)")
    ap.add_argument("--no-inproc", action="store_true")
    ap.add_argument("--paired", action="store_true",
                    help="latency only: all kinds up at once, blocks of round trips alternating between "
                         "them (robust ratios on a noisy machine); no stream/burst")
    ap.add_argument("--block", type=int, default=100, help="round trips per block in --paired")
    ap.add_argument("--pong", choices=KINDS, help=argparse.SUPPRESS)
    ap.add_argument("--endpoint", help=argparse.SUPPRESS)
    ap.add_argument("--type", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.pong:
        if args.pong.startswith("ours"):
            pong_ours(args.endpoint, args.type, args.pong)
        else:
            pong_raw(args.endpoint, args.type, hop=args.pong == "raw+hop")
        return 0

    kinds = [k for k in KINDS if k in args.kinds.split(",") or k == "raw"]
    endpoint = f"tcp/127.0.0.1:{free_port()}"
    router = start_router([endpoint])
    if args.paired:
        try:
            results = {label: run_paired(endpoint, type_name, kinds, args)
                       for label, type_name in MESSAGES.items()}
        finally:
            router.close()
        report_paired(results, kinds, args)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({**{label: {k: [1e6 * x for x in v] for k, v in res["rtt"].items()}
                              for label, res in results.items()},
                           "provenance": provenance.provenance()}, f)
        return 0
    results = {}        # (label, kind) -> list of per-repetition results
    try:
        for rep in range(args.reps):
            for label, type_name in MESSAGES.items():
                size = len(msgs.serialize(make_msg(type_name), type_name))
                for kind in kinds:
                    r = run_pair(kind, endpoint, type_name, args)
                    r["bytes"] = size
                    results.setdefault((label, kind), []).append(r)
                    print(f"rep {rep + 1} {label:15s} {kind:8s} p50 {r['p50_us']:8.1f} us  p99 {r['p99_us']:8.1f} us  "
                          f"{args.rate_hz:.0f} Hz x {args.duration:.0f} s: sent {r['sent']} received "
                          f"{r['received']} lost {r['lost']} ({r['achieved_hz']:.1f} Hz sent)  "
                          f"burst {r['burst_msgs_s']:9.0f} msg/s ({r['burst_received']}/{r['burst_sent']}, "
                          f"published at {r['publish_msgs_s']:.0f} msg/s)", flush=True)
                if rep == 0 and not args.no_inproc:
                    r = run_inproc(type_name, args)
                    r["bytes"] = size
                    results[(label, "inproc")] = [r]
                    print(f"{label:15s} inproc p50 {r['p50_us']:8.1f} us  p99 {r['p99_us']:8.1f} us  "
                          f"burst {r['burst_msgs_s']:9.0f} msg/s", flush=True)
    finally:
        router.close()

    med = statistics.median
    print()
    print(f"# provenance: {provenance.line()}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"eclipse-zenoh {importlib.metadata.version('eclipse-zenoh')}, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"round trips {args.round_trips}, stream {args.rate_hz:.0f} Hz x {args.duration:.0f} s, "
          f"burst {args.burst}, repetitions {args.reps} (medians over repetitions)")
    print()
    print("| message | bytes | transport | RTT p50 µs | RTT p99 µs | 1 kHz sent | lost (sum) | burst msg/s "
          "| burst received | publish msg/s |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for (label, kind), rs in results.items():
        print(f"| {label} | {rs[0]['bytes']} | {kind} | {med(r['p50_us'] for r in rs):.0f} | "
              f"{med(r['p99_us'] for r in rs):.0f} | {sum(r.get('sent', 0) for r in rs) or '–'} | "
              f"{sum(r.get('lost', 0) for r in rs) if 'lost' in rs[0] else '–'} | "
              f"{med(r['burst_msgs_s'] for r in rs):.0f} | "
              f"{sum(r['burst_received'] for r in rs)}/{sum(r['burst_sent'] for r in rs)} | "
              f"{_publish_rate(rs)} |")
    print()
    print("Ratios: median over repetitions of (X / raw of the same repetition); +% = what X adds to raw p50")
    print()
    others = [k for k in kinds if k != "raw"]
    print("| message | " + " | ".join(f"{k}/raw p50 | {k}/raw p99 | {k}/raw burst | {k}/raw publish"
                                       for k in others) + " |")
    print("|---|" + "---:|---:|---:|---:|" * len(others))
    for label in MESSAGES:
        raw = results[(label, "raw")]
        cells = []
        for k in others:
            xs = results[(label, k)]
            r50 = med(x["p50_us"] / w["p50_us"] for x, w in zip(xs, raw))
            r99 = med(x["p99_us"] / w["p99_us"] for x, w in zip(xs, raw))
            rb = med(x["burst_msgs_s"] / w["burst_msgs_s"] for x, w in zip(xs, raw))
            rp = med(x["publish_msgs_s"] / w["publish_msgs_s"] for x, w in zip(xs, raw))
            cells.append(f"{r50:.2f} ({100 * (r50 - 1):+.0f}%) | {r99:.2f} | {100 * rb:.0f} % | {100 * rp:.0f} %")
        print(f"| {label} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**{f"{k[0]}|{k[1]}": v for k, v in results.items()},
                       "provenance": provenance.provenance()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
