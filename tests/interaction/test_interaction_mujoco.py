"""The interaction controller on the MuJoCo FR3 (torque motors, 1 kHz lockstep, real physics).

Forces are applied with ``xfrc_applied`` at the flange site ("human push"); the controller's wrench
input is that applied wrench in the EE frame (ideal tared wrist F/T sensor)."""
import copy
import dataclasses

import numpy as np
import pytest

import hri_core.se3  # noqa: F401  (required: a missing install fails here)
import mujoco  # noqa: F401  (required: a missing install fails here)

from hri_runtime.config.tree import load_robot_config
from hri_core.safety import arm_limits
from hri_runtime.parameter_library.typed import params_type
from hri_core.safety import SafetyChecker, SafetyLimits
from hri_interaction.core.controller import InteractionParams
from hri_interaction.engine import PythonEngine


@pytest.fixture(scope="module")
def cfg():
    return load_robot_config("fr3")


def make(cfg, law="lie", safety=True, **changes):
    """The loop with the hri_core safety checker (torque, torque rate, workspace, EE speed)."""
    sec = copy.deepcopy(cfg["interaction"])
    p = InteractionParams.from_config(sec)
    if changes:
        p = dataclasses.replace(p, **changes)
    home = np.deg2rad(cfg["joints"]["named_positions_deg"]["home"])
    checker = SafetyChecker(SafetyLimits(**arm_limits(cfg).as_kwargs())) if safety else None
    return PythonEngine(cfg, home, params=p, safety=checker, law=law)


def pos(loop):
    return loop.sim.ee_pose()[:3, 3].copy()


def disturbance_run(cfg, flip_gravity=False, law="lie", seconds=3.0):
    v = cfg["interaction"]["validation"]
    loop = make(cfg, law=law)
    p0 = pos(loop)
    if flip_gravity:
        orig = loop.sim.state

        def flipped():
            s = orig()
            s.gravity[:] = -s.gravity     # hri_core.rt.RobotState: its arrays are views of the reading
            return s
        loop.sim.state = flipped
    dev = []

    def each(lp, res):
        t = lp.sim.t_s
        lp.sim.push([v["disturbance_force_n"] * np.sin(2 * np.pi * v["disturbance_freq_hz"] * t), 0, 0])
        dev.append(np.linalg.norm(pos(lp) - p0))
        assert np.all(np.isfinite(res.tau))
    loop.step(round(seconds / loop.dt), each)
    return max(dev), loop


def test_impedance_holds_pose_under_5N_half_hertz_disturbance_and_pins_gravity_sign(cfg):
    """Chang 2026, table I.3: 0.41 mm with +g(q); the wrong sign sags by centimetres."""
    bound = cfg["interaction"]["validation"]["disturbance_max_dev_m"]
    dev, loop = disturbance_run(cfg)
    assert dev < bound
    assert "singular" not in loop.last.flags
    dev_wrong, _ = disturbance_run(cfg, flip_gravity=True, seconds=1.0)
    assert dev_wrong > 5 * bound


def test_classical_cartesian_impedance_also_holds(cfg):
    dev, _ = disturbance_run(cfg, law="cartesian", seconds=2.0)
    assert dev < cfg["interaction"]["validation"]["disturbance_max_dev_m"]


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_stiffness_identification_within_5_percent(cfg, axis):
    """Monotonic loading 10 N -> 30 N (joint friction cancels in the difference): K = ΔF/Δx."""
    loop = make(cfg)
    K_cfg = cfg["interaction"]["impedance"]["stiffness_diag"][3 + axis]
    p0, u = pos(loop), np.eye(3)[axis]
    loop.sim.push(10 * u)
    loop.step(round(1.0 / loop.dt))
    d1 = (pos(loop) - p0) @ u
    loop.sim.push(30 * u)
    loop.step(round(1.0 / loop.dt))
    d2 = (pos(loop) - p0) @ u
    assert 20.0 / (d2 - d1) == pytest.approx(K_cfg, rel=0.05)


