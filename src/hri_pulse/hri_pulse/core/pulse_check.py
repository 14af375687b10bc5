"""``PulseCheck``: the consistency check across the messages of one headset pulse (the Tino VR
design, "Network Reliability and Message Validation": "Parameter consistency checking across all
three pulses validates command integrity, rejecting corrupted or incomplete transmissions").

A headset pulse is ``messages`` (3) command packets that the link accepted (validation, peer
policy, sequence rules of :class:`~hri_pulse.core.link.LinkReceiver`), in order:

* **it opens** on a packet whose non-idle ``(state, direction)`` differs from the previous accepted
  packet's (a rising edge; the same value held on is nothing new, as before);
* **its slots** are the ``messages`` consecutive ``message_order`` numbers from the opening one
  (the sequence run): every packet numbered inside them belongs to the pulse;
* **it is consistent** when at least ``min_messages`` (2) of its slots hold a packet, the opening
  one among them, every packet carries the opening packet's state and direction, and the last
  one arrived at most ``window_s`` after the first. Then it is one command: at its last message,
  or -- when that message was lost in transit -- at the next packet numbered past the pulse (or
  when the window ends). The design's "if one of the three 40ms transmissions fails ..., the
  remaining cycles ensure command delivery": a lost middle or last message costs nothing. A lost
  *opening* message usually loses the pulse: the second then opens it, and the idle packet after
  the pulse falls in its last slot, a message that stopped early (docs/protocols.md "Pulse
  consistency").

Otherwise it is rejected, once, with the first cause found:

* ``state_mismatch`` / ``direction_mismatch``: a packet in a slot carries another non-idle state
  / another direction (a corrupted middle or last message);
* ``incomplete``: a slot holds an idle packet (the sender stopped early), fewer than
  ``min_messages`` of the slots arrived (lost, or a number corrupted so that the next accepted
  packet lies past them), a message came after the window, or the link was lost or restarted
  mid-pulse (:meth:`abort`).

A rejected pulse never commands, and the packets still inside its slots are part of it (one
rejection per pulse, however many of its messages are bad). After a pulse closes, further packets
with its value are "held" (ignored, counted) until another value arrives.

Pure logic: time and sequence numbers are arguments (the caller's clock), nothing is logged here;
:meth:`on_message`, :meth:`expire` and :meth:`abort` return a :class:`Decision` when a pulse
closes.
"""
from __future__ import annotations

from typing import Any, Dict, NamedTuple, Optional, Tuple

from hri_runtime.parameter_library.typed import params_type

PulseCheckParams = params_type("pulse.check")

CAUSES = ("state_mismatch", "direction_mismatch", "incomplete")
_EPS_S = 1e-9


class Decision(NamedTuple):
    accepted: bool
    state: int
    direction: int
    first_seq: int
    cause: Optional[str]          # None when accepted, else one of CAUSES
    detail: str                   # what was wrong (for the one log line), "" when accepted
    payload: Any                  # the opening packet (its head angles are the command's)


class _Open:
    __slots__ = ("value", "first_seq", "t0", "got", "arrived", "cause", "detail", "payload")

    def __init__(self, value: Tuple[int, int], seq: int, t0: float, payload: Any):
        self.value, self.first_seq, self.t0, self.payload = value, seq, t0, payload
        self.got = 1                 # slots passed (the highest arrived slot + 1)
        self.arrived = 1             # slots that hold a packet
        self.cause: Optional[str] = None
        self.detail = ""

    def fail(self, cause: str, detail: str) -> None:
        if self.cause is None:
            self.cause, self.detail = cause, detail


