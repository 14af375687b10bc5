"""``hri vr-emulate``: a Unity headset app over real UDP (or ZeroMQ), with network impairments.

The app streams one 32-byte command packet per period (``pulse.emulator.rate_hz``, 25 Hz):
``base_state``/``base_angular`` hold an action's value for ``press_packets`` packets (a press),
0 otherwise; ``message_order`` counts up mod 2^31 and restarts from 0 when the app restarts.
Feedback packets (pose/skeleton) from the robot are received and counted. With
``pulse.auth.mode: required`` in the config it loads (e.g. ``HRI_VR_AUTH=required
HRI_VR_KEY_FILE=<file>``) the app's packets are sealed (``hri_pulse.core.auth``), each app
instance a new session (:func:`seal_plan`).

Scenario YAML (every key optional)::

    duration_s: 10
    rate_hz: 25
    press_packets: 3
    actions:                      # or "every_s: 0.6" to generate states 1..3 cyclically
      - {at_s: 1.0, state: 2, angular: 1, head_deg: [0, 10, 0]}
      - {at_s: 2.0, state: 1, packets: 2}   # this press only 2 packets (an incomplete pulse)
    impairments:
      loss: 0.3                   # probability a stream packet is lost
      duplicate: 0.1              # probability a packet is sent twice
      reorder: 0.1                # probability a packet is held back behind the next one
      delay_s: 0.0                # constant extra delay
      jitter_s: 0.0               # uniform extra delay 0..jitter_s (may reorder too)
      burst_loss: [[4.0, 0.5]]    # [start_s, duration_s] windows where everything is lost
      restart_at_s: [6.0]         # Unity restarts: silent restart_gap_s, then message_order from 0
      restart_gap_s: 0.3
      garbage: 0.05               # probability of an extra random datagram per period
      stop_at_s: 8.0              # the link dies: nothing sent after this
      flood: {at_s: 2.0, duration_s: 0.5, rate_pps: 50000, source: 127.0.0.2, valid: false}

``plan()`` turns a scenario into a deterministic (seeded) list of datagrams with their send
times and ground truth; ``send_plan()`` sends it in real time. Tests use ``plan()`` and send the
datagrams themselves over a real socket, step by step with the simulated clock.
"""
from __future__ import annotations

import argparse
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np

from hri_pulse.core.auth import AuthParams, Sealer
from hri_pulse.core.codec import UNITY_FORMAT

_PACK = struct.Struct(UNITY_FORMAT).pack


@dataclass
class Action:
    index: int
    at_s: float
    state: int
    angular: int
    head_deg: Tuple[float, float, float] = (0.0, 0.0, 0.0)
    seqs: List[int] = field(default_factory=list)         # message_order of its packets (stream)
    epoch: int = 0                                         # app instance (restart count)
    corrupted: set = field(default_factory=set)            # packet indices altered by Plan.corrupt
    packets: int = 0                                       # packets of this press (0: press_packets)


@dataclass(order=True)
class Datagram:
    t_s: float
    order: int                                  # tie-break: generation order
    data: bytes = field(compare=False)
    kind: str = field(compare=False)            # stream | duplicate | garbage | flood
    seq: Optional[int] = field(compare=False, default=None)
    epoch: int = field(compare=False, default=0)
    action: Optional[int] = field(compare=False, default=None)
    source: Optional[str] = field(compare=False, default=None)   # None = the headset socket
    renumbered: bool = field(compare=False, default=False)       # message_order altered (Plan.corrupt)