def test_step_response_converges_without_large_overshoot(cfg):
    loop = make(cfg)
    T = loop.ctrl.world_T_d.copy()
    T[2, 3] += 0.02
    assert loop.ctrl.set_reference(T)
    z = []
    loop.step(round(1.5 / loop.dt), lambda lp, r: z.append(pos(lp)[2] - T[2, 3] + 0.02))
    z = np.array(z)
    assert abs(z[-1] - 0.02) < 5e-4
    assert z.max() < 0.02 * 1.25


@pytest.mark.parametrize("scale,zeta", [(0.25, 0.7), (1.0, 0.4), (1.0, 1.5), (2.0, 1.0)])
def test_stable_across_gains(cfg, scale, zeta):
    """A grid of stiffness scales and damping ratios (per axis, D = 2ζ√(K m), m = 3 kg / 0.05 kg·m²)."""
    base = np.array(cfg["interaction"]["impedance"]["stiffness_diag"]) * scale
    m = np.array([0.05] * 3 + [3.0] * 3)
    loop = make(cfg)
    loop.ctrl.set_impedance_gains(base, 2 * zeta * np.sqrt(base * m))
    p0 = pos(loop)
    loop.sim.push([0, 0, -5.0])
    loop.step(round(1.5 / loop.dt))
    d = pos(loop) - p0
    assert np.all(np.isfinite(d)) and np.linalg.norm(d) < 3 * 5.0 / base[5]
    assert np.linalg.norm(loop.sim.state().dq) < 1e-2    # settled, no limit cycle


@pytest.mark.parametrize("law", ["lie", "cartesian"])
def test_admittance_displaces_F_over_K_and_returns_when_released(cfg, law):
    loop = make(cfg, law=law)
    sec = cfg["interaction"]
    st = loop.sim.state()
    assert loop.ctrl.request_mode("admittance", st)
    p0 = pos(loop)
    F = 5.0
    loop.sim.push([0, 0, F])
    loop.step(round(2.5 / loop.dt))
    K_adm, K_imp = sec["admittance"]["stiffness_diag"][5], sec["impedance"]["stiffness_diag"][5]
    lam_disp = np.linalg.norm(loop.ctrl.reference()[:3, 3] - loop.ctrl.world_T_d[:3, 3])
    assert lam_disp == pytest.approx(F / K_adm, rel=0.01)
    d = pos(loop) - p0
    assert d[2] > 0 and np.linalg.norm(d[:2]) < 0.1 * d[2]
    assert d[2] == pytest.approx(F / K_adm + F / K_imp, rel=0.05)
    assert loop.ctrl.filter.violations == 0 and loop.ctrl.filter.min_energy_j >= 0.0
    loop.sim.push([0, 0, 0])
    loop.step(round(2.0 / loop.dt))
    assert np.linalg.norm(pos(loop) - p0) < 1e-4
    assert loop.ctrl.filter.violations == 0


def test_nan_inf_wrench_and_reference_hold_and_flag_never_nan_torque(cfg):
    loop = make(cfg)
    loop.ctrl.request_mode("admittance", loop.sim.state())
    loop.sim.push([0, 0, 5.0])
    loop.step(round(0.5 / loop.dt))
    lam = loop.ctrl.admittance.lam.copy()
    loop.wrench_source = "manual"
    assert not loop.ctrl.set_wrench([np.nan, 0, 0, 0, 0, 0])
    assert not loop.ctrl.set_wrench([0, 0, 0, np.inf, 0, 0])
    assert not loop.ctrl.set_wrench([0, 0, 0, 1e6, 0, 0])
    T_bad = loop.ctrl.world_T_d.copy()
    T_bad[0, 3] = np.nan
    assert not loop.ctrl.set_reference(T_bad)
    T_jump = loop.ctrl.world_T_d.copy()
    T_jump[0, 3] += 0.5
    assert not loop.ctrl.set_reference(T_jump)
    taus = []
    loop.step(round(0.5 / loop.dt), lambda lp, r: taus.append(r.tau))
    assert np.all(np.isfinite(taus))
    assert {"wrench_invalid", "hold"} <= loop.last.flags
    assert np.allclose(loop.ctrl.admittance.lam, lam)            # admittance held
    assert loop.ctrl.rejected["wrench_nonfinite"] == 2
    assert loop.ctrl.rejected["wrench_too_large"] == 1
    assert loop.ctrl.rejected["reference_nonfinite"] == 1
    assert loop.ctrl.rejected["reference_jump"] == 1
    # a non-finite joint state: last finite torque is held, never NaN
    st = loop.sim.state()
    st.q[0] = np.nan
    res = loop.ctrl.tick(st, loop.dt)
    assert np.all(np.isfinite(res.tau)) and "state_invalid" in res.flags
    assert loop.ctrl.set_wrench(np.zeros(6))                      # recovers on valid input
    loop.step(round(0.01 / loop.dt))
    assert "wrench_invalid" not in loop.last.flags


