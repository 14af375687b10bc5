"""Carriers: move datagrams between the headset and ``LinkReceiver`` (one protocol core, two
carriers). Both drain on a bounded budget per call, so a flood can never hold the caller.

* ``UdpCarrier``: a bound, non-blocking UDP socket (receive buffer ``rcvbuf_bytes`` bounds the
  memory a flood can take: the kernel drops what does not fit). Peer = ``(host, port)``.
* ``ZmqCarrier``: NetMQ/ZeroMQ PUB/SUB; the robot binds a SUB on ``sub_endpoint`` (Unity -> robot,
  5565) and a PUB on ``pub_endpoint`` (robot -> Unity, 5566). Peer = ``"zmq"``.
* ``CarrierSet``: the link's carriers drained on one budget per cycle, and a reply routed back on
  the carrier its peer came from.
* ``ReadableWaker``: a thread that calls back once when a socket becomes readable (a low-latency
  drain on a threaded executor), then waits to be re-armed.
"""
from __future__ import annotations

import ctypes
import select
import socket
import struct
import threading
from typing import Callable, List, Optional, Sequence, Tuple

SO_ATTACH_FILTER, SO_DETACH_FILTER = 26, 27     # Linux <asm-generic/socket.h>
_SKF_NET_OFF = -0x100000                         # classic BPF: offsets relative to the IP header


def host_filter_program(ip: str) -> bytes:
    """Classic BPF: accept IPv4 datagrams whose source address is ``ip``, drop the rest.

        ld  [SKF_NET_OFF + 12]      ; IPv4 source address
        jeq #ip, accept, drop
        accept: ret #0xffffffff
        drop:   ret #0
    """
    k = int.from_bytes(socket.inet_aton(ip), "big")
    prog = [(0x20, 0, 0, (_SKF_NET_OFF + 12) & 0xFFFFFFFF), (0x15, 0, 1, k),
            (0x06, 0, 0, 0xFFFFFFFF), (0x06, 0, 0, 0)]
    return b"".join(struct.pack("HBBI", *ins) for ins in prog)


class UdpCarrier:
    kind = "udp"

    def __init__(self, sock: socket.socket, max_packets_per_cycle: int, max_datagram_bytes: int):
        self.sock = sock
        self.sock.setblocking(False)
        self.budget = max_packets_per_cycle
        self.max_bytes = max_datagram_bytes
        self.budget_exhausted = 0          # drains that stopped on the budget (flood indicator)
        self.send_errors = 0
        self.filter_host: Optional[str] = None   # host the kernel filter admits (None = off)
        self.filter_engagements = 0
        self.filter_errors = 0
        self._filter_buf = None

    def set_host_filter(self, ip: str) -> bool:
        """Kernel-side peer lock: only datagrams from ``ip`` reach this socket (any port, so a
        restarted app on a new port still gets through). False if the OS refuses (counted)."""
        try:
            buf = ctypes.create_string_buffer(host_filter_program(ip))
            fprog = struct.pack("HxxxxxxQ", len(buf.raw) // 8, ctypes.addressof(buf))
            self.sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
        except (OSError, ValueError):
            self.filter_errors += 1
            return False
        self._filter_buf = buf        # the kernel copies the program; keep it anyway until detach
        self.filter_host = ip
        self.filter_engagements += 1
        return True

    def clear_host_filter(self) -> None:
        if self.filter_host is None:
            return
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, SO_DETACH_FILTER, 0)
        except OSError:
            self.filter_errors += 1
        self.filter_host, self._filter_buf = None, None

    def host_filter(self, ip: Optional[str]) -> bool:
        """``ip``: admit only that host (:meth:`set_host_filter`); None: remove the filter.
        The ``host_filter`` a :class:`hri_pulse.core.flood.FloodFilter` drives."""
        if ip is None:
            self.clear_host_filter()
            return True
        return self.set_host_filter(ip)

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


