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

Crash safe: the writer writes its chunk out at least every ``runtime.recording.flush_period_s``
with a provisional footer, so a killed recorder leaves a readable file (``McapWriter``).

``Recorder(node, writer, topics=None)``: records topics of the node's context (all discovered
ones, or the given names) as raw CDR; ``Player(node, reader, rate=1.0)``: republishes a file on
the node's clock (deterministic on InprocContext). CLIs: ``hri record``, ``hri play``.
"""
from __future__ import annotations

import argparse
import os
import signal
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from hri_runtime import errors, msgs, provenance
from hri_runtime.parameters_gen import RuntimeRecordingParams
from hri_runtime.signals import StopFlag

__all__ = ["McapWriter", "McapReader", "RecordedMessage", "Recorder", "Player", "RecordingParams",
           "record_main", "play_main"]


RecordingParams = RuntimeRecordingParams   # declared in hri_runtime's parameters.yaml


def _duration_yaml(v: Optional[float]) -> str:
    """{sec, nsec} of a duration; None (not set) = rmw's "unspecified" 0/0 (the default)."""
    ns = 0 if v is None or v == float("inf") else int(round(v * 1e9))
    return f"\n    sec: {ns // 1_000_000_000}\n    nsec: {ns % 1_000_000_000}"


def _qos_yaml(qos) -> str:
    """rosbag2's offered_qos_profiles metadata for a QoS profile or a list of them (one per
    publisher, as rosbag2 records them), in the form rosbag2 writes since metadata version 9
    (Jazzy): policy names as strings (``history: keep_last``, ``reliability: reliable``,
    ``durability: transient_local``, ``liveliness: automatic``), durations as {sec, nsec}."""
    if qos is None:
        return ""
    out = []
    for q in (qos if isinstance(qos, (list, tuple)) else [qos]):
        out.append(f"- history: {q.history}\n  depth: {int(q.depth)}\n  reliability: {q.reliability}\n"
                   f"  durability: {q.durability}\n"
                   f"  deadline:{_duration_yaml(getattr(q, 'deadline_s', None))}\n"
                   f"  lifespan:{_duration_yaml(getattr(q, 'lifespan_s', None))}\n"
                   f"  liveliness: {getattr(q, 'liveliness', 'automatic')}\n"
                   f"  liveliness_lease_duration:{_duration_yaml(getattr(q, 'liveliness_lease_s', None))}\n"
                   f"  avoid_ros_namespace_conventions: false")
    return "\n".join(out)


def parse_qos_yaml(text: str) -> list[dict]:
    """offered_qos_profiles metadata -> list of profiles with rmw names (reliability,
    durability, history, depth); accepts the string form (rosbag2 Jazzy, ours) and the integer
    form of older rosbag2 versions (Humble)."""
    import yaml

    try:
        data = yaml.safe_load(text or "") or []
    except yaml.YAMLError:
        return []
    names = {"history": {1: "keep_last", 2: "keep_all", 0: "system_default", 3: "unknown"},
             "reliability": {1: "reliable", 2: "best_effort", 0: "system_default", 3: "unknown"},
             "durability": {1: "transient_local", 2: "volatile", 0: "system_default", 3: "unknown"}}
    out = []
    for p in data if isinstance(data, list) else []:
        if not isinstance(p, dict):
            continue
        q = {k: (tbl.get(p.get(k), str(p.get(k))) if isinstance(p.get(k), int) else str(p.get(k, "?")).lower())
             for k, tbl in names.items()}
        q["depth"] = int(p.get("depth", 0) or 0)
        out.append(q)
    return out


