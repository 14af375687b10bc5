#!/usr/bin/env python3
"""Deployment benchmark: what the two-machine topology and its security cost per round trip.

    .venv/bin/python bench/deployment/run.py                       # 5 rounds x 4 topologies x 500 round trips
    .venv/bin/python bench/deployment/run.py --rounds 10 --block 1000

Topologies (all on loopback, routers opened in this process with hri_runtime's own
``session_config`` / ``start_router``, i.e. exactly what ``hri router`` opens):
* one:      ping and pong clients of one router over tcp (one machine, `hri router`);
* two-tcp:  ping on router A, pong on router B, A linked to B over plain tcp;
* two-tls:  the same link over TLS with client certificates (mTLS, certificates made by openssl);
* two-acl:  two-tls plus access control on both routers (docs/deployment.md rules; the
            clients are local tcp = trusted, the link is the operator identity).

Method: one process, two Zenoh client sessions (ping, pong); the pong subscriber echoes every
sample from Zenoh's callback thread, the ping side waits for each echo (sequential round trips,
64-byte payload). Blocks of --block round trips alternate between the topologies, the order
rotated every round, so a drift of this shared machine hits all alike; pooled p50/p99 per
topology and the ratio to "one". Prints the machine, the command and `uptime` load.
Timing lives here, never in tests.
"""
from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from hri_runtime.impl.zenoh_backend import ZenohParams, _open, session_config, start_router

KINDS = ("one", "two-tcp", "two-tls", "two-acl")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_pki(d: Path) -> tuple[str, dict]:
    def run(*a):
        subprocess.run(["openssl", *a], check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=bench-ca",
        "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"))
    (d / "ext").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n")
    out = {}
    for n in ("robot", "operator"):
        run("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={n}", "-keyout", str(d / f"{n}.key"),
            "-out", str(d / f"{n}.csr"))
        run("x509", "-req", "-in", str(d / f"{n}.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
            "-CAcreateserial", "-days", "1", "-extfile", str(d / "ext"), "-out", str(d / f"{n}.pem"))
        out[n] = {"root_ca_certificate": str(d / "ca.pem"), "certificate": str(d / f"{n}.pem"),
                  "private_key": str(d / f"{n}.key"), "enable_mtls": True, "verify_name_on_connect": True}
    return str(d / "ca.pem"), out


class Topology:
    def __init__(self, kind: str, base: ZenohParams, pki: dict):
        self.kind, self.routers = kind, []
        acl = dict(base.access_control or {}, enabled=kind == "two-acl")
        a_tcp = f"tcp/127.0.0.1:{free_port()}"
        if kind == "one":
            self.routers.append(start_router([a_tcp], base))
            ping_ep = pong_ep = a_tcp
        else:
            b_tcp = f"tcp/127.0.0.1:{free_port()}"
            secure = kind in ("two-tls", "two-acl")
            link = f"{'tls' if secure else 'tcp'}/127.0.0.1:{free_port()}"
            pb = base.with_(tls=pki["robot"] if secure else None, access_control=acl)
            pa = base.with_(tls=pki["operator"] if secure else None, access_control=acl,
                            router_connect_endpoints=[link])
            self.routers.append(start_router([b_tcp, link], pb))
            self.routers.append(start_router([a_tcp], pa))
            ping_ep, pong_ep = a_tcp, b_tcp
        self.ping = _open(session_config(base.with_(connect_endpoints=[ping_ep]), "client"))
        self.pong = _open(session_config(base.with_(connect_endpoints=[pong_ep]), "client"))
        key = f"0/bench_{kind.replace('-', '_')}"
        self.back = threading.Event()
        self.echo_pub = self.pong.declare_publisher(key + "/pong")
        self.pong.declare_subscriber(key + "/ping", lambda s: self.echo_pub.put(s.payload))
        self.ping.declare_subscriber(key + "/pong", lambda s: self.back.set())
        self.pub = self.ping.declare_publisher(key + "/ping")
        self.rtt_us: list[float] = []
        deadline = time.monotonic() + 20
        while not self.round_trip(1.0):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{kind}: no echo through the topology")

    def round_trip(self, timeout_s: float) -> bool:
        self.back.clear()
        t0 = time.perf_counter()
        self.pub.put(b"x" * 64)
        ok = self.back.wait(timeout_s)
        if ok:
            self.rtt_us.append((time.perf_counter() - t0) * 1e6)
        return ok

    def close(self):
        for s in (self.ping, self.pong, *reversed(self.routers)):
            s.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--block", type=int, default=500)
    a = ap.parse_args()
    base = ZenohParams.defaults()
    with tempfile.TemporaryDirectory() as d:
        _, pki = make_pki(Path(d))
        tops = {k: Topology(k, base, pki) for k in KINDS}
        for t in tops.values():
            t.rtt_us.clear()
        order = list(KINDS)
        for r in range(a.rounds):
            for k in order:
                for _ in range(a.block):
                    tops[k].round_trip(5.0)
            order = order[1:] + order[:1]
        for t in tops.values():
            t.close()
    from hri_runtime import provenance  # commit, version, build flags
    print(f"# provenance: {provenance.line()}")
    print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
          f"python {platform.python_version()}")
    print(f"command: {' '.join(sys.argv)}  (rounds {a.rounds}, block {a.block})")
    print(f"load: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    ref = statistics.median(tops["one"].rtt_us)
    print(f"{'topology':10} {'n':>6} {'p50 us':>9} {'p99 us':>9} {'p50/one':>8}")
    for k in KINDS:
        v = sorted(tops[k].rtt_us)
        p50, p99 = statistics.median(v), v[int(0.99 * (len(v) - 1))]
        print(f"{k:10} {len(v):6d} {p50:9.1f} {p99:9.1f} {p50 / ref:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
