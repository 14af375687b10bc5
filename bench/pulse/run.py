#!/usr/bin/env python3
"""Pulse benchmark: packet-in -> first pulse message out, and sustained packet rate, ours vs a
naive (naive) baseline, measured side by side in one run.

    .venv/bin/python bench/pulse/run.py                  # all sections (~40 s)
    .venv/bin/python bench/pulse/run.py --skip-zenoh     # without the Zenoh section

Latency = wall time from ``sendto`` of the last packet of a headset pulse (``pulse.check.messages``
packets; the pulse is checked whole before it commands, docs/protocols.md "Pulse consistency") on
a real UDP socket to the moment a subscriber holds the first /base_cmd message of its pulse (the
first packet of the pulse went out (messages - 1) packet periods earlier: add 80 ms at 25 Hz for
first packet -> command):
* ours/inproc: vr_interface_node on InprocContext; the receive path is run as the node's waker
  does on threaded backends (socket readable -> drain -> pulse published), subscriber in-process.
* ours/zenoh: vr_interface_node on ZenohContext (router in this process on a free loopback port),
  waker thread + executor thread; subscriber node in a child process (as atomic_node is), both
  stamping with perf_counter = CLOCK_MONOTONIC, shared by all processes on Linux.
* naive: the Tino VR design's structure (vr_interface_node.py of the Tino VR design): a receive thread
  unpacks/validates and sets the pulse target, a 25 Hz timer publishes the 3 cycles; the first
  message leaves at the next timer tick.
Sustained rate = valid packets per second through receive + validation + sequence + pulse logic:
* core: in-process, no socket (ours ``VrCommandCore.on_datagram`` vs naive per-packet code);
* udp: a sender process blasts packets at loopback for --rate-seconds; the receiver drains with
  ``UdpCarrier`` (budget per 5 ms tick) vs naive blocking recvfrom; processed/s and kernel loss.
Timing lives here, never in tests.
"""
from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import os
import platform
import select
import socket
import struct
import sys
import tempfile
import threading
import time

from hri_runtime.config.tree import load_robot_config
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node

from hri_pulse.carriers import UdpCarrier
from hri_pulse.core import PulseConfig, VrCommandCore
from hri_pulse.core.auth import Sealer
from hri_pulse.nodes.vr_interface_node import VrInterfaceNode

FMT = struct.Struct("<fffiiffi")
CFG = load_robot_config("tino")["pulse"]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100.0 * (len(xs) - 1))))]


def summary(name, lat_s):
    ms = [x * 1e3 for x in lat_s]
    return {"name": name, "n": len(ms), "p50_ms": pct(ms, 50), "p99_ms": pct(ms, 99), "max_ms": max(ms)}


class Sink(Node):
    def __init__(self, **kw):
        super().__init__("pulse_bench_sink", **kw)
        self.t_first = None
        self.want = None
        self.ev = threading.Event()
        self.times = []
        self.create_subscription("geometry_msgs/msg/Twist", CFG["topics"]["base_cmd"], self.on_cmd, qos=100)

    def on_cmd(self, m):
        self.times.append(time.perf_counter())
        if self.want is not None and int(m.linear.x) == self.want and self.t_first is None:
            self.t_first = time.perf_counter()
            self.ev.set()


# ---------------------------------------------------------------------- latency: ours inproc
def lat_ours_inproc(n):
    ctx = InprocContext(start_time_s=0.0)
    node = VrInterfaceNode(context=ctx, parameters={"pulse.udp.port": 0})
    sink = Sink(context=ctx)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.bind(("127.0.0.1", 0))
    dst = ("127.0.0.1", node.port)
    seq, out = 0, []
    m, period = CFG["check"]["messages"], 1.0 / CFG["emulator"]["rate_hz"]
    for i in range(n + 5):
        state = 1 + i % 3
        # release, then the pulse: m packets one period apart (simulated); the last one is timed
        for k, v in enumerate([0] + [state] * m):
            last = k == m
            sink.t_first, sink.want = None, state if last else None
            ctx.spin_for(0.25 if k == 0 else period)   # simulated time between presses (> debounce)
            t0 = time.perf_counter()
            tx.sendto(FMT.pack(0, 0, 0, v, 0, 50.0, 0.0, seq), dst)
            seq += 1
            select.select([node.udp.sock], [], [], 0.1)
            node._drain_event()                   # what the waker posts when the socket is readable
            while last and sink.t_first is None and ctx.spin_once():
                pass
            if last and i >= 5:
                out.append(sink.t_first - t0)
    node.destroy_node()
    tx.close()
    return out


