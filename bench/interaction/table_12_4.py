"""Chang 2026 table 12.4, side by side: the torque laws of the 1 kHz tick on the FR3 in MuJoCo,
one run, the same scenarios and gains for each (``interaction.law``: lie = the Lie-PD law of eq.
12.2, gic = geometric impedance control (Seo et al. 2023), lie_osd = the Lie-group impedance with
operational-space dynamics (Kim et al. 2025), cartesian = the classical law), ratios to Lie-PD.

    .venv/bin/python bench/interaction/table_12_4.py
    .venv/bin/python bench/interaction/table_12_4.py --robot fr3 --json out.json

Scenarios (lockstep, simulated time; the tick is the engine, ``InteractionController``):

- step: the target jumps 3 cm and 0.15 rad (the governor ramps the reference at the configured
  speeds); settle = the time after the reference arrives until the EE stays within 5 % of the step
  (1.5 mm and 7.5 mrad); overshoot = the largest position error past the target along the step;
  final = the error after 3 s;
- track: a 50 Hz target stream on a circle of 3 cm radius at 0.5 Hz in the y–z plane with a ±0.1 rad
  roll, 4 s; RMS position and orientation error of the EE against the stream after the first 1 s;
- push: 10 N along world x for 2 s in impedance mode; deflection / (F/K) and peak deflection;
- frame: the step with an anisotropic K (x soft, z stiff) repeated with the target expressed after
  the arm is yawed 90° about world z: a law whose stiffness is SE(3)-consistent (written in the
  reference frame) deflects the same way in both; the ratio is the largest difference of the
  steady-state error along the reference axes;
- cost: ns per gated tick inside C++ (``InteractionTick.bench_tick_ns``, median of 5 × 20000).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from machine import load, machine  # noqa: E402  (bench/machine.py)

from hri_core import se3  # noqa: E402
from hri_runtime.config.tree import load_robot_config  # noqa: E402
from hri_interaction.core.controller import InteractionParams  # noqa: E402
from hri_interaction.engine import PythonEngine  # noqa: E402

LAWS = ("lie", "gic", "lie_osd", "cartesian")


def make(cfg: dict, law: str, **changes) -> PythonEngine:
    sec = dict(cfg["interaction"], law=law, **changes)
    p = InteractionParams.from_config(sec)
    q0 = np.deg2rad(cfg["joints"]["named_positions_deg"]["home"])
    return PythonEngine(cfg, q0, params=p)


def now(eng: PythonEngine) -> float:
    """The simulated time at the start of the engine's last tick."""
    return (eng.ticks - 1) * eng.dt


def err(T, Tr):
    """(position error m, rotation error rad) of T against Tr, in Tr's frame."""
    xi = np.asarray(se3.log(se3.inverse(Tr) @ T))
    return float(np.linalg.norm(Tr[:3, :3] @ xi[3:])), float(np.linalg.norm(xi[:3]))


def rot(axis, angle):
    return np.asarray(se3.exp(np.r_[np.asarray(axis, float) * angle, 0, 0, 0]))[:3, :3]


def step(cfg, law):
    loop = make(cfg, law)
    T0 = loop.sim.ee_pose()
    Tr = T0.copy()
    Tr[:3, 3] += [0.03, 0.0, 0.0]
    Tr[:3, :3] = rot([0, 0, 1], 0.15) @ T0[:3, :3]
    loop.ctrl.set_reference(Tr)
    t_arrive, out, overshoot = [None], [], [0.0]

    def each(lp, _r):
        if t_arrive[0] is None and np.allclose(lp.ctrl.world_T_d, Tr):
            t_arrive[0] = now(lp)
        T = lp.sim.ee_pose()
        ep, er = err(T, Tr)
        out.append((now(lp), ep, er))
        overshoot[0] = max(overshoot[0], float(T[0, 3] - Tr[0, 3]))

    loop.step(round(3.0 / loop.dt), each)
    ta = t_arrive[0]
    settle = None
    for t, ep, er in reversed(out):     # the 5 % band of the step (1.5 mm, 7.5 mrad)
        if ep > 0.05 * 0.03 or er > 0.05 * 0.15:
            settle = t - ta
            break
    return {"settle_s": settle if settle is not None else 0.0, "overshoot_mm": 1e3 * overshoot[0],
            "final_mm": 1e3 * out[-1][1], "final_mrad": 1e3 * out[-1][2]}


def track(cfg, law):
    loop = make(cfg, law)
    T0 = loop.sim.ee_pose()
    e_p, e_r = [], []
    target = [T0]

    def each(lp, _r):
        t = now(lp)
        k = int(round(t / lp.dt))
        if k % 20 == 0:
            T = T0.copy()
            a = 2 * np.pi * 0.5 * t
            T[:3, 3] += [0.0, 0.03 * np.sin(a), 0.03 * (1 - np.cos(a))]
            T[:3, :3] = T0[:3, :3] @ rot([1, 0, 0], 0.1 * np.sin(a))
            lp.ctrl.set_reference(T)
            target[0] = T
        if t > 1.0:
            ep, er = err(lp.sim.ee_pose(), target[0])
            e_p.append(ep)
            e_r.append(er)

    loop.step(round(4.0 / loop.dt), each)
    return {"rms_mm": 1e3 * float(np.sqrt(np.mean(np.square(e_p)))),
            "rms_mrad": 1e3 * float(np.sqrt(np.mean(np.square(e_r))))}


