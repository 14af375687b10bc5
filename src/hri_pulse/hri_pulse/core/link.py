"""``LinkReceiver``: one receiving link = codec + sequence tracker + health monitor + peer policy.

Codec duck typing: ``decode(bytes)`` (raising ``PacketRejected``, or an exception class of
``reject_exceptions``, with a ``cause``), ``sequence(pkt)``, optional ``causes`` (counters
pre-created at 0).

Carrier-agnostic: a carrier (UDP socket, ZeroMQ SUB, a test) hands ``(data, peer)`` to
``handle``; ``peer`` is ``(host, port)`` for UDP or any string/tuple. The codec is injected
(``PacketCodec``: ``decode``/``sequence``/``causes``), so the same receiver serves the Unity
command packet (hri_pulse) and the controller-pose packet (hri_arm_teleop).

Per datagram, in this order (cheap checks first, so a flood from a stranger costs no decoding):
  1. allow-list (``not_allowed``), 2. peer lock (``foreign_peer``: while a peer is connected,
  packets from another host are dropped), 3. with authentication (``auth``, an
  :class:`~hri_pulse.core.auth.Authenticator`): the trailer and its tag (``bad_size``,
  ``bad_auth_version``, ``bad_key_id``, ``bad_tag``), 4. decode (codec causes), 5. with
  authentication the replay window (``replayed``; a new session of the sender re-bases the
  sequence tracker), 6. sequence
  (``duplicate``, ``stale``, ``restart_pending``, ``jump_pending``: the re-synchronisation rule of
  :mod:`hri_pulse.core.sequence`), then the packet is accepted: health updated,
  peer locked. Every drop is counted by cause in ``rejected``; the first of each cause and then at
  most one per ``reject_log_period_s`` is logged with the reason.
``update(now)`` runs the disconnection timeout: on ``"disconnected"`` the sequence tracker is
reset (a restarted headset app is accepted) and the peer lock released.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Dict, Optional, Tuple, Type

from hri_runtime.parameter_library.typed import params_type

from hri_pulse.core.auth import Authenticator
from hri_pulse.core.codec import PacketCodec, PacketRejected
from hri_pulse.core.health import HealthMonitor, HealthParams
from hri_pulse.core.sequence import ACCEPTED, GAP, RESTART, SequenceParams, SequenceTracker

SEQUENCE_CAUSES = ("duplicate", "stale", "restart_pending", "jump_pending")
PEER_CAUSES = ("not_allowed", "foreign_peer")


LinkParams = params_type("pulse.link")


class LinkReceiver:
    def __init__(self, codec: PacketCodec, clock: Callable[[], float],
                 sequence: SequenceParams, health: HealthParams,
                 link: LinkParams, logger: Optional[logging.Logger] = None,
                 name: str = "link", reject_exceptions: Tuple[Type[Exception], ...] = (PacketRejected,),
                 auth: Optional[Authenticator] = None):
        self.codec = codec
        self.auth = auth
        self.clock = clock
        self.lp = link
        self.name = name
        self.log = logger or logging.getLogger(f"hri_pulse.{name}")
        self.tracker = SequenceTracker(sequence)
        self.health = HealthMonitor(health, start_s=clock())
        self._reject_exc = tuple(reject_exceptions) + ((PacketRejected,) if auth is not None else ())
        self._seq_of = codec.sequence
        self._allow = frozenset(link.allow_list)
        self.owner: Any = None          # (host, port) of the locked peer
        self._owner_host: Any = None
        self.received = 0
        self.accepted = 0
        self.rejected: Dict[str, int] = {c: 0 for c in (*PEER_CAUSES, *(auth.causes if auth else ()),
                                                          *getattr(codec, "causes", ()), *SEQUENCE_CAUSES)}
        self._next_log: Dict[str, float] = {}
        self.last_event: Optional[str] = None

    # ------------------------------------------------------------------ helpers
    def _limited(self, key: str, now_s: float) -> bool:
        """True at most once per ``reject_log_period_s`` per key (floods never flood the log)."""
        nxt = self._next_log.get(key)
        if nxt is None or now_s >= nxt:
            self._next_log[key] = now_s + self.lp.reject_log_period_s
            return True
        return False

    def _reject(self, cause: str, detail: str, now_s: float) -> None:
        self.rejected[cause] = self.rejected.get(cause, 0) + 1
        if self._limited(cause, now_s):
            self.log.warning(f"{self.name}: packet dropped ({cause}): {detail} [{self.rejected[cause]} so far]")

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())

    # ------------------------------------------------------------------ per datagram
    def handle(self, data: bytes, peer: Any = None, now_s: Optional[float] = None):
        """One datagram -> the decoded packet if accepted, else None (counted by cause)."""
        if now_s is None:
            now_s = self.clock()
        self.received += 1
        host = peer[0] if type(peer) is tuple else peer
        if self._allow and host not in self._allow:
            self._reject("not_allowed", f"source {peer} not in the allow-list", now_s)
            return None
        owner = self.owner
        if owner is not None and self.lp.peer_lock and host != self._owner_host and self.health.connected:
            self._reject("foreign_peer", f"source {peer} while {owner} holds the link", now_s)
            return None
        try:
            if self.auth is None:
                pkt = self.codec.decode(data)
            else:
                body, key_id, session = self.auth.open(data)
                pkt = self.codec.decode(body)
                if self.auth.admit(key_id, session, self._seq_of(pkt)):
                    self.tracker.reset()            # an authentic new session: the sender restarted
                    self.log.info(f"{self.name}: new session {session} of key {key_id}: sequence re-based")
        except self._reject_exc as exc:
            self._reject(getattr(exc, "cause", type(exc).__name__), str(exc), now_s)
            return None
        verdict = self.tracker.check(self._seq_of(pkt))
        if verdict not in ACCEPTED:
            self._reject(verdict, f"message order {self._seq_of(pkt)} after {self.tracker.last}", now_s)
            return None
        if verdict == GAP and self._limited("gap_" + self.tracker.last_gap.severity, now_s):
            g = self.tracker.last_gap
            fn = {"minor": self.log.debug, "moderate": self.log.info, "major": self.log.warning}[g.severity]
            fn(f"{self.name}: order gap ({g.severity}): expected {g.expected}, received {g.received} "
               f"({g.missing} lost)")
        elif verdict == RESTART:
            self.log.warning(f"{self.name}: sender restarted (message order back to "
                             f"{self._seq_of(pkt)}): sequence re-based")
        self.accepted += 1
        if peer != owner:
            self.owner, self._owner_host = peer, host
        h = self.health
        if h.connected:                      # fast path of HealthMonitor.on_receive
            h.rx.add(now_s)
            h.last_rx_s = now_s
            return pkt
        ev = h.on_receive(now_s)
        if ev is not None:
            self.last_event = ev
            what = "headset RECONNECTED" if ev == "reconnected" else "headset connected"
            self.log.info(f"{self.name}: {what}: peer {peer} (message order {self._seq_of(pkt)})")
        return pkt

    # ------------------------------------------------------------------ periodic
    def update(self, now_s: Optional[float] = None) -> Optional[str]:
        """Timeout check; returns "disconnected" once (caller publishes the safe stop)."""
        if now_s is None:
            now_s = self.clock()
        ev = self.health.update(now_s)
        if ev == "disconnected":
            self.last_event = ev
            self.tracker.reset()
            silent = now_s - (self.health.last_rx_s or now_s)
            self.log.error(f"{self.name}: headset DISCONNECTED ({silent:.1f} s without a valid packet "
                           f"from {self.owner}): safe stop")
            self.owner = None
        return ev

    def counter_values(self) -> dict:
        """The counters flat, as ``/diagnostics`` shows them: ``received``, ``accepted``,
        ``rejected_<cause>`` (every cause, from 0), ``seq_<counter>`` of the sequence tracker."""
        vals = {"received": self.received, "accepted": self.accepted}
        vals.update({f"rejected_{k}": v for k, v in self.rejected.items()})
        vals.update({f"seq_{k}": v for k, v in self.tracker.c.as_dict().items()})
        return vals

    def counters(self) -> dict:
        return {"received": self.received, "accepted": self.accepted,
                "rejected": dict(self.rejected), **{f"seq_{k}": v for k, v in self.tracker.c.as_dict().items()}}
