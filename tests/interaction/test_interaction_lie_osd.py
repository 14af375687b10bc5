"""Lie-group impedance with operational-space dynamics (Kim et al. 2025 through Chang 2026 ch. 12 and
table 12.4) as ``interaction.law: lie_osd`` of the C++ tick: agreement with an independent numpy
oracle (oracle/geometric_laws.py: SE(3) log and the right Jacobian by their series, no hri_core maths) to 1e-9,
and the behaviour the law promises: the closed loop M_d V̇_e + D V_e + J_r(λ)^-T K λ = F_ext is
passive (the impedance's energy never exceeds the work the push did), a push displaces the end
effector by F/K, the arm converges to the reference, and a singular arm (no Λ) falls back to the
Lie-PD law, flagged, instead of a pseudoinverse; a missing or bad M(q) holds the last command.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from hri_core._hri_core import interaction as cx   # required: a missing build fails here
from hri_runtime.config.tree import load_robot_config
from hri_interaction.engine import PythonEngine

sys.path.insert(0, str(Path(__file__).resolve().parent))   # the oracle package next to this file
from oracle.geometric_laws import (fr3_params, home, inv, lie_osd_torque as oracle_torque,  # noqa: E402
                                   random_pose, rodrigues, se3_log)


# ----------------------------------------------------------------------------- helpers
def spd(rng, n, scale):
    A = rng.normal(size=(n, n))
    return scale * (A @ A.T / n + np.eye(n))


def impedance_energy(T, Vb, Tr, K, Md):
    """1/2 V_e^T M_d V_e + 1/2 λ^T K λ (reference at rest: V_e = V_b)."""
    lam = se3_log(inv(Tr) @ T)
    return 0.5 * Vb @ Md @ Vb + 0.5 * lam @ K @ lam


# ----------------------------------------------------------------------------- parity
def test_the_cpp_law_agrees_with_the_oracle_on_random_states():
    rng = np.random.default_rng(126)
    worst = 0.0
    for _ in range(300):
        n = int(rng.integers(6, 8))
        T = random_pose(rng)
        Tr = T @ np.block([[rodrigues(rng.normal(size=3) * 0.6), rng.normal(size=(3, 1)) * 0.2],
                           [np.zeros((1, 3)), np.ones((1, 1))]])
        Vb, Vr, F, jdq = (rng.normal(size=6) for _ in range(4))
        Jb = rng.normal(size=(6, n))
        while np.linalg.cond(Jb) > 30:     # an arm away from singularity (near one, Λ amplifies rounding)
            Jb = rng.normal(size=(6, n))
        bias, M = rng.normal(size=n), spd(rng, n, 2.0)
        K, D, Md = spd(rng, 6, 100.0), spd(rng, 6, 10.0), spd(rng, 6, 1.0)
        for vr, f in ((None, None), (Vr, None), (Vr, F)):
            tau = np.asarray(cx.lie_osd_torque(T, Vb, Jb, bias, Tr, K, D, Md, M, jdq, vr, f))
            ref = oracle_torque(T, Vb, Jb, bias, Tr, K, D, Md, M, jdq, vr, f)
            worst = max(worst, float(np.abs(tau - ref).max() / max(1.0, np.abs(ref).max())))
    assert worst < 1e-9, worst


def test_the_tick_with_law_lie_osd_agrees_with_the_oracle_on_every_tick():
    """The whole gated tick in MuJoCo with a moving reference (governor + feed-forward) and a push
    (the measured wrench enters the law): its torque is the oracle's at the tick's own reference,
    with J̇_b q̇ the backward difference of J_b the tick documents."""
    cfg, p = fr3_params(law="lie_osd")
    loop = PythonEngine(cfg, home(cfg), params=p)
    ctrl, sim = loop.ctrl, loop.sim
    assert ctrl._cx.law == "lie_osd"
    T0 = sim.ee_pose()
    Md = np.diag(p.lie_osd.inertia_diag)
    worst, ticks, prev_J = 0.0, 0, None
    for k in range(800):
        if k % 20 == 0 and k < 400:
            T = T0.copy()
            T[:3, 3] += [0.02 * k / 400, 0.0, -0.01 * k / 400]
            T[:3, :3] = rodrigues(np.array([0.08 * k / 400, 0.0, 0.0])) @ T0[:3, :3]
            assert ctrl.set_reference(T)
        if k == 450:
            sim.push([0.0, 8.0, -5.0], [0.0, 0.0, 0.3])
        st = sim.state()
        w = sim.wrench_body()
        ctrl.set_wrench(w)
        res = ctrl.tick(st, loop.dt)
        jdq = np.zeros(6) if prev_J is None else (st.body_jacobian - prev_J) / loop.dt @ st.dq
        prev_J = st.body_jacobian
        Vr = np.asarray(ctrl._cx.reference_twist)
        ref = oracle_torque(st.world_T_ee, st.body_twist, st.body_jacobian, st.gravity + st.coriolis,
                            res.world_T_ref, np.asarray(ctrl.K), np.asarray(ctrl.D), Md, st.mass_matrix, jdq,
                            Vr if Vr.any() else None, w)
        if not res.flags & {"torque_clamped", "hold", "singular"}:
            worst = max(worst, float(np.abs(res.tau - ref).max() / max(1.0, np.abs(ref).max())))
            ticks += 1
        sim.step(res.tau)
    assert ticks > 750
    assert worst < 1e-9, worst      # |Δτ| within 1e-9 of max(1 N·m, |τ|∞) (Λ is an inverse)


# ----------------------------------------------------------------------------- behaviour
def test_a_push_is_stored_as_impedance_energy_never_more_than_its_work_and_gives_F_over_K():
    """Passivity of the rendered impedance (storage 1/2 V_e^T M_d V_e + 1/2 λ^T K λ): over the run the
    stored energy never exceeds the work of the push ∫ V_b^T F dt; the push ends at F/K."""
    cfg, p = fr3_params(law="lie_osd")
    loop = PythonEngine(cfg, home(cfg), params=p)
    sim, ctrl = loop.sim, loop.ctrl
    Tr = sim.ee_pose()
    K, Md = np.asarray(ctrl.K), np.diag(p.lie_osd.inertia_diag)
    f = np.array([12.0, 0.0, 0.0])
    sim.push(f)
    work, excess, stored = [0.0], [], []

    def each(lp, _res):
        st = lp.sim.state()
        work[0] += lp.dt * float(st.body_twist @ lp.sim.wrench_body())
        e = impedance_energy(st.world_T_ee, st.body_twist, Tr, K, Md)
        stored.append(e)
        excess.append(e - work[0])

    loop.step(round(2.0 / loop.dt), each)
    e_static = 0.5 * f[0] ** 2 / K[3, 3]
    assert stored[-1] == pytest.approx(e_static, rel=0.1)         # the spring holds F²/(2K)
    assert max(excess) <= 0.02 * e_static, "the impedance gave back more energy than the push put in"
    d = sim.ee_pose()[:3, 3] - Tr[:3, 3]
    assert d[0] == pytest.approx(f[0] / K[3, 3], rel=0.05)


def test_the_rendered_inertia_is_M_d():
    """A step push rings at sqrt(K / M_d): quadrupling the translational M_d doubles the time to the
    first peak of the displacement (the Lie-PD law has no M_d: its inertia is the arm's)."""
    def first_peak_s(mass):
        cfg, p = fr3_params(law="lie_osd", lie_osd={"inertia_diag": [0.1, 0.1, 0.1, mass, mass, mass]},
                            impedance={**load_robot_config("fr3")["interaction"]["impedance"],
                                       "damping_diag": [4.0, 4.0, 4.0, 40.0, 40.0, 40.0]})
        loop = PythonEngine(cfg, home(cfg), params=p)
        x0 = loop.sim.ee_pose()[0, 3]
        loop.sim.push([10.0, 0.0, 0.0])
        xs = []
        loop.step(round(0.6 / loop.dt), lambda lp, r: xs.append(lp.sim.ee_pose()[0, 3] - x0))
        xs = np.asarray(xs)
        k0 = int(np.argmax(xs > 0.5 * 10.0 / p.impedance.stiffness[3, 3]))   # well under way
        k = k0 + int(np.argmax(xs[k0:-1] > xs[k0 + 1:]))                      # then the first maximum
        return (k + 1) * loop.dt
    t5, t20 = first_peak_s(5.0), first_peak_s(20.0)
    assert t20 / t5 == pytest.approx(2.0, rel=0.12)


def test_it_converges_to_a_displaced_reference():
    cfg, p = fr3_params(law="lie_osd")
    loop = PythonEngine(cfg, home(cfg), params=p)
    T0 = loop.sim.ee_pose()
    Tr = T0.copy()
    Tr[:3, 3] += [0.03, 0.02, -0.02]
    Tr[:3, :3] = rodrigues(np.array([0.0, 0.12, -0.1])) @ T0[:3, :3]
    assert loop.ctrl.set_reference(Tr)
    loop.step(round(2.5 / loop.dt))
    err = se3_log(inv(Tr) @ loop.sim.ee_pose())
    assert np.linalg.norm(err[3:]) < 1e-3 and np.linalg.norm(err[:3]) < 5e-3


def _tick(law="lie_osd", n=7):
    t = cx.TickParams()
    t.n, t.law = n, law
    t.K = np.diag([60.0, 60, 60, 12000, 12000, 12000])
    t.D = np.diag([4.0, 4, 4, 300, 300, 300])
    t.M_osd = np.diag([0.1, 0.1, 0.1, 5, 5, 5])
    return cx.InteractionTick(t, np.eye(4))


def test_a_singular_arm_falls_back_to_the_lie_pd_law_flagged():
    """No Λ = (J M^-1 J^T)^-1 at a rank-deficient J_b (Chang 2026 app. I.1.1: no pseudoinverse):
    the tick flags 'singular' and commands the Lie-PD torque, which needs no inverse."""
    rng = np.random.default_rng(5)
    k = _tick()
    Jb = rng.normal(size=(6, 7))
    Jb[5] = 0.0                                           # no motion along body z
    T = np.eye(4)
    T[:3, 3] = [0.01, 0.0, 0.0]
    z = np.zeros(7)
    tau, _, flags, _, smin = k.tick(z, z, T, np.zeros(6), Jb, z, z, 1e-3, spd(rng, 7, 1.0))
    assert flags & cx.TICK_FLAGS["singular"] and smin < 1e-12
    pd = cx.lie_impedance_torque(T, np.zeros(6), Jb, z, np.eye(4), k.K, k.D)
    np.testing.assert_allclose(tau, pd, atol=1e-12)


def test_a_missing_or_bad_mass_matrix_holds_the_last_command():
    rng = np.random.default_rng(6)
    k = _tick()
    Jb, z = rng.normal(size=(6, 7)), np.zeros(7)
    T = np.eye(4)
    T[:3, 3] = [0.01, 0.0, 0.0]
    M = spd(rng, 7, 1.0)
    tau1, *_ = k.tick(z, z, T, np.zeros(6), Jb, z, z, 1e-3, M)
    assert np.abs(tau1).max() > 0
    for bad in (None, np.full((7, 7), np.nan), -M):
        tau, _, flags, *_ = k.tick(z, z, T, np.zeros(6), Jb, z, z, 1e-3, bad)
        if bad is None or not np.isfinite(bad).all():
            assert flags & cx.TICK_FLAGS["state_invalid"] and flags & cx.TICK_FLAGS["hold"]
            np.testing.assert_array_equal(tau, tau1)
        else:   # finite but not positive definite: no Λ, the Lie-PD law, flagged
            assert flags & cx.TICK_FLAGS["singular"]
    with pytest.raises(ValueError, match="mass_matrix must have shape"):
        k.tick(z, z, T, np.zeros(6), Jb, z, z, 1e-3, np.eye(6))
    with pytest.raises(TypeError):
        k.tick(z, z, T, np.zeros(6), Jb, z, z, 1e-3, np.eye(7, dtype=complex))


def test_the_law_switches_live_at_rest_to_and_from_cartesian_and_always_within_the_lie_family():
    """The tick's own switch (the live parameter: tests/interaction/test_interaction_law_switch.py)."""
    k = _tick("lie")
    assert k.set_law("gic", 0.0) and k.law == "gic"
    assert k.set_law("lie_osd", 0.0) and k.law == "lie_osd"
    k.lam_dot = np.r_[0.0, 0, 0, 0, 0, 1e-3]                # the admittance engaged
    assert not k.set_law("cartesian", 0.0) and k.law == "lie_osd"
    k.lam_dot = np.zeros(6)                                   # at rest
    assert k.set_law("cartesian", 0.0) and k.law == "cartesian"
    assert _tick("cartesian").set_law("gic", 0.0)
    with pytest.raises(ValueError, match="unknown law"):
        k.set_law("pid", 0.0)
    assert not k.set_osd_inertia(-np.eye(6))


def test_the_rt_engine_runs_the_law_with_the_mass_matrix_of_its_robot():
    """``interaction.law: lie_osd`` through ``make_engine`` (the C++ real-time loop stepped in lockstep:
    MujocoRobot reads M(q) through MuJoCo's C API): a 10 N push ends at F/K as on the python engine."""
    from hri_interaction.engine import make_engine, rt_available

    assert rt_available()
    cfg, p = fr3_params(law="lie_osd")
    deflections = []
    for kind in ("rt", "python"):
        e = make_engine(cfg, home(cfg), engine=kind)
        assert e.kind == kind
        T0 = e.ee_pose()
        e.set_push([10.0, 0.0, 0.0])
        e.step(2000)
        s = e.state()
        assert not s["flags"]
        deflections.append(np.asarray(s["world_T_ee"])[0, 3] - T0[0, 3])
    assert deflections[0] == pytest.approx(10.0 / p.impedance.stiffness[3, 3], rel=0.01)
    assert deflections[0] == pytest.approx(deflections[1], rel=1e-3)   # mj_step vs mj_step2+mj_step1 order