class CarrierSet:
    """The carriers of one link (UDP first, then ZeroMQ if any), drained on one shared budget per
    cycle (:meth:`new_cycle`): however many drains run in a cycle, at most ``budget`` datagrams
    are taken, so a flood can never starve the caller. Replies (:meth:`send`) go back on the
    carrier the peer came on: ZeroMQ's PUB, or UDP to the peer's host at ``feedback_port`` (0:
    the peer's own port)."""

    def __init__(self, carriers: Sequence, budget: int, feedback_port: int = 0):
        self.carriers = list(carriers)
        self.udp = next((c for c in self.carriers if c.kind == "udp"), None)
        self.zmq = next((c for c in self.carriers if c.kind == "zmq"), None)
        self.budget = budget
        self.left = budget
        self.feedback_port = feedback_port

    @classmethod
    def open(cls, params, who: str) -> "CarrierSet":
        """The headset link's carriers of ``params`` (``hri_pulse.core.PulseConfig``): UDP on
        ``udp.bind_address``:``udp.port`` and, with ``zmq.enabled``, ZeroMQ; budget
        ``udp.max_packets_per_cycle``. Off loopback only with authentication (StartupRefused
        naming ``who``'s setting: one line, exit 2; ``hri_pulse.core.auth.check_receiver_bind``)."""
        from hri_pulse.core.auth import check_receiver_bind

        u, z = params.udp, params.zmq
        check_receiver_bind(f"{who} pulse.udp.bind_address", u.bind_address, params.auth)
        if z.enabled and z.sub_endpoint.startswith("tcp://"):
            check_receiver_bind(f"{who} pulse.zmq.sub_endpoint", z.sub_endpoint[6:].rpartition(":")[0], params.auth)
        carriers = [UdpCarrier.bind(u.bind_address, u.port, u.rcvbuf_bytes, u.max_packets_per_cycle,
                                    u.max_datagram_bytes)]
        if z.enabled:
            try:
                carriers.append(ZmqCarrier(z.sub_endpoint, z.pub_endpoint, z.rcvhwm, u.max_packets_per_cycle))
            except Exception:
                carriers[0].close()
                raise
        return cls(carriers, u.max_packets_per_cycle, feedback_port=u.feedback_port)

    def new_cycle(self) -> None:
        self.left = self.budget

    def drain(self) -> List[tuple]:
        """(data, peer) from each carrier in order, within what is left of the cycle's budget."""
        out: List[tuple] = []
        for carrier in self.carriers:
            if self.left <= 0:
                break
            batch = carrier.drain(self.left)
            self.left -= len(batch)
            out.extend(batch)
        return out

    def send(self, data: bytes, peer) -> None:
        if peer == ZmqCarrier.PEER:
            self.zmq.send(data, None)
        else:
            self.udp.send(data, (peer[0], self.feedback_port or peer[1]))

    @property
    def budget_exhausted(self) -> int:
        """Drains that stopped on a carrier's budget, over every carrier (flood indicator)."""
        return sum(c.budget_exhausted for c in self.carriers)

    def close(self) -> None:
        for c in self.carriers:
            c.close()


class ReadableWaker:
    """Calls ``on_readable()`` (from its own thread) once ``sock`` is readable, then waits until
    :meth:`arm` is called again: at most one call per arming, so the callbacks it posts can never
    crowd out the owner's periodic work. Starts armed; :meth:`close` ends the thread."""

    def __init__(self, sock, on_readable: Callable[[], None], name: str = "waker", wait_s: float = 0.1):
        self.sock, self.on_readable, self.wait_s = sock, on_readable, wait_s
        self._armed = threading.Event()
        self._armed.set()
        self._closing = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def arm(self) -> None:
        self._armed.set()

    def close(self, timeout_s: float = 1.0) -> None:
        self._closing = True
        self._armed.set()
        self._thread.join(timeout=timeout_s)

    def _run(self) -> None:
        while not self._closing:
            if not self._armed.wait(self.wait_s):
                continue
            try:
                r, _, _ = select.select([self.sock], [], [], self.wait_s)
            except (OSError, ValueError):
                return
            if r and not self._closing:
                self._armed.clear()
                self.on_readable()
