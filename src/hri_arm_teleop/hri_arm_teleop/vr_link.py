"""Receiving controller-pose packets on ``hri_pulse``'s link machinery (one implementation).

``ArmVrReceiver`` = ``hri_pulse.carriers.UdpCarrier`` (an injected, bound UDP socket drained on a
bounded budget) + ``hri_pulse.core.LinkReceiver`` with the arm's codec
(``vr_packet.ControllerPoseCodec``): allow-list / peer lock, validation (every rejection counted
by cause), sequence rules (mod 2^31, duplicates and stale packets dropped, gaps classified,
restart confirmation) and link health (rate over a sliding window, disconnection after
``teleop.vr.disconnect_timeout_s``). The rules' numbers come from the ``pulse`` config section
(``pulse.sequence``, ``pulse.link``, ``pulse.health``, ``pulse.udp``); the expected rate and the
timeout of this link from ``teleop.vr``. Authentication: ``pulse.auth`` as for the pulse packet
(``hri_pulse.core.auth``, the one framing of both headset links: trailer, key ring, replay window).

``bind_vr_receiver`` opens the receiver on ``teleop.vr`` (the checks and the one-line errors of a
bind); ``VrReader`` is the event-driven input: a thread that hands each accepted pose on on arrival.
"""
from __future__ import annotations

import dataclasses
import logging
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from hri_arm_teleop.core import vr_packet as vp
from hri_arm_teleop.parameters_gen import TeleopVrParams
from hri_pulse.carriers import UdpCarrier
from hri_pulse.core.auth import Authenticator, AuthParams, check_receiver_bind
from hri_pulse.core.health import LEVEL_NAMES, HealthParams
from hri_pulse.core.link import LinkParams, LinkReceiver
from hri_pulse.core.sequence import SequenceParams
from hri_pulse.parameters_gen import PulseUdpParams
from hri_runtime.config.tree import ConfigError

log = logging.getLogger(__name__)


@dataclass
class LinkStats:
    """A flat view of the receiver's counters (rejected: only the causes that occurred)."""

    received: int = 0
    accepted: int = 0
    rejected: dict = field(default_factory=dict)
    duplicates: int = 0
    out_of_order: int = 0
    gaps: int = 0
    lost_in_gaps: int = 0


