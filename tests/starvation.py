"""What a wall-clock stack test may see when a node is starved of CPU (a loaded machine), told
apart from a defect by the nodes' own log: the safety rules latching on their own, by design
(docs/safety.md; hri_atomic_motion/core/leg.py), or atomic's 1 kHz loop missing enough periods to
stretch a timed movement. A launched-stack test that failed on such a run runs once more on a
new stack and must then pass; any other failure fails at once."""
from __future__ import annotations

import re
import warnings
from typing import Callable

# the heartbeat stop (a node that missed the supervisor for safety.stop.timeout_s), or a stall (the
# leg's readings showed no motion under a strong command: its command or readings arrived late)
LATCHED = re.compile(r"fault latched: (stall|system_stop \(system stop: stop_heartbeat_timeout)")
# atomic's exit line; this many missed 1 ms periods stretch a movement past a 10 % tolerance
MISSED = re.compile(r"\[atomic\].*loop counters: timer_periods_missed (\d+)")
MISSED_LIMIT = 50


def starved(text: str) -> str | None:
    """Why a failed run was a starved one, from the launch output; None when it was not."""
    m = LATCHED.search(text)
    if m:
        return m.group(0)
    m = MISSED.search(text)
    return f"atomic missed {m.group(1)} loop periods" if m and int(m.group(1)) >= MISSED_LIMIT else None


class StarvedRun(UserWarning):
    """A launched-stack test ran once more because its first run was a starved one."""


def rerun(why: str) -> None:
    """Say that the test runs once more, and why: a warning, so the run's summary lists it even
    when the second run passes (CI's log shows how often a machine starves the stacks)."""
    line = f"starved run ({why}): one more run on a new stack"
    print(line)
    warnings.warn(StarvedRun(line), stacklevel=2)


def runs(attempt: Callable[[int], None], most: int) -> None:
    """``attempt(run)`` until it passes, at most ``most`` runs: a failed run goes again only when it
    was a starved one (its AssertionError carries the launch output as ``launch_text``)."""
    for run in range(most):
        try:
            attempt(run)
            return
        except AssertionError as e:
            why = starved(getattr(e, "launch_text", ""))
            if why is None or run == most - 1:
                raise
            rerun(why)
