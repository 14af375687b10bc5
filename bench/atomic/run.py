#!/usr/bin/env python3
"""Atomic controller benchmark: cost of one control update, ours vs a naive controller,
plus the node tick and the simulated robot step for scale. Timing lives here, never in tests.

    .venv/bin/python bench/atomic/run.py                 # ~10-20 s on the loaded VM
    .venv/bin/python bench/atomic/run.py --ticks 20000 --repeats 5

Sections (all on the same scripted command sequence, same config numbers):
* core: ``AtomicController.step`` (+ ``on_pulse`` of hri_pulse's 3-message pattern) on a kinematic
  leg (ticks integrate the commanded RPM through the configured gear and encoder: no MuJoCo),
  1 ms updates, vs ``NaiveAtomic``: the Tino VR design's structure (one if/elif chain per state on
  ``millis()``, the ``isCase2Locked`` flag, an inline PID, no queue, no pulse gate, no faults,
  no validation). Reported: ns per update (min and median over repeats) and the ratio ours/naive.
* node: ``AtomicNode.tick`` on InprocContext with driver ``topic`` (read leg state, step the
  controller, publish leg_rpm, cmd_vel, atomic_state JSON; CDR on every hop) per 5 ms tick.
* sim: ``TinoSim.step`` (MuJoCo, 1 ms physics step) for scale; and the same beside a busy Python
  thread of the process (a node's middleware spin thread), stepped by ``mujoco.mj_step`` (which
  releases the GIL on every call) and by ``hri_core.rt.mj_step`` (which holds it), side by side.
"""
from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import sys
import threading
import time

from hri_runtime.config.tree import load_robot_config

from hri_atomic_motion.core import AtomicController, AtomicParams

SEQUENCE = [(1, 0), (2, 0), (3, 1), (2, 0), (3, -1), (3, 0)]   # the demo's sequence
GAP_S = 2.5


class NaiveAtomic:
    """Direct-port controller (no queue, no gate, no faults, no validation): what a direct port of
    the microcontroller loop looks like. Numbers from the same config section."""

    def __init__(self, a: dict):
        self.leg, self.base = a["leg"], a["base"]
        self.state, self.direction, self.start_ms, self.locked = 0, 0, 0, False
        self.reached, self.i_term, self.prev_ticks, self.last_ms = False, 0.0, 0, 0
        self.correcting = False
        self.starts = 0

    def on_pulse(self, state, direction, now_ms):
        if self.locked or state == 0:            # isCase2Locked: ignore commands during a movement
            return
        self.state, self.direction, self.start_ms, self.locked = int(state), int(direction), now_ms, True
        self.reached, self.i_term = False, 0.0
        self.starts += 1

    def _scale(self, rpm):
        return rpm * (self.leg["scale_forward"] if rpm > 0 else self.leg["scale_backward"])

    def update(self, now_ms, ticks, home):
        L, B = self.leg, self.base
        e = now_ms - self.start_ms
        rpm, v, w = 0.0, 0.0, 0.0
        if self.state == 0:
            err = ticks - L["neutral_ticks"]
            if abs(err) > L["tolerance_ticks"]:
                self.correcting = True
            if self.correcting:
                if abs(err) <= L["settle_ticks"]:
                    self.correcting = False
                else:
                    rpm = -L["rpm_neutral"] if err > 0 else L["rpm_neutral"]
        elif self.state == 1:
            push_ms = L["push_duration_s"] * 1000.0
            f = L["push_fractions"]
            if e < f[0] * push_ms:
                rpm = L["rpm_forward"]
            elif e < (f[0] + f[1]) * push_ms:
                rpm = 0.0
            elif e < push_ms:
                rpm = -L["rpm_backward"]
            p = B["nudge_phases_s"]
            if p[0] * 1000 <= e < (p[0] + p[1]) * 1000:
                v = B["nudge_linear_m_s"]
            elif (p[0] + p[1]) * 1000 <= e < sum(p) * 1000:
                v = -B["nudge_linear_m_s"]
            if e >= max(push_ms, sum(p) * 1000):
                self.state, self.locked = 0, False
        elif self.state == 2:
            target = L["max_extension_ticks"]
            if not self.reached and target - ticks > L["extension_reached_ticks"]:
                rpm = L["rpm_forward"]
            else:
                self.reached = True
                dt = max(now_ms - self.last_ms, 1) / 1000.0
                err = target - ticks
                self.i_term += L["hold_ki"] * err * dt
                d = -(ticks - self.prev_ticks) / dt
                rpm = max(-L["hold_output_max_rpm"], min(L["hold_output_max_rpm"],
                                                        L["hold_kp"] * err + self.i_term + L["hold_kd"] * d))
            if e >= B["coordination_s"] * 1000:
                self.locked = False                 # hold continues until the next command
        elif self.state == 3:
            if not home:
                rpm = -L["rpm_backward"]
            if e < B["move_s"] * 1000:
                v, w = B["move_linear_m_s"], -self.direction * B["move_angular_rad_s"]
            elif home:
                self.state, self.locked = 0, False
        self.prev_ticks, self.last_ms = ticks, now_ms
        return self._scale(rpm) if rpm else 0.0, v, w