# ---------------------------------------------------------------------- latency: ours zenoh
def _flooder(port, seconds, pps, q):
    """Another host (127.0.0.2) sends random 32-byte datagrams at ``pps``, paced in 5 ms bursts."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.2", 0))
    junk = [os.urandom(32) for _ in range(1000)]
    burst = max(1, int(pps * 0.005))
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(burst):
            try:
                s.sendto(junk[n % 1000], ("127.0.0.1", port))
            except OSError:
                pass
            n += 1
        delay = t0 + n / pps - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    q.put((n, time.perf_counter() - t0))


def _sink_proc(ep, ready, stop, q):
    """Subscriber in its own process (as atomic_node is): perf_counter (CLOCK_MONOTONIC, shared
    by all processes) of every /base_cmd message, with its state."""
    from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams
    ctx = ZenohContext(ZenohParams.defaults().with_(connect_endpoints=[ep]))
    got = []

    class S(Node):
        def __init__(self, **kw):
            super().__init__("pulse_bench_sink", **kw)
            self.create_subscription("geometry_msgs/msg/Twist", CFG["topics"]["base_cmd"],
                                     lambda m: got.append((time.perf_counter(), int(m.linear.x))), qos=100)

    node = S(context=ctx)
    ctx.spin_in_background()
    ready.set()
    stop.wait()
    ctx.shutdown()
    node.destroy_node()
    ctx.close()
    q.put(got)


def lat_ours_zenoh(n, flood_pps=0.0, sink_process=True):
    from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams, start_router
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    ep = f"tcp/127.0.0.1:{port}"
    router = start_router([ep])
    ca = ZenohContext(ZenohParams.defaults().with_(connect_endpoints=[ep]))
    node = VrInterfaceNode(context=ca, parameters={"pulse.udp.port": 0})
    ca.spin_in_background()
    spawn = mp.get_context("spawn")               # never fork a process that runs Zenoh threads
    ready, stop, sq = spawn.Event(), spawn.Event(), spawn.Queue()
    sink = spawn.Process(target=_sink_proc, args=(ep, ready, stop, sq))
    sink.start()
    ready.wait(20)
    time.sleep(1.0)                               # discovery
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.bind(("127.0.0.1", 0))
    dst = ("127.0.0.1", node.port)
    period = 1.0 / CFG["pulse"]["rate_hz"]
    seq, sent_at = 0, []
    flood = None
    if flood_pps:
        fq = spawn.Queue()
        est_s = (n + 3) * (CFG["pulse"]["debounce_s"] + (1 + CFG["check"]["messages"]) * period) + 1.0
        flood = spawn.Process(target=_flooder, args=(node.port, est_s, flood_pps, fq))
        flood.start()
        time.sleep(0.3)
    t_begin = time.perf_counter()
    for i in range(n + 3):
        state = 1 + i % 3
        tx.sendto(FMT.pack(0, 0, 0, 0, 0, 50.0, 0.0, seq), dst)
        seq += 1
        time.sleep(CFG["pulse"]["debounce_s"] + period)
        for _ in range(CFG["check"]["messages"] - 1):      # the pulse's first messages
            tx.sendto(FMT.pack(0, 0, 0, state, 0, 50.0, 0.0, seq), dst)
            seq += 1
            time.sleep(period)
        t0 = time.perf_counter()                           # its last message: timed
        tx.sendto(FMT.pack(0, 0, 0, state, 0, 50.0, 0.0, seq), dst)
        seq += 1
        if i >= 3:
            sent_at.append((t0, state))
        time.sleep(period)
    time.sleep(0.5)
    stop.set()
    got = sq.get(timeout=20)
    sink.join()
    out = []
    for t0, st in sent_at:                        # first message of that state after the send
        first = next((t for t, s_ in got if t >= t0 and s_ == st), None)
        if first is not None and first - t0 < 1.0:
            out.append(first - t0)
    times = [t for t, _ in got if t >= t_begin]
    gaps = [b - a for a, b in zip(times, times[1:])]
    extra = {"interval_p50_ms": 1e3 * pct(gaps, 50), "interval_p99_ms": 1e3 * pct(gaps, 99),
             "interval_max_ms": 1e3 * max(gaps), "foreign_dropped": node.core.link.rejected["foreign_peer"],
             "accepted": node.core.link.accepted, "missing": len(sent_at) - len(out)}
    if flood is not None:
        flood.join()
        sent, dur = fq.get()
        extra["flood_pps"] = sent / dur
    tx.close()
    ca.shutdown()
    node.destroy_node()
    ca.close()
    router.close()
    return out, extra


# ---------------------------------------------------------------------- latency: naive
class NaiveSeedNode:
    """The Tino VR design's structure: receive thread sets the pulse, a 25 Hz timer publishes."""

    def __init__(self, publish):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.publish = publish
        self.last_message_order = -1
        self.leg_command, self.leg_command_pulse_target, self.leg_command_pulse_count = 0, -1, 3
        self.lock = threading.Lock()
        self.running = True
        self.log = logging.getLogger("naive")

    def handle(self, data):
        if len(data) != 32:
            return
        try:
            d = FMT.unpack(data)
        except struct.error:
            return
        mo = d[7]
        expected = (self.last_message_order + 1) % (2 ** 31)
        if mo != expected:
            if mo == self.last_message_order:
                return
            self.log.debug("Order gap: Expected %d, Received %d", expected, mo)
        self.last_message_order = mo
        if 0 <= d[3] <= 3 and d[4] in (-1, 0, 1) and d[3] != 0:
            with self.lock:
                self.leg_command_pulse_target, self.leg_command_pulse_count = d[3], 0
                self.leg_command = d[3]

    def rx_loop(self):
        while self.running:
            try:
                data, _ = self.sock.recvfrom(1024)
            except socket.timeout:
                continue
            except OSError:
                return
            self.handle(data)

    def timer_loop(self, period):
        nxt = time.perf_counter()
        while self.running:
            nxt += period
            time.sleep(max(0.0, nxt - time.perf_counter()))
            with self.lock:
                if self.leg_command_pulse_count < 3:
                    self.leg_command = self.leg_command_pulse_target
                    self.leg_command_pulse_count += 1
                    if self.leg_command_pulse_count >= 3:
                        self.leg_command_pulse_target = -1
                    cmd = self.leg_command
                    if self.leg_command_pulse_count >= 3:
                        self.leg_command = 0
                else:
                    cmd = 0
            self.publish(cmd)


