"""ROS 2 MCAP recording and replay: the one MCAP API of the workspace.

Files are what ``ros2 bag record -s mcap`` writes and what Foxglove / PlotJuggler / ``ros2 bag``
read: MCAP profile ``ros2``, one schema per type (encoding ``ros2msg``, name ``pkg/msg/Type``,
data = the concatenated .msg definition with its dependencies, ``msgs.definition``), one channel
per topic (message encoding ``cdr``, metadata ``offered_qos_profiles``), messages = CDR bytes
with the 4-byte header, log_time/publish_time in ns.

    with McapWriter("run.mcap") as w:
        w.write("/chatter", msgs.new("std_msgs/msg/String", data="hi"), t_s=1.5)
        w.write("/joint_states", cdr_bytes, t_s=1.6, type_name="sensor_msgs/msg/JointState")
    r = McapReader("run.mcap")
    r.topics()                       # {'/chatter': 'std_msgs/msg/String', ...}
    for m in r.messages(["/chatter"]):
        m.topic, m.type_name, m.log_time_ns, m.data, m.msg   # m.msg decoded on access

``Recorder(node, writer, topics=None)``: records topics of the node's context (all discovered
ones, or the given names) as raw CDR; ``Player(node, reader, rate=1.0)``: republishes a file on
the node's clock (deterministic on InprocContext). CLIs: ``hri record``, ``hri play``.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from . import msgs

__all__ = ["McapWriter", "McapReader", "RecordedMessage", "Recorder", "Player", "RecordingParams",
           "record_main", "play_main"]


@dataclass(frozen=True)
class RecordingParams:
    compression: str = "zstd"            # zstd | lz4 | none
    chunk_size_bytes: int = 1 << 20
    discovery_period_s: float = 0.5
    queue_depth: int = 1000
    play_tick_s: float = 0.001

    @classmethod
    def from_config(cls, section: dict) -> "RecordingParams":
        return cls(**{k: section[k] for k in cls.__dataclass_fields__ if k in section})

    @classmethod
    def defaults(cls, config_root: str | Path | None = None) -> "RecordingParams":
        from . import config as cfgmod

        root = Path(config_root) if config_root else cfgmod.find_config_root()
        data = cfgmod.read_yaml(root / cfgmod.DEFAULTS_FILE)
        return cls.from_config(((data or {}).get("runtime") or {}).get("recording") or {})


def _qos_yaml(qos) -> str:
    """rosbag2's offered_qos_profiles metadata (one profile) for a QoSProfile (or None)."""
    if qos is None:
        return ""
    rel = 1 if qos.reliability == "reliable" else 2
    dur = 1 if qos.durability == "transient_local" else 2
    hist = 1 if qos.history == "keep_last" else 2
    zero = "\n    sec: 0\n    nsec: 0"
    return (f"- history: {hist}\n  depth: {int(qos.depth)}\n  reliability: {rel}\n  durability: {dur}\n"
            f"  deadline:{zero}\n  lifespan:{zero}\n  liveliness: 1\n  liveliness_lease_duration:{zero}\n"
            f"  avoid_ros_namespace_conventions: false")