def script(cfg):
    """(t_s, pulse or None) for every 1 ms update: hri_pulse's 3 messages 40 ms apart, then 0."""
    dt = cfg["atomic"]["control_period_s"]
    n = int(round((0.2 + GAP_S * len(SEQUENCE)) / dt))
    pulses = {}
    for i, (s, d) in enumerate(SEQUENCE):
        k0 = int(round((0.2 + GAP_S * i) / dt))
        for j in range(3):
            pulses[k0 + int(round(0.04 * j / dt))] = (s, d)
        pulses[k0 + int(round(0.12 / dt))] = (0, 0)
    return [(k * dt, pulses.get(k)) for k in range(n)]


def leg_rate(cfg):
    """Encoder ticks per second per motor RPM of the kinematic leg (gear, encoder from config)."""
    a = cfg["atomic"]
    return a["leg"]["encoder_ticks_per_rev"] / (60.0 * a["sim"]["leg_gear_ratio"])


def run_ours(cfg, steps):
    ctrl = AtomicController(AtomicParams.from_config(cfg["atomic"]))
    k, dt, pos = leg_rate(cfg), cfg["atomic"]["control_period_s"], 0.0
    home_ticks = cfg["atomic"]["leg"]["neutral_ticks"]
    t0 = time.perf_counter_ns()
    for t, p in steps:
        if p is not None:
            ctrl.on_pulse(float(p[0]), float(p[1]), t)
        out = ctrl.step(t, int(pos), pos <= home_ticks + 5)
        pos += out.leg_rpm * k * dt
    ns = time.perf_counter_ns() - t0
    return ns / len(steps), len(ctrl.started), ctrl.fault


def run_naive(cfg, steps):
    c = NaiveAtomic(cfg["atomic"])
    k, dt, pos = leg_rate(cfg), cfg["atomic"]["control_period_s"], 0.0
    home_ticks = cfg["atomic"]["leg"]["neutral_ticks"]
    t0 = time.perf_counter_ns()
    for t, p in steps:
        now_ms = int(t * 1000.0)
        if p is not None:
            c.on_pulse(p[0], p[1], now_ms)
        rpm, v, w = c.update(now_ms, int(pos), pos <= home_ticks + 5)
        pos += rpm * k * dt
    return (time.perf_counter_ns() - t0) / len(steps), c.starts


def bench_node(cfg, seconds):
    from hri_runtime.inproc import InprocContext

    from hri_atomic_motion.messages import leg_state_msg, parse_leg_state
    from hri_atomic_motion.nodes.atomic_node import AtomicNode
    ctx = InprocContext(start_time_s=0.0)
    node = AtomicNode(cfg=cfg, context=ctx, parameters={"atomic.node.driver": "topic"})
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    StopSupervisorNode(cfg=cfg, context=ctx)      # its latched state releases the node (silence = stop)
    while ctx.spin_once():
        pass
    assert not node.stop.stopped
    n = int(seconds / cfg["atomic"]["node"]["period_s"])
    reading = parse_leg_state(leg_state_msg(0.0, 0, True, 0.0))
    t0 = time.perf_counter_ns()
    for _ in range(n):
        node.leg_input.on_reading(reading, node.now())   # fresh leg state every tick (what tino_sim provides)
        node.tick()
    ns = (time.perf_counter_ns() - t0) / n
    node.destroy_node()
    return ns


def moving_tino(cfg):
    """A TinoSim with the leg and the base moving (the steps the benches time)."""
    from hri_sim.tino import TinoSim, TinoSimParams
    sim = TinoSim(TinoSimParams.from_config(cfg["atomic"]))
    sim.set_twist(cfg["atomic"]["base"]["move_linear_m_s"], 0.0)
    sim.set_leg_rpm(cfg["atomic"]["leg"]["rpm_forward"])
    return sim


