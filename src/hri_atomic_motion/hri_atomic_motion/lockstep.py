"""Lockstep run of the atomic controller on drivers (simulated robot): one controller update per
``control_period_s`` of simulated time, the simulation advanced in between. No wall clock.

:class:`Timeline` records what the plot shows (commanded state, leg ticks, motor RPM, base twist)
and saves it as ``.npz`` or ``.csv``.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

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
    """Controller + drivers + a ``step_sim(dt)`` that advances the simulated robot."""

    def __init__(self, ctrl: AtomicController, leg: LegDriver, base: BaseDriver,
                 step_sim: Callable[[float], None], now_s: Callable[[], float],
                 pose: Callable[[], tuple[float, float, float]] | None = None):
        self.ctrl, self.leg, self.base = ctrl, leg, base
        self.step_sim, self.now_s, self.pose = step_sim, now_s, pose
        self.dt = ctrl.params.control_period_s
        self.timeline = Timeline()

    def tick(self) -> None:
        t = self.now_s()
        r = self.leg.read()
        out = self.ctrl.step(t, r.ticks, r.home_pressed)
        self.leg.command_rpm(out.leg_rpm)
        self.base.command_twist(out.linear_m_s, out.angular_rad_s)
        x, y, yaw = self.pose() if self.pose else (0.0, 0.0, 0.0)
        state = self.ctrl.current.state if self.ctrl.current else 0
        self.timeline.append((t, state, r.ticks, out.leg_rpm, r.rpm, out.linear_m_s, out.angular_rad_s,
                              float(self.ctrl.locked), float(self.ctrl.fault is not None), x, y, yaw))
        self.step_sim(self.dt)

    def run_for(self, duration_s: float, on_tick: Callable[[float], None] | None = None) -> None:
        n = int(round(duration_s / self.dt))
        for _ in range(n):
            if on_tick is not None:
                on_tick(self.now_s())
            self.tick()

    def pulse(self, state: int, direction: int = 0, period_s: float = 0.04, repeats: int = 3) -> None:
        """hri_pulse's pattern: ``repeats`` identical messages ``period_s`` apart, then state 0."""
        for _ in range(repeats):
            self.ctrl.on_pulse(float(state), float(direction), self.now_s())
            self.run_for(period_s)
        self.ctrl.on_pulse(0.0, 0.0, self.now_s())


def tino_sim_runner(cfg: dict):
    """A :class:`LockstepRunner` on a fresh ``hri_sim.tino.TinoSim`` for the merged config ``cfg``."""
    from hri_sim.tino import TinoSim, TinoSimParams

    from .core.params import AtomicParams
    from .sim_drivers import MujocoBaseDriver, MujocoLegDriver

    sim = TinoSim(TinoSimParams.from_config(cfg["atomic"]))
    ctrl = AtomicController(AtomicParams.from_config(cfg["atomic"]))
    sim_dt = sim.model.opt.timestep
    runner = LockstepRunner(ctrl, MujocoLegDriver(sim), MujocoBaseDriver(sim),
                            step_sim=lambda dt: sim.step(max(1, int(round(dt / sim_dt)))),
                            now_s=lambda: sim.t_s, pose=sim.base_pose)
    runner.sim = sim
    return runner