class McapWriter:
    """MCAP writer of ROS 2 CDR messages (profile ros2). Thread safe."""

    def __init__(self, path: str | Path, library: str = "hri_runtime",
                 params: Optional[RecordingParams] = None):
        from mcap.writer import CompressionType, Writer

        self.params = params or RecordingParams.defaults()
        comp = {"zstd": CompressionType.ZSTD, "lz4": CompressionType.LZ4,
                "none": CompressionType.NONE}[self.params.compression]
        self.path = Path(path)
        self._fh = open(self.path, "wb")
        self._w = Writer(self._fh, chunk_size=int(self.params.chunk_size_bytes), compression=comp)
        self._w.start(profile="ros2", library=library)
        self._schemas: dict[str, int] = {}
        self._channels: dict[str, tuple[int, str]] = {}
        self._seq: dict[int, int] = {}
        self._lock = threading.Lock()
        self.count = 0
        self._closed = False

    def add_channel(self, topic: str, type_name: str, qos=None) -> int:
        t = msgs.normalize(type_name)
        with self._lock:
            if topic in self._channels:
                cid, have = self._channels[topic]
                if have != t:
                    raise ValueError(f"topic {topic} already recorded as {have}, not {t}")
                return cid
            sid = self._schemas.get(t)
            if sid is None:
                sid = self._w.register_schema(name=t, encoding="ros2msg",
                                              data=msgs.definition(t).encode("utf-8"))
                self._schemas[t] = sid
            meta = {"offered_qos_profiles": _qos_yaml(qos)} if qos is not None else {}
            cid = self._w.register_channel(topic=topic, message_encoding="cdr", schema_id=sid, metadata=meta)
            self._channels[topic] = (cid, t)
            self._seq[cid] = 0
            return cid

    def write(self, topic: str, msg: Any, t_s: Optional[float] = None, type_name: Optional[str] = None,
              log_time_ns: Optional[int] = None, publish_time_ns: Optional[int] = None) -> None:
        """msg: a message (its type from the message) or CDR bytes (type_name required unless
        the channel exists). Time: log_time_ns, or t_s seconds, or now."""
        if isinstance(msg, (bytes, bytearray, memoryview)):
            data = bytes(msg)
            if type_name is None:
                if topic not in self._channels:
                    raise ValueError(f"first write of bytes on {topic} needs type_name")
                type_name = self._channels[topic][1]
        else:
            type_name = type_name or msgs.type_name_of(msg)
            data = msgs.serialize(msg, type_name)
        cid = self.add_channel(topic, type_name)
        if log_time_ns is None:
            log_time_ns = int(round((time.time() if t_s is None else t_s) * 1e9))
        with self._lock:
            if self._closed:
                raise ValueError(f"{self.path}: writer is closed")
            self._seq[cid] += 1
            self._w.add_message(channel_id=cid, log_time=int(log_time_ns), data=data,
                                publish_time=int(publish_time_ns if publish_time_ns is not None else log_time_ns),
                                sequence=self._seq[cid])
            self.count += 1

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._w.finish()
            self._fh.close()

    def __enter__(self) -> "McapWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class RecordedMessage:
    topic: str
    type_name: str
    log_time_ns: int
    publish_time_ns: int
    data: bytes
    _msg: Any = field(default=None, repr=False)

    @property
    def t_s(self) -> float:
        return self.log_time_ns * 1e-9

    @property
    def msg(self):
        if self._msg is None:
            self._msg = msgs.deserialize(self.data, self.type_name)
        return self._msg


def _register_schema(name: str, text: str) -> None:
    """Make an unknown type from a file's ros2msg schema known to the type store."""
    try:
        msgs.get(name)
        return
    except msgs.UnknownTypeError:
        pass
    sep = "=" * 80
    sections = [s.strip("\n") for s in text.split(sep)]
    defs = {name: sections[0]}
    for s in sections[1:]:
        lines = s.strip("\n").splitlines()
        if lines and lines[0].startswith("MSG: "):
            defs[msgs.normalize(lines[0][5:].strip())] = "\n".join(lines[1:])
    for n, d in reversed(list(defs.items())):
        try:
            msgs.get(n)
        except msgs.UnknownTypeError:
            msgs.register_msg(n, d)


class McapReader:
    """Reads ROS 2 MCAP files (ours, rosbag2's, Foxglove's): topics, counts, messages in log-time order."""

    def __init__(self, path: str | Path):
        from mcap.reader import make_reader

        self.path = Path(path)
        with open(self.path, "rb") as fh:
            r = make_reader(fh)
            summary = r.get_summary()
            self.profile = r.get_header().profile
        if summary is None:
            self._scan()
        else:
            self._topics = {}
            for ch in summary.channels.values():
                sch = summary.schemas.get(ch.schema_id)
                if sch is None or ch.message_encoding != "cdr":
                    continue
                self._topics[ch.topic] = msgs.normalize(sch.name)
                _register_schema(msgs.normalize(sch.name), sch.data.decode("utf-8", "replace"))
            st = summary.statistics
            self._counts = {summary.channels[c].topic: n for c, n in (st.channel_message_counts.items() if st else [])}
            self.start_ns = st.message_start_time if st else None
            self.end_ns = st.message_end_time if st else None

    def _scan(self) -> None:
        self._topics, self._counts = {}, {}
        self.start_ns = self.end_ns = None
        for m in self.messages():
            self._counts[m.topic] = self._counts.get(m.topic, 0) + 1
            self.start_ns = m.log_time_ns if self.start_ns is None else min(self.start_ns, m.log_time_ns)
            self.end_ns = m.log_time_ns if self.end_ns is None else max(self.end_ns, m.log_time_ns)

    def topics(self) -> dict[str, str]:
        return dict(self._topics)

    def message_counts(self) -> dict[str, int]:
        return dict(self._counts)

    def messages(self, topics: Optional[Iterable[str]] = None, start_s: Optional[float] = None,
                 end_s: Optional[float] = None) -> Iterator[RecordedMessage]:
        from mcap.reader import make_reader

        want = set(topics) if topics is not None else None
        with open(self.path, "rb") as fh:
            r = make_reader(fh)
            for sch, ch, m in r.iter_messages(
                    topics=list(want) if want is not None else None,
                    start_time=None if start_s is None else int(start_s * 1e9),
                    end_time=None if end_s is None else int(end_s * 1e9), log_time_order=True):
                if sch is None or ch.message_encoding != "cdr":
                    continue
                t = msgs.normalize(sch.name)
                if ch.topic not in getattr(self, "_topics", {}):
                    _register_schema(t, sch.data.decode("utf-8", "replace"))
                    self._topics = {**getattr(self, "_topics", {}), ch.topic: t}
                yield RecordedMessage(ch.topic, t, m.log_time, m.publish_time, bytes(m.data))


