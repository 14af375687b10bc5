"""Interaction benchmark: the gated tick, Python path vs C++ path (one call, interleaved); per-tick
compute (ours vs a naive numpy/scipy implementation) and a
wall-clock 1 kHz loop with MuJoCo in it (absolute-deadline pacing vs a naive ``time.sleep`` loop).

    .venv/bin/python bench/interaction/run.py                 # 60 s per loop (the documented run)
    .venv/bin/python bench/interaction/run.py --loop-seconds 5 --calls 2000

Per-tick rows: µs per call (median of 5 repeats of ``--calls`` calls), and the ratio naive/ours.
"ours" = the hri_interaction Python code on the hri_core C++ SE(3) maps; "C++ kernel" rows
appear when ``hri_core._hri_core.interaction`` exists. The naive implementation is written here
(scipy ``expm``/``logm`` for SE(3), series left Jacobian, finite-difference d/dt dexp) – what a
first numpy implementation of the same equations looks like.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time

import numpy as np
import scipy.linalg as sla

from hri_runtime.config import load_robot_config
from hri_interaction.core.admittance import AdmittanceParams, CartesianAdmittance, LieAdmittance
from hri_interaction.core.controller import InteractionController, InteractionParams
from hri_interaction.core.impedance import cartesian_impedance_torque, lie_impedance_torque
from hri_interaction.core.pacing import NaiveLoop, PacedLoop
from hri_interaction.sim import Fr3Sim


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
    p = InteractionParams.from_config(sec, cfg["joints"]["torque_max_nm"])
    home = np.deg2rad(cfg["joints"]["named_positions_deg"]["home"])
    sim = Fr3Sim(p.rate_hz, home, sec["ee_site"])
    sim.data.qvel[sim.vadr] = 0.05
    sim.mj.mj_forward(sim.model, sim.data)
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
    ctrl_imp = InteractionController(p, T_ref, sim.n, backend="python")
    ctrl_adm = InteractionController(p, T_ref, sim.n, backend="python")
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
        ("full tick (Python path, no safety checker), impedance mode (gates, flags)", per_call_us(lambda: ctrl_imp.tick(st, dt), calls),
         per_call_us(lambda: naive_impedance(st.world_T_ee, st.body_twist, st.body_jacobian, bias, T_ref, K, D), naive_calls)),
        ("full tick (Python path, no safety checker), admittance mode (+ filter, bounds)", per_call_us(lambda: ctrl_adm.tick(st, dt), calls),
         per_call_us(naive_tick_adm, naive_calls)),
        ("MuJoCo state read (FK, J_b, g, c)", per_call_us(sim.state, calls), None),
    ]
    try:
        from hri_core._hri_core import interaction as cx  # noqa: F401
        rows += cxx_rows(cx, st, T_ref, K, D, bias, a, F, dt, calls)
    except ImportError:
        rows.append(("C++ kernel", None, None))
    return rows


def cxx_rows(cx, st, T_ref, K, D, bias, a, F, dt, calls):
    kern = cx.InteractionKernel(a.mass, a.damping, a.stiffness, K, D)
    imp = per_call_us(lambda: cx.lie_impedance_torque(st.world_T_ee, st.body_twist, st.body_jacobian,
                                                      bias, T_ref, K, D), calls)
    tick = per_call_us(lambda: kern.tick(st.world_T_ee, st.body_twist, st.body_jacobian, bias, T_ref,
                                         F, dt), calls)
    inner = kern.bench_tick_ns(st.world_T_ee, st.body_twist, st.body_jacobian, bias, T_ref, F, dt,
                               100000) / 1000.0
    return [("C++ Lie impedance torque, from Python", imp, None),
            ("C++ admittance + impedance tick, from Python", tick, None),
            ("C++ admittance + impedance tick, in C++ (no crossing)", inner, None)]


def backend_rows(cfg, calls: int, rounds: int):
    """The whole gated tick (safety checker included), Python path vs C++ path (one call),
    interleaved: ``rounds`` rounds, each timing ``calls`` ticks of every controller in an order
    that alternates per round; per-call µs medians over the rounds and the median per-round ratio.
    Both controllers of a row start from the same state and receive the same inputs."""
    from hri_core.safety import SafetyChecker, limits_from_config
    from hri_interaction.core.controller import cxx_tick_available
    from hri_interaction.core.passivity import PassivityParams
    import dataclasses

    if not cxx_tick_available():
        return [("C++ InteractionTick not built", None, None, None, None)]
    sec = cfg["interaction"]
    p0 = InteractionParams.from_config(sec, cfg["joints"]["torque_max_nm"])
    home = np.deg2rad(cfg["joints"]["named_positions_deg"]["home"])
    sim = Fr3Sim(p0.rate_hz, home, sec["ee_site"])
    sim.data.qvel[sim.vadr] = 0.05
    sim.mj.mj_forward(sim.model, sim.data)
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
        for b in ("python", "cxx"):
            c = InteractionController(p, T_ref, sim.n, law=law, backend=b,
                                      safety=SafetyChecker(limits_from_config(cfg)))
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


def loop_rows(cfg, seconds: float):
    sec = cfg["interaction"]
    p = InteractionParams.from_config(sec, cfg["joints"]["torque_max_nm"])
    home = np.deg2rad(cfg["joints"]["named_positions_deg"]["home"])
    out = []
    from hri_interaction.core.controller import cxx_tick_available

    names = ["absolute deadlines, sleep + spin", "naive time.sleep(T)"]
    if cxx_tick_available():
        names.insert(1, "absolute deadlines, sleep + spin, C++ tick")
    for name in names:
        sim = Fr3Sim(p.rate_hz, home, sec["ee_site"])
        ctrl = InteractionController(p, sim.ee_pose(), sim.n,
                                     backend="cxx" if name.endswith("C++ tick") else "python")
        dt = 1.0 / p.rate_hz
        cost = []

        def tick():
            t = time.perf_counter()
            res = ctrl.tick(sim.state(), dt)
            sim.step(res.tau)
            cost.append(time.perf_counter() - t)
        n = int(seconds * p.rate_hz)
        if name.startswith("absolute"):
            st = PacedLoop(dt, time.perf_counter, time.sleep, sec["node"]["spin_s"]).run(tick, n)
        else:
            st = NaiveLoop(dt, time.perf_counter, time.sleep).run(tick, n)
        out.append((name, st, float(np.median(cost)) * 1e6, float(np.percentile(cost, 99)) * 1e6))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="fr3")
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--naive-calls", type=int, default=100, help="calls of the (slow) naive rows")
    ap.add_argument("--loop-seconds", type=float, default=60.0)
    ap.add_argument("--rounds", type=int, default=21, help="interleaved rounds of the backend rows")
    ap.add_argument("--backends-only", action="store_true",
                    help="only the gated-tick rows, Python path vs C++ path")
    args = ap.parse_args(argv)
    cfg = load_robot_config(args.robot)
    print(f"# interaction benchmark  ({platform.machine()}, Python {sys.version.split()[0]}, "
          f"{args.calls} calls ({args.naive_calls} naive) x 5 repeats, loop {args.loop_seconds:.0f} s each)\n")
    try:
        load = " / ".join(f"{x:.1f}" for x in __import__("os").getloadavg())
    except OSError:
        load = "?"
    print(f"| gated tick (state check → filter → law → SafetyChecker → clip), load {load} | "
          f"Python path µs | C++ path (one call) µs | Python / C++ | C++ path inside C++ µs |")
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
        print("\n| 1 kHz loop with MuJoCo | ticks | period p50 µs | p99 µs | max µs | std µs | missed | "
              "tick cost p50 / p99 µs |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name, st, c50, c99 in loop_rows(cfg, args.loop_seconds):
            print(f"| {name} | {st.n + 1} | {st.p50_us:.1f} | {st.p99_us:.1f} | {st.max_us:.1f} | "
                  f"{st.std_us:.1f} | {st.missed} | {c50:.0f} / {c99:.0f} |", flush=True)


if __name__ == "__main__":
    main()
