"""Controller-pose receiver over real UDP: validation counters, sequence rules, link health."""
from __future__ import annotations

import socket
import time

import pytest

from hri_arm_teleop.core import vr_packet as vp
from hri_arm_teleop.vr_link import ArmVrReceiver
from hri_runtime.clock import SimClock
from hri_runtime.config.tree import load_robot_config

CFG = load_robot_config("fr3")



@pytest.fixture
def link():
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    clock = SimClock()
    yield ArmVrReceiver(rx, clock, CFG), tx, rx.getsockname(), clock
    rx.close()
    tx.close()


def pkt(seq, **kw):
    return vp.encode(vp.ControllerPose(seq, seq * 0.02, (0.0, 1.2, 0.4), (0, 0, 0, 1), **kw))


def drain(rx, expected, timeout_s=2.0):
    out, deadline = [], time.monotonic() + timeout_s
    while len(out) < expected and time.monotonic() < deadline:
        out += rx.poll()
        time.sleep(0.001)
    return out


def test_sequence_rules_and_rejections(link):
    rx, tx, addr, clock = link
    datagrams = [pkt(0), pkt(1), pkt(1), pkt(0), pkt(5), b"garbage", pkt(6)[:-1], pkt(6)]
    for d in datagrams:
        tx.sendto(d, addr)
    got = drain(rx, 4)
    time.sleep(0.05)
    got += rx.poll()
    assert [p.sequence for p in got] == [0, 1, 5, 6]
    s = rx.stats
    assert (s.duplicates, s.out_of_order, s.gaps, s.lost_in_gaps) == (1, 1, 1, 3)
    assert s.rejected == {"bad_size": 2}
    assert s.received == len(datagrams)


def test_sequence_wraps_at_2_31(link):
    rx, tx, addr, _ = link
    for seq in ((1 << 31) - 2, (1 << 31) - 1, 0, 1):
        tx.sendto(pkt(seq), addr)
    got = drain(rx, 4)
    assert [p.sequence for p in got] == [(1 << 31) - 2, (1 << 31) - 1, 0, 1]
    assert rx.stats.gaps == 0 and rx.stats.out_of_order == 0


def test_health_rate_and_disconnection(link):
    rx, tx, addr, clock = link
    for k in range(250):  # 5 s at 50 Hz (sender clock = injected clock)
        clock.set_s(k * 0.02)
        tx.sendto(pkt(k, clutch=True), addr)
        drain(rx, 1)
    h = rx.health()
    assert h["connected"] and h["rate_hz"] == pytest.approx(50.0, rel=0.02) and h["level"] == "OK"
    clock.advance(CFG["teleop"]["vr"]["disconnect_timeout_s"] + 0.5)
    h = rx.health()
    assert not h["connected"] and h["level"] == "ERROR" and "disconnected" in h["message"]


def test_arm_emulate_streams_valid_packets_with_clutch_presses(link, capsys):
    from hri_arm_teleop.emulate import main

    rx, _, addr, _ = link
    assert main(["--host", addr[0], "--port", str(addr[1]), "--seconds", "1.3"]) == 0
    got = drain(rx, 10)
    time.sleep(0.05)
    got += rx.poll()
    assert len(got) >= 10 and rx.stats.rejected == {}
    seqs = [p.sequence for p in got]
    assert seqs == sorted(seqs)
    assert not got[0].clutch and any(p.clutch for p in got)  # settle, then the first press
    assert "sent" in capsys.readouterr().out


def test_a_second_sender_is_dropped_while_the_first_holds_the_link(link):
    """hri_pulse's peer lock (by host): only one headset drives the arm; another host's packets
    are counted, not used."""
    rx, tx, addr, clock = link
    other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    other.bind(("127.0.0.2", 0))   # another host on the loopback network
    try:
        tx.sendto(pkt(0, clutch=True), addr)
        assert [p.sequence for p in drain(rx, 1)] == [0]
        other.sendto(pkt(1, clutch=True), addr)
        tx.sendto(pkt(1, clutch=True), addr)
        got = drain(rx, 1)
        time.sleep(0.05)
        got += rx.poll()
        assert [p.sequence for p in got] == [1]
        assert rx.stats.rejected == {"foreign_peer": 1}
    finally:
        other.close()