# --------------------------------------------------------------------------- record / play on a node

class Recorder:
    """Records topics of ``node``'s context into ``writer`` as raw CDR (no decode on the way).

    topics=None: every topic the context's graph shows (re-discovered every
    ``discovery_period_s``); a topic seen with several types is skipped and counted in
    ``skipped``. Log time: the node's clock."""

    def __init__(self, node, writer: McapWriter, topics: Optional[list[str]] = None,
                 params: Optional[RecordingParams] = None, types: Optional[dict[str, str]] = None):
        self.node, self.writer = node, writer
        self.params = params or writer.params
        self.wanted = [node.resolve_topic_name(t) for t in topics] if topics else None
        self.types = dict(types or {})
        self.subs: dict[str, Any] = {}
        self.skipped: dict[str, str] = {}
        self.discover()
        self.timer = node.create_timer(self.params.discovery_period_s, self.discover)

    def discover(self) -> None:
        graph = self.node.context.graph()
        for topic in (self.wanted if self.wanted is not None else list(graph.topics)):
            if topic in self.subs:
                continue
            if topic in self.types:
                t = self.types[topic]
            else:
                ts = graph.topics.get(topic, set())
                if len(ts) != 1:
                    if ts:
                        self.skipped[topic] = f"several types {sorted(ts)}"
                    continue
                t = next(iter(ts))
            try:
                self.writer.add_channel(topic, t)
            except msgs.UnknownTypeError as e:
                self.skipped[topic] = str(e)
                continue
            self.subs[topic] = self.node.create_subscription(
                t, topic, lambda data, _t=topic, _ty=t: self._on(data, _t, _ty),
                qos=self.params.queue_depth, raw=True)

    def _on(self, data: bytes, topic: str, type_name: str) -> None:
        self.writer.write(topic, data, type_name=type_name,
                          log_time_ns=self.node.get_clock().now().nanoseconds)

    def stop(self) -> None:
        self.timer.cancel()
        for s in self.subs.values():
            s.destroy()
        self.subs.clear()


class Player:
    """Republishes a recording on ``node``'s clock: a message logged at t (after the first, t0)
    is published when (now - start)*rate >= t - t0. Checked every ``play_tick_s``; bytes are
    published unchanged. ``done`` when the last message is out (``loop`` restarts)."""

    def __init__(self, node, reader: McapReader, rate: float = 1.0, topics: Optional[list[str]] = None,
                 loop: bool = False, params: Optional[RecordingParams] = None,
                 remap: Optional[dict[str, str]] = None):
        if not rate > 0:
            raise ValueError(f"play rate must be > 0, got {rate}")
        self.node, self.reader, self.rate, self.loop = node, reader, float(rate), loop
        self.params = params or RecordingParams.defaults()
        self.topics = topics
        self.remap = dict(remap or {})
        self.pubs = {}
        for topic, t in reader.topics().items():
            if topics is None or topic in topics:
                self.pubs[topic] = node.create_publisher(t, self.remap.get(topic, topic),
                                                         qos=self.params.queue_depth)
        self.published = 0
        self.done = False
        self._restart()
        self.timer = node.create_timer(self.params.play_tick_s, self._tick)

    def _restart(self) -> None:
        self._it = iter(self.reader.messages(list(self.pubs)))
        self._next = next(self._it, None)
        self._t0 = self._next.log_time_ns if self._next is not None else 0
        self._start_ns = self.node.get_clock().now().nanoseconds

    def _tick(self) -> None:
        if self.done:
            return
        elapsed = (self.node.get_clock().now().nanoseconds - self._start_ns) * self.rate
        while self._next is not None and self._next.log_time_ns - self._t0 <= elapsed:
            self.pubs[self._next.topic].publish(self._next.data)
            self.published += 1
            self._next = next(self._it, None)
        if self._next is None:
            if self.loop:
                self._restart()
            else:
                self.done = True
                self.timer.cancel()