class _CrashSafeFile:
    """The byte stream under the mcap Writer: keeps what the Writer wrote in memory and, on
    :meth:`persist`, writes it to the file followed by a provisional end of file (DataEnd +
    Footer without summary + magic) in ONE ``pwrite`` at the end of the data written so far
    (overwriting the previous provisional end). The file is therefore a complete MCAP after every
    persist: a recorder killed at any moment leaves a file the mcap library's normal reader reads
    (without an index: it reads it linearly) up to the last persisted chunk."""

    def __init__(self, path: Path):
        from mcap.data_stream import RecordBuilder
        from mcap.records import DataEnd, Footer
        from mcap.writer import MCAP0_MAGIC

        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._pending = bytearray()
        self._written = 0          # bytes of real data in the file (the provisional end follows)
        b = RecordBuilder()
        DataEnd(data_section_crc=0).write(b)
        Footer(summary_start=0, summary_offset_start=0, summary_crc=0).write(b)
        b.write(MCAP0_MAGIC)
        self._tail = b.end()

    # the file-object subset the mcap Writer uses
    def write(self, data) -> int:
        self._pending += data
        return len(data)

    def tell(self) -> int:
        return self._written + len(self._pending)

    @property
    def pending(self) -> bool:
        """The Writer wrote something (a finished chunk) that is not in the file yet."""
        return bool(self._pending)

    def flush(self) -> None:
        pass                       # persisted by persist()/close() only (one write each)

    def persist(self) -> None:
        if self._pending:
            os.pwrite(self._fd, bytes(self._pending) + self._tail, self._written)
            self._written += len(self._pending)
            self._pending.clear()

    def close(self) -> None:
        """After the Writer's finish(): the real end (summary, footer) replaces the provisional one."""
        if self._pending:
            os.pwrite(self._fd, bytes(self._pending), self._written)
            self._written += len(self._pending)
            self._pending.clear()
        os.ftruncate(self._fd, self._written)
        os.close(self._fd)