@dataclass
class Plan:
    datagrams: List[Datagram]                   # in send order
    actions: List[Action]
    duration_s: float
    rate_hz: float

    def _accepted(self):
        """(epoch, message_order) of the headset packets the sequence rule accepts: sent and not
        overtaken (above every earlier-sent packet of the same app instance; duplicates and
        stale packets are dropped, the Tino VR design). A packet whose number was corrupted
        counts as lost here (the receiver may in addition drop a few packets after it as stale)."""
        best, out = {}, []
        for d in self.datagrams:
            if d.kind not in ("stream", "duplicate") or d.source is not None or d.renumbered:
                continue
            b = best.get(d.epoch, -1)
            if d.seq > b:
                best[d.epoch] = d.seq
                out.append(d)
        return out

    def delivered_actions(self) -> List[int]:
        """Actions the receiver can see: at least one of their packets accepted by the
        sequence rule (see :meth:`executed_actions` for what becomes a command)."""
        return sorted({d.action for d in self._accepted() if d.action is not None})

    def executed_actions(self, messages: int, min_messages: int | None = None) -> List[int]:
        """Actions whose pulse the receiver turns into a command (``pulse.check``, docs/protocols.md
        "Pulse consistency"): the action's first ``messages`` packets were all sent and none
        corrupted (:meth:`corrupt`); the pulse opens at the first of them the sequence rule
        accepts (the others are lost), at least ``min_messages`` (default: all) of them are
        accepted, and no accepted packet after them lies within the ``messages`` slots from the
        opening one (an idle packet there reads as a pulse that stopped early)."""
        need = messages if min_messages is None else min_messages
        acc = self._accepted()
        got = {(d.epoch, d.seq) for d in acc}
        out = []
        for a in self.actions:
            if len(a.seqs) < messages or (a.corrupted & set(range(messages))):
                continue
            mine = a.seqs[:messages]
            arrived = [s for s in mine if (a.epoch, s) in got]
            if len(arrived) < max(need, 1):
                continue
            last_slot = arrived[0] + messages - 1
            if any(d.epoch == a.epoch and mine[-1] < d.seq <= last_slot for d in acc):
                continue
            out.append(a.index)
        return out

    def corrupt(self, action: int, message: int, **fields) -> None:
        """Alter the ``message``-th packet (0-based) of an action and its duplicates, as a bit
        error that the packet's own checks cannot see: ``base_state``, ``base_angular`` or
        ``message_order`` set to the given values (before :func:`seal_plan`)."""
        act = self.actions[action]
        seq = act.seqs[message]
        names = ("head_pitch", "head_pan", "head_tilt", "base_state", "base_angular", "audio_volume",
                 "audio_orientation", "message_order")
        bad = set(fields) - set(names)
        if bad:
            raise ValueError(f"unknown packet fields {sorted(bad)}")
        for d in self.datagrams:
            if d.action == action and d.seq == seq and d.epoch == act.epoch and d.source is None:
                vals = dict(zip(names, struct.unpack(UNITY_FORMAT, d.data)))
                vals.update(fields)
                d.data = _PACK(*(vals[n] for n in names))
                d.renumbered = d.renumbered or "message_order" in fields
        act.corrupted.add(message)


def load_scenario(path_or_dict) -> dict:
    if isinstance(path_or_dict, dict):
        return dict(path_or_dict)
    from hri_runtime.config.tree import read_yaml

    data = read_yaml(Path(path_or_dict))   # bounded: size, UTF-8, nesting, aliases, duplicate keys
    if not isinstance(data, dict):
        from hri_runtime.errors import UsageError

        raise UsageError(f"scenario {path_or_dict}: a YAML mapping (see hri_pulse.emulator), "
                         f"got {type(data).__name__}")
    return data


