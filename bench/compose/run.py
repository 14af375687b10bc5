#!/usr/bin/env python3
"""CPU cost of the composed stacks (the real nodes on the in-process context, stepped by the one
lockstep runner, recorded by the bag recorder) against what does the same work without them.
Timing lives here, never in tests.

    .venv/bin/python bench/compose/run.py                      # in-process sections, ~1 min
    .venv/bin/python bench/compose/run.py --tree OLD --tree .  # + `make run` of two checkouts, alternating

Sections (user+sys CPU seconds; min and median over ``--repeats``; the ratio composed / core):

* atomic: the demo's sequence (1, 2, 3r, 2, 3l, 3, 2.5 s apart, 15.2 s simulated) at 1 ms:
  *composed* = ``hri_atomic_motion.e2e.build_embedded`` (stop supervisor + atomic node on its
  embedded MuJoCo Tino, pulses on the topic, every output a CDR message) + the bag recorder on the
  plot's topics (``hri atomic demo --chain lockstep`` without the plot); *core* = the same
  controller and MuJoCo drivers (``AtomicDrive`` on ``TinoSim``) called by the lockstep runner
  without a context, pulses called directly, nothing recorded (what the former driver did);
  *composed, no recorder* separates the recorder's share.
* pid: relay-tuning every joint of the humanoid arm (setup s1) as a job on the composed live stack
  (``hri_pid_tuning.compose``: stop supervisor, ``joint_robot``, tuning node): stepped by the
  lockstep runner (one step per robot period, what ``hri tune`` runs) vs the same stack driven by the
  context's own event loop (``InprocContext.spin_until``, what the former ``run_live`` did).
* make run (``--tree DIR``, repeatable): ``hri config check && hri teleop-demo -q && hri atomic demo``
  of each checkout's ``.venv`` (user+sys of the whole command, children included), the trees in
  alternating order per repeat so load drifts hit each alike; outputs go to a temporary folder.
"""
from __future__ import annotations

import argparse
import logging
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hri_runtime.config.tree import load_robot_config

SEQUENCE = [(1, 0), (2, 0), (3, 1), (2, 0), (3, -1), (3, 0)]    # hri atomic demo's default
GAP_S, LEAD_S = 2.5, 0.2


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def atomic_composed(cfg: dict, out: Path, record: bool = True) -> tuple[float, str]:
    from hri_atomic_motion.e2e import build_embedded

    t0 = _cpu()
    chain = build_embedded(cfg)
    if record:
        chain.record(out / "run.mcap")
    chain.lockstep.run_for(LEAD_S)
    for s, d in SEQUENCE:
        chain.pulse(s, d)
        chain.lockstep.run_for(GAP_S)
    chain.close()
    cpu = _cpu() - t0
    return cpu, f"movements {chain.atomic.ctrl.movements}, final ticks {chain.robot.leg_ticks()}"


def atomic_core(cfg: dict, out: Path) -> tuple[float, str]:
    from hri_runtime.lockstep import Lockstep
    from hri_sim.tino import TinoSim, TinoSimParams

    from hri_atomic_motion.core import AtomicController, AtomicParams
    from hri_atomic_motion.core.drive import AtomicDrive
    from hri_atomic_motion.sim_drivers import mujoco_drivers

    t0 = _cpu()
    sim = TinoSim(TinoSimParams.from_config(cfg["atomic"]))
    ctrl = AtomicController(AtomicParams.from_config(cfg["atomic"]))
    drive = AtomicDrive(ctrl, **mujoco_drivers(sim))
    n = max(1, int(round(float(cfg["atomic"]["control_period_s"]) / sim.model.opt.timestep)))
    ls = Lockstep(float(cfg["atomic"]["control_period_s"]), sim_step=lambda dt: sim.step(n))
    ls.every(lambda t: drive.step(t, False))

    def pulse(s: int, d: int) -> None:
        for _ in range(3):
            drive.on_pulse(s, d, ls.now_s(), False)
            ls.run_for(0.04)
        drive.on_pulse(0, 0, ls.now_s(), False)

    ls.run_for(LEAD_S)
    for s, d in SEQUENCE:
        pulse(s, d)
        ls.run_for(GAP_S)
    cpu = _cpu() - t0
    return cpu, f"movements {ctrl.movements}, final ticks {sim.leg_ticks()}"


