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