def plan(scenario: dict, defaults: dict, seed: int = 0) -> Plan:
    """Deterministic datagram list for a scenario. ``defaults`` = config ``pulse.emulator``."""
    rng = np.random.default_rng(seed)
    rate = float(scenario.get("rate_hz", defaults["rate_hz"]))
    press = int(scenario.get("press_packets", defaults["press_packets"]))
    T = 1.0 / rate
    dur = float(scenario.get("duration_s", 10.0))
    imp = dict(scenario.get("impairments") or {})
    restarts = sorted(float(x) for x in imp.get("restart_at_s", []))
    restart_gap = float(imp.get("restart_gap_s", 0.3))
    stop_at = float(imp.get("stop_at_s", np.inf))
    bursts = [tuple(map(float, b)) for b in imp.get("burst_loss", [])]
    loss, dup, reo = (float(imp.get(k, 0.0)) for k in ("loss", "duplicate", "reorder"))
    delay, jitter, garbage = (float(imp.get(k, 0.0)) for k in ("delay_s", "jitter_s", "garbage"))

    acts_cfg = scenario.get("actions")
    actions: List[Action] = []
    if acts_cfg is None and "every_s" in scenario:
        every = float(scenario["every_s"])
        t, i = float(scenario.get("first_s", 0.5)), 0
        while t < dur - 1.0:
            actions.append(Action(i, t, 1 + i % 3, (i % 3) - 1))
            t += every
            i += 1
    else:
        for i, a in enumerate(acts_cfg or []):
            actions.append(Action(i, float(a["at_s"]), int(a["state"]), int(a.get("angular", 0)),
                                  tuple(float(x) for x in a.get("head_deg", (0, 0, 0))),
                                  packets=int(a.get("packets", 0))))

    out: List[Datagram] = []
    order = 0
    seq, epoch = 0, 0
    n_slots = int(round(dur * rate))
    restart_i = 0
    silent_until = -1.0
    for k in range(n_slots):
        t = k * T
        while restart_i < len(restarts) and t >= restarts[restart_i]:
            seq, epoch = 0, epoch + 1
            silent_until = restarts[restart_i] + restart_gap
            restart_i += 1
        if t < silent_until or t >= stop_at:
            continue
        act = None
        for a in actions:
            if a.at_s <= t + 1e-9 and len(a.seqs) < (a.packets or press) and (a.seqs == [] or a.epoch == epoch):
                act = a
                break
        state, ang, head = (act.state, act.angular, act.head_deg) if act else (0, 0, (0.0, 0.0, 0.0))
        if act is not None:
            act.seqs.append(seq)
            act.epoch = epoch
        data = _PACK(*head, state, ang, 50.0, 0.0, seq)
        lost = rng.random() < loss or any(b0 <= t < b0 + bd for b0, bd in bursts)
        if not lost:
            ts = t + delay + (rng.uniform(0, jitter) if jitter else 0.0)
            if rng.random() < reo:
                ts += T + 0.001                                 # overtaken by the next packet
            out.append(Datagram(ts, order, data, "stream", seq, epoch, act.index if act else None))
            order += 1
            if rng.random() < dup:
                out.append(Datagram(ts + 0.001, order, data, "duplicate", seq, epoch, act.index if act else None))
                order += 1
        if garbage and rng.random() < garbage:
            n = int(rng.integers(0, 64))
            out.append(Datagram(t + T / 2, order, rng.integers(0, 256, n, dtype=np.uint8).tobytes(), "garbage"))
            order += 1
        seq = (seq + 1) % (1 << 31)
    fl = imp.get("flood")
    if fl:
        n = int(float(fl["duration_s"]) * float(fl["rate_pps"]))
        ts = float(fl["at_s"]) + np.arange(n) / float(fl["rate_pps"])
        src = fl.get("source")
        if fl.get("valid"):
            blobs = [_PACK(0, 0, 0, 3, 1, 50.0, 0.0, i % (1 << 31)) for i in range(n)]
        else:
            raw = rng.integers(0, 256, (n, 32), dtype=np.uint8)
            blobs = [raw[i].tobytes() for i in range(n)]
        for i in range(n):
            out.append(Datagram(float(ts[i]), order, blobs[i], "flood", source=src))
            order += 1
    out.sort()
    return Plan(out, actions, dur, rate)


def seal_plan(p: Plan, auth: Sealer) -> None:
    """Seal the headset's datagrams of a plan (``pulse.auth.mode`` required): each app instance
    (``epoch``: the restarts) is a new session ``auth.session + epoch``, as a restarted Unity app
    starts one; duplicates stay byte-identical (the receiver drops them as ``replayed``)."""
    for d in p.datagrams:
        if d.source is None and d.kind != "garbage":
            d.data = auth.seal(d.data, auth.session + d.epoch)


class FeedbackCounter:
    def __init__(self):
        self.counts = {}

    def feed(self, data: bytes) -> None:
        key = data[:4].decode("ascii", "replace") if len(data) >= 4 else "short"
        self.counts[key] = self.counts.get(key, 0) + 1