def test_bind_refuses_a_taken_port_in_one_line_and_binds_any_free_one():
    import copy
    import threading

    from hri_arm_teleop.vr_link import VrReader, bind_vr_receiver

    cfg = copy.deepcopy(CFG)
    cfg["teleop"]["vr"].update(bind_address="127.0.0.1", port=0)
    rx = bind_vr_receiver(cfg, SimClock())
    taken = copy.deepcopy(cfg)
    taken["teleop"]["vr"]["port"] = rx.address[1]
    with pytest.raises(RuntimeError, match=r"cannot receive VR packets on udp://127\.0\.0\.1:\d+ .*teleop\.vr\.port"):
        bind_vr_receiver(taken, SimClock())
    # the reader thread hands each accepted pose on as it arrives, only once the consumer is ready
    lock, got, ready = threading.Lock(), [], threading.Event()
    arrived = threading.Semaphore(0)
    reader = VrReader(rx, lock, ready.is_set, lambda p: (got.append(p.sequence), arrived.release()), wait_s=0.01).start()
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        tx.sendto(pkt(1), rx.address)
        assert not arrived.acquire(timeout=0.2) and got == []      # queued while not ready
        ready.set()
        assert arrived.acquire(timeout=5.0) and got == [1]
        tx.sendto(pkt(2), rx.address)
        assert arrived.acquire(timeout=5.0) and got == [1, 2]
    finally:
        reader.stop()
        tx.close()
        rx.close()
    assert not reader._thread.is_alive()


@pytest.mark.parametrize("event_driven", [False, True])
def test_vr_input_opens_and_closes_at_run_time_and_delivers_polled_or_on_arrival(event_driven):
    import copy
    import threading

    from hri_arm_teleop.vr_link import VrInput
    from hri_runtime.diagnostics import DiagnosticStatusWrapper

    cfg = copy.deepcopy(CFG)
    cfg["teleop"]["vr"].update(bind_address="127.0.0.1", port=0)
    lock, opened, now = threading.Lock(), [], []
    arrived = threading.Semaphore(0)
    vr = VrInput(cfg, SimClock(), lock, event_driven=event_driven, ready=lambda: True,
                 on_pose_now=lambda p: (now.append(p.sequence), arrived.release()), on_open=opened.append)
    closed = DiagnosticStatusWrapper()
    vr.diagnose(closed)
    assert vr.receiver is None and vr.poll() == [] and "closed" in closed.message
    assert vr.set_enabled(True) is None
    assert opened == [vr.address] and vr.address[1] > 0
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        tx.sendto(pkt(1), vr.address)
        if event_driven:
            assert arrived.acquire(timeout=5.0) and now == [1]
            assert vr.poll() == []                   # the reader thread owns the socket
        else:
            with lock:
                got = drain(vr, 1)
            assert [p.sequence for p in got] == [1] and now == []
        stat = DiagnosticStatusWrapper()
        vr.diagnose(stat)
        assert dict(stat.values)["accepted"] == "1"
    finally:
        tx.close()
    assert vr.set_enabled(False) is None and vr.receiver is None
    assert vr.close() is False                       # already closed
    taken = copy.deepcopy(cfg)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as holder:
        holder.bind(("127.0.0.1", 0))
        taken["teleop"]["vr"]["port"] = holder.getsockname()[1]
        busy = VrInput(taken, SimClock(), lock, event_driven=False, ready=lambda: True, on_pose_now=print)
        assert "cannot receive VR packets" in busy.set_enabled(True) and busy.receiver is None