def pid_relay(lockstep: bool) -> tuple[float, str]:
    from hri_pid_tuning.compose import compose

    t0 = _cpu()
    st = compose("humanoid_arm", "s1")
    at = st.tuner.session.autotuner
    job = lambda: [at.tune_single_joint(j) for j in at.joint_order]    # noqa: E731
    if lockstep:
        res = st.run_job("bench", job)
    else:
        done: dict = {}
        st.tuner.run_job("bench", job, lambda r, e: done.update(r=r, e=e))
        st.ctx.spin_until(lambda: "r" in done, 1e7)
        res = done["r"]
    st.close()
    cpu = _cpu() - t0
    return cpu, (", ".join(f"{j} Ku {d.relay.ku:.3f} Tu {d.relay.tu_s:.4f} s" for j, d in zip(at.joint_order, res))
                 + f"; {st.ctx.now_s():.3f} s simulated")


def make_run(tree: Path, tmp: Path) -> float:
    hri = tree / ".venv" / "bin" / "hri"
    cmd = "(" + (f"{hri} config check >/dev/null && {hri} teleop-demo --out {tmp}/teleop -q >/dev/null "
           f"&& {hri} atomic demo --out {tmp}/atomic >/dev/null") + ") 2>/dev/null"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["bash", "-c", cmd], cwd=tmp, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _label(tree: Path) -> str:
    """A checkout by its commit (no machine path in the output)."""
    r = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or tree.name


def _row(name: str, xs: list[float]) -> str:
    return f"| {name} | {min(xs):.2f} | {statistics.median(xs):.2f} |"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tree", action="append", default=[], type=Path,
                    help="a checkout with a built .venv whose `make run` commands are timed (repeatable)")
    ap.add_argument("--skip-inproc", action="store_true", help="only the --tree commands")
    a = ap.parse_args(argv)
    logging.disable(logging.WARNING)
    from hri_runtime import provenance  # commit, version, build flags

    print(f"# provenance: {provenance.line()}")
    load0 = os.getloadavg()[0]
    res: dict[str, list[float]] = {}
    notes = {}
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        if not a.skip_inproc:
            cfg = load_robot_config("tino")
            for i in range(a.repeats + 1):            # the first round warms up (imports, model loads)
                for name, fn in (("atomic composed (nodes, CDR, bag recorder)", lambda: atomic_composed(cfg, tmp)),
                                 ("atomic core (controller + MuJoCo drivers, no nodes)", lambda: atomic_core(cfg, tmp)),
                                 ("atomic composed, no recorder", lambda: atomic_composed(cfg, tmp, False)),
                                 ("pid live stack, lockstep runner", lambda: pid_relay(True)),
                                 ("pid live stack, context spin_until (former)", lambda: pid_relay(False))):
                    cpu, note = fn()
                    if i == 0:
                        continue
                    res.setdefault(name, []).append(cpu)
                    notes[name] = note
        for i in range(a.repeats):
            trees = a.tree if i % 2 == 0 else a.tree[::-1]
            for tree in trees:
                res.setdefault(f"make run: {_label(tree)}", []).append(make_run(tree.resolve(), tmp))
    print(f"# compose bench: {platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()}, "
          f"load average {load0:.1f} before / {os.getloadavg()[0]:.1f} after, {a.repeats} repeats, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    for name, note in notes.items():
        print(f"# {name}: {note}")
    print("| what | min CPU s | median CPU s |")
    print("|---|---:|---:|")
    for name, xs in res.items():
        print(_row(name, xs))
    names = list(res)
    if not a.skip_inproc:
        for x, y, what in ((0, 1, "atomic composed / core"), (2, 1, "atomic composed without recorder / core"),
                           (3, 4, "pid lockstep / spin_until")):
            c, k = res[names[x]], res[names[y]]
            print(f"ratio {what}: min {min(c) / min(k):.2f}, median {statistics.median(c) / statistics.median(k):.2f}")
    runs = [n for n in names if n.startswith("make run: ")]
    for n in runs[1:]:
        print(f"ratio {n[10:]} / {runs[0][10:]}: min {min(res[n]) / min(res[runs[0]]):.2f}, median "
              f"{statistics.median(res[n]) / statistics.median(res[runs[0]]):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