def lat_naive(n):
    got = {}
    ev = threading.Event()

    def publish(cmd):
        if cmd and got.get("want") == cmd and "t" not in got:
            got["t"] = time.perf_counter()
            ev.set()

    nv = NaiveSeedNode(publish)
    period = 1.0 / CFG["pulse"]["rate_hz"]
    threads = [threading.Thread(target=nv.rx_loop, daemon=True),
               threading.Thread(target=nv.timer_loop, args=(period,), daemon=True)]
    for t in threads:
        t.start()
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dst = nv.sock.getsockname()
    out, seq = [], 0
    for i in range(n):
        state = 1 + i % 3
        time.sleep(4 * period + 0.013 * (i % 3))  # pulse over; vary the phase against the timer
        got.clear()
        ev.clear()
        got["want"] = state
        t0 = time.perf_counter()
        tx.sendto(FMT.pack(0, 0, 0, state, 0, 50.0, 0.0, seq), dst)
        seq += 1
        if ev.wait(1.0):
            out.append(got["t"] - t0)
    nv.running = False
    nv.sock.close()
    return out


# ---------------------------------------------------------------------- sustained rate: core
def make_stream(n):
    return [FMT.pack(0, 0, 0, (k // 10) % 4, 0, 50.0, 0.0, k) for k in range(n)]


def rate_core_ours(pkts, auth=None):
    """``auth``: a Sealer; the packets are then sealed (60 bytes) and the link checks tags and the
    replay window."""
    t = [0.0]
    section = CFG
    if auth is not None:                 # the core reads its key from pulse.auth.key_file
        with tempfile.NamedTemporaryFile("w", suffix=".key", delete=False) as f:
            f.write(auth.key.hex())
        section = dict(CFG, auth={"mode": "required", "key_file": f.name, "key_id": auth.key_id})
        pkts = [auth.seal(d) for d in pkts]
    core = VrCommandCore(PulseConfig.from_config(section), lambda: t[0])
    if auth is not None:
        os.unlink(f.name)
    peer = ("127.0.0.1", 1)
    t0 = time.perf_counter()
    for k, d in enumerate(pkts):
        if k % 8 == 0:
            t[0] += 0.005
            core.tick(t[0])
        core.on_datagram(d, peer, t[0])
    return len(pkts) / (time.perf_counter() - t0)


def rate_core_naive(pkts):
    nv = NaiveSeedNode(lambda c: None)
    nv.sock.close()
    t0 = time.perf_counter()
    for d in pkts:
        nv.handle(d)
    return len(pkts) / (time.perf_counter() - t0)


# ---------------------------------------------------------------------- sustained rate: udp
def _blaster(port, seconds, q):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    pkts = make_stream(100_000)
    n, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        for d in pkts[n % 100_000: n % 100_000 + 500]:
            try:
                s.sendto(d, ("127.0.0.1", port))
            except OSError:
                pass
        n += 500
    q.put(n)


def rate_udp(ours: bool, seconds: float):
    u = CFG["udp"]
    q = mp.get_context("spawn").Queue()
    if ours:
        car = UdpCarrier.bind("127.0.0.1", 0, u["rcvbuf_bytes"], u["max_packets_per_cycle"], u["max_datagram_bytes"])
        port = car.address[1]
        core = VrCommandCore(PulseConfig.from_config(CFG), time.perf_counter)
    else:
        nv = NaiveSeedNode(lambda c: None)
        nv.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, u["rcvbuf_bytes"])
        port = nv.sock.getsockname()[1]
    p = mp.get_context("spawn").Process(target=_blaster, args=(port, seconds, q))
    p.start()
    got, t_end = 0, time.perf_counter() + seconds + 0.5
    tick = u and CFG["node"]["tick_period_s"]
    while time.perf_counter() < t_end:
        if ours:
            now = time.perf_counter()
            for data, peer in car.drain():
                core.on_datagram(data, peer, now)
                got += 1
            core.tick(now)
            if car.budget_exhausted == 0 or True:
                select.select([car.sock], [], [], tick)
        else:
            try:
                data, _ = nv.sock.recvfrom(1024)
            except socket.timeout:
                continue
            nv.handle(data)
            got += 1
    p.join()
    sent = q.get()
    (car.close() if ours else nv.sock.close())
    return {"sent": sent, "processed": got, "processed_per_s": got / seconds, "loss": 1 - got / max(sent, 1)}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--zenoh-samples", type=int, default=60)
    ap.add_argument("--naive-samples", type=int, default=60)
    ap.add_argument("--rate-seconds", type=float, default=2.0)
    ap.add_argument("--skip-zenoh", action="store_true")
    ap.add_argument("--flood-pps", type=float, default=50_000.0)
    ap.add_argument("--zenoh-only", action="store_true", help="only the Zenoh (+ flood) latency section")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    from hri_runtime import provenance  # commit, version, build flags
    print(f"# provenance: {provenance.line()}")
    print(f"# pulse bench  {platform.node()}  python {platform.python_version()}  cpus {os.cpu_count()}")
    rows = [] if a.zenoh_only else [summary("ours inproc (event drain)", lat_ours_inproc(a.samples))]
    if not a.skip_zenoh:
        try:
            lat, ex = lat_ours_zenoh(a.zenoh_samples)
            rows.append(summary("ours zenoh (waker+executor)", lat))
            latf, exf = lat_ours_zenoh(a.zenoh_samples, a.flood_pps)
            rows.append(summary(f"ours zenoh + {a.flood_pps / 1000:g}k pps flood", latf))
            flood_rows = [("zenoh, no flood", ex), (f"zenoh, flood from 127.0.0.2", exf)]
        except Exception as exc:  # noqa: BLE001
            print(f"zenoh section skipped: {exc!r}")
            flood_rows = []
    rows.append(summary("naive (25 Hz timer)", lat_naive(a.naive_samples)))
    lag_ms = 1e3 * (CFG["check"]["messages"] - 1) / CFG["emulator"]["rate_hz"]
    print("\n## packet-in -> first pulse message out (ms); ours: from the pulse's last packet (checked "
          f"whole; its first packet went {lag_ms:g} ms earlier), naive: from its first packet")
    print(f"{'path':34s} {'n':>5s} {'p50':>8s} {'p99':>8s} {'max':>8s} {'p50 from first packet':>22s}")
    for r in rows:
        lag = 0.0 if r["name"].startswith("naive") else lag_ms
        print(f"{r['name']:34s} {r['n']:5d} {r['p50_ms']:8.3f} {r['p99_ms']:8.3f} {r['max_ms']:8.3f} "
              f"{r['p50_ms'] + lag:22.3f}")
    nv = rows[-1]
    for r in rows[:-1]:
        print(f"ratio naive/{r['name'].split(' (')[0]}: p50 x{nv['p50_ms'] / r['p50_ms']:.1f}, "
              f"p99 x{nv['p99_ms'] / r['p99_ms']:.1f}")
    if not a.skip_zenoh and flood_rows:
        print("\n## /base_cmd stream at the subscriber (25 Hz timer = 40 ms) and the flood")
        for name, e in flood_rows:
            print(f"{name:30s} interval p50 {e['interval_p50_ms']:.2f} p99 {e['interval_p99_ms']:.2f} "
                  f"max {e['interval_max_ms']:.2f} ms; owner packets accepted {e['accepted']}, "
                  f"commands without a pulse {e['missing']}, "
                  f"foreign dropped {e['foreign_dropped']:,d}"
                  + (f", flood sent {e['flood_pps']:,.0f} pps" if 'flood_pps' in e else ""))
    if a.zenoh_only:
        return 0
    pk = make_stream(200_000)
    co, cn = rate_core_ours(pk), rate_core_naive(pk)
    ca = rate_core_ours(pk, Sealer(bytes(range(32)), 1, 1))
    print("\n## sustained rate, in-process (packets/s through validation + sequence + pulse logic)")
    print(f"ours {co:,.0f}/s   naive {cn:,.0f}/s   ratio ours/naive {co / cn:.2f}")
    print(f"ours with pulse.auth required (HMAC-SHA256 tag check) {ca:,.0f}/s   ratio auth/plain {ca / co:.2f}")
    uo, un = rate_udp(True, a.rate_seconds), rate_udp(False, a.rate_seconds)
    print(f"\n## sustained rate over loopback UDP ({a.rate_seconds:g} s blast from another process)")
    for name, r in (("ours (UdpCarrier budget drain)", uo), ("naive (blocking recvfrom)", un)):
        print(f"{name:32s} sent {r['sent']:>9,d}  processed {r['processed']:>9,d}  "
              f"{r['processed_per_s']:>10,.0f}/s  kernel loss {100 * r['loss']:5.1f} %")
    print(f"ratio ours/naive processed/s {uo['processed_per_s'] / max(un['processed_per_s'], 1):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