def bench_sim(cfg, steps):
    sim = moving_tino(cfg)
    t0 = time.perf_counter_ns()
    sim.step(steps)
    return (time.perf_counter_ns() - t0) / steps


def bench_sim_beside_busy_thread(cfg, steps, mj_step):
    """ns per ``TinoSim.step`` while another Python thread of the process is runnable (what a
    middleware's spin thread is in a node), the physics stepped by ``mj_step``."""
    sim = moving_tino(cfg)
    sim._step = mj_step
    stop, running = threading.Event(), threading.Event()

    def busy():
        running.set()
        x = 0
        while not stop.is_set():
            for i in range(1000):
                x += i

    th = threading.Thread(target=busy, daemon=True)
    th.start()
    running.wait()
    try:
        t0 = time.perf_counter_ns()
        sim.step(steps)
        return (time.perf_counter_ns() - t0) / steps
    finally:
        stop.set()
        th.join()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--robot", default="tino")
    a = ap.parse_args(argv)
    logging.disable(logging.WARNING)
    cfg = load_robot_config(a.robot)
    steps = script(cfg)
    ours, naive = [], []
    for _ in range(a.repeats):
        ns, moves, fault = run_ours(cfg, steps)
        ours.append(ns)
        ns_naive, naive_moves = run_naive(cfg, steps)
        naive.append(ns_naive)
    node = [bench_node(cfg, 2.0) for _ in range(a.repeats)]
    sim = [bench_sim(cfg, 2000) for _ in range(a.repeats)]
    import mujoco
    from hri_core import rt
    busy_mujoco, busy_core = [], []
    for _ in range(2 * a.repeats):         # alternating; the GIL hand-over is bistable: see the page
        busy_mujoco.append(bench_sim_beside_busy_thread(cfg, 200, mujoco.mj_step))
        busy_core.append(bench_sim_beside_busy_thread(cfg, 200, rt.mj_step))
    load = os.getloadavg()[0]
    from hri_runtime import provenance  # commit, version, build flags
    print(f"# provenance: {provenance.line()}")
    print(f"# atomic bench: {platform.machine()}, Python {platform.python_version()}, load average {load:.1f}, "
          f"{len(steps)} updates x {a.repeats} repeats, sequence {SEQUENCE}")
    print(f"ours: {moves} movements, fault {fault}; naive: {naive_moves} movements")
    print("| what | min ns/update | median ns/update |")
    print("|---|---|---|")
    for name, xs in (("core ours (AtomicController.step)", ours), ("core naive (naive if/elif)", naive),
                     ("node tick (AtomicNode.tick, inproc, 3 publishes)", node), ("TinoSim.step (1 ms MuJoCo)", sim),
                     ("TinoSim.step beside a busy thread, mujoco.mj_step (GIL released)", busy_mujoco),
                     ("TinoSim.step beside a busy thread, hri_core mj_step (GIL held)", busy_core)):
        print(f"| {name} | {min(xs):,.0f} | {statistics.median(xs):,.0f} |")
    print(f"TinoSim.step beside a busy thread, {len(busy_core)} runs of 200 steps each: mean "
          f"{statistics.mean(busy_mujoco) / 1e3:,.1f} us (mujoco.mj_step) vs {statistics.mean(busy_core) / 1e3:,.1f} us "
          f"(hri_core mj_step), ratio {statistics.mean(busy_mujoco) / statistics.mean(busy_core):.1f}; worst run "
          f"{max(busy_mujoco) / 1e3:,.1f} vs {max(busy_core) / 1e3:,.1f} us, ratio {max(busy_mujoco) / max(busy_core):.0f}; "
          f"runs slower than the 1 ms step itself: {sum(x > 1e6 for x in busy_mujoco)} vs {sum(x > 1e6 for x in busy_core)}")
    print(f"ratio core ours/naive: min {min(ours) / min(naive):.2f}, median "
          f"{statistics.median(ours) / statistics.median(naive):.2f}")
    period_ns = cfg["atomic"]["node"]["period_s"] * 1e9
    print(f"node tick median = {100 * statistics.median(node) / period_ns:.1f} % of the "
          f"{cfg['atomic']['node']['period_s'] * 1e3:.0f} ms node period")
    return 0


if __name__ == "__main__":
    sys.exit(main())