class McapWriter:
    """MCAP writer of ROS 2 CDR messages (profile ros2). Thread safe.

    Crash safe: the chunk in progress is finished and written out at least every
    ``runtime.recording.flush_period_s`` (checked on every write and by :meth:`flush_if_due`,
    which ``Recorder`` calls on a timer), each time with a valid provisional end of file
    (:class:`_CrashSafeFile`): a SIGKILL loses at most the last period. An unwritable path
    fails in the constructor (OSError)."""

    def __init__(self, path: str | Path, library: str = "hri_runtime",
                 params: Optional[RecordingParams] = None, clock=time.monotonic):
        from mcap.writer import CompressionType, Writer

        self.params = params or RecordingParams.defaults()
        comp = {"zstd": CompressionType.ZSTD, "lz4": CompressionType.LZ4,
                "none": CompressionType.NONE}[self.params.compression]
        # commit, version, build flags of what writes it (hri_runtime.provenance; the package is the
        # library name's first word: "hri_atomic_motion"; "hri record" -> hri_runtime), computed
        # before the file exists so that it is a complete MCAP from its first moment
        words = library.split()
        meta = provenance.metadata(words[0] if words and words[0].startswith("hri_") else "hri_runtime")
        self.path = Path(path)
        self._fh = _CrashSafeFile(self.path)
        self._clock = clock
        self._w = Writer(self._fh, chunk_size=int(self.params.chunk_size_bytes), compression=comp)
        self._w.start(profile="ros2", library=library)
        self._w.add_metadata("provenance", meta)
        self._fh.persist()                   # a valid (empty) MCAP from the first moment
        self._last_flush = clock()
        self._unflushed = 0
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
        the channel exists). Time: log_time_ns, or t_s seconds, or now. A relative topic name is
        recorded as resolved in the root namespace (a bag holds fully qualified names)."""
        if not topic.startswith("/"):
            topic = "/" + topic
        if isinstance(msg, (bytes, bytearray, memoryview)):
            data = bytes(msg)
            if type_name is None:
                if topic not in self._channels:
                    raise ValueError(f"first write of bytes on {topic} needs type_name")
                type_name = self._channels[topic][1]
        else:
            type_name = type_name or msgs.type_name_of(msg)
            data = msgs.serialize(msg, type_name)
        ch = self._channels.get(topic)
        cid = ch[0] if ch is not None and ch[1] == type_name else self.add_channel(topic, type_name)
        if log_time_ns is None:
            log_time_ns = int(round((time.time() if t_s is None else t_s) * 1e9))
        self.write_channel(cid, data, int(log_time_ns), publish_time_ns)

    def write_channel(self, channel_id: int, data: bytes, log_time_ns: int,
                      publish_time_ns: Optional[int] = None) -> None:
        """:meth:`write` of CDR bytes on a channel of :meth:`add_channel` (its id), log time in
        integer ns: the recorder's path (nothing to resolve per message)."""
        with self._lock:
            if self._closed:
                raise ValueError(f"{self.path}: writer is closed")
            seq = self._seq[channel_id] = self._seq[channel_id] + 1
            self._w.add_message(channel_id, log_time_ns, data,
                                log_time_ns if publish_time_ns is None else int(publish_time_ns), seq)
            self.count += 1
            self._unflushed += 1
            if self._fh.pending or self._clock() - self._last_flush >= self.params.flush_period_s:
                self._flush_locked(force=False)

    def flush_if_due(self) -> None:
        """Write out the chunk in progress when flush_period_s has passed since the last flush."""
        with self._lock:
            if not self._closed:
                self._flush_locked(force=False)

    def flush(self) -> None:
        """Write out the chunk in progress now (the file stays a complete MCAP)."""
        with self._lock:
            if not self._closed:
                self._flush_locked(force=True)

    def _flush_locked(self, force: bool) -> None:
        now = self._clock()
        if self._unflushed and (force or now - self._last_flush >= self.params.flush_period_s):
            self._w.flush()                  # finishes the chunk (and its message indices)
            self._unflushed = 0
            self._last_flush = now
        self._fh.persist()                   # also chunks the Writer finished by size

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
        self.offered_qos: dict[str, list[dict]] = {}     # topic -> offered_qos_profiles (parsed)
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
                self.offered_qos[ch.topic] = parse_qos_yaml(ch.metadata.get("offered_qos_profiles", ""))
                _register_schema(msgs.normalize(sch.name), sch.data.decode("utf-8", "replace"))
            st = summary.statistics
            self._counts = {summary.channels[c].topic: n for c, n in (st.channel_message_counts.items() if st else [])}
            self.start_ns = st.message_start_time if st else None
            self.end_ns = st.message_end_time if st else None

    def metadata(self) -> dict[str, dict[str, str]]:
        """The file's metadata records by name (ours: ``provenance``, hri_runtime.provenance)."""
        from mcap.reader import make_reader

        with open(self.path, "rb") as fh:
            return {m.name: dict(m.metadata) for m in make_reader(fh).iter_metadata()}

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

        # a relative name asks for it resolved in the root namespace, as the writer records it
        want = {t if t.startswith("/") else "/" + t for t in topics} if topics is not None else None
        t0 = None if start_s is None else int(start_s * 1e9)
        t1 = None if end_s is None else int(end_s * 1e9)
        names: dict = {}                     # schema id -> normalised type name
        with open(self.path, "rb") as fh:
            r = make_reader(fh)
            summary = r.get_summary()
            if _chunks_in_time_order(summary):
                it = _chunkwise(fh, summary, want, t0, t1)
            else:
                it = ((sch, ch, m.log_time, m.publish_time, m.data) for sch, ch, m in r.iter_messages(
                    topics=list(want) if want is not None else None, start_time=t0, end_time=t1,
                    log_time_order=True))
            for sch, ch, log_time, publish_time, data in it:
                if sch is None or ch.message_encoding != "cdr":
                    continue
                t = names.get(sch.id)
                if t is None:
                    t = names[sch.id] = msgs.normalize(sch.name)
                if ch.topic not in getattr(self, "_topics", {}):
                    _register_schema(t, sch.data.decode("utf-8", "replace"))
                    self._topics = {**getattr(self, "_topics", {}), ch.topic: t}
                yield RecordedMessage(ch.topic, t, log_time, publish_time, bytes(data))


def _chunks_in_time_order(summary) -> bool:
    """The file's chunks (in file order) cover consecutive time ranges (each ends at or before the
    next one starts: what a recorder writing as time goes writes)."""
    if summary is None or not summary.chunk_indexes:
        return False
    ci = sorted(summary.chunk_indexes, key=lambda c: c.chunk_start_offset)
    return all(a.message_end_time <= b.message_start_time for a, b in zip(ci, ci[1:]))