def test_singular_configuration_is_detected_and_reported(cfg):
    """FR3 elbow singularity (q4 = −26.757°, q2 = 0: shoulder–wrist line stretched; found by
    minimising σ_min(J_b)): flagged with σ_min, the admittance holds and the PD law (no inverse
    of J_b) still gives a finite torque."""
    sec = cfg["interaction"]
    p = InteractionParams.from_config(sec)
    loop = PythonEngine(cfg, np.deg2rad([0, 0, 0, -26.757, 0, 65.0, 0]), params=p)
    assert loop.ctrl.request_mode("admittance", loop.sim.state())
    loop.sim.push([0, 0, -5.0])
    lam0 = loop.ctrl.admittance.lam.copy()
    res = loop.tick()
    assert "singular" in res.flags
    assert res.sigma_min < 1e-4 < p.limits.singular_sigma_min
    assert np.all(np.isfinite(res.tau))
    assert loop.ctrl.events["singular_ticks"] == 1
    assert np.array_equal(loop.ctrl.admittance.lam, lam0)   # not integrated through the singularity
    assert loop.ctrl.diagnostics()["flags"].count("singular") == 1


def test_mode_switch_under_load_stays_within_the_settle_bound(cfg):
    sec = cfg["interaction"]
    loop = make(cfg)
    loop.sim.push([0, 0, 20.0])     # impedance deflects by F/K_imp; admittance wants F/K_adm
    loop.step(round(1.0 / loop.dt))
    assert loop.ctrl.request_mode("admittance", loop.sim.state())
    # seeded: the reference is the current pose, so the first torque is continuous
    tau_before = loop.last.tau.copy()
    loop.tick()
    assert np.abs(loop.last.tau - tau_before).max() < 1.0
    speeds, twists = [], []

    def each(lp, r):
        if "settling" in r.flags:
            V = lp.ctrl.admittance.twist()
            twists.append(np.linalg.norm(V[3:]))
            speeds.append(np.linalg.norm(lp.sim.state().body_twist[3:]))
    loop.step(round((sec["switch"]["settle_s"] + 0.5) / loop.dt), each)
    bound = sec["switch"]["settle_max_linear_m_s"]
    assert len(twists) > 0 and max(twists) <= bound * (1 + 1e-9)
    assert max(speeds) < 1.5 * bound
    assert loop.ctrl.events["twist_bounded_settle"] > 0      # the bound was needed and held
    # back to impedance under load: λ decays with no input, no jump
    tau_before = loop.last.tau.copy()
    assert loop.ctrl.request_mode("impedance", loop.sim.state())
    loop.tick()
    assert np.abs(loop.last.tau - tau_before).max() < 1.0
    loop.sim.push([0, 0, 0])
    loop.step(round(3.0 / loop.dt))
    assert np.linalg.norm(pos(loop) - loop.ctrl.world_T_d[:3, 3]) < 2e-4