def push(cfg, law):
    loop = make(cfg, law)
    T0 = loop.sim.ee_pose()
    f = 10.0
    loop.sim.push([f, 0.0, 0.0])
    peak = [0.0]
    loop.step(round(2.0 / loop.dt), lambda lp, r: peak.__setitem__(0, max(peak[0], lp.sim.ee_pose()[0, 3] - T0[0, 3])))
    k = float(loop.ctrl.K[3, 3])
    d = float(loop.sim.ee_pose()[0, 3] - T0[0, 3])
    return {"deflection_over_F_K": d / (f / k), "peak_mm": 1e3 * peak[0]}


def frame(cfg, law):
    """Steady-state error of a step under a 3 N push along the reference's x axis, with an
    anisotropic K, at the home pose and at the home pose yawed 90° (joint 1); the error is
    expressed along the reference axes."""
    K = [60.0, 60.0, 60.0, 3000.0, 12000.0, 12000.0]
    res = []
    for yaw in (0.0, np.pi / 2):
        c = json.loads(json.dumps(cfg))
        c["joints"]["named_positions_deg"]["home"] = list(c["joints"]["named_positions_deg"]["home"])
        c["joints"]["named_positions_deg"]["home"][0] += np.rad2deg(yaw)
        loop = make(c, law, impedance=dict(c["interaction"]["impedance"], stiffness_diag=K))
        Tr = loop.sim.ee_pose()
        loop.sim.push(Tr[:3, :3] @ np.array([3.0, 0.0, 3.0]))
        loop.step(round(1.5 / loop.dt))
        T = loop.sim.ee_pose()
        res.append(Tr[:3, :3].T @ (T[:3, 3] - Tr[:3, 3]))
    return {"frame_change_um": 1e6 * float(np.abs(res[0] - res[1]).max()),
            "deflection_x_um": 1e6 * float(res[0][0])}


def cost(cfg, law):
    loop = make(cfg, law)
    st = loop.sim.state()
    k = loop.ctrl._cx
    args = (st.q, st.dq, st.world_T_ee, st.body_twist, st.body_jacobian, st.gravity, st.coriolis, loop.dt)
    runs = [k.bench_tick_ns(*args, 20000, st.mass_matrix) for _ in range(5)]
    return {"tick_ns": statistics.median(runs)}


SCENARIOS = (("step", step), ("track", track), ("push", push), ("frame", frame), ("cost", cost))
ROWS = (("step settle s", "step", "settle_s", "{:.3f}"), ("step overshoot mm", "step", "overshoot_mm", "{:.3f}"),
        ("step final mm", "step", "final_mm", "{:.4f}"), ("step final mrad", "step", "final_mrad", "{:.2f}"), ("track RMS mm", "track", "rms_mm", "{:.3f}"),
        ("track RMS mrad", "track", "rms_mrad", "{:.3f}"),
        ("push deflection / (F/K)", "push", "deflection_over_F_K", "{:.3f}"),
        ("push peak mm", "push", "peak_mm", "{:.3f}"),
        ("anisotropic K, yawed 90°: change µm", "frame", "frame_change_um", "{:.2f}"),
        ("anisotropic K: x deflection µm", "frame", "deflection_x_um", "{:.1f}"),
        ("tick inside C++ ns", "cost", "tick_ns", "{:.0f}"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robot", default="fr3")
    ap.add_argument("--laws", default=",".join(LAWS))
    ap.add_argument("--json", default=None, help="also write the results here")
    a = ap.parse_args(argv)
    laws = [x for x in a.laws.split(",") if x]
    bad = [x for x in laws if x not in LAWS]
    if bad:
        print(f"table_12_4: unknown law(s) {bad}; choose from {LAWS}", file=sys.stderr)
        return 2
    from hri_runtime import provenance

    cfg = load_robot_config(a.robot)
    print(f"# provenance: {provenance.line()}")
    print(f"# machine: {machine()}; {load()} before")
    res = {law: {name: fn(cfg, law) for name, fn in SCENARIOS} for law in laws}
    print(f"# {load()} after")
    print(f"\nChang 2026 table 12.4 laws on the {a.robot} (MuJoCo, 1 kHz lockstep); ratio = law / lie\n")
    print("| metric | " + " | ".join(laws) + " | " + " | ".join(f"{x} / lie" for x in laws if x != "lie") + " |")
    print("|---|" + "---:|" * (2 * len(laws) - 1))
    for label, sc, key, fmt in ROWS:
        vals = [res[law][sc][key] for law in laws]
        base = res["lie"][sc][key] if "lie" in res else None
        shown = float(fmt.format(base)) if base is not None else 0.0     # a ratio to a displayed 0 means nothing
        ratios = [(f"{v / base:.2f}" if shown else "–") for law, v in zip(laws, vals) if law != "lie"]
        print(f"| {label} | " + " | ".join(fmt.format(v) for v in vals) + " | " + " | ".join(ratios) + " |")
    if a.json:
        Path(a.json).write_text(json.dumps({"provenance": provenance.provenance("hri_interaction"),
                                            "robot": a.robot, "results": res}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