def send_plan(p: Plan, host: str, port: int, speed: float = 1.0, zmq_endpoint: Optional[str] = None,
              out=sys.stdout) -> FeedbackCounter:
    """Send a plan in real time over UDP (or ZeroMQ PUB), counting feedback packets."""
    fb = FeedbackCounter()
    socks = {}
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setblocking(False)
    pub = None
    if zmq_endpoint:
        import zmq
        pub = zmq.Context.instance().socket(zmq.PUB)
        pub.connect(zmq_endpoint)
        time.sleep(0.3)                       # PUB/SUB slow joiner
    t0 = time.monotonic()
    for d in p.datagrams:
        while True:
            now = (time.monotonic() - t0) * speed
            if now >= d.t_s:
                break
            _drain(sock, fb)
            time.sleep(min(0.002, (d.t_s - now) / speed))
        if pub is not None and d.source is None:
            pub.send(d.data)
            continue
        s = sock
        if d.source is not None:
            s = socks.get(d.source)
            if s is None:
                s = socks[d.source] = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind((d.source, 0))
        try:
            s.sendto(d.data, (host, port))
        except (BlockingIOError, OSError):
            pass
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        _drain(sock, fb)
        time.sleep(0.01)
    return fb


def _drain(sock, fb):
    while True:
        try:
            fb.feed(sock.recv(2048))
        except (BlockingIOError, InterruptedError):
            return


def keyboard(host: str, port: int, rate_hz: float, press_packets: int, auth=None) -> int:
    """Interactive: type `<state> [l|r]` + Enter (e.g. `2 r`), `q` to quit; streams at rate_hz."""
    import select
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    seq, pending, held = 0, None, 0
    print("keys: '<state 0-3> [l|r]' + Enter, q quits", flush=True)
    T = 1.0 / rate_hz
    nxt = time.monotonic()
    while True:
        r, _, _ = select.select([sys.stdin], [], [], max(0.0, nxt - time.monotonic()))
        if r:
            line = sys.stdin.readline().strip().lower()
            if line in ("q", "quit", ""):
                if line:
                    return 0
            else:
                parts = line.split()
                try:
                    st = int(parts[0])
                    ang = {"l": -1, "r": 1}.get(parts[1], 0) if len(parts) > 1 else 0
                    pending, held = (st, ang), press_packets
                except ValueError:
                    print(f"? {line}", flush=True)
        if time.monotonic() >= nxt:
            st, ang = pending if held > 0 else (0, 0)
            held -= 1
            data = _PACK(0.0, 0.0, 0.0, st, ang, 50.0, 0.0, seq)
            sock.sendto(auth.seal(data) if auth is not None else data, (host, port))
            seq = (seq + 1) % (1 << 31)
            nxt += T