class ArmVrReceiver:
    def __init__(self, sock: socket.socket, clock: Callable[[], float], cfg: dict,
                 logger: Optional[logging.Logger] = None):
        """``sock``: a bound UDP socket; ``cfg``: the merged robot config (``pulse.auth`` required:
        the keys are read from its key file, ValueError when they cannot be)."""
        vr, udp = TeleopVrParams.from_tree(cfg), PulseUdpParams.from_tree(cfg)
        health = dataclasses.replace(HealthParams.from_tree(cfg),
                                     expected_receive_rate_hz=vr.expected_rate_hz,
                                     disconnect_timeout_s=vr.disconnect_timeout_s)
        self.carrier = UdpCarrier(sock, udp.max_packets_per_cycle, udp.max_datagram_bytes)
        self.clock = clock
        self.auth = Authenticator.from_params(AuthParams.from_tree(cfg), vp.SIZE)
        self.link = LinkReceiver(vp.ControllerPoseCodec(), clock,
                                 SequenceParams.from_tree(cfg), health,
                                 LinkParams.from_tree(cfg), logger=logger or log,
                                 name="vr_controller", auth=self.auth)

    @property
    def address(self):
        return self.carrier.address

    def handle(self, data: bytes, peer=None) -> Optional[vp.ControllerPose]:
        return self.link.handle(data, peer)

    def poll(self) -> list:
        """Drain the socket (non-blocking, bounded); the accepted poses in arrival order. Also
        runs the disconnection timeout."""
        out = []
        for data, peer in self.carrier.drain():
            pose = self.link.handle(data, peer)
            if pose is not None:
                out.append(pose)
        self.link.update()
        return out

    def receive(self, expected: int, timeout_s: float, on_pose: Callable[[vp.ControllerPose], None]) -> int:
        """Lockstep hand-off on loopback: poll until ``expected`` poses were accepted (each passed
        to ``on_pose``) or ``timeout_s`` of wall time passed; returns how many did not arrive."""
        got = 0
        deadline = time.perf_counter() + timeout_s
        while True:
            for p in self.poll():
                on_pose(p)
                got += 1
            if got >= expected or time.perf_counter() > deadline:
                return max(0, expected - got)
            time.sleep(0.0001)

    @property
    def stats(self) -> LinkStats:
        c = self.link.tracker.c
        return LinkStats(self.link.received, self.link.accepted,
                         {k: v for k, v in self.link.rejected.items() if v and k not in ("duplicate", "stale")},
                         c.duplicates, c.stale, c.gaps_minor + c.gaps_moderate + c.gaps_major, c.lost)

    def health(self) -> dict:
        now = self.clock()
        self.link.update(now)
        rep = self.link.health.report(now, tx_active=False)
        rx = rep.streams["receive"]
        s = self.stats
        return {"connected": rep.connected, "rate_hz": rx.rate_hz, "expected_rate_hz": rx.expected_hz,
                "rate_deviation": rx.deviation, "level": LEVEL_NAMES[rep.level], "message": rep.message,
                "received": s.received, "accepted": s.accepted, "rejected": s.rejected,
                "duplicates": s.duplicates, "out_of_order": s.out_of_order, "gaps": s.gaps,
                "lost_in_gaps": s.lost_in_gaps}

    def diagnose(self, stat) -> None:
        """The ``/diagnostics`` status of this link (``hri_runtime.diagnostics`` task): level and
        message of the link health, every counter, each rejection cause as ``rejected_<cause>``."""
        now = self.clock()
        self.link.update(now)
        rep = self.link.health.report(now, tx_active=False)
        stat.summary(int(rep.level), rep.message)
        vals = {"connected": rep.connected, "peer": self.link.owner, "authenticated": self.auth is not None,
                "receive_rate_hz": f"{rep.streams['receive'].rate_hz:.2f}", **self.link.counter_values()}
        for k, v in vals.items():
            stat.add(k, v)

    def close(self) -> None:
        self.carrier.close()


def bind_vr_receiver(cfg: dict, clock: Callable[[], float], logger: Optional[logging.Logger] = None,
                     who: str = "arm_teleop") -> ArmVrReceiver:
    """An :class:`ArmVrReceiver` on a UDP socket bound to ``teleop.vr.bind_address``:``port`` (0:
    any free port; ``receiver.address`` says which). One-line errors: StartupRefused off loopback
    without ``pulse.auth``; RuntimeError (from the OSError) when the port cannot be bound;
    ConfigError when the ``pulse.auth`` key file cannot be read."""
    vr, auth = TeleopVrParams.from_tree(cfg), AuthParams.from_tree(cfg)
    check_receiver_bind(f"{who} teleop.vr.bind_address", vr.bind_address, auth)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.bind((vr.bind_address, vr.port))
    except OSError as exc:
        sock.close()
        raise RuntimeError(f"{who}: cannot receive VR packets on udp://{vr.bind_address}:{vr.port} "
                           f"({exc}); another receiver there? set teleop.vr.port (0: any free port)") from exc
    try:
        return ArmVrReceiver(sock, clock, cfg, logger=logger)
    except ValueError as exc:                     # pulse.auth key file missing / malformed
        sock.close()
        raise ConfigError(None, "pulse.auth", auth.key_file, str(exc)) from None