def _chunkwise(fh, summary, want, t0, t1):
    """(schema, channel, log_time, publish_time, data) of a file whose chunks are in time order
    (:func:`_chunks_in_time_order`) in log-time order, ties in file order (as mcap's
    ``iter_messages(log_time_order=True)``): chunk after chunk, each chunk's message records
    (opcode, length; channel id u16, sequence u32, log time u64, publish time u64, data: the MCAP
    spec) unpacked in place and sorted (stable), without a heap over the whole file."""
    from mcap.data_stream import ReadDataStream
    from mcap.opcode import Opcode
    from mcap.records import Chunk
    from mcap.stream_reader import get_chunk_data_stream

    head, message = _RECORD.unpack_from, _MESSAGE.unpack_from
    channels = {cid: (summary.schemas.get(ch.schema_id), ch) for cid, ch in summary.channels.items()
                if want is None or ch.topic in want}
    for ci in sorted(summary.chunk_indexes, key=lambda c: c.chunk_start_offset):
        if (t0 is not None and ci.message_end_time < t0) or (t1 is not None and ci.message_start_time >= t1):
            continue
        if ci.message_index_offsets and not any(cid in channels for cid in ci.message_index_offsets):
            continue
        fh.seek(ci.chunk_start_offset + 1 + 8)          # opcode, record length
        stream, n = get_chunk_data_stream(Chunk.read(ReadDataStream(fh)))
        data = stream.read(n)
        out, off = [], 0
        while off < n:
            op, length = head(data, off)
            off += _RECORD.size
            if op == Opcode.MESSAGE:
                cid, _seq, log_time, publish_time = message(data, off)
                sc = channels.get(cid)
                if sc is not None and (t0 is None or log_time >= t0) and (t1 is None or log_time < t1):
                    out.append((sc[0], sc[1], log_time, publish_time, data[off + _MESSAGE.size:off + length]))
            off += length
        out.sort(key=lambda x: x[2])
        yield from out


_RECORD = struct.Struct("<BQ")          # an MCAP record: opcode, content length
_MESSAGE = struct.Struct("<HIQQ")       # a Message record's fixed part


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
        # a quiet topic must not keep its last messages in memory: the chunk goes out on time
        self.flush_timer = node.create_timer(self.params.flush_period_s, writer.flush_if_due)

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
                cid = self.writer.add_channel(topic, t, qos=[e.qos for e in graph.endpoints
                                                            if e.name == topic and e.kind == "PUBLISHER"
                                                            and e.qos is not None] or None)
            except msgs.UnknownTypeError as e:
                self.skipped[topic] = str(e)
                continue
            from hri_runtime.cli.format import matching_qos

            cid = cid if topic.startswith("/") else None       # else write() resolves the name
            self.subs[topic] = self.node.create_subscription(
                t, topic, lambda data, _t=topic, _ty=t, _c=cid: self._on(data, _t, _ty, _c),
                qos=matching_qos(graph, topic, self.params.queue_depth), raw=True)

    def _on(self, data: bytes, topic: str, type_name: str, channel_id: Optional[int] = None) -> None:
        if channel_id is not None and type(data) is bytes:
            self.writer.write_channel(channel_id, data, self.node.get_clock().now_ns())
        else:
            self.writer.write(topic, data, type_name=type_name, log_time_ns=self.node.get_clock().now_ns())

    def stop(self) -> None:
        self.timer.cancel()
        self.flush_timer.cancel()
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

def _run_until(ctx, stop: StopFlag, duration_s: Optional[float], done=lambda: False) -> None:
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


def _signals(stop: StopFlag):
    def on_signal(signum, _frame):
        stop.set()
    return {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}


