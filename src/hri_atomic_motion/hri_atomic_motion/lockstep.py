"""Lockstep run of the atomic controller on drivers (simulated robot): one controller update per
``control_period_s`` of simulated time, the simulation advanced in between (the workspace's one
lockstep runner, :mod:`hri_runtime.lockstep`). No wall clock.

:class:`Timeline` records what the plot shows (commanded state, leg ticks, motor RPM, base twist)
and saves it as ``.npz`` or ``.csv``.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from hri_runtime.clock import SimClock
from hri_runtime.lockstep import Lockstep

from .core.controller import AtomicController
from .core.drivers import BaseDriver, LegDriver

COLUMNS = ("t_s", "state", "ticks", "rpm_cmd", "rpm_meas", "linear_m_s", "angular_rad_s", "locked", "fault",
           "x_m", "y_m", "yaw_rad")


@dataclass
class Timeline:
    rows: list[tuple] = field(default_factory=list)

    def append(self, row: tuple) -> None:
        self.rows.append(row)

    def array(self) -> dict[str, np.ndarray]:
        a = np.array(self.rows, dtype=float).reshape(-1, len(COLUMNS))
        return {c: a[:, i] for i, c in enumerate(COLUMNS)}

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        if path.suffix == ".csv":
            with path.open("w", newline="") as f:
                w = csv.writer(f)
                w.writerow(COLUMNS)
                w.writerows(self.rows)
        else:
            np.savez(path, **self.array())
        return path


def load_timeline(path: str | Path) -> dict[str, np.ndarray]:
    path = Path(path)
    if path.suffix == ".csv":
        a = np.genfromtxt(path, delimiter=",", names=True)
        return {c: np.asarray(a[c], dtype=float) for c in COLUMNS}
    with np.load(path) as z:
        return {c: z[c] for c in COLUMNS}


class LockstepRunner:
    """Controller + drivers on the workspace's one lockstep runner (:class:`hri_runtime.lockstep.Lockstep`):
    every ``control_period_s`` of simulated time the controller updates at the step's time ``t``
    (:meth:`tick`), then ``sim_step(dt)`` advances the simulated robot. ``clock``: the
    :class:`hri_runtime.clock.SimClock` (a fresh one at 0 when None)."""

    def __init__(self, ctrl: AtomicController, leg: LegDriver, base: BaseDriver,
                 sim_step: Callable[[float], None], clock: SimClock | None = None,
                 pose: Callable[[], tuple[float, float, float]] | None = None):
        self.ctrl, self.leg, self.base, self.pose = ctrl, leg, base, pose
        self.lockstep = Lockstep(ctrl.params.control_period_s, clock, sim_step=sim_step)
        self.lockstep.every(self.tick)
        self.clock = self.lockstep.clock
        self.timeline = Timeline()

    def now_s(self) -> float:
        return self.clock.now_s()

    def tick(self, t: float) -> None:
        r = self.leg.read()
        out = self.ctrl.step(t, r.ticks, r.home_pressed)
        self.leg.command_rpm(out.leg_rpm)
        self.base.command_twist(out.linear_m_s, out.angular_rad_s)
        x, y, yaw = self.pose() if self.pose else (0.0, 0.0, 0.0)
        state = self.ctrl.current.state if self.ctrl.current else 0
        self.timeline.append((t, state, r.ticks, out.leg_rpm, r.rpm, out.linear_m_s, out.angular_rad_s,
                              float(self.ctrl.locked), float(self.ctrl.fault is not None), x, y, yaw))

    def run_for(self, duration_s: float, on_tick: Callable[[float], None] | None = None) -> None:
        """``round(duration_s / control_period_s)`` steps; ``on_tick(t)`` first in each."""
        self.lockstep.run_for(duration_s, before=on_tick)

    def pulse(self, state: int, direction: int = 0, period_s: float = 0.04, repeats: int = 3) -> None:
        """hri_pulse's pattern: ``repeats`` identical messages ``period_s`` apart, then state 0."""
        for _ in range(repeats):
            self.ctrl.on_pulse(float(state), float(direction), self.now_s())
            self.run_for(period_s)
        self.ctrl.on_pulse(0.0, 0.0, self.now_s())


def tino_sim_runner(cfg: dict) -> LockstepRunner:
    """A :class:`LockstepRunner` on a fresh ``hri_sim.tino.TinoSim`` for the merged config ``cfg``
    (``runner.sim``); the simulated clock starts at the simulation's time."""
    from hri_sim.tino import TinoSim, TinoSimParams

    from .core.params import AtomicParams
    from .sim_drivers import MujocoBaseDriver, MujocoLegDriver

    sim = TinoSim(TinoSimParams.from_config(cfg["atomic"]))
    ctrl = AtomicController(AtomicParams.from_config(cfg["atomic"]))
    sim_dt = sim.model.opt.timestep
    runner = LockstepRunner(ctrl, MujocoLegDriver(sim), MujocoBaseDriver(sim),
                            sim_step=lambda dt: sim.step(max(1, int(round(dt / sim_dt)))),
                            clock=SimClock(sim.t_s), pose=sim.base_pose)
    runner.sim = sim
    return runner