# --------------------------------------------------------------------------- CLIs

def _run_until(ctx, stop: threading.Event, duration_s: Optional[float], done=lambda: False) -> None:
    spin = getattr(ctx, "spin_in_background", None)
    if spin is not None:
        spin()
        end = None if duration_s is None else time.monotonic() + duration_s
        while not stop.is_set() and not done() and (end is None or time.monotonic() < end):
            stop.wait(0.05)
    else:  # InprocContext: run real-time paced in this thread
        t0 = time.monotonic()
        while not stop.is_set() and not done() and (duration_s is None or time.monotonic() - t0 < duration_s):
            ctx.spin(timeout_s=0.05)


def _signals(stop: threading.Event):
    def on_signal(signum, _frame):
        stop.set()
    return {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}


def record_main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="hri record", description="Record topics to a ROS 2 MCAP file "
                                 "(on the HRI_TRANSPORT context).")
    ap.add_argument("topics", nargs="*", help="topics (default: all discovered)")
    ap.add_argument("-o", "--output", required=True, help="output .mcap file")
    ap.add_argument("--duration", type=float, help="stop after this many seconds")
    a = ap.parse_args(argv)
    from .context import TransportUnavailableError, get_default_context
    from .node import Node

    try:
        ctx = get_default_context()
    except TransportUnavailableError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    node = Node("hri_record", context=ctx)
    stop = threading.Event()
    old = _signals(stop)
    with McapWriter(a.output, library="hri record") as w:
        rec = Recorder(node, w, a.topics or None)
        print(f"recording {'all topics' if not a.topics else ', '.join(a.topics)} to {a.output} (Ctrl-C stops)",
              file=sys.stderr)
        try:
            _run_until(ctx, stop, a.duration)
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            rec.stop()
            ctx.shutdown()
    print(f"{w.count} messages on {len(rec.subs) or len(w._channels)} topic(s) -> {a.output}"
          + (f"; skipped {rec.skipped}" if rec.skipped else ""), file=sys.stderr)
    node.destroy_node()
    ctx.close()
    return 0


def play_main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="hri play", description="Replay a ROS 2 MCAP file (on the "
                                 "HRI_TRANSPORT context).")
    ap.add_argument("file")
    ap.add_argument("--rate", type=float, default=1.0)
    ap.add_argument("--topics", nargs="*")
    ap.add_argument("--loop", action="store_true")
    ap.add_argument("--remap", nargs="*", default=[], metavar="FROM:=TO",
                    help="publish a recorded topic under another name")
    ap.add_argument("--info", action="store_true", help="print topics, types and counts only")
    a = ap.parse_args(argv)
    remap = {}
    for r in a.remap:
        if ":=" not in r:
            print(f"error: --remap expects FROM:=TO, got {r!r}", file=sys.stderr)
            return 2
        k, v = r.split(":=", 1)
        remap[k] = v
    try:
        reader = McapReader(a.file)
    except Exception as e:  # noqa: BLE001  (missing / not an MCAP file)
        print(f"error: cannot read {a.file}: {e}", file=sys.stderr)
        return 2
    if a.info:
        counts = reader.message_counts()
        dur = ((reader.end_ns or 0) - (reader.start_ns or 0)) * 1e-9
        print(f"{a.file}: profile {reader.profile!r}, {sum(counts.values())} messages, {dur:.3f} s")
        for t, ty in sorted(reader.topics().items()):
            print(f"  {t}  [{ty}]  {counts.get(t, 0)}")
        return 0
    from .context import TransportUnavailableError, get_default_context
    from .node import Node

    try:
        ctx = get_default_context()
    except TransportUnavailableError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    node = Node("hri_play", context=ctx)
    player = Player(node, reader, rate=a.rate, topics=a.topics, loop=a.loop, remap=remap)
    stop = threading.Event()
    old = _signals(stop)
    try:
        _run_until(ctx, stop, None, done=lambda: player.done)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        ctx.shutdown()
    print(f"published {player.published} messages", file=sys.stderr)
    node.destroy_node()
    ctx.close()
    return 0