class PulseCheck:
    def __init__(self, params: PulseCheckParams, modulus: int = 1 << 31):
        self.n = int(params.messages)
        self.min_n = min(int(params.min_messages), self.n)   # capped: a 1-message pulse needs 1
        self.window_s = float(params.window_s)
        self.modulus = modulus
        self._open: Optional[_Open] = None
        self._prev: Tuple[int, int] = (0, 0)      # value of the previous accepted packet
        self.accepted = 0
        self.held = 0
        self.rejected: Dict[str, int] = dict.fromkeys(CAUSES, 0)

    @property
    def pending(self) -> bool:
        """A pulse is open (its first message arrived, its last not yet)."""
        return self._open is not None

    @property
    def quiet(self) -> bool:
        """No pulse open and the last value idle: an idle packet changes nothing."""
        return self._open is None and self._prev[0] == 0

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())

    # ------------------------------------------------------------------ inputs
    def on_message(self, state: int, direction: int, seq: int, now_s: float,
                   payload: Any = None) -> Optional[Decision]:
        """One accepted packet. Returns the decision of the pulse it closes, if any: a packet
        numbered past the open pulse's slots closes it first (incomplete) and is then taken as a
        new packet; a packet in the last slot closes the pulse it belongs to."""
        value = (state, direction) if state != 0 else (0, 0)
        op = self._open
        if op is None and value == self._prev:      # fast path: the same value held on (or idle)
            if state != 0:
                self.held += 1
            return None
        out: Optional[Decision] = None
        if op is not None:
            offset = (seq - op.first_seq) % self.modulus
            if offset >= self.n:                     # past the pulse's slots: it is over
                out = self._close(f"(message_order {op.first_seq}.."
                                  f"{(op.first_seq + self.n - 1) % self.modulus}, next received {seq})")
            else:
                self._slot(op, offset, value, seq, now_s)
                self._prev = value
                if offset == self.n - 1:
                    return self._close()
                return None
        if value != self._prev and value[0] != 0:
            self._open = _Open(value, seq, now_s, payload)
            if self.n == 1:                          # (then no pulse was open before)
                self._prev = value
                return self._close()
        elif value[0] != 0:
            self.held += 1
        self._prev = value
        return out

    def _slot(self, op: _Open, offset: int, value: Tuple[int, int], seq: int, now_s: float) -> None:
        k = offset + 1                               # 1-based message number in the pulse
        op.got = max(op.got, offset + 1)             # a number between never came: lost (counted at close)
        op.arrived += 1
        if value[0] == 0:
            op.fail("incomplete", f"message {k} of {self.n} is idle (message_order {seq}): "
                                  f"the pulse stopped early")
        elif value[0] != op.value[0]:
            op.fail("state_mismatch", f"message {k} of {self.n} has state {value[0]}, the first "
                                      f"{op.value[0]} (message_order {seq})")
        elif value[1] != op.value[1]:
            op.fail("direction_mismatch", f"message {k} of {self.n} has direction {value[1]}, the "
                                          f"first {op.value[1]} (message_order {seq})")
        if now_s - op.t0 > self.window_s + _EPS_S:
            op.fail("incomplete", f"message {k} of {self.n} came {now_s - op.t0:.3f} s after the "
                                  f"first (window {self.window_s:g} s)")

    def expire(self, now_s: float) -> Optional[Decision]:
        """Call periodically: an open pulse whose window ran out is decided (its missing messages
        are lost): a command when enough arrived, else rejected (incomplete)."""
        op = self._open
        if op is None or now_s - op.t0 <= self.window_s + _EPS_S:
            return None
        return self._close(f"within {self.window_s:g} s (message_order from {op.first_seq})")

    def abort(self, why: str) -> Optional[Decision]:
        """The stream broke (disconnection, sender restart): an open pulse is rejected
        (incomplete) and the next packet starts afresh (a held value counts as new)."""
        op = self._open
        self._prev = (0, 0)
        if op is None:
            return None
        op.fail("incomplete", f"{op.got} of {self.n} messages, then {why}")
        return self._close()

    # ------------------------------------------------------------------ internals
    def _close(self, where: str = "") -> Decision:
        op, self._open = self._open, None
        if op.cause is None and op.arrived >= self.min_n:
            self.accepted += 1
            return Decision(True, op.value[0], op.value[1], op.first_seq, None, "", op.payload)
        if op.cause is None:
            op.fail("incomplete", f"{op.arrived} of {self.n} messages{' ' + where if where else ''}; "
                                  f"at least {self.min_n} must arrive")
        self.rejected[op.cause] += 1
        return Decision(False, op.value[0], op.value[1], op.first_seq, op.cause, op.detail, op.payload)
