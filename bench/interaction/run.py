"""Interaction benchmark: the 1 kHz loop with MuJoCo in it — the C++ real-time thread
(``hri_core.rt.RtLoop``) vs the Python-timer node loop vs a naive ``time.sleep`` loop, one after
the other in one run (missed deadlines, period error, tick cost, ratios); the gated tick, Python
oracle vs C++ engine (one call, interleaved); per-tick compute (ours vs a naive numpy/scipy
implementation).

    .venv/bin/python bench/interaction/run.py --loop-only     # the 60 s loops (docs/benchmarks.md)
    .venv/bin/python bench/interaction/run.py                 # everything
    .venv/bin/python bench/interaction/run.py --loop-only --loop-seconds 5

Loop statistics are computed the same way for all three loops from the tick start times
(CLOCK_MONOTONIC): period error = |start_k - start_(k-1) - T|; a missed deadline = a period longer
than 2 T (a whole period without a tick: the definition of the node's diagnostics); tick cost =
read + tick + write (+ publish for the node loop).

Per-tick rows: µs per call (median of 5 repeats of ``--calls`` calls), and the ratio naive/ours.
"ours" = the Python test oracle (tests/interaction/oracle: the laws and the tick in Python, on
the hri_core C++ SE(3) maps and kernels) and the C++ tick ``InteractionTick``. The naive implementation is written here
(scipy ``expm``/``logm`` for SE(3), series left Jacobian, finite-difference d/dt dexp) – what a
first numpy implementation of the same equations looks like.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np
import scipy.linalg as sla

from hri_runtime.config.tree import load_robot_config
from hri_interaction.core.controller import (InteractionController, InteractionParams, loop_config,
                                             tick_params)
from hri_sim.arm_sim import ArmSim

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "interaction"))
from oracle.admittance import CartesianAdmittance, LieAdmittance  # noqa: E402  (the Python oracle)
from oracle.controller import PyInteractionController  # noqa: E402
from oracle.impedance import cartesian_impedance_torque, lie_impedance_torque  # noqa: E402


# ----------------------------------------------------------------------------- naive reference
def n_hat(xi):
    w, v = xi[:3], xi[3:]
    X = np.zeros((4, 4))
    X[:3, :3] = [[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]
    X[:3, 3] = v
    return X


def n_vee(X):
    return np.array([X[2, 1], X[0, 2], X[1, 0], X[0, 3], X[1, 3], X[2, 3]])


def n_ad(xi):
    w, v = xi[:3], xi[3:]
    W = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
    Vx = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    A = np.zeros((6, 6))
    A[:3, :3] = W
    A[3:, 3:] = W
    A[3:, :3] = Vx
    return A


def n_left_jacobian(xi, terms=12):
    A = n_ad(xi)
    J, term = np.eye(6), np.eye(6)
    for k in range(1, terms):
        term = term @ A / (k + 1)
        J = J + term
    return J


def naive_impedance(T, V, Jb, bias, T_ref, K, D):
    e = n_vee(np.real(sla.logm(np.linalg.inv(T_ref) @ T)))
    return Jb.T @ (-K @ e - D @ V) + bias


def naive_admittance_step(state, F, M, D, K, dt, h=1e-6):
    lam, lam_dot = state
    J = n_left_jacobian(lam)
    Jd = (n_left_jacobian(lam + h * lam_dot) - n_left_jacobian(lam - h * lam_dot)) / (2 * h)
    M_l = J.T @ M @ J
    D_l = J.T @ (D @ J + M @ Jd)
    acc = np.linalg.solve(M_l, J.T @ F - D_l @ lam_dot - K @ lam)
    lam_dot = lam_dot + dt * acc
    lam = lam + dt * lam_dot
    sla.expm(n_hat(lam))          # T_mod = T_d exp(λ)
    return lam, lam_dot


# ----------------------------------------------------------------------------- timing helpers
def per_call_us(fn, calls: int, repeats: int = 5) -> float:
    best = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        best.append((time.perf_counter() - t) / calls * 1e6)
    return float(np.median(best))


def compute_rows(cfg, calls: int, naive_calls: int):
    sec = cfg["interaction"]
    p = InteractionParams.from_config(sec)
    home = np.deg2rad(cfg["joints"]["named_positions_deg"]["home"])
    sim = ArmSim.of_robot("fr3", home, "torque", timestep_s=1.0 / p.rate_hz, ee_site=sec["ee_site"])
    sim.set_joint_state(sim.q, np.full(sim.n, 0.05))
    st = sim.state()
    T_ref = st.world_T_ee.copy()
    T_ref[:3, 3] += [0.01, -0.005, 0.003]
    K, D = p.impedance.stiffness, p.impedance.damping
    bias = st.gravity + st.coriolis
    a = p.admittance
    F = np.array([0.2, -0.1, 0.05, 3.0, -2.0, 5.0])
    dt = 1.0 / p.rate_hz

    lie = LieAdmittance(a)
    lie.reset(np.full(6, 0.01), np.full(6, 0.01))
    cart = CartesianAdmittance(a)
    tmax = cfg["joints"]["torque_max_nm"]
    ctrl_imp = PyInteractionController(p, T_ref, sim.n, torque_max_nm=tmax)
    ctrl_adm = PyInteractionController(p, T_ref, sim.n, torque_max_nm=tmax)
    ctrl_adm.request_mode("admittance", st)
    ctrl_adm.set_wrench(F)
    naive_state = [np.full(6, 0.01), np.full(6, 0.01)]

    def naive_adm():
        naive_state[:] = naive_admittance_step(naive_state, F, a.mass, a.damping, a.stiffness, dt)

    def naive_tick_adm():
        naive_adm()
        T_mod = T_ref @ sla.expm(n_hat(naive_state[0]))
        naive_impedance(st.world_T_ee, st.body_twist, st.body_jacobian, bias, T_mod, K, D)

    rows = [
        ("Lie impedance torque (7-DoF)",
         per_call_us(lambda: lie_impedance_torque(st.world_T_ee, st.body_twist, st.body_jacobian, bias, T_ref, K, D), calls),
         per_call_us(lambda: naive_impedance(st.world_T_ee, st.body_twist, st.body_jacobian, bias, T_ref, K, D), naive_calls)),
        ("Lie admittance step (app. H)", per_call_us(lambda: lie.step(F, dt), calls), per_call_us(naive_adm, naive_calls)),
        ("Cartesian impedance torque", per_call_us(
            lambda: cartesian_impedance_torque(st.world_T_ee, st.body_twist, st.body_jacobian, bias, T_ref, K, D), calls), None),
        ("Cartesian admittance step", per_call_us(lambda: cart.step(F, dt), calls), None),
        ("full tick (Python oracle, no safety checker), impedance mode (gates, flags)", per_call_us(lambda: ctrl_imp.tick(st, dt), calls),
         per_call_us(lambda: naive_impedance(st.world_T_ee, st.body_twist, st.body_jacobian, bias, T_ref, K, D), naive_calls)),
        ("full tick (Python oracle, no safety checker), admittance mode (+ filter, bounds)", per_call_us(lambda: ctrl_adm.tick(st, dt), calls),
         per_call_us(naive_tick_adm, naive_calls)),
        ("MuJoCo state read (MujocoRobot.read: FK, J_b, g, c)", per_call_us(sim.state, calls), None),
    ]
    try:
        from hri_core._hri_core import interaction as cx  # noqa: F401
        rows += cxx_rows(cx, p, st, T_ref, K, D, bias, F, dt, calls, tmax)
    except ImportError:
        rows.append(("C++ kernel", None, None))
    return rows


def cxx_rows(cx, p, st, T_ref, K, D, bias, F, dt, calls, tmax):
    """The C++ kernel and the C++ tick (``InteractionTick`` in admittance mode, no safety checker:
    the work of the Python oracle rows above) from Python and inside C++."""
    ctrl = InteractionController(p, T_ref, st.q.size, torque_max_nm=tmax)
    ctrl.request_mode("admittance", st)
    ctrl.set_wrench(F)
    args = (st.q, st.dq, st.world_T_ee, st.body_twist, st.body_jacobian, st.gravity, st.coriolis, dt)
    imp = per_call_us(lambda: cx.lie_impedance_torque(st.world_T_ee, st.body_twist, st.body_jacobian,
                                                      bias, T_ref, K, D), calls)
    tick = per_call_us(lambda: ctrl._cx.tick(*args), calls)
    inner = ctrl._cx.bench_tick_ns(*args, 100000) / 1000.0
    return [("C++ Lie impedance torque, from Python", imp, None),
            ("C++ tick (InteractionTick), admittance mode, no safety checker, from Python", tick, None),
            ("C++ tick (InteractionTick), admittance mode, no safety checker, in C++ (no crossing)", inner, None)]


def backend_rows(cfg, calls: int, rounds: int):
    """The whole gated tick (safety checker included), Python oracle vs C++ engine (one call),
    interleaved: ``rounds`` rounds, each timing ``calls`` ticks of every controller in an order
    that alternates per round; per-call µs medians over the rounds and the median per-round ratio.
    Both controllers of a row start from the same state and receive the same inputs."""
    import dataclasses

    from hri_interaction.engine import safety_checker

    sec = cfg["interaction"]
    p0 = InteractionParams.from_config(sec)
    home = np.deg2rad(cfg["joints"]["named_positions_deg"]["home"])
    sim = ArmSim.of_robot("fr3", home, "torque", timestep_s=1.0 / p0.rate_hz, ee_site=sec["ee_site"])
    sim.set_joint_state(sim.q, np.full(sim.n, 0.05))
    st = sim.state()
    dt = 1.0 / p0.rate_hz
    F = np.array([0.2, -0.1, 0.05, 3.0, -2.0, 5.0])
    T_ref = st.world_T_ee.copy()
    T_ref[:3, 3] += [0.002, -0.001, 0.001]
    cases = [("impedance, Lie, safety", "lie", "impedance", "none"),
             ("admittance, Lie, PO/PC, safety", "lie", "admittance", "passivity"),
             ("hybrid, Lie, wave, safety", "lie", "hybrid", "wave"),
             ("admittance, Cartesian, TDPC, safety", "cartesian", "admittance", "tdpc")]
    rows = []
    for name, law, mode, filt in cases:
        pp = dataclasses.replace(p0.passivity, filter=filt)
        p = dataclasses.replace(p0, passivity=pp)
        ctrls = {}
        for b, cls in (("python", PyInteractionController), ("cxx", InteractionController)):
            c = cls(p, T_ref, sim.n, law=law, safety=safety_checker(cfg), torque_max_nm=cfg["joints"]["torque_max_nm"])
            c.request_mode(mode, st)
            c.set_wrench(F)
            ctrls[b] = c
        for c in ctrls.values():          # warm-up (first-tick seeding, caches)
            for _ in range(200):
                c.tick(st, dt)
        per = {"python": [], "cxx": []}
        order = ["python", "cxx"]
        for r in range(rounds):
            for b in (order if r % 2 == 0 else order[::-1]):
                c = ctrls[b]
                t = time.perf_counter()
                for _ in range(calls):
                    c.tick(st, dt)
                per[b].append((time.perf_counter() - t) / calls * 1e6)
        py_us, cx_us = float(np.median(per["python"])), float(np.median(per["cxx"]))
        ratio = float(np.median(np.array(per["python"]) / np.array(per["cxx"])))
        cx = ctrls["cxx"]._cx
        inner = cx.bench_tick_ns(st.q, st.dq, st.world_T_ee, st.body_twist, st.body_jacobian,
                                 st.gravity, st.coriolis, dt, 20000) / 1000.0
        rows.append((name, py_us, cx_us, ratio, inner))
    return rows


def _stats(start_ns, cost_ns, period_s: float, seconds: float) -> dict:
    """The same statistics for every loop, from tick start times and tick costs (ns)."""
    start = np.asarray(start_ns, dtype=np.int64)
    per = np.diff(start) / 1e3                                 # µs
    T = period_s * 1e6
    err = np.abs(per - T)
    cost = np.asarray(cost_ns, float) / 1e3
    return {"ticks": int(start.size), "expected": int(round(seconds / period_s)),
            "missed": int(np.sum(per > 2 * T)),
            "late100": int(np.sum(err > 100.0)),
            "err_p50": float(np.percentile(err, 50)), "err_p99": float(np.percentile(err, 99)),
            "err_max": float(err.max()), "period_p50": float(np.percentile(per, 50)),
            "cost_p50": float(np.percentile(cost, 50)), "cost_p99": float(np.percentile(cost, 99))}


def rt_thread_loop(cfg, seconds: float) -> dict:
    """hri_core.rt.RtLoop on its real-time thread: the FR3 stepped through MuJoCo's C API inside
    it (config interaction.rt: SCHED_FIFO, mlockall when permitted); wake/cost times traced."""
    import mujoco
    from hri_core import rt
    from hri_sim.models import load_arm

    sec = cfg["interaction"]
    p = InteractionParams.from_config(sec)
    names = list(cfg["joints"]["names"])
    model = load_arm(cfg["robot"]["model"], actuation="torque", timestep_s=1.0 / p.rate_hz)
    data = mujoco.MjData(model)
    jids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in names]
    data.qpos[[model.jnt_qposadr[j] for j in jids]] = np.deg2rad(cfg["joints"]["named_positions_deg"]["home"])
    n = int(seconds * p.rate_hz)
    loop = rt.RtLoop(tick_params(p, len(names), torque_max_nm=cfg["joints"]["torque_max_nm"]),
                     loop_config(p, trace_capacity=n),
                     rt.MujocoRobot(model, data, names, sec["ee_site"]))
    loop.start()
    time.sleep(seconds + 0.05)
    loop.stop()
    tr, st = loop.trace(), loop.state()
    out = _stats(tr["wake_ns"][:n], tr["cost_ns"][:n], 1.0 / p.rate_hz, seconds)
    out["internal"] = (f"in-loop: {st['missed']} overruns, |err| p99 {st['period_error_us']['p99']:.0f} µs; "
                       f"SCHED_FIFO {st['rt']['sched_fifo']}, mlockall {st['rt']['mlockall']}")
    return out


def _python_work(cfg):
    """What one tick of the Python node loop did: the robot's read, the C++ tick (one call), its
    write (hri_sim.arm_sim.ArmSim, mode torque: the C++ MujocoRobot; InteractionController)."""
    sec = cfg["interaction"]
    p = InteractionParams.from_config(sec)
    sim = ArmSim.of_robot("fr3", np.deg2rad(cfg["joints"]["named_positions_deg"]["home"]), "torque",
                          timestep_s=1.0 / p.rate_hz, ee_site=sec["ee_site"])
    ctrl = InteractionController(p, sim.ee_pose(), sim.n, torque_max_nm=cfg["joints"]["torque_max_nm"])
    dt = 1.0 / p.rate_hz

    def work():
        st = sim.state()
        ctrl.set_wrench(st.wrench_body)
        res = ctrl.tick(st, dt)
        sim.step(res.tau)
        return res.tau
    return work, dt


def python_node_loop(cfg, seconds: float) -> dict:
    """The node loop the C++ thread replaces: a hri_runtime Node whose 1 ms timer (threaded
    executor, wall clock) runs the tick and publishes the torque (Float64MultiArray)."""
    from hri_runtime import msgs
    from hri_runtime.inproc import ThreadedInprocContext
    from hri_runtime.node import Node

    work, dt = _python_work(cfg)
    ctx = ThreadedInprocContext()
    node = Node("interaction_bench", context=ctx)
    pub = node.create_publisher("std_msgs/msg/Float64MultiArray", "/interaction/torque", qos=10)
    starts, costs = [], []
    clock = time.monotonic_ns

    def tick():
        t = clock()
        tau = work()
        pub.publish(msgs.new("std_msgs/msg/Float64MultiArray", data=tau.tolist()))
        starts.append(t)
        costs.append(clock() - t)
    node.create_timer(dt, tick)
    ctx.spin_in_background()
    time.sleep(seconds)
    ctx.shutdown()
    n = len(starts)
    return _stats(starts[:n], costs[:n], dt, seconds)


def naive_sleep_loop(cfg, seconds: float) -> dict:
    """tick(); time.sleep(T) — the relative-sleep loop of a first implementation."""
    work, dt = _python_work(cfg)
    starts, costs = [], []
    clock = time.monotonic_ns
    end = clock() + int(seconds * 1e9)
    while True:
        t = clock()
        if t >= end:
            break
        work()
        starts.append(t)
        costs.append(clock() - t)
        time.sleep(dt)
    return _stats(starts, costs, dt, seconds)


def loop_comparison(cfg, seconds: float) -> None:
    # the C++ loop runs last: its mlockall (when permitted) then cannot help the Python loops
    node = python_node_loop(cfg, seconds)
    naive = naive_sleep_loop(cfg, seconds)
    rows = [("C++ real-time thread (hri_core.rt.RtLoop)", rt_thread_loop(cfg, seconds)),
            ("Python-timer node loop (hri_runtime timer, threaded executor)", node),
            ("naive time.sleep(T) loop", naive)]
    print(f"\n| 1 kHz loop with MuJoCo, {seconds:.0f} s each | ticks / expected | missed (period > 2 T) | "
          f"|err| > 100 µs | period error p50 / p99 / max µs | tick cost p50 / p99 µs |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in rows:
        print(f"| {name} | {r['ticks']} / {r['expected']} | {r['missed']} | {r['late100']} | "
              f"{r['err_p50']:.1f} / {r['err_p99']:.1f} / {r['err_max']:.0f} | "
              f"{r['cost_p50']:.1f} / {r['cost_p99']:.1f} |", flush=True)
    c, node, naive = (r for _, r in rows)
    print(f"\n{c['internal']}")

    def ratio(a, b):
        return "inf (0 in the C++ loop)" if b == 0 and a > 0 else ("-" if b == 0 else f"{a / b:.1f}x")
    print(f"ratios, Python node / C++ thread: missed {ratio(node['missed'], c['missed'])}, "
          f"|err|>100 µs {ratio(node['late100'], c['late100'])}, p99 error {ratio(node['err_p99'], c['err_p99'])}, "
          f"max error {ratio(node['err_max'], c['err_max'])}, tick cost p50 {ratio(node['cost_p50'], c['cost_p50'])}")
    print(f"ratios, naive sleep / C++ thread: missed {ratio(naive['missed'], c['missed'])}, "
          f"p99 error {ratio(naive['err_p99'], c['err_p99'])}, ticks delivered {naive['ticks'] / max(c['ticks'], 1):.3f}")


def load_line() -> str:
    import os

    return " / ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1 / 5 / 15 min)"


def machine_line() -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from pid.run import machine      # one machine description for every bench

    return f"# machine: {machine()}, Linux {platform.release()}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="fr3")
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--naive-calls", type=int, default=100, help="calls of the (slow) naive rows")
    ap.add_argument("--loop-seconds", type=float, default=60.0)
    ap.add_argument("--rounds", type=int, default=21, help="interleaved rounds of the backend rows")
    ap.add_argument("--backends-only", action="store_true",
                    help="only the gated-tick rows, Python oracle vs C++ engine")
    ap.add_argument("--loop-only", action="store_true", help="only the 1 kHz loop comparison")
    args = ap.parse_args(argv)
    cfg = load_robot_config(args.robot)
    if args.loop_only:
        print(machine_line())
        print(f"load before: {load_line()}")
        loop_comparison(cfg, args.loop_seconds)
        print(f"load after: {load_line()}")
        return
    from hri_runtime import provenance  # commit, version, build flags
    print(f"# provenance: {provenance.line()}")
    print(f"# interaction benchmark  ({platform.machine()}, Python {sys.version.split()[0]}, "
          f"{args.calls} calls ({args.naive_calls} naive) x 5 repeats, loop {args.loop_seconds:.0f} s each)\n")
    try:
        load = " / ".join(f"{x:.1f}" for x in __import__("os").getloadavg())
    except OSError:
        load = "?"
    print(f"| gated tick (state check → filter → law → SafetyChecker → clip), load {load} | "
          f"Python oracle µs | C++ engine (one call) µs | Python / C++ | C++ engine inside C++ µs |")
    print("|---|---:|---:|---:|---:|")
    for name, py_us, cx_us, ratio, inner in backend_rows(cfg, args.calls, args.rounds):
        if py_us is None:
            print(f"| {name} | – | – | – | – |")
            continue
        print(f"| {name} | {py_us:.1f} | {cx_us:.2f} | {ratio:.1f}x | {inner:.2f} |", flush=True)
    print(f"\n({args.rounds} interleaved rounds of {args.calls} ticks, medians; ratio = median of "
          f"the per-round ratios)\n")
    if args.backends_only:
        return
    print("| per tick | ours µs | naive numpy/scipy µs | naive / ours |")
    print("|---|---:|---:|---:|")
    for name, ours, naive in compute_rows(cfg, args.calls, args.naive_calls):
        f = lambda x: "–" if x is None else f"{x:.2f}"  # noqa: E731
        ratio = "–" if (ours is None or naive is None) else f"{naive / ours:.1f}x"
        print(f"| {name} | {f(ours)} | {f(naive)} | {ratio} |", flush=True)
    if args.loop_seconds > 0:
        loop_comparison(cfg, args.loop_seconds)

if __name__ == "__main__":
    main()
