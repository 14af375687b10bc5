"""What the ``interaction`` node applies and reports at run time, without the middleware.

Parameters settable at run time (:data:`LIVE`): the mode, the torque law (``interaction.law``:
bumpless at a tick boundary, refused while unsafe; docs/realtime.md "Switching the torque law")
and the gain diagonals, applied through an engine's input check (``set_mode``, ``set_law``,
``update_impedance``, ``update_admittance``:
:mod:`hri_interaction.engine`) from the next tick on; a refused value answers with the check's
sentence and changes nothing (:func:`appliers`).

:class:`StateReport`: the node's timer periods (:class:`PeriodStats`, summarised with every
``/diagnostics`` state: every k-th state, ``node.diagnostics_rate_hz``), the age of the last accepted
reference (stale beyond ``node.reference_timeout_s``) and the ``/diagnostics`` status of a
published state (:func:`status`: WARN while frozen or holding).
"""
from __future__ import annotations

import json
import time
from typing import Callable, Optional

import numpy as np

from hri_interaction.core.periods import PeriodStats
from hri_runtime.diagnostics import OK, WARN

MODE = "interaction.mode"
LAW = "interaction.law"
IMPEDANCE = {"stiffness": "interaction.impedance.stiffness_diag", "damping": "interaction.impedance.damping_diag"}
ADMITTANCE = {"mass": "interaction.admittance.mass_diag", "damping": "interaction.admittance.damping_diag",
              "stiffness": "interaction.admittance.stiffness_diag"}
#: the parameters the node applies at run time
LIVE = (MODE, LAW, *IMPEDANCE.values(), *ADMITTANCE.values())


def appliers(engine: Callable[[], object]) -> dict:
    """Parameter name -> applier (value -> None, or the refusal's sentence) of every :data:`LIVE`
    parameter, on the engine ``engine()`` returns when the value comes."""
    out = {MODE: lambda m: None if engine().set_mode(m) else engine().refusal(),
           LAW: lambda law: None if engine().set_law(law) else engine().refusal()}
    out.update({n: (lambda v, g=g: engine().update_impedance(**{g: v})) for g, n in IMPEDANCE.items()})
    out.update({n: (lambda v, g=g: engine().update_admittance(**{g: v})) for g, n in ADMITTANCE.items()})
    return out


def mode_input(engine, text) -> dict:
    """The mode topic (String: any case, surrounding blanks) through the engine's rules: the
    parameter value it becomes when accepted (``{MODE: mode}``), else ``{}``."""
    mode = str(text).strip().lower()
    return {MODE: mode} if engine.set_mode(mode) else {}


def gains_input(engine, values) -> dict:
    """The gains topic [K diag, D diag] through the engine's check: the impedance diagonals'
    parameter values when accepted, else ``{}``."""
    if not engine.set_gain_vector(values):
        return {}
    return {name: engine.impedance[g].tolist() for g, name in IMPEDANCE.items()}


def push_input(engine, wrench_world) -> bool:
    """A push on the EE (driver sim; world frame, (moment, force)) to the engine; a non-finite
    one is ignored (False)."""
    w = np.asarray(wrench_world, float)
    if not np.all(np.isfinite(w)):
        return False
    engine.set_push(w[3:], w[:3])
    return True


def status(d: dict) -> tuple[int, str, dict]:
    """(level, message, values) of the ``/diagnostics`` status of a published state ``d``
    (:func:`hri_interaction.engine.diagnostics` plus the node's values)."""
    level = WARN if (d["frozen"] or "hold" in d["flags"]) else OK
    return level, f"{d['mode']} {' '.join(d['flags'])}".strip(), {k: json.dumps(d[k]) for k in ("rejected", "events", "energy_j")}


class StateReport:
    def __init__(self, rate_hz: float, reference_timeout_s: float, start_s: float,
                 wall_clock: Callable[[], float] = time.perf_counter, diagnostics_every: int = 1):
        """``rate_hz``: the node's tick rate (its wall-clock periods are measured on
        ``wall_clock``); ``start_s``: node time at start (the reference's age counts from it);
        ``diagnostics_every``: every k-th published state is also the ``/diagnostics`` one."""
        self.periods = PeriodStats(rate_hz, clock=wall_clock)
        self.reference_timeout_s = reference_timeout_s
        self.last_reference_s = float(start_s)
        self.diagnostics_every = max(1, int(diagnostics_every))
        self.period_summary = None      # the periods' summary as of the last /diagnostics state
        self.diagnostics_due = True
        self._states = 0

    @classmethod
    def of_node(cls, p, start_s: float, **kw) -> "StateReport":
        """The report of an interaction node with the (typed) ``interaction`` parameters ``p``:
        its tick rate, ``node.reference_timeout_s``, and every k-th state a ``/diagnostics`` one,
        k = round(``node.state_rate_hz`` / ``node.diagnostics_rate_hz``)."""
        return cls(p.rate_hz, p.node.reference_timeout_s, start_s,
                   diagnostics_every=round(p.node.state_rate_hz / p.node.diagnostics_rate_hz), **kw)

    def state_periods(self) -> Optional[dict]:
        """A state is about to be published: the period summary it carries. Recomputed when it
        is a ``/diagnostics`` state (:attr:`diagnostics_due`: the first, then every
        ``diagnostics_every``-th), else the last one (the statistics over thousands of periods
        are not redone for every state)."""
        self.diagnostics_due = self._states % self.diagnostics_every == 0
        self._states += 1
        if self.diagnostics_due:
            self.period_summary = self.periods.summary()
        return self.period_summary

    def on_reference(self, accepted: bool, now_s: float) -> None:
        if accepted:
            self.last_reference_s = float(now_s)

    def reference_stale(self, now_s: float) -> bool:
        return (now_s - self.last_reference_s) > self.reference_timeout_s

    def complete(self, d: dict, now_s: float, **node_values) -> dict:
        """The state ``d`` with the node's values and ``reference_stale`` (in place; returned)."""
        d.update(node_values, reference_stale=self.reference_stale(now_s))
        return d
