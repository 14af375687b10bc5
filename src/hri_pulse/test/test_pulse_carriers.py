"""Carriers with real sockets: bounded drain, kernel host filter, ZeroMQ PUB/SUB."""
import select
import socket
import time

import pytest
from hri_pulse.carriers import UdpCarrier, ZmqCarrier, host_filter_program


@pytest.fixture
def udp(pulse_section):
    u = pulse_section["udp"]
    c = UdpCarrier.bind("127.0.0.1", 0, u["rcvbuf_bytes"], 8, u["max_datagram_bytes"])
    yield c
    c.close()


def sender(host):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((host, 0))
    return s


def wait_readable(sock):
    select.select([sock], [], [], 0.5)


def test_drain_is_bounded_by_the_budget(udp):
    s = sender("127.0.0.1")
    for i in range(20):
        s.sendto(bytes([i]), udp.address)
    wait_readable(udp.sock)
    assert len(udp.drain()) == 8 and udp.budget_exhausted == 1
    assert len(udp.drain(100)) == 12 and udp.budget_exhausted == 1
    assert udp.drain() == []


def test_bpf_program_layout():
    prog = host_filter_program("127.0.0.1")
    assert len(prog) == 4 * 8
    assert prog[8 + 4: 8 + 8] == (0x7F000001).to_bytes(4, "little")


def test_kernel_host_filter_admits_only_the_locked_host_any_port(udp):
    a, a2, b = sender("127.0.0.1"), sender("127.0.0.1"), sender("127.0.0.2")
    assert udp.set_host_filter("127.0.0.1")
    for s, m in ((a, b"a"), (b, b"b"), (a2, b"a2")):
        s.sendto(m, udp.address)
    wait_readable(udp.sock)
    time.sleep(0.01)
    assert sorted(d for d, _ in udp.drain(100)) == [b"a", b"a2"]
    udp.clear_host_filter()
    assert udp.filter_host is None
    b.sendto(b"b2", udp.address)
    wait_readable(udp.sock)
    assert [d for d, _ in udp.drain(100)] == [b"b2"]


def test_zmq_carrier_roundtrip(pulse_section):
    import zmq
    c = ZmqCarrier("tcp://127.0.0.1:*", "tcp://127.0.0.1:*", pulse_section["zmq"]["rcvhwm"], 16)
    pub = zmq.Context.instance().socket(zmq.PUB)
    pub.connect(c.sub.getsockopt(zmq.LAST_ENDPOINT).decode())
    try:
        got = []
        for _ in range(200):                 # slow joiner: resend until the SUB sees one
            pub.send(b"x" * 32)
            if c.sub.poll(10):
                got = c.drain()
                break
        assert got and got[0] == (b"x" * 32, "zmq")
    finally:
        pub.close(0)
        c.close()


def test_a_carrier_set_shares_one_budget_per_cycle_and_replies_on_the_peers_carrier(pulse_section):
    from hri_pulse.carriers import CarrierSet

    u = pulse_section["udp"]
    a = UdpCarrier.bind("127.0.0.1", 0, u["rcvbuf_bytes"], 100, u["max_datagram_bytes"])
    fb = sender("127.0.0.1")                                   # the headset's feedback socket
    link = CarrierSet([a], budget=5, feedback_port=fb.getsockname()[1])
    s = sender("127.0.0.1")
    try:
        for i in range(8):
            s.sendto(bytes([i]), a.address)
        wait_readable(a.sock)
        first = link.drain()
        assert [d for d, _ in first] == [bytes([i]) for i in range(5)]
        assert link.drain() == [] and link.left == 0            # the cycle's budget is spent
        link.new_cycle()
        assert [d for d, _ in link.drain()] == [bytes([i]) for i in range(5, 8)]
        link.send(b"pose", first[0][1])                         # to the peer's host, at feedback_port
        wait_readable(fb)
        assert fb.recvfrom(100) == (b"pose", a.address)
        link.feedback_port = 0                                  # 0: the peer's own port
        link.send(b"pose2", first[0][1])
        wait_readable(s)
        assert s.recv(100) == b"pose2"
    finally:
        link.close()
        s.close()
        fb.close()


def test_the_waker_calls_back_once_per_arming_when_the_socket_is_readable(udp):
    import threading

    from hri_pulse.carriers import ReadableWaker

    calls = threading.Semaphore(0)
    waker = ReadableWaker(udp.sock, calls.release, wait_s=0.01)
    try:
        s = sender("127.0.0.1")
        s.sendto(b"a", udp.address)
        assert calls.acquire(timeout=5.0)
        s.sendto(b"b", udp.address)                             # still readable, but not re-armed
        assert not calls.acquire(timeout=0.2)
        waker.arm()
        assert calls.acquire(timeout=5.0)
        s.close()
    finally:
        waker.close()
    assert not waker._thread.is_alive()


def test_opening_the_link_binds_loopback_and_refuses_an_open_address_without_authentication(pulse_section):
    import copy

    from hri_pulse.carriers import CarrierSet
    from hri_pulse.core import PulseConfig
    from hri_runtime.security.bind import StartupRefused

    sec = copy.deepcopy(pulse_section)
    sec["udp"].update(bind_address="127.0.0.1", port=0)
    sec["zmq"]["enabled"] = False
    link = CarrierSet.open(PulseConfig.from_config(sec), "test")
    try:
        assert [c.kind for c in link.carriers] == ["udp"] and link.zmq is None
        assert link.udp.address[0] == "127.0.0.1" and link.budget == sec["udp"]["max_packets_per_cycle"]
    finally:
        link.close()
    sec["udp"]["bind_address"] = "0.0.0.0"
    sec["auth"]["mode"] = "off"
    with pytest.raises(StartupRefused, match="test pulse.udp.bind_address '0.0.0.0' is not loopback"):
        CarrierSet.open(PulseConfig.from_config(sec), "test")
