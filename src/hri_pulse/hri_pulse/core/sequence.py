"""Sequence tracking of a packet stream with wrapping counters (the Tino VR design, "message ordering").

Counter space: 0 .. M-1 with M = ``modulus`` (2^31). With ``last`` the newest accepted number,
``expected = (last + 1) mod M`` and ``d = (seq - expected) mod M``:

* ``d < M/2``: the packet is ahead. ``d = 0`` in order; ``d > 0`` a gap of ``d`` lost packets,
  classified minor (1 .. minor_gap_max), major (>= major_gap_min) or moderate (between).
* otherwise it is behind by ``b = (last - seq) mod M``: ``b = 0`` a duplicate, else stale
  (reordered/late). Neither is ever accepted, so neither can produce a command.

Re-synchronisation rule (one rule for both directions): a *discontinuity* -- a forward jump of
``d >= major_gap_min`` or a backward jump of ``b >= restart_min_backjump`` -- is never accepted on
the packet that reveals it. It is a candidate (verdict ``jump_pending`` forward,
``restart_pending`` backward; dropped and counted) and ``last`` stays where it was, so the real
stream keeps being accepted and loses nothing. Only after ``restart_confirm_packets`` candidates
numbered consecutively (``c, c+1, ..., c+N-1``, no in-order packet of the old stream between
them) does the tracker re-baseline on the newest one and accept it (verdict ``gap`` with severity
major forward, ``restart`` backward): a genuine sender restart or a long outage resumes within N
packets, a single forged or replayed number never moves the baseline. An in-order or minor/
moderate-gap packet of the current stream cancels the candidate run.

Restart of the sender (Unity app restarted -> counter starts again near 0): a packet behind by at
least ``restart_min_backjump`` (far more than any reordering) is a restart *candidate* under the
rule above (the earlier candidates stay dropped: a single replayed old packet can never reset the
tracker). ``reset()`` (on reconnection after a timeout) forgets ``last`` so the
next packet is accepted whatever its number.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Optional

from hri_runtime.parameter_library.typed import params_type

FIRST, OK, GAP, DUPLICATE, STALE, RESTART_PENDING, RESTART, JUMP_PENDING = (
    "first", "ok", "gap", "duplicate", "stale", "restart_pending", "restart", "jump_pending")
ACCEPTED = frozenset((FIRST, OK, GAP, RESTART))


SequenceParams = params_type("pulse.sequence")


@dataclass
class GapInfo:
    expected: int
    received: int
    missing: int
    severity: str   # minor | moderate | major


COUNTERS = ("accepted", "duplicates", "stale", "gaps_minor", "gaps_moderate", "gaps_major", "lost", "restarts",
            "resets", "jumps_pending")


class SequenceCounters(SimpleNamespace):
    """The tracker's counters (``COUNTERS``, all from 0): ``lost`` sums the missing packets over
    all gaps, ``jumps_pending`` counts forward jumps >= major_gap_min held back (not confirmed)."""

    def __init__(self):
        super().__init__(**dict.fromkeys(COUNTERS, 0))

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class SequenceTracker:
    def __init__(self, params: SequenceParams):
        self.p = params
        self._half = params.modulus // 2
        self.last: Optional[int] = None
        self.last_gap: Optional[GapInfo] = None
        self.c = SequenceCounters()
        self._cand_last: Optional[int] = None
        self._cand_run = 0

    def reset(self) -> None:
        """Forget the stream (reconnection): the next packet is accepted as the new baseline."""
        self.last = None
        self._cand_last, self._cand_run = None, 0
        self.c.resets += 1

    def check(self, seq: int) -> str:
        """Classify ``seq`` and update the state; accepted verdicts are in ``ACCEPTED``."""
        M = self.p.modulus
        last = self.last
        if last is None:
            self.last = seq % M
            self.c.accepted += 1
            return FIRST
        expected = last + 1
        if expected == M:
            expected = 0
        d = (seq - expected) % M
        if d < self._half:
            if d >= self.p.major_gap_min:           # discontinuity: held back until confirmed
                if not self._candidate(seq):
                    self.c.jumps_pending += 1
                    return JUMP_PENDING
                self.c.gaps_major += 1              # confirmed: a major gap up to the newest one
                self.c.lost += d - (self.p.restart_confirm_packets - 1)
                self.c.accepted += 1
                self.last = seq
                self.last_gap = GapInfo(expected, seq, d, "major")
                return GAP
            self._cand_run = 0
            self.last = seq
            self.c.accepted += 1
            if d == 0:
                return OK
            if d <= self.p.minor_gap_max:
                sev = "minor"
                self.c.gaps_minor += 1
            else:
                sev = "moderate"
                self.c.gaps_moderate += 1
            self.c.lost += d
            self.last_gap = GapInfo(expected, seq, d, sev)
            return GAP
        back = (last - seq) % M
        if back == 0:
            self.c.duplicates += 1
            return DUPLICATE
        if back >= self.p.restart_min_backjump:
            if self._candidate(seq):
                self.last = seq
                self.c.restarts += 1
                self.c.accepted += 1
                return RESTART
            self.c.stale += 1
            return RESTART_PENDING
        self.c.stale += 1
        return STALE

    def _candidate(self, seq: int) -> bool:
        """Count ``seq`` as a discontinuity candidate; True once ``restart_confirm_packets``
        consecutive candidates (``c, c+1, ...``) confirm it (the run then starts over)."""
        if self._cand_run and self._cand_last is not None and seq == (self._cand_last + 1) % self.p.modulus:
            self._cand_run += 1
        else:
            self._cand_run = 1
        self._cand_last = seq
        if self._cand_run >= self.p.restart_confirm_packets:
            self._cand_run = 0
            return True
        return False