def main(argv=None) -> int:
    from hri_runtime import errors
    from hri_runtime.config.tree import ConfigError, load_robot_config
    ap = argparse.ArgumentParser(prog="hri vr-emulate", description=(
        "A scripted Unity headset: 32-byte command packets over real UDP (or ZeroMQ) at "
        "pulse.emulator.rate_hz, with network impairments (loss, duplicates, reordering, delay, "
        "burst loss, app restarts, floods); feedback packets from the robot are counted."))
    errors.add_robot_argument(ap, "tino")
    ap.add_argument("--scenario", help="scenario YAML, every key optional: duration_s, rate_hz, press_packets, "
                    "actions [{at_s, state, angular, head_deg, packets}] or every_s, impairments {loss, duplicate, "
                    "reorder, delay_s, jitter_s, burst_loss, restart_at_s, restart_gap_s, garbage, stop_at_s, "
                    "flood} (example: docs/atomic.md)")
    ap.add_argument("--host", help="robot address (default pulse.udp.bind_address)")
    ap.add_argument("--port", type=errors.port, help="robot port (default pulse.udp.port)")
    ap.add_argument("--zmq", action="store_true", help="send over ZeroMQ PUB to pulse.zmq.sub_endpoint")
    ap.add_argument("--duration", type=errors.positive_float, help="seconds (overrides the scenario)")
    ap.add_argument("--every", type=errors.positive_float, help="generate an action every N s (states 1,2,3 cycling)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the impairments' random draws (default 0)")
    ap.add_argument("--speed", type=errors.positive_float, default=1.0, help="time scale (2 = twice as fast)")
    for k in ("loss", "duplicate", "reorder", "garbage"):
        ap.add_argument(f"--{k}", type=errors.probability, help=f"{k} probability 0..1")
    ap.add_argument("--delay-ms", type=float)
    ap.add_argument("--jitter-ms", type=float)
    ap.add_argument("--burst", action="append", default=[], help="START_S:DURATION_S burst loss")
    ap.add_argument("--restart-at", type=float, action="append", default=[], help="Unity restart time (s)")
    ap.add_argument("--stop-at", type=float, help="link dies at this time (s)")
    ap.add_argument("--flood-pps", type=float, help="flood from 127.0.0.2 at this rate for 1 s at t=1 s")
    ap.add_argument("--keyboard", action="store_true", help="interactive actions from the keyboard")
    ap.add_argument("--dry-run", action="store_true", help="print the plan summary, send nothing")
    a = ap.parse_args(argv)
    try:
        cfg = load_robot_config(a.robot)["pulse"]
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    try:
        auth = Sealer.from_params(AuthParams.from_config(cfg["auth"]))
    except ValueError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    host = a.host or cfg["udp"]["bind_address"]
    port = a.port or cfg["udp"]["port"]
    if a.keyboard:
        return keyboard(host, port, cfg["emulator"]["rate_hz"], cfg["emulator"]["press_packets"], auth)
    sc = load_scenario(a.scenario) if a.scenario else {"every_s": 1.0, "duration_s": 10.0}
    imp = sc.setdefault("impairments", {}) or {}
    sc["impairments"] = imp
    if a.duration:
        sc["duration_s"] = a.duration
    if a.every:
        sc["every_s"] = a.every
        sc.pop("actions", None)
    for k in ("loss", "duplicate", "reorder", "garbage"):
        if getattr(a, k) is not None:
            imp[k] = getattr(a, k)
    if a.delay_ms is not None:
        imp["delay_s"] = a.delay_ms / 1000.0
    if a.jitter_ms is not None:
        imp["jitter_s"] = a.jitter_ms / 1000.0
    if a.burst:
        imp["burst_loss"] = [[float(x) for x in b.split(":")] for b in a.burst]
    if a.restart_at:
        imp["restart_at_s"] = a.restart_at
    if a.stop_at is not None:
        imp["stop_at_s"] = a.stop_at
    if a.flood_pps:
        imp["flood"] = {"at_s": 1.0, "duration_s": 1.0, "rate_pps": a.flood_pps, "source": "127.0.0.2"}
    p = plan(sc, cfg["emulator"], seed=a.seed)
    kinds = {}
    for d in p.datagrams:
        kinds[d.kind] = kinds.get(d.kind, 0) + 1
    print(f"vr-emulate: {len(p.actions)} actions, {len(p.datagrams)} datagrams {kinds}, "
          f"{p.duration_s:g} s at {p.rate_hz:g} Hz -> {'zmq ' + cfg['zmq']['sub_endpoint'] if a.zmq else f'udp {host}:{port}'}",
          flush=True)
    print(f"vr-emulate: actions the robot can see: {len(p.delivered_actions())}/{len(p.actions)}, "
          f"with a pulse whole enough (executed): {len(p.executed_actions(cfg['check']['messages'], cfg['check']['min_messages']))}", flush=True)
    if a.dry_run:
        return 0
    if auth is not None:                      # pulse.auth.mode required: what the Unity app sends
        seal_plan(p, auth)
    fb = send_plan(p, host, port, a.speed, cfg["zmq"]["sub_endpoint"] if a.zmq else None)
    print(f"vr-emulate: done; feedback received {fb.counts or 'none'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