def test_runtime_gain_change_without_torque_jump(cfg):
    def max_dtau(blend_s):
        # without the safety checker: its torque-rate clamp would hide a jump of the controller
        loop = make(cfg, safety=False, blend_s=blend_s)
        loop.sim.push([0, 0, -20.0])
        loop.step(round(1.0 / loop.dt))
        K = np.array(cfg["interaction"]["impedance"]["stiffness_diag"]) * 3
        D = np.array(cfg["interaction"]["impedance"]["damping_diag"]) * 1.5
        taus = [loop.last.tau.copy()]
        assert loop.ctrl.set_impedance_gains(K, D)
        loop.step(round(0.6 / loop.dt), lambda lp, r: taus.append(r.tau.copy()))
        assert np.allclose(np.diag(loop.ctrl.K), K)
        return np.abs(np.diff(taus, axis=0)).max()
    blended = max_dtau(cfg["interaction"]["blend_s"])
    immediate = max_dtau(0.0)
    assert blended < 0.1 * immediate
    assert blended < cfg["joints"]["torque_rate_max_nm_s"][0] / cfg["interaction"]["rate_hz"]   # < 1 N·m/tick
    loop = make(cfg)
    assert not loop.ctrl.set_impedance_gains(-np.ones(6), np.ones(6))
    assert not loop.ctrl.set_impedance_gains(np.ones(6), [1, 1, 1, 1, 1, np.nan])
    assert loop.ctrl.rejected["gains_invalid"] == 2


def test_freeze_holds_and_is_reported(cfg):
    loop = make(cfg)
    loop.ctrl.request_mode("admittance", loop.sim.state())
    loop.sim.push([0, 0, 5.0])
    loop.step(round(0.3 / loop.dt))
    loop.ctrl.freeze("safety: workspace")
    lam = loop.ctrl.admittance.lam.copy()
    loop.step(round(0.3 / loop.dt))
    assert np.allclose(loop.ctrl.admittance.lam, lam)
    assert {"frozen", "hold"} <= loop.last.flags
    assert not loop.ctrl.request_mode("impedance", loop.sim.state())
    loop.ctrl.release()
    loop.step(round(0.01 / loop.dt))
    assert "frozen" not in loop.last.flags


def test_safety_checker_workspace_violation_freezes_and_reports(cfg):
    """The hri_core safety checker gates every command: leaving the workspace box freezes the
    controller (admittance held, reference held), reported as flags and events, τ finite."""
    home = np.deg2rad(cfg["joints"]["named_positions_deg"]["home"])
    probe = PythonEngine(cfg, home)
    z0 = probe.sim.ee_pose()[2, 3]
    wmax = list(cfg["safety"]["workspace_max_m"])
    wmax[2] = round(z0 + 0.004, 4)
    tight = load_robot_config("fr3", overrides=[f"safety.workspace_max_m=[{wmax[0]}, {wmax[1]}, {wmax[2]}]"])
    loop = make(tight)
    assert loop.ctrl.request_mode("admittance", loop.sim.state())
    loop.sim.push([0, 0, 20.0])          # admittance wants +8 mm, the box allows +4 mm
    taus = []
    loop.step(round(1.5 / loop.dt), lambda lp, r: taus.append(r.tau))
    assert loop.ctrl.frozen_reason == "safety: workspace"
    assert {"frozen", "hold"} <= loop.last.flags
    assert loop.ctrl.events["safety_workspace"] > 0 and loop.ctrl.events["freeze"] == 1
    assert np.all(np.isfinite(taus))
    assert pos(loop)[2] < wmax[2] + 0.002


def test_hybrid_mode_is_compliant_only_along_the_selected_axes(cfg):
    """HYBRID: the wrench drives the admittance only on compliant_axes (default: translations);
    with the selection set to body z only, a push along body x and z displaces T_ref along z only."""
    loop = make(cfg, hybrid=params_type("interaction.hybrid")(compliant_axes=(0, 0, 0, 0, 0, 1)))
    assert loop.ctrl.request_mode("hybrid", loop.sim.state())
    R = loop.sim.ee_pose()[:3, :3]
    loop.sim.push(R @ np.array([5.0, 0, 5.0]))       # body x and body z
    loop.step(round(2.0 / loop.dt))
    lam = loop.ctrl.admittance.lam
    K = cfg["interaction"]["admittance"]["stiffness_diag"][5]
    assert lam[5] == pytest.approx(5.0 / K, rel=0.01)
    assert np.abs(lam[:5]).max() < 1e-9
    d_body = R.T @ (pos(loop) - loop.ctrl.world_T_d[:3, 3])
    K_imp = cfg["interaction"]["impedance"]["stiffness_diag"][3]
    assert d_body[0] == pytest.approx(5.0 / K_imp, rel=0.15)       # only the stiff impedance
    assert d_body[2] == pytest.approx(5.0 / K + 5.0 / K_imp, rel=0.05)