class VrReader:
    """Event-driven input (docs/arm-teleop.md "Rate structure"): a thread that waits on the
    receiver's socket and, holding ``lock`` (the one the consumer's periodic work holds too),
    drains it and hands each accepted pose to ``on_pose`` on arrival. While ``ready()`` is false
    (e.g. the arm has no state yet) the packets stay queued in the socket."""

    def __init__(self, receiver: ArmVrReceiver, lock: threading.Lock, ready: Callable[[], bool],
                 on_pose: Callable[[vp.ControllerPose], None], name: str = "vr_reader", wait_s: float = 0.1):
        self.receiver, self.lock, self.ready, self.on_pose = receiver, lock, ready, on_pose
        self.wait_s = wait_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> "VrReader":
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 1.0) -> None:
        """Ends the thread (within ``wait_s``; waits at most ``timeout_s``); the receiver stays open."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=timeout_s)

    def _run(self) -> None:
        sock = self.receiver.carrier.sock
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([sock], [], [], self.wait_s)
            except (OSError, ValueError):
                return                      # socket closed
            if not ready:
                continue
            with self.lock:
                if self._stop.is_set() or not self.ready():
                    continue                # the packet stays queued until the consumer is ready
                for p in self.receiver.poll():
                    self.on_pose(p)


class VrInput:
    """The arm_teleop node's VR input, opened and closed at run time (``teleop.vr.enabled``):
    :func:`bind_vr_receiver` on ``teleop.vr``, then polled on the base tick (``poll``) or, with
    ``event_driven``, read by a :class:`VrReader` that hands each pose to ``on_pose_now`` on
    arrival. ``lock`` is the one the node's base tick holds too; ``on_open(address)`` is called
    once each time the socket is bound. ``threaded`` False (set before opening; a composition in
    lockstep on the in-process context): no reader thread, the lockstep script hands the packets it
    sent over with :meth:`receive`, event-driven all the same."""

    def __init__(self, cfg: dict, clock: Callable[[], float], lock: threading.Lock, *, event_driven: bool,
                 ready: Callable[[], bool], on_pose_now: Callable[[vp.ControllerPose], None],
                 on_open: Callable[[tuple], None] = lambda address: None,
                 logger: Optional[logging.Logger] = None, name: str = "arm_teleop_vr"):
        self.cfg, self.clock, self.lock, self.event_driven = cfg, clock, lock, event_driven
        self.ready, self.on_pose_now, self.on_open = ready, on_pose_now, on_open
        self.log, self.name = logger or log, name
        self.receiver: Optional[ArmVrReceiver] = None
        self.address = None
        self._reader: Optional[VrReader] = None
        self.threaded = True
        self._held: list = []                  # threaded False: received before the arm had a state

    def open(self):
        """Bind and start receiving (errors: :func:`bind_vr_receiver`); the bound address."""
        receiver = bind_vr_receiver(self.cfg, self.clock, logger=self.log)
        self.address = receiver.address
        with self.lock:
            self.receiver = receiver
        if self.event_driven and self.threaded:
            self._reader = VrReader(receiver, self.lock, self.ready, self.on_pose_now, name=self.name).start()
        self.on_open(self.address)
        return self.address

    def close(self) -> bool:
        """Stop the reader and close the socket; whether it was open."""
        if self._reader is not None:
            self._reader.stop()
            self._reader = None
        with self.lock:
            receiver, self.receiver = self.receiver, None
        if receiver is None:
            return False
        receiver.close()
        return True

    def set_enabled(self, enabled: bool) -> Optional[str]:
        """``teleop.vr.enabled`` at run time: open or close; the reason when it cannot bind."""
        if enabled and self.receiver is None:
            try:
                self.open()
            except (RuntimeError, ValueError) as exc:
                return str(exc)
        if not enabled and self.receiver is not None:
            self.close()
        return None

    def poll(self) -> list:
        """The accepted poses since the last poll (none while closed or read by the reader thread);
        call with ``lock`` held."""
        if self.receiver is None or self._reader is not None:
            return []
        held, self._held = self._held, []
        return held + self.receiver.poll()

    def receive(self, expected: int, timeout_s: float) -> int:
        """``threaded`` False: take the ``expected`` packets just sent on loopback (waiting at most
        ``timeout_s`` of wall time): event-driven ones to ``on_pose_now`` once the arm has a state,
        the others to the next :meth:`poll`. Returns how many did not arrive."""
        with self.lock:
            if self.receiver is None:
                return expected
            now = self.event_driven and self.ready()
            return self.receiver.receive(expected, timeout_s, self.on_pose_now if now else self._held.append)

    def diagnose(self, stat) -> None:
        """``/diagnostics`` "vr link": :meth:`ArmVrReceiver.diagnose`, or closed."""
        with self.lock:
            if self.receiver is None:
                stat.summary(0, "VR receiver closed (teleop.vr.enabled false)")
                return
            self.receiver.diagnose(stat)
