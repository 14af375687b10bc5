"""hri_core benchmark: ours vs Pinocchio (pin), spatialmath-python, scipy, numpy, MuJoCo – one run.

    .venv/bin/python bench/core/run.py [--quick] [--only batch]

Prints per-call times and ratios (reference / ours; > 1 means hri_core is faster).  Also builds
and runs bench/core/bench_core.cpp for the C++-side figures (g++ -O3 -march=x86-64-v2).
Missing optional references (pin, spatialmath) are reported and skipped.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import time
import timeit
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "cpp"))

from hri_core import se3  # noqa: E402
from hri_core.kinematics import PoeModel  # noqa: E402
from hri_core.safety import SafetyChecker, SafetyLimits  # noqa: E402


def per_call_us(fn, number: int, repeat: int = 5) -> float:
    return min(timeit.Timer(fn).repeat(repeat=repeat, number=number)) / number * 1e6


ROWS: list[tuple[str, str, float]] = []


def row(op: str, impl: str, us: float) -> None:
    ROWS.append((op, impl, us))
    print(f"  {op:<34s} {impl:<28s} {us:10.3f} µs", flush=True)


# ---------------------------------------------------------------- numpy references
def np_hat(w):
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


def np_exp(xi):
    w, v = xi[:3], xi[3:]
    th = np.linalg.norm(w)
    W = np_hat(w)
    W2 = W @ W
    if th < 1e-8:
        A, B, C = 1.0, 0.5, 1 / 6
    else:
        A, B, C = np.sin(th) / th, (1 - np.cos(th)) / th**2, (th - np.sin(th)) / th**3
    T = np.eye(4)
    T[:3, :3] = np.eye(3) + A * W + B * W2
    T[:3, 3] = v + B * (W @ v) + C * (W2 @ v)
    return T


def np_log(T):
    R, p = T[:3, :3], T[:3, 3]
    c = np.clip((np.trace(R) - 1) / 2, -1, 1)
    th = np.arccos(c)
    s = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]) / 2
    w = s * (th / np.sin(th) if th > 1e-8 else 1.0)
    W = np_hat(w)
    D = (1 - (th * np.sin(th)) / (2 * (1 - np.cos(th)))) / th**2 if th > 1e-8 else 1 / 12
    return np.r_[w, p - 0.5 * W @ p + D * (W @ W @ p)]


def np_exp_batch(XI):
    w, v = XI[:, :3], XI[:, 3:]
    th = np.linalg.norm(w, axis=1)
    ths = np.where(th < 1e-8, 1.0, th)
    A = np.where(th < 1e-8, 1.0, np.sin(ths) / ths)
    B = np.where(th < 1e-8, 0.5, (1 - np.cos(ths)) / ths**2)
    C = np.where(th < 1e-8, 1 / 6, (ths - np.sin(ths)) / ths**3)
    W = np.zeros((len(XI), 3, 3))
    W[:, 0, 1], W[:, 0, 2], W[:, 1, 2] = -w[:, 2], w[:, 1], -w[:, 0]
    W[:, 1, 0], W[:, 2, 0], W[:, 2, 1] = w[:, 2], -w[:, 1], w[:, 0]
    W2 = W @ W
    T = np.zeros((len(XI), 4, 4))
    T[:, :3, :3] = np.eye(3) + A[:, None, None] * W + B[:, None, None] * W2
    T[:, :3, 3] = v + B[:, None] * np.einsum("nij,nj->ni", W, v) + C[:, None] * np.einsum("nij,nj->ni", W2, v)
    T[:, 3, 3] = 1
    return T


def np_log_batch(T):
    R, p = T[:, :3, :3], T[:, :3, 3]
    c = np.clip((np.trace(R, axis1=1, axis2=2) - 1) / 2, -1, 1)
    th = np.arccos(c)
    s = np.stack([R[:, 2, 1] - R[:, 1, 2], R[:, 0, 2] - R[:, 2, 0], R[:, 1, 0] - R[:, 0, 1]], 1) / 2
    ths = np.where(th < 1e-8, 1.0, th)
    w = s * np.where(th < 1e-8, 1.0, ths / np.sin(ths))[:, None]
    D = np.where(th < 1e-8, 1 / 12, (1 - (ths * np.sin(ths)) / (2 * (1 - np.cos(ths)))) / ths**2)
    wp = np.cross(w, p)
    return np.concatenate([w, p - 0.5 * wp + D[:, None] * np.cross(w, wp)], 1)


# ---------------------------------------------------------------- sections
def bench_single(quick: bool) -> None:
    print("== single SE(3) calls from Python")
    n = 20000 if quick else 100000
    rng = np.random.default_rng(0)
    xi = rng.normal(size=6) * 0.5
    T = se3.exp(xi)
    T2 = se3.exp(rng.normal(size=6) * 0.5)
    row("exp", "hri_core", per_call_us(lambda: se3.exp(xi), n))
    row("log", "hri_core", per_call_us(lambda: se3.log(T), n))
    row("compose", "hri_core se3.compose", per_call_us(lambda: se3.compose(T, T2), n))
    row("compose", "numpy T @ T2", per_call_us(lambda: T @ T2, n))
    row("exp", "numpy (Rodrigues)", per_call_us(lambda: np_exp(xi), n // 10))
    row("log", "numpy", per_call_us(lambda: np_log(T), n // 10))
    from scipy.linalg import expm, logm
    Xh = se3.hat(xi)
    row("exp", "scipy expm(hat)", per_call_us(lambda: expm(Xh), 200, repeat=3))
    row("log", "scipy logm", per_call_us(lambda: logm(T), 20, repeat=3))
    try:
        import pinocchio as pin
        m_xi = np.r_[xi[3:], xi[:3]]           # pinocchio Motion: linear first
        M_pin = pin.exp6(m_xi)
        M2_pin = pin.exp6(np.r_[rng.normal(size=6)])
        assert np.allclose(M_pin.homogeneous, T, atol=1e-12)
        row("exp", "pin.exp6 (-> SE3 object)", per_call_us(lambda: pin.exp6(m_xi), n))
        row("exp", "pin.exp6(...).homogeneous", per_call_us(lambda: pin.exp6(m_xi).homogeneous, n))
        row("log", "pin.log6(SE3)", per_call_us(lambda: pin.log6(M_pin), n))
        row("log", "pin.log6(4x4 ndarray)", per_call_us(lambda: pin.log6(T), n))
        row("compose", "pin SE3 * SE3", per_call_us(lambda: M_pin * M2_pin, n))
    except ImportError:
        print("  (pin missing: it is in requirements.lock; run make venv)")
    try:
        from spatialmath.base import trexp, trlog
        s_xi = np.r_[xi[3:], xi[:3]]           # spatialmath twist: (v, w)
        assert np.allclose(trexp(s_xi), T, atol=1e-12)
        row("exp", "spatialmath.base.trexp", per_call_us(lambda: trexp(s_xi), n // 10))
        row("log", "spatialmath.base.trlog", per_call_us(lambda: trlog(T), n // 10))
    except ImportError:
        print("  (spatialmath-python not installed)")


def bench_batch(quick: bool) -> None:
    """Batch exp/log of N twists: fresh output vs `out=` reuse, automatic threads vs 1 thread,
    against numpy vectorised and the memory floor (numpy filling an (N, 4, 4) array).  All cases
    are interleaved round-robin in each repetition (the machine is shared and noisy) and the
    median per case is reported."""
    N = 200_000 if quick else 1_000_000
    reps = 3 if quick else 11
    print(f"== batch of {N:,} twists (median of {reps} interleaved rounds; "
          f"hardware threads {os.cpu_count()})")
    rng = np.random.default_rng(1)
    XI = rng.normal(size=(N, 6))
    XI[:, :3] *= (rng.uniform(0, 3.0, N) / np.linalg.norm(XI[:, :3], axis=1))[:, None]
    T = se3.exp(XI)
    assert np.allclose(np_exp_batch(XI[:1000]), T[:1000], atol=1e-12)
    assert np.allclose(np_log_batch(T[:1000]), XI[:1000], atol=1e-9)
    out_T = np.zeros((N, 4, 4))  # reused buffers, touched once before timing
    out_xi = np.zeros((N, 6))
    se3.exp(XI, out=out_T)
    assert np.array_equal(out_T, T)
    existing = np.zeros((N, 4, 4))
    cases = [  # (op, impl, threads setting or None, fn)
        ("exp batch", "hri_core fresh", 0, lambda: se3.exp(XI)),
        ("exp batch", "hri_core out=", 0, lambda: se3.exp(XI, out=out_T)),
        ("exp batch", "hri_core fresh 1 thread", 1, lambda: se3.exp(XI)),
        ("exp batch", "hri_core out= 1 thread", 1, lambda: se3.exp(XI, out=out_T)),
        ("log batch", "hri_core fresh", 0, lambda: se3.log(T)),
        ("log batch", "hri_core out=", 0, lambda: se3.log(T, out=out_xi)),
        ("log batch", "hri_core fresh 1 thread", 1, lambda: se3.log(T)),
        ("log batch", "hri_core out= 1 thread", 1, lambda: se3.log(T, out=out_xi)),
        ("exp batch", "numpy vectorised", None, lambda: np_exp_batch(XI)),
        ("log batch", "numpy vectorised", None, lambda: np_log_batch(T)),
        ("memory floor", "np.empty((N,4,4)).fill", None, lambda: np.empty((N, 4, 4)).fill(1.0)),
        ("memory floor", "existing (N,4,4).fill", None, lambda: existing.fill(1.0)),
    ]
    times: dict[tuple[str, str], list[float]] = {(op, impl): [] for op, impl, _, _ in cases}
    before = se3.get_batch_threads()
    try:
        for _ in range(reps):
            for op, impl, th, fn in cases:
                if th is not None:
                    se3.set_batch_threads(th)
                t0 = time.perf_counter()
                fn()
                times[(op, impl)].append(time.perf_counter() - t0)
    finally:
        se3.set_batch_threads(before)
    med = {k: float(np.median(v)) * 1e6 for k, v in times.items()}
    print(f"  {'op':<13s} {'impl':<26s} {'M ops/s':>8s} {'ns/op':>7s}  {'vs numpy':>8s}  {'>= 20 M/s':>9s}")
    for (op, impl), us in med.items():
        ref = med.get((op, "numpy vectorised"))
        ratio = f"x{ref / us:7.1f}" if ref and impl.startswith("hri_core") else ""
        target = ("yes" if N / us >= 20.0 else "no") if impl.startswith("hri_core") else ""
        print(f"  {op:<13s} {impl:<26s} {N / us:8.1f} {us * 1e3 / N:7.1f}  {ratio:>8s}  {target:>9s}")
        if impl in ("hri_core fresh", "numpy vectorised"):
            ROWS.append((op, impl, us))


def bench_kinematics(quick: bool) -> None:
    print("== FR3 FK + body Jacobian (7 DoF) from Python")
    import mujoco
    from hri_sim.models import fr3_xml_path, load_fr3
    n = 5000 if quick else 20000
    model = load_fr3()
    poe = PoeModel.from_mujoco(model, "attachment_site")
    q = np.array([0.1, -0.5, 0.2, -2.0, 0.1, 1.6, 0.7])
    row("fk", "hri_core PoeModel.fk", per_call_us(lambda: poe.fk(q), n))
    row("fk + J_b", "hri_core fk_jacobian_body", per_call_us(lambda: poe.fk_jacobian_body(q), n))
    data = mujoco.MjData(model)
    sid = model.site("attachment_site").id
    jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))

    def mj():
        data.qpos[:7] = q
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        mujoco.mj_jacSite(model, data, jacp, jacr, sid)
    row("fk + J_b", "mujoco kinematics+jacSite", per_call_us(mj, n))
    try:
        import pinocchio as pin
        pm = pin.buildModelFromMJCF(str(fr3_xml_path()))
        j7 = pm.getJointId("fr3_joint7")
        f7 = pm.frames[pm.getFrameId("fr3_link7")]
        fid = pm.addFrame(pin.Frame("attachment_site", j7, f7.placement * pin.SE3(np.eye(3), np.array([0, 0, 0.107])),
                                    pin.FrameType.OP_FRAME))
        pd = pm.createData()
        qp = np.zeros(pm.nq)
        qp[:7] = q
        pin.forwardKinematics(pm, pd, qp)
        pin.updateFramePlacements(pm, pd)
        T_pin = pd.oMf[fid].homogeneous
        print(f"    pin vs hri_core FK max|dT| = {np.abs(T_pin - poe.fk(q)).max():.1e}")

        def pin_fk():
            pin.forwardKinematics(pm, pd, qp)
            return pin.updateFramePlacement(pm, pd, fid)

        def pin_fkj():
            pin.forwardKinematics(pm, pd, qp)
            return pin.computeFrameJacobian(pm, pd, qp, fid, pin.ReferenceFrame.LOCAL)
        row("fk", "pin forwardKinematics+frame", per_call_us(pin_fk, n))
        row("fk + J_b", "pin fwdKin+computeFrameJac", per_call_us(pin_fkj, n))
    except ImportError:
        print("  (pin not installed)")


def numpy_safety(q, prev, vprev, L, dt):
    out = np.clip(q, L["q_min"], L["q_max"])
    lo, hi = prev - L["v_max"] * dt, prev + L["v_max"] * dt
    out = np.clip(out, lo, hi)
    ctr = prev + vprev * dt
    out = np.clip(out, ctr - L["a_max"] * dt * dt, ctr + L["a_max"] * dt * dt)
    flags = (~np.isfinite(q)).any() or (q != out).any()
    return out, flags


def bench_safety(quick: bool) -> None:
    print("== safety check of one 7-DoF command")
    from hri_runtime.config.tree import load_robot_config
    from hri_core.safety import arm_limits
    n = 20000 if quick else 100000
    al = arm_limits(load_robot_config("fr3"))
    c = SafetyChecker(SafetyLimits(**al.as_kwargs()))
    q0 = 0.5 * (al.q_min + al.q_max)
    c.reset(q=q0, qd=np.zeros(7))
    q = q0 + 1e-7
    row("safety check (q)", "hri_core from Python", per_call_us(
        lambda: c.check(q, dt_s=1e-3, now_s=1.0, stamp_s=1.0, advance=0), n))
    tau = np.ones(7)
    row("safety check (q, tau)", "hri_core from Python", per_call_us(
        lambda: c.check(q, dt_s=1e-3, now_s=1.0, stamp_s=1.0, tau=tau, advance=0), n))
    L = {k: getattr(al, k) for k in ("q_min", "q_max", "v_max", "a_max")}
    v0 = np.zeros(7)
    row("safety check (q)", "numpy (clip pos/vel/acc)", per_call_us(lambda: numpy_safety(q, q0, v0, L, 1e-3), n // 5))


def bench_cpp() -> dict:
    print("== C++ side (bench/core/bench_core.cpp, g++ -O3 -march=x86-64-v2)")
    cxx = shutil.which("g++")
    if not cxx:
        print("  (no g++)")
        return {}
    eigen = next((p / "cmeel.prefix/include/eigen3" for p in map(Path, sys.path)
                  if (p / "cmeel.prefix/include/eigen3/Eigen/Core").is_file()), Path("/usr/include/eigen3"))
    out = REPO / "build" / "bench_core"
    out.parent.mkdir(exist_ok=True)
    subprocess.run([cxx, "-std=c++17", "-O3", "-march=x86-64-v2", "-DNDEBUG", f"-I{REPO / 'cpp/include'}",
                    f"-I{eigen}", str(REPO / "bench/core/bench_core.cpp"), "-o", str(out)], check=True)
    res = {}
    for line in subprocess.run([str(out)], capture_output=True, text=True, check=True).stdout.splitlines():
        name, ns = line.split()
        res[name] = float(ns)
        print(f"  {name:<34s} {float(ns):10.1f} ns")
    return res


def summary() -> None:
    print("== ratios (reference time / hri_core time; > 1: hri_core faster)")
    ours = {op: us for op, impl, us in ROWS if impl.startswith("hri_core") and op not in ("compose",)}
    ours["compose"] = next(us for op, impl, us in ROWS if op == "compose" and impl.startswith("hri_core"))
    for op, impl, us in ROWS:
        if impl.startswith("hri_core") or op not in ours:
            continue
        print(f"  {op:<24s} {impl:<30s} x{us / ours[op]:8.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["single", "batch", "kinematics", "safety", "cpp"],
                    help="run one section only")
    a = ap.parse_args()
    from hri_runtime import provenance  # commit, version, build flags
    print(f"# provenance: {provenance.line()}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if a.only:
        {"single": bench_single, "batch": bench_batch, "kinematics": bench_kinematics,
         "safety": bench_safety, "cpp": lambda quick: bench_cpp()}[a.only](a.quick)
        return
    bench_single(a.quick)
    bench_batch(a.quick)
    bench_kinematics(a.quick)
    bench_safety(a.quick)
    summary()
    bench_cpp()


if __name__ == "__main__":
    main()
