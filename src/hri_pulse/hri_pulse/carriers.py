"""Carriers: move datagrams between the headset and ``LinkReceiver`` (one protocol core, two
carriers). Both drain on a bounded budget per call, so a flood can never hold the caller.

* ``UdpCarrier``: a bound, non-blocking UDP socket (receive buffer ``rcvbuf_bytes`` bounds the
  memory a flood can take: the kernel drops what does not fit). Peer = ``(host, port)``.
* ``ZmqCarrier``: NetMQ/ZeroMQ PUB/SUB; the robot binds a SUB on ``sub_endpoint`` (Unity -> robot,
  5565) and a PUB on ``pub_endpoint`` (robot -> Unity, 5566). Peer = ``"zmq"``.
"""
from __future__ import annotations

import socket
from typing import List, Optional, Tuple


class UdpCarrier:
    kind = "udp"

    def __init__(self, sock: socket.socket, max_packets_per_cycle: int, max_datagram_bytes: int):
        self.sock = sock
        self.sock.setblocking(False)
        self.budget = max_packets_per_cycle
        self.max_bytes = max_datagram_bytes
        self.budget_exhausted = 0          # drains that stopped on the budget (flood indicator)
        self.send_errors = 0

    @classmethod
    def bind(cls, address: str, port: int, rcvbuf_bytes: int, max_packets_per_cycle: int,
             max_datagram_bytes: int) -> "UdpCarrier":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf_bytes)
        s.bind((address, port))
        return cls(s, max_packets_per_cycle, max_datagram_bytes)

    @property
    def address(self) -> Tuple[str, int]:
        return self.sock.getsockname()

    def fileno(self) -> int:
        return self.sock.fileno()

    def drain(self, budget: Optional[int] = None) -> List[tuple]:
        """Up to ``budget`` (default max_packets_per_cycle) datagrams as (data, peer)."""
        n = self.budget if budget is None else budget
        out = []
        recv = self.sock.recvfrom
        mb = self.max_bytes
        for _ in range(n):
            try:
                out.append(recv(mb))
            except (BlockingIOError, InterruptedError):
                return out
            except OSError:          # e.g. ICMP port unreachable reported on a UDP socket
                continue
        self.budget_exhausted += 1
        return out

    def send(self, data: bytes, peer) -> None:
        try:
            self.sock.sendto(data, peer)
        except OSError:
            self.send_errors += 1

    def close(self) -> None:
        self.sock.close()


class ZmqCarrier:
    kind = "zmq"
    PEER = "zmq"

    def __init__(self, sub_endpoint: str, pub_endpoint: str, rcvhwm: int, max_packets_per_cycle: int,
                 zmq_context=None):
        import zmq
        self._zmq = zmq
        self.ctx = zmq_context or zmq.Context.instance()
        self.sub = self.ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.RCVHWM, rcvhwm)
        self.sub.setsockopt(zmq.LINGER, 0)
        self.sub.setsockopt(zmq.SUBSCRIBE, b"")
        self.sub.bind(sub_endpoint)
        self.pub = self.ctx.socket(zmq.PUB)
        self.pub.setsockopt(zmq.LINGER, 0)
        self.pub.bind(pub_endpoint)
        self.budget = max_packets_per_cycle
        self.budget_exhausted = 0
        self.send_errors = 0

    def drain(self, budget: Optional[int] = None) -> List[tuple]:
        n = self.budget if budget is None else budget
        out = []
        zmq = self._zmq
        for _ in range(n):
            try:
                out.append((self.sub.recv(zmq.NOBLOCK), self.PEER))
            except zmq.Again:
                return out
        self.budget_exhausted += 1
        return out

    def send(self, data: bytes, peer=None) -> None:
        try:
            self.pub.send(data, self._zmq.NOBLOCK)
        except self._zmq.ZMQError:
            self.send_errors += 1

    def close(self) -> None:
        self.sub.close(0)
        self.pub.close(0)