def record_main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="hri record", description="Record topics to a ROS 2 MCAP file "
                                 "(on the HRI_TRANSPORT context).")
    ap.add_argument("topics", nargs="*", help="topics (default: all discovered)")
    ap.add_argument("-o", "--output", required=True, help="output .mcap file")
    ap.add_argument("--duration", type=errors.positive_float, help="stop after this many seconds")
    a = ap.parse_args(argv)
    from hri_runtime.context import TransportUnavailableError, get_default_context
    from hri_runtime.node import Node

    try:  # the output first: an unwritable path fails at once, before any transport is opened
        writer = McapWriter(a.output, library="hri record")
    except OSError as e:
        print(f"hri record: error: cannot write {a.output}: {e.strerror or e}", file=sys.stderr)
        return errors.EXIT_USAGE
    try:
        ctx = get_default_context()
    except TransportUnavailableError as e:
        writer.close()
        print(f"error: {e}", file=sys.stderr)
        return 2
    node = Node("hri_record", context=ctx)
    stop = StopFlag()
    old = _signals(stop)
    with writer as w:
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
        print("\n".join(bag_info_lines(reader)))
        return 0
    from hri_runtime.context import TransportUnavailableError, get_default_context
    from hri_runtime.node import Node

    try:
        ctx = get_default_context()
    except TransportUnavailableError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    node = Node("hri_play", context=ctx)
    player = Player(node, reader, rate=a.rate, topics=a.topics, loop=a.loop, remap=remap)
    stop = StopFlag()
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


def _stamp(ns: Optional[int]) -> str:
    if ns is None:
        return "-"
    t = time.localtime(ns // 1_000_000_000)
    return f"{time.strftime('%b %e %Y %H:%M:%S', t)}.{ns % 1_000_000_000:09d} ({ns / 1e9:.9f})"


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    return f"{n} B"


def bag_info_lines(reader: McapReader) -> list[str]:
    """``ros2 bag info`` of an MCAP file: files, size, duration, start/end, message count, and per
    topic its type, count and serialization format (ros2's fields, in its order), then the mean
    rate (messages per second between its first and last message) and the offered QoS."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    counts: dict[str, int] = {}
    for m in reader.messages():
        first.setdefault(m.topic, m.log_time_ns)
        last[m.topic] = m.log_time_ns
        counts[m.topic] = counts.get(m.topic, 0) + 1
    start = min(first.values()) if first else None
    end = max(last.values()) if last else None
    dur_s = ((end - start) * 1e-9) if first else 0.0
    lines = ["", f"Files:             {reader.path.name}", f"Bag size:          {_size(reader.path.stat().st_size)}",
             "Storage id:        mcap", f"Duration:          {dur_s:.9f}s", f"Start:             {_stamp(start)}",
             f"End:               {_stamp(end)}", f"Messages:          {sum(counts.values())}"]
    head = "Topic information: "
    for i, (topic, ty) in enumerate(sorted(reader.topics().items())):
        n = counts.get(topic, 0)
        span = (last.get(topic, 0) - first.get(topic, 0)) * 1e-9
        rate = f"{(n - 1) / span:.2f} Hz" if n > 1 and span > 0 else "-"
        qos = "; ".join(f"{q['reliability'].upper()}, {q['durability'].upper()}, {q['history'].upper()}"
                        + (f" ({q['depth']})" if q["history"] == "keep_last" else "")
                        for q in reader.offered_qos.get(topic, [])) or "-"
        lines.append(f"{head if i == 0 else ' ' * len(head)}Topic: {topic} | Type: {ty} | Count: {n} | "
                     f"Serialization Format: cdr | Rate: {rate} | QoS: {qos}")
    if not reader.topics():
        lines.append(head)
    lines += ["Service:           0", "Service information: "]
    return lines


def bag_main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="hri bag", description="Recordings (ros2 bag); record/play: hri record, hri play.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("info", help="duration, counts, rates and offered QoS of a recording")
    p.add_argument("file", help=".mcap file (or a rosbag2 directory holding one)")
    a = ap.parse_args(argv)
    path = Path(a.file)
    if path.is_dir():
        found = sorted(path.glob("*.mcap"))
        if not found:
            print(f"error: {a.file}: no .mcap file in this directory", file=sys.stderr)
            return 2
        path = found[0]
    try:
        reader = McapReader(path)
        lines = bag_info_lines(reader)
    except Exception as e:  # noqa: BLE001  (missing / not an MCAP file)
        print(f"error: cannot read {a.file}: {str(e).splitlines()[0] if str(e) else type(e).__name__}",
              file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0
