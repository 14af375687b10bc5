"""``hri record`` survives being killed: a real recorder process on a real Zenoh router, SIGKILLed
while recording, leaves a file the ``mcap`` library's normal reader reads, holding all but (at
most) the last ``runtime.recording.flush_period_s`` of messages; SIGTERM ends it cleanly with an
indexed file; the writer is a complete MCAP after every flush (in-process, no timing)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from mcap.exceptions import McapError

from hri_runtime import msgs
from hri_runtime.bag.recording import McapReader, McapWriter, RecordingParams

WAIT_S = 60.0


def _read_all(path):
    """Every message through the mcap library's normal reader (make_reader + iter_messages)."""
    from mcap.reader import make_reader

    with open(path, "rb") as fh:
        return [(ch.topic, m.log_time, bytes(m.data)) for _s, ch, m in make_reader(fh).iter_messages()]


def test_writer_file_is_complete_after_every_flush(tmp_path):
    now = [0.0]
    params = RecordingParams(flush_period_s=1.0, compression="zstd")
    path = tmp_path / "w.mcap"
    w = McapWriter(path, params=params, clock=lambda: now[0])
    assert _read_all(path) == []                       # valid from the first moment
    for i in range(50):                                # 0.0 .. 0.98 s: nothing due yet
        now[0] = i * 0.02
        w.write("/c", msgs.new("std_msgs/msg/String", data=f"m{i}"), t_s=now[0])
    assert _read_all(path) == []
    now[0] = 1.0                                       # due: the chunk goes out with a footer
    w.write("/c", msgs.new("std_msgs/msg/String", data="m50"), t_s=now[0])
    assert len(_read_all(path)) == 51
    now[0] = 1.5
    w.write("/c", msgs.new("std_msgs/msg/String", data="m51"), t_s=now[0])
    w.flush_if_due()
    assert len(_read_all(path)) == 51                  # the last half second is still in memory
    now[0] = 2.0
    w.flush_if_due()                                   # a quiet period flushes on the timer
    assert len(_read_all(path)) == 52
    w.close()
    r = McapReader(path)                               # closed: indexed, with statistics
    assert r.message_counts() == {"/c": 52}


def test_unwritable_path_fails_in_the_constructor(tmp_path):
    with pytest.raises(OSError):
        McapWriter(tmp_path / "no_such_dir" / "x.mcap")


@pytest.fixture(scope="module")
def router():
    from hri_runtime.impl.zenoh_backend import start_router

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    ep = f"tcp/127.0.0.1:{port}"
    r = start_router([ep])
    yield ep
    r.close()


@pytest.fixture
def talker(router):
    """A publisher at up to 500 Hz on /rec_chatter (data = its counter) in this process."""
    from hri_runtime.node import Node
    from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams

    ctx = ZenohContext(ZenohParams.defaults().with_(connect_endpoints=[router]))
    node = Node("rec_talker", context=ctx)
    pub = node.create_publisher("std_msgs/msg/String", "/rec_chatter", qos=10)
    stop = threading.Event()

    def run():
        n = 0
        while not stop.is_set():
            n += 1
            pub.publish(msgs.new("std_msgs/msg/String", data=str(n)))
            stop.wait(0.002)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    yield
    stop.set()
    t.join(5)
    ctx.shutdown()
    ctx.close()


def _recorder(router, path):
    env = dict(os.environ, HRI_TRANSPORT="zenoh", HRI_ZENOH_CONNECT=f"[{router}]")
    return subprocess.Popen([sys.executable, "-m", "hri_runtime.cli.main", "record", "-o", str(path), "/rec_chatter"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_first_message(proc, path) -> None:
    end = time.monotonic() + WAIT_S
    while time.monotonic() < end:
        assert proc.poll() is None, proc.communicate()[1]
        try:
            if path.exists() and _read_all(path):
                return
        except McapError:       # created, its first chunk not written yet: the next poll
            pass
        time.sleep(0.1)
    pytest.fail("the recorder wrote no message")


def test_sigkill_after_3_s_leaves_a_readable_file_with_at_least_2_s(router, talker, tmp_path):
    path = tmp_path / "killed.mcap"
    proc = _recorder(router, path)
    try:
        _wait_first_message(proc, path)    # the first flushed chunk: recording for >= 1 s
        time.sleep(3.0)                    # wall time by nature: a real process is killed mid-run
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=WAIT_S)
    got = _read_all(path)                  # the mcap library's normal reader, no exception
    assert got and {topic for topic, _t, _d in got} == {"/rec_chatter"}
    span_s = (got[-1][1] - got[0][1]) * 1e-9
    assert span_s >= 2.0, f"only {span_s:.2f} s of messages survived the SIGKILL"
    counters = [int(msgs.deserialize(d, "std_msgs/msg/String").data) for _t, _l, d in got]
    assert counters == sorted(counters)   # in order, no torn chunk
    assert McapReader(path).message_counts() == {"/rec_chatter": len(got)}   # hri play reads it too


def test_sigterm_ends_the_recording_cleanly(router, talker, tmp_path):
    path = tmp_path / "term.mcap"
    proc = _recorder(router, path)
    try:
        _wait_first_message(proc, path)
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    r = McapReader(path)
    assert r.message_counts().get("/rec_chatter", 0) == len(_read_all(path)) > 0
